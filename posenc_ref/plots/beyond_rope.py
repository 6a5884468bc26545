"""Figures of the Beyond RoPE page: NoPE's signal, p-RoPE, xPos, FoPE and RoPE-Mixed.

Shown on ``beyond_rope.md``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ._common import _pyplot
from ._registry import site_figure

if TYPE_CHECKING:  # pragma: no cover
    from matplotlib.figure import Figure

__all__ = [
    "nope_signal",
    "nope_signal_default",
    "p_rope_frequencies",
    "p_rope_default",
    "xpos_decay",
    "xpos_decay_default",
    "fope_series",
    "fope_default",
    "rope_mixed_scores",
    "rope_mixed_default",
]


def nope_signal(seq_len: int = 32) -> Figure:
    """What a uniform attention head reads from a start marker, with and without the mask.

    Returns
    -------
    matplotlib.figure.Figure
    """
    import torch

    from ..beyond_rope import nope_position_signal

    plt = _pyplot()
    fig, (curve, weights) = plt.subplots(1, 2, figsize=(9.0, 3.4), constrained_layout=True)
    m = torch.arange(seq_len).numpy()
    curve.plot(m, nope_position_signal(seq_len).numpy(), "o-", ms=3, label="causal: 1/(m+1)")
    curve.plot(m, nope_position_signal(seq_len, causal=False).numpy(), "s-", ms=3,
               label="bidirectional: 1/L")  # fmt: skip
    curve.set_xlabel("position m")
    curve.set_ylabel("output of the head")
    curve.set_title("Reading the start marker")
    curve.legend(fontsize=8)
    curve.grid(alpha=0.3)
    shown = 8
    mask = torch.ones(shown, shown).tril()
    image = weights.imshow((mask / mask.sum(-1, keepdim=True)).numpy(), cmap="Blues", vmin=0)
    weights.set_title(f"Causal uniform weights, {shown} positions")
    weights.set_xlabel("key position p")
    weights.set_ylabel("query position m")
    fig.colorbar(image, ax=weights, fraction=0.046, label="weight 1/(m+1)")
    return fig


@site_figure("nope_signal.svg")
def nope_signal_default() -> Figure:
    """32 positions."""
    return nope_signal()


def p_rope_frequencies(
    head_dim: int = 64, base: float = 1_000_000.0, fraction: float = 0.25
) -> Figure:
    """RoPE's frequencies and p-RoPE's (the slowest pairs set to 0), on a log scale.

    Returns
    -------
    matplotlib.figure.Figure
    """
    import numpy as np

    from ..absolute import inv_freq
    from ..beyond_rope import p_rope

    plt = _pyplot()
    omega = inv_freq(head_dim, base).numpy()
    truncated = p_rope(inv_freq(head_dim, base), fraction).numpy()
    pairs = np.arange(omega.size)
    kept = truncated > 0
    fig, ax = plt.subplots(figsize=(7.5, 3.4), constrained_layout=True)
    ax.semilogy(pairs, omega, "o", mfc="none", color="0.5", label="RoPE: every pair rotates")
    ax.semilogy(pairs[kept], truncated[kept], "o", color="C0",
                label=f"p-RoPE, p = {fraction:g}: kept")  # fmt: skip
    ax.axvspan(kept.sum() - 0.5, omega.size - 0.5, color="C1", alpha=0.12,
               label="frequency 0: not rotated")  # fmt: skip
    ax.set_xlabel("pair i")
    ax.set_ylabel(r"frequency $\omega_i$")
    ax.set_title(f"head_dim {head_dim}, base {base:g}")
    ax.legend(fontsize=8, loc="lower left")
    ax.grid(alpha=0.3, which="both")
    return fig


@site_figure("p_rope_frequencies.svg")
def p_rope_default() -> Figure:
    """Gemma 4's global layers: p = 0.25, base 1e6 (head width 64 to keep the plot readable)."""
    return p_rope_frequencies()


