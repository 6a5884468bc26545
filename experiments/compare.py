"""Train tiny transformers with ten position encodings and measure how far past L0 they work.

Usage::

    python -m experiments.compare --part NAME [--workers N]   # one part of the full run
    python -m experiments.compare --list                      # the parts and what each holds
    python -m experiments.compare --smoke                     # the smoke run (seconds; tested)

The full run is cut into parts (:data:`PARTS`), each a set of jobs small enough for about a
quarter of an hour of two cores. A job is one (task, encoding, base, seed): a model is trained
at lengths up to :math:`L_0` until it meets the convergence criterion (:func:`train.train`) or
the step cap, then evaluated at :math:`L_0, 2L_0, 4L_0, 8L_0`: unscaled, and for the rotary
encodings also with PI, NTK-aware, YaRN and YaRN without its temperature for :math:`s = L/L_0`
(xPos also with blockwise causal attention); a part with ``finetune`` also fine-tunes each RoPE
model briefly at :math:`8L_0` (unscaled, PI, YaRN) and evaluates the result.

Each job is deterministic: seeded generators for the weights, the training batches and the test
sets; one thread; ``torch.use_deterministic_algorithms(True)``. Jobs run in ``--workers``
processes of one thread each, so the rows do not depend on how many workers ran them, and a part
can be re-run alone: it replaces only its own block of ``experiments/comparison.json.gz`` (under a
file lock, so parts may run at once), with its wall and CPU time and the load average.
"""

from __future__ import annotations

import argparse
import copy
import dataclasses
import fcntl
import gzip
import json
import multiprocessing
import os
import platform
import resource
import tempfile
import time
import zlib
from dataclasses import dataclass
from pathlib import Path

import torch

from .model import ENCODINGS, ROTARY, SCALINGS
from .train import Config, build_model, evaluate, finetune, train

# gzip-compressed (a tenth of the size): hours of training, measured once, not remade per build
DATA = Path(__file__).with_name("comparison.json.gz")
SCHEMA_VERSION = 2
FINETUNE_METHODS = ("none", "pi", "yarn")
KAZEMNEJAD = ("sinusoidal", "t5", "alibi", "rope", "nope")  # the five of Kazemnejad et al.
BASES = (10.0, 100.0, 1000.0, 100000.0, 1000000.0)  # the sweep; 10000 is every other part's

CONFIGS = {
    "full": Config(
        "full", train_len=32, dim=64, heads=4, layers=2, batch=32, lr=3e-3, warmup=100,
        max_steps=3000, check_every=100, target=0.95, val_batch=256, eval_batch=256,
    ),
    "smoke": Config(
        "smoke", train_len=16, dim=32, heads=2, layers=1, batch=8, lr=3e-3, warmup=2,
        max_steps=12, check_every=6, target=0.95, val_batch=8, eval_batch=8,
        eval_lengths=(16, 20, 32, 64), t5_buckets=16, fire_width=8, finetune_max_steps=4,
        finetune_check_every=2, finetune_multiple=2, finetune_batch=2,
    ),
}  # fmt: skip


@dataclass(frozen=True)
class Part:
    """A set of jobs of the full run that is run, timed and stored as one block."""

    name: str
    task: str
    encodings: tuple[str, ...]
    seeds: tuple[int, ...]
    bases: tuple[float, ...] = (10000.0,)
    finetune: bool = False  # fine-tune the RoPE models at finetune_multiple * L0
    temperature: bool = False  # also evaluate NoPE with the log-length query scale past L0

    def jobs(self) -> list[tuple[str, float, int]]:
        """``(encoding, base, seed)`` of every job, the longest (rotary) first."""
        jobs = [(e, b, s) for e in self.encodings for b in self.bases for s in self.seeds]
        return sorted(jobs, key=lambda job: job[0] not in ROTARY)


def _parts() -> dict[str, Part]:
    ten = tuple(range(10))
    halves = {"a": ten[:5], "b": ten[5:]}
    parts = []
    for task in ("passkey", "copy"):
        for half, seeds in halves.items():
            rotary = Part(f"{task}-rotary-{half}", task, ROTARY, seeds, finetune=True)
            rest = tuple(e for e in ENCODINGS if e not in ROTARY)
            parts += [rotary, Part(f"{task}-other-{half}", task, rest, seeds)]
    for half, seeds in halves.items():
        parts.append(Part(f"reverse-{half}", "reverse", KAZEMNEJAD, seeds))
        parts.append(Part(f"base-{half}", "passkey", ("rope",), seeds, bases=BASES))
    for task in ("passkey", "copy"):  # the NoPE models of the parts above, retrained (same seeds)
        parts.append(Part(f"{task}-nope-temperature", task, ("nope",), ten, temperature=True))
    return {part.name: part for part in parts}


