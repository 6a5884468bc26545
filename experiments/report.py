"""Tables and computed sentences of the comparison page, from ``comparison.json.gz``.

The page (``docs/comparison.md``) imports this module in ``markdown-exec`` blocks; the figure hook
(``hooks/figures.py``) renders :func:`site_figures` (drawn by :mod:`experiments.figures`).
Nothing here trains a model: every score is read from the committed data file.

Scores are fractions per seed: ``exact`` (whole answers right: for passkey the whole key, for copy
and reverse the whole sequence), ``first`` (the first answer token right: for passkey, the model
found the marker) and ``token`` (scored tokens right, the per-digit score). Means over seeds come
with 95 % t intervals (:mod:`experiments.stats`); extrapolation is scored only on the seeds whose
run met the convergence criterion at L0, and every table says how many that is.
"""

from __future__ import annotations

import dataclasses
import json
import math
import statistics
from collections import defaultdict

from .compare import CONFIGS, FINETUNE_METHODS, KAZEMNEJAD, PARTS, load
from .model import ENCODINGS, ROTARY, SCALINGS
from .stats import Interval, interval, paired

__all__ = ["load", "Results", "site_figures", "ENCODINGS", "KAZEMNEJAD", "PARTS"]

BASE = 10000.0
METHOD_NAMES = {
    "none": "unscaled",
    "pi": "PI",
    "ntk": "NTK-aware",
    "yarn": "YaRN",
    "yarn-t1": "YaRN, no temperature",
    "blockwise": "blockwise attention",
}
NAMES = {
    "sinusoidal": "sinusoidal", "learned": "learned", "t5": "T5", "alibi": "ALiBi",
    "kerple": "KERPLE", "fire": "FIRE", "rope": "RoPE", "nope": "NoPE", "p-rope": "p-RoPE",
    "xpos": "xPos",
}  # fmt: skip


def _fraction(row: dict, metric: str) -> float:
    if metric == "exact":
        return row["exact"] / row["sequences"]
    if metric == "first":
        return row["first"] / row["sequences"]
    if metric == "token":
        return row["correct"] / row["scored"]
    raise ValueError(f"metric must be 'exact', 'first' or 'token', got {metric!r}")


class Results:
    """The full run's parts, indexed: jobs by ``(task, encoding, base, seed)``, rows likewise."""

    def __init__(self, data: dict) -> None:
        self.parts = data["parts"]
        self.missing = [name for name in PARTS if name not in self.parts]
        blocks = list(self.parts.values())
        # With no part stored yet, the script's configuration (as the data file would hold it).
        fallback = json.loads(json.dumps(dataclasses.asdict(CONFIGS["full"])))
        self.config = blocks[0]["config"] if blocks else fallback
        self.jobs: dict[tuple, dict] = {}
        self.rows: dict[tuple, dict] = {}
        for block in blocks:
            for job in block["jobs"]:
                self.jobs[job["task"], job["encoding"], job["base"], job["seed"]] = job
            for row in block["rows"]:
                key = (row["task"], row["encoding"], row["base"], row["finetune"], row["eval_len"],
                       row["method"], row["seed"])  # fmt: skip
                self.rows[key] = row

    @property
    def l0(self) -> int:
        """The training length L0."""
        return self.config["train_len"]

    def seeds(self, task: str, encoding: str, base: float = BASE) -> list[int]:
        """Every seed stored for a run."""
        return sorted(s for (t, e, b, s) in self.jobs if (t, e, b) == (task, encoding, base))

    def converged(self, task: str, encoding: str, base: float = BASE) -> list[int]:
        """The seeds whose run met the convergence criterion at L0."""
        seeds = self.seeds(task, encoding, base)
        return [s for s in seeds if self.jobs[task, encoding, base, s]["converged"]]

    def scores(
        self, task: str, encoding: str, length: int, method: str = "none", *,
        metric: str = "exact", base: float = BASE, finetune: str | None = None,
        converged_only: bool = True,
    ) -> dict[int, float]:  # fmt: skip
        """``{seed: score}`` of one cell, on the seeds converged at L0 (or all)."""
        seeds = self.converged(task, encoding, base) if converged_only else self.seeds(
            task, encoding, base)  # fmt: skip
        out = {}
        for seed in seeds:  # a fine-tuned row counts whether the fine-tune converged or not
            row = self.rows.get((task, encoding, base, finetune, length, method, seed))
            if row is not None:
                out[seed] = _fraction(row, metric)
        return out

    def cell(self, *args, **kwargs) -> Interval:
        """Mean and 95 % interval of one cell over its seeds (:meth:`scores`)."""
        return interval(list(self.scores(*args, **kwargs).values()))

    def lengths(self) -> list[int]:
        """The evaluation lengths, L0 first."""
        return list(self.config["eval_lengths"])

    def has(self, task: str, encoding: str, base: float = BASE) -> bool:
        """Whether any run of ``(task, encoding, base)`` is stored."""
        return bool(self.seeds(task, encoding, base))

    def waiting(self, *names: str) -> str:
        """A note naming the parts (of ``names``) not in the data file, or ``""``."""
        left = [n for n in names if n in self.missing]
        if not left:
            return ""
        return (f"*Not run yet: part{'s' if len(left) > 1 else ''} {', '.join(left)} "
                "(see [Reproducing it](#comparison-reproduce)); the numbers below use the parts "
                "that are in the data file.*")  # fmt: skip


