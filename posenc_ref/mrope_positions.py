r"""M-RoPE position ids of a token sequence with images and videos, by each family's rules.

A multimodal model's M-RoPE rotates each pair by one of three position rows, time, height and
width (:mod:`posenc_ref.mrope`); this module builds those rows for a whole sequence of text,
image and video tokens, as Qwen2-VL, Qwen2.5-VL, Qwen3-VL and GLM-4V do (the rules of
transformers 5.23's ``get_rope_index``, against which it is tested):

- the sequence is read as runs of one kind of token: text (0), image (1) or video (2); the
  ``k``-th image run takes the ``k``-th image grid, the ``k``-th video run the next video grid;
- a text run of :math:`L` tokens takes :math:`c, c + 1, \dots, c + L - 1` in all three rows,
  from the current position :math:`c` (0 at the start), and :math:`c` moves on by :math:`L`;
- a grid of :math:`t \times h \times w` patches, merged :math:`m \times m` by the vision tower
  (``spatial_merge_size``), is :math:`t \times (h/m) \times (w/m)` tokens, in time-major then
  row-major order; token :math:`(\tau, y, x)` takes
  :math:`(c + \lfloor \tau\,\Delta \rfloor,\; c + y,\; c + x)`;
- after the grid, :math:`c` moves on by :math:`\max(h, w) / m`: text resumes after the grid's
  largest height and width index, whatever its time extent;
- the time step :math:`\Delta` is 1, except for a Qwen2.5-VL video, where it is
  ``tokens_per_second`` :math:`\times` ``second_per_grid_t`` (time steps per second of
  video, from the vision config, times the seconds per temporal patch, one per video);
- Qwen3-VL and GLM-4V place each frame of a video by the text before it (a timestamp): a video
  of :math:`t` temporal patches is :math:`t` runs of one frame each, with text between them, and
  each frame is a grid of :math:`1 \times h \times w`.

Shapes: ``token_types`` ``(seq_len,)``, grids ``(count, 3)`` as ``(t, h, w)`` in patches before
the merge (transformers' ``image_grid_thw``, ``video_grid_thw``); the result ``(3, seq_len)``
int64, rows time, height, width.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import torch

from ._checks import check_int, check_positive_float

__all__ = [
    "TEXT",
    "IMAGE",
    "VIDEO",
    "PositionRule",
    "POSITION_RULES",
    "MultimodalSequence",
    "token_runs",
    "grid_positions_3d",
    "mrope_position_ids",
]

TEXT, IMAGE, VIDEO = 0, 1, 2
"""The token types of a multimodal sequence (transformers' ``mm_token_type_ids``)."""


@dataclass(frozen=True)
class PositionRule:
    """What sets one family's position ids apart.

    Attributes
    ----------
    scaled_time : bool
        A video's time step is ``tokens_per_second * second_per_grid_t`` (Qwen2.5-VL), not 1.
    frame_runs : bool
        Each frame of a video is a run of its own, placed by the text (a timestamp) before it
        (Qwen3-VL, GLM-4V).
    models : str
        Who follows the rule.
    """

    scaled_time: bool
    frame_runs: bool
    models: str


POSITION_RULES: dict[str, PositionRule] = {
    "qwen2_vl": PositionRule(False, False, "Qwen2-VL"),
    "qwen2_5_vl": PositionRule(True, False, "Qwen2.5-VL"),
    "qwen3_vl": PositionRule(False, True, "Qwen3-VL, Qwen3.5"),
    "glm4v": PositionRule(False, True, "GLM-4.1V, GLM-4.5V"),
}
"""Family (transformers ``model_type``) to its rule."""


@dataclass(frozen=True)
class MultimodalSequence:
    """A token sequence with images and videos: what a position builder is given.

    Attributes
    ----------
    token_types : torch.Tensor
        ``(seq_len,)`` int64: :data:`TEXT`, :data:`IMAGE` or :data:`VIDEO` per token.
    image_grids, video_grids : torch.Tensor
        ``(images, 3)`` and ``(videos, 3)`` int64, ``(t, h, w)`` in patches before the merge,
        in the order the runs come (a Qwen3-VL or GLM-4V video: one row for all its frames).
    second_per_grid : torch.Tensor
        ``(videos,)`` float64: seconds per temporal patch of each video (Qwen2.5-VL).
    spatial_merge_size : int
        The vision tower's merge ``m``: ``m x m`` patches make one token.
    tokens_per_second : float
        Qwen2.5-VL's time steps per second of video (its vision config's
        ``tokens_per_second``).
    """

    token_types: torch.Tensor
    image_grids: torch.Tensor = field(default_factory=lambda: torch.zeros(0, 3, dtype=torch.long))
    video_grids: torch.Tensor = field(default_factory=lambda: torch.zeros(0, 3, dtype=torch.long))
    second_per_grid: torch.Tensor = field(
        default_factory=lambda: torch.zeros(0, dtype=torch.float64)
    )
    spatial_merge_size: int = 2
    tokens_per_second: float = 2.0


def token_runs(token_types: torch.Tensor) -> list[tuple[int, int, int]]:
    """``(kind, first index, length)`` of each run of one kind of token, in order."""
    kinds = token_types.tolist()
    runs, start = [], 0
    for i in range(1, len(kinds) + 1):
        if i == len(kinds) or kinds[i] != kinds[start]:
            runs.append((int(kinds[start]), start, i - start))
            start = i
    return runs


def grid_positions_3d(
    grid: Sequence[int], start: int, merge_size: int, time_step: float = 1.0
) -> torch.Tensor:
    r"""The positions of one grid's tokens from ``start``: ``(3, t * (h/m) * (w/m))`` int64.

    Token :math:`(\tau, y, x)`, time-major then row-major, takes
    :math:`(s + \lfloor\tau\,\Delta\rfloor, s + y, s + x)`.

    >>> grid_positions_3d((2, 4, 4), 10, 2)
    tensor([[10, 10, 10, 10, 11, 11, 11, 11],
            [10, 10, 11, 11, 10, 10, 11, 11],
            [10, 11, 10, 11, 10, 11, 10, 11]])
    """
    t, h, w = (int(v) for v in grid)
    time = torch.floor(torch.arange(t, dtype=torch.float64) * time_step).long()
    rows, cols = torch.arange(h // merge_size), torch.arange(w // merge_size)
    frames, ys, xs = torch.meshgrid(time, rows, cols, indexing="ij")
    return torch.stack([frames, ys, xs]).reshape(3, -1) + start


def _grids(sequence: MultimodalSequence, rule: PositionRule) -> dict[int, list]:
    """Each run kind's grids (and time steps) in order; a frame-run video split per frame."""
    images = [(tuple(g), 1.0) for g in sequence.image_grids.tolist()]
    videos = []
    for v, grid in enumerate(sequence.video_grids.tolist()):
        step = 1.0
        if rule.scaled_time:
            step = sequence.tokens_per_second * float(sequence.second_per_grid[v])
        if rule.frame_runs:
            videos += [((1, grid[1], grid[2]), 1.0)] * grid[0]
        else:
            videos.append((tuple(grid), step))
    return {IMAGE: images, VIDEO: videos}


def mrope_position_ids(sequence: MultimodalSequence, family: str) -> torch.Tensor:
    r"""The M-RoPE positions of every token of ``sequence``: ``(3, seq_len)`` int64.

    Derived on the site: [position builders](check.md#check-builders).

    Parameters
    ----------
    sequence
        The tokens' types, the grids and the vision tower's numbers
        (:class:`MultimodalSequence`).
    family
        A key of :data:`POSITION_RULES`: ``"qwen2_vl"``, ``"qwen2_5_vl"``, ``"qwen3_vl"`` or
        ``"glm4v"``.

    Returns
    -------
    torch.Tensor
        Rows time, height, width.

    Raises
    ------
    ValueError
        For an unknown family, a run whose length is not its grid's token count, or more runs
        of a kind than grids.

    Examples
    --------
    >>> sequence = MultimodalSequence(torch.tensor([0, 0, 1, 1, 1, 1, 1, 1, 0]),
    ...                               image_grids=torch.tensor([[1, 4, 6]]))
    >>> mrope_position_ids(sequence, "qwen2_vl")
    tensor([[0, 1, 2, 2, 2, 2, 2, 2, 5],
            [0, 1, 2, 2, 2, 3, 3, 3, 5],
            [0, 1, 2, 3, 4, 2, 3, 4, 5]])
    """
    if family not in POSITION_RULES:
        raise ValueError(f"family must be one of {tuple(POSITION_RULES)}, got {family!r}")
    rule = POSITION_RULES[family]
    merge = check_int("spatial_merge_size", sequence.spatial_merge_size, minimum=1)
    if rule.scaled_time:
        check_positive_float("tokens_per_second", sequence.tokens_per_second)
    grids = _grids(sequence, rule)
    used = {IMAGE: 0, VIDEO: 0}
    pieces, current = [], 0
    for kind, first, length in token_runs(sequence.token_types):
        if kind == TEXT:
            pieces.append(torch.arange(current, current + length).expand(3, -1))
            current += length
            continue
        if kind not in grids or used[kind] >= len(grids[kind]):
            raise ValueError(f"token {first} starts a run of kind {kind} with no grid left for it")
        grid, step = grids[kind][used[kind]]
        used[kind] += 1
        piece = grid_positions_3d(grid, current, merge, step)
        if piece.shape[1] != length:
            raise ValueError(
                f"the run of {length} tokens from token {first} has a grid {list(grid)} of "
                f"{piece.shape[1]} tokens (t * h/m * w/m with m = {merge})"
            )
        pieces.append(piece)
        current += max(grid[1], grid[2]) // merge
    if not pieces:
        return torch.zeros(3, 0, dtype=torch.long)
    return torch.cat(pieces, dim=1)
