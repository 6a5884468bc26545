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
"""Site figures: output name (``"heatmap_128x8.svg"``) to a no-argument drawing function."""

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


# Shared look: a diverging map centred on 0, because every table value lies in [-1, 1].
_TABLE_CMAP = "RdBu_r"


def _table_image(ax, table, *, vmin=-1.0, vmax=1.0, cmap=_TABLE_CMAP, rasterized=False):
    """Show a ``(rows, cols)`` array as an image, row 0 at the top, like the printed table."""
    return ax.imshow(
        table,
        aspect="auto",
        interpolation="nearest",
        cmap=cmap,
        vmin=vmin,
        vmax=vmax,
        rasterized=rasterized,
    )


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

    from .absolute import sinusoidal

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
    ax.set_ylabel("position k")
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


@site_figure("heatmap_10x4_base100.svg")
def heatmap_10x4_base100() -> Figure:
    """Draw the 10 x 4 table with base 100, values written in the cells."""
    return heatmap(10, 4, 100.0)


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

    from .absolute import sinusoidal

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

    from .absolute import inv_freq

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

    from .absolute import sinusoidal, wavelengths

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
    axes[-1].set_xlabel("position k")
    fig.suptitle(f"pairs of columns, dim {dim}, base {base:g} (fastest at the bottom)")
    return fig


@site_figure("waves.svg")
def waves_default() -> Figure:
    """Four pairs of a dim-128 table over 160 positions."""
    return waves()


def binary_vs_sinusoidal(
    num_positions: int = 1000, width: int = 64, base: float = 10000.0
) -> Figure:
    """Show the binary counter next to the sinusoidal table, fastest column on the left.

    Parameters
    ----------
    num_positions
        Rows of both images.
    width
        Bits of the counter and columns of the table (even).
    base
        Base of the table.

    Returns
    -------
    matplotlib.figure.Figure
    """
    import torch

    from .absolute import binary_encoding, sinusoidal

    plt = _pyplot()
    bits = binary_encoding(num_positions, width)  # (L, width), 0/1
    table = sinusoidal(num_positions, width, base, dtype=torch.float64).numpy()  # (L, width)
    fig, (left, right) = plt.subplots(1, 2, figsize=(9.0, 4.6), constrained_layout=True)
    big = num_positions * width > 20_000
    _table_image(left, bits, vmin=0, vmax=1, cmap="Greys", rasterized=big)
    left.set_title(f"binary counter: bit j of k ({width} bits)")
    left.set_xlabel("bit j (0 = least significant)")
    image = _table_image(right, table, rasterized=big)
    right.set_title(f"sinusoidal table, dim {width}")
    right.set_xlabel("column j")
    for ax in (left, right):
        ax.set_ylabel("position k")
    fig.colorbar(image, ax=right, fraction=0.05, pad=0.02)
    return fig


@site_figure("binary_vs_sinusoidal.svg")
def binary_vs_sinusoidal_default() -> Figure:
    """1000 positions, 64 bits next to 64 columns."""
    return binary_vs_sinusoidal()


def distance_matrix(
    num_positions: int = 64, dim: int = 64, base: float = 10000.0, *, ax=None
) -> Figure:
    r"""Show the matrix :math:`\lVert PE(a) - PE(b) \rVert` for ``a, b < num_positions``.

    Every diagonal of the matrix is constant (it depends on :math:`b - a` only).

    Returns
    -------
    matplotlib.figure.Figure
    """
    import torch

    from .absolute import sinusoidal

    plt = _pyplot()
    table = sinusoidal(num_positions, dim, base, dtype=torch.float64)  # (L, dim)
    dist = torch.cdist(table, table).numpy()  # (L, L)
    if ax is None:
        fig, ax = plt.subplots(figsize=(5.8, 4.8), constrained_layout=True)
    else:
        fig = ax.figure
    image = ax.imshow(dist, cmap="viridis", interpolation="nearest")
    fig.colorbar(image, ax=ax, label="distance", fraction=0.05, pad=0.02)
    ax.set_xlabel("position b")
    ax.set_ylabel("position a")
    ax.set_title(f"distance between codes, dim {dim}, base {base:g}")
    return fig


