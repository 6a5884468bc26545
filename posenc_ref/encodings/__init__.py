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

Families whose code uses no RoPE are rows of ``ENCODING_FAMILIES``: the kind, the keys the code
reads (with the config class's default), and the offset between a token's position and the row
it reads. Every row is proven by running that family's own code (``tests/test_encodings.py``).
A config of any other family goes to ``rope_spec``; a config neither reads gets an error naming
what was looked for.
"""

from __future__ import annotations

import json
import math
import numbers
import reprlib
from collections.abc import Mapping
from importlib import resources
from typing import Any

import torch

from .._checks import check_dim
from ..absolute import MAX_POSITION
from ..models._values import _plain
from ._families import FAMILIES as ENCODING_FAMILIES
from ._families import Family
from ._kinds import Alibi, LearnedAbsolute, NoPE, RelativeKey, Rope, Sinusoidal, T5Buckets

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
    "released_encoding_configs",
]

# Widths and head counts past this are no model's; refusing them keeps a typo (or 10**20) from
# allocating terabytes when a table or the slopes are built.
MAX_WIDTH = 2**20

_HF = "transformers/models/"
_ROPE_KEYS = ("rope_parameters", "rope_scaling", "rope_theta")

# --------------------------------------------------------------------------- reading


def positional_encoding(
    config: Mapping[str, Any] | object,
    *,
    layer_type: str | None = None,
    layout: str | None = None,
):
    r"""Which positional encoding a config uses, with its parameters, as the family's code decides.

    Explained on the site: [Which positional encoding does my model use?](encodings.md).

    Families in ``ENCODING_FAMILIES`` are read from the keys their code reads (absent keys take
    the config class's default); the deciding keys are ``position_embedding_type`` (BERT-like:
    ``"absolute"``, ``"relative_key"``, ``"relative_key_query"``; GraniteMoE-Hybrid: ``"rope"``
    or none), ``alibi`` (Falcon), ``attn_config.alibi`` (MPT), ``sinusoidal_pos_embds``
    (DistilBERT) and ``sinusoidal_embeddings`` (XLM). Every other config goes to
    :func:`~posenc_ref.models.rope_spec`, once per layer type where the config has one RoPE
    per layer type. Multimodal configs are read from their ``text_config``.

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
    config = original = _plain(config)  # rope_spec's reading: a dict, or to_dict()
    text = config.get("text_config")
    if text is not None:
        if not isinstance(text, Mapping):
            raise TypeError(f"text_config must be a dict or null, got a {type(text).__name__}")
        merged = {k: v for k, v in config.items() if k in _ROPE_KEYS}
        config = {**merged, **text, "model_type": text.get("model_type", config.get("model_type"))}
    model_type = config.get("model_type")
    if model_type is not None and not isinstance(model_type, str):
        raise TypeError(
            "model_type must be a string naming the family (such as 'bert'), got "
            + _show(model_type)
        )
    family = ENCODING_FAMILIES.get(model_type) if model_type else None
    kind = _decide(config, family, model_type) if family else "rope"
    if kind == "rope":
        return _rope(original, config, model_type, family, layer_type, layout)
    if layer_type is not None:
        raise ValueError(
            f"layer_type={layer_type!r} does not apply: {model_type}'s code uses {kind} "
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
    build = _BUILDERS[kind]
    return build(config, family, model_type, (*_decision_notes(config, model_type), *notes))


def _decide(config: Mapping[str, Any], family: Family, model_type: str) -> str:
    """The kind the family's code picks for this config (a key may switch it)."""
    if family.bert_like:
        value = _name(config, "position_embedding_type", "absolute")
        if value == "absolute":
            return "learned"
        if value in ("relative_key", "relative_key_query"):
            return "relative_key"
        raise ValueError(
            f"position_embedding_type must be 'absolute', 'relative_key' or "
            f"'relative_key_query' for {model_type}, got {value!r}"
        )
    if config.get("position_embedding_type") is not None and model_type != "granitemoehybrid":
        raise ValueError(
            f"position_embedding_type is not read by {model_type}'s code (only BERT-like "
            "families and GraniteMoE-Hybrid read it)"
        )
    if model_type == "falcon":
        return "alibi" if _flag(config, "alibi", False) else "rope"
    if model_type == "granitemoehybrid":
        value = _name(config, "position_embedding_type", None)
        if value not in (None, "rope", "nope"):
            raise ValueError(
                f"position_embedding_type must be 'rope' or absent for granitemoehybrid, got "
                f"{value!r}"
            )
        return "rope" if value == "rope" else "nope"
    if model_type == "mpt":
        attn = config.get("attn_config") or {}
        if not isinstance(attn, Mapping):
            raise TypeError(f"attn_config must be a dict, got a {type(attn).__name__}")
        for key, default in (("alibi", True), ("alibi_bias_max", 8)):
            value = attn.get(key, default)
            if value != default or isinstance(value, bool) != isinstance(default, bool):
                raise ValueError(
                    f"attn_config.{key} is {value!r}, but transformers' MPT code applies ALiBi "
                    f"with alibi_bias_max 8 whatever the config says (modeling_mpt.py); this "
                    "config describes a model transformers does not run as it was trained"
                )
    flag = {"distilbert": "sinusoidal_pos_embds", "xlm": "sinusoidal_embeddings"}.get(model_type)
    if flag and _flag(config, flag, False):
        return "sinusoidal"
    return family.kind


def _decision_notes(config: Mapping[str, Any], model_type: str) -> tuple[str, ...]:
    if model_type == "mpt" and config.get("learned_pos_emb") is not None:
        return ("learned_pos_emb is not read by transformers' MPT code: it has no position table",)
    if model_type == "falcon":  # both pinned by tests/test_encodings.py against transformers 5.23
        return (
            "transformers' Falcon builds this bias in bfloat16: slopes and key positions are "
            "rounded to 8 significant bits, so past position 256 neighbouring keys share a "
            "bias (257 is 256); the bias here is exact",
            "transformers 5.23's eager attention path adds the bias twice (to the logits and "
            "again with the mask); its SDPA path adds it once, as here",
        )
    return ()


def _build_learned(config, family, model_type, notes):
    positions = _int(config, *family.positions, model_type, maximum=MAX_POSITION, family=family)
    offset = _offset(config, family, model_type)
    if family.rows_hold_offset:
        if positions <= offset:
            raise ValueError(
                f"max_position_embeddings={positions} leaves no position for {model_type}: its "
                f"first {offset} rows are reserved (padding_idx + 1)"
            )
        positions -= offset
    width = _int(config, *family.width, model_type, maximum=MAX_WIDTH, family=family)
    pad = offset - 1 if family.offset is None else None
    return LearnedAbsolute(
        model_type, _HF + family.source, positions, offset, width, pad, notes=notes
    )


def _build_sinusoidal(config, family, model_type, notes):
    positions = _int(config, *family.positions, model_type, maximum=MAX_POSITION, family=family)
    width = _int(config, *family.width, model_type, maximum=MAX_WIDTH, family=family)
    if width % 2 or width < (4 if family.variant == "fairseq" else 2):
        raise ValueError(
            f"{family.width[0]}={width}: posenc_ref builds sinusoidal tables of even width "
            f"(>= 4 for fairseq's formula, which divides by d/2 - 1); {model_type}'s code pads "
            "or splits odd widths its own way"
        )
    check_dim(family.width[0], width)
    offset = _offset(config, family, model_type)
    source = _HF + family.source
    pad = offset - 1 if family.offset is None else None
    return Sinusoidal(
        model_type, source, family.variant, width, 10000.0, offset, positions, pad, notes=notes
    )


def _build_alibi(config, family, model_type, notes):
    heads = _int(config, *family.heads, model_type, maximum=MAX_WIDTH, family=family)
    scale = 1.0
    if model_type == "falcon":
        width = _int(config, *family.width, model_type, maximum=MAX_WIDTH, family=family)
        if width % heads:
            raise ValueError(
                f"hidden_size={width} is not a multiple of num_attention_heads={heads}"
            )
        scale = 1.0 / math.sqrt(width // heads)
    return Alibi(model_type, _HF + family.source, heads, scale, notes=notes)


def _build_t5(config, family, model_type, notes):
    buckets = _int(
        config, "relative_attention_num_buckets", 32, model_type, maximum=MAX_WIDTH, family=family
    )
    distance = _int(config, "relative_attention_max_distance", 128, model_type, maximum=2**62)
    heads = _int(config, *family.heads, model_type, maximum=MAX_WIDTH, family=family)
    encoding = T5Buckets(
        model_type,
        _HF + family.source,
        buckets,
        distance,
        heads,
        per_layer=model_type == "umt5",
        notes=notes,
    )
    for bidirectional in (True, False):  # the function's own checks of buckets and distance
        encoding.buckets(torch.zeros(1, dtype=torch.int64), bidirectional=bidirectional)
    return encoding


def _build_relative_key(config, family, model_type, notes):
    variant = _name(config, "position_embedding_type", "absolute")
    positions = _int(config, *family.positions, model_type, maximum=MAX_POSITION, family=family)
    return RelativeKey(
        model_type,
        "transformers 4.x modeling_bert.py (removed in 5.0, PR #41170)",
        variant,
        positions,
        notes=notes,
    )


def _build_nope(config, family, model_type, notes):
    layers = attention = None
    if model_type == "nemotron_h":
        types = config.get("layers_block_type") or config.get("layer_types")
        pattern = config.get("hybrid_override_pattern")
        if isinstance(types, list) and all(isinstance(t, str) for t in types):
            layers, attention = len(types), types.count("full_attention")
        elif isinstance(pattern, str):
            layers, attention = len(pattern), pattern.count("*")
    elif model_type == "jamba":
        layers = _int(config, "num_hidden_layers", 32, model_type, maximum=MAX_WIDTH)
        period = _int(config, "attn_layer_period", 8, model_type, maximum=MAX_WIDTH)
        start = _int(config, "attn_layer_offset", 4, model_type, minimum=0, maximum=MAX_WIDTH)
        attention = sum(1 for i in range(layers) if i % period == start)
    elif model_type in ("mamba", "mamba2", "falcon_mamba"):
        attention = 0
    return NoPE(model_type, _HF + family.source, attention, layers, notes=notes)


_BUILDERS = {
    "learned": _build_learned,
    "sinusoidal": _build_sinusoidal,
    "alibi": _build_alibi,
    "t5": _build_t5,
    "relative_key": _build_relative_key,
    "nope": _build_nope,
}


def _rope(original, config, model_type, family, layer_type, layout) -> Rope:
    """One spec per layer type, each read by ``rope_spec`` from the config as given."""
    from ..models import NoRopeError, rope_spec

    source = f"{_HF}{family.source}" if family else "posenc_ref.models.rope_spec"
    if layer_type is not None:
        specs = {layer_type: rope_spec(original, layer_type=layer_type, layout=layout)}
        return Rope(model_type, source, specs)
    types = _rope_layer_types(config, model_type)
    try:
        if types:
            specs = {t: rope_spec(original, layer_type=t, layout=layout) for t in types}
        else:
            specs = {None: rope_spec(original, layout=layout)}
    except NoRopeError as error:  # the RoPE family's code switches RoPE off by a config key
        if error.reason.startswith("no positional encoding"):
            return NoPE(model_type, "posenc_ref.models.rope_spec", notes=(error.reason,))
        raise ValueError(
            f"model_type {model_type!r} uses {error.reason}: posenc_ref reads this family's RoPE "
            "but does not build this encoding for it"
        ) from error
    except ValueError as error:
        if family is not None:
            raise
        if _rope_row(model_type) is not None:  # a RoPE family; this config is refused
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
    return Rope(model_type, source, specs)


def _rope_row(model_type: str | None):
    """The RoPE reader's row of this family (its language model's), or None."""
    from ..models.families import FAMILIES as ROPE_FAMILIES
    from ..models.families import TEXT_MODEL_TYPES

    return ROPE_FAMILIES.get(TEXT_MODEL_TYPES.get(model_type, model_type) or "")


def _rope_layer_types(config: Mapping[str, Any], model_type: str | None) -> tuple[str, ...]:
    """Layer types with a RoPE of their own: the keys of a nested ``rope_parameters``.

    Where the config has no RoPE dict, the family row's default one (the config class fills it
    in). A type whose entry is null has no RoPE (Beam's full-attention layers); the spec of every
    other type lists those layers as ``nope_layers``.
    """
    rope = config.get("rope_parameters")
    if rope is None and config.get("rope_scaling") is None:
        row = _rope_row(model_type)
        rope = row.rope if row is not None else None
    if (
        isinstance(rope, Mapping)
        and any(isinstance(v, Mapping) for v in rope.values())
        and all(v is None or isinstance(v, Mapping) for v in rope.values())
    ):
        return tuple(str(key) for key, value in rope.items() if value is not None)
    if config.get("rope_local_base_freq") is not None:  # Gemma 3's older form
        return ("sliding_attention", "full_attention")
    return ()


# --------------------------------------------------------------------------- values


def _value(config: Mapping[str, Any], key: str, default: object, family=None) -> object:
    """The value under ``key`` or one of its aliases (the config class's attribute_map)."""
    names = (key, *(family.aliases.get(key, ()) if family else ()))
    given = [(name, config[name]) for name in names if config.get(name) is not None]
    for name, value in given[1:]:
        if not _same(value, given[0][1]):
            raise ValueError(
                f"inconsistent {key}: {given[0][0]} is {_show(given[0][1])} but {name} (another "
                f"name for it) is {_show(value)}"
            )
    return given[0][1] if given else default


def _same(a: object, b: object) -> bool:
    try:
        return type(a) is type(b) and a == b or (_is_number(a) and _is_number(b) and a == b)
    except (ValueError, RecursionError):
        return False


def _is_number(value: object) -> bool:
    return isinstance(value, numbers.Real) and not isinstance(value, bool)


def _int(config, key, default, model_type, *, minimum=1, maximum, family=None):
    value = _value(config, key, default, family)
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{key} must be an integer >= {minimum} ({model_type}), got {_show(value)}")
    if not minimum <= value <= maximum:
        raise ValueError(
            f"{key} must be an integer in [{minimum}, {_power(maximum)}] ({model_type}), got "
            + (f"{value!r}" if abs(value) < 10**30 else _digits(value))
        )
    return int(value)


def _power(value: int) -> str:
    return (
        f"2**{value.bit_length() - 1}" if value > 1024 and value & (value - 1) == 0 else str(value)
    )


def _show(value: object) -> str:
    """A short repr that cannot fail: deep nesting and huge integers are summarised."""
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) >= 10**30:
        return _digits(value)
    try:
        return reprlib.repr(value)
    except (ValueError, RecursionError):  # an integer past the int-string limit, nested
        return f"a {type(value).__name__}"


def _digits(value: int) -> str:
    # str() of an integer past 4300 digits raises (Python's int-string limit): count from bits
    return f"an integer of about {math.ceil(abs(value).bit_length() * math.log10(2))} digits"


def _name(config: Mapping[str, Any], key: str, default: str | None) -> str | None:
    value = _value(config, key, default)
    if value is not None and not isinstance(value, str):
        raise TypeError(f"{key} must be a string, got {_show(value)}")
    return value


def _flag(config: Mapping[str, Any], key: str, default: bool) -> bool:
    value = _value(config, key, default)
    if not isinstance(value, bool):
        raise TypeError(f"{key} must be true or false, got {_show(value)}")
    return value


def _offset(config: Mapping[str, Any], family: Family, model_type: str) -> int:
    if family.offset is not None:
        return family.offset
    pad = _int(config, "pad_token_id", family.pad, model_type, minimum=0, maximum=MAX_POSITION)
    return pad + 1


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
