r"""Step 1 of both readers: a config's language model, found by one rule, and its family.

A config is read where its language model's keys are:

- **one rule for wrappers.** A sub-config that holds the language model is found whatever the
  wrapper: the attribute transformers' class keeps it in (``class_data.json``: ``text_config``,
  ``thinker_config.text_config``, ``decoder``, ...), the one a served family's code reads
  (``llm_config``, ``language_config``), else the first of :data:`LANGUAGE_KEYS` the config
  holds. The reader descends through every level (Qwen2.5-Omni: ``thinker_config``, then its
  ``text_config``). A sub-config without ``model_type`` is the class's default type there. The
  wrapper's own top-level RoPE keys are not the language model's: transformers builds the
  language model from the sub-config alone, and a note says they were not read.
- **flat configs** (GLM-4.1V, MiniCPM-V, Molmo) are read at their top level, where their text
  keys are, as the model's code read them at release; where transformers 5.23's class builds its
  text config from defaults instead, a note says so.
- **the family** is the ``model_type``'s; a ``model_type`` the reader does not know (or none) is
  identified from ``architectures`` (vLLM's registry decides by it alone), then from
  ``auto_map``'s class names; a family whose code decides by a key (Baichuan by
  ``hidden_size``, MiniCPM-V by ``version``) is resolved by its rule.

The family's row then fills the keys the config leaves out with its config class's defaults
(:meth:`~posenc_ref.models.Family.resolve`, :mod:`posenc_ref.models.classes`). Standard library
only.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ._config import lookup, name, rotary_part, shown
from .classes import architecture_type, transformers_types, wrapper_of
from .families import FAMILIES, PARTS, RENAMED_TEXT
from .families.remote import ARCHITECTURES
from .families.served_by import SERVED_ARCHITECTURES, SERVED_TYPES, Served

__all__ = ["language_of", "identify", "LANGUAGE_KEYS", "Identified"]

# Where configs keep their language model, when nothing says which (checked in this order).
LANGUAGE_KEYS = ("text_config", "llm_config", "language_config", "thinker_config", "text_model",
                 "llm_cfg", "decoder_config")  # fmt: skip

# Keys that make a config's top level a language model's (a flat multimodal config).
TEXT_KEYS = ("hidden_size", "num_attention_heads", "num_hidden_layers", "head_dim",
             "rope_theta", "rope_scaling", "rope_parameters", "partial_rotary_factor")  # fmt: skip

# Top-level keys of a wrapper that are not its language model's once it has a sub-config.
WRAPPER_ROPE_KEYS = ("rope_theta", "rope_scaling", "rope_parameters", "partial_rotary_factor")

# Flat layouts that today's transformers reads differently, with where the release read them.
LEGACY_FLAT = {
    "glm4v": (
        "GLM-4.1V's flat config is read as its code read it at release: transformers 4.53's "
        "Glm4vConfig built text_config from the top-level keys when the file has none ('For BC "
        "use all kwargs to init TextConfig': zRzRzRzRzRzRzR/transformers@f680d40f src/"
        "transformers/models/glm4v/configuration_glm4v.py, Glm4vConfig.__init__), so "
        "partial_rotary_factor 0.5 and mrope_section apply; transformers 5.23's Glm4vConfig "
        "builds Glm4vTextConfig's defaults instead (its text model then cannot split its "
        "M-RoPE table), and vLLM, which reads the config transformers builds, has no such "
        "fallback either"
    ),
}

# The cap on wrappers inside wrappers (Qwen2.5-Omni: two levels).
MAX_DEPTH = 8


@dataclass(frozen=True)
class Identified:
    """A config's family: the row's key, where its language model is, and how it was found."""

    key: str | None
    language: str | None = None  # a served wrapper's sub-config of its language model
    notes: tuple[str, ...] = ()


def known(model_type: object) -> bool:
    """A ``model_type`` with a row, or one transformers defines (read through its class)."""
    return isinstance(model_type, str) and (
        model_type in FAMILIES or model_type in transformers_types() or
        wrapper_of(model_type) is not None)  # fmt: skip


def served(entry: Served, config: Mapping[str, Any], what: str) -> Identified:
    """A served entry read for this config: its row, or the wrapper's sub-config."""
    if entry.language is not None:
        return Identified(None, entry.language, ())
    key, why = entry.row_key(config)
    if key is None:
        return Identified(None)
    if what == f"model_type {key!r}" and not why:
        return Identified(key)  # read as its own row: nothing to say
    note = f"{what} is read as {key!r}" + (f" ({why})" if why else "")
    return Identified(key, None, (note + (f": {entry.source}" if entry.source else ""),))


