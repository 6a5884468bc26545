r"""Values read from a config: checked, described in messages, never an internal exception."""

from __future__ import annotations

import math
import numbers
from collections.abc import Mapping
from typing import Any

from .._checks import check_int, check_positive_float, shown

__all__ = ["NoRopeError"]

# Integers a config can hold as lengths: beyond 2**53 a ratio of two lengths is no longer exact
# in float64, and positions that far are past every table (a position is an int64).
_MAX_LENGTH = 2**53


class NoRopeError(ValueError):
    """The config's model uses no RoPE at all (it is not an unknown family).

    ``model_type`` names the family and ``reason`` says what the model does instead, as far as
    posenc_ref knows (learned absolute positions, ALiBi, relative buckets, no positions at all).
    :func:`posenc_ref.models.rope_spec` raises it; a caller that explains every positional
    encoding catches it.
    """

    def __init__(self, model_type: str | None, reason: str) -> None:
        self.model_type = model_type
        self.reason = reason
        super().__init__(f"model_type {model_type!r} uses no RoPE: {reason}")


# --------------------------------------------------------------------------- plain values


def _show(value: object) -> str:
    """A value for an error message (a 5,000-digit integer is described, not printed)."""
    return shown(value)


def _name(what: str, value: object) -> str:
    """A name-valued entry (model_type, rope_type, a layer type): a string, or raise."""
    if not isinstance(value, str):
        raise TypeError(f"{what} must be a string, got {type(value).__name__} {_show(value)}")
    return value


def _length(name: str, value: object, minimum: int = 1) -> int:
    """A length or width from a config: an integer (an integral float is accepted) in range."""
    if isinstance(value, float) and math.isfinite(value) and value.is_integer():
        if abs(value) >= _MAX_LENGTH:
            raise ValueError(f"{name} must be an integer below 2**53, got {value!r}")
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be an integer >= {minimum}, got {_show(value)}")
    if value >= _MAX_LENGTH:
        raise ValueError(
            f"{name} must be an integer below 2**53 (positions are int64 and lengths enter "
            f"float64 ratios), got {_show(value)}"
        )
    return check_int(name, int(value), minimum=minimum)


def _real(name: str, value: object) -> float:
    """A positive finite real from a config (a huge integer is a clear ValueError)."""
    if isinstance(value, numbers.Integral) and not isinstance(value, bool):
        if abs(int(value)) >= 2**1000:
            raise ValueError(f"{name} must be a finite number, got {_show(value)}")
    return check_positive_float(name, value)


def _plain(config: object) -> dict[str, Any]:
    """The config as a top-level dict (only the parts read are copied, later)."""
    if isinstance(config, Mapping):
        return dict(config)
    to_dict = getattr(config, "to_dict", None)
    if callable(to_dict):  # a transformers PreTrainedConfig (never imported here)
        return dict(to_dict())
    raise TypeError(
        "config must be a dict (the contents of config.json) or a transformers config object, "
        f"got {type(config).__name__}"
    )


def _copy(value: object, where: str) -> Any:
    """A copy of a (JSON-like) value; nesting past what Python can walk is a clear error."""
    try:
        if isinstance(value, Mapping):
            return {key: _copy(item, where) for key, item in value.items()}
        if isinstance(value, (list, tuple)):
            return [_copy(item, where) for item in value]
    except RecursionError:
        raise ValueError(f"{where} is nested too deeply to be a model config") from None
    return value


def _same(name: str, first: object, second: object, where: tuple[str, str]) -> object:
    """Return the value given in one or both places; raise if both give different values."""
    if first is None:
        return second
    if second is not None and first != second:
        raise ValueError(
            f"inconsistent {name}: {where[0]} gives {_show(first)} but {where[1]} gives "
            f"{_show(second)}"
        )
    return first