PARTS = _parts()
SMOKE = Part("smoke", "", ENCODINGS, (0,), finetune=True, temperature=True)  # every task


def run_job(
    config: Config, task: str, encoding: str, base: float, seed: int, tune: bool,
    temperature: bool = False,
) -> dict:  # fmt: skip
    """Train one model and evaluate it everywhere: ``{"job": ..., "rows": [...]}``."""
    torch.set_num_threads(1)
    torch.use_deterministic_algorithms(True)
    start, cpu = time.perf_counter(), time.process_time()
    model = build_model(config, encoding, seed, base)
    job = {"task": task, "encoding": encoding, "base": base, "seed": seed}
    job.update(train(model, config, task, seed))
    job["train_s"] = round(time.perf_counter() - start, 3)
    job["train_cpu_s"] = round(time.process_time() - cpu, 3)
    rows = _evaluate_all(model, config, job, finetuned=None, temperature=temperature)
    if tune and encoding == "rope":
        for method in FINETUNE_METHODS:
            tuned = copy.deepcopy(model)
            t0 = time.process_time()
            result = finetune(tuned, config, task, seed, method)
            result["cpu_s"] = round(time.process_time() - t0, 3)
            job[f"finetune_{method}"] = result
            rows += _evaluate_all(tuned, config, job, finetuned=method)
    job["wall_s"] = round(time.perf_counter() - start, 3)
    job["cpu_s"] = round(time.process_time() - cpu, 3)
    return {"job": job, "rows": rows}


def _evaluate_all(
    model, config: Config, job: dict, finetuned: str | None, temperature: bool = False
) -> list[dict]:
    """Rows at every evaluation length, for every method that applies to the encoding."""
    rows = []
    for length in config.eval_lengths:
        factor = length / config.train_len  # s = L / L0 (1.25 at 40 for L0 = 32)
        if finetuned is not None:  # deployed as fine-tuned: its method at its factor, everywhere
            plan = [(finetuned, float(config.finetune_multiple))]
        else:
            methods = SCALINGS if job["encoding"] in ROTARY and factor > 1 else ("none",)
            plan = [(m, factor) for m in methods]
            if job["encoding"] == "xpos":
                plan.append(("blockwise", 1.0))
            if temperature and job["encoding"] == "nope" and factor > 1:
                plan.append(("logscale", 1.0))
        for method, factor in plan:
            counts = evaluate(model, config, job["task"], job["seed"], length, method, factor)
            key = {k: job[k] for k in ("task", "encoding", "base", "seed")}
            rows.append({**key, "eval_len": length, "method": method, "finetune": finetuned,
                         **counts})  # fmt: skip
    return rows


def _job(args: tuple) -> dict:
    return run_job(*args)


def _job_args(config: Config, part: Part) -> list[tuple]:
    if part is SMOKE:
        from .tasks import TASKS

        return [(config, t, e, 10000.0, 0, True, True) for t in TASKS for e in ENCODINGS]
    return [(config, part.task, e, b, s, part.finetune, part.temperature)
            for e, b, s in part.jobs()]  # fmt: skip


def run(config: Config, part: Part, workers: int = 1) -> dict:
    """Every job of ``part``; the block written to the data file."""
    args = _job_args(config, part)
    load_before = os.getloadavg()
    start, children = time.perf_counter(), resource.getrusage(resource.RUSAGE_CHILDREN)
    own_before = resource.getrusage(resource.RUSAGE_SELF)
    if workers == 1:
        results = [_job(a) for a in args]
    else:
        pool = multiprocessing.get_context("spawn").Pool(workers)
        results = pool.map(_job, args, chunksize=1)
        pool.close()
        pool.join()  # reaped: their CPU time is in RUSAGE_CHILDREN now
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    own = resource.getrusage(resource.RUSAGE_SELF)
    children_cpu = (after.ru_utime + after.ru_stime) - (children.ru_utime + children.ru_stime)
    key = ("task", "encoding", "base", "seed")
    jobs = sorted((r["job"] for r in results), key=lambda j: tuple(j[k] for k in key))
    rows = [row for r in results for row in r["rows"]]
    rows.sort(key=lambda r: (*(r[k] for k in key), r["finetune"] or "", r["eval_len"], r["method"]))
    return {
        "part": dataclasses.asdict(part) if part is not SMOKE else {"name": "smoke"},
        "config": dataclasses.asdict(config),
        "code": os.environ.get("EXPERIMENT_COMMIT"),  # the commit the part ran (set by the runner)
        "workers": workers,
        "nice": os.nice(0),
        "wall_s": round(wall, 1),
        "cpu_s": round(
            children_cpu
            + (own.ru_utime + own.ru_stime)
            - (own_before.ru_utime + own_before.ru_stime),
            1,
        ),  # fmt: skip
        "loadavg_before": [round(x, 2) for x in load_before],
        "loadavg_after": [round(x, 2) for x in os.getloadavg()],
        "started": time.strftime("%Y-%m-%d %H:%M", time.gmtime(time.time() - wall)),
        "machine": {
            "cpu_count": os.cpu_count(),
            "processor": platform.processor() or platform.machine(),
            "torch": torch.__version__,
            "cpu_capability": torch.backends.cpu.get_cpu_capability(),
        },
        "jobs": jobs,
        "rows": rows,
    }


