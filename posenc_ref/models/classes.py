r"""What transformers' config classes fill in and rewrite, read from ``class_data.json``.

A released ``config.json`` leaves out every key whose value is its config class's default, and
a wrapper's file may leave out the sub-config that holds its language model. transformers fills
both from the class; so does the reader, from ``class_data.json``, which
``python -m tests.class_data --write`` generates by instantiating each class of transformers 5.23
(its defaults, the keys it derives from others, the keys it overwrites, where a wrapper keeps its
language model) and ``tests/test_class_data.py`` checks against the installed transformers. The
answer never depends on whether transformers is installed: nothing here imports it.

Standard library only: the reader runs without torch or NumPy.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from functools import cache
from importlib import resources
from typing import Any

__all__ = [
    "class_data",
    "class_of",
    "wrapper_of",
    "architecture_type",
    "transformers_types",
    "with_class_defaults",
    "DATA_TRANSFORMERS_VERSION",
]

# Keys filled from the class even where the family's row has a default of its own: the widths,
# counts and lengths. The RoPE dict, its base and the partial factor stay with the row (each
# proven equal to the class's by tests/test_class_data.py), since the row knows which layer
# type each belongs to.
ROW_KEYS = frozenset({"rope_parameters", "partial_rotary_factor"})


@cache
def class_data() -> dict[str, Any]:
    """The generated data: ``classes``, ``wrappers``, ``architectures``, ``model_types``."""
    text = resources.files(__package__).joinpath("class_data.json").read_text("utf-8")
    return json.loads(text)


DATA_TRANSFORMERS_VERSION = "5.23"


def class_of(model_type: object) -> dict[str, Any] | None:
    """The class entry of a ``model_type``: ``defaults``, ``derived``, ``overwritten``, ...."""
    return class_data()["classes"].get(model_type) if isinstance(model_type, str) else None


def wrapper_of(model_type: object) -> dict[str, Any] | None:
    """Where a wrapper class keeps its language model: ``path``, ``model_type``, ``flat``."""
    return class_data()["wrappers"].get(model_type) if isinstance(model_type, str) else None


def architecture_type(name: object) -> str | None:
    """The ``model_type`` of a transformers class named in ``architectures``, or None."""
    return class_data()["architectures"].get(name) if isinstance(name, str) else None


@cache
def transformers_types() -> frozenset[str]:
    """Every ``model_type`` transformers 5.23 defines (whether or not the reader has its row)."""
    return frozenset(class_data()["model_types"] or ())


def given_under_any_name(config: Mapping[str, Any], key: str, names: Mapping[str, str]) -> bool:
    """Whether the config has ``key`` under its own name or one the class maps to it.

    An explicit null counts: the class keeps it (GPT-J's ``"rotary_dim": null`` rotates the whole
    head; its default, 64, applies only where the key is absent).
    """
    if key in config:
        return True
    return any(std in config for std, own in names.items() if own == key) or (
        key in names and names[key] in config
    )


def with_class_defaults(
    config: Mapping[str, Any], model_type: str | None, reads: frozenset[str]
) -> tuple[dict[str, Any], tuple[str, ...]]:
    """``(the config with the class's defaults for the keys it leaves out, the keys filled)``.

    Only the keys in ``reads`` (what the family's reader reads) are filled, and never the RoPE
    dict or the partial factor, which the family's row fills per layer type. A key the class
    derives from others (Llama's ``head_dim`` from ``hidden_size / num_attention_heads``) is not
    a default: the reader's rule computes it.
    """
    entry = class_of(model_type)
    if entry is None:
        return dict(config), ()
    names = entry.get("attribute_map", {})
    out, filled = dict(config), []
    for key, value in entry["defaults"].items():
        if key not in reads or key in ROW_KEYS or value is None:
            continue
        if not given_under_any_name(out, key, names):
            out[key] = value
            filled.append(key)
    return out, tuple(filled)
