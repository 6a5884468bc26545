"""Figures of the sinusoidal-encoding pages: the table, its frequencies and its columns.

Shown on ``absolute.md``, the home page (the pipeline) and the visual tour (``tour.md``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ._common import _TABLE_CMAP, _pyplot, _table_image
from ._registry import default_of, figure_facts, sci, site_figure

if TYPE_CHECKING:  # pragma: no cover
    from matplotlib.figure import Figure

__all__ = [
    "heatmap",
    "heatmap_128x8",
    "heatmap_10x4_base100",
    "heatmap_1000x512",
    "pipeline_diagram",
    "pipeline",
    "frequency_curve",
    "inv_freq_512",
    "waves",
    "waves_default",
]


def heatmap(
    num_positions: int = 128,
    dim: int = 8,
    base: float = 10000.0,
    *,
    annotate: bool | None = None,
    ax=None,
) -> Figure:
    """Heatmap of the sinusoidal table: positions down, columns across.

    Parameters
    ----------
    num_positions, dim, base
        Passed to :func:`posenc_ref.sinusoidal`; the table has shape ``(num_positions, dim)``.
    annotate
        Write each value in its cell. ``None`` does so for small tables (at most 16 x 16).
    ax
        Draw into this axes instead of a new figure (used by the notebook).

    Returns
    -------
    matplotlib.figure.Figure
    """
    import numpy as np
    import torch

    from ..absolute import sinusoidal

    plt = _pyplot()
    table = sinusoidal(num_positions, dim, base, dtype=torch.float64).numpy()  # (L, dim)
    if annotate is None:
        annotate = num_positions <= 16 and dim <= 16
    big = num_positions * dim > 20_000  # a vector image of 500k cells would weigh megabytes
    if ax is None:
        height = min(6.0, max(2.6, 0.32 * num_positions + 1.0)) if annotate else 4.5
        height = 3.8 if big else height
        fig, ax = plt.subplots(figsize=(7.0 if annotate else 8.0, height))
    else:
        fig = ax.figure
    # Big tables: 32 colour levels keep the embedded PNG small (< 300 KB) at no visible cost.
    cmap = plt.get_cmap(_TABLE_CMAP, 32) if big else _TABLE_CMAP
    image = _table_image(ax, table, cmap=cmap, rasterized=big)
    fig.colorbar(image, ax=ax, label="value", fraction=0.05, pad=0.02)
    ax.set_xlabel("column (dimension) j")
    ax.set_ylabel("position t")
    ax.set_title(f"sinusoidal table: {num_positions} positions x dim {dim}, base {base:g}")
    if annotate:
        ax.set_xticks(range(dim))
        ax.set_xticklabels([f"{j}\n{'sin' if j % 2 == 0 else 'cos'}" for j in range(dim)])
        ax.set_yticks(range(num_positions))
        for (k, j), value in np.ndenumerate(table):
            # Dark text on pale cells, white on saturated ones.
            ax.text(
                j,
                k,
                f"{value:.4f}",
                ha="center",
                va="center",
                fontsize=9,
                color="white" if abs(value) > 0.6 else "black",
            )
    return fig


@site_figure("heatmap_128x8.svg")
def heatmap_128x8() -> Figure:
    """Draw the 128 x 8 table with base 10000."""
    return heatmap(128, 8)


@figure_facts("heatmap_128x8.svg")
def _heatmap_128x8_facts() -> dict[str, str]:
    from ..absolute import wavelengths

    return {"pair1_wavelength": f"{float(wavelengths(8, 10000.0)[1]):.0f}"}


@site_figure("heatmap_10x4_base100.svg")
def heatmap_10x4_base100() -> Figure:
    """Draw the 10 x 4 table with base 100, values written in the cells."""
    return heatmap(10, 4, 100.0)


@figure_facts("heatmap_10x4_base100.svg")
def _heatmap_10x4_facts() -> dict[str, str]:
    import torch

    from ..absolute import sinusoidal

    table = sinusoidal(10, 4, 100.0, dtype=torch.float64)
    return {
        "col2_last": f"{float(table[-1, 2]):.2f}",
        "col3_last": f"{float(table[-1, 3]):.2f}",
        "row1": ", ".join(f"{float(v):.4f}" for v in table[1]),
    }


@site_figure("heatmap_1000x512.svg")
def heatmap_1000x512() -> Figure:
    """Draw the 1000 x 512 table with base 10000 (rasterized)."""
    return heatmap(1000, 512)


def pipeline_diagram(
    tokens: tuple[str, ...] = ("The", "quick", "brown", "fox"), dim: int = 4
) -> Figure:
    """Where the encoding enters a transformer: embedding + positional code, summed.

    The positional vectors are real rows of :func:`posenc_ref.sinusoidal` for positions
    ``0 .. len(tokens) - 1``; the embedding vectors are a fixed pseudo-random stand-in for a
    learned table (seed 0), drawn with the same colour scale.

    Parameters
    ----------
    tokens
        The words, one per position.
    dim
        Width of the drawn vectors (even).

    Returns
    -------
    matplotlib.figure.Figure
    """
    import numpy as np
    import torch
    from matplotlib.patches import FancyArrowPatch, FancyBboxPatch, Rectangle

    from ..absolute import sinusoidal

    plt = _pyplot()
    cmap = plt.get_cmap(_TABLE_CMAP)
    n = len(tokens)
    pe = sinusoidal(n, dim, dtype=torch.float64).numpy()  # (n, dim)
    emb = np.tanh(np.random.default_rng(0).normal(size=(n, dim)))  # stand-in, in (-1, 1)
    total = emb + pe  # values in (-2, 2)

    fig, ax = plt.subplots(figsize=(9.0, 5.6))
    ax.set_xlim(-1.9, 2.6 * n - 0.6)
    ax.set_ylim(0.2, 8.2)
    ax.axis("off")
    cell = 0.22

    def vector(x, y, values, scale=1.0):
        # One coloured cell per coordinate, centred on (x, y).
        x0 = x - cell * len(values) / 2
        for j, v in enumerate(values):
            ax.add_patch(
                Rectangle(
                    (x0 + j * cell, y - cell / 2),
                    cell,
                    cell,
                    facecolor=cmap(0.5 + 0.5 * v / scale),
                    edgecolor="0.3",
                    lw=0.6,
                )
            )

    def box(x, y, text, width=1.0, color="#eef2f7"):
        ax.add_patch(
            FancyBboxPatch(
                (x - width / 2, y - 0.28),
                width,
                0.56,
                boxstyle="round,pad=0.04",
                facecolor=color,
                edgecolor="0.3",
            )
        )
        ax.text(x, y, text, ha="center", va="center", fontsize=11)

    def arrow(x0, y0, x1, y1):
        ax.add_patch(
            FancyArrowPatch(
                (x0, y0),
                (x1, y1),
                arrowstyle="-|>",
                mutation_scale=12,
                color="0.25",
                lw=1.0,
                shrinkA=2,
                shrinkB=2,
            )
        )

    for k, word in enumerate(tokens):
        x = 2.6 * k + 0.7
        xe, xp = x - 0.62, x + 0.62
        box(xe, 7.6, f'"{word}"', width=1.05)
        box(xp, 7.6, f"k = {k}", width=1.05, color="#f7f1e6")
        arrow(xe, 7.3, xe, 6.3)
        arrow(xp, 7.3, xp, 6.3)
        vector(xe, 6.0, emb[k])
        vector(xp, 6.0, pe[k])
        ax.text(x, 6.0, "+", ha="center", va="center", fontsize=16)
        arrow(xe, 5.75, x - 0.05, 4.75)
        arrow(xp, 5.75, x + 0.05, 4.75)
        vector(x, 4.45, total[k], scale=2.0)
        arrow(x, 4.2, x, 3.15)
    left, right = 0.7 - 1.0, 2.6 * (n - 1) + 0.7 + 1.0
    ax.add_patch(
        FancyBboxPatch(
            (left, 1.55),
            right - left,
            1.5,
            boxstyle="round,pad=0.05",
            facecolor="#e6f2ea",
            edgecolor="0.3",
        )
    )
    ax.text(
        (left + right) / 2,
        2.3,
        "transformer layers (self-attention + MLP)",
        ha="center",
        va="center",
        fontsize=12,
    )
    ax.text(
        (left + right) / 2,
        0.75,
        "attention alone cannot tell the positions apart: "
        "order reaches it only through the added codes",
        ha="center",
        va="center",
        fontsize=9.5,
        color="0.3",
    )
    for y, label in [
        (7.6, "tokens and\npositions"),
        (6.0, "embedding,\nPE(k)"),
        (4.45, "sum"),
        (2.3, "model"),
    ]:
        ax.text(-1.85, y, label, ha="left", va="center", fontsize=9.5, color="0.35")
    return fig


@site_figure("pipeline.svg")
def pipeline() -> Figure:
    """Draw the pipeline for "The quick brown fox", dim 4."""
    return pipeline_diagram()


def frequency_curve(dim: int = 512, base: float = 10000.0) -> Figure:
    r"""Plot the div terms :math:`\omega_i = \exp(-2i \ln(\text{base})/\text{dim})` by column.

    Left: linear scale (an exponential decay); right: log scale (a straight line).

    Parameters
    ----------
    dim, base
        Passed to :func:`posenc_ref.inv_freq`.

    Returns
    -------
    matplotlib.figure.Figure
    """
    import numpy as np

    from ..absolute import inv_freq

    plt = _pyplot()
    omega = inv_freq(dim, base).numpy()  # (dim/2,)
    columns = np.arange(0, dim, 2)  # pair i fills columns 2i (sin) and 2i + 1 (cos)
    fig, (lin, log) = plt.subplots(1, 2, figsize=(9.0, 3.4), constrained_layout=True)
    for ax, scale in [(lin, "linear"), (log, "log")]:
        ax.plot(columns, omega, marker="o" if dim <= 32 else None, ms=3, lw=1.6)
        ax.set_yscale(scale)
        ax.set_xlabel("column 2i (even columns; 2i+1 shares the frequency)")
        ax.grid(alpha=0.3)
    lin.set_ylabel(r"$\omega_i$  (radians per position)")
    lin.set_title("linear scale: exponential decay")
    log.set_title(f"log scale: a straight line from 1 to {omega[-1]:.2g}")
    fig.suptitle(f"div terms, dim {dim}, base {base:g}")
    return fig


@site_figure("inv_freq.svg")
def inv_freq_512() -> Figure:
    """Plot the frequencies of a dim-512 table."""
    return frequency_curve()


@figure_facts("inv_freq.svg")
def _inv_freq_facts() -> dict[str, str]:
    from ..absolute import inv_freq

    omega = inv_freq(default_of(frequency_curve, "dim"), default_of(frequency_curve, "base"))
    return {"at_200": f"{float(omega[100]):.2f}", "last": sci(float(omega[-1]))}


def waves(
    num_positions: int = 160,
    dim: int = 128,
    base: float = 10000.0,
    pairs: tuple[int, ...] = (0, 8, 16, 24),
) -> Figure:
    """Plot a few pairs of columns against position, the fastest at the bottom.

    Each panel shows the sin column ``2i`` and the cos column ``2i + 1`` of
    :func:`posenc_ref.sinusoidal` at the integer positions, which are the only points the
    table has.

    Parameters
    ----------
    num_positions, dim, base
        Table size and base.
    pairs
        Pair indices ``i`` to draw, each ``< dim // 2``.

    Returns
    -------
    matplotlib.figure.Figure
    """
    import numpy as np
    import torch

    from ..absolute import sinusoidal, wavelengths

    plt = _pyplot()
    table = sinusoidal(num_positions, dim, base, dtype=torch.float64).numpy()  # (L, dim)
    lam = wavelengths(dim, base).numpy()
    positions = np.arange(num_positions)
    order = sorted(pairs, reverse=True)  # slowest on top, fastest at the bottom
    fig, axes = plt.subplots(
        len(order), 1, figsize=(9.0, 1.35 * len(order) + 0.8), sharex=True, constrained_layout=True
    )
    axes = np.atleast_1d(axes)
    for ax, i in zip(axes, order, strict=True):
        ax.plot(positions, table[:, 2 * i], "-", marker=".", ms=3, lw=0.9, label="sin, column 2i")
        ax.plot(positions, table[:, 2 * i + 1], "--", lw=0.9, label="cos, column 2i+1")
        ax.set_ylim(-1.15, 1.15)
        ax.set_yticks([-1, 0, 1])
        ax.set_ylabel(f"i = {i}\ncolumns {2 * i}, {2 * i + 1}", fontsize=9)
        ax.text(
            1.005,
            0.5,
            f"wavelength\n{lam[i]:.1f}",
            transform=ax.transAxes,
            va="center",
            fontsize=8.5,
        )
    axes[0].legend(
        loc="lower left", bbox_to_anchor=(0.0, 1.02), fontsize=8.5, ncol=2, frameon=False
    )
    axes[-1].set_xlabel("position t")
    fig.suptitle(f"pairs of columns, dim {dim}, base {base:g} (fastest at the bottom)")
    return fig


@site_figure("waves.svg")
def waves_default() -> Figure:
    """Four pairs of a dim-128 table over 160 positions."""
    return waves()


@figure_facts("waves.svg")
def _waves_facts() -> dict[str, str]:
    from ..absolute import wavelengths

    lam = wavelengths(default_of(waves, "dim"), default_of(waves, "base"))
    return {f"pair{i}": f"{float(lam[i]):.1f}" for i in default_of(waves, "pairs")}
