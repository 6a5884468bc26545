"""The comparison page's figures, drawn from the committed data (:class:`report.Results`).

Each figure shows means over the seeds that converged at L0, with their 95 % t intervals as error
bars where there are two or more seeds.
"""

from __future__ import annotations

import math

from .model import ENCODINGS, ROTARY, SCALINGS
from .report import BASE, METHOD_NAMES, NAMES, Results
from .train import DISTANCE_BINS

MARKERS = "os^vDPXh*<"


def _pyplot():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _errorbar(ax, lengths, cells, **style) -> None:
    points = [(n, c) for n, c in zip(lengths, cells, strict=True) if c.n]
    if not points:
        return
    x = [n for n, _ in points]
    mean = [c.mean for _, c in points]
    low = [0 if math.isnan(c.low) else max(0.0, c.mean - c.low) for _, c in points]
    high = [0 if math.isnan(c.high) else max(0.0, c.high - c.mean) for _, c in points]
    ax.errorbar(x, mean, yerr=[low, high], capsize=2, ms=4, lw=1.2, **style)


def _length_axis(ax, r: Results, lengths: list[int]) -> None:
    ax.axvline(r.l0, color="0.6", ls=":", lw=1)
    ax.set_xscale("log", base=2)
    ax.set_xticks(lengths, [str(n) for n in lengths], fontsize=7)
    ax.minorticks_off()
    ax.grid(alpha=0.3)


def accuracy_figure(r: Results):
    """Exact-match score against evaluation length, one panel per task, one line per encoding."""
    plt = _pyplot()
    tasks = [t for t in ("passkey", "copy", "reverse") if any(k[0] == t for k in r.jobs)]
    fig, axes = plt.subplots(1, len(tasks), figsize=(11.0, 3.9), sharey=True,
                             constrained_layout=True, squeeze=False)  # fmt: skip
    lengths = r.lengths()
    for ax, task in zip(axes[0], tasks, strict=True):
        for i, e in enumerate(ENCODINGS):
            cells = [r.cell(task, e, n) for n in lengths]
            _errorbar(ax, lengths, cells, marker=MARKERS[i], label=NAMES[e])
        _length_axis(ax, r, lengths)
        ax.set_title(task)
        ax.set_xlabel("evaluation length (dotted: L0)")
    axes[0][0].set_ylabel("whole answers right (exact match)")
    axes[0][0].set_ylim(-0.02, 1.02)
    handles, labels = axes[0][0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="outside lower center", ncols=len(ENCODINGS), fontsize=8)
    return fig


def scaling_figure(r: Results):
    """The rotary encodings past L0 on passkey and copy: exact match per method."""
    plt = _pyplot()
    tasks = ("passkey", "copy")
    lengths = r.lengths()
    fig, axes = plt.subplots(len(tasks), len(ROTARY), figsize=(11.0, 6.4), sharex=True,
                             sharey=True, constrained_layout=True, squeeze=False)  # fmt: skip
    for row, task in enumerate(tasks):
        for col, e in enumerate(ROTARY):
            ax = axes[row][col]
            methods = [*SCALINGS, "blockwise"] if e == "xpos" else list(SCALINGS)
            for i, m in enumerate(methods):
                # every method is the unscaled model at L0 (s = 1)
                cells = [r.cell(task, e, n, "none" if n == r.l0 else m) for n in lengths]
                _errorbar(ax, lengths, cells, marker=MARKERS[i], label=METHOD_NAMES[m])
            _length_axis(ax, r, lengths)
            ax.set_title(f"{NAMES[e]}, {task}", fontsize=9)
            if col == 0:
                ax.set_ylabel("exact match")
            if row == len(tasks) - 1:
                ax.set_xlabel("evaluation length")
    axes[0][-1].legend(fontsize=7, loc="lower left")
    axes[0][0].set_ylim(-0.02, 1.02)
    return fig


