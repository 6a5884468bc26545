"""Train tiny transformers with eight position encodings and measure how far past L0 they work.

Usage::

    python -m experiments.compare [--config full|smoke] [--workers N] [--out PATH]

For every task, encoding and seed a model is trained at lengths up to :math:`L_0` and evaluated
at :math:`L_0, 2L_0, 4L_0, 8L_0`: unscaled, and for the rotary encodings also with PI, NTK-aware
and YaRN frequencies for :math:`s = L / L_0`. Each job is deterministic: seeded generators for
the weights, the training batches and the evaluation sets; one thread;
``torch.use_deterministic_algorithms(True)``. Jobs run in ``--workers`` processes of one thread
each, so the rows do not depend on how many workers ran them.

``--config full`` (about 11 minutes on two idle cores; the data file records its timings)
rewrites the ``full`` rows of ``experiments/comparison.json``; ``--config smoke`` (seconds)
rewrites the ``smoke`` rows, which ``tests/test_comparison.py`` re-runs and compares. The file
keeps both.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import multiprocessing
import os
import platform
import time
import zlib
from dataclasses import dataclass
from pathlib import Path

import torch
import torch.nn.functional as F

from .model import ENCODINGS, ROTARY, SCALINGS, TinyTransformer
from .tasks import MIN_LENGTH, TASKS, VOCAB, make_batch

DATA = Path(__file__).with_name("comparison.json")
SCHEMA_VERSION = 1


@dataclass(frozen=True)
class Config:
    """One experiment: the model, the training and the evaluation, all fixed by these values."""

    name: str
    train_len: int  # L0: the longest training sequence
    dim: int
    heads: int
    layers: int
    steps: int
    batch: int
    lr: float
    eval_batch: int
    seeds: tuple[int, ...]
    tasks: tuple[str, ...] = tuple(TASKS)
    encodings: tuple[str, ...] = ENCODINGS
    eval_multiples: tuple[int, ...] = (1, 2, 4, 8)
    base: float = 10000.0
    p_fraction: float = 0.25  # Gemma 4's global layers
    xpos_scale_base_ratio: float = 0.5  # B = L0 / 2 (torchscale's 512 hardly decays at L0 = 32)
    t5_buckets: int = 32  # causal buckets, max_distance = L0: training reaches the last one
    dtype: str = "float32"

    def train_lengths(self) -> list[int]:
        """Training lengths, one drawn per step: multiples of 4 from L0/2 to L0."""
        return list(range(self.train_len // 2, self.train_len + 1, 4))


CONFIGS = {
    "full": Config(
        "full", train_len=32, dim=64, heads=4, layers=2, steps=600, batch=32, lr=3e-3,
        eval_batch=64, seeds=(0, 1, 2),
    ),
    "smoke": Config(
        "smoke", train_len=16, dim=32, heads=2, layers=1, steps=12, batch=8, lr=3e-3,
        eval_batch=8, seeds=(0,), eval_multiples=(1, 2), t5_buckets=16,
    ),
}  # fmt: skip


def _seed(*parts: object) -> int:
    """A stable 31-bit seed from names and numbers (``hash`` is salted per process)."""
    return zlib.crc32(repr(parts).encode()) & 0x7FFFFFFF


def build_model(config: Config, encoding: str, seed: int) -> TinyTransformer:
    """The model of one job, its weights drawn from ``seed``."""
    torch.manual_seed(_seed("weights", encoding, seed))
    return TinyTransformer(
        encoding,
        vocab=VOCAB,
        dim=config.dim,
        heads=config.heads,
        layers=config.layers,
        train_len=config.train_len,
        base=config.base,
        p_fraction=config.p_fraction,
        xpos_scale_base=config.xpos_scale_base_ratio * config.train_len,
        t5_buckets=config.t5_buckets,
    ).to(getattr(torch, config.dtype))


def train(model: TinyTransformer, config: Config, task: str, seed: int) -> float:
    """Adam on fresh batches; returns the mean loss of the last 10% of the steps."""
    g = torch.Generator().manual_seed(_seed("train", task, seed))
    lengths = [n for n in config.train_lengths() if n >= MIN_LENGTH[task]]
    optimizer = torch.optim.Adam(model.parameters(), lr=config.lr)
    warmup = max(1, config.steps // 10)
    schedule = torch.optim.lr_scheduler.LambdaLR(
        optimizer, lambda step: min(1.0, (step + 1) / warmup)
    )
    tail, losses = max(1, config.steps // 10), []
    model.train()
    for _ in range(config.steps):
        length = lengths[int(torch.randint(len(lengths), (1,), generator=g))]
        batch = make_batch(task, config.batch, length, g)
        logits = model(batch.inputs)
        loss = F.cross_entropy(logits[batch.mask], batch.targets[batch.mask])
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        schedule.step()
        losses.append(float(loss.detach()))
    return sum(losses[-tail:]) / tail


@torch.no_grad()
def evaluate(
    model: TinyTransformer, config: Config, task: str, seed: int, length: int, scaling: str
) -> tuple[int, int]:
    """``(correct, scored)`` next-token predictions on a fixed evaluation set."""
    g = torch.Generator().manual_seed(_seed("eval", task, seed, length))
    batch = make_batch(task, config.eval_batch, length, g)
    model.eval()
    predicted = model(batch.inputs, scaling=scaling).argmax(-1)
    correct = (predicted == batch.targets) & batch.mask
    return int(correct.sum()), int(batch.mask.sum())


def run_job(config: Config, task: str, encoding: str, seed: int) -> list[dict]:
    """Train one model and evaluate it everywhere; the rows of one (task, encoding, seed)."""
    torch.set_num_threads(1)
    torch.use_deterministic_algorithms(True)
    start, cpu = time.perf_counter(), time.process_time()
    model = build_model(config, encoding, seed)
    final_loss = train(model, config, task, seed)
    train_s, train_cpu_s = time.perf_counter() - start, time.process_time() - cpu
    rows = []
    for multiple in config.eval_multiples:
        length = multiple * config.train_len
        scalings = SCALINGS if encoding in ROTARY and multiple > 1 else ("none",)
        for scaling in scalings:
            t0 = time.perf_counter()
            correct, scored = evaluate(model, config, task, seed, length, scaling)
            rows.append(
                {
                    "config": config.name,
                    "task": task,
                    "encoding": encoding,
                    "seed": seed,
                    "eval_len": length,
                    "scaling": scaling,
                    "correct": correct,
                    "scored": scored,
                    "accuracy": correct / scored,
                    "final_loss": final_loss,
                    "train_s": round(train_s, 3),
                    "train_cpu_s": round(train_cpu_s, 3),
                    "eval_s": round(time.perf_counter() - t0, 3),
                }
            )
    return rows


def _job(args: tuple[Config, str, str, int]) -> list[dict]:
    return run_job(*args)


def run(config: Config, workers: int = 1) -> dict:
    """Every job of ``config``; the result block written to the data file."""
    jobs = [(config, t, e, s) for t in config.tasks for e in config.encodings for s in config.seeds]
    # Longest first (rotary jobs evaluate four times more), so that workers finish together.
    jobs.sort(key=lambda job: job[2] not in ROTARY)
    load_before = os.getloadavg()
    start = time.perf_counter()
    if workers == 1:
        results = [_job(job) for job in jobs]
    else:
        with multiprocessing.get_context("spawn").Pool(workers) as pool:
            results = pool.map(_job, jobs, chunksize=1)
    wall = time.perf_counter() - start
    rows = [row for job_rows in results for row in job_rows]
    rows.sort(key=lambda r: (r["task"], r["encoding"], r["seed"], r["eval_len"], r["scaling"]))
    return {
        "config": dataclasses.asdict(config),
        "workers": workers,
        "wall_s": round(wall, 1),
        "loadavg_before": [round(x, 2) for x in load_before],
        "loadavg_after": [round(x, 2) for x in os.getloadavg()],
        "machine": {
            "cpu_count": os.cpu_count(),
            "processor": platform.processor() or platform.machine(),
            "torch": torch.__version__,
            "cpu_capability": torch.backends.cpu.get_cpu_capability(),
        },
        "rows": rows,
    }


def load(path: Path = DATA) -> dict:
    """The data file: ``{"schema": 1, "runs": {"full": {...}, "smoke": {...}}}``."""
    return json.loads(path.read_text(encoding="utf-8"))


def write(block: dict, path: Path = DATA) -> None:
    """Replace one configuration's block in the data file, keeping the others."""
    data = load(path) if path.exists() else {"schema": SCHEMA_VERSION, "runs": {}}
    data["runs"][block["config"]["name"]] = block
    runs = data["runs"]
    # One row per line: diffs of a re-run show which numbers moved.
    lines = ["{", f'  "schema": {SCHEMA_VERSION},', '  "runs": {']
    for i, (name, run_block) in enumerate(sorted(runs.items())):
        head = {k: v for k, v in run_block.items() if k != "rows"}
        lines.append(f'    "{name}": {{')
        for key, value in head.items():
            lines.append(f'      "{key}": {json.dumps(value)},')
        lines.append('      "rows": [')
        body = [f"        {json.dumps(row)}" for row in run_block["rows"]]
        lines.append(",\n".join(body))
        lines.append("      ]")
        lines.append("    }" + ("," if i < len(runs) - 1 else ""))
    lines += ["  }", "}", ""]
    path.write_text("\n".join(lines), encoding="utf-8")


def main(argv: list[str] | None = None) -> None:
    """The command line: run one configuration and write its block of the data file."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--config", choices=sorted(CONFIGS), default="full")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--out", type=Path, default=DATA)
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    block = run(CONFIGS[args.config], workers=args.workers)
    write(block, args.out)
    print(f"{args.config}: {len(block['rows'])} rows in {block['wall_s']} s -> {args.out}")


if __name__ == "__main__":
    main()
