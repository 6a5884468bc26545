"""Figure of the axial RoPE page: the angle of one row pair and one column pair over a grid.

Shown on ``axial.md``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ._common import _pyplot, _table_image
from ._registry import default_of, figure_facts, site_figure

if TYPE_CHECKING:  # pragma: no cover
    from matplotlib.figure import Figure

__all__ = ["axial_pair_angles"]


def axial_pair_angles(
    schemes: tuple[tuple[str, float], ...] = (("qwen2_vl", 10000.0), ("dinov3", 100.0)),
    dim: int = 64,
    pair: int = 1,
    height: int = 12,
    width: int = 16,
) -> Figure:
    r"""The cosine of pair ``pair``'s angle and of its column twin's over a patch grid.

    One row of panels per scheme: pair ``pair`` and pair ``pair + dim // 4`` (its twin on the
    other axis, with the same frequency under the shared schemes), each shown as
    :math:`\cos\theta` for every patch of a ``height x width`` grid, from
    :func:`posenc_ref.axial.axial_cos_sin` with the scheme's own grid positions.

    Parameters
    ----------
    schemes
        ``(scheme name, base)`` per row of panels.
    dim
        Head width (a multiple of 4).
    pair
        A pair index below ``dim // 4``.
    height, width
        The grid, in patches.

    Returns
    -------
    matplotlib.figure.Figure
    """
    import torch

    from ..axial import AXES, axial_cos_sin, axial_pair_axes, grid_positions

    plt = _pyplot()
    twins = (pair, pair + dim // 4)
    fig, axes = plt.subplots(
        len(schemes), 2, figsize=(8.4, 2.9 * len(schemes)), squeeze=False, sharex=True
    )
    for row, (scheme, base) in enumerate(schemes):
        positions = grid_positions(height, width, scheme)
        cos, _ = axial_cos_sin(positions, dim, base, scheme, dtype=torch.float64)
        which = axial_pair_axes(dim, scheme)
        for ax, i in zip(axes[row], twins, strict=True):
            image = _table_image(ax, cos[:, i].reshape(height, width).numpy())
            ax.set_aspect("equal")
            ax.set_title(f"{scheme}, base {base:g}: pair {i} ({AXES[int(which[i])]})", fontsize=10)
        axes[row, 0].set_ylabel("row $y$")
        axes[row, 0].figure.colorbar(image, ax=list(axes[row]), shrink=0.85, label=r"$\cos\theta$")
    for ax in axes[-1]:
        ax.set_xlabel("column $x$")
    fig.suptitle(
        f"Axial RoPE on a {height} x {width} patch grid (d = {dim}): one pair per axis",
        fontsize=11,
    )
    return fig


@site_figure("axial_pair_angles.svg")
def _site_axial_pair_angles() -> Figure:
    return axial_pair_angles()


@figure_facts("axial_pair_angles.svg")
def _axial_pair_angles_facts() -> dict[str, str]:
    from ..axial import axial_inv_freq, grid_positions

    (top, top_base), (bottom, bottom_base) = default_of(axial_pair_angles, "schemes")
    dim, pair = default_of(axial_pair_angles, "dim"), default_of(axial_pair_angles, "pair")
    height, width = default_of(axial_pair_angles, "height"), default_of(axial_pair_angles, "width")
    twin = pair + dim // 4

    def steps(scheme, base):  # radians per row for the pair, per column for its twin
        omega = axial_inv_freq(dim, base, scheme)
        grid = grid_positions(height, width, scheme)
        row_step, col_step = float(grid[width, 0] - grid[0, 0]), float(grid[1, 1] - grid[0, 1])
        return float(omega[pair]) * row_step, float(omega[twin]) * col_step

    top_row, top_col = steps(top, top_base)
    bottom_row, bottom_col = steps(bottom, bottom_base)
    return {
        "top_row": f"{top_row:.3f}",
        "top_col": f"{top_col:.3f}",
        "bottom_row": f"{bottom_row:.3f}",
        "bottom_col": f"{bottom_col:.3f}",
    }
