r"""Which positional encoding a model's config uses, and with what parameters.

Explained on the site: [Which positional encoding does my model use?](encodings.md).

:func:`positional_encoding` is :func:`~posenc_ref.models.rope_spec`'s wider sibling. It reads a
model's ``config.json`` (a dict, or a transformers config object) the way the family's code in
transformers 5.23 decides it, and returns one of

- :class:`LearnedAbsolute`: a trained table of position vectors (BERT, RoBERTa, GPT-2, OPT, BART);
- :class:`Sinusoidal`: a fixed table of sines and cosines (Marian, Pegasus, FSMT, M2M-100, XGLM,
  and XLM / DistilBERT with their ``sinusoidal`` flags);
- :class:`Alibi`: a linear bias per head on the attention logits (BLOOM, MPT, Falcon with
  ``alibi: true``);
- :class:`T5Buckets`: a learned scalar per log-spaced distance bucket and head (T5, mT5, UMT5,
  LongT5, Switch Transformers);
- :class:`RelativeKey`: BERT's ``relative_key`` / ``relative_key_query`` embeddings, which
  transformers 5 no longer runs;
- :class:`NoPE`: no positional encoding at all (Nemotron-H, Jamba, Mamba);
- :class:`Rope`: rotary embeddings, one :class:`~posenc_ref.models.RopeSpec` per layer type
  (everything :func:`~posenc_ref.models.rope_spec` reads).

Every family is a row of one table, :data:`posenc_ref.models.FAMILIES`, RoPE or not: its
encoding (a config key may switch it), and for an encoding without RoPE the keys its code reads
(with the config class's default) and the offset between a token's position and the row it reads.
:data:`ENCODING_FAMILIES` are the rows whose code uses an encoding other than RoPE, for some
config. Every row is proven by running that family's own code (``tests/test_encodings.py``). A
config whose family's code uses RoPE goes to ``rope_spec``; a config neither reads gets an error
naming what was looked for.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from importlib import resources
from typing import Any

from ..models import FAMILIES
from ..models._config import layer_count, plain, shown
from ..models._language import language_of
from ..models._rope_dict import per_layer_type_only
from ..models.families import instead, row_of
from ..models.family import Family
from ..models.sparse_traits import NamedTables
from ..models.traits import ConfigClass, LocalBase, RopeLayers, ScaledType, SwitchedBy
from ._kinds import (
    Alibi,
    LayerType,
    LearnedAbsolute,
    NoPE,
    RelativeKey,
    Rope,
    Sinusoidal,
    T5Buckets,
)
from ._read import BUILDERS, code_of, encoding_of, not_rope, notes_of, unbuilt

__all__ = [
    "positional_encoding",
    "ENCODING_FAMILIES",
    "LearnedAbsolute",
    "Sinusoidal",
    "Alibi",
    "T5Buckets",
    "RelativeKey",
    "NoPE",
    "Rope",
    "LayerType",
    "released_encoding_configs",
]

ENCODING_FAMILIES: dict[str, Family] = {
    name: row for name, row in FAMILIES.items() if any(not unbuilt(row, e) for e in not_rope(row))
}
"""``model_type`` -> its row, for the families whose code uses an encoding other than RoPE
(for some config) that posenc_ref builds: a view of :data:`posenc_ref.models.FAMILIES`."""

_ROPE_KEYS = ("rope_parameters", "rope_scaling", "rope_theta")

# --------------------------------------------------------------------------- reading


def positional_encoding(
    config: Mapping[str, Any] | object,
    *,
    layer_type: str | None = None,
    layout: str | None = None,
    lerope_alpha: Any = None,
):
    r"""Which positional encoding a config uses, with its parameters, as the family's code decides.

    Explained on the site: [Which positional encoding does my model use?](encodings.md).

    Families in ``ENCODING_FAMILIES`` are read from the keys their code reads (absent keys take
    the config class's default); the deciding keys are ``position_embedding_type`` (BERT-like:
    ``"absolute"``, ``"relative_key"``, ``"relative_key_query"``; GraniteMoE-Hybrid: ``"rope"``
    or none; ESM: ``"rotary"`` or ``"absolute"``), ``alibi`` (Falcon), ``use_mem_rope`` (Zamba 2),
    ``sinusoidal_pos_embds`` (DistilBERT) and ``sinusoidal_embeddings`` (XLM). Every config
    whose family's code uses RoPE goes to :func:`~posenc_ref.models.rope_spec`, once per layer
    type where the config has one RoPE per layer type. Multimodal configs are read from their
    ``text_config``.

    Parameters
    ----------
    config
        The contents of ``config.json`` as a dict, or a transformers config object (through its
        ``to_dict()``; transformers is never imported here).
    layer_type
        For RoPE configs with one RoPE per layer type: only this one. Refused for encodings
        without layer types.
    layout
        The RoPE pair layout for a family posenc_ref does not know (see ``rope_spec``). For an
        encoding without RoPE it does not apply: the result carries a note saying so.
    lerope_alpha
        Mistral Large 4's learned frequency scales, from its checkpoint (see ``rope_spec``).

    Returns
    -------
    LearnedAbsolute or Sinusoidal or Alibi or T5Buckets or RelativeKey or NoPE or Rope

    Raises
    ------
    TypeError
        A config that is not a mapping, or a value of the wrong type where a name or a number
        is expected (``model_type: ["llama"]``).
    ValueError
        A config neither this table nor ``rope_spec`` reads (the message names what was looked
        for), or values out of range.

    Examples
    --------
    >>> positional_encoding({"model_type": "opt", "max_position_embeddings": 2048,
    ...                      "hidden_size": 768}).rows
    2050
    """
    original = plain(config)
    config, model_type, _ = language_of(original)
    row, _ = row_of(model_type)
    encoding = encoding_of(config, row, model_type) if row is not None else "rope"
    if encoding == "rope":
        return rope_encoding(original, config, model_type, row, layer_type, layout, lerope_alpha)
    if lerope_alpha is not None:
        raise ValueError(
            f"lerope_alpha scales the frequencies of a RoPE; {model_type}'s code uses "
            f"{instead(row)}: leave lerope_alpha out"
        )
    if unbuilt(row, encoding):  # an encoding posenc_ref names but does not build for it
        switch = row.trait(SwitchedBy)
        why = f" (by its config's {switch.key})" if switch is not None else ""
        raise NotImplementedError(
            f"model_type {model_type!r} uses {instead(row)}{why}: posenc_ref does not build this "
            "encoding for it"
        )
    if layer_type is not None:
        raise ValueError(
            f"layer_type={layer_type!r} does not apply: {model_type}'s code uses {encoding} "
            "positions, the same in every layer"
        )
    notes = []
    if layout is not None:
        notes.append(
            f"layout={layout!r} does not apply: it is the pair layout of a RoPE, and "
            f"{model_type}'s code uses none"
        )
    stray = [key for key in _ROPE_KEYS if config.get(key) is not None]
    if stray:
        notes.append(f"{', '.join(stray)} in the config: not read by {model_type}'s code here")
    build, _ = BUILDERS[encoding]
    return build(config, row, model_type, (*notes_of(config, row), *notes))


def rope_encoding(
    original, config, model_type, row: Family | None, layer_type, layout, lerope_alpha=None
) -> Rope:
    """One spec per layer type, each read by ``rope_spec`` from the config as given."""
    from ..models import rope_spec

    source = code_of(row, model_type) if row is not None else "posenc_ref.models.rope_spec"
    read = {"layout": layout, "lerope_alpha": lerope_alpha}
    if layer_type is not None:
        chosen = {layer_type: rope_spec(original, layer_type=layer_type, **read)}
        # Which of the other layer types rotate is read as without layer_type: a type not shown
        # is not a type without RoPE.
        every = rope_encoding(original, config, model_type, row, None, layout, lerope_alpha)
        return rope_result(model_type, source, chosen, config, row, every.layer_types)
    layer_types_of(config, row)  # a malformed list is named before the RoPE is read
    types = rope_layer_types(config, row)
    try:
        if types:
            specs = {t: rope_spec(original, layer_type=t, **read) for t in types}
            for t in unlisted_types(config, row, specs):
                specs[t] = rope_spec(original, layer_type=t, **read)  # refuses: no entry for t
        else:
            specs = {None: rope_spec(original, **read)}
    except ValueError as error:
        if row is not None:  # a RoPE family; this config is refused
            raise ValueError(
                f"model_type {model_type!r} uses RoPE, and posenc_ref's RoPE reader refused this "
                f"config: {error}"
            ) from error
        what = f"model_type {model_type!r}" if model_type else "a config without model_type"
        raise ValueError(
            f"cannot tell which positional encoding {what} uses: posenc_ref looked for "
            f"model_type among the {len(ENCODING_FAMILIES)} families it reads without RoPE "
            "(posenc_ref.encodings.ENCODING_FAMILIES: learned absolute, sinusoidal, ALiBi, T5 "
            f"buckets, none), then asked the RoPE reader, which refused it: {error}"
        ) from error
    return rope_result(model_type, source, specs, config, row)


def rope_result(
    model_type, source, specs, config, row: Family | None, layer_types: tuple | None = None
) -> Rope:
    """The specs, with their notes once each and every layer type of the config.

    ``layer_types``: the config's :class:`LayerType` list where ``specs`` holds only some of
    its types (``layer_type`` given); otherwise read from ``specs``, in which a layer type of
    the config without a spec has no RoPE (its entry is null, or its family rotates none of its
    layers: ``unlisted_types`` has refused every other).
    """
    notes = tuple(dict.fromkeys(note for spec in specs.values() for note in spec.notes))
    if layer_types is not None:
        return Rope(model_type, source, specs, notes=notes, layer_types=layer_types)
    types = layer_types_of(config, row)
    out = []
    for name in dict.fromkeys(types):
        layers = tuple(i for i, t in enumerate(types) if t == name)
        spec = specs.get(name) if None not in specs else specs[None]
        nope = set(spec.nope_layers or ()) if spec is not None else set(layers)
        out.append(LayerType(name, layers, any(i not in nope for i in layers)))
    return Rope(model_type, source, specs, notes=notes, layer_types=tuple(out))


def layer_types_of(config: Mapping[str, Any], row: Family | None) -> list[str]:
    """The config's ``layer_types``, or the ones its config class builds from a pattern."""
    types = (row.resolve(config) if row is not None else config).get("layer_types")
    if isinstance(types, (list, tuple)) and all(isinstance(t, str) for t in types):
        return list(types)
    if types is not None:
        raise TypeError(f"layer_types must be a list of strings, got {shown(types)}")
    return []