def load(path: Path = DATA) -> dict:
    """The data file: ``{"schema": 2, "smoke": block, "parts": {name: block}}``."""
    return json.loads(gzip.decompress(path.read_bytes()).decode("utf-8"))


def _dump(data: dict) -> str:
    # One job or row per line: a re-run's diff shows which numbers moved.
    def block_lines(block: dict, indent: str) -> list[str]:
        lines = [indent + "{"]
        items = list(block.items())
        for i, (key, value) in enumerate(items):
            comma = "," if i < len(items) - 1 else ""
            if key in ("jobs", "rows"):
                body = ",\n".join(f"{indent}    {json.dumps(v)}" for v in value)
                lines += [f'{indent}  "{key}": [', body, f"{indent}  ]{comma}"]
            else:
                lines.append(f'{indent}  "{key}": {json.dumps(value)}{comma}')
        return lines + [indent + "}"]

    lines = ["{", f'  "schema": {SCHEMA_VERSION},']
    smoke = block_lines(data["smoke"], "  ") if data.get("smoke") else ["  null"]
    lines += ['  "smoke":', *smoke[:-1], smoke[-1] + ",", '  "parts": {']
    names = sorted(data["parts"])
    for i, name in enumerate(names):
        part = block_lines(data["parts"][name], "    ")
        part[0] = f'    "{name}": {{'
        lines += part[:-1] + [part[-1] + ("," if i < len(names) - 1 else "")]
    return "\n".join([*lines, "  }", "}", ""])


def write(block: dict, path: Path = DATA) -> None:
    """Replace one part's block (or the smoke block) in the data file, keeping the others."""
    # The lock lives outside the tree (a file beside the data would show up in git status).
    lock_path = (
        Path(tempfile.gettempdir())
        / f"posenc-comparison-{zlib.crc32(str(path.resolve()).encode())}.lock"
    )
    with open(lock_path, "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # parts may finish at once
        data = load(path) if path.exists() else {"schema": SCHEMA_VERSION, "parts": {}}
        if block["part"]["name"] == "smoke":
            data["smoke"] = block
        else:
            data["parts"][block["part"]["name"]] = block
        tmp = path.with_name(path.name + ".tmp")
        # mtime 0: the same data gives the same bytes (a re-run that changes nothing shows no diff)
        tmp.write_bytes(gzip.compress(_dump(data).encode("utf-8"), 9, mtime=0))
        tmp.replace(path)


def main(argv: list[str] | None = None) -> None:
    """The command line: run one part (or the smoke run) and write its block of the data file."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    what = parser.add_mutually_exclusive_group(required=True)
    what.add_argument("--part", choices=sorted(PARTS))
    what.add_argument("--smoke", action="store_true")
    what.add_argument("--list", action="store_true")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--out", type=Path, default=DATA)
    args = parser.parse_args(argv)
    if args.list:
        for part in PARTS.values():
            print(f"{part.name:18} {part.task:8} {len(part.jobs()):3} jobs  {part.encodings}")
        return
    torch.set_num_threads(1)
    part = SMOKE if args.smoke else PARTS[args.part]
    config = CONFIGS["smoke" if args.smoke else "full"]
    block = run(config, part, workers=args.workers)
    write(block, args.out)
    print(f"{part.name}: {len(block['rows'])} rows in {block['wall_s']} s -> {args.out}")


if __name__ == "__main__":
    main()
