r"""Which encoding a config's family uses, decided from its row, and each kind built from it.

:func:`encoding_of` asks the row (:data:`posenc_ref.models.FAMILIES`): its encoding, unless a
config key switches it (:class:`~posenc_ref.models.traits.SwitchedBy`), after the checks its
traits ask for. One builder per kind reads the keys its trait names, with the config class's
defaults and other names for them. There is no ``model_type`` branch here.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from .._checks import check_dim
from ..models._config import MAX_WIDTH, bounded_int, flag, given, lookup, name
from ..models.family import Family
from ..models.traits import (
    AlibiBias,
    AttentionLayers,
    FixedByCode,
    Notes,
    SwitchedBy,
    T5Bias,
    Table,
)
from ..values import MAX_POSITION, t5_bucket_sizes
from ._kinds import Alibi, LearnedAbsolute, NoPE, RelativeKey, Sinusoidal, T5Buckets

HF = "transformers/models/"

# The key that BERT's descendants, ESM and GraniteMoE-Hybrid read to pick their encoding.
POSITION_EMBEDDING_TYPE = "position_embedding_type"


def code_of(row: Family, model_type: str) -> str:
    """Where the family's code decides it: ``transformers/models/<folder>/<file>: what``."""
    if " " not in row.source.split(":", 1)[0] and "/" in row.source.split(":", 1)[0]:
        return row.source  # a remote family's public code: owner/repository path
    folder = row.folder
    if folder is None:
        file = row.source.split(".py", 1)[0]
        folder = file.removeprefix("modeling_") if file.startswith("modeling_") else model_type
    return f"{HF}{folder}/{row.source}"


# --------------------------------------------------------------------------- the decision


def encoding_of(config: Mapping[str, Any], row: Family, model_type: str) -> str:
    """The encoding the family's code uses for this config (a key may switch it)."""
    switch = row.trait(SwitchedBy)
    if row.encoding == "rope" and switch is None:
        return "rope"  # the RoPE reader reads the rest
    reads_type = switch is not None and switch.key == POSITION_EMBEDDING_TYPE
    if not reads_type and config.get(POSITION_EMBEDDING_TYPE) is not None:
        raise ValueError(
            f"position_embedding_type is not read by {model_type}'s code (only BERT-like "
            "families, ESM and GraniteMoE-Hybrid read it)"
        )
    fixed = row.trait(FixedByCode)
    if fixed is not None:
        check_fixed(config, fixed)
    if switch is None:
        return row.encoding
    return switched(config, switch, model_type)


def switched(config: Mapping[str, Any], switch: SwitchedBy, model_type: str) -> str:
    """The encoding a switch picks; a value it does not know is an error naming those it does."""
    if all(isinstance(value, bool) for value in switch.encodings):
        value = flag(switch.key, given(config, (switch.key,), switch.default))
    else:
        value = given(config, (switch.key,), switch.default)
        if value is not None:
            name(switch.key, value)
    if value not in switch.encodings:
        accepted = ["absent" if v is None else repr(v) for v in switch.encodings]
        listed = ", ".join(accepted[:-1]) + " or " + accepted[-1]
        raise ValueError(f"{switch.key} must be {listed} for {model_type}, got {value!r}")
    return switch.encodings[value]


def check_fixed(config: Mapping[str, Any], fixed: FixedByCode) -> None:
    """Keys whose value the code fixes: any other value describes another model."""
    for path, expected in fixed.values.items():
        parent = path.rsplit(".", 1)[0] if "." in path else None
        if parent is not None:
            holder = lookup(config, parent)
            if holder is not None and not isinstance(holder, Mapping):
                raise TypeError(f"{parent} must be a dict, got a {type(holder).__name__}")
        value = lookup(config, path)
        value = expected if value is None else value
        if value != expected or isinstance(value, bool) != isinstance(expected, bool):
            raise ValueError(
                f"{path} is {value!r}, but {fixed.why}; this config describes a model "
                "transformers does not run as it was trained"
            )


def notes_of(config: Mapping[str, Any], row: Family) -> tuple[str, ...]:
    """The row's notes for this config."""
    notes = row.trait(Notes)
    if notes is None or (notes.when_given and config.get(notes.when_given) is None):
        return ()
    return notes.notes


# --------------------------------------------------------------------------- the builders


def read_int(config, row: Family, key_default: tuple[str, int], model_type: str, *, minimum=1,
             maximum: int) -> int:  # fmt: skip
    """An integer key of the row (or another name for it), the config class's default if absent."""
    key, default = key_default
    value = given(config, (key, *row.other_names(key)), default)
    return bounded_int(key, value, model_type, minimum=minimum, maximum=maximum)


def offset_of(config, table: Table, model_type: str) -> int:
    """The row a token at position 0 reads (``padding_idx + 1`` where the table says so)."""
    if table.offset is not None:
        return table.offset
    pad = bounded_int("pad_token_id", given(config, ("pad_token_id",), table.pad), model_type,
                      minimum=0, maximum=MAX_POSITION)  # fmt: skip
    return pad + 1


