"""Import cost: ``import posenc_ref`` vs ``import torch``, each in a fresh interpreter.

posenc_ref depends on torch, so its import time is torch's plus its own; the number to watch is
the difference, and which heavy optional modules (matplotlib above all) the import drags in.
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys

from .harness import _sig

# Optional modules that `import posenc_ref` must leave alone (plots imports matplotlib lazily).
HEAVY_MODULES = (
    "matplotlib",
    "transformers",
    "torchtune",
    "rotary_embedding_torch",
    "mpmath",
    "scipy",
    "pandas",
    "hypothesis",
    "mkdocs",
)

_PROBE = """
import json, sys, time
{setup}
start = time.perf_counter()
{statement}
elapsed = time.perf_counter() - start
heavy = sorted(m for m in {heavy!r} if m in sys.modules)
print(json.dumps({{"seconds": elapsed, "heavy": heavy}}))
"""

# name -> (untimed setup, timed statement). "posenc_ref_after_torch" times posenc_ref's own
# modules directly, in the same interpreter, instead of as a difference of two noisy numbers.
STATEMENTS = {
    "torch": ("", "import torch"),
    "posenc_ref": ("", "import posenc_ref"),
    "posenc_ref_after_torch": ("import torch", "import posenc_ref"),
}


def measure_import(statement: str, setup: str = "") -> dict:
    """Run ``setup`` then ``statement`` in a fresh interpreter, timing only the statement.

    Returns
    -------
    dict
        ``{"seconds": float, "heavy": [names of HEAVY_MODULES found in sys.modules]}``.
    """
    code = _PROBE.format(setup=setup, statement=statement, heavy=HEAVY_MODULES)
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120
    )
    return json.loads(done.stdout.strip().splitlines()[-1])


def run(*, quick: bool = False, repeats: int = 10) -> dict:
    """Time both imports, interleaved, ``repeats`` times each (2 with ``quick``).

    Returns
    -------
    dict
        ``{"variants": {name: {median_s, min_s, max_s, repeats, samples_s}},
        "heavy_modules_imported", "targets"}``.
    """
    repeats = 2 if quick else repeats
    measure_import("import torch")  # warm the file system cache for both
    samples: dict[str, list[float]] = {name: [] for name in STATEMENTS}
    heavy: set[str] = set()
    for _ in range(repeats):
        for name, (setup, statement) in STATEMENTS.items():
            result = measure_import(statement, setup)
            samples[name].append(result["seconds"])
            if name == "posenc_ref":
                heavy.update(result["heavy"])
    variants = {
        name: {
            "median_s": _sig(statistics.median(s)),
            "min_s": _sig(min(s)),
            "max_s": _sig(max(s)),
            "repeats": len(s),
            "samples_s": [_sig(x) for x in s],
        }
        for name, s in samples.items()
    }
    return {
        "description": (
            "Seconds from the import statement to its end in a fresh interpreter "
            "(python -c ...). posenc_ref imports torch; posenc_ref_after_torch imports torch "
            "first, untimed, and times only posenc_ref's own modules."
        ),
        "variants": variants,
        "heavy_modules_imported": sorted(heavy),
        "targets": [
            {
                "name": "import posenc_ref imports no heavy optional module (matplotlib, ...)",
                "measured": ", ".join(sorted(heavy)) or "none",
                "limit": "none",
                "met": not heavy,
            }
        ],
    }
