r"""Keys a config carries that its family's code does not read: ignored, noted, or refused.

transformers stores every key of ``config.json`` on the config object and the family's code reads
the ones it needs: a key some other family reads (``use_qk_norm``, ``rotary_dim``,
``rope_interleave``) is simply ignored. posenc_ref does the same, and says so: each such key is a
note of the result (``inspect`` prints it under "not read by this family's code"). A key is
refused only where its value contradicts what the code does (``"rope_interleave": false`` for a
family that always interleaves; a ``rotary_dim`` other than the width the code rotates), since the
config then describes a model that the code does not run. The last step of
:func:`~posenc_ref.models.rope_spec`, once the spec is known.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from functools import cache
from typing import Any

from ._config import is_number, layer_count, shown
from .families import FAMILIES
from .family import Family
from .traits import Ignored, LayoutFlag, LegacyKeys, ReadElsewhere, RopeLayers, SwitchedBy

__all__ = ["with_notes", "unread_notes", "ignored_notes", "readers_of"]


def with_notes(spec: Any, config: Mapping[str, Any], row: Family, said: tuple[str, ...]) -> Any:
    """The spec with the notes of what the code ignores (refused where that contradicts it)."""
    notes = (*said, *spec.notes, *unread_notes(config, row, spec),
             *ignored_notes(config, row, spec), *engine_notes(config),
             *unread_entries(config, row), *stray_rope_notes(config))  # fmt: skip
    return replace(spec, notes=notes) if notes else spec


def unread_entries(config: Mapping[str, Any], row: Family) -> tuple[str, ...]:
    """Entries of a per-layer list past the last layer: the code never reads them."""
    layers = row.trait(RopeLayers)
    listed, count = config.get("no_rope_layers"), layer_count(config)
    if layers is None or "no_rope_layers" not in layers.reads or count is None:
        return ()
    if not isinstance(listed, (list, tuple)) or len(listed) <= count:
        return ()
    return (
        f"no_rope_layers lists {len(listed)} entries for num_hidden_layers={count}: layer i "
        f"reads entry i, so the last {len(listed) - count} are never read (transformers accepts "
        "the config and ignores them too)",
    )


def stray_rope_notes(config: Mapping[str, Any]) -> tuple[str, ...]:
    """Entries of a RoPE dict keyed by layer types that sit beside the types: read by no layer."""
    rope, types = config.get("rope_parameters"), config.get("layer_types")
    if not isinstance(rope, Mapping) or not isinstance(types, (list, tuple)):
        return ()
    nested = [k for k in rope if k in types and isinstance(rope[k], Mapping)]
    stray = [k for k in rope if k not in types]
    if not nested or not stray:
        return ()
    return (
        f"not read: rope_parameters' {', '.join(stray)} beside its layer types' dicts "
        f"({', '.join(nested)}): transformers reads rope_parameters[layer_type] only",
    )


def engine_notes(config: Mapping[str, Any]) -> tuple[str, ...]:
    """Keys transformers ignores and serving engines act on (Qwen2.5-1M's dual chunk attention)."""
    dca = config.get("dual_chunk_attention_config")
    if not isinstance(dca, Mapping):
        return ()
    # vLLM's and SGLang's defaults where a key is missing
    chunk, local = dca.get("chunk_size", 8192), dca.get("local_size", 1024)
    return (
        f"dual_chunk_attention_config (chunk_size {chunk}, local_size {local}): transformers "
        "ignores it and runs the plain RoPE above; vLLM and SGLang run dual chunk attention, "
        f"whose relative distances differ from the plain ones past chunk_size - local_size = "
        f"{chunk - local if is_number(chunk) and is_number(local) else '?'} positions and never "
        "exceed chunk_size (posenc_ref.dual_chunk.dual_chunk_distance gives them)",
    )


def how_read(key: str) -> str:
    """What ``key`` means to each family whose code reads it, in words."""
    meanings: dict[str, list[str]] = {}
    for name, trait in readers_of().get(key, []):
        meaning = trait.keys()[key]
        if isinstance(trait, LegacyKeys):
            meaning += f" ({FAMILIES[name].layout} layout)"
        meanings.setdefault(meaning, []).append(name)
    return "; ".join(f"{', '.join(names)}: {meaning}" for meaning, names in meanings.items())


@cache
def readers_of() -> dict[str, list[tuple[str, object]]]:
    """Every family-specific top-level key -> ``(family, the trait that reads it)``, in order."""
    out: dict[str, list[tuple[str, object]]] = {}
    for name, family in FAMILIES.items():
        for trait in family.traits:
            for key in trait.keys():
                out.setdefault(key, []).append((name, trait))
    return out


def own_keys(row: Family) -> frozenset[str]:
    """Keys this family's code reads (or its row says why it may ignore)."""
    ignored, elsewhere = row.trait(Ignored), row.trait(ReadElsewhere)
    switch = row.trait(SwitchedBy)
    return (
        frozenset(row.keys())
        | frozenset(ignored.why if ignored else ())
        | frozenset(elsewhere.why if elsewhere else ())
        | frozenset({switch.key} if switch else ())
    )


def unread_notes(config: Mapping[str, Any], row: Family, spec: Any) -> tuple[str, ...]:
    """One note per key another family reads and this one's does not; raise on a contradiction.

    ``spec``: what the family's code computes (a :class:`~posenc_ref.models.RopeSpec`).
    """
    own = own_keys(row)
    notes = []
    for key, readers in readers_of().items():
        value = config.get(key)
        if key in own or value is None:
            continue
        names = ", ".join(dict.fromkeys(name for name, _ in readers))
        checked = [verdict(key, value, trait, spec) for _, trait in readers]
        checked = [v for v in checked if v is not None]
        if value is False and not checked:
            continue  # a switch left off says nothing the code could contradict
        if checked and not any(agrees for agrees, _ in checked):
            raise ValueError(
                f"{key} = {shown(value)} contradicts {spec.model_type}'s code, which does not read "
                f"it ({checked[0][1]}); {key} is read by {how_read(key)}. This config describes a "
                "model the code does not run: drop the key, or give the model_type whose code "
                "reads it"
            )
        said = next((what for agrees, what in checked if agrees), None)
        notes.append(
            f"not read by this family's code: {key} = {shown(value)} (read by {names})"
            + (f"; its value agrees: {said}" if said else "")
        )
    return tuple(notes)


def verdict(key: str, value: Any, trait: object, spec: Any) -> tuple[bool, str] | None:
    """``(agrees, what the code does)`` where the key's meaning can be compared, else None."""
    if isinstance(trait, LayoutFlag):
        if not isinstance(value, bool):
            return None
        says = "interleaved" if value else "half"
        return says == spec.layout, f"the code pairs coordinates {spec.layout!r}"
    if isinstance(trait, LegacyKeys) and is_number(value):
        legacy = trait.by_key[key]
        converted = legacy.convert(value, spec.head_dim) if legacy.convert else value
        if legacy.quantity == "rope_theta":
            return converted == spec.base, f"the code's base is {spec.base:g}"
        width = converted if legacy.quantity == "rotary_dim" else converted * spec.head_dim
        return width == spec.rotary_dim, (
            f"the code rotates {spec.rotary_dim} of {spec.head_dim} coordinates"
        )
    return None


def ignored_notes(config: Mapping[str, Any], row: Family, spec: Any) -> tuple[str, ...]:
    """The row's :class:`~posenc_ref.models.traits.Ignored` keys the config gives, noted."""
    ignored = row.trait(Ignored)
    notes = []
    for key, why in (ignored.why if ignored else {}).items():
        value = config.get(key)
        if value is None:
            continue
        layer_type, quantity = ignored.compare.get(key, (None, None))
        if layer_type is not None and layer_type != spec.layer_type:
            continue  # the spec of that layer type says it
        text = f"not read by this family's code: {key} = {shown(value)} ({why})"
        if quantity is not None and is_number(value):
            computed = {"base": spec.base, "rotary_dim": spec.rotary_dim,
                        "partial": spec.rotary_dim / spec.head_dim}[quantity]  # fmt: skip
            close = abs(computed - value) <= 0.01 * abs(computed)  # a factor rounds to the width
            where = f" of the {layer_type} layers" if layer_type else ""
            text += (
                f"; its value agrees with the {quantity}{where} the code computes ({computed:g})"
                if close
                else f"; the code computes {quantity}{where} {computed:g} instead"
            )
        notes.append(text)
    return tuple(notes)
