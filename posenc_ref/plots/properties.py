"""Figures of the properties page: distances, dot products, uniqueness and wavelengths.

Shown on ``properties.md`` and the visual tour (``tour.md``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ._common import _pyplot, _table_image
from ._registry import default_of, figure_facts, sci, site_figure

if TYPE_CHECKING:  # pragma: no cover
    from matplotlib.figure import Figure

__all__ = [
    "binary_vs_sinusoidal",
    "binary_vs_sinusoidal_default",
    "distance_matrix",
    "distance_matrix_default",
    "dot_product_vs_offset",
    "dot_product_offset_default",
    "neighbour_distance",
    "neighbour_distance_default",
    "min_distance",
    "min_distance_default",
    "projection",
    "projection_d8",
    "wavelength_curve",
    "wavelengths_512",
]


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

    from ..absolute import binary_encoding, sinusoidal

    plt = _pyplot()
    bits = binary_encoding(num_positions, width)  # (L, width), 0/1
    table = sinusoidal(num_positions, width, base, dtype=torch.float64).numpy()  # (L, width)
    fig, (left, right) = plt.subplots(1, 2, figsize=(9.0, 4.6), constrained_layout=True)
    big = num_positions * width > 20_000
    _table_image(left, bits, vmin=0, vmax=1, cmap="Greys", rasterized=big)
    left.set_title(f"binary counter: bit j of t ({width} bits)")
    left.set_xlabel("bit j (0 = least significant)")
    image = _table_image(right, table, rasterized=big)
    right.set_title(f"sinusoidal table, dim {width}")
    right.set_xlabel("column j")
    for ax in (left, right):
        ax.set_ylabel("position t")
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

    from ..absolute import sinusoidal

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

    from ..absolute import offset_dot_product

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


@figure_facts("dot_product_offset.svg")
def _dot_product_facts() -> dict[str, str]:
    from ..absolute import offset_dot_product

    base = default_of(dot_product_vs_offset, "base")
    offsets = range(1, default_of(dot_product_vs_offset, "max_offset") + 1)  # the curve is even
    facts = {}
    for dim in default_of(dot_product_vs_offset, "dims"):
        values = [offset_dot_product(dim, base, k) / (dim / 2) for k in offsets]
        low = min(values)
        facts[f"d{dim}_min"] = f"{low:.2f}"
        facts[f"d{dim}_at"] = str(offsets[values.index(low)])
    return facts


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

    from ..absolute import adjacent_distance, sinusoidal

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


@figure_facts("neighbour_distance.svg")
def _neighbour_distance_facts() -> dict[str, str]:
    from ..absolute import adjacent_distance

    dim, base = default_of(neighbour_distance, "dim"), default_of(neighbour_distance, "base")
    return {
        f"k{k}": f"{adjacent_distance(dim, base, k):.1f}"
        for k in default_of(neighbour_distance, "offsets")
    }


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

    from ..absolute import sinusoidal

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


@figure_facts("min_distance.svg")
def _min_distance_facts() -> dict[str, str]:
    import numpy as np

    from ..absolute import inv_freq

    max_len, base = default_of(min_distance, "max_len"), default_of(min_distance, "base")
    offsets = np.arange(1, max_len)
    facts = {}
    for dim in default_of(min_distance, "dims"):
        angles = np.outer(offsets, inv_freq(dim, base).numpy())  # (offsets, pairs)
        # The closed form of the properties page: the distance at offset k, from any position.
        distance = np.sqrt(np.maximum(dim - 2 * np.cos(angles).sum(axis=1), 0.0))
        facts[f"d{dim}"] = sci(distance.min())
        facts[f"d{dim}_plain"] = f"{distance.min():.1f}"
        facts[f"d{dim}_length"] = f"{int(offsets[distance.argmin()]) + 1:,}"
    return facts


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

    from ..absolute import sinusoidal

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
    fig.colorbar(scatter, ax=ax, label="position t", fraction=0.05, pad=0.02)
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

    from ..absolute import wavelengths

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


@figure_facts("wavelengths.svg")
def _wavelengths_facts() -> dict[str, str]:
    from ..absolute import wavelengths

    dim, base = default_of(wavelength_curve, "dim"), default_of(wavelength_curve, "base")
    return {"last": f"{float(wavelengths(dim, base)[-1]):,.0f}"}
