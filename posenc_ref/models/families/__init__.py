r"""The family table: what a family's code decides and its config does not say.

One row per ``model_type`` of transformers 5.23 whose code posenc_ref reads, RoPE or not, in
files by kind: :mod:`~posenc_ref.models.families.conventional` (the families that follow
transformers' conventions, one line each), :mod:`~posenc_ref.models.families.exceptions` (RoPE
families with an exception, each a row with traits),
:mod:`~posenc_ref.models.families.not_implemented` (RoPE that posenc_ref refuses, with the
feature it lacks) and :mod:`~posenc_ref.models.families.without_rope` (learned and sinusoidal
tables, ALiBi, T5 buckets, none). They are merged into :data:`FAMILIES`, and no ``model_type``
may be in two of them.

Every row is proven by running the family's own code (tests/test_models_hf.py,
tests/test_encodings.py, and the sweep over every family): never assumed from a convention. To
add a RoPE type, add an entry to :data:`~posenc_ref.models.ROPE_TYPES`.

The first step of both readers is here too: :func:`find_family` finds a config's row (a
wrapper's through its language model's) and refuses what no row can stand for.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import cache
from typing import Any

from ..._checks import check_layout
from ..family import Family
from ..spec import NoRopeError
from ..traits import Ignored, LegacyKeys, ReadAs, RopeNotImplemented, SwitchedBy
from .conventional import CONVENTIONAL
from .exceptions import EXCEPTIONS
from .not_implemented import NOT_IMPLEMENTED_ROWS
from .without_rope import WITHOUT_ROPE

__all__ = [
    "FAMILIES",
    "CONVENTIONAL",
    "EXCEPTIONS",
    "NOT_IMPLEMENTED_ROWS",
    "WITHOUT_ROPE",
    "merged",
    "NO_ROPE",
    "NOT_IMPLEMENTED",
    "TEXT_MODEL_TYPES",
    "TABLE_TRANSFORMERS_VERSION",
    "keys_read_by",
    "row_of",
    "instead",
    "find_family",
]

# The transformers release every row of the table was proven against (tests/test_models_hf.py
# and the sweep run each family's own code).
TABLE_TRANSFORMERS_VERSION = "5.23"


def merged(*tables: Mapping[str, Family]) -> dict[str, Family]:
    """One table from several, refusing a ``model_type`` that two of them list."""
    out: dict[str, Family] = {}
    for table in tables:
        twice = sorted(set(out) & set(table))
        if twice:
            raise ValueError(f"model_type(s) {twice} have rows in two files of the family table")
        out.update(table)
    return out


FAMILIES: dict[str, Family] = merged(CONVENTIONAL, EXCEPTIONS, NOT_IMPLEMENTED_ROWS, WITHOUT_ROPE)
"""``model_type`` -> its :class:`~posenc_ref.models.Family` row, RoPE or not."""

# Defaults of what a family's code uses instead of RoPE, by encoding (a row may say more).
INSTEAD = {
    "learned": "learned absolute position embeddings",
    "sinusoidal": "sinusoidal position embeddings",
    "alibi": "ALiBi attention biases",
    "t5": "T5 relative position buckets",
    "relative_key": "relative key embeddings",
    "nope": "no positional encoding",
}


def instead(row: Family) -> str:
    """What the family's code uses instead of RoPE, in words."""
    return row.instead or INSTEAD.get(row.encoding, row.encoding)


def never_rope(row: Family) -> bool:
    """The family's code uses no RoPE, whatever its config says."""
    switch = row.trait(SwitchedBy)
    return row.encoding != "rope" and not (switch and switch.can_pick_rope())


NO_ROPE: dict[str, str] = {name: instead(row) for name, row in FAMILIES.items() if never_rope(row)}
"""``model_type`` -> what its model uses instead of RoPE (``rope_spec`` raises
:class:`~posenc_ref.models.NoRopeError`); a view of :data:`FAMILIES`."""

NOT_IMPLEMENTED: dict[str, str] = {
    name: trait.feature
    for name, row in FAMILIES.items()
    if (trait := row.trait(RopeNotImplemented)) is not None
}
"""``model_type`` -> the feature its RoPE needs that posenc_ref does not implement; a view."""

TEXT_MODEL_TYPES: dict[str, str] = {
    name: trait.model_type for name, row in FAMILIES.items() if (trait := row.trait(ReadAs))
}
"""A wrapper's ``model_type`` -> the row its config is read with; a view of :data:`FAMILIES`."""


@cache
def keys_read_by() -> dict[str, dict[str, list[str]]]:
    """Every family-specific key -> {what it means there: the families that read it}."""
    out: dict[str, dict[str, list[str]]] = {}
    for name, family in FAMILIES.items():
        legacy = family.trait(LegacyKeys)
        for key, meaning in family.keys().items():
            layout = f" ({family.layout} layout)" if legacy and key in legacy.by_key else ""
            out.setdefault(key, {}).setdefault(meaning + layout, []).append(name)
    return out


# --------------------------------------------------------------------------- the first step