# --------------------------------------------------------------------------- formatting


def fmt(cell: Interval, digits: int = 2) -> str:
    """``0.93 <small>[0.90, 0.96]</small>``; ``-`` where there is no seed."""
    if cell.n == 0:
        return "-"
    if cell.n == 1 or math.isclose(cell.low, cell.high):
        return f"{cell.mean:.{digits}f}"
    low, high = max(cell.low, -1.0), min(cell.high, 1.0)
    return f"{cell.mean:.{digits}f} <small>[{low:.{digits}f}, {high:.{digits}f}]</small>"


def fmt_diff(cell: Interval) -> str:
    """A paired difference: ``+0.21 [0.12, 0.30]``, bold where the interval excludes zero."""
    if cell.n < 2:
        return "-"
    text = f"{cell.mean:+.2f} <small>[{cell.low:+.2f}, {cell.high:+.2f}]</small>"
    return f"**{text}**" if cell.excludes_zero() else text


def length_name(n: int, l0: int) -> str:
    """``"64 (2 L0)"``, ``"40 (1.25 L0)"``, ``"32 (L0)"``."""
    if n == l0:
        return f"{n} (L0)"
    return f"{n} ({n / l0:g} L0)"


def _table(head: list[str], rows: list[list[str]], right_from: int = 1) -> str:
    if not rows:
        return "*No converged run of this yet.*"
    align = ["---"] * right_from + ["---:"] * (len(head) - right_from)
    lines = ["| " + " | ".join(head) + " |", "|" + "|".join(align) + "|"]
    lines += ["| " + " | ".join(r) + " |" for r in rows]
    return "\n".join(lines)


# --------------------------------------------------------------------------- the setting


def setting(r: Results) -> str:
    """One paragraph: the model, the training, the stopping rule and the evaluation."""
    c = r.config
    lengths = ", ".join(map(str, c["eval_lengths"]))
    return (
        f"Each model has {c['layers']} layers of width {c['dim']} with {c['heads']} heads "
        f"(head width {c['dim'] // c['heads']}), a 4x MLP and pre-norm. It is trained with Adam "
        f"(learning rate {c['lr']:g} after {c['warmup']} steps of linear warm-up, gradient norm "
        f"clipped at 1) on batches of {c['batch']} fresh sequences, each batch of one length drawn "
        f"from {c['train_len'] // 2} to {c['train_len']} in steps of 4, so L0 = {c['train_len']}. "
        f"Every {c['check_every']} steps it is scored on {c['val_batch']} validation sequences of "
        f"length L0, and training stops as soon as at least {c['target']:.0%} of them are answered "
        f"exactly; a run that has not got there after {c['max_steps']} steps has not converged. "
        f"It is then tested on {c['eval_batch']} fixed sequences of each length {lengths}."
    )


