"""Import cost: ``import posenc_ref``, ``import torch``, and the tensor modules after torch.

``import posenc_ref`` imports neither torch nor NumPy: its names load on first use, so the config
reader and the command line start without them. What the package costs once tensors are asked
for is timed as ``import posenc_ref.rope`` after an untimed ``import torch``: the maths' own
modules. The numbers to watch are those two, and that ``import posenc_ref`` drags in no heavy
module (torch, NumPy, matplotlib above all).
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys

from .harness import _sig, machine_info

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

# What the probe reports: those, and torch and NumPy, which load with the first tensor function.
PROBED = ("torch", "numpy", *HEAVY_MODULES)

_PROBE = """
import json, sys, time
{setup}
start = time.perf_counter()
{statement}
elapsed = time.perf_counter() - start
heavy = sorted(m for m in {heavy!r} if m in sys.modules)
print(json.dumps({{"seconds": elapsed, "heavy": heavy}}))
"""

# name -> (untimed setup, timed statement). "posenc_ref_after_torch" times the package's tensor
# modules (rope imports rope_functions, rope_scaling, mrope, ...) directly, in the same
# interpreter as the torch they need, instead of as a difference of two noisy numbers.
STATEMENTS = {
    "torch": ("", "import torch"),
    "posenc_ref": ("", "import posenc_ref"),
    "posenc_ref_after_torch": ("import torch", "import posenc_ref.rope"),
}


def measure_import(statement: str, setup: str = "") -> dict:
    """Run ``setup`` then ``statement`` in a fresh interpreter, timing only the statement.

    Returns
    -------
    dict
        ``{"seconds": float, "heavy": [names of PROBED found in sys.modules]}``.
    """
    code = _PROBE.format(setup=setup, statement=statement, heavy=PROBED)
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
    machine = machine_info()  # this part may be re-run alone: its own date and load
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
    load_after = os.getloadavg() if hasattr(os, "getloadavg") else None
    return {
        "description": (
            "Seconds from the import statement to its end in a fresh interpreter "
            "(python -c ...). import posenc_ref imports neither torch nor NumPy; "
            "posenc_ref_after_torch imports torch first, untimed, and times import "
            "posenc_ref.rope: the package's tensor modules."
        ),
        "measured": {
            "date_utc": machine["date_utc"],
            "load_average_1_5_15": machine["load_average_1_5_15"],
            "load_average_after": [round(x, 2) for x in load_after] if load_after else None,
            "nice": os.nice(0) if hasattr(os, "nice") else None,
        },
        "variants": variants,
        "heavy_modules_imported": sorted(heavy),
        "targets": [
            {
                "name": "import posenc_ref imports no heavy module (torch, NumPy, matplotlib, ...)",
                "measured": ", ".join(sorted(heavy)) or "none",
                "limit": "none",
                "met": not heavy,
            }
        ],
    }
