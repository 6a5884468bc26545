"""Figures of the RoPE page: how a pair rotates with position, and the long-term decay.

Shown on ``rope.md``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ._common import _pyplot
from ._registry import default_of, figure_facts, site_figure

if TYPE_CHECKING:  # pragma: no cover
    import numpy as np
    import torch
    from matplotlib.figure import Figure

__all__ = [
    "rope_rotation",
    "rope_decay_bound",
    "rope_decay",
]


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

    from ..absolute import inv_freq
    from ..rope import apply_rope, rope_cos_sin

    plt = _pyplot()
    omega = inv_freq(dim, base)
    positions = torch.arange(num_positions)
    cos, sin = rope_cos_sin(positions, omega, dtype=torch.float64)  # (positions, dim / 2)
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


@figure_facts("rope_rotation.svg")
def _rope_rotation_facts() -> dict[str, str]:
    import math

    from ..absolute import inv_freq

    omega = inv_freq(default_of(rope_rotation, "dim"), default_of(rope_rotation, "base"))
    last = default_of(rope_rotation, "num_positions") - 1  # the last position drawn
    facts = {}
    for i in default_of(rope_rotation, "pairs"):
        facts[f"omega{i}"] = f"{float(omega[i]):.3g}"
        facts[f"turns{i}"] = f"{last * float(omega[i]) / (2 * math.pi):.2g}"
    return facts


def rope_decay_bound(
    distances: np.ndarray,
    dim: int = 128,
    base: float = 10000.0,
    *,
    inv_freq: torch.Tensor | None = None,
) -> np.ndarray:
    r"""RoFormer's long-term decay quantity :math:`\frac{2}{d}\sum_{\ell=1}^{d/2} |S_\ell|`.

    :math:`S_\ell = \sum_{i=0}^{\ell-1} e^{\mathrm{j}(m - p)\omega_i}` are the partial sums of the
    unit phasors of the first :math:`\ell` pairs for a query at :math:`m` and a key at :math:`p`
    (RoFormer, section 3.4.3; :math:`\mathrm{j}` is the imaginary unit); they depend on the
    distance :math:`|p - m|` only. The bound on
    the rotated score is :math:`\max_\ell |g_\ell - g_{\ell-1}| \sum_\ell |S_\ell|`, with
    :math:`g_i = q^{(i)}\overline{k^{(i)}}`; this function returns the mean of :math:`|S_\ell|`,
    the curve the paper plots. At distance 0 every phasor is 1, so :math:`S_\ell = \ell` and
    the value is :math:`(d/2 + 1)/2`.

    Parameters
    ----------
    distances
        Distances :math:`|p - m|`, shape ``(R,)``.
    dim, base
        Rotary width and base.
    inv_freq
        Frequencies to use instead of ``inv_freq(dim, base)``, shape ``(N,)``: for example the
        ``inv_freq`` of a :mod:`posenc_ref.rope_scaling` method (the site's explorer draws the
        bound under scaling). When given, ``dim`` and ``base`` are not used and :math:`N` is its
        length.

    Returns
    -------
    numpy.ndarray
        Shape ``(R,)``, float64.
    """
    import numpy as np
    import torch

    from .._tensor_checks import check_inv_freq
    from ..absolute import inv_freq as _inv_freq

    if inv_freq is None:
        omega = _inv_freq(dim, base).numpy()  # float64, (dim/2,)
    else:
        omega = check_inv_freq("inv_freq", inv_freq).detach().to("cpu", torch.float64).numpy()
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
    ax0.set_xlabel("distance $|p - m|$")
    ax0.set_ylabel(r"mean of $|S_\ell|$ over $\ell = 1 \ldots d/2$")
    ax0.set_title("distance 0 to 256 (RoFormer's view)", fontsize=10)
    ax1.semilogx(far, rope_decay_bound(far, dim, base), color="C0", lw=0.6)
    ax1.set_xlabel("distance $|p - m|$ (log scale)")
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


@figure_facts("rope_decay.svg")
def _rope_decay_facts() -> dict[str, str]:
    import numpy as np

    dim, base = default_of(rope_decay, "dim"), default_of(rope_decay, "base")
    near = rope_decay_bound(np.array([0, 50, 256]), dim, base)
    # The distances the right panel draws from 4096 on (its geometric grid), not every integer.
    grid = np.geomspace(4096, default_of(rope_decay, "max_distance"), 1500).round()
    far = rope_decay_bound(np.unique(grid), dim, base)
    return {
        "at_0": f"{near[0]:.1f}",
        "at_50": f"{near[1]:.1f}",
        "at_256": f"{near[2]:.1f}",
        "far_low": f"{far.min():.1f}",
        "far_high": f"{far.max():.1f}",
    }
