r"""The family table: what a family's code decides and its config does not say.

One row per ``model_type`` of transformers 5.23 whose code posenc_ref reads, RoPE or not, in
files by kind: :mod:`~posenc_ref.models.families.conventional` (the families that follow
transformers' conventions, one line each), :mod:`~posenc_ref.models.families.exceptions` (RoPE
families with an exception, each a row with traits),
:mod:`~posenc_ref.models.families.mla_variants` (MLA families whose rope part needs more
than the conventions), :mod:`~posenc_ref.models.families.config_classes` (families whose config
class reads a released file its own way), :mod:`~posenc_ref.models.families.compressed`
(DeepSeek-V4's compressed keys), :mod:`~posenc_ref.models.families.not_implemented` (RoPE that
posenc_ref refuses, with the feature it lacks) and
:mod:`~posenc_ref.models.families.without_rope` (learned and sinusoidal tables, ALiBi, T5
buckets, none). They are merged into :data:`FAMILIES`, and no ``model_type``
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
from ..classes import DATA_TRANSFORMERS_VERSION, transformers_types
from ..family import Family
from ..spec import NoRopeError
from ..traits import (
    Ignored,
    LegacyKeys,
    NeedsFeature,
    ReadAs,
    RopeNotImplemented,
    SwitchedBy,
)
from .compressed import COMPRESSED
from .config_classes import CONFIG_CLASSES
from .conventional import CONVENTIONAL
from .exceptions import EXCEPTIONS
from .media import MEDIA, PARTS
from .mla_variants import MLA_VARIANTS
from .not_implemented import NOT_IMPLEMENTED_ROWS
from .remote import ARCHITECTURES, REMOTE
from .served import SERVED
from .without_rope import WITHOUT_ROPE

__all__ = [
    "FAMILIES",
    "CONVENTIONAL",
    "EXCEPTIONS",
    "MLA_VARIANTS",
    "CONFIG_CLASSES",
    "COMPRESSED",
    "REMOTE",
    "SERVED",
    "ARCHITECTURES",
    "NOT_IMPLEMENTED_ROWS",
    "WITHOUT_ROPE",
    "MEDIA",
    "PARTS",
    "merged",
    "NO_ROPE",
    "NOT_IMPLEMENTED",
    "TEXT_MODEL_TYPES",
    "TABLE_TRANSFORMERS_VERSION",
    "keys_read_by",
    "row_of",
    "instead",
    "find_family",
    "RENAMED_TEXT",
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


FAMILIES: dict[str, Family] = merged(
    CONVENTIONAL, EXCEPTIONS, MLA_VARIANTS, CONFIG_CLASSES, COMPRESSED, REMOTE,
    NOT_IMPLEMENTED_ROWS, WITHOUT_ROPE, MEDIA, SERVED,
)  # fmt: skip
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


# A wrapper's config class that renames its text part's model_type before building it:
# (wrapper, the text part's name as released) -> the name transformers reads it as.
RENAMED_TEXT: dict[tuple[str, str], tuple[str, str]] = {
    ("kimi_k25", "kimi_k2"): (
        "deepseek_v3",
        "configuration_kimi_k25.py: KimiK25Config.__post_init__ renames a text_config of "
        "model_type 'kimi_k2' to 'deepseek_v3'",
    ),
    ("exaone4_5", "exaone4_5_text"): (
        "exaone4",
        "configuration_exaone4_5.py: Exaone4_5Config.__post_init__ renames a text_config of "
        "model_type 'exaone4_5_text' to 'exaone4'",
    ),
}


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
    "use_dynamic_ntk": "Qwen-1's dynamic NTK: past seq_length tokens its modeling_qwen.py raises "
    "the base per call by alpha ** (d / (d - 2)), alpha = 2 ** ceil(log2(L / seq_length) + 1) - "
    "1; vLLM does not implement it and serves plain RoPE, the same within seq_length",
    "use_logn_attn": "Qwen-1's log-n attention: its modeling_qwen.py scales the query at "
    "position t > seq_length by log(t) / log(seq_length); vLLM does not implement it",
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
    needs = row.trait(NeedsFeature) if row is not None else None
    if needs is not None and config.get(needs.key):
        raise NotImplementedError(
            f"{model_type}'s RoPE with {needs.key} is not implemented by posenc_ref: "
            + needs.feature
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
        if config.get(unread) not in (None, False) and unread not in row.keys():
            raise NotImplementedError(f"{unread} ({what}) is not implemented by posenc_ref")
    if FAMILIES.get(key) is None:
        refuse_other_families_keys(config, row, key)
    return row, key


def how_read(key: str) -> str:
    """What ``key`` means to each family whose code reads it, in words."""
    readers = keys_read_by().get(key, {})
    return "; ".join(f"{', '.join(names)}: {meaning}" for meaning, names in readers.items())


def refuse_other_families_keys(config: Mapping[str, Any], row: Family, model_type) -> None:
    """For a family not in the table (``layout=``): a key some family's code reads is refused.

    posenc_ref cannot know whether such a family's code reads it. A family in the table ignores
    the keys its code does not read, as transformers does (:mod:`posenc_ref.models._unread`).
    """
    ignored = row.trait(Ignored)
    own = frozenset(row.keys()) | frozenset(ignored.why if ignored else ())
    for key in keys_read_by():
        if key in own or config.get(key) in (None, False):
            continue
        whose = f"{model_type!r}'s" if model_type else "this config's"
        raise ValueError(
            f"{key} is read by {how_read(key)}; not by {whose} code (model_type is not in the "
            "family table, so posenc_ref cannot know whether its code reads it; if the model runs "
            "one of those families' code, give that model_type)"
        )


@cache
def installed_transformers() -> tuple[str | None, set[str]]:
    """The installed transformers' version and model types (empty when it is not installed).

    Read from its files where they hold the table as data (transformers 5: ``auto_mappings.py``
    plus the literal additions of ``configuration_auto.py``), since importing transformers
    imports torch (seconds, for a refusal's words); otherwise by importing it.
    tests/test_reader_without_tensors.py checks the two ways agree.
    """
    try:
        from importlib import metadata

        version = metadata.version("transformers")
        types = _transformers_types_from_files()
    except Exception:  # noqa: BLE001 (not installed, or not laid out as read above)
        types = None
    if types is not None:
        return version, types
    try:
        import transformers
        from transformers.models.auto.configuration_auto import CONFIG_MAPPING_NAMES
    except Exception:  # noqa: BLE001 (absent or broken: either way, not a source of facts)
        return None, set()
    return transformers.__version__, set(CONFIG_MAPPING_NAMES)


def _transformers_types_from_files() -> set[str] | None:
    """The model types of the installed transformers, read from its files (never run), or None."""
    import ast
    import importlib.util
    from pathlib import Path

    spec = importlib.util.find_spec("transformers")
    if spec is None or spec.origin is None:
        return None
    auto = Path(spec.origin).parent / "models" / "auto"
    types: set[str] = set()
    for name in ("auto_mappings.py", "configuration_auto.py"):
        for node in ast.parse((auto / name).read_text(encoding="utf-8")).body:
            types |= _literal_keys(node)
    return types or None


def _literal_keys(node) -> set[str]:
    """The keys a statement adds to CONFIG_MAPPING_NAMES, where it writes them as literals."""
    import ast

    if (
        isinstance(node, ast.Assign)
        and getattr(node.targets[0], "id", "") == "CONFIG_MAPPING_NAMES"
    ):
        call = node.value  # OrderedDict([(type, class), ...]) or OrderedDict(**{...}, **...)
        found = set()
        for arg in getattr(call, "args", []):
            found |= {pair[0] for pair in ast.literal_eval(arg)}
        for keyword in getattr(call, "keywords", []):
            if isinstance(keyword.value, ast.Dict):
                found |= set(ast.literal_eval(keyword.value))
        return found
    if (
        isinstance(node, ast.Expr)
        and isinstance(node.value, ast.Call)
        and ast.unparse(node.value.func) == "CONFIG_MAPPING_NAMES.update"
    ):
        return set(ast.literal_eval(node.value.args[0]))
    return set()


def unknown_family(model_type: str | None) -> ValueError:
    """The error for a ``model_type`` without a row: what is missing, and the way out."""
    version, types = DATA_TRANSFORMERS_VERSION, transformers_types()
    if model_type is None:
        where = "the config has no model_type, and no architectures posenc_ref knows"
    elif model_type == "":  # a sub-config without a type of its own (Evolla's SaProt encoder)
        where = "the config's model_type is empty (a sub-config with no type of its own)"
    elif model_type in types:
        where = (
            f"model_type {model_type!r} is defined by transformers {version}, but "
            f"posenc_ref's family table (proven against transformers "
            f"{TABLE_TRANSFORMERS_VERSION}) has no entry for it"
        )
    else:
        where = (
            f"model_type {model_type!r} is neither in posenc_ref's family table nor in "
            f"transformers {version}, and its architectures name no family posenc_ref knows"
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
