"""Tables, computed summaries and figures of the comparison page, from ``comparison.json``.

The page (``docs/comparison.md``) imports this module in ``markdown-exec`` blocks; the figure hook
(``hooks/figures.py``) renders :func:`site_figures`. Nothing here trains a model: every score is
read from the committed data (the recall baseline is computed from the task's generator).
"""

from __future__ import annotations

import statistics
from collections import defaultdict

from .compare import load
from .model import ENCODINGS, ROTARY

__all__ = [
    "load",
    "summary",
    "accuracy_table",
    "scaling_table",
    "setting",
    "timing",
    "ranking",
    "task_summary",
    "recall_value_baseline",
    "site_figures",
]

SCALING_NAMES = {"none": "unscaled", "pi": "PI", "ntk": "NTK-aware", "yarn": "YaRN"}


def _full(data: dict) -> dict:
    return data["runs"]["full"]


def summary(block: dict) -> dict[tuple[str, str, int, str], dict]:
    """``(task, encoding, eval_len, scaling)`` -> mean, min, max accuracy over the seeds."""
    groups: dict[tuple, list[float]] = defaultdict(list)
    for row in block["rows"]:
        key = (row["task"], row["encoding"], row["eval_len"], row["scaling"])
        groups[key].append(row["accuracy"])
    return {
        key: {"mean": statistics.fmean(v), "min": min(v), "max": max(v), "n": len(v)}
        for key, v in groups.items()
    }


def _cell(stat: dict | None) -> str:
    if stat is None:
        return "-"
    if stat["n"] == 1 or stat["min"] == stat["max"]:
        return f"{stat['mean']:.2f}"
    return f"{stat['mean']:.2f} <small>({stat['min']:.2f}-{stat['max']:.2f})</small>"


def _lengths(block: dict) -> list[int]:
    return sorted({row["eval_len"] for row in block["rows"]})


