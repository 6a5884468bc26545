"""Figure functions for the site and the notebooks (matplotlib is imported lazily).

Every figure on the site is drawn by a function here, at build time. A function decorated with
:func:`site_figure` is rendered by the site's figure hook to ``figures/<name>.svg``; the same
functions take parameters so that the notebooks can redraw them for another base or width.

``import posenc_ref`` does not import this module (nor matplotlib); import it explicitly.
"""

from __future__ import annotations

import io
from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # pragma: no cover
    from matplotlib.figure import Figure

__all__ = ["SITE_FIGURES", "site_figure", "render_svg"]

SITE_FIGURES: dict[str, Callable[[], Figure]] = {}
"""Site figures: output name (``"heatmap_128x8.svg"``) to a function drawing it with no arguments."""

# Deterministic SVG: fixed hash salt for ids, text drawn as paths (no font lookup in the browser).
SVG_RC = {"svg.hashsalt": "posenc-ref", "svg.fonttype": "path", "figure.dpi": 100}


def site_figure(name: str) -> Callable[[Callable[[], Figure]], Callable[[], Figure]]:
    """Register a no-argument function as the site figure ``figures/<name>``."""

    def register(make: Callable[[], Figure]) -> Callable[[], Figure]:
        if name in SITE_FIGURES:
            raise ValueError(f"site figure {name!r} is registered twice")
        SITE_FIGURES[name] = make
        return make

    return register


