r"""``table_fn``: a precomputed cos/sin table checked as it stands, rotated exactly by the kit.

Explained on the site: [other frameworks](frameworks.md#frameworks-adapters).
"""

from __future__ import annotations

import torch

from .._checks import check_dim, check_layout
from ._adapters import Adapter
from ._arrays import RopeFn, to_torch
from ._common import dtype_name
from ._model import pair_index, partner

__all__ = ["table_fn"]


class TableAdapter(Adapter):
    form = "a cos/sin table"
    name = "table_fn"
    unsupported = ("image",)  # one row per position: no M-RoPE rows to index

    def __init__(self, cos, sin, layout: str, rotary_dim: int | None) -> None:
        self.fn, self.arrays = None, "torch"
        cos, sin = to_torch(cos, "cos"), to_torch(sin, "sin")
        if cos.dim() != 2 or cos.shape != sin.shape or cos.shape[0] == 0:
            raise ValueError(
                "cos and sin must be tables of one shape (num_positions, width), width = "
                f"rotary_dim // 2 (one value per pair) or rotary_dim, got {tuple(cos.shape)} and "
                f"{tuple(sin.shape)}"
            )
        if cos.shape[0] < 2:
            raise ValueError(
                "cos and sin have one row (position 0, where every angle is 0): a table needs "
                "rows for positions 0 and 1 at least for anything to be checked"
            )
        if not cos.is_floating_point() or not sin.is_floating_point():
            raise TypeError(f"cos and sin must be floating tables, got {cos.dtype}, {sin.dtype}")
        self.layout = check_layout("layout", layout)
        self.cos, self.sin = cos, sin
        self.rotary_dim = None if rotary_dim is None else check_dim("rotary_dim", rotary_dim)
        self.max_position = cos.shape[0] - 1

    def __repr__(self) -> str:
        rows, width = self.cos.shape
        return f"table_fn(cos/sin {rows} x {width} {dtype_name(self.cos.dtype)}, {self.layout})"

    def one(self, x, positions):
        width, head_dim = self.cos.shape[1], x.shape[-1]
        # Default: one value per pair when the table is at most half the head, else per
        # coordinate (a partial per-coordinate table needs rotary_dim).
        r = self.rotary_dim or (2 * width if 2 * width <= head_dim else width)
        if width not in (r, r // 2) or r > head_dim or r % 2:
            raise ValueError(
                f"a cos/sin table of width {width} does not fit rotary_dim {r} and head_dim "
                f"{head_dim}: pass rotary_dim= to table_fn"
            )
        if int(positions.max()) > self.max_position:
            raise ValueError(
                f"the table has rows for positions 0..{self.max_position}, asked for "
                f"{int(positions.max())}: pass max_position={self.max_position} to the check"
            )
        rows = positions.to("cpu")  # (n,) or (batch, 1, n): per-row offsets
        # The table's values, exactly, in float64: the rotation itself adds no error, so what
        # is judged is the table.
        cos = self.cos.to("cpu", torch.float64)[rows]
        sin = self.sin.to("cpu", torch.float64)[rows]
        if width == r // 2:  # one value per pair: spread it over the pair's two coordinates
            index = pair_index(self.layout, r)
            cos, sin = cos[..., index], sin[..., index]
        x64 = x.to("cpu", torch.float64)
        xr = x64[..., :r]
        rotated = xr * cos + partner(xr, self.layout) * sin
        out = torch.cat([rotated, x64[..., r:]], dim=-1)
        return out.to(x.dtype).to(x.device)


def table_fn(cos, sin, *, layout: str, rotary_dim: int | None = None) -> RopeFn:
    """Check a precomputed cos/sin table: the kit rotates with it, in the given layout.

    Explained on the site: [other frameworks](frameworks.md#frameworks-adapters).

    The rotation is exact (float64 from the table's own values, rounded once to the input's
    dtype), so every error the check finds is in the table: its frequencies, positions,
    attention factor or precision. Rows are positions ``0 .. num_positions - 1``; the checks
    stop at the last row (the returned function carries ``max_position``).

    Parameters
    ----------
    cos, sin
        ``(num_positions, rotary_dim // 2)`` (one value per pair) or
        ``(num_positions, rotary_dim)`` (per coordinate: HF's ``cat([freqs, freqs])`` for the half
        layout, each value twice in a row for the interleaved one), in any array library.
    layout
        ``"half"`` or ``"interleaved"``: which coordinates the rotation pairs.
    rotary_dim
        Coordinates rotated. Default: twice the table's width when that fits the head (one value
        per pair), else the width (one per coordinate).

    Returns
    -------
    callable
        ``fn(q, k, positions)`` on torch tensors.
    """
    return TableAdapter(cos, sin, layout, rotary_dim)