def finetune_setting(r: Results) -> str:
    """The fine-tune's settings, read from the config."""
    c = r.config
    s = c["finetune_multiple"]
    return (
        f"The fine-tune runs at {s} L0 = {s * c['train_len']} tokens with s = {s}: fresh Adam at "
        f"a constant learning rate of {c['finetune_lr']:g} ({c['finetune_lr'] / c['lr']:.2g} of "
        f"pre-training's), batches of {c['finetune_batch']}, until {c['target']:.0%} of "
        f"{c['val_batch']} validation sequences at that length are answered exactly (looked at "
        f"every {c['finetune_check_every']} steps) or for at most {c['finetune_max_steps']} steps. "
        f"The fine-tuned model is then scored at every length with its method at s = {s}, as a "
        "model deployed with a static factor is:"
    )


def convergence_table(r: Results, task: str, encodings=ENCODINGS) -> str:
    """Per encoding: converged seeds, and the steps it took (median and range)."""
    rows = []
    for e in encodings:
        seeds = r.seeds(task, e)
        if not seeds:
            continue
        steps = [r.jobs[task, e, BASE, s]["steps"] for s in r.converged(task, e)]
        spread = f"{statistics.median(steps):g} ({min(steps)}-{max(steps)})" if steps else "-"
        rows.append([NAMES[e], f"{len(steps)} of {len(seeds)}", spread])
    return _table(["encoding", "converged", "steps to converge: median (range)"], rows)


def convergence_counts(r: Results) -> tuple[int, int]:
    """``(converged, runs)`` over every run of the full configuration at base 10000."""
    runs = [job for (t, e, b, s), job in r.jobs.items() if b == BASE]
    return sum(job["converged"] for job in runs), len(runs)


def accuracy_table(r: Results, task: str, lengths: list[int], metric: str = "exact",
                   encodings=ENCODINGS) -> str:  # fmt: skip
    """Mean [95 % interval] over converged seeds, one column per length, unscaled."""
    head = ["encoding", "n"] + [length_name(n, r.l0) for n in lengths]
    rows = []
    for e in encodings:
        cells = [r.cell(task, e, n, metric=metric) for n in lengths]
        if all(c.n == 0 for c in cells):
            continue
        rows.append([NAMES[e], str(max(c.n for c in cells))] + [fmt(c) for c in cells])
    return _table(head, rows, right_from=1)


def passkey_metrics_table(r: Results, length: int) -> str:
    """At one length: whole key, first digit and per-digit score of each encoding."""
    head = ["encoding", "n", "whole key", "first digit (found the marker)", "per digit"]
    rows = []
    for e in ENCODINGS:
        cells = [r.cell("passkey", e, length, metric=m) for m in ("exact", "first", "token")]
        if cells[0].n:
            rows.append([NAMES[e], str(cells[0].n)] + [fmt(c) for c in cells])
    return _table(head, rows)


# --------------------------------------------------------------------------- orders


def supported_orders(r: Results, task: str, length: int, encodings=ENCODINGS,
                     metric: str = "exact") -> list[tuple[str, str, Interval]]:  # fmt: skip
    """Every pair ``(a, b, a - b)`` whose paired 95 % interval lies above zero, largest first."""
    scores = {e: r.scores(task, e, length, metric=metric) for e in encodings}
    found = []
    for a in encodings:
        for b in encodings:
            if a != b and scores[a] and scores[b]:
                diff = paired(scores[a], scores[b])
                if diff.excludes_zero() and diff.mean > 0:
                    found.append((a, b, diff))
    return sorted(found, key=lambda item: -item[2].mean)