@site_figure("distance_matrix.svg")
def distance_matrix_default() -> Figure:
    """Distances among the first 64 positions, dim 64."""
    return distance_matrix()


def dot_product_vs_offset(
    max_offset: int = 200, dims: tuple[int, ...] = (16, 64, 256), base: float = 10000.0
) -> Figure:
    r""":math:`PE(t) \cdot PE(t+k)` as a function of the offset :math:`k`, for several widths.

    Values come from :func:`posenc_ref.offset_dot_product`, divided by ``dim / 2`` (the value
    at :math:`k = 0`) so that widths can share an axis.

    Returns
    -------
    matplotlib.figure.Figure
    """
    import numpy as np

    from .absolute import offset_dot_product

    plt = _pyplot()
    offsets = np.arange(-max_offset, max_offset + 1)
    fig, ax = plt.subplots(figsize=(9.0, 3.6), constrained_layout=True)
    for dim in dims:
        dots = [offset_dot_product(dim, base, int(k)) for k in offsets]
        ax.plot(offsets, np.array(dots) / (dim / 2), lw=1.2, label=f"dim {dim}")
    ax.axhline(0, color="0.6", lw=0.8)
    ax.set_xlabel("offset k")
    ax.set_ylabel(r"$PE(t)\cdot PE(t+k)\;/\;(\mathrm{dim}/2)$")
    ax.set_title(f"dot product against offset (the same for every t), base {base:g}")
    ax.legend()
    ax.grid(alpha=0.3)
    return fig


@site_figure("dot_product_offset.svg")
def dot_product_offset_default() -> Figure:
    """Offsets -200..200 for dims 16, 64, 256."""
    return dot_product_vs_offset()


def neighbour_distance(
    num_positions: int = 1000,
    dim: int = 500,
    base: float = 10000.0,
    offsets: tuple[int, ...] = (1, 2, 5, 20),
) -> Figure:
    r"""Measured :math:`\lVert PE(t+k) - PE(t) \rVert` for every ``t``, against the closed form.

    Each solid line comes from the table; each dashed line is
    :func:`posenc_ref.adjacent_distance`. They coincide, for every ``t``.

    Returns
    -------
    matplotlib.figure.Figure
    """
    import numpy as np
    import torch

    from .absolute import adjacent_distance, sinusoidal

    plt = _pyplot()
    table = sinusoidal(num_positions, dim, base, dtype=torch.float64)  # (L, dim)
    fig, ax = plt.subplots(figsize=(9.0, 3.4), constrained_layout=True)
    for k in offsets:
        measured = (table[k:] - table[:-k]).norm(dim=1).numpy()  # (L - k,)
        (line,) = ax.plot(
            np.arange(num_positions - k), measured, lw=2.2, alpha=0.7, label=f"k = {k}"
        )
        ax.axhline(adjacent_distance(dim, base, k), color=line.get_color(), ls="--", lw=1.0)
    ax.set_xlabel("position t")
    ax.set_ylabel(r"$\|PE(t+k) - PE(t)\|$")
    ax.set_title(
        f"distance at a fixed offset, dim {dim}: flat in t (solid: measured, dashed: closed form)"
    )
    ax.set_ylim(bottom=0)
    ax.legend(ncol=len(offsets), loc="lower right")
    return fig


@site_figure("neighbour_distance.svg")
def neighbour_distance_default() -> Figure:
    """Plot dim 500, 1000 positions, offsets 1, 2, 5, 20."""
    return neighbour_distance()


