"""Argument validation shared by every public function.

Each helper raises an error that names the argument and the accepted values, so that bad input
never turns into a silent broadcast or a NaN further down.
"""

from __future__ import annotations

import math
import numbers

import torch

LAYOUTS = ("interleaved", "half")


def check_int(name: str, value: object, *, minimum: int = 0) -> int:
    """Return ``value`` as an ``int`` if it is an integer ``>= minimum``, else raise."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be an integer >= {minimum}, got {value!r}")
    if value < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}, got {value!r}")
    return int(value)


def check_bool(name: str, value: object) -> bool:
    """Return ``value`` if it is ``True`` or ``False`` (not 0/1 or a string), else raise."""
    if not isinstance(value, bool):
        raise TypeError(f"{name} must be True or False, got {value!r}")
    return value


def check_dim(value: object, name: str = "dim") -> int:
    """Return ``value`` if it is a positive even integer, else raise."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be a positive even integer, got {value!r}")
    if value <= 0 or value % 2:
        raise ValueError(
            f"{name} must be a positive even integer (pairs of sin/cos or of rotated "
            f"coordinates), got {value!r}"
        )
    return int(value)


def check_positive_float(name: str, value: object, *, minimum: float | None = None) -> float:
    """Return ``value`` as a finite float ``> 0`` (or ``>= minimum`` when given), else raise."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a finite real number, got {value!r}")
    value = float(value)
    if not math.isfinite(value):
        raise ValueError(f"{name} must be finite, got {value!r}")
    if minimum is None:
        if value <= 0:
            raise ValueError(f"{name} must be > 0, got {value!r}")
    elif value < minimum:
        raise ValueError(f"{name} must be >= {minimum}, got {value!r}")
    return value


def check_base(value: object) -> float:
    """Return ``value`` if it is a finite float > 1, else raise.

    A base of 1 makes every frequency 1 and a base below 1 reverses the order of the
    frequencies; neither is an encoding anyone uses, so both are refused.
    """
    base = check_positive_float("base", value)
    if base <= 1.0:
        raise ValueError(f"base must be a finite number > 1 (10000 in the paper), got {value!r}")
    return base


def check_layout(value: object) -> str:
    """Return ``value`` if it is a known RoPE pair layout, else raise."""
    if value not in LAYOUTS:
        raise ValueError(f"layout must be one of {LAYOUTS}, got {value!r}")
    return value  # type: ignore[return-value]


def check_probability(name: str, value: object) -> float:
    """Return ``value`` if it is a float in [0, 1), else raise."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a real number in [0, 1), got {value!r}")
    value = float(value)
    if not 0.0 <= value < 1.0:
        raise ValueError(f"{name} must be in [0, 1), got {value!r}")
    return value


def check_float_dtype(name: str, dtype: object) -> torch.dtype:
    """Return ``dtype`` if it is a floating-point ``torch.dtype``, else raise."""
    if not isinstance(dtype, torch.dtype) or not dtype.is_floating_point:
        raise TypeError(f"{name} must be a floating-point torch.dtype, got {dtype!r}")
    return dtype


def check_tensor(name: str, value: object) -> torch.Tensor:
    """Return ``value`` if it is a tensor, else raise."""
    if not isinstance(value, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor, got {type(value).__name__}")
    return value
