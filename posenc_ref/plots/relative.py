"""Figures of the relative-encodings page: T5 buckets, Shaw clipping and ALiBi biases.

Shown on ``relative.md``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ._common import _pyplot
from ._registry import default_of, figure_facts, site_figure

if TYPE_CHECKING:  # pragma: no cover
    from matplotlib.figure import Figure

__all__ = [
    "t5_buckets",
    "t5_buckets_default",
    "alibi_heads",
    "alibi_bias_default",
]


def t5_buckets(max_offset: int = 200, num_buckets: int = 32, max_distance: int = 128) -> Figure:
    """T5's bucket index against the relative position, and Shaw's clipped index.

    Returns
    -------
    matplotlib.figure.Figure
    """
    import torch

    from ..relative import shaw_relative_index, t5_relative_bucket

    plt = _pyplot()
    rel = torch.arange(-max_offset, max_offset + 1)  # key - query
    fig, (t5, shaw) = plt.subplots(1, 2, figsize=(9.0, 3.6), constrained_layout=True)
    for bidirectional, label in [(True, "bidirectional (encoder)"), (False, "causal (decoder)")]:
        buckets = t5_relative_bucket(
            rel, bidirectional=bidirectional, num_buckets=num_buckets, max_distance=max_distance
        )
        t5.step(rel.numpy(), buckets.numpy(), where="mid", label=label)
    # Where the bidirectional staircase reaches its last bucket on each side: the log formula
    # gets there well before max_distance (the cap only matters from max_distance on).
    both = t5_relative_bucket(
        rel, bidirectional=True, num_buckets=num_buckets, max_distance=max_distance
    )
    for side in (-1, 1):
        last = both[0] if side < 0 else both[-1]  # the bucket of the farthest offset drawn
        t5.axvline(side * int(rel[both == last].abs().min()), color="0.6", ls=":", lw=1.0)
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


@figure_facts("t5_buckets.svg")
def _t5_buckets_facts() -> dict[str, str]:
    import torch

    from ..relative import t5_relative_bucket

    num_buckets = default_of(t5_buckets, "num_buckets")
    max_distance = default_of(t5_buckets, "max_distance")
    distance = torch.arange(0, 4 * max_distance)
    facts = {}
    for name, bidirectional in (("bidirectional", True), ("causal", False)):
        buckets = t5_relative_bucket(
            -distance,
            bidirectional=bidirectional,
            num_buckets=num_buckets,
            max_distance=max_distance,
        )
        facts[f"{name}_flat"] = str(int(distance[buckets == buckets.max()].min()))
    return facts


def alibi_heads(num_heads: int = 8, length: int = 12, heads: tuple[int, ...] = (0, 3, 7)) -> Figure:
    """ALiBi's bias matrices for a few heads (causal: future keys masked).

    Returns
    -------
    matplotlib.figure.Figure
    """
    import numpy as np
    import torch

    from ..relative import alibi_bias, alibi_slopes

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
        ax.set_xlabel("key position p")
        ax.set_ylabel("query position m")
    fig.colorbar(image, ax=axes, label=r"bias $-\mu_h (m - p)$", fraction=0.04)
    return fig


@site_figure("alibi_bias.svg")
def alibi_bias_default() -> Figure:
    """Heads 0, 3, 7 of 8, 12 positions."""
    return alibi_heads()


@figure_facts("alibi_bias.svg")
def _alibi_facts() -> dict[str, str]:
    import torch

    from ..relative import alibi_slopes

    slopes = alibi_slopes(default_of(alibi_heads, "num_heads"), dtype=torch.float64)
    return {f"head{h}": f"{float(slopes[h]):.3g}" for h in default_of(alibi_heads, "heads")}
