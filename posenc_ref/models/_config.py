r"""A config as plain values: the dict, its language model, and each value read, checked.

The first step of both readers (:func:`~posenc_ref.models.rope_spec` and
:func:`~posenc_ref.encodings.positional_encoding`): the config as a top-level dict (a
transformers config object through its ``to_dict()``), with a multimodal config's language model
under ``text_config`` taken as the config. The other functions read one value each and raise an
error naming the key (and, for the encodings reader, the family) when it is not of the kind the
family's code needs: they call nothing back, so any step may use them.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Mapping
from typing import Any

from .._checks import check_int, check_positive_float, shown

# Integers a config can hold as lengths: beyond 2**53 a ratio of two lengths is no longer exact
# in float64, and positions that far are past every table (a position is an int64).
MAX_LENGTH = 2**53

# Widths and head counts past this are no model's; refusing them keeps a typo (or 10**20) from
# allocating terabytes when a table or the slopes are built.
MAX_WIDTH = 2**20

# Layer counts past this are no model's; refusing them keeps 10**12 layers from building lists
# of layer types for minutes (the largest released models have a few hundred layers).
MAX_LAYERS = 2**16

# Keys a multimodal config may give at its top level for its language model's RoPE.
TOP_LEVEL_ROPE_KEYS = ("rope_theta", "rope_scaling", "rope_parameters")

# Where language_config keeps a top-level RoPE dict that differs from text_config's in spelling
# (Qwen2.5-VL's "type": "mrope" beside "rope_type": "default"): the RoPE dict step compares the
# two by what they mean, as transformers' standardisation would.
TOP_LEVEL = "__top_level_rope__"

# Where a family's config class rewrite (traits.ConfigClass) leaves the notes of what it ignored,
# for rope_spec to add to the spec's.
CLASS_NOTES = "__config_class_notes__"


# --------------------------------------------------------------------------- the config


def plain(config: object) -> dict[str, Any]:
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


def rotary_part(
    config: Mapping[str, Any] | object, parts: Mapping[str, Any]
) -> tuple[dict[str, Any], tuple[str, ...]]:
    """``(the sub-config that holds the rotary, notes naming it)`` of a wrapper in ``parts``.

    ``parts`` is :data:`~posenc_ref.models.families.PARTS` (a wrapper's ``model_type`` -> where
    its rotary's sub-config is). A wrapper's sub-config is read in its place (PE Audio's
    ``audio_config``), through every level (Nemotron 3.5 Transcribe: ``audio_config.asr_config``);
    any other config is itself.
    """
    top, path = plain(config), []
    while isinstance(top.get("model_type"), str) and top["model_type"] in parts:
        wrapper, part = top["model_type"], parts[top["model_type"]]
        sub = lookup(top, part.path)
        if sub is not None and not isinstance(sub, Mapping):
            raise TypeError(
                f"{part.path} must be a dict or null ({wrapper}'s {part.model_type} config, "
                f"which holds its rotary), got {shown(sub)}"
            )
        path.append((wrapper, part))
        top = {"model_type": part.model_type, **(sub or {})}
    if not path:
        return top, ()
    where = ".".join(part.path for _, part in path)
    others = "; ".join(part.others for _, part in path if part.others)
    note = (
        f"read from {where} (model_type {top['model_type']!r}): the part of {path[0][0]!r} "
        "that holds its rotary" + (f"; {others}" if others else "")
    )
    return top, (note,)


def language_config(config: Mapping[str, Any]) -> tuple[dict[str, Any], str | None]:
    """``(the language model's config, its model_type)``: ``text_config`` where there is one.

    The RoPE keys a multimodal config gives at its top level are the language model's: they
    fill its config, and must agree with it where both give one.
    """
    config = plain(config)
    model_type = config.get("model_type")
    if model_type is not None:
        name("model_type", model_type)
    text = config.get("text_config")
    if text is None:
        return config, model_type
    if not isinstance(text, Mapping):
        to_dict = getattr(text, "to_dict", None)
        if not callable(to_dict):
            raise TypeError(
                f"text_config must be a dict or null, got a {type(text).__name__} {shown(text)} "
                "(it holds the language model's config)"
            )
        text = to_dict()
    text = dict(text)
    for key in TOP_LEVEL_ROPE_KEYS:
        both = config.get(key) is not None and text.get(key) is not None
        if both and isinstance(config[key], Mapping) and isinstance(text[key], Mapping):
            if not equal(config[key], text[key]):  # compared by meaning once the row is known
                text.setdefault(TOP_LEVEL, {})[key] = config[key]
        elif both:
            same(key, text[key], config[key], ("text_config", "the top level"))
        elif config.get(key) is not None:
            text[key] = config[key]
    inner = text.get("model_type")
    if inner is not None:
        name("text_config.model_type", inner)
    return text, inner or model_type


def copy(value: object, where: str) -> Any:
    """A copy of a (JSON-like) value; nesting past what Python can walk is a clear error."""
    try:
        if isinstance(value, Mapping):
            return {key: copy(item, where) for key, item in value.items()}
        if isinstance(value, (list, tuple)):
            return [copy(item, where) for item in value]
    except RecursionError:
        raise ValueError(f"{where} is nested too deeply to be a model config") from None
    return value


def lookup(config: Mapping[str, Any], path: str) -> Any:
    """The value at a dotted ``path`` (``"attn_config.rope_theta"``), or None."""
    value: Any = config
    for part in path.split("."):
        if not isinstance(value, Mapping):
            return None
        value = value.get(part)
    return value


# --------------------------------------------------------------------------- one value


def name(what: str, value: object) -> str:
    """A name-valued entry (model_type, rope_type, a layer type): a string, or raise."""
    if not isinstance(value, str):
        raise TypeError(
            f"{what} must be a string (a name), got {shown(value)} ({type(value).__name__})"
        )
    return value


def length(key: str, value: object, minimum: int = 1) -> int:
    """A length or width from a config: an integer (an integral float is accepted) in range."""
    if isinstance(value, float) and math.isfinite(value) and value.is_integer():
        if abs(value) >= MAX_LENGTH:
            raise ValueError(f"{key} must be an integer below 2**53, got {value!r}")
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{key} must be an integer >= {minimum}, got {shown(value)}")
    if value >= MAX_LENGTH:
        raise ValueError(
            f"{key} must be an integer below 2**53 (positions are int64 and lengths enter "
            f"float64 ratios), got {shown(value)}"
        )
    return check_int(key, int(value), minimum=minimum)


def real(key: str, value: object) -> float:
    """A positive finite real from a config (a huge integer is a clear ValueError)."""
    if isinstance(value, numbers.Integral) and not isinstance(value, bool):
        if abs(int(value)) >= 2**1000:
            raise ValueError(f"{key} must be a finite number, got {shown(value)}")
    return check_positive_float(key, value)


def same(what: str, first: object, second: object, where: tuple[str, str]) -> object:
    """Return the value given in one or both places; raise if both give different values."""
    if first is None:
        return second
    if second is not None and first != second:
        raise ValueError(
            f"inconsistent {what}: {where[0]} gives {shown(first)} but {where[1]} gives "
            f"{shown(second)}"
        )
    return first


# --------------------------------------------------------------------------- a key and its names


def is_set(rope: Mapping[str, Any], key: str, unset_when_zero: frozenset[str]) -> bool:
    """Whether ``rope`` sets ``key``: present, not null, and not a 0 that means "not set".

    The one place of the rule: ``unset_when_zero`` comes from the RoPE type's entry
    (:attr:`~posenc_ref.models.RopeType.unset_when_zero`), which says which of its keys
    transformers reads with ``or`` or truthiness.
    """
    value = rope.get(key)
    return value is not None and not (key in unset_when_zero and value == 0)


def given(config: Mapping[str, Any], names: tuple[str, ...], default: object) -> object:
    """The value under the first of ``names`` given, else ``default``.

    ``names`` are a key and the config class's other names for it; they must agree where several
    are given.
    """
    found = [(key, config[key]) for key in names if config.get(key) is not None]
    for key, value in found[1:]:
        if not equal(value, found[0][1]):
            raise ValueError(
                f"inconsistent {names[0]}: {found[0][0]} is {shown(found[0][1])} but {key} "
                f"(another name for it) is {shown(value)}"
            )
    return found[0][1] if found else default


def equal(a: object, b: object) -> bool:
    """Equal as config values: same type and value, or the same number (1 and 1.0)."""
    try:
        return type(a) is type(b) and a == b or (is_number(a) and is_number(b) and a == b)
    except (ValueError, RecursionError):
        return False


def is_number(value: object) -> bool:
    return isinstance(value, numbers.Real) and not isinstance(value, bool)


def bounded_int(key: str, value: object, model_type: str, *, minimum: int, maximum: int) -> int:
    """An integer in ``[minimum, maximum]`` (an integral float is accepted), for ``model_type``."""
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{key} must be an integer >= {minimum} ({model_type}), got {shown(value)}")
    if not minimum <= value <= maximum:
        raise ValueError(
            f"{key} must be an integer in [{minimum}, {power_of_two(maximum)}] ({model_type}), got "
            + shown(value)
        )
    return int(value)


def power_of_two(value: int) -> str:
    """``2**k`` for a power of two past 1024, else the number."""
    return (
        f"2**{value.bit_length() - 1}" if value > 1024 and value & (value - 1) == 0 else str(value)
    )


def flag(key: str, value: object) -> bool:
    """A true-or-false value, or raise."""
    if not isinstance(value, bool):
        raise TypeError(f"{key} must be true or false, got {shown(value)}")
    return value


def layer_count(config: Mapping[str, Any]) -> int | None:
    """``num_hidden_layers``, where given: an integer in ``[1, 2**16]``."""
    value = config.get("num_hidden_layers")
    if value is None:
        return None
    count = length("num_hidden_layers", value)
    if count > MAX_LAYERS:
        raise ValueError(
            f"num_hidden_layers must be at most {power_of_two(MAX_LAYERS)} (released models have "
            f"a few hundred layers), got {shown(value)}"
        )
    return count
