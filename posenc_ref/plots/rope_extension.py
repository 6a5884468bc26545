"""Figures of the page on why context extension works.

Shown on ``rope_extension.md``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ._common import _pyplot
from ._registry import default_of, figure_facts, sci, site_figure

if TYPE_CHECKING:  # pragma: no cover
    import torch
    from matplotlib.figure import Figure

__all__ = [
    "pi_fit_data",
    "pi_fit",
    "extension_positions",
    "sink_positions",
]


def pi_fit_data(
    dim: int = 128,
    base: float = 10000.0,
    length: int = 2048,
    num_points: int = 2048,
    seed: int = 0,
) -> dict[str, torch.Tensor]:
    r"""A score function fitted on :math:`[0, L]`, as Position Interpolation's Figure 2 fits one.

    ``num_points`` random distances in :math:`[0, L]` get random targets in :math:`[-1, 1]`;
    :func:`posenc_ref.rope_extension.fit_score_function` fits :math:`h`.

    Returns
    -------
    dict
        ``points``, ``targets`` ``(num_points,)``; ``h`` ``(dim/2,)`` complex; ``inside`` and
        ``beyond``: :math:`f(k)` on a fine grid of :math:`[0, L]` and of :math:`[L, 2L]`, with
        ``grid_inside`` and ``grid_beyond``.
    """
    import torch

    from ..absolute import inv_freq
    from ..rope_extension import fit_score_function, score_function

    omega = inv_freq(dim, base)
    g = torch.Generator().manual_seed(seed)
    points = torch.rand(num_points, generator=g, dtype=torch.float64) * length
    targets = torch.rand(num_points, generator=g, dtype=torch.float64) * 2 - 1
    h = fit_score_function(omega, points, targets)
    grid_inside = torch.linspace(0, length, 20 * length + 1, dtype=torch.float64)
    grid_beyond = torch.linspace(length, 2 * length, 20 * length + 1, dtype=torch.float64)
    return {
        "points": points,
        "targets": targets,
        "h": h,
        "grid_inside": grid_inside,
        "inside": score_function(h, omega, grid_inside),
        "grid_beyond": grid_beyond,
        "beyond": score_function(h, omega, grid_beyond),
    }


def pi_fit(dim: int = 128, base: float = 10000.0, length: int = 2048) -> Figure:
    """Interpolation against extrapolation of a fitted RoPE score (:func:`pi_fit_data`).

    Left: the fit on :math:`[0, L]`. Middle: its size on :math:`[0, 2L]`, log scale. Right: eight
    positions inside :math:`[0, L]` and the values between them, where interpolated positions
    land.

    Returns
    -------
    matplotlib.figure.Figure
    """
    import torch

    plt = _pyplot()
    data = pi_fit_data(dim, base, length)
    fig, (left, middle, right) = plt.subplots(1, 3, figsize=(11.0, 3.5))
    left.plot(data["points"], data["targets"], ".", ms=2, color="0.6", label="fitted points")
    left.plot(data["grid_inside"], data["inside"], color="C3", lw=0.8, label="fit f(k)")
    left.set_xlabel("distance k")
    left.set_title(f"fitted on [0, L], L = {length}", fontsize=10)
    left.legend(fontsize=8, loc="lower right")
    grid = torch.cat([data["grid_inside"], data["grid_beyond"]])
    values = torch.cat([data["inside"], data["beyond"]]).abs().clamp(min=1e-6)
    middle.semilogy(grid, values, color="C3", lw=0.6)
    middle.axvline(length, color="0.3", lw=0.8, ls="--")
    middle.set_xlabel("distance k")
    middle.set_ylabel("|f(k)|")
    middle.set_title("extrapolated past L", fontsize=10)
    start = length // 2
    inside = (data["grid_inside"] >= start) & (data["grid_inside"] <= start + 8)
    right.plot(data["grid_inside"][inside], data["inside"][inside], color="C3", lw=1.0)
    integers = torch.arange(start, start + 9)
    right.plot(integers, data["inside"][integers * 20], "o", ms=4, color="C0")
    for s in integers.tolist():
        right.axvline(s, color="0.8", lw=0.6, ls=":")
    right.set_xlabel("distance k")
    right.set_title("between integer positions", fontsize=10)
    fig.tight_layout()
    return fig


@site_figure("pi_fit.svg")
def _site_pi_fit() -> Figure:
    return pi_fit()


@figure_facts("pi_fit.svg")
def _pi_fit_facts() -> dict[str, str]:
    dim, base = default_of(pi_fit, "dim"), default_of(pi_fit, "base")
    data = pi_fit_data(dim, base, default_of(pi_fit, "length"))
    return {
        "inside": f"{float(data['inside'].abs().max()):.2f}",
        "beyond": sci(float(data["beyond"].abs().max())),
    }


def extension_positions(original_max_len: int = 4096, factor: int = 4, group: int = 8) -> Figure:
    """The distance each method feeds the rotation, against the true distance, up to s L0.

    Position Interpolation divides every distance by :math:`s`; Self-Extend
    (:func:`posenc_ref.rope_extension.self_extend_relative_positions`, group ``group``, window
    :math:`L_0/4`) keeps the near ones and groups the rest; ReRoPE and leaky ReRoPE
    (:func:`posenc_ref.rope_extension.rerope_relative_positions`, window :math:`L_0/4`, leak
    ``group``) clip or slow them. With these settings every curve stays below :math:`L_0` up to
    :math:`sL_0`.

    Returns
    -------
    matplotlib.figure.Figure
    """
    import torch

    from ..rope_extension import rerope_relative_positions, self_extend_relative_positions

    plt = _pyplot()
    length, window = factor * original_max_len, original_max_len // 4
    # The last query against every key: each distance 0 .. length - 1 once.
    distance = torch.arange(length)
    query, key = torch.tensor(length - 1), length - 1 - distance
    fig, ax = plt.subplots(figsize=(7.0, 4.2))
    ax.plot(distance, distance, color="0.6", lw=0.8, ls=":", label="no change (extrapolation)")
    ax.plot(distance, distance / factor, color="C0", label=f"PI, s = {factor}")
    grouped = self_extend_relative_positions(query, key, group_size=group, window=window)
    ax.plot(distance, grouped, color="C2", label=f"Self-Extend, G = {group}, w = {window}")
    clipped = rerope_relative_positions(query, key, window=window)
    ax.plot(distance, clipped, color="C3", label=f"ReRoPE, w = {window}")
    leaky = rerope_relative_positions(query, key, window=window, leak=float(group))
    ax.plot(distance, leaky, color="C1", ls="--", label=f"leaky ReRoPE, κ = {group}")
    ax.axhline(original_max_len, color="0.3", lw=0.8, ls="--")
    ax.text(0, original_max_len * 1.02, r"$L_0$", fontsize=9)
    ax.set_xlabel("distance m - p")
    ax.set_ylabel("distance the rotation uses")
    ax.set_title(f"L0 = {original_max_len}, inputs up to {length}", fontsize=10)
    ax.legend(fontsize=8, loc="upper left")
    fig.tight_layout()
    return fig


@site_figure("extension_positions.svg")
def _site_extension_positions() -> Figure:
    return extension_positions()


@figure_facts("extension_positions.svg")
def _extension_positions_facts() -> dict[str, str]:
    import torch

    from ..rope_extension import rerope_relative_positions, self_extend_relative_positions

    original, factor = (
        default_of(extension_positions, "original_max_len"),
        default_of(extension_positions, "factor"),
    )
    group, window = default_of(extension_positions, "group"), original // 4
    last, first = torch.tensor(factor * original - 1), torch.tensor(0)
    grouped = self_extend_relative_positions(last, first, group_size=group, window=window)
    leaky = rerope_relative_positions(last, first, window=window, leak=float(group))
    return {"self_extend_max": f"{int(grouped):,}", "leaky_max": f"{float(leaky):,.0f}"}


def sink_positions(original_max_len: int = 4096, factor: int = 4, sinks: int = 4) -> Figure:
    """Which keys the last query sees, and at what distance, under five ways of capping it.

    The last query of an input of ``factor * original_max_len`` tokens against every key:
    ReRoPE (window :math:`L_0/4`, every key seen), Self-Extend (group 8, window :math:`L_0/4`),
    dual chunk attention (chunk :math:`L_0`, local window :math:`L_0/4`), LM-Infinite (``sinks``
    first tokens and a window of :math:`L_0`, distances capped at :math:`L_0`) and StreamingLLM
    (``sinks`` sinks and :math:`L_0 - ` ``sinks`` recent tokens, positions counted in the cache).
    A key a method drops is not drawn.

    Returns
    -------
    matplotlib.figure.Figure
    """
    import torch

    from ..dual_chunk import dual_chunk_distance
    from ..rope_extension import (
        lm_infinite_positions,
        rerope_relative_positions,
        self_extend_relative_positions,
        streaming_llm_positions,
    )

    plt = _pyplot()
    length, quarter = factor * original_max_len, original_max_len // 4
    distance = torch.arange(length)
    query, key = torch.tensor(length - 1), length - 1 - distance
    lm = lm_infinite_positions(query, key, sinks=sinks, window=original_max_len)
    stream = streaming_llm_positions(query, key, sinks=sinks, window=original_max_len - sinks)
    curves = [
        ("ReRoPE, w = L0/4", rerope_relative_positions(query, key, window=quarter), None, "C3"),
        ("Self-Extend, G = 8", self_extend_relative_positions(query, key, group_size=8,
                                                              window=quarter), None, "C2"),
        ("dual chunk, S = L0", dual_chunk_distance(query[None], key, chunk_size=original_max_len,
                                                   local_size=quarter), None, "C4"),
        (f"LM-Infinite, {sinks} sinks", lm.distance, lm.visible, "C0"),
        (f"StreamingLLM, {sinks} sinks", stream.distance, stream.visible, "C1"),
    ]  # fmt: skip
    fig, axes = plt.subplots(1, 2, figsize=(11.0, 3.9), sharey=True)
    for ax, keep_all in zip(axes, (True, False), strict=True):
        ax.plot(distance, distance, color="0.6", lw=0.8, ls=":", label="no change")
        for label, used, visible, colour in curves:
            if (visible is None) != keep_all:
                continue
            used = used.to(torch.float64)
            if visible is None:
                ax.plot(distance, used, color=colour, lw=1.2, label=label)
            else:  # only the keys the method keeps
                ax.plot(distance[visible], used[visible], "o", ms=2.5, color=colour, label=label)
        ax.axhline(original_max_len, color="0.3", lw=0.8, ls="--")
        ax.text(0, original_max_len * 1.03, r"$L_0$", fontsize=9)
        ax.set_xlabel("distance m - p")
        ax.legend(fontsize=8, loc="upper left")
    axes[0].set_ylabel("distance the rotation uses")
    axes[0].set_title("every key kept", fontsize=10)
    axes[1].set_title("the first tokens and a window kept, the rest dropped", fontsize=10)
    fig.tight_layout()
    return fig


@site_figure("sink_positions.svg")
def _site_sink_positions() -> Figure:
    return sink_positions()
