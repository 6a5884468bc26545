"""Command line: how long ``posenc-ref`` takes to answer, against a bare ``python -c pass``.

Each command runs in a fresh interpreter, as a user runs it, in interleaved rounds with the bare
interpreter (so a slow spell of a shared machine lands on all of them); the number that matters
is the command's median minus the bare interpreter's median of the same run, and the ratio of
the two. ``inspect --cache`` reads a Hugging Face cache laid out in a temporary folder from the
corpus (``../shared/real_configs/``, every file one model); without the corpus that row is
skipped. Targets (issue 42, on 2 cores): ``--version`` and ``--help`` within 0.15 s of the bare
interpreter, ``inspect FILE`` within 1 s, ``inspect --cache`` over the corpus within 10 s.

``python -m benchmarks.cli`` (run by ``make bench`` after ``benchmarks.run``) writes
``benchmarks/results_cli.json``, which the benchmarks page reads as it reads ``results.json``
(``--no-write``: print only).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from .harness import _sig, machine_info

ROOT = Path(__file__).resolve().parents[1]
CORPUS = ROOT.parent / "shared" / "real_configs"
RESULTS = Path(__file__).with_name("results_cli.json")
SAMPLE = "HPMLL__llm-benchmark__models__Llama-2-7b-hf__config.json"  # a config of 2023's kind
BARE = "python -c pass"
# name -> (arguments after the interpreter, the target: seconds over the bare interpreter)
COMMANDS: dict[str, tuple[list[str], float | None]] = {
    BARE: (["-c", "pass"], None),
    "posenc-ref --version": (["-m", "posenc_ref", "--version"], 0.15),
    "posenc-ref --help": (["-m", "posenc_ref", "--help"], 0.15),
    "posenc-ref inspect FILE": (["-m", "posenc_ref", "inspect", "{file}"], 1.0),
    "posenc-ref inspect FILE --json": (["-m", "posenc_ref", "inspect", "{file}", "--json"], 1.0),
    "posenc-ref inspect --cache": (["-m", "posenc_ref", "inspect", "--cache"], 10.0),
}


def fake_cache(root: Path, files: list[Path]) -> Path:
    """A hub cache under ``root``: one ``models--corpus--N/snapshots/0/config.json`` per file."""
    for i, path in enumerate(files):
        repo = root / f"models--corpus--{i:03d}"
        (repo / "snapshots" / "0").mkdir(parents=True)
        (repo / "refs").mkdir()
        (repo / "refs" / "main").write_text("0")
        shutil.copy(path, repo / "snapshots" / "0" / "config.json")
    return root


def _time(arguments: list[str], env: dict[str, str]) -> tuple[float, int]:
    start = time.perf_counter()
    done = subprocess.run(
        [sys.executable, *arguments], cwd=ROOT, env=env, capture_output=True, check=False,
        timeout=300,
    )  # fmt: skip
    return time.perf_counter() - start, done.returncode


def _loaded(arguments: list[str], env: dict[str, str]) -> list[str]:
    """Which of torch and NumPy the command imported (run once more, untimed, under -X)."""
    code = (
        "import runpy, sys, atexit\n"
        "atexit.register(lambda: print('\\nLOADED', sorted({m.split('.')[0] for m in "
        "sys.modules} & {'torch', 'numpy'}), file=sys.stderr))\n"
        f"sys.argv = {['posenc-ref', *arguments[2:]]!r}\n"
        "try:\n    runpy.run_module('posenc_ref', run_name='__main__')\nexcept SystemExit:\n"
        "    pass\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True,
        check=False, timeout=300,
    )  # fmt: skip
    line = [x for x in done.stderr.splitlines() if x.startswith("LOADED")]
    return json.loads(line[-1].split(" ", 1)[1].replace("'", '"')) if line else ["?"]


def run(*, quick: bool = False, repeats: int = 9) -> dict:
    """Time every command, interleaved with the bare interpreter, ``repeats`` rounds (3 quick).

    Returns
    -------
    dict
        ``{"variants": {name: {median_s, min_s, max_s, over_bare_s, ratio, imports}},
        "machine", "targets", ...}``.
    """
    repeats = 3 if quick else repeats
    files = sorted(CORPUS.glob("*.json")) if CORPUS.is_dir() else []
    sample = CORPUS / SAMPLE if (CORPUS / SAMPLE).is_file() else None
    commands = {
        name: ([a.replace("{file}", str(sample)) for a in args], target)
        for name, (args, target) in COMMANDS.items()
        if (sample is not None or "{file}" not in args) and (files or "--cache" not in args)
    }
    machine = machine_info()
    with tempfile.TemporaryDirectory() as folder:
        env = {**os.environ, "PYTHONPATH": str(ROOT), "HF_HUB_CACHE": folder}
        fake_cache(Path(folder), files)
        samples: dict[str, list[float]] = {name: [] for name in commands}
        codes: dict[str, set[int]] = {name: set() for name in commands}
        for args, _ in commands.values():  # warm the file system cache, untimed
            _time(args, env)
        for _ in range(repeats):
            for name, (args, _) in commands.items():
                seconds, code = _time(args, env)
                samples[name].append(seconds)
                codes[name].add(code)
        loaded = {name: _loaded(args, env) for name, (args, _) in commands.items()}
    load_after = os.getloadavg() if hasattr(os, "getloadavg") else None
    bare = statistics.median(samples[BARE])
    variants = {}
    for name, s in samples.items():
        median = statistics.median(s)
        variants[name] = {
            "median_s": _sig(median),
            "min_s": _sig(min(s)),
            "max_s": _sig(max(s)),
            "over_bare_s": _sig(median - bare),
            "ratio": _sig(median / bare),
            "exit_codes": sorted(codes[name]),
            "imports": loaded[name],
            "repeats": len(s),
        }
    targets = [
        {
            "name": f"{name}: seconds over {BARE}",
            "measured": variants[name]["over_bare_s"],
            "limit": limit,
            "met": variants[name]["over_bare_s"] <= limit,
        }
        for name, (_, limit) in commands.items()
        if limit is not None
    ]
    return {
        "description": (
            "Wall seconds of each command in a fresh interpreter (median of interleaved rounds "
            f"with {BARE}), the same minus the bare interpreter's median, and their ratio. "
            f"inspect FILE reads {SAMPLE}; inspect --cache reads a cache of the corpus's "
            f"{len(files)} configs."
        ),
        "machine": {**machine, "load_average_after": [round(x, 2) for x in load_after or []]},
        "cache_models": len(files),
        "variants": variants,
        "targets": targets,
    }


def main(argv: list[str] | None = None) -> dict:
    """Run the commands; write ``benchmarks/results_cli.json`` unless ``--no-write``."""
    parser = argparse.ArgumentParser(prog="python -m benchmarks.cli", description=__doc__)
    parser.add_argument("--quick", action="store_true", help="3 rounds, not written")
    parser.add_argument("--no-write", action="store_true", help="print only")
    parser.add_argument("--repeats", type=int, default=9, help="interleaved rounds (default 9)")
    args = parser.parse_args(argv)
    result = run(quick=args.quick, repeats=args.repeats)
    for name, v in result["variants"].items():
        print(
            f"{name:34} {v['median_s']:8.3f} s  +{v['over_bare_s']:.3f} s  x{v['ratio']:.2f}  "
            f"imports {', '.join(v['imports']) or 'neither torch nor NumPy'}"
        )
    print("load average", result["machine"]["load_average_1_5_15"], "->",
          result["machine"]["load_average_after"])  # fmt: skip
    if not (args.quick or args.no_write):
        command = " ".join(["python -m benchmarks.cli", *(argv or sys.argv[1:])])
        RESULTS.write_text(json.dumps({"command": command, **result}, indent=1) + "\n")
        print(f"wrote {RESULTS.relative_to(ROOT)}")
    return result


if __name__ == "__main__":
    main()
