"""Figures of the page on the bounds and laws of context extension.

Shown on ``extension_laws.md``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ._common import _pyplot
from ._registry import default_of, figure_facts, site_figure

if TYPE_CHECKING:  # pragma: no cover
    from matplotlib.figure import Figure

__all__ = [
    "pi_bounds_data",
    "pi_bounds",
    "ntk_usable",
    "extrapolation_limits",
    "resonance_gaps",
]


def pi_bounds_data(
    dim: int = 128, base: float = 10000.0, length: int = 2048, seed: int = 0
) -> dict:
    r"""The two bounds of Position Interpolation's argument, for a score with :math:`|h_i| = 1`.

    :math:`h_i = e^{\mathrm{j}\phi_i}` with random phases (``seed``): a query and key of unit
    pairs. RoFormer's bound holds at every distance; PI's only between two grid points, where
    training has pinned the score.

    Returns
    -------
    dict
        ``distances`` ``(R,)`` over :math:`[0, 2L]`; ``extrapolation``: RoFormer's bound
        (:func:`posenc_ref.extension_laws.extrapolation_bound`); ``score``: :math:`|a(s)|`;
        ``interpolation``: :func:`posenc_ref.extension_laws.interpolation_bound` at its largest
        (half-way between integers); ``between`` and ``error``: :math:`|a(s) - a_{\text{lin}}(s)|`
        on one unit interval in the middle of :math:`[0, L]`, with ``parabola`` its bound there.
    """
    import math

    import torch

    from ..absolute import inv_freq
    from ..extension_laws import extrapolation_bound, interpolation_bound
    from ..rope_extension import score_function

    omega = inv_freq(dim, base)
    g = torch.Generator().manual_seed(seed)
    h = torch.exp(1j * 2 * math.pi * torch.rand(dim // 2, generator=g, dtype=torch.float64))
    distances = torch.arange(0, 2 * length + 1, dtype=torch.float64)
    start = float(length // 2)
    between = torch.linspace(start, start + 1, 101, dtype=torch.float64)
    ends = score_function(h, omega, torch.tensor([start, start + 1], dtype=torch.float64))
    chord = ends[0] + (between - start) * (ends[1] - ends[0])
    return {
        "distances": distances,
        "extrapolation": extrapolation_bound(h, omega, distances),
        "score": score_function(h, omega, distances).abs(),
        "interpolation": float(interpolation_bound(omega, torch.tensor([0.5]))[0]),
        "between": between,
        "error": (score_function(h, omega, between) - chord).abs(),
        "parabola": interpolation_bound(omega, between),
    }


def pi_bounds(dim: int = 128, base: float = 10000.0, length: int = 2048) -> Figure:
    """Left: RoFormer's bound against PI's, over the distance. Right: PI's bound between integers.

    Returns
    -------
    matplotlib.figure.Figure
    """
    plt = _pyplot()
    data = pi_bounds_data(dim, base, length)
    fig, (left, right) = plt.subplots(1, 2, figsize=(10.0, 3.6))
    left.semilogy(data["distances"], data["extrapolation"], color="C3", lw=0.6,
                  label="RoFormer's bound on |a(s)|")  # fmt: skip
    left.semilogy(data["distances"], data["score"].clamp(min=1e-3), color="0.6", lw=0.4,
                  label="|a(s)|")  # fmt: skip
    left.axhline(data["interpolation"], color="C0", lw=1.2,
                 label="PI's bound on |a(s) − chord|")  # fmt: skip
    left.axvline(length, color="0.3", lw=0.8, ls="--")
    left.set_xlabel("distance s")
    left.set_title(f"d = {dim}, |h_i| = 1", fontsize=10)
    left.legend(fontsize=8, loc="center right")
    right.plot(data["between"], data["parabola"], color="C0", label="PI's bound")
    right.plot(data["between"], data["error"], color="C3", label="|a(s) − chord|")
    right.set_xlabel("distance s, between two integers")
    right.set_title("|a(s) − chord|", fontsize=10)
    right.legend(fontsize=8, loc="upper right")
    fig.tight_layout()
    return fig


@site_figure("pi_bounds.svg")
def _site_pi_bounds() -> Figure:
    return pi_bounds()


@figure_facts("pi_bounds.svg")
def _pi_bounds_facts() -> dict[str, str]:
    data = pi_bounds_data(*(default_of(pi_bounds, n) for n in ("dim", "base", "length")))
    length = default_of(pi_bounds, "length")
    far = data["extrapolation"][length:]
    return {
        "interp": f"{data['interpolation']:.2f}",
        "far_low": f"{float(far.min()):.0f}",
        "far_high": f"{float(far.max()):.0f}",
    }


def ntk_usable(dim: int = 128, base: float = 10000.0, original_max_len: int = 4096) -> Figure:
    """The usable extension of NTK-aware scaling against its factor, beside the factor itself.

    Returns
    -------
    matplotlib.figure.Figure
    """
    import numpy as np

    from ..extension_laws import ntk_factor_for_ratio, ntk_usable_ratio

    plt = _pyplot()
    factors = np.geomspace(1, 64, 200)
    fig, ax = plt.subplots(figsize=(6.4, 3.8))
    ax.loglog(factors, factors, color="0.6", ls=":", label="the factor s")
    for length, colour in ((original_max_len, "C0"), (2 * original_max_len, "C1")):
        usable = [ntk_usable_ratio(dim, base, float(s), length) for s in factors]
        ax.loglog(factors, usable, color=colour, label=f"usable L / L0, L0 = {length}")
    need = ntk_factor_for_ratio(dim, base, 4.0, original_max_len)
    ax.plot([need], [4.0], "o", color="C0")
    ax.annotate(f"4x needs s = {need:.1f}", (need, 4.0), (need * 1.3, 2.0), fontsize=8,
                arrowprops={"arrowstyle": "-", "color": "0.5"})  # fmt: skip
    ax.set_xlabel("NTK-aware factor s")
    ax.set_ylabel("extension without unseen angles")
    ax.set_title(f"d = {dim}, base {base:g}", fontsize=10)
    ax.legend(fontsize=8, loc="upper left")
    fig.tight_layout()
    return fig


@site_figure("ntk_usable.svg")
def _site_ntk_usable() -> Figure:
    return ntk_usable()


@figure_facts("ntk_usable.svg")
def _ntk_usable_facts() -> dict[str, str]:
    from ..extension_laws import ntk_factor_for_ratio

    args = [default_of(ntk_usable, n) for n in ("dim", "base", "original_max_len")]
    return {"need": f"{ntk_factor_for_ratio(args[0], args[1], 4.0, args[2]):.1f}"}


def extrapolation_limits(
    dim: int = 128, base: float = 10000.0, original_max_len: int = 4096
) -> Figure:
    """Liu et al.'s extrapolation limit against the fine-tuning base, pre-trained at ``base``.

    Returns
    -------
    matplotlib.figure.Figure
    """
    import numpy as np

    from ..extension_laws import extrapolation_limit, full_turn_base
    from ..rope_extension import critical_dimension

    plt = _pyplot()
    critical = critical_dimension(dim, base, original_max_len)
    bases = np.geomspace(base, 1e8, 200)
    fig, ax = plt.subplots(figsize=(6.4, 3.8))
    ax.loglog(bases, [extrapolation_limit(dim, float(b), critical) for b in bases], color="C0",
              label=f"T_extra = 2π β^({critical}/{dim})")  # fmt: skip
    for b, name in ((5e5, "5e5 (Llama 2 Long)"), (1e6, "1e6 (Code Llama)")):
        t = extrapolation_limit(dim, b, critical)
        ax.plot([b], [t], "o", color="C3")
        ax.annotate(f"{name}: {t:,.0f}", (b, t), (b * 1.5, t / 3), fontsize=8)
    ax.axhline(original_max_len, color="0.3", lw=0.8, ls="--")
    ax.text(base * 1.1, original_max_len * 1.15, "L0", fontsize=9)
    small = full_turn_base(dim, original_max_len)
    ax.set_xlabel(f"fine-tuning base β (every pair turns within L0 below β = {small:.0f})")
    ax.set_ylabel("extrapolation limit (tokens)")
    ax.set_title(f"d = {dim}, pre-trained at base {base:g} on {original_max_len} tokens",
                 fontsize=10)  # fmt: skip
    ax.legend(fontsize=8, loc="upper left")
    fig.tight_layout()
    return fig


@site_figure("extrapolation_limits.svg")
def _site_extrapolation_limits() -> Figure:
    return extrapolation_limits()


@figure_facts("extrapolation_limits.svg")
def _extrapolation_limits_facts() -> dict[str, str]:
    from ..extension_laws import extrapolation_limit
    from ..rope_extension import critical_dimension

    dim, base, length = (default_of(extrapolation_limits, n)
                         for n in ("dim", "base", "original_max_len"))  # fmt: skip
    critical = critical_dimension(dim, base, length)
    return {
        "critical": str(critical),
        "at_1e6": f"{extrapolation_limit(dim, 1e6, critical):,.0f}",
    }


def resonance_gaps(dim: int = 16, base: float = 10000.0, original_max_len: int = 64) -> Figure:
    """Per pair, the largest gap between an angle past L0 and every trained one, before and after.

    Before and after Resonance RoPE's rounding, for positions up to 4 L0.

    Returns
    -------
    matplotlib.figure.Figure
    """
    import numpy as np

    from ..absolute import inv_freq
    from ..extension_laws import angle_gap, resonance_inv_freq

    plt = _pyplot()
    length = 4 * original_max_len
    before = angle_gap(inv_freq(dim, base), original_max_len, length).numpy()
    after = angle_gap(resonance_inv_freq(dim, base), original_max_len, length).numpy()
    pairs = np.arange(dim // 2)
    fig, ax = plt.subplots(figsize=(6.4, 3.6))
    ax.bar(pairs - 0.2, np.maximum(before, 1e-6), width=0.4, color="C3", label="RoPE")
    ax.bar(pairs + 0.2, np.maximum(after, 1e-6), width=0.4, color="C0", label="Resonance RoPE")
    wavelengths = 2 * np.pi / inv_freq(dim, base).numpy()
    kept = int((wavelengths <= original_max_len).sum())
    ax.axvline(kept - 0.5, color="0.3", lw=0.8, ls="--")
    ax.set_yscale("log")
    ax.set_ylim(1e-6, 10)
    ax.set_xlabel(f"pair i (left of the dashed line: wavelength under L0 = {original_max_len})")
    ax.set_ylabel("largest gap to a trained angle (rad)")
    ax.set_title(f"d = {dim}, base {base:g}, positions up to {length}", fontsize=10)
    ax.legend(fontsize=8, loc="upper left")
    fig.tight_layout()
    return fig


@site_figure("resonance_gaps.svg")
def _site_resonance_gaps() -> Figure:
    return resonance_gaps()