def build_learned(config, row: Family, model_type: str, notes) -> LearnedAbsolute:
    table = row.trait(Table)
    positions = read_int(config, row, table.positions, model_type, maximum=MAX_POSITION)
    offset = offset_of(config, table, model_type)
    if table.rows_hold_offset:
        if positions <= offset:
            raise ValueError(
                f"max_position_embeddings={positions} leaves no position for {model_type}: its "
                f"first {offset} rows are reserved (padding_idx + 1)"
            )
        positions -= offset
    width = read_int(config, row, table.width, model_type, maximum=MAX_WIDTH)
    pad = offset - 1 if table.offset is None else None
    source = code_of(row, model_type)
    return LearnedAbsolute(model_type, source, positions, offset, width, pad, notes=notes)


def build_sinusoidal(config, row: Family, model_type: str, notes) -> Sinusoidal:
    table = row.trait(Table)
    positions = read_int(config, row, table.positions, model_type, maximum=MAX_POSITION)
    width = read_int(config, row, table.width, model_type, maximum=MAX_WIDTH)
    if width % 2 or width < (4 if table.variant == "fairseq" else 2):
        raise ValueError(
            f"{table.width[0]}={width}: posenc_ref builds sinusoidal tables of even width "
            f"(>= 4 for fairseq's formula, which divides by d/2 - 1); {model_type}'s code pads "
            "or splits odd widths its own way"
        )
    check_dim(table.width[0], width)
    offset = offset_of(config, table, model_type)
    pad = offset - 1 if table.offset is None else None
    return Sinusoidal(model_type, code_of(row, model_type), table.variant, width, 10000.0,
                      offset, positions, pad, notes=notes)  # fmt: skip


def build_alibi(config, row: Family, model_type: str, notes) -> Alibi:
    alibi = row.trait(AlibiBias)
    heads = read_int(config, row, alibi.heads, model_type, maximum=MAX_WIDTH)
    scale = 1.0
    if alibi.width is not None:  # added before the model's 1/sqrt(head_dim) (Falcon)
        width = read_int(config, row, alibi.width, model_type, maximum=MAX_WIDTH)
        if width % heads:
            raise ValueError(
                f"hidden_size={width} is not a multiple of num_attention_heads={heads}"
            )
        scale = 1.0 / math.sqrt(width // heads)
    return Alibi(model_type, code_of(row, model_type), heads, scale, notes=notes)


def build_t5(config, row: Family, model_type: str, notes) -> T5Buckets:
    t5 = row.trait(T5Bias)
    buckets = read_int(config, row, ("relative_attention_num_buckets", 32), model_type,
                       maximum=MAX_WIDTH)  # fmt: skip
    distance = bounded_int(
        "relative_attention_max_distance",
        given(config, ("relative_attention_max_distance",), 128),
        model_type, minimum=1, maximum=2**62,
    )  # fmt: skip
    heads = read_int(config, row, t5.heads, model_type, maximum=MAX_WIDTH)
    encoding = T5Buckets(model_type, code_of(row, model_type), buckets, distance, heads,
                         per_layer=t5.per_layer, notes=notes)  # fmt: skip
    for bidirectional in (True, False):  # the function's own checks of buckets and distance
        t5_bucket_sizes(bidirectional, buckets, distance)
    return encoding


def build_relative_key(config, row: Family, model_type: str, notes) -> RelativeKey:
    variant = given(config, (POSITION_EMBEDDING_TYPE,), "absolute")
    table = row.trait(Table)
    positions = read_int(config, row, table.positions, model_type, maximum=MAX_POSITION)
    source = "transformers 4.x modeling_bert.py (removed in 5.0, PR #41170)"
    return RelativeKey(model_type, source, variant, positions, notes=notes)


def build_nope(config, row: Family, model_type: str, notes) -> NoPE:
    counted = row.trait(AttentionLayers)
    layers, attention = counted.rule(config) if counted is not None else (None, None)
    if counted is None and row.instead:  # no layer count to tell it: the row says what orders
        notes = (row.instead, *notes)
    return NoPE(model_type, code_of(row, model_type), attention, layers, notes=notes)


BUILDERS = {
    "learned": (build_learned, Table),
    "sinusoidal": (build_sinusoidal, Table),
    "alibi": (build_alibi, AlibiBias),
    "t5": (build_t5, T5Bias),
    "relative_key": (build_relative_key, Table),
    "nope": (build_nope, None),
}
"""Encoding -> (its builder, the trait it reads: a row without it cannot be built)."""


def not_rope(row: Family) -> tuple[str, ...]:
    """The encodings other than RoPE the family's code can use (by default, or by its key)."""
    switch = row.trait(SwitchedBy)
    picks = switch.encodings.values() if switch is not None else ()
    return tuple(e for e in dict.fromkeys((row.encoding, *picks)) if e != "rope")


def unbuilt(row: Family, encoding: str) -> bool:
    """Whether the row lacks what the builder of ``encoding`` reads."""
    _, needs = BUILDERS[encoding]
    return needs is not None and row.trait(needs) is None
