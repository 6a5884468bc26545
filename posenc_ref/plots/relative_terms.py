"""Figures of the relative-encodings page, past ALiBi: Transformer-XL, DeBERTa, KERPLE, FIRE, CoPE.

Shown on ``relative.md``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ._common import _pyplot
from ._registry import site_figure

if TYPE_CHECKING:  # pragma: no cover
    from matplotlib.figure import Figure

__all__ = [
    "transformer_xl_terms",
    "transformer_xl_default",
    "deberta_positions",
    "deberta_default",
    "kerple_kernels",
    "kerple_default",
    "fire_interpolation",
    "fire_default",
    "cope_counts",
    "cope_default",
]


def _randn(generator, *shape):
    import torch

    return torch.randn(*shape, generator=generator, dtype=torch.float64)


def transformer_xl_terms(length: int = 12, dim: int = 8, seed: int = 0) -> Figure:
    """The four terms of Transformer-XL's score for random vectors, each as a matrix.

    Returns
    -------
    matplotlib.figure.Figure
    """
    import numpy as np
    import torch

    from ..relative_terms import transformer_xl_scores

    plt = _pyplot()
    g = torch.Generator().manual_seed(seed)
    q, k, r = _randn(g, length, dim), _randn(g, length, dim), _randn(g, length, dim)
    u, v = _randn(g, dim), _randn(g, dim)
    zeros_q, zeros_k = torch.zeros(length, dim, dtype=torch.float64), torch.zeros_like(k)
    zero, zeros_r = torch.zeros(dim, dtype=torch.float64), torch.zeros_like(r)
    terms = {
        "(a) content: $q_i^T k_j$": transformer_xl_scores(q, k, zeros_r, zero, zero),
        "(b) content-position: $q_i^T r_{i-j}$": transformer_xl_scores(q, zeros_k, r, zero, zero),
        "(c) global content: $u^T k_j$": transformer_xl_scores(zeros_q, k, zeros_r, u, zero),
        "(d) global position: $v^T r_{i-j}$": transformer_xl_scores(zeros_q, zeros_k, r, zero, v),
    }
    finite = np.concatenate([t[torch.isfinite(t)].numpy() for t in terms.values()])
    limit = float(np.abs(finite).max())
    fig, axes = plt.subplots(1, 4, figsize=(11.0, 3.2), constrained_layout=True)
    for ax, (title, term) in zip(axes, terms.items(), strict=True):
        shown = np.ma.masked_invalid(term.numpy())  # the masked future stays blank
        image = ax.imshow(shown, cmap="RdBu_r", vmin=-limit, vmax=limit, interpolation="nearest")
        ax.set_title(title, fontsize=9)
        ax.set_xlabel("key j")
        ax.set_ylabel("query i")
    fig.colorbar(image, ax=axes, fraction=0.02, label=r"term $/\sqrt{d}$")
    return fig


@site_figure("transformer_xl_terms.svg")
def transformer_xl_default() -> Figure:
    """12 positions, d = 8, random vectors (seed 0)."""
    return transformer_xl_terms()


def deberta_positions(
    k: int = 4, length: int = 12, buckets: int = 256, max_position: int = 512
) -> Figure:
    """DeBERTa's clipped index delta(i, j), and v2's log buckets against the offset.

    Returns
    -------
    matplotlib.figure.Figure
    """
    import torch

    from ..relative import relative_positions
    from ..relative_terms import deberta_log_bucket, deberta_relative_index

    plt = _pyplot()
    fig, (grid, curve) = plt.subplots(1, 2, figsize=(9.0, 3.6), constrained_layout=True)
    delta = deberta_relative_index(relative_positions(length, length), k)
    image = grid.imshow(delta.numpy(), cmap="viridis", interpolation="nearest")
    grid.set_title(rf"$\delta(i, j)$, k = {k}: rows of the table")
    grid.set_xlabel("key j")
    grid.set_ylabel("query i")
    fig.colorbar(image, ax=grid, fraction=0.046)
    offset = torch.arange(-2 * max_position, 2 * max_position + 1)  # query - key
    bucket = deberta_log_bucket(-offset, buckets, max_position)
    curve.plot(offset.numpy(), bucket.numpy(), lw=1)
    curve.axhline(2 * (buckets // 2) - 1, color="0.6", ls=":", lw=1)
    curve.axhline(-(2 * (buckets // 2) - 1), color="0.6", ls=":", lw=1)
    curve.set_xlabel("query - key")
    curve.set_ylabel("bucketed offset")
    curve.set_title(f"v2 log buckets ({buckets}, max {max_position})")
    curve.grid(alpha=0.3)
    return fig


@site_figure("deberta_positions.svg")
def deberta_default() -> Figure:
    """K = 4 on 12 positions; DeBERTa-v3's position_buckets 256 and max_relative_positions 512."""
    return deberta_positions()


