r"""Accuracy vs position: max |error| per octave of position, up to :math:`2^{24}`, dim 128.

For each octave :math:`[2^j, 2^{j+1})` (the first one is :math:`[0, 2)`) the benchmark takes the
block of its last (largest, hence worst) positions, up to ``block`` of them, and compares every
sin and cos entry of each implementation with the truth. The truth is
:math:`\sin(m\,\omega_i)`, :math:`\cos(m\,\omega_i)` from float64 angles
(:math:`\omega_i = 10000^{-2i/128}` in float64); its own error, at most a few float64 roundings
of an angle below :math:`2^{24}` (about :math:`10^{-9}`), is checked against mpmath at 30 digits
on the largest position of every octave and recorded as ``truth_error_max``.

Implementations: :func:`posenc_ref.sinusoidal` (via ``offset``), the float32 formula,
:func:`posenc_ref.rope.rope_cos_sin`, and HF transformers' ``LlamaRotaryEmbedding`` (its
default rope init and forward) when transformers is installed.
"""

from __future__ import annotations

import numpy as np
import torch

from posenc_ref import inv_freq, sinusoidal

from .baselines import float32_formula_table
from .harness import _sig
from .peers import hf_rotary_cos_sin

DIM = 128
BASE = 10000.0
TARGET = 6e-8


def _truth(positions: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Float64 sin and cos, ``(len(positions), DIM/2)`` each."""
    omega = BASE ** (-np.arange(0, DIM, 2, dtype=np.float64) / DIM)
    angles = positions.astype(np.float64)[:, None] * omega
    return np.sin(angles), np.cos(angles)


def _mpmath_check(positions: list[int]) -> float:
    """Largest |float64 truth - mpmath (30 digits)| over ``positions`` and all pairs."""
    import mpmath

    mpmath.mp.dps = 30
    sin64, cos64 = _truth(np.array(positions))
    worst = 0.0
    for row, m in enumerate(positions):
        for i in range(DIM // 2):
            angle = m * mpmath.power(BASE, mpmath.mpf(-2 * i) / DIM)
            worst = max(
                worst,
                abs(float(mpmath.sin(angle) - sin64[row, i])),
                abs(float(mpmath.cos(angle) - cos64[row, i])),
            )
    return worst


def _implementations(start: int, stop: int) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Each implementation's (sin, cos), ``(stop - start, DIM/2)`` float64 arrays."""
    positions = torch.arange(start, stop)
    found = {}
    table = sinusoidal(stop - start, DIM, BASE, offset=start).double().numpy()
    found["sinusoidal"] = (table[:, 0::2], table[:, 1::2])
    table = float32_formula_table(positions, DIM, BASE).double().numpy()
    found["float32_formula"] = (table[:, 0::2], table[:, 1::2])
    try:
        from posenc_ref.rope import rope_cos_sin
    except ImportError:  # the rotary module is optional for this benchmark
        rope_cos_sin = None
    if rope_cos_sin is not None:
        cos, sin = rope_cos_sin(positions, inv_freq(DIM, BASE))  # one column per pair
        found["rope_cos_sin"] = (sin.double().numpy(), cos.double().numpy())
    hf = hf_rotary_cos_sin(positions, DIM, BASE)
    if hf is not None:
        cos, sin = hf  # half layout: the first DIM/2 columns are the pairs in order
        half = DIM // 2
        found["hf_llama_rotary"] = (sin[:, :half].double().numpy(), cos[:, :half].double().numpy())
    return found


def run(*, quick: bool = False, block: int = 4096) -> dict:
    """Measure the max |error| per octave for every implementation.

    Returns
    -------
    dict
        ``{"description", "dim", "base", "octaves": [{"start", "stop", "measured_from"}],
        "max_abs_error": {name: [one value per octave]}, "truth_error_max", "targets"}``.
    """
    top = 10 if quick else 24
    block = 256 if quick else block
    octaves = []
    errors: dict[str, list[float]] = {}
    for j in range(top):
        start, stop = (0 if j == 0 else 2**j), 2 ** (j + 1)
        first = max(start, stop - block)
        sin64, cos64 = _truth(np.arange(first, stop))
        for name, (sin, cos) in _implementations(first, stop).items():
            worst = max(np.abs(sin - sin64).max(), np.abs(cos - cos64).max())
            errors.setdefault(name, []).append(_sig(float(worst), 3))
        octaves.append({"start": start, "stop": stop, "measured_from": first})
    spot = [o["stop"] - 1 for o in octaves]
    truth_error = _mpmath_check(spot[-3:] if quick else spot)
    targets = []
    for name in ("sinusoidal", "rope_cos_sin"):
        if name in errors:
            measured = max(errors[name])
            targets.append(
                {
                    "name": f"{name}: max |error| at every position up to 2^{top}",
                    "measured": measured,
                    "limit": TARGET,
                    "met": measured <= TARGET,
                }
            )
    return {
        "description": (
            f"Max |error| of sin and cos entries (float32 results vs float64 truth), dim {DIM}, "
            f"base {BASE:g}, per octave of position; each octave is measured on its last "
            f"{block} positions (all of it when shorter). The float64 truth itself is within "
            "truth_error_max of mpmath (30 digits) at the last position of every octave."
        ),
        "dim": DIM,
        "base": BASE,
        "positions_per_octave": block,
        "octaves": octaves,
        "max_abs_error": errors,
        "truth_error_max": _sig(truth_error, 3),
        "targets": targets,
    }
