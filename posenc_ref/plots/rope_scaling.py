"""Figures of the context-extension page: per-pair wavelengths under each method.

Shown on ``rope_scaling.md``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ._common import _pyplot
from ._registry import default_of, figure_facts, site_figure

if TYPE_CHECKING:  # pragma: no cover
    from matplotlib.figure import Figure

__all__ = [
    "context_extension",
]


def context_extension(
    dim: int = 128,
    base: float = 500000.0,
    factor: float = 8.0,
    original_max_len: int = 8192,
) -> Figure:
    r"""Per-pair wavelength under each context-extension method, and the stretch it applies.

    Top: wavelength :math:`2\pi/\omega'_i` per pair for the original frequencies, linear
    (Position Interpolation), NTK-aware, YaRN and Llama 3 scaling, all with the same
    ``factor``; horizontal lines mark the original context and the extended one. Bottom: the
    stretch :math:`\omega_i/\omega'_i` (1: pair kept, ``factor``: pair interpolated).

    Parameters
    ----------
    dim, base
        Rotary width and base (defaults: Llama 3.1 8B).
    factor
        Extension factor :math:`s`.
    original_max_len
        Pre-training context :math:`L_0`.

    Returns
    -------
    matplotlib.figure.Figure
    """
    import numpy as np

    from .. import rope_scaling
    from ..absolute import inv_freq

    plt = _pyplot()
    omega = inv_freq(dim, base).numpy()
    methods = {
        "original": omega,
        "linear / PI": rope_scaling.linear(dim, base, factor=factor).inv_freq.numpy(),
        "NTK-aware": rope_scaling.ntk_aware(dim, base, factor=factor).inv_freq.numpy(),
        "YaRN": rope_scaling.yarn(
            dim, base, factor=factor, original_max_len=original_max_len
        ).inv_freq.numpy(),
        "Llama 3": rope_scaling.llama3(
            dim, base, factor=factor, original_max_len=original_max_len
        ).inv_freq.numpy(),
    }
    styles = {
        "original": dict(color="k", lw=2.2, ls="-"),
        "linear / PI": dict(color="C0", lw=1.4, ls="--"),
        "NTK-aware": dict(color="C1", lw=1.4, ls="-"),
        "YaRN": dict(color="C2", lw=1.4, ls="-."),
        "Llama 3": dict(color="C3", lw=1.4, ls=":"),
    }
    pair = np.arange(dim // 2)
    fig, (ax0, ax1) = plt.subplots(
        2, 1, figsize=(8, 7), sharex=True, gridspec_kw={"height_ratios": [3, 2]}
    )
    for name, freq in methods.items():
        ax0.semilogy(pair, 2 * np.pi / freq, label=name, **styles[name])
        ax1.plot(pair, omega / freq, label=name, **styles[name])
    ax0.axhline(original_max_len, color="0.4", lw=0.8)
    ax0.annotate(
        f"original context $L_0$ = {original_max_len}",
        (0, original_max_len),
        xytext=(0, 4),
        textcoords="offset points",
        fontsize=8,
    )
    ax0.axhline(factor * original_max_len, color="0.6", lw=0.8, ls="--")
    ax0.annotate(
        f"extended context $sL_0$ = {factor * original_max_len:g}",
        (0, factor * original_max_len),
        xytext=(0, 4),
        textcoords="offset points",
        fontsize=8,
    )
    ax0.set_ylabel(r"wavelength $2\pi/\omega'_i$ (positions)")
    ax0.legend(loc="lower right", fontsize=9)
    ax0.set_title(
        f"Context extension by s = {factor:g} (dim={dim}, base={base:g}, $L_0$={original_max_len})",
        fontsize=11,
    )
    ax1.set_ylabel(r"stretch $\omega_i/\omega'_i$")
    ax1.set_xlabel("pair index $i$ (0 = fastest)")
    for ax in (ax0, ax1):
        ax.grid(alpha=0.3)
    fig.tight_layout()
    return fig


@site_figure("context_extension.svg")
def _site_context_extension() -> Figure:
    return context_extension()


@figure_facts("context_extension.svg")
def _context_extension_facts() -> dict[str, str]:
    from ..absolute import wavelengths

    dim, base = default_of(context_extension, "dim"), default_of(context_extension, "base")
    lam = wavelengths(dim, base)
    return {"first": f"{float(lam[0]):.1f}", "last": f"{float(lam[-1]) / 1e6:.1f} million"}