def distance_figure(r: Results):
    """Passkey at 8 L0: whole key and first digit against the needle's distance, per encoding.

    Counts pooled over the converged seeds; distances in bins of ``8 L0 / 16`` positions.
    """
    plt = _pyplot()
    length = max(r.lengths())
    width = length // DISTANCE_BINS
    fig, axes = plt.subplots(2, 5, figsize=(11.0, 5.2), sharex=True, sharey=True,
                             constrained_layout=True)  # fmt: skip
    centres = [width * (b + 0.5) for b in range(DISTANCE_BINS)]
    for ax, e in zip(axes.flat, ENCODINGS, strict=True):
        totals = [[0, 0, 0] for _ in range(DISTANCE_BINS)]
        for seed in r.converged("passkey", e):
            row = r.rows.get(("passkey", e, BASE, None, length, "none", seed))
            for b, counts in enumerate(row["by_distance"] if row else []):
                totals[b] = [x + y for x, y in zip(totals[b], counts, strict=True)]
        seen = [(c, t) for c, t in zip(centres, totals, strict=True) if t[0]]
        if seen:
            x = [c for c, _ in seen]
            ax.plot(x, [t[1] / t[0] for _, t in seen], marker="o", ms=3, lw=1.2,
                    label="whole key")  # fmt: skip
            ax.plot(x, [t[2] / t[0] for _, t in seen], marker="^", ms=3, lw=1.0, ls="--",
                    label="first digit")  # fmt: skip
        ax.axvline(r.l0, color="0.6", ls=":", lw=1)
        ax.set_title(NAMES[e], fontsize=9)
        ax.grid(alpha=0.3)
    for ax in axes[1]:
        ax.set_xlabel("needle distance")
    for ax in axes[:, 0]:
        ax.set_ylabel("right")
    axes[0][0].set_ylim(-0.02, 1.02)
    axes[0][0].legend(fontsize=7, loc="lower left")
    return fig


def base_figure(r: Results):
    """RoPE on passkey: whole-key score against the base, one line per evaluation length."""
    plt = _pyplot()
    bases = sorted({b for (t, e, b, s) in r.jobs if (t, e) == ("passkey", "rope")})
    fig, ax = plt.subplots(figsize=(6.4, 3.6), constrained_layout=True)
    for i, n in enumerate(r.lengths()):
        cells = [r.cell("passkey", "rope", n, base=b) for b in bases]
        _errorbar(ax, bases, cells, marker=MARKERS[i], label=f"length {n}")
    ax.set_xscale("log")
    ax.set_xlabel("RoPE base")
    ax.set_ylabel("whole keys right")
    ax.set_ylim(-0.02, 1.02)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7, loc="lower right")
    return fig


def finetune_figure(r: Results):
    """RoPE fine-tuned at 8 L0 (solid) and not (dashed), per method, on passkey and copy."""
    plt = _pyplot()
    lengths = r.lengths()
    fig, axes = plt.subplots(1, 2, figsize=(11.0, 4.0), sharey=True, constrained_layout=True)
    for ax, task in zip(axes, ("passkey", "copy"), strict=True):
        for i, m in enumerate(("none", "pi", "yarn")):
            colour = f"C{i}"
            before = [r.cell(task, "rope", n, "none" if n == r.l0 else m) for n in lengths]
            after = [r.cell(task, "rope", n, m, finetune=m) for n in lengths]
            _errorbar(ax, lengths, before, marker="o", ls="--", color=colour,
                      label=f"{METHOD_NAMES[m]}, not fine-tuned")  # fmt: skip
            _errorbar(ax, lengths, after, marker="s", color=colour,
                      label=f"{METHOD_NAMES[m]}, fine-tuned at 8 L0")  # fmt: skip
        _length_axis(ax, r, lengths)
        ax.set_title(f"RoPE, {task}")
        ax.set_xlabel("evaluation length")
    axes[0].set_ylabel("exact match")
    axes[0].set_ylim(-0.02, 1.02)
    handles, labels = axes[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="outside lower center", ncols=3, fontsize=7)
    return fig


def site_figures(r: Results) -> dict:
    """Figure name -> no-argument drawing function, for ``hooks/figures.py``."""
    return {
        "comparison_accuracy.svg": lambda: accuracy_figure(r),
        "comparison_scaling.svg": lambda: scaling_figure(r),
        "comparison_distance.svg": lambda: distance_figure(r),
        "comparison_base.svg": lambda: base_figure(r),
        "comparison_finetune.svg": lambda: finetune_figure(r),
    }
