r"""Multimodal RoPE (M-RoPE): three position rows, each driving its own share of the pairs.

Qwen2-VL, Qwen2.5-VL, Qwen3-VL and Qwen3.5 give every token a position *vector*
:math:`(p_t, p_h, p_w)` (time, height, width) instead of one integer. Text tokens carry the same
value in all three rows; the patches of an image carry their row and column in the grid. The
rotary pairs are split among the three rows by ``mrope_section`` (three counts that sum to the
number of pairs), and pair :math:`i` is rotated by :math:`p_{r(i)}\,\omega_i`, where
:math:`r(i) \in \{0, 1, 2\}` is the row it was given:

- consecutive sections (Qwen2-VL, Qwen2.5-VL): the first ``mrope_section[0]`` pairs take the time
  row, the next ``mrope_section[1]`` the height row, the last ``mrope_section[2]`` the width row;
- interleaved sections (Qwen3-VL, Qwen3.5): pairs are dealt to time, height, width in turn
  (pair :math:`i` takes row :math:`i \bmod 3`) until the height and width rows have their
  counts; the pairs left over take the time row.

Only the table changes; the rotation is :func:`posenc_ref.rope.apply_rope` as for plain RoPE, in
either pair layout, and the tables hold one value per pair like those of
:func:`posenc_ref.rope.rope_cos_sin`. Derived on the site:
[M-RoPE](rope.md#rope-mrope).

Shapes: M-RoPE ``positions`` are ``(3, ..., seq_len)`` (row 0 time, 1 height, 2 width); the
tables are ``(..., seq_len, rotary_dim // 2)``.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

from ._checks import (
    check_bool,
    check_float_dtype,
    check_int,
    check_inv_freq,
    check_positions,
    check_positive_float,
    check_table_dtype,
)
from .device import compute_device

__all__ = ["MROPE_ROWS", "mrope_pair_rows", "mrope_cos_sin", "mrope_positions"]

MROPE_ROWS = ("time", "height", "width")
"""The meaning of the three position rows, in order."""


def _check_section(mrope_section: object) -> tuple[int, int, int]:
    if isinstance(mrope_section, (str, bytes)) or not isinstance(mrope_section, Sequence):
        raise TypeError(
            f"mrope_section must be three non-negative integers (time, height, width pair "
            f"counts), got {mrope_section!r}"
        )
    if len(mrope_section) != 3:
        raise ValueError(
            f"mrope_section must have three entries (time, height, width), got {mrope_section!r}"
        )
    counts = tuple(check_int(f"mrope_section[{j}]", n) for j, n in enumerate(mrope_section))
    if sum(counts) == 0:
        raise ValueError(f"mrope_section must give at least one pair, got {mrope_section!r}")
    return counts  # type: ignore[return-value]


def mrope_pair_rows(mrope_section: Sequence[int], *, interleaved: bool = False) -> torch.Tensor:
    r"""Which position row (0 time, 1 height, 2 width) rotates each pair.

    Derived on the site: [M-RoPE](rope.md#rope-mrope).

    Consecutive (``interleaved=False``, Qwen2-VL): ``mrope_section[0]`` zeros, then
    ``mrope_section[1]`` ones, then ``mrope_section[2]`` twos. Interleaved (Qwen3-VL): pair
    :math:`i` takes row :math:`r \in \{1, 2\}` when :math:`i \bmod 3 = r` and
    :math:`i < 3 n_r` with :math:`n_r` = ``mrope_section[r]``, and row 0 otherwise; for the
    released sections ([24, 20, 20], [11, 11, 10]) this deals the pairs round-robin and gives
    the time row the leftovers. Sections for which that rule does not give each row its count
    (e.g. a height count larger than the time count) are refused rather than silently
    reinterpreted.

    Parameters
    ----------
    mrope_section
        Three non-negative pair counts (time, height, width); their sum is the number of pairs,
        ``rotary_dim // 2``.
    interleaved
        ``False`` for consecutive sections, ``True`` for Qwen3-VL's interleaved assignment.

    Returns
    -------
    torch.Tensor
        ``(sum(mrope_section),)`` int64, values in ``{0, 1, 2}``.

    Examples
    --------
    >>> mrope_pair_rows([2, 1, 1])
    tensor([0, 0, 1, 2])
    >>> mrope_pair_rows([2, 1, 1], interleaved=True)
    tensor([0, 1, 2, 0])
    """
    counts = _check_section(mrope_section)
    interleaved = check_bool("interleaved", interleaved)
    pairs = sum(counts)
    if not interleaved:
        return torch.repeat_interleave(torch.arange(3), torch.tensor(counts))
    index = torch.arange(pairs)
    rows = torch.zeros(pairs, dtype=torch.long)
    for row in (1, 2):
        rows[(index % 3 == row) & (index < 3 * counts[row])] = row
    got = tuple(int((rows == row).sum()) for row in range(3))
    if got != counts:
        raise ValueError(
            f"mrope_section={list(counts)} cannot be dealt round-robin (pair i to row i mod 3 "
            f"while the height and width rows have pairs left, the rest to time): that gives "
            f"{list(got)} pairs per row; use interleaved=False or a section with "
            "height, width <= time"
        )
    return rows


def _check_mrope_positions(positions: object) -> torch.Tensor:
    positions = check_positions(positions)
    if positions.dim() < 2 or positions.shape[0] != 3:
        raise ValueError(
            "M-RoPE positions must have shape (3, ..., seq_len) (rows: time, height, width), got "
            f"{tuple(positions.shape)}; for text only, repeat the 1-D positions: "
            "positions.expand(3, -1)"
        )
    return positions


def mrope_cos_sin(
    positions: torch.Tensor,
    inv_freq: torch.Tensor,
    mrope_section: Sequence[int],
    *,
    interleaved: bool = False,
    attention_factor: float = 1.0,
    dtype: torch.dtype = torch.float32,
) -> tuple[torch.Tensor, torch.Tensor]:
    r"""The cos and sin tables of M-RoPE: pair :math:`i` takes its angle from its own row.

    Derived on the site: [M-RoPE](rope.md#rope-mrope).

    .. math::

        \cos_{m, i} = a \cos\bigl(p_{r(i)}(m)\,\omega_i\bigr), \qquad
        \sin_{m, i} = a \sin\bigl(p_{r(i)}(m)\,\omega_i\bigr)

    with :math:`r(i)` from :func:`mrope_pair_rows` and :math:`p_j(m)` row :math:`j` of token
    :math:`m`'s position. When the three rows are equal (text) this is the table of
    :func:`posenc_ref.rope.rope_cos_sin`. Angles are formed in float64 (on the CPU where the
    device has no float64) and only the result is cast to ``dtype``. Feed the tables to
    :func:`posenc_ref.rope.apply_rope` with the model's layout.

    Parameters
    ----------
    positions
        ``(3, ..., seq_len)`` integer (or float32/float64) tensor, ``>= 0``: rows time, height,
        width (e.g. from :func:`mrope_positions`). The result lives on its device.
    inv_freq
        ``(rotary_dim // 2,)`` frequencies, one per pair, ``sum(mrope_section)`` of them; read in
        float64.
    mrope_section
        Pairs per row (time, height, width).
    interleaved
        Qwen3-VL's interleaved assignment instead of consecutive sections.
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
    positions = _check_mrope_positions(positions)
    inv_freq = check_inv_freq(inv_freq)
    rows = mrope_pair_rows(mrope_section, interleaved=interleaved)
    if rows.numel() != inv_freq.numel():
        raise ValueError(
            f"mrope_section={list(mrope_section)} gives {rows.numel()} pairs but inv_freq has "
            f"{inv_freq.numel()} (rotary_dim // 2)"
        )
    attention_factor = check_positive_float("attention_factor", attention_factor)
    dtype = check_table_dtype("dtype", check_float_dtype("dtype", dtype))
    where = compute_device(positions.device)
    # (..., seq_len, 3): the three rows side by side, then one column per pair picked by its row.
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
    before = torch.arange(start, start + text_before).expand(3, -1)
    s = start + text_before
    frames, rows, cols = torch.meshgrid(
        torch.arange(t), torch.arange(h), torch.arange(w), indexing="ij"
    )
    image = torch.stack([frames, rows, cols]).reshape(3, -1) + s  # (3, t * h * w)
    resume = s + max(t, h, w)  # the grid's largest position + 1
    after = torch.arange(resume, resume + text_after).expand(3, -1)
    return torch.cat([before, image, after], dim=1)