def kerple_kernels(max_distance: int = 200) -> Figure:
    """KERPLE's log and power kernels against ALiBi's line, for a few parameter values.

    Returns
    -------
    matplotlib.figure.Figure
    """
    import torch

    from ..relative import alibi_slopes, kerple_log_bias, kerple_power_bias

    plt = _pyplot()
    distance = torch.arange(max_distance + 1).numpy()

    def last_row(bias):  # the last query's row, read from distance 0 outwards
        return bias[:, 0].flip(-1).numpy()

    one = torch.ones(1, dtype=torch.float64)
    slope = alibi_slopes(8, dtype=torch.float64)[2:3]  # 1/8, head 2 of 8
    fig, ax = plt.subplots(figsize=(7.5, 3.6), constrained_layout=True)
    n = max_distance + 1
    ax.plot(distance, last_row(kerple_power_bias(slope, one, 1, n, dtype=torch.float64))[0],
            "k--", label="ALiBi, slope 1/8 (power, $r_2$ = 1)")  # fmt: skip
    for r1, r2 in [(1.0, 1.0), (2.0, 0.5), (4.0, 0.1)]:
        bias = kerple_log_bias(r1 * one, r2 * one, 1, n, dtype=torch.float64)
        ax.plot(distance, last_row(bias)[0], label=f"log: $r_1$ = {r1:g}, $r_2$ = {r2:g}")
    bias = kerple_power_bias(0.5 * one, 0.5 * one, 1, n, dtype=torch.float64)
    ax.plot(distance, last_row(bias)[0], ":", label="power: $r_1$ = 0.5, $r_2$ = 0.5")
    ax.set_ylim(-25, 1)
    ax.set_xlabel("distance m - p")
    ax.set_ylabel("bias")
    ax.set_title("KERPLE kernels against ALiBi")
    ax.legend(fontsize=8, loc="lower left")
    ax.grid(alpha=0.3)
    return fig


@site_figure("kerple_kernels.svg")
def kerple_default() -> Figure:
    """Distances up to 200."""
    return kerple_kernels()


def fire_interpolation(threshold: float = 64.0, c: float = 0.1, seed: int = 0) -> Figure:
    """FIRE's normalised input for queries at several positions, and a fixed MLP's bias.

    Returns
    -------
    matplotlib.figure.Figure
    """
    import torch

    from ..relative import FireWeights, fire_bias

    plt = _pyplot()
    one, zero = torch.ones(1, 1, dtype=torch.float64), torch.zeros(1, dtype=torch.float64)
    identity = FireWeights(one, zero, one, zero, c, threshold)
    g = torch.Generator().manual_seed(seed)
    width = 32
    mlp = FireWeights(
        _randn(g, width, 1), _randn(g, width), _randn(g, 1, width) / width**0.5,
        torch.zeros(1, dtype=torch.float64), c, threshold,
    )  # fmt: skip
    fig, (inputs, biases) = plt.subplots(1, 2, figsize=(9.0, 3.4), constrained_layout=True)
    for multiple in (0.5, 1, 2, 4, 8):
        m = int(multiple * threshold)  # the query's position
        x = fire_bias(identity, 1, m + 1, dtype=torch.float64)[0, 0].flip(0)  # distance 0 .. m
        b = fire_bias(mlp, 1, m + 1, dtype=torch.float64)[0, 0].flip(0)
        label = f"query at m = {m}"
        inputs.plot(range(m + 1), x.numpy(), label=label)
        biases.plot(torch.arange(m + 1).numpy() / max(m, 1), b.numpy(), label=label)
    inputs.set_xscale("symlog", linthresh=1)
    inputs.set_xlabel("distance m - p")
    inputs.set_ylabel(r"$\psi(m-p) / \psi(\max(L, m))$")
    inputs.set_title(f"MLP input (L = {threshold:g}, c = {c:g})")
    biases.set_xlabel("distance / m")
    biases.set_ylabel("bias (one head)")
    biases.set_title("A fixed MLP's bias, rescaled rows")
    for ax in (inputs, biases):
        ax.legend(fontsize=7)
        ax.grid(alpha=0.3)
    return fig


@site_figure("fire_interpolation.svg")
def fire_default() -> Figure:
    """L = 64, c = 0.1, an MLP of width 32 with random fixed weights (seed 0)."""
    return fire_interpolation()


def cope_counts(
    text: str = "the cat sat . a dog ran . it rained . we left", sharpness: float = 20.0
) -> Figure:
    """CoPE's positions when only sentence ends open their gate: sentences, not tokens.

    Returns
    -------
    matplotlib.figure.Figure
    """
    import numpy as np
    import torch

    from ..relative import relative_positions
    from ..relative_terms import cope_positions

    plt = _pyplot()
    tokens = text.split()
    n = len(tokens)
    is_end = torch.tensor([t == "." for t in tokens], dtype=torch.float64)
    logits = (2 * is_end - 1)[None, :].expand(n, n) * sharpness  # the same gate for every query
    contextual = cope_positions(logits)
    counted = (1 - relative_positions(n, n)).clamp(min=0).to(torch.float64)  # i - j + 1
    fig, axes = plt.subplots(1, 2, figsize=(10.0, 4.2), constrained_layout=True)
    for ax, table, title in [
        (axes[0], counted, "token positions i - j + 1"),
        (axes[1], contextual, "CoPE: sentence ends from j to i"),
    ]:
        future = (relative_positions(n, n) > 0).numpy()
        shown = np.ma.masked_where(future, table.numpy())  # keys after the query: blank
        image = ax.imshow(shown, cmap="viridis", interpolation="nearest")
        ax.set_xticks(range(n), tokens, rotation=90, fontsize=7)
        ax.set_yticks(range(n), tokens, fontsize=7)
        ax.set_title(title, fontsize=9)
        ax.set_xlabel("key j")
        ax.set_ylabel("query i")
        fig.colorbar(image, ax=ax, fraction=0.046)
    return fig


@site_figure("cope_counts.svg")
def cope_default() -> Figure:
    """Gates open only at ".", sharpness 20 (sigmoid(20) ~ 1, sigmoid(-20) ~ 0)."""
    return cope_counts()