# RoPE-related keys of configs that run custom code (not transformers): known, not implemented.
NOT_IMPLEMENTED_KEYS = {
    "rope_ratio": "ChatGLM's base multiplier (custom code)",
    "use_dynamic_ntk": "Qwen (1.x) custom-code dynamic NTK",
    "use_logn_attn": "Qwen (1.x) custom-code log-n attention scaling",
    "rope_scaling_type": "a custom-code scaling switch",
}


def row_of(model_type: str | None) -> tuple[Family | None, str | None]:
    """``(the row, its key)`` of a ``model_type``: a wrapper's is its language model's."""
    if not model_type:
        return None, None
    row = FAMILIES.get(model_type)
    read_as = row.trait(ReadAs) if row is not None else None
    if read_as is not None:
        return FAMILIES[read_as.model_type], read_as.model_type
    return row, model_type


def find_family(
    config: Mapping[str, Any], model_type: str | None, layout: str | None
) -> tuple[Family, str | None]:
    """The RoPE reader's first step: the config's row, or the error that says why there is none.

    ``(row, key)``; ``layout=`` stands in for the row of a family not in the table. A family
    whose code uses no RoPE (for this config) raises :class:`~posenc_ref.models.NoRopeError`; a
    RoPE posenc_ref does not implement, ``NotImplementedError``; a key another family's code
    reads and this one's does not, ``ValueError``.
    """
    row, key = row_of(model_type)
    if row is not None and never_rope(row):
        raise NoRopeError(model_type, instead(row))
    if row is not None and (missing := row.trait(RopeNotImplemented)):
        # layout= cannot stand in for what these need
        raise NotImplementedError(
            f"{model_type}'s RoPE is not implemented by posenc_ref: {missing.feature}"
        )
    if row is None:
        if layout is None:
            raise unknown_family(model_type)
        row = Family(layout=check_layout("layout", layout), source="layout= given by the caller")
    elif layout is not None and check_layout("layout", layout) != row.layout:
        raise ValueError(
            f"layout={layout!r} contradicts {key}'s code, which pairs coordinates "
            f"{row.layout!r} ({row.source})"
        )
    switch = row.trait(SwitchedBy)
    if switch is not None:
        value, encoding = switch.choice(config)
        if encoding != "rope":
            raise NoRopeError(
                key, f"{instead(row)} ({switch.key} is {value!r}, not {switch.rope_value()!r})"
            )
    for unread, what in NOT_IMPLEMENTED_KEYS.items():
        if config.get(unread) not in (None, False):
            raise NotImplementedError(f"{unread} ({what}) is not implemented by posenc_ref")
    refuse_other_families_keys(config, row, key)
    return row, key


def refuse_other_families_keys(config: Mapping[str, Any], row: Family, model_type) -> None:
    """A key some family's code reads but this family's does not: never silently ignored."""
    ignored = row.trait(Ignored)
    own = frozenset(row.keys()) | frozenset(ignored.why if ignored else ())
    for key, readers in keys_read_by().items():
        if key in own or config.get(key) in (None, False):
            continue
        how = "; ".join(f"{', '.join(names)}: {meaning}" for meaning, names in readers.items())
        whose = f"{model_type!r}'s" if model_type else "this config's"
        hint = ""
        if FAMILIES.get(model_type) is None:
            hint = (
                " (model_type is not in the family table, so posenc_ref cannot know whether its "
                "code reads it; if the model runs one of those families' code, give that "
                "model_type)"
            )
        raise ValueError(f"{key} is read by {how}; not by {whose} code{hint}")


def installed_transformers() -> tuple[str | None, set[str]]:
    """The installed transformers' version and model types (empty when it is not installed)."""
    try:
        import transformers
        from transformers.models.auto.configuration_auto import CONFIG_MAPPING_NAMES
    except Exception:  # noqa: BLE001 (absent or broken: either way, not a source of facts)
        return None, set()
    return transformers.__version__, set(CONFIG_MAPPING_NAMES)


def unknown_family(model_type: str | None) -> ValueError:
    """The error for a ``model_type`` without a row: what is missing, and the way out."""
    version, types = installed_transformers()
    if model_type is None:
        where = "the config has no model_type"
    elif model_type == "":  # a sub-config without a type of its own (Evolla's SaProt encoder)
        where = "the config's model_type is empty (a sub-config with no type of its own)"
    elif model_type in types:
        where = (
            f"model_type {model_type!r} is defined by the installed transformers {version}, but "
            f"posenc_ref's family table (proven against transformers "
            f"{TABLE_TRANSFORMERS_VERSION}) has no entry for it"
        )
    else:
        installed = f"transformers {version}" if version else "transformers (not installed)"
        where = (
            f"model_type {model_type!r} is neither in posenc_ref's family table nor in {installed}"
        )
    return ValueError(
        f"{where}: which coordinates pair, how many rotate and which layers rotate are decided "
        "by a family's code, not by its config, so posenc_ref needs the family's entry in "
        "posenc_ref.models.FAMILIES (one line in posenc_ref/models/families/conventional.py, or "
        "a row with traits in exceptions.py). If the code rotates the "
        "first int(head_dim * partial_rotary_factor) coordinates of every layer's head and "
        "nothing else, pass layout='half' (HF's rotate_half) or layout='interleaved' (pairs "
        "2i, 2i+1) and check the result against the model with posenc_ref.testing"
    )
