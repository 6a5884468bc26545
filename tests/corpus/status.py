"""The status table of the corpus: ``tests/data/real_configs_status.json``, and its report.

One record per file (``check.check_file``, without its timing), the counts per verdict, and
per ``model_type``. The test (``tests/test_real_configs.py``) requires each file's ``verdict``
and ``failed`` checks to be the committed ones, and marks every file that does not agree as
an expected failure with its committed reason.
"""

from __future__ import annotations

import json
import os
import time
import warnings
from collections import Counter
from typing import Any

import torch

from . import build, check

FILE = os.path.join(os.path.dirname(os.path.dirname(__file__)), "data", "real_configs_status.json")
VERDICTS = ("agrees", "remote code, read from its public code", "refused", "wrong",
            "transformers cannot build it")  # fmt: skip
UNNAMED = "inspect leaves a layer type unnamed"  # a check beside the verdict


def run(names: list[str] | None = None) -> dict[str, dict]:
    """Check the corpus's files (or those whose name contains one of ``names``)."""
    import transformers

    transformers.logging.set_verbosity_error()
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # tiny matrices: threads only add overhead
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            out = {}
            for path in build.files():
                if names and not any(n in path.name for n in names):
                    continue
                out[path.name] = check.check_file(path)
    finally:
        torch.set_num_threads(threads)
    return out


def table(records: dict[str, dict]) -> dict[str, Any]:
    """The status file's contents: counts, counts per model_type, and the records."""
    import transformers

    per_type: dict[str, Counter] = {}
    for r in records.values():
        per_type.setdefault(str(r["model_type"]), Counter())[r["verdict"]] += 1
    return {
        "about": "Each released config of ../shared/real_configs/ against its family's own code "
        "in transformers (python -m tests.corpus --write; tests/corpus/check.py says what each "
        "field means).",
        "transformers": transformers.__version__,
        "counts": {"files": len(records)}
        | {v: sum(r["verdict"] == v for r in records.values()) for v in VERDICTS}
        | {UNNAMED: sum("layer_types" in r["failed"] for r in records.values())},
        "per_model_type": {k: dict(sorted(c.items())) for k, c in sorted(per_type.items())},
        "files": {
            name: {k: v for k, v in r.items() if k != "seconds"}
            for name, r in sorted(records.items())
        },
    }


def write(records: dict[str, dict]) -> None:
    os.makedirs(os.path.dirname(FILE), exist_ok=True)
    with open(FILE, "w", encoding="utf-8") as f:
        f.write(json.dumps(table(records), indent=1, ensure_ascii=False) + "\n")


def load() -> dict[str, Any]:
    with open(FILE, encoding="utf-8") as f:
        return json.load(f)


def report(status: dict[str, Any]) -> str:
    c = status["counts"]
    lines = [
        f"{c['files']} released configs (transformers {status['transformers']}): "
        + ", ".join(f"{c[v]} {v}" for v in VERDICTS)
        + f"; {c[UNNAMED]} files: {UNNAMED}",
        "",
    ]
    for name, r in status["files"].items():
        ratio = "" if r.get("ratio") is None else f" (ratio {r['ratio']:g})"
        why = "" if not r.get("reason") else f": {str(r['reason'])[:140]}"
        lines.append(f"{str(r['model_type']):18} {r['verdict']}{ratio}{why}  [{name[-60:]}]")
    return "\n".join(lines)


def timed_run(names: list[str] | None = None) -> tuple[dict[str, dict], float]:
    started = time.perf_counter()
    records = run(names)
    return records, time.perf_counter() - started