def min_distance(
    max_len: int = 100_000, dims: tuple[int, ...] = (2, 4, 8, 16, 64), base: float = 10000.0
) -> Figure:
    r"""Plot the smallest distance between any two of the first ``L`` codes, as ``L`` grows.

    Because the distance depends only on the offset, the closest pair among positions
    ``0 .. L-1`` is at distance :math:`\min_{1 \le k < L} \lVert PE(k) - PE(0) \rVert`: a
    running minimum over one column of distances, not :math:`L^2` pairs.

    Returns
    -------
    matplotlib.figure.Figure
    """
    import numpy as np
    import torch

    from .absolute import sinusoidal

    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(9.0, 3.8), constrained_layout=True)
    lengths = np.arange(2, max_len + 1)
    for dim in dims:
        table = sinusoidal(max_len, dim, base, dtype=torch.float64)  # (max_len, dim)
        from_zero = (table[1:] - table[0]).norm(dim=1).numpy()  # offsets 1 .. max_len-1
        closest = np.minimum.accumulate(from_zero)  # closest[L - 2]: min over offsets < L
        # The curve is a staircase: keep only the lengths where it steps down (and the last).
        keep = np.r_[True, closest[1:] < closest[:-1]]
        keep[-1] = True
        ax.step(lengths[keep], closest[keep], where="post", label=f"dim {dim}")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("number of positions L")
    ax.set_ylabel("closest pair distance")
    ax.set_title(f"uniqueness in numbers: the closest pair of codes, base {base:g}")
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0))
    ax.grid(alpha=0.3, which="both")
    return fig


@site_figure("min_distance.svg")
def min_distance_default() -> Figure:
    """Up to 100000 positions, dims 2 to 64."""
    return min_distance()


def projection(
    num_positions: int = 128,
    dim: int = 8,
    base: float = 10000.0,
    *,
    method: str = "tsne",
    perplexity: float = 5.0,
    random_state: int = 0,
    highlight: tuple[int, ...] = (5, 68),
    ax=None,
) -> Figure:
    """2-D projection of the codes of positions ``0 .. num_positions - 1``, labelled.

    Parameters
    ----------
    num_positions, dim, base
        The table to project.
    method
        ``"tsne"`` (scikit-learn t-SNE, PCA initialisation, fixed ``random_state``) or ``"pca"``.
    perplexity
        t-SNE perplexity (small: the structure of interest is a few close neighbours).
    random_state
        Seed, so that the figure is the same at every build.
    highlight
        Positions drawn in red.
    ax
        Draw into this axes instead of a new figure.

    Returns
    -------
    matplotlib.figure.Figure
    """
    import numpy as np
    import torch

    from .absolute import sinusoidal

    plt = _pyplot()
    table = sinusoidal(num_positions, dim, base, dtype=torch.float64).numpy()  # (L, dim)
    if method == "tsne":
        from sklearn.manifold import TSNE

        # exact: for ~100 points it is faster than Barnes-Hut and has no approximation.
        points = TSNE(
            2, perplexity=perplexity, init="pca", method="exact", random_state=random_state
        ).fit_transform(table)  # (L, 2)
    elif method == "pca":
        from sklearn.decomposition import PCA

        points = PCA(2).fit_transform(table)  # (L, 2)
    else:
        raise ValueError(f"method must be 'tsne' or 'pca', got {method!r}")
    if ax is None:
        fig, ax = plt.subplots(figsize=(8.0, 6.4), constrained_layout=True)
    else:
        fig = ax.figure
    scatter = ax.scatter(
        points[:, 0], points[:, 1], c=np.arange(num_positions), cmap="viridis", s=18
    )
    for k, (x, y) in enumerate(points):
        red = k in highlight
        ax.annotate(
            str(k),
            (x, y),
            xytext=(2, 2),
            textcoords="offset points",
            fontsize=9 if red else 6.5,
            color="red" if red else "0.25",
            fontweight="bold" if red else "normal",
        )
    fig.colorbar(scatter, ax=ax, label="position k", fraction=0.05, pad=0.02)
    ax.set_xticks([])
    ax.set_yticks([])
    name = "t-SNE" if method == "tsne" else "PCA"
    ax.set_title(f"{name} of {num_positions} codes, dim {dim}, base {base:g}")
    return fig


@site_figure("projection_d8.svg")
def projection_d8() -> Figure:
    """t-SNE of 128 codes of width 8."""
    return projection()


