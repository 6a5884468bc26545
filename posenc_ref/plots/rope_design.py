"""Figures of the page on why RoPE is a rotation: heads built from fast and slow pairs.

Shown on ``rope_design.md``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ._common import _pyplot
from ._registry import default_of, figure_facts, site_figure

if TYPE_CHECKING:  # pragma: no cover
    import torch
    from matplotlib.figure import Figure

__all__ = [
    "semantic_head",
    "built_heads",
    "slow_pairs",
]

# A short sentence of word ids: repeats at several distances, so a content head has work to do.
_WORDS = (0, 1, 2, 3, 1, 4, 2, 0, 5, 1, 3, 6, 2, 4, 0, 1, 5, 3, 2, 6, 1, 0, 4, 2)


def semantic_head(
    dim: int = 64,
    base: float = 10000.0,
    *,
    words: tuple[int, ...] = _WORDS,
    slow_pairs: int = 8,
    scale: float = 3.0,
    seed: int = 0,
) -> tuple[torch.Tensor, torch.Tensor]:
    r"""Queries and keys of a head that matches tokens by content, on the slowest pairs.

    Word :math:`w` gets a random unit vector :math:`c_w` of width ``2 * slow_pairs``; token
    :math:`t` puts ``scale`` :math:`c_{w_t}` into the ``slow_pairs`` slowest pairs of both its query
    and its key (zero elsewhere). Those pairs barely turn over the sentence, so the score of two
    tokens at :math:`m` and :math:`p` is about ``scale**2`` :math:`c_{w_m}^\top c_{w_p}`, whatever
    their distance.

    Returns
    -------
    tuple of torch.Tensor
        ``(q, k)``, each ``(len(words), dim)`` float64, interleaved layout.
    """
    import torch

    g = torch.Generator().manual_seed(seed)
    vocabulary = torch.randn(max(words) + 1, 2 * slow_pairs, generator=g, dtype=torch.float64)
    vocabulary = vocabulary / vocabulary.norm(dim=1, keepdim=True)
    x = torch.zeros(len(words), dim, dtype=torch.float64)
    x[:, dim - 2 * slow_pairs :] = scale * vocabulary[list(words)]  # the slowest pairs
    return x, x.clone()


def built_heads(dim: int = 64, base: float = 10000.0, offset: int = 1) -> Figure:
    """Attention maps of two constructed heads: by position (fast pairs) and by content (slow).

    Left: :func:`posenc_ref.rope_design.positional_head` on the 4 fastest pairs, the same query and
    key at every position; each token attends to the one ``offset`` back. Right:
    :func:`semantic_head`; each token attends to the earlier tokens that are the same word, near
    or far. Both through :func:`posenc_ref.rope_design.score_matrix` and
    :func:`posenc_ref.rope_design.causal_attention`.

    Returns
    -------
    matplotlib.figure.Figure
    """
    import torch

    from ..absolute import inv_freq
    from ..rope_design import causal_attention, positional_head, score_matrix

    plt = _pyplot()
    omega, length = inv_freq(dim, base), len(_WORDS)
    positions = torch.arange(length)
    q, k = positional_head(dim, base, offset=offset, pairs=4, scale=3.0)
    by_position = causal_attention(score_matrix(q, k, omega, positions))
    q, k = semantic_head(dim, base)
    by_content = causal_attention(score_matrix(q, k, omega, positions))
    fig, axes = plt.subplots(1, 2, figsize=(9.0, 4.4))
    titles = (
        f"by position: 4 fastest pairs, offset {offset}",
        "by content: 8 slowest pairs",
    )
    for ax, weights, title in zip(axes, (by_position, by_content), titles, strict=True):
        image = ax.imshow(weights.numpy(), cmap="Blues", vmin=0.0, vmax=1.0)
        ax.set_title(title, fontsize=10)
        ax.set_xlabel("key position p")
        ax.set_ylabel("query position m")
    axes[1].set_xticks(range(length), [str(w) for w in _WORDS], fontsize=6)
    axes[1].set_xlabel("key position p (its word id below)")
    fig.colorbar(image, ax=axes, shrink=0.8, label="attention weight")
    return fig


@site_figure("built_heads.svg")
def _site_built_heads() -> Figure:
    return built_heads()


@figure_facts("built_heads.svg")
def _built_heads_facts() -> dict[str, str]:
    import torch

    from ..absolute import inv_freq
    from ..rope_design import causal_attention, positional_head, score_matrix

    dim, base = default_of(built_heads, "dim"), default_of(built_heads, "base")
    offset = default_of(built_heads, "offset")
    omega, positions = inv_freq(dim, base), torch.arange(len(_WORDS))
    q, k = positional_head(dim, base, offset=offset, pairs=4, scale=3.0)
    weights = causal_attention(score_matrix(q, k, omega, positions))
    target = torch.stack([weights[m, m - offset] for m in range(offset, len(_WORDS))])
    q, k = semantic_head(dim, base)
    content = causal_attention(score_matrix(q, k, omega, positions))
    same = torch.tensor([[a == b for b in _WORDS] for a in _WORDS]).tril()
    return {
        "target_min": f"{float(target.min()):.4f}",
        "same_share": f"{float((content * same).sum(dim=1).min()):.2f}",
    }


def slow_pairs(
    dim: int = 128,
    base: float = 10000.0,
    *,
    slow: int = 8,
    context: int = 4096,
    max_distance: int = 65536,
) -> Figure:
    r"""What the slowest pairs do over long distances, and a score that grows with distance.

    Left: :func:`posenc_ref.rope_design.self_similarity` of the ``slow`` slowest pairs (a content
    match placed there) against distance, for RoPE and for p-RoPE, whose slowest pairs do not turn
    (:func:`posenc_ref.beyond_rope.p_rope`). Right: the score of a query and a key against
    their distance: all pairs :math:`(1, 0)` (RoFormer's decaying case), and the query the
    negative of the key on the slowest pair (a score that rises over the whole context).

    Returns
    -------
    matplotlib.figure.Figure
    """
    import torch

    from ..absolute import inv_freq
    from ..beyond_rope import p_rope
    from ..rope_design import self_similarity

    plt = _pyplot()
    omega = inv_freq(dim, base)
    keep = 1.0 - slow / (dim // 2)
    distances = torch.linspace(0, max_distance, 2001, dtype=torch.float64)
    fig, (left, right) = plt.subplots(1, 2, figsize=(9.6, 3.8))
    left.plot(distances, self_similarity(omega[-slow:], distances), color="C0", label="RoPE")
    frozen = p_rope(inv_freq(dim, base), keep)[-slow:]
    left.plot(distances, self_similarity(frozen, distances), color="C2", label=f"{keep:g}-RoPE")
    left.axvline(context, color="0.3", lw=0.8, ls="--")
    left.text(context, -0.9, r" $L_0$", fontsize=9)
    left.set_ylim(-1.05, 1.1)
    left.set_xlabel("distance")
    left.set_ylabel("content match / match at 0")
    left.set_title(f"the {slow} slowest pairs, d = {dim}, base {base:g}", fontsize=10)
    left.legend(fontsize=8, loc="lower right")  # lower left would hide the L0 label
    near = torch.arange(0, 2 * context + 1, dtype=torch.float64)
    right.plot(near, self_similarity(omega, near), color="C0", label="q = k = (1, 0) in every pair")
    rising = -self_similarity(omega[-1:], near)  # q = -k: the match, negated
    right.plot(near, rising, color="C3", label="q = -k on the slowest pair")
    right.axvline(context, color="0.3", lw=0.8, ls="--")
    right.axhline(0, color="0.6", lw=0.6)
    right.set_xlabel("distance")
    right.set_ylabel("score / |q| |k|")
    right.set_title("a score can grow with distance", fontsize=10)
    right.legend(fontsize=8, loc="upper right")
    fig.tight_layout()
    return fig


@site_figure("slow_pairs.svg")
def _site_slow_pairs() -> Figure:
    return slow_pairs()


@figure_facts("slow_pairs.svg")
def _slow_pairs_facts() -> dict[str, str]:
    import math

    import torch

    from ..absolute import inv_freq
    from ..rope_design import self_similarity

    dim, base = default_of(slow_pairs, "dim"), default_of(slow_pairs, "base")
    slow, context = default_of(slow_pairs, "slow"), default_of(slow_pairs, "context")
    omega = inv_freq(dim, base)
    at_context = self_similarity(omega[-slow:], torch.tensor([context]))
    distances = torch.arange(0, default_of(slow_pairs, "max_distance") + 1, dtype=torch.float64)
    first_negative = int((self_similarity(omega[-slow:], distances) < 0).nonzero()[0])
    return {
        "at_context": f"{float(at_context[0]):.2f}",
        "first_negative": f"{first_negative:,}",
        "rise_until": f"{math.pi / float(omega[-1]):,.0f}",
        "keep": f"{1.0 - slow / (dim // 2):g}",
    }