def accuracy_table(data: dict, task: str) -> str:
    """Markdown: one row per encoding, one column per evaluation length, unscaled."""
    block = _full(data)
    stats, lengths = summary(block), _lengths(block)
    l0 = block["config"]["train_len"]
    head = "| encoding | " + " | ".join(_length_name(n, l0) for n in lengths) + " |"
    lines = [head, "|---|" + "---:|" * len(lengths)]
    for encoding in ENCODINGS:
        cells = [_cell(stats.get((task, encoding, n, "none"))) for n in lengths]
        lines.append(f"| {encoding} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def scaling_table(data: dict, task: str) -> str:
    """Markdown: the rotary encodings past L0, unscaled and with each context-extension method."""
    block = _full(data)
    stats, lengths = (
        summary(block),
        [n for n in _lengths(block) if n > block["config"]["train_len"]],
    )
    l0 = block["config"]["train_len"]
    head = "| encoding | method | " + " | ".join(_length_name(n, l0) for n in lengths) + " |"
    lines = [head, "|---|---|" + "---:|" * len(lengths)]
    for encoding in ROTARY:
        for scaling, name in SCALING_NAMES.items():
            cells = [_cell(stats.get((task, encoding, n, scaling))) for n in lengths]
            lines.append(f"| {encoding} | {name} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def _length_name(n: int, l0: int) -> str:
    return f"{n} ({n // l0} L0)" if n != l0 else f"{n} (L0)"


def setting(data: dict) -> str:
    """One paragraph: the model, the training and the evaluation, read from the config."""
    c = _full(data)["config"]
    lengths = ", ".join(str(m * c["train_len"]) for m in c["eval_multiples"])
    return (
        f"Each model has {c['layers']} layers of width {c['dim']} with {c['heads']} heads "
        f"(head width {c['dim'] // c['heads']}), a 4x MLP and pre-norm; it is trained for "
        f"{c['steps']} steps of Adam (learning rate {c['lr']:g}, 10% warm-up, gradient norm "
        f"clipped at 1) on batches of {c['batch']} fresh sequences, each batch of one length drawn "
        f"from {c['train_len'] // 2} to {c['train_len']} in steps of 4, so L0 = "
        f"{c['train_len']}. It is then scored on {c['eval_batch']} fixed sequences of each "
        f"length {lengths}, for seeds {', '.join(map(str, c['seeds']))}."
    )


def timing(data: dict, name: str = "full") -> dict[str, float | int | list]:
    """Wall time, summed CPU time of training, workers and load of one configuration's run."""
    block = data["runs"][name]
    jobs = {(r["task"], r["encoding"], r["seed"]): r for r in block["rows"]}
    return {
        "wall_s": block["wall_s"],
        "jobs": len(jobs),
        "train_cpu_s": round(sum(r["train_cpu_s"] for r in jobs.values()), 1),
        "train_wall_s": round(sum(r["train_s"] for r in jobs.values()), 1),
        "workers": block["workers"],
        "loadavg_before": block["loadavg_before"],
        "loadavg_after": block["loadavg_after"],
        "cpu_count": block["machine"]["cpu_count"],
    }


def ranking(data: dict, task: str, multiple: int) -> list[tuple[str, float]]:
    """Encodings by mean unscaled accuracy at ``multiple`` times L0, best first."""
    block = _full(data)
    stats, length = summary(block), multiple * block["config"]["train_len"]
    scores = [(e, stats[(task, e, length, "none")]["mean"]) for e in ENCODINGS]
    return sorted(scores, key=lambda item: -item[1])


def task_summary(data: dict, task: str) -> str:
    """One computed sentence per evaluation length: who leads, who trails, by how much."""
    multiples = _full(data)["config"]["eval_multiples"]
    parts = []
    for multiple in multiples:
        ranked = ranking(data, task, multiple)
        where = "L0" if multiple == 1 else f"{multiple} L0"
        top = ", ".join(f"{e} {a:.2f}" for e, a in ranked[:3])
        low = ", ".join(f"{e} {a:.2f}" for e, a in ranked[-2:])
        parts.append(f"at {where} the best are {top}; the lowest {low}")
    return f"**{task}**: " + "; ".join(parts) + "."


def recall_value_baseline(length: int, samples: int = 2000) -> float:
    """Accuracy on recall of answering with a random one of the values present in the pairs.

    The expectation of one over the number of distinct values, over ``samples`` sequences of the
    task at ``length`` (a fixed generator: the number is the same at every build).
    """
    import torch

    from .tasks import make_batch

    batch = make_batch("recall", samples, length, torch.Generator().manual_seed(0))
    n = length // 4
    values = batch.inputs[:, 2 : 2 * n + 1 : 2]  # (samples, n): v_1 .. v_n
    distinct = torch.tensor([len(set(row.tolist())) for row in values], dtype=torch.float64)
    return float((1 / distinct).mean())


# --------------------------------------------------------------------------- figures


def _pyplot():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def accuracy_figure(data: dict):
    """Accuracy against evaluation length, one panel per task, one line per encoding."""
    plt = _pyplot()
    block = _full(data)
    stats, lengths = summary(block), _lengths(block)
    tasks = block["config"]["tasks"]
    fig, axes = plt.subplots(1, len(tasks), figsize=(11.0, 3.8), sharey=True,
                             constrained_layout=True)  # fmt: skip
    markers = "os^vDPXh"
    for ax, task in zip(axes, tasks, strict=True):
        for i, encoding in enumerate(ENCODINGS):
            s = [stats[(task, encoding, n, "none")] for n in lengths]
            mean = [x["mean"] for x in s]
            low = [x["mean"] - x["min"] for x in s]
            high = [x["max"] - x["mean"] for x in s]
            ax.errorbar(lengths, mean, yerr=[low, high], marker=markers[i], ms=4, capsize=2,
                        lw=1.2, label=encoding)  # fmt: skip
        ax.axvline(block["config"]["train_len"], color="0.6", ls=":", lw=1)
        ax.set_xscale("log", base=2)
        ax.set_xticks(lengths, [str(n) for n in lengths])
        ax.set_title(task)
        ax.set_xlabel("evaluation length (dotted: L0)")
        ax.grid(alpha=0.3)
    axes[0].set_ylabel("accuracy on the scored tokens")
    axes[0].set_ylim(-0.02, 1.02)
    handles, labels = axes[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="outside lower center", ncols=len(ENCODINGS), fontsize=8)
    return fig


def scaling_figure(data: dict):
    """The rotary encodings past L0: accuracy per method, one panel per (task, encoding)."""
    plt = _pyplot()
    block = _full(data)
    stats = summary(block)
    l0 = block["config"]["train_len"]
    lengths = _lengths(block)
    tasks = block["config"]["tasks"]
    fig, axes = plt.subplots(len(ROTARY), len(tasks), figsize=(11.0, 7.2), sharex=True,
                             sharey=True, constrained_layout=True)  # fmt: skip
    for row, encoding in enumerate(ROTARY):
        for col, task in enumerate(tasks):
            ax = axes[row][col]
            for scaling, name in SCALING_NAMES.items():
                points = [
                    (n, stats[(task, encoding, n, scaling)]["mean"])
                    for n in lengths
                    if (task, encoding, n, scaling) in stats
                ]
                if scaling != "none":
                    points = [(l0, stats[(task, encoding, l0, "none")]["mean"])] + points
                ax.plot(*zip(*points, strict=True), marker="o", ms=3, lw=1.2, label=name)
            ax.set_xscale("log", base=2)
            ax.set_xticks(lengths, [str(n) for n in lengths])
            ax.grid(alpha=0.3)
            ax.set_title(f"{encoding}, {task}", fontsize=9)
            if col == 0:
                ax.set_ylabel("accuracy")
            if row == len(ROTARY) - 1:
                ax.set_xlabel("evaluation length")
    axes[0][-1].legend(fontsize=7, loc="lower left")
    axes[0][0].set_ylim(-0.02, 1.02)
    return fig


def site_figures(data: dict) -> dict:
    """Figure name -> no-argument drawing function, for ``hooks/figures.py``."""
    return {
        "comparison_accuracy.svg": lambda: accuracy_figure(data),
        "comparison_scaling.svg": lambda: scaling_figure(data),
    }
