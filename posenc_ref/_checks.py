"""Argument validation shared by every public function: the checks of plain values.

Each helper raises an error that names the argument and the accepted values, so that bad input
never turns into a silent broadcast or a NaN further down. Every check takes the argument's name
first and its value second, ``check_x(name, value, *, options)``, and returns the value
(converted where it says so).

Standard library only: the config reader uses these without importing torch. The checks of
tensors, dtypes and positions are in :mod:`posenc_ref._tensor_checks`.
"""

from __future__ import annotations

import math
import numbers
import reprlib

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


def check_dim(name: str, value: object) -> int:
    """Return ``value`` if it is a positive even integer, else raise."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be a positive even integer, got {value!r}")
    if value <= 0 or value % 2:
        raise ValueError(
            f"{name} must be a positive even integer (pairs of sin/cos or of rotated "
            f"coordinates), got {value!r}"
        )
    return int(value)


def shown(value: object, limit: int = 80) -> str:
    """A value for an error message that cannot fail: cut at ``limit`` characters.

    An integer of 30 digits or more is described by its number of digits (Python refuses to
    print one past 4,300), and a deeply nested list is summarised six levels down (its ``repr``
    would exhaust the recursion limit).
    """
    if isinstance(value, numbers.Integral) and not isinstance(value, bool):
        if abs(int(value)) >= 10**30:
            digits = math.ceil(abs(int(value)).bit_length() * math.log10(2))
            return f"an integer of about {digits} digits"
    try:
        text = repr(value)
    except (RecursionError, ValueError):
        try:
            text = reprlib.repr(value)
        except (RecursionError, ValueError):  # a huge integer inside a container
            text = f"a {type(value).__name__}"
    return text if len(text) <= limit else text[: limit - 3] + "..."


def check_positive_float(name: str, value: object, *, minimum: float | None = None) -> float:
    """Return ``value`` as a finite float ``> 0`` (or ``>= minimum`` when given), else raise."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a finite real number, got {shown(value)}")
    value = float(value)
    if not math.isfinite(value):
        raise ValueError(f"{name} must be finite, got {value!r}")
    if minimum is None:
        if value <= 0:
            raise ValueError(f"{name} must be > 0, got {value!r}")
    elif value < minimum:
        raise ValueError(f"{name} must be >= {minimum}, got {value!r}")
    return value


def check_base(name: str, value: object) -> float:
    """Return ``value`` if it is a finite float > 1, else raise.

    A base of 1 makes every frequency 1 and a base below 1 reverses the order of the
    frequencies; neither is an encoding anyone uses, so both are refused.
    """
    base = check_positive_float(name, value)
    if base <= 1.0:
        raise ValueError(f"{name} must be a finite number > 1 (10000 in the paper), got {value!r}")
    return base


def check_layout(name: str, value: object) -> str:
    """Return ``value`` if it is a known RoPE pair layout, else raise."""
    if value not in LAYOUTS:
        raise ValueError(f"{name} must be one of {LAYOUTS}, got {value!r}")
    return value  # type: ignore[return-value]


def check_probability(name: str, value: object) -> float:
    """Return ``value`` if it is a float in [0, 1), else raise."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a real number in [0, 1), got {value!r}")
    value = float(value)
    if not 0.0 <= value < 1.0:
        raise ValueError(f"{name} must be in [0, 1), got {value!r}")
    return value


def broadcast_shape(*shapes: tuple[int, ...]) -> tuple[int, ...] | None:
    """The shape ``shapes`` broadcast to (NumPy's rules), or ``None`` where they do not.

    What ``torch.broadcast_shapes`` returns or refuses, without its first call's import of SymPy
    (half a second of CPU, paid by the first rotation of every process). Sizes are compared,
    never hashed, so symbolic sizes inside ``torch.compile`` work too.
    """
    out: list[int] = []
    for axis in range(1, max([0] + [len(s) for s in shapes]) + 1):  # (dynamo: no genexpr)
        size = 1
        for shape in shapes:
            n = shape[-axis] if axis <= len(shape) else 1
            if n != 1:
                if size != 1 and n != size:
                    return None
                size = n
        out.append(size)
    return tuple(reversed(out))


def check_rotary_dim(name: str, value: object, *, head_dim: int) -> int:
    """Return the rotary width: ``head_dim`` for ``None``, else an even ``2 <= r <= head_dim``."""
    if value is None:
        return head_dim
    value = check_dim(name, value)
    if value > head_dim:
        raise ValueError(
            f"{name} must be an even integer <= head_dim={head_dim} (the coordinates past it "
            f"are passed through), got {value}"
        )
    return value
