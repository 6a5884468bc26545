"""Figures of the precision page: float32 against float64 angles in cos/sin tables.

Shown on ``precision.md``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ._common import _pyplot
from ._registry import figure_facts, sci, site_figure

if TYPE_CHECKING:  # pragma: no cover
    import numpy as np
    from matplotlib.figure import Figure

__all__ = [
    "angle_precision_data",
    "angle_precision",
]


def angle_precision_data(
    dim: int = 128,
    base: float = 10000.0,
    max_log2: int = 24,
    per_octave: int = 4,
    window: int = 16,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    r"""Max abs error of two float32 cos/sin tables against a float64 table, per position.

    The "float32 angles" table forms ``position * inv_freq`` in float32 (as the common tutorial
    code and HF transformers do); posenc_ref's table (:func:`posenc_ref.rope_cos_sin`) forms
    the angles in float64 and casts only cos and sin. The reference is the float64 table,
    whose own angle error is at most about ``position * 2**-52`` radians (4e-9 at 2**24), far
    below both curves.

    Only a sample of positions is computed, so that the figure stays fast: ``per_octave``
    start points per octave up to ``2**max_log2``, each followed by up to ``window - 1``
    consecutive positions (fewer for small starts, so that a sample never spans more than a
    quarter of its octave). The error at a start point is the maximum over its positions and
    over every column.

    Returns
    -------
    tuple of numpy.ndarray
        ``(positions, float32_angle_error, posenc_ref_error)``, each of shape ``(P,)``: the
        start points and the two maximum errors.
    """
    import numpy as np
    import torch

    from ..absolute import inv_freq
    from ..rope import rope_cos_sin

    starts = np.unique(np.round(2.0 ** (np.arange(max_log2 * per_octave + 1) / per_octave)))
    starts = starts.astype(np.int64)
    sizes = np.clip(starts // 4, 1, window)  # consecutive positions per sample
    positions = np.concatenate([np.arange(p, p + n) for p, n in zip(starts, sizes, strict=True)])
    group_starts = np.concatenate([[0], np.cumsum(sizes)[:-1]])  # for np.maximum.reduceat

    omega = inv_freq(dim, base)  # float64, (dim/2,)
    pos = torch.from_numpy(positions)
    angles64 = torch.outer(pos.double(), omega)  # the reference, (P_all, dim/2)
    angles32 = torch.outer(pos.float(), omega.float())  # the float32 recipe
    cos_true, sin_true = torch.cos(angles64), torch.sin(angles64)
    err32 = torch.maximum(
        (torch.cos(angles32).double() - cos_true).abs(),
        (torch.sin(angles32).double() - sin_true).abs(),
    ).amax(dim=1)
    cos_ref, sin_ref = rope_cos_sin(pos, omega, dtype=torch.float32)  # one column per pair
    err_ref = torch.maximum(
        (cos_ref.double() - cos_true).abs(), (sin_ref.double() - sin_true).abs()
    ).amax(dim=1)
    return (
        starts,
        np.maximum.reduceat(err32.numpy(), group_starts),
        np.maximum.reduceat(err_ref.numpy(), group_starts),
    )


def angle_precision(dim: int = 128, base: float = 10000.0, max_log2: int = 24) -> Figure:
    """Draw :func:`angle_precision_data` on log-log axes, with a ``position * 2**-24`` guide.

    Returns
    -------
    matplotlib.figure.Figure
    """
    plt = _pyplot()
    positions, err32, err_ref = angle_precision_data(dim, base, max_log2)
    fig, ax = plt.subplots(figsize=(7.5, 4.5))
    ax.loglog(positions, err32, "o-", ms=3, lw=1, color="C3", label="float32 angles")
    ax.loglog(positions, err_ref, "s-", ms=3, lw=1, color="C0", label="posenc_ref (float64 angles)")
    guide = r"position $\times 2^{-24}$"
    ax.loglog(positions, positions * 2.0**-24, color="0.5", lw=0.8, ls="--", label=guide)
    ax.set_xlabel("position")
    ax.set_ylabel("max abs error of cos/sin (all columns)")
    ax.set_title(f"float32 cos/sin tables against float64 (dim={dim}, base={base:g})", fontsize=11)
    ax.grid(alpha=0.3, which="both")
    ax.legend(fontsize=9)
    fig.tight_layout()
    return fig


@site_figure("angle_precision.svg")
def _site_angle_precision() -> Figure:
    return angle_precision()


@figure_facts("angle_precision.svg")
def _angle_precision_facts() -> dict[str, str]:
    starts, float32_angles, ours = angle_precision_data()
    return {
        "first": sci(float32_angles[0]),
        "first_position": f"{int(starts[0]):,}",
        "last": f"{float32_angles[-1]:.1f}",
        "last_position": f"{int(starts[-1]):,}",
        "ours": sci(ours.max()),
    }