def unlisted_types(config: Mapping[str, Any], row: Family | None, specs) -> list[str]:
    """Layer types of the config that rotate by their family's rule but have no spec yet.

    A type whose entry in the per-type RoPE dict is null has no RoPE (Beam), as has a type whose
    family rotates none of its layers (LFM3's conv layers, which have no entry). Any other type
    without a spec has no entry at all: ``rope_spec`` refuses it, as transformers' rotary module
    does (``KeyError``), rather than it being shown as a type without RoPE.
    """
    types = layer_types_of(config, row)
    null = {key for key, value in (per_type_dict(config, row) or {}).items() if value is None}
    unlisted = [t for t in dict.fromkeys(types) if t not in specs and t not in null]
    rule = row.trait(RopeLayers) if row is not None else None
    if not unlisted or rule is None:
        return unlisted
    rotating = rule.rule(row.resolve(config), layer_count(config))
    if len(rotating) != len(types):
        return unlisted  # the rule does not say which of these layers rotate
    rotates = {t for r, t in zip(rotating, types, strict=True) if r}
    return [name for name in unlisted if name in rotates]


def per_type_dict(config: Mapping[str, Any], row: Family | None) -> Mapping[str, Any] | None:
    """The config's RoPE dict of dicts per layer type (or its family's default), if it has one.

    Where the config has no RoPE dict, the family row's default one (the config class fills it
    in).
    """
    if row is not None and row.trait(ConfigClass) is not None:
        config = row.resolve(config)
    rope = config.get("rope_parameters")
    if rope is None and config.get("rope_scaling") is None:
        rope = row.rope if row is not None else None
    if isinstance(rope, Mapping):  # entries beside the layer types' dicts are read by no layer
        rope = per_layer_type_only(dict(rope), config)
    if (
        isinstance(rope, Mapping)
        and any(isinstance(v, Mapping) for v in rope.values())
        and all(v is None or isinstance(v, Mapping) for v in rope.values())
    ):
        return rope
    return None