def identify(config: Mapping[str, Any], where: str = "") -> Identified:
    """The config's family, by ``model_type``, else ``architectures``, else ``auto_map``.

    ``where``: the sub-config's path, for errors (``"text_config."``).
    """
    model_type = config.get("model_type")
    if model_type is not None:
        name(f"{where}model_type", model_type)
    if model_type in SERVED_TYPES:
        return served(SERVED_TYPES[model_type], config, f"model_type {model_type!r}")
    if known(model_type):
        return Identified(model_type)
    for key, value in candidates(config):
        found = by_class_name(value, config, f"{key} {value!r}")
        if found is not None:
            if model_type is not None and found.key is not None:
                note = (
                    f"model_type {model_type!r} is in neither posenc_ref's family table nor "
                    f"transformers: the family {found.key!r} is inferred from {key} {value!r}, "
                    "as serving engines resolve it"
                )
                return Identified(found.key, found.language, (note, *found.notes[1:]))
            return found
    return Identified(model_type)


def candidates(config: Mapping[str, Any]) -> list[tuple[str, str]]:
    """``architectures``' names, then ``auto_map``'s class names, as ``(key, name)``."""
    out = []
    architectures = config.get("architectures")
    if isinstance(architectures, list):
        out += [("architectures", a) for a in architectures if isinstance(a, str)]
    auto_map = config.get("auto_map")
    for value in auto_map.values() if isinstance(auto_map, Mapping) else ():
        if isinstance(value, str):
            out.append(("auto_map", value.rsplit(".", 1)[-1]))
    return out


def by_class_name(klass: str, config: Mapping[str, Any], what: str) -> Identified | None:
    """The family a class name stands for: vLLM's registry, remote rows, transformers' classes."""
    if klass in SERVED_ARCHITECTURES:
        found = served(SERVED_ARCHITECTURES[klass], config, what)
        return found if found.key is not None or found.language is not None else None
    key = ARCHITECTURES.get(klass) or architecture_type(klass)
    if key is None:
        return None
    if key in SERVED_TYPES:
        return served(SERVED_TYPES[key], config, what)
    return Identified(key, None, (f"{what} is read as {key!r}",))


# --------------------------------------------------------------------------- the language model


@dataclass(frozen=True)
class Part:
    """A wrapper's sub-config that holds the language model."""

    path: str
    config: Mapping[str, Any] | None  # None: the config has none
    default_type: str | None  # the model_type the class builds there by default
    flat: bool | None  # transformers 5.23 builds it from the top-level keys
    instead_of: str | None = None  # the class's own path, where the config has another


def language_part(config: Mapping[str, Any], found: Identified) -> Part | None:
    """Where this wrapper keeps its language model (``None``: the config is the model)."""
    wrapper = wrapper_of(found.key)
    if found.language is not None or wrapper is not None:
        path = found.language or wrapper["path"]
        first = path.split(".")[0]
        types = (wrapper or {}).get("types") or [None]
        sub = config.get(first)
        if sub is not None and not isinstance(sub, Mapping):
            raise not_a_dict(first, sub)
        if sub is None:
            other = generic_part(config)
            if other is not None:  # a layout the model's own code reads (and the class not)
                return Part(other.path, other.config, None, None, path)
        if sub is None and first != path:
            sub = lookup(config, path)
            return Part(path, sub, types[-1], (wrapper or {}).get("flat"))
        return Part(first, sub, types[0], (wrapper or {}).get("flat") if first == path else False)
    return generic_part(config)


def generic_part(config: Mapping[str, Any]) -> Part | None:
    """The first of :data:`LANGUAGE_KEYS` the config holds as a dict."""
    for key in LANGUAGE_KEYS:
        sub = config.get(key)
        if isinstance(sub, Mapping):
            return Part(key, sub, None, None)
        if sub is not None and key == "text_config":
            raise not_a_dict(key, sub)
    return None