def render_svg(make: Callable[[], Figure]) -> bytes:
    """Draw a figure with the deterministic SVG settings and return the SVG bytes."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    with plt.rc_context(SVG_RC):
        fig = make()
        buf = io.BytesIO()
        fig.savefig(buf, format="svg", metadata={"Date": None}, bbox_inches="tight")
    plt.close(fig)
    return buf.getvalue()


def _pyplot():
    import matplotlib

    if matplotlib.get_backend().lower() not in {"agg", "svg", "pdf"} and not _in_notebook():
        matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _in_notebook() -> bool:
    import sys

    return "ipykernel" in sys.modules


# === sinusoidal and relative figures (docs: absolute, properties, tour, relative) ===


# === rope and context-extension figures (docs: rope, rope_scaling, precision) ===

# Figures for rotary embeddings (rope.md), context extension (rope_scaling.md) and precision
# (precision.md). numpy is imported inside each function, like matplotlib, so that importing
# this module stays cheap.
if TYPE_CHECKING:  # pragma: no cover
    import numpy as np


def rope_rotation(
    dim: int = 128,
    base: float = 10000.0,
    pairs: tuple[int, ...] = (0, 8, 16),
    num_positions: int = 13,
) -> Figure:
    r"""Where one pair of a rotated vector goes as the position grows, for a few pairs.

    The vector has 1 in the first coordinate of every pair and 0 in the second, so pair
    ``i`` starts at :math:`(1, 0)` and sits at angle :math:`m\,\omega_i` at position ``m``.
    The points are computed with :func:`posenc_ref.rope_cos_sin` and
    :func:`posenc_ref.apply_rope`, not drawn from the formula.

    Parameters
    ----------
    dim, base
        Rotary width and base.
    pairs
        Pair indices to draw, one panel each (0 is the fastest).
    num_positions
        Positions ``0 .. num_positions - 1``.

    Returns
    -------
    matplotlib.figure.Figure
    """
    import torch

    from .absolute import inv_freq
    from .rope import apply_rope, rope_cos_sin

    plt = _pyplot()
    omega = inv_freq(dim, base)
    positions = torch.arange(num_positions)
    cos, sin = rope_cos_sin(positions, omega, layout="interleaved", dtype=torch.float64)
    x = torch.zeros(num_positions, dim, dtype=torch.float64)
    x[:, 0::2] = 1.0  # every pair starts at (1, 0)
    rotated = apply_rope(x, cos, sin, layout="interleaved").numpy()  # (positions, dim)

    fig, axes = plt.subplots(1, len(pairs), figsize=(3.3 * len(pairs), 3.6))
    circle = torch.linspace(0, 2 * torch.pi, 200)
    for ax, i in zip(axes, pairs, strict=True):
        u, v = rotated[:, 2 * i], rotated[:, 2 * i + 1]
        ax.plot(torch.cos(circle), torch.sin(circle), color="0.85", lw=1)
        ax.scatter(u, v, c=positions, cmap="viridis", s=28, zorder=3)
        for m in range(num_positions):
            # Labels just outside the circle; slow pairs crowd, so label every other one there.
            if float(omega[i]) < 0.5 and m % 2:
                continue
            ax.annotate(str(m), (1.2 * u[m], 1.2 * v[m]), ha="center", va="center", fontsize=9)
        ax.set_title(rf"pair $i={i}$, $\omega_i={float(omega[i]):.4g}$ rad/position", fontsize=11)
        ax.set_aspect("equal")
        ax.set_xlim(-1.45, 1.45)
        ax.set_ylim(-1.45, 1.45)
        ax.set_xlabel(f"coordinate {2 * i}")
        ax.set_ylabel(f"coordinate {2 * i + 1}")
    fig.suptitle(
        f"RoPE rotates pair $i$ by $m\\,\\omega_i$ at position $m$ (dim={dim}, base={base:g}; "
        f"labels are positions)",
        fontsize=12,
    )
    fig.tight_layout()
    return fig


@site_figure("rope_rotation.svg")
def _site_rope_rotation() -> Figure:
    return rope_rotation()


def rope_decay_bound(distances: np.ndarray, dim: int = 128, base: float = 10000.0) -> np.ndarray:
    r"""RoFormer's long-term decay quantity :math:`\frac{1}{d/2}\sum_{j=1}^{d/2} |S_j|`.

    :math:`S_j = \sum_{k=0}^{j-1} e^{i r \omega_k}` are the partial sums of the unit phasors of
    the first ``j`` pairs at relative distance :math:`r` (RoFormer, section 3.4.3). The bound on
    the rotated score is :math:`\max_j |h_{j+1} - h_j| \sum_j |S_j|`; this function returns the
    mean of :math:`|S_j|`, the curve the paper plots. At :math:`r = 0` every phasor is 1, so
    :math:`S_j = j` and the value is :math:`(d/2 + 1)/2`.

    Parameters
    ----------
    distances
        Relative distances :math:`r = m - n`, shape ``(R,)``.
    dim, base
        Rotary width and base.

    Returns
    -------
    numpy.ndarray
        Shape ``(R,)``, float64.
    """
    import numpy as np

    from .absolute import inv_freq

    omega = inv_freq(dim, base).numpy()  # float64, (dim/2,)
    phasors = np.exp(1j * np.outer(np.asarray(distances, dtype=np.float64), omega))  # (R, dim/2)
    partial = np.cumsum(phasors, axis=1)  # S_1 .. S_{dim/2}
    return np.abs(partial).mean(axis=1)


def rope_decay(dim: int = 128, base: float = 10000.0, max_distance: int = 2**16) -> Figure:
    """Draw the long-term decay of RoPE's relative upper bound, linear and logarithmic views.

    Parameters
    ----------
    dim, base
        Rotary width and base (RoFormer: 128 and 10000).
    max_distance
        Right end of the logarithmic panel.

    Returns
    -------
    matplotlib.figure.Figure
    """
    import numpy as np

    plt = _pyplot()
    near = np.arange(0, 257)
    # Every integer distance up to 4096, then a geometric grid: the curve is smooth at large r
    # only on average, and a dense grid keeps its oscillation visible without a huge SVG.
    far = np.unique(
        np.concatenate([np.arange(1, 4097), np.geomspace(4096, max_distance, 1500).round()])
    )
    fig, (ax0, ax1) = plt.subplots(1, 2, figsize=(10, 3.6))
    ax0.plot(near, rope_decay_bound(near, dim, base), color="C0", lw=1)
    ax0.set_xlabel("relative distance $m - n$")
    ax0.set_ylabel(r"mean of $|S_j|$ over $j = 1 \ldots d/2$")
    ax0.set_title("distance 0 to 256 (RoFormer's view)", fontsize=10)
    ax1.semilogx(far, rope_decay_bound(far, dim, base), color="C0", lw=0.6)
    ax1.set_xlabel("relative distance $m - n$ (log scale)")
    ax1.set_title(f"distance 1 to {max_distance}", fontsize=10)
    for ax in (ax0, ax1):
        ax.grid(alpha=0.3)
        ax.set_ylim(bottom=0)
    fig.suptitle(
        f"Long-term decay of the RoPE relative upper bound (dim={dim}, base={base:g})", fontsize=11
    )
    fig.tight_layout()
    return fig


@site_figure("rope_decay.svg")
def _site_rope_decay() -> Figure:
    return rope_decay()


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
        Pre-training context :math:`L`.

    Returns
    -------
    matplotlib.figure.Figure
    """
    import numpy as np

    from . import rope_scaling
    from .absolute import inv_freq

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
        f"original context L = {original_max_len}",
        (0, original_max_len),
        xytext=(0, 4),
        textcoords="offset points",
        fontsize=8,
    )
    ax0.axhline(factor * original_max_len, color="0.6", lw=0.8, ls="--")
    ax0.annotate(
        f"extended context sL = {factor * original_max_len:g}",
        (0, factor * original_max_len),
        xytext=(0, 4),
        textcoords="offset points",
        fontsize=8,
    )
    ax0.set_ylabel(r"wavelength $2\pi/\omega'_i$ (positions)")
    ax0.legend(loc="lower right", fontsize=9)
    ax0.set_title(
        f"Context extension by s = {factor:g} (dim={dim}, base={base:g}, L={original_max_len})",
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

    from .absolute import inv_freq
    from .rope import rope_cos_sin

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
    # In the half layout the first dim/2 columns hold pairs 0 .. dim/2 - 1, once each.
    cos_ref, sin_ref = rope_cos_sin(pos, omega, layout="half", dtype=torch.float32)
    half = dim // 2
    err_ref = torch.maximum(
        (cos_ref[:, :half].double() - cos_true).abs(),
        (sin_ref[:, :half].double() - sin_true).abs(),
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
    ax.loglog(
        positions, err_ref, "s-", ms=3, lw=1, color="C0", label="posenc_ref (float64 angles)"
    )
    guide = r"position $\times 2^{-24}$"
    ax.loglog(positions, positions * 2.0**-24, color="0.5", lw=0.8, ls="--", label=guide)
    ax.set_xlabel("position")
    ax.set_ylabel("max abs error of cos/sin (all columns)")
    ax.set_title(
        f"float32 cos/sin tables against float64 (dim={dim}, base={base:g})", fontsize=11
    )
    ax.grid(alpha=0.3, which="both")
    ax.legend(fontsize=9)
    fig.tight_layout()
    return fig


@site_figure("angle_precision.svg")
def _site_angle_precision() -> Figure:
    return angle_precision()


# === benchmark figures (docs: benchmarks) ===
