r"""RoPE on a patch grid (axial 2-D RoPE), as vision encoders use it.

A vision transformer cuts an image into a grid of patches; the patch in row :math:`y` and column
:math:`x` carries two positions instead of one. Axial RoPE gives half of the :math:`d/2` rotary
pairs to the row (the set :math:`I_y`) and the other half to the column (:math:`I_x`): pair
:math:`i` of a patch is turned by

.. math::

    \theta_i(y, x) = \begin{cases} y\,\omega_i & i \in I_y \\ x\,\omega_i & i \in I_x \end{cases}

A query at :math:`(y_m, x_m)` and a key at :math:`(y_p, x_p)` then score through the row offset
:math:`y_p - y_m` and the column offset :math:`x_p - x_m` only. The rotation itself is
:func:`posenc_ref.rope.apply_rope`, unchanged: only the angle table is new.

The families differ in four choices, each a small function here, gathered per family in
:data:`SCHEMES`:

- **frequencies**: :func:`shared_frequencies` (both axes take
  :math:`\omega_i = n^{-4i/d}`, the frequencies of a head half as wide) or
  :func:`alternating_frequencies` (Pixtral: the row takes the even and the column the odd
  frequencies of the full head, :math:`n^{-4i/d}` and :math:`n^{-(4i+2)/d}`);
  :func:`dinov3_frequencies` multiplies the shared ones by :math:`2\pi`;
- **which half goes to which axis**: :func:`rows_first` or :func:`columns_first`;
- **pair layout**: ``"half"`` or ``"interleaved"``, as for 1-D RoPE;
- **positions from the grid**: :func:`grid_indices` (:math:`0..H-1`, :math:`0..W-1`),
  :func:`grid_indices_from_one` (Llama 4) or :func:`grid_centres` (DINOv3: patch centres in
  :math:`[-1, 1]`).

The order of the patches in the sequence is one more choice, of the model's vision tower
rather than of its rotary code: row-major, or grouped into the :math:`m \times m` blocks that a
later layer merges into one token (Qwen2-VL, Qwen2.5-VL and Qwen3-VL with their
``spatial_merge_size`` of 2). :func:`merge_block_order` gives that order and
:func:`grid_positions` takes it as ``merge_size``.

Derived on the site: [RoPE on a patch grid](axial.md).

Shapes: ``positions`` are ``(..., num_patches, 2)`` with column 0 the row coordinate and column 1
the column coordinate; tables are ``(..., num_patches, dim // 2)``; ``x`` is
``(..., num_patches, dim)``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

import torch

from ._checks import check_base, check_int
from ._tensor_checks import (
    check_float_dtype,
    check_inv_freq,
    check_positions,
    check_table_dtype,
    check_tensor,
)
from .rope import apply_rope
from .values import MAX_AXIAL_DIM as MAX_DIM
from .values import _check_axial_dim as check_axial_dim
from .values import axial_inv_freq_values

__all__ = [
    "AXES",
    "SCHEMES",
    "FAMILIES",
    "AxialScheme",
    "shared_frequencies",
    "alternating_frequencies",
    "dinov3_frequencies",
    "rows_first",
    "columns_first",
    "grid_indices",
    "grid_indices_from_one",
    "grid_centres",
    "axial_inv_freq",
    "axial_pair_axes",
    "grid_positions",
    "merge_block_order",
    "axial_angles",
    "axial_angles_loop",
    "axial_cos_sin",
    "apply_axial_rope",
]

AXES = ("row", "column")
"""The meaning of the two position columns and of the values of :func:`axial_pair_axes`."""


def _check_axial_dim(dim: object) -> int:
    """A rotated width: a multiple of 4 in ``[4, 2**20]`` (the check of the scalar rules)."""
    return check_axial_dim(dim)


# --------------------------------------------------------------------------- frequencies


def shared_frequencies(dim: int, base: float) -> torch.Tensor:
    r"""Both axes take :math:`\omega_i = n^{-4i/d}`, :math:`i < d/4`: ``(dim // 2,)`` float64.

    The frequencies of a head of width :math:`d/2` (Qwen2-VL, MLCD, Llama 4, SAM 2, DINOv3),
    written once for the first half of the pairs and once for the second.

    >>> shared_frequencies(8, 100.0)
    tensor([1.0000, 0.1000, 1.0000, 0.1000], dtype=torch.float64)
    """
    return _floats(axial_inv_freq_values(dim, base, "qwen2_vl"))


def alternating_frequencies(dim: int, base: float) -> torch.Tensor:
    r"""Pixtral: the first half takes :math:`n^{-4i/d}`, the second :math:`n^{-(4i+2)/d}`.

    The full head's frequencies :math:`n^{-2j/d}` dealt out alternately: even :math:`j` to the
    first :math:`d/4` pairs, odd :math:`j` to the rest. ``(dim // 2,)`` float64.

    >>> alternating_frequencies(8, 100.0)
    tensor([1.0000, 0.1000, 0.3162, 0.0316], dtype=torch.float64)
    """
    return _floats(axial_inv_freq_values(dim, base, "pixtral"))


def dinov3_frequencies(dim: int, base: float) -> torch.Tensor:
    r"""DINOv3: :math:`2\pi\,n^{-4i/d}` per axis, for coordinates in :math:`[-1, 1]`.

    One turn of pair :math:`i` spans :math:`n^{4i/d}` units of the normalized coordinate (the
    period DINOv3's code names). ``(dim // 2,)`` float64.
    """
    return _floats(axial_inv_freq_values(dim, base, "dinov3"))


def _floats(values: list[float]) -> torch.Tensor:
    # the rule's values (posenc_ref.values.AXIAL_RULES, the one definition) as a float64 tensor
    return torch.tensor(values, dtype=torch.float64, device="cpu")


# --------------------------------------------------------------------------- pairs to axes


def rows_first(pairs: int) -> torch.Tensor:
    """The first half of the pairs to the row (0), the second to the column (1): ``(pairs,)``."""
    pairs = _check_pairs(pairs)
    return torch.arange(pairs) >= pairs // 2


def columns_first(pairs: int) -> torch.Tensor:
    """The first half of the pairs to the column (1), the second to the row (0): ``(pairs,)``."""
    pairs = _check_pairs(pairs)
    return torch.arange(pairs) < pairs // 2


def _check_pairs(pairs: object) -> int:
    """A pair count: an integer in ``[0, MAX_DIM // 2]``."""
    pairs = check_int("pairs", pairs, minimum=0)
    if pairs > MAX_DIM // 2:
        raise ValueError(f"pairs must be at most 2**19 (half a head of 2**20), got {pairs!r}")
    return pairs


# --------------------------------------------------------------------------- grid positions


# Grids past this are no image's (Qwen's largest images are ~1200 patches a side); refusing them
# keeps a typo (10**6 x 10**6) from asking the allocator for terabytes.
MAX_PATCHES = 2**24


def _check_grid(height: object, width: object) -> tuple[int, int]:
    height = check_int("height", height, minimum=1)
    width = check_int("width", width, minimum=1)
    if height * width > MAX_PATCHES:
        raise ValueError(
            f"height * width must be at most 2**24 = {MAX_PATCHES} patches (a 4096 x 4096 grid), "
            f"got height={height}, width={width} ({height * width} patches)"
        )
    return height, width


def _grid(height: object, width: object) -> tuple[torch.Tensor, torch.Tensor]:
    height, width = _check_grid(height, width)
    rows, cols = torch.meshgrid(
        torch.arange(height, dtype=torch.float64),
        torch.arange(width, dtype=torch.float64),
        indexing="ij",
    )
    return rows.reshape(-1), cols.reshape(-1)  # row-major: patch t is (t // width, t % width)


def grid_indices(height: int, width: int) -> torch.Tensor:
    """Row and column indices, row-major: ``(height * width, 2)`` float64.

    >>> grid_indices(2, 3)[:, 1]
    tensor([0., 1., 2., 0., 1., 2.], dtype=torch.float64)
    """
    return torch.stack(_grid(height, width), dim=-1)


def grid_indices_from_one(height: int, width: int) -> torch.Tensor:
    """Llama 4: the indices plus one, so that position 0 is left to the class token."""
    return grid_indices(height, width) + 1


def grid_centres(height: int, width: int) -> torch.Tensor:
    r"""DINOv3: patch centres :math:`2(y + \tfrac12)/H - 1` and :math:`2(x + \tfrac12)/W - 1`.

    In :math:`(-1, 1)` whatever the grid, so a larger image is a finer grid, not a longer one.
    ``(height * width, 2)`` float64.

    >>> grid_centres(1, 2)
    tensor([[ 0.0000, -0.5000],
            [ 0.0000,  0.5000]], dtype=torch.float64)
    """
    rows, cols = _grid(height, width)
    return torch.stack([2 * (rows + 0.5) / height - 1, 2 * (cols + 0.5) / width - 1], dim=-1)


# --------------------------------------------------------------------------- schemes


class AxialScheme(NamedTuple):
    """One family's choices (see the module docstring)."""

    frequencies: Callable[[int, float], torch.Tensor]
    pair_axes: Callable[[int], torch.Tensor]
    layout: str
    grid: Callable[[int, int], torch.Tensor]


SCHEMES: dict[str, AxialScheme] = {
    "qwen2_vl": AxialScheme(shared_frequencies, rows_first, "half", grid_indices),
    "pixtral": AxialScheme(alternating_frequencies, rows_first, "half", grid_indices),
    "llama4": AxialScheme(shared_frequencies, columns_first, "interleaved", grid_indices_from_one),
    "sam2": AxialScheme(shared_frequencies, columns_first, "interleaved", grid_indices),
    "dinov3": AxialScheme(dinov3_frequencies, rows_first, "half", grid_centres),
}
"""Scheme name (its first family) to its choices. Each was read from and is tested against the
families' own code in transformers (tests/test_axial.py)."""

FAMILIES: dict[str, str] = {
    "qwen2_vl": "qwen2_vl",
    "qwen2_5_vl": "qwen2_vl",
    "qwen3_vl": "qwen2_vl",
    "qwen3_vl_moe": "qwen2_vl",
    "qwen3_5": "qwen2_vl",
    "qwen3_5_moe": "qwen2_vl",
    "mlcd": "qwen2_vl",
    "pixtral": "pixtral",
    "llama4": "llama4",
    "sam2_video": "sam2",
    "dinov3_vit": "dinov3",
}
"""transformers ``model_type`` of the vision model to the name of its scheme in :data:`SCHEMES`.

Vision towers only: the language models of these families use 1-D RoPE or M-RoPE."""


def _scheme(scheme: object) -> AxialScheme:
    if scheme not in SCHEMES:
        raise ValueError(f"scheme must be one of {tuple(SCHEMES)}, got {scheme!r}")
    return SCHEMES[scheme]  # type: ignore[index]


def axial_inv_freq(dim: int, base: float, scheme: str) -> torch.Tensor:
    r"""The frequency :math:`\omega_i` of each pair under ``scheme``: ``(dim // 2,)`` float64.

    ``dim`` is the rotated width (a multiple of 4), ``base`` the base :math:`n > 1`.
    """
    dim = _check_axial_dim(dim)
    return _scheme(scheme).frequencies(dim, check_base("base", base))


def axial_pair_axes(dim: int, scheme: str) -> torch.Tensor:
    """The axis of each pair (0 row, 1 column) under ``scheme``: ``(dim // 2,)`` int64.

    >>> axial_pair_axes(8, "qwen2_vl"), axial_pair_axes(8, "sam2")
    (tensor([0, 0, 1, 1]), tensor([1, 1, 0, 0]))
    """
    pairs = _check_axial_dim(dim) // 2
    return _scheme(scheme).pair_axes(pairs).long()


def merge_block_order(height: int, width: int, merge_size: int) -> torch.Tensor:
    r"""The row-major index of the patch at each place of a sequence in merge-block order.

    Derived on the site: [patch order](axial.md#axial-merge-blocks).

    The patches are taken block by block (blocks row-major), and inside each
    ``merge_size x merge_size`` block row-major: place :math:`t` holds the patch in row
    :math:`y = m\,b_y + i` and column :math:`x = m\,b_x + j` for block :math:`(b_y, b_x)` and
    in-block offset :math:`(i, j)`. ``merge_size=1`` is the row-major order itself. This is the
    order of transformers' ``get_vision_position_ids`` (Qwen2-VL's vision tower and its
    successors), whose patch merger then joins each block of consecutive tokens into one.

    Parameters
    ----------
    height, width
        The grid, in patches; multiples of ``merge_size``.
    merge_size
        The side of a merged block (``spatial_merge_size`` in a vision config), ``>= 1``.

    Returns
    -------
    torch.Tensor
        ``(height * width,)`` int64, a permutation of ``0 .. height * width - 1``.

    Examples
    --------
    >>> merge_block_order(2, 4, 2)
    tensor([0, 1, 4, 5, 2, 3, 6, 7])
    """
    height, width = _check_grid(height, width)
    merge_size = check_int("merge_size", merge_size, minimum=1)
    if height % merge_size or width % merge_size:
        raise ValueError(
            f"height and width must be multiples of merge_size={merge_size} (whole blocks), "
            f"got a {height} x {width} grid"
        )
    m = merge_size
    index = torch.arange(height * width).reshape(height // m, m, width // m, m)
    return index.transpose(1, 2).reshape(-1)  # (block row, block column, row, column)


def grid_positions(height: int, width: int, scheme: str, *, merge_size: int = 1) -> torch.Tensor:
    """The (row, column) coordinates of a ``height x width`` grid under ``scheme``, in order.

    Derived on the site: [patch order](axial.md#axial-merge-blocks).

    Returns ``(height * width, 2)`` float64. With ``merge_size=1`` (default) the patches are
    row-major: patch :math:`t` is row ``t // width``, column ``t % width``. With
    ``merge_size=m`` they come in the order of :func:`merge_block_order`: each ``m x m`` block
    of patches in turn, as the vision towers of Qwen2-VL, Qwen2.5-VL and Qwen3-VL lay out their
    sequence before merging every block into one token (``spatial_merge_size`` 2 in their
    released configs).

    Examples
    --------
    >>> grid_positions(2, 4, "qwen2_vl", merge_size=2)[:4]
    tensor([[0., 0.],
            [0., 1.],
            [1., 0.],
            [1., 1.]], dtype=torch.float64)
    """
    positions = _scheme(scheme).grid(height, width)
    if check_int("merge_size", merge_size, minimum=1) == 1:
        return positions
    return positions[merge_block_order(height, width, merge_size)]


# --------------------------------------------------------------------------- angle tables


def _check_tables(
    positions: object, inv_freq: object, pair_axes: object
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    positions = check_positions("positions", positions, signed=True)
    if positions.dim() < 2 or positions.shape[-1] != 2:
        raise ValueError(
            "positions must have shape (..., num_patches, 2) (column 0 the row, column 1 the "
            f"column coordinate), got {tuple(positions.shape)}; see grid_positions"
        )
    inv_freq = check_inv_freq("inv_freq", inv_freq)
    pair_axes = check_tensor("pair_axes", pair_axes)
    if pair_axes.shape != inv_freq.shape or not bool(((pair_axes == 0) | (pair_axes == 1)).all()):
        raise ValueError(
            f"pair_axes must have inv_freq's shape {tuple(inv_freq.shape)} and values in "
            f"{{0, 1}} (0 row, 1 column), got shape {tuple(pair_axes.shape)}; see axial_pair_axes"
        )
    return positions, inv_freq, pair_axes.long()


def axial_angles(
    positions: torch.Tensor, inv_freq: torch.Tensor, pair_axes: torch.Tensor
) -> torch.Tensor:
    r"""The angle of every pair of every patch, :math:`y_t\,\omega_i` or :math:`x_t\,\omega_i`.

    Derived on the site: [the angle table](axial.md#axial-table).

    Parameters
    ----------
    positions
        ``(..., num_patches, 2)``: :math:`(y_t, x_t)`, the row and the column coordinate of patch
        :math:`t` (any finite values: DINOv3's are negative).
    inv_freq
        ``(pairs,)`` frequencies :math:`\omega_i` (:func:`axial_inv_freq`).
    pair_axes
        ``(pairs,)``: 0 where :math:`i \in I_y` (row), 1 where :math:`i \in I_x` (column)
        (:func:`axial_pair_axes`).

    Returns
    -------
    torch.Tensor
        ``(..., num_patches, pairs)`` float64, on ``positions``' device.
    """
    positions, inv_freq, pair_axes = _check_tables(positions, inv_freq, pair_axes)
    coords = positions.to(torch.float64)[..., pair_axes.to(positions.device)]  # (..., N, pairs)
    return _finite(coords * inv_freq.to(positions.device, torch.float64), positions, inv_freq)


def _finite(angles: torch.Tensor, positions: torch.Tensor, inv_freq: torch.Tensor) -> torch.Tensor:
    """The angles, or a ValueError where one overflows (cos and sin of inf are NaN)."""
    if bool(torch.isfinite(angles).all()):
        return angles
    fastest = float(inv_freq.abs().max())
    raise ValueError(
        "positions must keep every angle finite in float64: |coordinate| * max(inv_freq) "
        f"< 1.8e308, i.e. |coordinate| < {torch.finfo(torch.float64).max / fastest:.4g} "
        f"with these frequencies (largest {fastest:.6g}); got a coordinate of "
        f"{float(positions.abs().max()):.4g}"
    )


def axial_angles_loop(
    positions: torch.Tensor, inv_freq: torch.Tensor, pair_axes: torch.Tensor
) -> torch.Tensor:
    """:func:`axial_angles` one patch and one pair at a time: the oracle (float64, CPU)."""
    positions, inv_freq, pair_axes = _check_tables(positions, inv_freq, pair_axes)
    flat = positions.to("cpu", torch.float64).reshape(-1, 2).tolist()
    omegas = inv_freq.to("cpu", torch.float64).tolist()
    axes = pair_axes.tolist()
    rows = []
    for row, col in flat:
        coordinate = (row, col)
        rows.append([coordinate[axis] * omega for axis, omega in zip(axes, omegas, strict=True)])
    table = torch.tensor(rows, dtype=torch.float64).reshape(*positions.shape[:-1], len(omegas))
    return _finite(table, positions, inv_freq).to(positions.device)


def axial_cos_sin(
    positions: torch.Tensor,
    dim: int,
    base: float,
    scheme: str,
    *,
    dtype: torch.dtype = torch.float32,
) -> tuple[torch.Tensor, torch.Tensor]:
    r"""The cos and sin tables of ``scheme`` for patches at ``positions``.

    Angles from :func:`axial_angles` in float64, then cast to ``dtype`` (float32 or float64).
    Feed them to :func:`posenc_ref.rope.apply_rope` with the scheme's layout, or use
    :func:`apply_axial_rope`.

    Returns ``(cos, sin)``, each ``(..., num_patches, dim // 2)``.
    """
    dtype = check_table_dtype("dtype", check_float_dtype("dtype", dtype))
    angles = axial_angles(
        positions, axial_inv_freq(dim, base, scheme), axial_pair_axes(dim, scheme)
    )
    return torch.cos(angles).to(dtype), torch.sin(angles).to(dtype)


def apply_axial_rope(
    x: torch.Tensor, positions: torch.Tensor, *, base: float, scheme: str
) -> torch.Tensor:
    r"""Rotate queries or keys of patches by axial RoPE: the whole head, ``scheme``'s layout.

    Derived on the site: [the rotation](axial.md#axial-rotation).

    Parameters
    ----------
    x
        ``(..., num_patches, dim)`` floating tensor, ``dim`` a multiple of 4; e.g.
        ``(batch, heads, num_patches, dim)``.
    positions
        ``(num_patches, 2)`` (row, column) coordinates, e.g. :func:`grid_positions`; or any shape
        ``(..., num_patches, 2)`` whose tables broadcast against ``x``.
    base
        The base :math:`n` (the config's ``rope_theta``).
    scheme
        A name in :data:`SCHEMES`.

    Returns
    -------
    torch.Tensor
        Same shape and dtype as ``x``.
    """
    x = check_tensor("x", x)
    if x.dim() < 2:
        raise ValueError(f"x must have shape (..., num_patches, dim), got {tuple(x.shape)}")
    cos, sin = axial_cos_sin(positions, x.shape[-1], base, scheme, dtype=torch.float64)
    if cos.shape[-2] != x.shape[-2]:
        raise ValueError(
            f"positions give {cos.shape[-2]} patches (shape {tuple(positions.shape)}) but x has "
            f"{x.shape[-2]} (shape {tuple(x.shape)}, patches in its second-to-last dimension): "
            "give one (row, column) pair per patch of x, e.g. grid_positions(height, width, "
            "scheme) with height * width patches"
        )
    work = torch.float64 if x.dtype == torch.float64 else torch.float32
    cos, sin = cos.to(x.device, work), sin.to(x.device, work)
    return apply_rope(x, cos, sin, layout=_scheme(scheme).layout)
