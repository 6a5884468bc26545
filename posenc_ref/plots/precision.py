"""Figures of the precision page: float32 against float64 angles in cos/sin tables.

Shown on ``precision.md``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ._common import _pyplot
from ._registry import default_of, figure_facts, sci, site_figure

if TYPE_CHECKING:  # pragma: no cover
    import numpy as np
    import torch
    from matplotlib.figure import Figure

__all__ = [
    "hf_float32_inv_freq",
    "float32_angle_errors",
    "angle_precision_data",
    "angle_precision",
]


def hf_float32_inv_freq(dim: int, base: float = 10000.0) -> torch.Tensor:
    r"""The frequencies as HF transformers computes them: a float32 power of a float32 exponent.

    ``1 / base ** (arange(0, dim, 2) / dim)`` with the exponent and the power in float32, the
    recipe of transformers' default ``rope_type`` (and of most tutorial code). The exponent
    :math:`2i/d` is rounded unless :math:`d/2` is a power of two, and the power multiplies that
    rounding by :math:`\ln(1/\omega_i)`. Tested bit for bit against transformers' own
    ``inv_freq`` buffer.

    Returns
    -------
    torch.Tensor
        ``(dim // 2,)`` float32.
    """
    import torch

    from .._checks import check_base, check_dim

    dim, base = check_dim("dim", dim), check_base("base", base)
    exponent = torch.arange(0, dim, 2, dtype=torch.int64).to(torch.float32) / dim
    return 1.0 / (base**exponent)


def float32_angle_errors(
    dim: int, base: float = 10000.0, positions: torch.Tensor | None = None
) -> dict[str, torch.Tensor]:
    r"""The error of float32 angles formed as transformers forms them, and two bounds for it.

    The angle :math:`t\,\hat\omega_i` is the float32 product of the position and
    :func:`hf_float32_inv_freq`, compared with the exact :math:`t\,\omega_i` (float64).

    Parameters
    ----------
    dim, base
        The rotary width and the base.
    positions
        1-D integer positions ``(P,)``; default: the 64 positions below each power of two from
        :math:`2^7` to :math:`2^{20}`.

    Returns
    -------
    dict
        ``positions`` ``(P,)``; ``error`` ``(P, dim/2)``, the absolute angle error in radians;
        ``naive`` ``(P, dim/2)``, the bound :math:`t\,\omega_i\,2^{-23}` (two roundings of
        :math:`2^{-24}`); ``allowance`` ``(P, dim/2)``, the float32-angle term of the conformance
        check's error model (:func:`~posenc_ref.plots.check_allowance`).
    """
    import torch

    from ..absolute import inv_freq
    from ..rope import RotaryEmbedding
    from .check import check_allowance

    if positions is None:
        positions = torch.cat([torch.arange(2**k - 64, 2**k) for k in range(7, 21)])
    positions = torch.as_tensor(positions).to(torch.int64)
    omega = inv_freq(dim, base)  # float64, (dim/2,)
    exact = positions.double()[:, None] * omega  # (P, dim/2)
    float32 = positions.float()[:, None] * hf_float32_inv_freq(dim, base)  # transformers' product
    reference = RotaryEmbedding(dim, base=base)
    with_angles = check_allowance(reference, positions)
    without = check_allowance(reference, positions, float32_angles=False)
    return {
        "positions": positions,
        "error": (float32.double() - exact).abs(),
        "naive": exact * 2.0**-23,
        "allowance": with_angles - without,
    }


def angle_precision_data(
    dim: int = 128,
    base: float = 10000.0,
    max_log2: int = 24,
    per_octave: int = 4,
    window: int = 16,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    r"""Max abs error of two float32 cos/sin tables against a float64 table, per position.

    The "float32 angles" table forms ``position * inv_freq`` in float32 with the frequencies of
    :func:`hf_float32_inv_freq`, as HF transformers and the common tutorial code do; posenc_ref's
    table (:func:`posenc_ref.rope_cos_sin`) forms
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
    angles32 = torch.outer(pos.float(), hf_float32_inv_freq(dim, base))  # transformers' recipe
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
    """Draw :func:`angle_precision_data` on log-log axes, with the bound on float32 angles.

    The bound is the float32-angle term of the conformance check's error model
    (:func:`float32_angle_errors`), its largest value over the pairs at each position; a dashed
    ``position * 2**-24`` line is the guide for one rounding of the largest angle.

    Returns
    -------
    matplotlib.figure.Figure
    """
    plt = _pyplot()
    positions, err32, err_ref = angle_precision_data(dim, base, max_log2)
    fig, ax = plt.subplots(figsize=(7.5, 4.5))
    ax.loglog(positions, err32, "o-", ms=3, lw=1, color="C3", label="float32 angles")
    ax.loglog(positions, err_ref, "s-", ms=3, lw=1, color="C0", label="posenc_ref (float64 angles)")
    import torch

    bound = float32_angle_errors(dim, base, torch.from_numpy(positions))["allowance"].amax(dim=1)
    allowed = "bound on the float32 angle error (check page)"
    ax.loglog(positions, bound.numpy(), color="0.25", lw=1, ls=":", label=allowed)
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
    import torch

    dim, base = default_of(angle_precision, "dim"), default_of(angle_precision, "base")
    starts, float32_angles, ours = angle_precision_data(dim, base)
    bound = float32_angle_errors(dim, base, torch.from_numpy(starts))["allowance"].amax(dim=1)
    return {
        "margin": f"{float((bound / torch.from_numpy(float32_angles)).median()):.0f}",
        "first": sci(float32_angles[0]),
        "first_position": f"{int(starts[0]):,}",
        "last": f"{float32_angles[-1]:.1f}",
        "last_position": f"{int(starts[-1]):,}",
        "ours": sci(ours.max()),
    }
