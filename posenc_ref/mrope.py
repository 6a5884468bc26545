r"""Multimodal RoPE (M-RoPE): several position rows, each driving its own share of the pairs.

Qwen2-VL, Qwen2.5-VL, Qwen3-VL and Qwen3.5 give every token a position *vector*
:math:`(p_t, p_h, p_w)` (time, height, width) instead of one integer. Text tokens carry the same
value in every row; the patches of an image carry their row and column in the grid. The rotary
pairs are split among the rows by ``mrope_section`` (one count per row, summing to the number of
pairs), and pair :math:`i` is rotated by :math:`p_{r(i)}\,\omega_i`, where :math:`r(i)` is the
row it was given. Which pairs a row gets is the *assignment*, one entry of
:data:`MROPE_ASSIGNMENTS`:

- ``"consecutive"`` (Qwen2-VL, Qwen2.5-VL, GLM-4V): the first ``mrope_section[0]`` pairs take
  the time row, the next ``mrope_section[1]`` the height row, the last ``mrope_section[2]`` the
  width row;
- ``"interleaved"`` (Qwen3-VL, Qwen3.5, Cohere Compass, Qwen4-Exp): pairs are dealt to time,
  height, width in turn (pair :math:`i` takes row :math:`i \bmod 3`) until the height and width
  rows have their counts; the pairs left over take the time row;
- ``"alternating"`` (ERNIE 4.5 VL): height and width take turns over the first
  :math:`n_h + n_w` pairs (:math:`n_h = n_w`), the time row takes the last :math:`n_t`;
- ``"alternating_2d"`` (NeoMME): two rows only (height, width), taking turns over every pair.

Only the table changes; the rotation is :func:`posenc_ref.rope.apply_rope` as for plain RoPE, in
either pair layout, and the tables hold one value per pair like those of
:func:`posenc_ref.rope.rope_cos_sin`. Derived on the site:
[M-RoPE](rope.md#rope-mrope).

Shapes: M-RoPE ``positions`` are ``(rows, ..., seq_len)`` (three rows, time, height, width,
except for ``"alternating_2d"``: height, width); the tables are
``(..., seq_len, rotary_dim // 2)``.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

from ._checks import check_int, check_positive_float
from ._tensor_checks import check_float_dtype, check_inv_freq, check_positions, check_table_dtype
from .device import compute_device
from .values import (
    MROPE_ASSIGNMENTS,
    MROPE_ROWS,
    MRopeAssignment,
    mrope_assignment,
    mrope_counts,
)

__all__ = [
    "MROPE_ROWS",
    "MROPE_ASSIGNMENTS",
    "MRopeAssignment",
    "mrope_pair_rows",
    "mrope_cos_sin",
    "mrope_positions",
]

MAX_TOKENS = 1 << 26  # 67 million tokens, a 1.6 GB position table: ten times the longest contexts


def mrope_pair_rows(
    mrope_section: Sequence[int], *, interleaved: bool = False, assignment: str | None = None
) -> torch.Tensor:
    r"""Which position row rotates each pair (0 time, 1 height, 2 width for three rows).

    Derived on the site: [M-RoPE](rope.md#rope-mrope).

    Consecutive (the default, Qwen2-VL): ``mrope_section[0]`` zeros, then ``mrope_section[1]``
    ones, then ``mrope_section[2]`` twos. Interleaved (``interleaved=True``, Qwen3-VL): pair
    :math:`i` takes row :math:`r \in \{1, 2\}` when :math:`i \bmod 3 = r` and
    :math:`i < 3 n_r` with :math:`n_r` = ``mrope_section[r]``, and row 0 otherwise; for the
    released sections ([24, 20, 20], [11, 11, 10]) this deals the pairs round-robin and gives
    the time row the leftovers. Sections for which that rule does not give each row its count
    (e.g. a height count larger than the time count) are refused rather than silently
    reinterpreted. Alternating (ERNIE 4.5 VL): :math:`r(i) = 1 + (i \bmod 2)` for
    :math:`i < n_h + n_w`, else 0. Alternating 2-D (NeoMME, rows height and width):
    :math:`r(i) = i \bmod 2`. The two alternating rules need :math:`n_h = n_w`.

    Parameters
    ----------
    mrope_section
        Non-negative pair counts, one per row of the assignment (time, height, width; for
        ``"alternating_2d"`` height, width); their sum is the number of pairs,
        ``rotary_dim // 2``.
    interleaved
        ``True``: shorthand for ``assignment="interleaved"`` (Qwen3-VL).
    assignment
        A key of :data:`MROPE_ASSIGNMENTS`; ``None``: ``"interleaved"`` if ``interleaved``,
        else ``"consecutive"``.

    Returns
    -------
    torch.Tensor
        ``(sum(mrope_section),)`` int64, values in ``0 .. rows - 1``.

    Examples
    --------
    >>> mrope_pair_rows([2, 1, 1])
    tensor([0, 0, 1, 2])
    >>> mrope_pair_rows([2, 1, 1], interleaved=True)
    tensor([0, 1, 2, 0])
    >>> mrope_pair_rows([2, 1, 1], assignment="alternating")
    tensor([1, 2, 0, 0])
    """
    entry = MROPE_ASSIGNMENTS[mrope_assignment(interleaved, assignment)]
    return torch.tensor(entry.pair_rows(mrope_counts(mrope_section, entry.rows)), dtype=torch.long)


def _check_mrope_positions(positions: object, rows: tuple[str, ...]) -> torch.Tensor:
    positions = check_positions("positions", positions)
    if positions.dim() < 2 or positions.shape[0] != len(rows):
        raise ValueError(
            f"M-RoPE positions must have shape ({len(rows)}, ..., seq_len) (rows: "
            f"{', '.join(rows)}), got {tuple(positions.shape)}; for text only, repeat the 1-D "
            f"positions: positions.expand({len(rows)}, -1)"
        )
    return positions


def mrope_cos_sin(
    positions: torch.Tensor,
    inv_freq: torch.Tensor,
    mrope_section: Sequence[int],
    *,
    interleaved: bool = False,
    assignment: str | None = None,
    attention_factor: float = 1.0,
    dtype: torch.dtype = torch.float32,
) -> tuple[torch.Tensor, torch.Tensor]:
    r"""The cos and sin tables of M-RoPE: pair :math:`i` takes its angle from its own row.

    Derived on the site: [M-RoPE](rope.md#rope-mrope).

    .. math::

        \cos_{m, i} = a \cos\bigl(p_{r(i)}(m)\,\omega_i\bigr), \qquad
        \sin_{m, i} = a \sin\bigl(p_{r(i)}(m)\,\omega_i\bigr)

    with :math:`r(i)` from :func:`mrope_pair_rows` and :math:`p_j(m)` row :math:`j` of token
    :math:`m`'s position. When the rows are equal (text) this is the table of
    :func:`posenc_ref.rope.rope_cos_sin`. Angles are formed in float64 (on the CPU where the
    device has no float64) and only the result is cast to ``dtype``. Feed the tables to
    :func:`posenc_ref.rope.apply_rope` with the model's layout.

    Parameters
    ----------
    positions
        ``(rows, ..., seq_len)`` integer (or float32/float64) tensor, ``>= 0``, one row per row
        of the assignment (time, height, width; e.g. from :func:`mrope_positions`). The result
        lives on its device.
    inv_freq
        ``(rotary_dim // 2,)`` frequencies, one per pair, ``sum(mrope_section)`` of them; read in
        float64.
    mrope_section
        Pairs per row.
    interleaved, assignment
        Which pairs each row gets, as for :func:`mrope_pair_rows`.
    attention_factor
        :math:`a > 0` multiplied into both tables.
    dtype
        Floating dtype of the result (float32 or float64).

    Returns
    -------
    tuple of torch.Tensor
        ``(cos, sin)``, each ``(..., seq_len, rotary_dim // 2)``.

    Examples
    --------
    >>> from posenc_ref import inv_freq
    >>> positions = torch.tensor([[3, 3], [3, 4], [3, 5]])  # (3, seq_len=2)
    >>> cos, sin = mrope_cos_sin(positions, inv_freq(8), [2, 1, 1])
    >>> cos.shape
    torch.Size([2, 4])
    """
    name = mrope_assignment(interleaved, assignment)
    positions = _check_mrope_positions(positions, MROPE_ASSIGNMENTS[name].rows)
    inv_freq = check_inv_freq("inv_freq", inv_freq)
    rows = mrope_pair_rows(mrope_section, assignment=name)
    if rows.numel() != inv_freq.numel():
        raise ValueError(
            f"mrope_section={list(mrope_section)} gives {rows.numel()} pairs but inv_freq has "
            f"{inv_freq.numel()} (rotary_dim // 2)"
        )
    attention_factor = check_positive_float("attention_factor", attention_factor)
    dtype = check_table_dtype("dtype", check_float_dtype("dtype", dtype))
    where = compute_device(positions.device)
    # (..., seq_len, rows): the rows side by side, then one column per pair picked by its row.
    per_row = positions.to(where, torch.float64).movedim(0, -1)
    per_pair = per_row[..., rows.to(where)]  # (..., seq_len, pairs)
    angles = per_pair * inv_freq.to(where, torch.float64)
    tables = []
    for fn in (torch.cos, torch.sin):
        table = fn(angles)
        if attention_factor != 1.0:
            table = table * attention_factor
        tables.append(table.to(device=positions.device, dtype=dtype))
    return tables[0], tables[1]


def mrope_positions(
    text_before: int, grid: Sequence[int], text_after: int, *, start: int = 0
) -> torch.Tensor:
    r"""M-RoPE positions of text, one image (or video) grid, then more text.

    Derived on the site: [M-RoPE](rope.md#rope-mrope).

    The layout Qwen2-VL, Qwen2.5-VL and Qwen3-VL use (for an image; videos add a time scaling
    not modelled here):

    - the ``text_before`` tokens get ``start, start + 1, ...`` in all three rows;
    - the grid's :math:`g_t \times g_h \times g_w` tokens (frames, rows, columns), in time-major
      then row-major order, get :math:`(t_0 + \tau, t_0 + y, t_0 + x)` for frame :math:`\tau`,
      row :math:`y`, column :math:`x`, where :math:`t_0` = ``start + text_before``;
    - the ``text_after`` tokens resume at the grid's largest position + 1, that is
      :math:`t_0 + \max(g_t, g_h, g_w)`, in all three rows.

    So a sequence of :math:`L` tokens can end at a position well below :math:`L - 1`: an image
    of :math:`g_h \times g_w` tokens advances the text position by :math:`\max(g_h, g_w)` only.

    ``grid`` counts tokens as the language model sees them: for Qwen2-VL that is the vision
    encoder's patch grid divided by its ``spatial_merge_size`` (2) in height and width.

    Parameters
    ----------
    text_before, text_after
        Number of text tokens before and after the grid, ``>= 0``.
    grid
        ``(t, h, w)``, each ``>= 1``.
    start
        Position of the first token, ``>= 0`` (e.g. the length of a KV cache).

    Returns
    -------
    torch.Tensor
        ``(3, text_before + t * h * w + text_after)`` int64.

    Examples
    --------
    >>> mrope_positions(2, (1, 2, 3), 1)
    tensor([[0, 1, 2, 2, 2, 2, 2, 2, 5],
            [0, 1, 2, 2, 2, 3, 3, 3, 5],
            [0, 1, 2, 3, 4, 2, 3, 4, 5]])
    """
    text_before = check_int("text_before", text_before)
    text_after = check_int("text_after", text_after)
    start = check_int("start", start)
    if isinstance(grid, (str, bytes)) or not isinstance(grid, Sequence) or len(grid) != 3:
        raise TypeError(f"grid must be three integers (t, h, w), got {grid!r}")
    t, h, w = (check_int(f"grid[{j}]", n, minimum=1) for j, n in enumerate(grid))
    tokens = text_before + t * h * w + text_after
    if tokens > MAX_TOKENS:
        raise ValueError(
            f"text_before + t * h * w + text_after = {tokens} tokens; mrope_positions builds at "
            f"most {MAX_TOKENS} (their (3, seq_len) int64 table would need {24 * tokens:.3g} "
            "bytes)"
        )
    if start + text_before + max(t, h, w) + text_after > 2**63 - 1:
        raise ValueError(
            f"start={start} with {tokens} tokens runs past the largest int64 position 2**63 - 1"
        )
    before = torch.arange(start, start + text_before).expand(3, -1)
    s = start + text_before
    frames, rows, cols = torch.meshgrid(
        torch.arange(t), torch.arange(h), torch.arange(w), indexing="ij"
    )
    image = torch.stack([frames, rows, cols]).reshape(3, -1) + s  # (3, t * h * w)
    resume = s + max(t, h, w)  # the grid's largest position + 1
    after = torch.arange(resume, resume + text_after).expand(3, -1)
    return torch.cat([before, image, after], dim=1)