def wavelength_curve(dim: int = 512, base: float = 10000.0) -> Figure:
    r"""Per-pair wavelengths :math:`2\pi/\omega_i`: a geometric progression from :math:`2\pi`.

    Returns
    -------
    matplotlib.figure.Figure
    """
    import numpy as np

    from .absolute import wavelengths

    plt = _pyplot()
    lam = wavelengths(dim, base).numpy()  # (dim/2,)
    fig, ax = plt.subplots(figsize=(9.0, 3.6), constrained_layout=True)
    ax.plot(np.arange(dim // 2), lam, lw=1.8, marker="o" if dim <= 32 else None, ms=3)
    ax.axhline(2 * np.pi, color="0.5", ls="--", lw=1.0)
    ax.axhline(2 * np.pi * base, color="0.5", ls=":", lw=1.0)
    ax.text(dim // 2 - 1, 2 * np.pi * 1.3, r"$2\pi$", ha="right", va="bottom")
    ax.text(0, 2 * np.pi * base / 1.3, rf"$2\pi \cdot {base:g}$", ha="left", va="top")
    ax.set_yscale("log")
    ax.set_xlabel("pair index i")
    ax.set_ylabel("wavelength (positions)")
    ax.set_title(f"wavelengths, dim {dim}, base {base:g}: ratio {base ** (2 / dim):.5f} per pair")
    ax.grid(alpha=0.3, which="both")
    return fig


@site_figure("wavelengths.svg")
def wavelengths_512() -> Figure:
    """Wavelengths of a dim-512 table."""
    return wavelength_curve()


def t5_buckets(max_offset: int = 200, num_buckets: int = 32, max_distance: int = 128) -> Figure:
    """T5's bucket index against the relative position, and Shaw's clipped index.

    Returns
    -------
    matplotlib.figure.Figure
    """
    import torch

    from .relative import shaw_relative_index, t5_relative_bucket

    plt = _pyplot()
    rel = torch.arange(-max_offset, max_offset + 1)  # key - query
    fig, (t5, shaw) = plt.subplots(1, 2, figsize=(9.0, 3.6), constrained_layout=True)
    for bidirectional, label in [(True, "bidirectional (encoder)"), (False, "causal (decoder)")]:
        buckets = t5_relative_bucket(
            rel, bidirectional=bidirectional, num_buckets=num_buckets, max_distance=max_distance
        )
        t5.step(rel.numpy(), buckets.numpy(), where="mid", label=label)
    for x in (-max_distance, max_distance):
        t5.axvline(x, color="0.6", ls=":", lw=1.0)
    t5.set_xlabel("relative position (key - query)")
    t5.set_ylabel("bucket")
    t5.set_title(f"T5: {num_buckets} buckets, max_distance {max_distance}")
    t5.legend(fontsize=8)
    clip = 4
    shaw.step(rel.numpy(), shaw_relative_index(rel, clip).numpy(), where="mid")
    shaw.set_xlim(-3 * clip, 3 * clip)
    shaw.set_xlabel("relative position (key - query)")
    shaw.set_ylabel("row of the learned table")
    shaw.set_title(f"Shaw et al.: clipped at K = {clip}")
    for ax in (t5, shaw):
        ax.grid(alpha=0.3)
    return fig


@site_figure("t5_buckets.svg")
def t5_buckets_default() -> Figure:
    """T5 defaults: 32 buckets, max_distance 128."""
    return t5_buckets()


def alibi_heads(num_heads: int = 8, length: int = 12, heads: tuple[int, ...] = (0, 3, 7)) -> Figure:
    """ALiBi's bias matrices for a few heads (causal: future keys masked).

    Returns
    -------
    matplotlib.figure.Figure
    """
    import numpy as np
    import torch

    from .relative import alibi_bias, alibi_slopes

    plt = _pyplot()
    bias = alibi_bias(num_heads, length, length).double().numpy()  # (H, L, L), -inf above diag
    slopes = alibi_slopes(num_heads, dtype=torch.float64).numpy()
    finite = bias[np.isfinite(bias)]
    fig, axes = plt.subplots(1, len(heads), figsize=(9.0, 3.4), constrained_layout=True)
    for ax, h in zip(np.atleast_1d(axes), heads, strict=True):
        shown = np.ma.masked_invalid(bias[h])  # the masked future is left blank
        image = ax.imshow(shown, cmap="magma", vmin=finite.min(), vmax=0, interpolation="nearest")
        ax.set_title(f"head {h}: slope {slopes[h]:g}")
        ax.set_xticks(range(0, length, 2))
        ax.set_yticks(range(0, length, 2))
        ax.set_xlabel("key position j")
        ax.set_ylabel("query position i")
    fig.colorbar(image, ax=axes, label=r"bias $-m_h (i - j)$", fraction=0.04)
    return fig


@site_figure("alibi_bias.svg")
def alibi_bias_default() -> Figure:
    """Heads 0, 3, 7 of 8, 12 positions."""
    return alibi_heads()


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


# === benchmark figures (docs: benchmarks) ===


# The benchmark figures draw a results file written by ``python -m benchmarks.run`` (the site
# hook passes the committed ``benchmarks/results.json``); they compute nothing themselves.
_BENCH_COLORS = {
    "sinusoidal": "C0",
    "rope_cos_sin": "C2",
    "float32_formula": "C3",
    "hf_llama_rotary": "C1",
    "numpy_float64": "C4",
}


def _whiskers(ratios: list[dict]) -> tuple[list[float], list[list[float]]]:
    # Medians, and min-max as matplotlib error bar lengths below and above the median.
    medians = [r["median"] for r in ratios]
    spread = [[r["median"] - r["min"] for r in ratios], [r["max"] - r["median"] for r in ratios]]
    return medians, spread


def _label_above(ax, xs, medians, spread, fmt: str) -> None:
    # Value labels just above the upper whisker (log axes: a constant factor above it).
    for x, m, above in zip(xs, medians, spread[1], strict=True):
        ax.text(x, (m + above) * 1.12, fmt.format(m), ha="center", va="bottom", fontsize=8)


def bench_sinusoidal_figure(results: dict) -> Figure:
    """Speedup of :func:`~posenc_ref.sinusoidal` over the loop, and its cost vs float32.

    Parameters
    ----------
    results
        A parsed results file of ``python -m benchmarks.run``.

    Returns
    -------
    matplotlib.figure.Figure
        Two bar panels, one bar per table size, with min–max whiskers of the per-round ratios.
    """
    import numpy as np

    plt = _pyplot()
    cases = results["benchmarks"]["sinusoidal"]["cases"]
    labels = [f"({c['num_positions']}, {c['dim']})" for c in cases]
    fig, (speed, cost) = plt.subplots(1, 2, figsize=(9.0, 3.6), constrained_layout=True)
    medians, spread = _whiskers([c["ratios"]["loop_over_sinusoidal"] for c in cases])
    speed.bar(labels, medians, yerr=spread, capsize=4, color="C0")
    _label_above(speed, range(len(cases)), medians, spread, "{:.3g}×")
    speed.set_yscale("log")
    speed.set_ylabel("loop time / sinusoidal time")
    speed.set_title("speedup of sinusoidal over sinusoidal_loop", fontsize=10)
    speed.set_xlabel("table size (positions, dim)")
    speed.margins(y=0.25)

    x = np.arange(len(cases))
    for offset, key, name, color in (
        (-0.2, "sinusoidal_over_float32", "sinusoidal (float64 angles)", "C0"),
        (0.2, "numpy_over_float32", "NumPy float64", "C4"),
    ):
        medians, spread = _whiskers([c["ratios"][key] for c in cases])
        cost.bar(x + offset, medians, 0.4, yerr=spread, capsize=4, color=color, label=name)
        _label_above(cost, x + offset, medians, spread, "{:.2g}×")
    cost.axhline(1.0, color="0.3", lw=0.8)
    cost.axhline(2.0, color="C3", lw=1, ls="--", label="target for sinusoidal: 2×")
    cost.set_xticks(x, labels)
    cost.set_yscale("log")
    cost.set_ylabel("time / float32 formula time")
    cost.set_title("cost relative to the float32 formula", fontsize=10)
    cost.set_xlabel("table size (positions, dim)")
    cost.legend(fontsize=8, loc="upper left")
    cost.margins(y=0.3)
    return fig


def bench_accuracy_figure(results: dict) -> Figure:
    """Max |error| per octave of position, on log-log axes, with the 6e-8 target.

    Returns
    -------
    matplotlib.figure.Figure
        One line per implementation; x is the octave's largest position.
    """
    import numpy as np

    plt = _pyplot()
    acc = results["benchmarks"]["accuracy"]
    tops = np.array([o["stop"] - 1 for o in acc["octaves"]], dtype=float)
    tops[0] = max(tops[0], 1.0)  # the first octave [0, 2) ends at position 1
    labels = {
        "sinusoidal": "posenc_ref sinusoidal",
        "rope_cos_sin": "posenc_ref rope_cos_sin",
        "float32_formula": "float32 formula (PyTorch examples)",
        "hf_llama_rotary": "HF LlamaRotaryEmbedding",
    }
    markers = {
        "sinusoidal": "s",
        "rope_cos_sin": "x",
        "float32_formula": "o",
        "hf_llama_rotary": "^",
    }
    fig, ax = plt.subplots(figsize=(7.5, 4.5), constrained_layout=True)
    for name, label in labels.items():
        if name not in acc["max_abs_error"]:
            continue
        errors = np.maximum(np.array(acc["max_abs_error"][name], dtype=float), 1e-12)
        ax.loglog(
            tops, errors, marker=markers[name], ms=4, lw=1, color=_BENCH_COLORS[name], label=label
        )
    ax.axhline(6e-8, color="0.3", lw=1, ls="--", label="target: 6e-8")
    ax.set_xlabel("position (largest of each octave)")
    ax.set_ylabel("max |error| of sin and cos")
    ax.set_title(f"accuracy vs position, dim {acc['dim']}, base {acc['base']:g}", fontsize=10)
    ax.legend(fontsize=8)
    ax.grid(True, which="major", lw=0.3, color="0.85")
    return fig


def bench_rope_figure(results: dict, device: str = "cpu") -> Figure:
    """RoPE time on q and k as multiples of the copy floor, one panel per dtype and shape.

    Returns
    -------
    matplotlib.figure.Figure
        Horizontal bars (log scale) with min–max whiskers and the dtype's target as a line.
    """
    import numpy as np

    plt = _pyplot()
    cases = [c for c in results["benchmarks"]["rope"]["cases"] if c["device"] == device]
    shapes = list(dict.fromkeys(tuple(c["shape"]) for c in cases))  # in the file's order
    dtypes = sorted({c["dtype"] for c in cases}, key=["float32", "bfloat16"].index)
    names = {
        "copy_floor": "copy floor",
        "clone_floor": "clone floor (fresh memory)",
        "apply_rope_interleaved": "apply_rope interleaved",
        "apply_rope_half": "apply_rope half",
        "apply_rope_interleaved_out": "apply_rope interleaved, out=",
        "apply_rope_half_out": "apply_rope half, out=",
        "hf_rotate_half": "HF rotate_half",
        "meta_complex": "Meta complex",
        "torchtune": "torchtune",
        "rotary_embedding_torch": "rotary-embedding-torch",
    }
    limits = {"float32": 3.0, "bfloat16": 5.0}
    fig, axes = plt.subplots(
        len(dtypes),
        len(shapes),
        figsize=(4.6 * len(shapes), 0.34 * len(names) * len(dtypes) + 1.2),
        squeeze=False,
        sharex=True,
        constrained_layout=True,
    )
    for row, dtype in enumerate(dtypes):
        for col, shape in enumerate(shapes):
            ax = axes[row][col]
            case = next(c for c in cases if c["dtype"] == dtype and tuple(c["shape"]) == shape)
            shown = [n for n in names if n in case["over_floor"]]
            medians, spread = _whiskers([case["over_floor"][n] for n in shown])
            colors = [
                "0.6" if n.endswith("_floor") else "C0" if n.startswith("apply_rope") else "C1"
                for n in shown
            ]
            y = np.arange(len(shown))[::-1]
            ax.barh(y, medians, xerr=spread, capsize=3, color=colors)
            for yi, m, above in zip(y, medians, spread[1], strict=True):  # label past the whisker
                ax.text((m + above) * 1.12, yi, f"{m:.3g}×", va="center", fontsize=8)
            ax.axvline(limits.get(dtype, 1.0), color="C3", lw=1, ls="--")
            ax.set_yticks(y, [names[n] for n in shown], fontsize=8)
            ax.set_xscale("log")
            ax.set_title(f"{device} {dtype} {shape}", fontsize=9)
            if row == len(dtypes) - 1:
                ax.set_xlabel("time / copy floor (dashed: target)")
    return fig


# --------------------------------------------------------------------------- model zoo
# Figures of the "Model zoo" page (docs/models.md), added by the models work (issue 8). When
# plots.py becomes a package, this section moves to its own module for that page.


def zoo_wavelengths(rows: list[dict] | None = None) -> Figure:
    r"""Per-pair wavelengths of released models on a log axis, one row per model (and layer type).

    Each dot is one rotary pair's wavelength :math:`2\pi/\omega_i` in positions, with the
    frequencies used inside the original context (LongRoPE: the short list); pairs with frequency
    0 (``proportional``) are left out. A black bar marks the original context :math:`L`, a grey
    bar the extended one: the dots left of the black bar complete a full turn during
    pre-training.

    Parameters
    ----------
    rows
        Rows of :func:`posenc_ref.models.zoo_rows`; ``None`` draws every released family.

    Returns
    -------
    matplotlib.figure.Figure
    """
    import numpy as np

    from .models import zoo_rows

    plt = _pyplot()
    rows = zoo_rows() if rows is None else rows
    fig, ax = plt.subplots(figsize=(9, 0.36 * len(rows) + 1.4))
    labels = []
    for y, row in enumerate(reversed(rows)):
        spec = row["spec"]
        omega = spec.inv_freq.numpy()
        omega = omega[omega > 0]
        wavelength = 2 * np.pi / omega
        partial = "partial" if spec.rotary_dim < spec.head_dim else "full"
        color = {"full": "C0", "partial": "C1"}[partial]
        if spec.mrope_section is not None:
            color = "C2"
        ax.plot(wavelength, np.full_like(wavelength, y), "|", color=color, ms=7, mew=1.2)
        if row["original"] is not None:
            ax.plot([row["original"]] * 2, [y - 0.38, y + 0.38], color="k", lw=2)
        if row["extended"] is not None and row["extended"] != row["original"]:
            ax.plot([row["extended"]] * 2, [y - 0.38, y + 0.38], color="0.55", lw=2)
        name = row["name"] + (f" ({row['layer_type'].split('_')[0]})" if row["layer_type"] else "")
        labels.append(name)
    ax.set_yticks(range(len(rows)), labels, fontsize=8)
    ax.set_xscale("log")
    ax.set_ylim(-0.7, len(rows) - 0.3)
    ax.set_xlabel(r"wavelength $2\pi/\omega_i$ (positions), one tick per rotary pair")
    ax.grid(axis="x", alpha=0.3, which="major")
    handles = [
        plt.Line2D([], [], color="C0", marker="|", ls="", ms=8, label="pairs (full rotary)"),
        plt.Line2D([], [], color="C1", marker="|", ls="", ms=8, label="pairs (partial rotary)"),
        plt.Line2D([], [], color="C2", marker="|", ls="", ms=8, label="pairs (M-RoPE)"),
        plt.Line2D([], [], color="k", lw=2, label="original context"),
        plt.Line2D([], [], color="0.55", lw=2, label="extended context"),
    ]
    ax.legend(handles=handles, loc="upper center", bbox_to_anchor=(0.5, -0.09), ncol=5, fontsize=8)
    ax.set_title("Per-pair wavelengths of released RoPE configs", fontsize=11)
    fig.tight_layout()
    return fig


@site_figure("zoo_wavelengths.svg")
def _site_zoo_wavelengths() -> Figure:
    return zoo_wavelengths()