def xpos_decay(dim: int = 64, scale_base: float = 512.0, max_distance: int = 4096) -> Figure:
    """XPos's per-pair decay with distance, and the score of one vector with itself.

    Returns
    -------
    matplotlib.figure.Figure
    """
    import torch

    from ..absolute import inv_freq
    from ..beyond_rope import xpos_cos_sin, xpos_scale
    from ..rope import apply_rope, rope_cos_sin

    plt = _pyplot()
    distance = torch.arange(max_distance + 1)
    decay = xpos_scale(distance, dim, scale_base=scale_base)  # zeta^(d/B), (D, dim/2)
    fig, (pairs, score) = plt.subplots(1, 2, figsize=(9.0, 3.4), constrained_layout=True)
    for i in (0, dim // 8, dim // 4, dim // 2 - 1):
        pairs.plot(distance.numpy(), decay[:, i].numpy(), label=f"pair {i}")
    pairs.set_xlabel("distance m - p")
    pairs.set_ylabel(r"$\zeta_i^{(m-p)/B}$")
    pairs.set_title(f"Decay per pair (d = {dim}, B = {scale_base:g})")
    pairs.legend(fontsize=8)
    # One vector as query at position m and key at 0: all ones, so the sum of the pairs shows.
    q = torch.ones(1, dim, dtype=torch.float64)
    omega = inv_freq(dim)
    zero = torch.zeros(1, dtype=torch.long)
    cos0, sin0 = rope_cos_sin(zero, omega, dtype=torch.float64)
    key = apply_rope(q, cos0, sin0)
    cq, sq = rope_cos_sin(distance, omega, dtype=torch.float64)
    rope = (apply_rope(q.expand(distance.numel(), -1), cq, sq) * key).sum(-1)
    xq, xs = xpos_cos_sin(distance, omega, scale_base=scale_base, dtype=torch.float64)
    xpos = (apply_rope(q.expand(distance.numel(), -1), xq, xs) * key).sum(-1)
    score.plot(distance.numpy(), rope.numpy(), lw=0.8, label="RoPE")
    score.plot(distance.numpy(), xpos.numpy(), lw=0.8, label="xPos")
    score.set_xlabel("distance m - p")
    score.set_ylabel(r"score $\langle f_q(q, m), f_k(q, 0) \rangle$")
    score.set_title("A vector against itself")
    score.legend(fontsize=8)
    for ax in (pairs, score):
        ax.grid(alpha=0.3)
    return fig


@site_figure("xpos_decay.svg")
def xpos_decay_default() -> Figure:
    """D = 64, B = 512 (torchscale's default), distances up to 4096."""
    return xpos_decay()


def fope_series(
    dim: int = 16, train_len: int = 64, base: float = 10000.0, positions: int = 256, seed: int = 0
) -> Figure:
    """Which frequencies FoPE keeps, and one pair's cos: a single wave or a Fourier series.

    Returns
    -------
    matplotlib.figure.Figure
    """
    import torch

    from ..absolute import wavelengths
    from ..beyond_rope import fope_cos_sin, fope_inv_freq

    plt = _pyplot()
    lam = wavelengths(dim, base).numpy()
    kept = fope_inv_freq(dim, base, original_max_len=train_len)
    fig, (bars, wave) = plt.subplots(1, 2, figsize=(9.0, 3.4), constrained_layout=True)
    colours = ["C0" if i < kept.numel() else "C1" for i in range(lam.size)]
    bars.bar(range(lam.size), lam, color=colours)
    bars.axhline(train_len, color="k", ls="--", lw=1, label=f"training length {train_len}")
    bars.set_yscale("log")
    bars.set_xlabel("pair i (blue: kept, orange: clipped to 0)")
    bars.set_ylabel(r"wavelength $2\pi/\omega_i$")
    bars.set_title("FoPE keeps pairs that turn within training")
    bars.legend(fontsize=8)
    g = torch.Generator().manual_seed(seed)
    coef = torch.eye(kept.numel(), dtype=torch.float64)
    coef = coef + 0.3 * torch.randn(kept.numel(), kept.numel(), generator=g, dtype=torch.float64)
    eye = torch.eye(kept.numel(), dtype=torch.float64)
    m = torch.arange(positions)
    pair = kept.numel() - 1  # the slowest kept pair: the series shows most clearly there
    rope_cos, _ = fope_cos_sin(m, kept, eye, eye, rotary_dim=dim, dtype=torch.float64)
    fope_cos, _ = fope_cos_sin(m, kept, coef, coef, rotary_dim=dim, dtype=torch.float64)
    wave.plot(m.numpy(), rope_cos[:, pair].numpy(), label=f"RoPE: cos(m w_{pair})")
    wave.plot(m.numpy(), fope_cos[:, pair].numpy(), label="FoPE: sum over kept frequencies")
    wave.axvline(train_len, color="k", ls="--", lw=1)
    wave.set_xlabel("position m")
    wave.set_ylabel(f"cos table, pair {pair}")
    wave.set_title("One pair's cos")
    wave.legend(fontsize=8, loc="lower left")
    for ax in (bars, wave):
        ax.grid(alpha=0.3)
    return fig


@site_figure("fope_series.svg")
def fope_default() -> Figure:
    """D = 16, L0 = 64, coefficients identity plus 0.3 standard normal noise (seed 0)."""
    return fope_series()


def rope_mixed_scores(dim: int = 16, base: float = 10.0, reach: int = 12, seed: int = 2) -> Figure:
    """The score of one vector with itself over 2-D offsets: axial RoPE against RoPE-Mixed.

    Returns
    -------
    matplotlib.figure.Figure
    """
    import torch

    from ..axial import axial_inv_freq, axial_pair_axes
    from ..beyond_rope import axial_as_mixed, rope_mixed_cos_sin, rope_mixed_frequencies
    from ..rope import apply_rope

    plt = _pyplot()
    side = torch.arange(-reach, reach + 1)
    dy, dx = torch.meshgrid(side, side, indexing="ij")
    offsets = torch.stack([dy.reshape(-1), dx.reshape(-1)], dim=-1)  # (N, 2)
    q = torch.ones(1, dim, dtype=torch.float64)
    axial = axial_as_mixed(axial_inv_freq(dim, base, "sam2"), axial_pair_axes(dim, "sam2"))
    g = torch.Generator().manual_seed(seed)
    mixed = rope_mixed_frequencies(dim, 1, base=base, generator=g)[0]
    fig, axes = plt.subplots(1, 2, figsize=(9.0, 4.0), constrained_layout=True)
    for ax, freqs, title in [(axes[0], axial, "axial"), (axes[1], mixed, "RoPE-Mixed")]:
        cos, sin = rope_mixed_cos_sin(offsets, freqs, dtype=torch.float64)
        key = apply_rope(q.expand(offsets.shape[0], -1), cos, sin)  # key at (dy, dx), query at 0
        scores = (q * key).sum(-1).reshape(side.numel(), side.numel())
        edge = reach + 0.5
        image = ax.imshow(scores.numpy(), cmap="RdBu_r", vmin=-dim, vmax=dim, origin="lower",
                          extent=(-edge, edge, -edge, edge))  # fmt: skip
        ax.set_title(f"{title}: score against offset")
        ax.set_xlabel("column offset dx")
        ax.set_ylabel("row offset dy")
    fig.colorbar(image, ax=axes, fraction=0.03, label="score")
    return fig


@site_figure("rope_mixed_scores.svg")
def rope_mixed_default() -> Figure:
    """D = 16, base 10, offsets up to 12 patches, one head's initial frequencies (seed 2)."""
    return rope_mixed_scores()
