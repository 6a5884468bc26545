"""Sinusoidal table: the loop oracle vs the vectorized table vs the common float32 formula.

Variants, each building the whole ``(num_positions, dim)`` table for positions ``0 .. L-1``:

- ``sinusoidal_loop``: :func:`posenc_ref.sinusoidal_loop`, the Python double loop (float64),
  measured in full at every size (about a second a call at the largest size);
- ``sinusoidal``: :func:`posenc_ref.sinusoidal`, float64 angles, float32 result;
- ``float32_formula``: the PyTorch examples' formula, all in float32
  (:func:`benchmarks.baselines.float32_formula_table`);
- ``numpy_float64``: the same table in NumPy float64, left in float64.
"""

from __future__ import annotations

import torch

from posenc_ref import sinusoidal, sinusoidal_loop

from .baselines import float32_formula_table, numpy_float64_table
from .harness import cpu_clock, paired_ratio, time_interleaved

SIZES = [(128, 8), (2048, 512), (8192, 1024)]
QUICK_SIZES = [(128, 8), (256, 64)]
# Sizes at which `sinusoidal` must cost at most TARGET_COST x the float32 formula.
TARGET_SIZES = [(2048, 512), (8192, 1024)]
TARGET_COST = 2.0


def run(*, quick: bool = False, repeats: int = 15) -> dict:
    """Time the four variants at each size and derive the speedup and cost ratios.

    Returns
    -------
    dict
        ``{"description", "cases": [{"num_positions", "dim", "variants", "ratios"}], "targets"}``;
        ``variants`` maps a name to :meth:`Timing.to_json`, ``ratios`` holds
        ``loop_over_sinusoidal`` (speedup of the vectorized form), ``sinusoidal_over_float32``
        (its cost relative to the float32 formula), ``numpy_over_sinusoidal`` and
        ``numpy_over_float32``.
    """
    cases = []
    targets = []
    for num_positions, dim in QUICK_SIZES if quick else SIZES:
        positions = torch.arange(num_positions)
        variants = {
            "sinusoidal_loop": lambda n=num_positions, d=dim: sinusoidal_loop(n, d),
            "sinusoidal": lambda n=num_positions, d=dim: sinusoidal(n, d),
            "float32_formula": lambda p=positions, d=dim: float32_formula_table(p, d),
            "numpy_float64": lambda n=num_positions, d=dim: numpy_float64_table(n, d),
        }
        timings = time_interleaved(variants, repeats=repeats, clock=cpu_clock())
        ratios = {
            "loop_over_sinusoidal": paired_ratio(timings["sinusoidal_loop"], timings["sinusoidal"]),
            "sinusoidal_over_float32": paired_ratio(
                timings["sinusoidal"], timings["float32_formula"]
            ),
            "numpy_over_sinusoidal": paired_ratio(timings["numpy_float64"], timings["sinusoidal"]),
            "numpy_over_float32": paired_ratio(
                timings["numpy_float64"], timings["float32_formula"]
            ),
        }
        cases.append(
            {
                "num_positions": num_positions,
                "dim": dim,
                "variants": {name: t.to_json() for name, t in timings.items()},
                "ratios": ratios,
            }
        )
        if (num_positions, dim) in TARGET_SIZES:
            measured = ratios["sinusoidal_over_float32"]["median"]
            targets.append(
                {
                    "name": f"sinusoidal / float32 formula at ({num_positions}, {dim})",
                    "measured": measured,
                    "limit": TARGET_COST,
                    "met": measured <= TARGET_COST,
                }
            )
    return {
        "description": (
            "Time to build the whole (num_positions, dim) table. sinusoidal_loop is measured in "
            "full at every size (no extrapolation). numpy_float64 returns float64; the others "
            "return float32 except the loop (float64)."
        ),
        "cases": cases,
        "targets": targets,
    }