def not_a_dict(key: str, value: object) -> TypeError:
    return TypeError(
        f"{key} must be a dict or null, got a {type(value).__name__} {shown(value)} (it holds "
        "the language model's config)"
    )


def language_of(config: Mapping[str, Any] | object) -> tuple[dict[str, Any], str | None, tuple]:
    """``(the language model's config, the model_type to read it as, notes)``.

    The config as a dict (a transformers object through ``to_dict()``), a media wrapper read
    through the part holding its rotary (:data:`~posenc_ref.models.families.PARTS`), then every
    wrapper level by the one rule (the module's docstring).
    """
    current, said = rotary_part(config, PARTS)
    notes, parent, where = list(said), None, ""
    for _ in range(MAX_DEPTH):
        found = identify(current, where)
        notes += found.notes
        part = language_part(current, found)
        if part is None or (part.config is None and not part.default_type):
            if part is not None:  # a served wrapper without the sub-config its code reads
                raise ValueError(
                    f"{current.get('model_type') or found_name(current)}'s language model is its "
                    f"{part.path}, which this config does not have: the language model's "
                    f"model_type (or architectures) there decides how it rotates"
                )
            return finish(current, found.key, parent, notes)
        if part.config is None:  # the class's default sub-config, or a flat config
            return flat(current, found.key, part, notes)
        notes += unread_top_level(current, part.path, found.key)
        notes.append(read_from(part, current, found.key))
        parent, where = found.key, f"{where}{part.path}."
        sub = dict(part.config)
        if sub.get("model_type") is None and part.default_type is not None:
            sub["model_type"] = part.default_type
        current = sub
    raise ValueError(f"the config nests language models more than {MAX_DEPTH} levels deep")


def read_from(part: Part, config: Mapping[str, Any], key: str | None) -> str:
    """The note naming the sub-config read, and where the class would look instead."""
    what = key or found_name(config)
    note = f"the language model is read from {part.path} ({what}'s language model)"
    if part.instead_of is not None:
        note += (
            f"; transformers 5.23's {what} config class reads {part.instead_of} instead and, "
            f"finding none, builds its language model from its defaults: {part.path} is the "
            "layout the model's own code (and vLLM) reads"
        )
    return note


def found_name(config: Mapping[str, Any]) -> str:
    names = [value for _, value in candidates(config)]
    return names[0] if names else "this config"


def finish(text: Mapping[str, Any], key: str | None, parent: str | None, notes: list) -> tuple:
    """The language model's config, renamed as its wrapper's class renames it."""
    out = dict(text)
    renamed = RENAMED_TEXT.get((parent, key)) if parent is not None else None
    if renamed is not None:
        new, source = renamed
        notes.append(f"text_config's model_type {key!r} is read as {new!r}, as transformers "
                     f"does: {source}")  # fmt: skip
        key = new
    if key is not None:
        out["model_type"] = key
    return out, key, tuple(dict.fromkeys(notes))


def flat(config: Mapping[str, Any], key: str | None, part: Part, notes: list) -> tuple:
    """A wrapper without the sub-config: its top level where it holds text keys, else defaults."""
    text_type = part.default_type
    given = [k for k in TEXT_KEYS if config.get(k) is not None]
    if not given:
        notes.append(
            f"the config has no {part.path}: {key}'s config class builds its language model "
            f"({text_type}) from that class's defaults, which are read"
        )
        return finish({"model_type": text_type}, text_type, key, notes)
    if part.flat is False:
        notes.append(
            LEGACY_FLAT.get(key)
            or f"a flat config: its text keys ({', '.join(given)}) are at the top level, where "
            f"they are read; transformers 5.23's {key} config class builds its {part.path} from "
            f"{text_type}'s defaults instead"
        )
    text = {k: v for k, v in config.items() if k not in ("model_type",)}
    return finish(text, text_type, key, notes)


def unread_top_level(config: Mapping[str, Any], path: str, key: str | None) -> list[str]:
    """A wrapper's own RoPE keys beside its language model's sub-config: not read, noted."""
    out = []
    for item in WRAPPER_ROPE_KEYS:
        if config.get(item) is not None:
            out.append(
                f"not read: {item} = {shown(config[item])} at the top level of {key or 'the'} "
                f"wrapper (its language model is built from {path} alone, as transformers builds "
                "it)"
            )
    return out
