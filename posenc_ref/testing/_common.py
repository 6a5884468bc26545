"""Helpers shared by the conformance checks: rounding units, argument checks, number formatting."""

from __future__ import annotations

import math
import numbers
from collections.abc import Iterable

import numpy as np
import torch

from .._checks import check_positive_float
from .._tensor_checks import check_float_dtype

# Unit roundoff u (half the distance from 1 to the next number): one correctly rounded operation
# is off by at most u relative. float32 has 24 significant bits, bfloat16 8, float16 11.
UNIT_ROUNDOFF = {
    torch.float64: 2.0**-53,
    torch.float32: 2.0**-24,
    torch.float16: 2.0**-11,
    torch.bfloat16: 2.0**-8,
}


def check_dtypes(dtypes: object) -> tuple[torch.dtype, ...]:
    """Return ``dtypes`` as a non-empty tuple of supported floating dtypes, else raise."""
    if isinstance(dtypes, torch.dtype):
        dtypes = (dtypes,)
    if not isinstance(dtypes, Iterable) or isinstance(dtypes, (str, bytes)):
        raise TypeError(f"dtypes must be a torch.dtype or a sequence of them, got {dtypes!r}")
    result = tuple(dtypes)
    if not result:
        raise ValueError("dtypes must name at least one dtype, e.g. (torch.float32,)")
    for dtype in result:
        check_float_dtype("dtypes", dtype)
        if dtype not in UNIT_ROUNDOFF:
            raise ValueError(
                f"dtypes must be among {tuple(str(d) for d in UNIT_ROUNDOFF)}, got {dtype}"
            )
    return tuple(dict.fromkeys(result))  # drop repeats, keep the order


def check_nonnegative_float(name: str, value: object) -> float:
    """Return ``value`` as a finite float ``>= 0``, else raise."""
    return check_positive_float(name, value, minimum=0.0)


def check_optional_tolerance(name: str, value: object) -> float | None:
    """Return ``None`` or a finite float ``>= 0``."""
    return None if value is None else check_nonnegative_float(name, value)


def check_seed(seed: object) -> int:
    """Return ``seed`` if it is an integer usable by ``torch.Generator.manual_seed``."""
    if isinstance(seed, bool) or not isinstance(seed, numbers.Integral):
        raise TypeError(f"seed must be an integer, got {seed!r}")
    if not 0 <= seed < 2**63:
        raise ValueError(f"seed must be in [0, 2**63), got {seed!r}")
    return int(seed)


def as_float64(value: object, name: str) -> torch.Tensor:
    """A tensor or array-like as a float64 CPU tensor (detached), for comparisons."""
    if isinstance(value, torch.Tensor):
        return value.detach().to("cpu", torch.float64)
    if isinstance(value, np.ndarray) or isinstance(value, (list, tuple)):
        try:
            return torch.as_tensor(np.asarray(value, dtype=np.float64))
        except (TypeError, ValueError) as err:
            raise TypeError(f"{name} must hold numbers, got {value!r:.80}") from err
    raise TypeError(f"{name} must be a torch.Tensor or a NumPy array, got {type(value).__name__}")


def fmt(value: float) -> str:
    """A number in a failure message: 3 significant digits, scientific when small or large."""
    if value != value:  # NaN
        return "nan"
    if math.isinf(value):
        return "inf" if value > 0 else "-inf"
    if value == 0:
        return "0"
    if 1e-3 <= abs(value) < 1e4:
        return f"{value:.4g}"
    return f"{value:.3g}"


def nice_number(value: float, digits: int = 3) -> float:
    """``value`` rounded to ``digits`` significant digits (how a base is written: 500000, 1e6)."""
    if value <= 0 or not math.isfinite(value):
        return value
    return round(value, digits - 1 - math.floor(math.log10(value)))