def order_matrix(r: Results, task: str, length: int, encodings=ENCODINGS,
                 metric: str = "exact", max_columns: int = 6) -> str:  # fmt: skip
    """Row minus column, paired over seeds: mean, bold where the 95 % interval excludes zero.

    Every encoding is a row of each table; the columns are split over as few tables as keep each
    to ``max_columns`` (ten encodings side by side are wider than the page's text column).
    """
    if max_columns < 1:
        raise ValueError(f"max_columns must be a positive int, got {max_columns!r}")
    scores = {e: r.scores(task, e, length, metric=metric) for e in encodings}
    present = [e for e in encodings if scores[e]]
    if not present:
        return _table([], [])
    parts = -(-len(present) // max_columns)  # ceil, and the parts as even as they can be
    bounds = [round(i * len(present) / parts) for i in range(parts + 1)]
    tables = []
    for start, stop in zip(bounds[:-1], bounds[1:], strict=True):
        columns = present[start:stop]
        rows = []
        for a in present:
            cells = []
            for b in columns:
                if a == b:
                    cells.append("")
                    continue
                d = paired(scores[a], scores[b])
                cells.append(f"**{d.mean:+.2f}**" if d.excludes_zero() else f"{d.mean:+.2f}")
            rows.append([NAMES[a]] + cells)
        tables.append(_table(["row − column"] + [NAMES[e] for e in columns], rows))
    return "\n\n".join(tables)


def order_sentence(r: Results, task: str, length: int, encodings=ENCODINGS,
                   metric: str = "exact") -> str:  # fmt: skip
    """The supported orders as a sentence: for each encoding, the ones it beats."""
    beats: dict[str, list[str]] = defaultdict(list)
    for a, b, _ in supported_orders(r, task, length, encodings, metric):
        beats[a].append(NAMES[b])
    if not beats:
        return "no difference between two encodings has a 95 % interval that excludes zero"
    means = {e: r.cell(task, e, length, metric=metric).mean for e in beats}
    parts = [f"{NAMES[a]} above {', '.join(sorted(beats[a]))}"
             for a in sorted(beats, key=lambda e: -means[e])]  # fmt: skip
    return "; ".join(parts)


def observations(r: Results) -> str:
    """What stands out on passkey at the longest length, each claim computed and its interval given.

    Finding the marker against copying the key (first digit minus whole key, paired), and, for
    xPos with blockwise attention, the share of needles a query can still see.
    """
    far = max(r.lengths())
    lines = []
    gaps = []
    for e in ENCODINGS:
        d = paired(r.scores("passkey", e, far, metric="first"), r.scores("passkey", e, far))
        if d.excludes_zero() and d.mean > 0.2:
            gaps.append(f"{NAMES[e]} {fmt_diff(d)}")
    if gaps:
        lines.append(
            "**Finding the marker is not copying the key.** At the longest length some encodings "
            "find the marker (the first digit) far more often than they write the whole key "
            f"(first digit minus whole key, paired): {'; '.join(gaps)}. The digits after the "
            "first are read by their position relative to the marker's, and that is what fails "
            "past L0 for these encodings."
        )
    block = r.cell("passkey", "xpos", far, "blockwise")
    if block.n:
        # The question (QRY, at L - 4) sees from the start of the block before its own; the
        # needle's first digit sits d = 4 .. L - 6 tokens back, uniformly (tasks.passkey_batch).
        size, query = r.l0 // 2, far - 4
        reach = query - (query // size - 1) * size
        share = (reach - 4 + 1) / (far - 9)
        lines.append(
            "**Blockwise attention hides the far needle.** With xPos's blockwise causal attention "
            f"(blocks of {size}) the question at {far} tokens sees {reach} tokens back, so only "
            f"needles within that reach can be read, {share:.2f} of them; it scores {fmt(block)}."
        )
    return "\n\n".join(lines) if lines else "*Not measured yet.*"


# --------------------------------------------------------------------------- extension


def scaling_table(r: Results, task: str, lengths: list[int], metric: str = "exact") -> str:
    """The rotary encodings past L0, with each method; the first column says how many seeds."""
    head = ["encoding", "method", "n"] + [length_name(n, r.l0) for n in lengths]
    rows = []
    for e in ROTARY:
        methods = [*SCALINGS, "blockwise"] if e == "xpos" else list(SCALINGS)
        for m in methods:
            cells = [r.cell(task, e, n, m, metric=metric) for n in lengths]
            if cells[0].n:
                rows.append([NAMES[e], METHOD_NAMES[m], str(cells[0].n)] + [fmt(c) for c in cells])
    return _table(head, rows, right_from=2)


def method_differences(r: Results, task: str, length: int, encoding: str = "rope",
                       metric: str = "exact") -> str:  # fmt: skip
    """Paired differences between the methods on one encoding at one length."""
    pairs = [("yarn", "none"), ("ntk", "none"), ("pi", "none"), ("yarn", "ntk"),
             ("yarn", "yarn-t1")]  # fmt: skip
    rows = []
    for a, b in pairs:
        d = paired(r.scores(task, encoding, length, a, metric=metric),
                   r.scores(task, encoding, length, b, metric=metric))  # fmt: skip
        rows.append([f"{METHOD_NAMES[a]} − {METHOD_NAMES[b]}", str(d.n), fmt_diff(d)])
    return _table(["difference", "n", f"at {length_name(length, r.l0)}"], rows, right_from=1)


def finetune_table(r: Results, task: str, lengths: list[int]) -> str:
    """RoPE fine-tuned at 8 L0 with each method, beside the same method without fine-tuning."""
    head = ["method", "fine-tuned", "converged", "steps to converge"] + [
        length_name(n, r.l0) for n in lengths
    ]
    rows = []
    for m in FINETUNE_METHODS:
        jobs = [r.jobs[task, "rope", BASE, s] for s in r.converged(task, "rope")]
        tuned = [j[f"finetune_{m}"] for j in jobs if f"finetune_{m}" in j]
        steps = [t["steps"] for t in tuned if t["converged"]]
        spread = f"{statistics.median(steps):g} ({min(steps)}-{max(steps)})" if steps else "-"
        # at L0 every method is the identity: the unscaled model's row
        before = [r.cell(task, "rope", n, m if n > r.l0 else "none") for n in lengths]
        after = [r.cell(task, "rope", n, m, finetune=m) for n in lengths]
        rows.append([METHOD_NAMES[m], "no", "", ""] + [fmt(c) for c in before])
        count = f"{len(steps)} of {len(tuned)}"
        rows.append([METHOD_NAMES[m], "yes", count, spread] + [fmt(c) for c in after])
    return _table(head, rows, right_from=2)


def base_table(r: Results, lengths: list[int]) -> str:
    """RoPE on passkey with each base: whole-key score per length, converged seeds."""
    bases = sorted({b for (t, e, b, s) in r.jobs if (t, e) == ("passkey", "rope")})
    head = ["base", "converged", "steps (median)"] + [length_name(n, r.l0) for n in lengths]
    rows = []
    for b in bases:
        seeds, done = r.seeds("passkey", "rope", b), r.converged("passkey", "rope", b)
        steps = [r.jobs["passkey", "rope", b, s]["steps"] for s in done]
        cells = [r.cell("passkey", "rope", n, base=b) for n in lengths]
        median = f"{statistics.median(steps):g}" if steps else "-"
        rows.append([f"{b:g}", f"{len(done)} of {len(seeds)}", median] + [fmt(c) for c in cells])
    return _table(head, rows, right_from=1)


# --------------------------------------------------------------------------- NoPE


def nope_temperature_table(r: Results, task: str, lengths: list[int]) -> str:
    """NoPE as trained and with the log-length query scale, and their paired difference."""
    head = ["", "n"] + [length_name(n, r.l0) for n in lengths]
    plain = [r.cell(task, "nope", n) for n in lengths]
    scaled = [r.cell(task, "nope", n, "logscale") for n in lengths]
    diffs = [paired(r.scores(task, "nope", n, "logscale"), r.scores(task, "nope", n))
             for n in lengths]  # fmt: skip
    rows = [
        ["as trained", str(plain[0].n)] + [fmt(c) for c in plain],
        ["with the log-length scale", str(scaled[0].n)] + [fmt(c) for c in scaled],
        ["difference (paired)", str(diffs[0].n)] + [fmt_diff(d) for d in diffs],
    ]
    return _table(head, rows, right_from=1)


def retrained_rows_agree(data: dict, task: str) -> tuple[int, int]:
    """``(agreeing, compared)``: NoPE's unscaled rows, main parts against the retrained part.

    The temperature part retrains the NoPE models of the main parts from the same seeds; every
    count of every unscaled row should come out the same.
    """
    part = data["parts"].get(f"{task}-nope-temperature")
    if part is None:
        return 0, 0
    key = ("seed", "eval_len", "method", "finetune")
    counts = ("correct", "exact", "first", "scored", "sequences")
    again = {tuple(r[k] for k in key): r for r in part["rows"]}
    agree = compared = 0
    for name, block in data["parts"].items():
        if name == f"{task}-nope-temperature" or block["part"]["task"] != task:
            continue
        for row in block["rows"]:
            other = again.get(tuple(row[k] for k in key))
            if row["encoding"] == "nope" and other is not None:
                compared += 1
                agree += all(row[c] == other[c] for c in counts)
    return agree, compared


# --------------------------------------------------------------------------- timing


def parts_table(data: dict) -> str:
    """One row per part: what it holds, its wall and CPU time, workers, niceness and load."""
    rows = []
    for name, part in PARTS.items():
        block = data["parts"].get(name)
        what = f"{part.task}: {', '.join(NAMES[e] for e in part.encodings)}"
        if part.bases != (BASE,):
            what += f"; bases {', '.join(f'{b:g}' for b in part.bases)}"
        seeds = f"{part.seeds[0]}-{part.seeds[-1]}"
        if block is None:
            rows.append([name, what, seeds, "not run", "", "", ""])
            continue
        load = " / ".join(f"{x:g}" for x in block["loadavg_before"] + block["loadavg_after"][:1])
        rows.append([
            name, what, seeds, f"{block['wall_s'] / 60:.1f}", f"{block['cpu_s'] / 60:.1f}",
            f"{block['workers']}, nice {block['nice']}", load,
        ])  # fmt: skip
    head = ["part", "jobs", "seeds", "wall (min)", "CPU (min)", "workers", "load before / after"]
    return _table(head, rows, right_from=3)


def timing(data: dict) -> dict:
    """Totals over the stored parts: wall and CPU seconds, jobs, machine."""
    blocks = list(data["parts"].values())
    return {
        "parts": len(blocks),
        "wall_s": sum(b["wall_s"] for b in blocks),
        "cpu_s": sum(b["cpu_s"] for b in blocks),
        "jobs": sum(len(b["jobs"]) for b in blocks),
        "longest_wall_s": max((b["wall_s"] for b in blocks), default=0.0),
        "longest_cpu_s": max((b["cpu_s"] for b in blocks), default=0.0),
        "cpu_count": blocks[0]["machine"]["cpu_count"] if blocks else None,
        "nice": sorted({b["nice"] for b in blocks}),
        "commits": sorted({b["code"] for b in blocks if b.get("code")}),
    }


def timing_note(data: dict) -> str:
    """What the stored parts took, on what machine, and how the CPU was shared."""
    t = timing(data)
    if not t["parts"]:
        return "No part of the full run is stored yet."
    share = t["cpu_s"] / t["wall_s"] if t["wall_s"] else 0.0
    nice = ", ".join(str(n) for n in t["nice"])
    missing = [name for name in PARTS if name not in data["parts"]]
    workers = sorted({b["workers"] for b in data["parts"].values()})
    text = (
        f"The {t['parts']} stored parts ({t['jobs']} jobs) took {t['wall_s'] / 3600:.1f} hours of "
        f"wall time and {t['cpu_s'] / 3600:.1f} CPU-hours on a {t['cpu_count']}-core machine, "
        f"with {' or '.join(map(str, workers))} worker processes at niceness {nice}. The machine "
        f"was shared with other work throughout, and the parts got {share:.2f} of a core on "
        "average (CPU time over wall time): on an idle machine with two cores, the CPU column is "
        f"what a part needs (at most {t['longest_cpu_s'] / 60:.0f} CPU-minutes, about "
        f"{t['longest_cpu_s'] / 120:.0f} minutes of the two cores). The niceness decided little: "
        "Linux's scheduler first shares the CPU equally between autogroups (one per login "
        "session) and applies niceness only among the processes of one session, so the parts' "
        "niceness ranked them below the other work of the session that started them, and the "
        "other sessions' work shared the cores with them as equals. The load averages in the "
        "table count those other processes."
    )
    if missing:
        text += (f" Not run yet: {', '.join(missing)}; each can be run alone with the command "
                 "above, and adds its block to the data file.")  # fmt: skip
    return text


def site_figures(data: dict) -> dict:
    """Figure name -> no-argument drawing function, for ``hooks/figures.py``."""
    from . import figures

    return figures.site_figures(Results(data))
