"""Run the benchmarks and write the results file.

Usage::

    python -m benchmarks.run [--quick] [--out PATH] [--only NAME ...] [--threads N] [--repeats R]
    python -m benchmarks.run --only NAME ... --merge

``--quick`` runs tiny sizes with few repeats (seconds; for the tests, not for publishing).
Without ``--out`` a complete run (every family, not ``--quick``) writes
``benchmarks/results.json``, the file the site is built from; a quick or partial (``--only``) run
only prints its summary unless given a path, so that it never replaces the published results
with an incomplete file. ``--merge`` replaces only the families run in the published file, each
with its own record of when, where and from which commit it was measured (``"run"`` in the
family): the other families keep theirs.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import torch

from . import accuracy, import_cost, rope, sinusoidal, verdicts
from .harness import gpu_info, library_versions, machine_info, set_threads

RESULTS = Path(__file__).with_name("results.json")
SCHEMA_VERSION = 1
FAMILIES = {
    "sinusoidal": sinusoidal.run,
    "accuracy": accuracy.run,
    "rope": rope.run,
    "import": import_cost.run,
    "verdicts": verdicts.run,  # the conformance kit's verdict times (issue 39)
}
COMMAND = "python -m benchmarks.run"
# Why one torch thread by default: the comparisons are ratios between implementations run with
# the same thread count, and on a small machine shared with other jobs every multi-threaded
# parallel region waits for a core that another process holds. Measured on this project's
# 2-core machine under load: the same 2048 x 512 table took 2.3 ms with one thread and
# 15-240 ms with two. Pass --threads N to measure multi-threaded behaviour on a quiet machine.


def _git_state() -> dict:
    """The commit measured, and which package files differed from it (work in progress)."""
    root = Path(__file__).resolve().parents[1]

    def git(*args: str) -> str:
        done = subprocess.run(["git", *args], cwd=root, capture_output=True, text=True)
        return done.stdout.rstrip() if done.returncode == 0 else ""  # keep porcelain indent

    changed = git("status", "--porcelain", "--", "posenc_ref", "benchmarks")
    return {
        "commit": git("rev-parse", "--short", "HEAD") or None,
        "uncommitted": [line[3:] for line in changed.splitlines() if line[3:] != RESULTS_NAME],
    }


RESULTS_NAME = "benchmarks/results.json"


def _arguments(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog=COMMAND, description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="tiny sizes, few repeats")
    parser.add_argument("--out", type=Path, help=f"results file (default {RESULTS.name})")
    parser.add_argument(
        "--only",
        nargs="+",
        choices=sorted(FAMILIES),
        metavar="NAME",
        help=f"run only these families: {', '.join(FAMILIES)}",
    )
    parser.add_argument(
        "--merge",
        action="store_true",
        help=f"replace only the --only families in {RESULTS.name}, each with its own run record",
    )
    parser.add_argument(
        "--threads",
        type=int,
        default=1,
        help="torch intra-op threads (default 1, for timings that other jobs disturb least)",
    )
    parser.add_argument(
        "--repeats",
        type=int,
        default=None,
        help="interleaved rounds per case (default 15; 3 with --quick)",
    )
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> dict:
    """Run the selected benchmark families, print a summary and write the JSON results.

    Returns
    -------
    dict
        The results, as written.
    """
    args = _arguments(argv)
    threads = set_threads(args.threads)
    repeats = args.repeats or (3 if args.quick else 15)
    if repeats < 1:
        raise SystemExit("--repeats must be at least 1")
    if args.merge and (args.quick or not args.only):
        raise SystemExit("--merge needs --only NAME ... and no --quick (it rewrites the results)")
    names = args.only or list(FAMILIES)
    command = " ".join([COMMAND, *(argv if argv is not None else sys.argv[1:])])
    started = time.perf_counter()
    machine = machine_info()
    results = {
        "schema_version": SCHEMA_VERSION,
        "command": command,
        "quick": args.quick,
        "machine": machine,
        "gpu": gpu_info(),
        "versions": library_versions(),
        "git": _git_state(),
        "settings": {
            "torch_threads": threads,
            "threads_note": (
                "one thread unless --threads says otherwise: ratios compare implementations at "
                "the same thread count, and multi-threaded regions stall on a shared machine"
            ),
            "repeats": repeats,
            "clock": (
                "CPU time of the timing thread (time.thread_time)"
                if threads == 1
                else "wall time (time.perf_counter)"
            )
            + " for CPU work; wall time around a synchronized GPU",
            "warmup_calls": 2,
            "interleaved": True,
            "env": {
                k: os.environ.get(k)
                for k in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "THP_MEM_ALLOC_ENABLE")
            },
        },
        "benchmarks": {},
    }
    with torch.inference_mode():  # no autograd bookkeeping, as in inference code
        for name in names:
            print(f"[{name}] running ...", flush=True)
            family_start = time.perf_counter()
            kwargs = {"quick": args.quick}
            if name in {"sinusoidal", "rope"}:
                kwargs["repeats"] = repeats
            results["benchmarks"][name] = FAMILIES[name](**kwargs)
            print(f"[{name}] {time.perf_counter() - family_start:.1f} s", flush=True)
    load_after = os.getloadavg() if hasattr(os, "getloadavg") else None
    results["machine"]["load_average_after"] = (
        [round(x, 2) for x in load_after] if load_after else None
    )
    results["elapsed_s"] = round(time.perf_counter() - started, 1)
    results["targets"] = [
        dict(target, family=name)
        for name, family in results["benchmarks"].items()
        for target in family.get("targets", [])
    ]
    if args.merge:
        return _merge(results, names, args.out or RESULTS)
    complete = not args.quick and set(names) == set(FAMILIES)
    out = args.out or (RESULTS if complete else None)
    if out is not None:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(results, indent=1) + "\n", encoding="utf-8")
        print(f"wrote {out}")
    for target in results["targets"]:
        mark = "met " if target["met"] else "MISS"
        print(f"{mark} {target['name']}: {target['measured']} (limit {target['limit']})")
    return results


def _merge(results: dict, names: list[str], out: Path) -> dict:
    """The published file with the families in ``names`` replaced by this run's, each marked.

    A family measured apart from the rest carries the run's own command, commit, machine and
    time under ``"run"``, so the page can say that it was measured on its own.
    """
    published = json.loads(out.read_text(encoding="utf-8"))
    for name in names:
        family = dict(results["benchmarks"][name])
        family["run"] = {
            "command": results["command"],
            "git": results["git"],
            "machine": results["machine"],
            "elapsed_s": results["elapsed_s"],
            "date": time.strftime("%Y-%m-%d", time.gmtime()),
        }
        published["benchmarks"][name] = family
    published["targets"] = [
        dict(target, family=name)
        for name, family in published["benchmarks"].items()
        for target in family.get("targets", [])
    ]
    out.write_text(json.dumps(published, indent=1) + "\n", encoding="utf-8")
    print(f"merged {', '.join(names)} into {out}")
    return published


if __name__ == "__main__":
    main()