def rope_layer_types(config: Mapping[str, Any], row: Family | None) -> tuple[str, ...]:
    """Layer types with a RoPE of their own: the keys of a nested ``rope_parameters``.

    Where the config has no RoPE dict, the family row's default one. A type whose entry is
    null has no RoPE (Beam's full-attention layers); the spec of every other type lists those
    layers as ``nope_layers``.
    """
    per_type = per_type_dict(config, row)
    if row is not None and row.trait(ConfigClass) is not None:
        config = row.resolve(config)  # the class rewrites the file (dots3_note's swa_* keys)
    if row is not None and row.trait(NamedTables) is not None:  # tables by name: every type
        return tuple(dict.fromkeys(layer_types_of(config, row)))
    scaled = row.trait(ScaledType) if row is not None else None
    if scaled is not None and config.get("rope_parameters") is None:
        types = row.resolve(config).get("layer_types")  # OLMo 3's older form: one per type
        if isinstance(types, (list, tuple)) and all(isinstance(t, str) for t in types):
            return tuple(dict.fromkeys(types))
    local = row.trait(LocalBase) if row is not None else None
    if per_type is not None:
        keys = [str(key) for key, value in per_type.items() if value is not None]
    elif local is not None and isinstance(row.theta, Mapping):  # Gemma 3's older form, which
        keys = ["sliding_attention", "full_attention"]  # gives both types a base, given or not
    else:
        return ()
    # A class's dict may name a type no layer of this config has (LFM3 with four layers: no
    # sliding layer); only the types its layers use have a RoPE to show.
    # Where no layer rotates (Beam with only its null type), every entry is still described.
    used = [key for key in keys if key in set(layer_types_of(config, row))]
    return tuple(used or keys)


# --------------------------------------------------------------------------- released configs


def released_encoding_configs() -> list[dict[str, Any]]:
    """Released configs of models without RoPE: BERT, RoBERTa, GPT-2, OPT, Marian, BLOOM, ...

    Each entry has ``name``, ``model`` (the Hugging Face id), ``source`` (where the values were
    read), ``config`` (the keys the family's code reads for positions, with their released
    values) and sometimes a ``note``. Explained on the site:
    [Which positional encoding does my model use?](encodings.md).

    Returns
    -------
    list of dict
        A fresh copy on every call.
    """
    text = resources.files(__package__).joinpath("released_configs.json").read_text("utf-8")
    return json.loads(text)["models"]
