r"""The one reader: any transformers config -> :class:`~posenc_ref.models.RopeSpec`.

It reads every config by transformers' own conventions (``rope_parameters`` or the legacy
``rope_theta`` + ``rope_scaling``; the head width from ``head_dim``, else ``hidden_size /
num_attention_heads``; ``partial_rotary_factor``; one RoPE dict per layer type). Everything else
comes from two tables: the rope type's entry (:data:`~posenc_ref.models.ROPE_TYPES`: the keys it
reads and the transform it is) and the family's row (:data:`~posenc_ref.models.FAMILIES`: what
its code decides and its config does not say). There is no per-family or per-type branch here.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .._checks import check_layout
from ._layers import _layer_count, _layer_overrides, _layers_of
from ._rope_dict import (
    MROPE_KEYS,
    _choose_layer_type,
    _is_nested,
    _meaning,
    _mrope,
    _rope_dicts,
)
from ._values import NoRopeError, _length, _name, _plain, _real, _same, _show
from .families import FAMILIES, NO_ROPE, NOT_IMPLEMENTED, TEXT_MODEL_TYPES, keys_read_by
from .family import Family, _lookup, family_keys
from .rope_types import COMMON_KEYS, ROPE_TYPES, TypeArgs
from .spec import RopeSpec

__all__ = ["rope_spec", "layer_specs", "NoRopeError", "TABLE_TRANSFORMERS_VERSION"]

# The transformers release every row of the tables was proven against (tests/test_models_hf.py
# and the sweep run each family's own code).
TABLE_TRANSFORMERS_VERSION = "5.23"

# RoPE-related keys of configs that run custom code (not transformers): known, not implemented.
_NOT_IMPLEMENTED_KEYS = {
    "rope_ratio": "ChatGLM's base multiplier (custom code)",
    "use_dynamic_ntk": "Qwen (1.x) custom-code dynamic NTK",
    "use_logn_attn": "Qwen (1.x) custom-code log-n attention scaling",
    "rope_scaling_type": "a custom-code scaling switch",
}
_NOT_IMPLEMENTED_TYPES = {
    "axial": "2-D (axial) RoPE of vision encoders; posenc_ref.axial has the schemes of eight "
    "families' vision towers (apply_axial_rope), but this reader does not read vision configs"
}
# --------------------------------------------------------------------------- the language model


def _language_config(config: dict[str, Any]) -> tuple[dict[str, Any], str | None]:
    """The language model's config (multimodal configs keep it under ``text_config``)."""
    model_type = config.get("model_type")
    if model_type is not None:
        _name("model_type", model_type)
    text = config.get("text_config")
    if text is None:
        return config, model_type
    if not isinstance(text, Mapping):
        to_dict = getattr(text, "to_dict", None)
        if not callable(to_dict):
            raise TypeError(
                "text_config must be a dict (the language model's config), got "
                f"{type(text).__name__} {_show(text)}"
            )
        text = to_dict()
    text = dict(text)
    for key in ("rope_theta", "rope_scaling", "rope_parameters"):
        if config.get(key) is not None and text.get(key) is not None:
            _same(key, text[key], config[key], ("text_config", "the top level"))
        elif config.get(key) is not None:
            text[key] = config[key]
    inner = text.get("model_type")
    if inner is not None:
        _name("text_config.model_type", inner)
    return text, inner or model_type


# --------------------------------------------------------------------------- the family


def _installed_transformers() -> tuple[str | None, set[str]]:
    """The installed transformers' version and model types (empty when it is not installed)."""
    try:
        import transformers
        from transformers.models.auto.configuration_auto import CONFIG_MAPPING_NAMES
    except Exception:  # noqa: BLE001 (absent or broken: either way, not a source of facts)
        return None, set()
    return transformers.__version__, set(CONFIG_MAPPING_NAMES)


def _unknown_family(model_type: str | None) -> ValueError:
    version, types = _installed_transformers()
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
        "posenc_ref.models.FAMILIES (posenc_ref/models/families.py and exceptions.py). If the "
        "code rotates the "
        "first int(head_dim * partial_rotary_factor) coordinates of every layer's head and "
        "nothing else, pass layout='half' (HF's rotate_half) or layout='interleaved' (pairs "
        "2i, 2i+1) and check the result against the model with posenc_ref.testing"
    )


def _family_of(model_type: str | None, layout: str | None) -> tuple[Family, str | None]:
    key = TEXT_MODEL_TYPES.get(model_type, model_type) if model_type else None
    if key in NO_ROPE:
        raise NoRopeError(model_type, NO_ROPE[key])
    if key in NOT_IMPLEMENTED:  # layout= cannot stand in for what these need
        raise NotImplementedError(
            f"{model_type}'s RoPE is not implemented by posenc_ref: {NOT_IMPLEMENTED[key]}"
        )
    family = FAMILIES.get(key) if key else None
    if family is None:
        if layout is None:
            raise _unknown_family(model_type)
        return Family(
            layout=check_layout("layout", layout), source="layout= given by the caller"
        ), key
    if layout is not None and check_layout("layout", layout) != family.layout:
        raise ValueError(
            f"layout={layout!r} contradicts {key}'s code, which pairs coordinates "
            f"{family.layout!r} ({family.source})"
        )
    return family, key


def _refuse_other_families_keys(config: Mapping[str, Any], family: Family, model_type) -> None:
    """A key some family's code reads but this family's does not: never silently ignored."""
    own = family_keys(family) | frozenset(family.ignored)
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


# --------------------------------------------------------------------------- widths


def _head_dim(
    config: Mapping[str, Any], family: Family, model_type, layer_type, overridden: bool
) -> int:
    """The width handed to RoPE: the family's key, else ``hidden_size / num_attention_heads``."""
    key = family.head_dim_key
    if layer_type in family.layer_head_dims:
        # a layer type with its own head width (Gemma 4's global layers): its key, else the
        # per_layer_config override of head_dim, else the config class's default
        own, default = family.layer_head_dims[layer_type]
        if config.get(own) is not None:
            return _length(own, config[own])
        return _length("head_dim", config["head_dim"]) if overridden else default
    value = config.get(key)
    if value is not None:
        return _length(key, value)
    hidden, heads = config.get("hidden_size"), config.get("num_attention_heads")
    if key == "head_dim" and hidden is not None and heads is not None:
        hidden = _length("hidden_size", hidden)
        heads = _length("num_attention_heads", heads)
        if hidden % heads:
            raise ValueError(
                f"hidden_size={hidden} is not a multiple of num_attention_heads={heads}; "
                "give head_dim"
            )
        return hidden // heads
    derive = (
        " and no hidden_size / num_attention_heads to derive it from" if key == "head_dim" else ""
    )
    raise ValueError(f"the config gives no {key!r}{derive} (model_type {model_type!r})")


def _legacy(config: Mapping[str, Any], family: Family, quantity: str, head_dim: int):
    """The value of ``quantity`` given by the family's legacy keys (or None)."""
    value = None
    for legacy, (meaning, convert, _text) in family.legacy_keys.items():
        if meaning == quantity and config.get(legacy) is not None:
            given = config[legacy]
            if convert is not None:
                given = convert(_real(legacy, given), head_dim)
            value = _same(quantity, value, given, (quantity, legacy))
    return value


def _rotary_dim(
    config: Mapping[str, Any], rope: Mapping[str, Any], family: Family, head_dim: int,
    full_width: bool, layer_type: str | None,
) -> tuple[int, float]:  # fmt: skip
    """``(rotary_dim, partial factor)`` by HF's rule ``int(head_dim * partial_rotary_factor)``."""
    partial = _same(
        "partial_rotary_factor",
        rope.get("partial_rotary_factor"),
        config.get("partial_rotary_factor"),
        ("the RoPE dict", "the top level"),
    )
    partial = _same(
        "partial_rotary_factor",
        partial,
        _legacy(config, family, "partial_rotary_factor", head_dim),
        ("partial_rotary_factor", "the family's legacy key"),
    )  # fmt: skip
    absolute = _legacy(config, family, "rotary_dim", head_dim)
    if absolute is not None:  # GPT-J, CodeGen: an absolute width (the whole head when null)
        if partial is not None:
            raise ValueError("give rotary_dim or partial_rotary_factor, not both")
        rotary = _length("rotary_dim", absolute)
        if rotary > head_dim or rotary % 2:
            raise ValueError(f"rotary_dim={rotary} must be even and <= head_dim={head_dim}")
        return rotary, rotary / head_dim
    explicit = partial is not None
    if partial is None:
        partial = family.partial_default(layer_type)
    else:
        partial = _real("partial_rotary_factor", partial)
    if partial > 1:
        raise ValueError(f"partial_rotary_factor must be in (0, 1], got {partial!r}")
    if full_width:
        return head_dim, partial
    if family.partial_of is not None:
        # MLA: the whole rope part rotates; the family's rotary module computes its width as
        # int(sum of partial_of * partial), which must be that part (else its code fails).
        width = sum(_length(key, config.get(key)) for key in family.partial_of)
        # (a default partial factor of a row whose width includes the rope part is the config
        # class's own head / width: Mistral 4)
        if explicit or family.head_dim_key not in family.partial_of:
            if int(width * partial) != head_dim:
                raise ValueError(
                    f"partial_rotary_factor={partial!r} of {' + '.join(family.partial_of)} = "
                    f"{width} gives int({width} * {partial}) = {int(width * partial)} rotary "
                    f"coordinates, but the rope part of each head ({family.head_dim_key}) is "
                    f"{head_dim} wide: the family's code cannot run it"
                )
        return head_dim, head_dim / width
    rotary = int(head_dim * partial)
    if rotary < 2 or (rotary % 2 and rotary + 1 > head_dim):
        raise ValueError(
            f"partial_rotary_factor={partial!r} gives rotary_dim=int({head_dim} * {partial}) "
            f"= {rotary}, which must be >= 2 (and, if odd, leave a coordinate for HF to round "
            "it up)"
        )
    return rotary, partial


# --------------------------------------------------------------------------- the reader


def rope_spec(
    config: Mapping[str, Any] | object,
    *,
    layer_type: str | None = None,
    layout: str | None = None,
) -> RopeSpec:
    r"""Read a model's RoPE from its config: widths, layout, base, frequencies, factors.

    Explained on the site: [Model zoo](models.md); the methods themselves on
    [Context extension](rope_scaling.md).

    Accepts the contents of ``config.json`` as a dict, or a transformers config object (through
    its ``to_dict()``; transformers is never imported here). Multimodal configs are read from
    their ``text_config``. The config is read by transformers' conventions; what a family's
    code decides and its config does not say comes from its row in
    :data:`~posenc_ref.models.FAMILIES` (pair layout, where the rotary width comes from, the
    defaults its config class fills in, layers without RoPE, a query scaling), and what a rope
    type reads from its entry in :data:`~posenc_ref.models.ROPE_TYPES`. HF's rules are followed
    where a config leaves something implicit: the rotary width is
    ``int(head_dim * partial_rotary_factor)``; ``yarn`` and ``longrope`` derive ``factor`` from
    ``max_position_embeddings / original_max_position_embeddings`` when it is absent;
    ``yarn``'s attention factor is the explicit ``attention_factor``, else
    ``g(s, mscale) / g(s, mscale_all_dim)`` when both are given, else ``0.1 ln s + 1``;
    ``dynamic`` uses ``max_position_embeddings`` as its original length.

    Parameters
    ----------
    config
        The model's configuration.
    layer_type
        For configs with one RoPE per layer type (Gemma 3: ``"sliding_attention"``,
        ``"full_attention"``): which one. For other configs, one of their ``layer_types`` or
        nothing.
    layout
        Pair layout for a ``model_type`` not in ``FAMILIES``; for a known family it must agree
        with the family's code (or be left out).

    Returns
    -------
    RopeSpec

    Raises
    ------
    NoRopeError
        The model uses no RoPE (a ``ValueError``).
    ValueError
        Unknown keys in the RoPE dict, inconsistent values (naming the key), widths that do not
        fit, an unknown family without ``layout``, a key another family reads.
    TypeError
        A value of the wrong kind (a list where a name is expected, ...).
    NotImplementedError
        A RoPE key or type posenc_ref knows but does not implement.

    Examples
    --------
    >>> spec = rope_spec({"model_type": "phi", "hidden_size": 2560, "num_attention_heads": 32,
    ...                   "partial_rotary_factor": 0.4, "rope_theta": 10000.0,
    ...                   "max_position_embeddings": 2048})
    >>> spec.head_dim, spec.rotary_dim, spec.layout, spec.rope_type
    (80, 32, 'half', 'default')
    """
    config = _plain(config)
    config, model_type = _language_config(config)
    family, model_type = _family_of(model_type, layout)
    config = family.resolve(config)  # aliases, then the config class's defaults
    if family.no_rope_when is not None and (reason := family.no_rope_when(config)):
        raise NoRopeError(model_type, reason)
    for key, what in _NOT_IMPLEMENTED_KEYS.items():
        if config.get(key) not in (None, False):
            raise NotImplementedError(f"{key} ({what}) is not implemented by posenc_ref")
    _refuse_other_families_keys(config, family, model_type)
    overrides = {}
    if layer_type is not None:
        overrides = _layer_overrides(config, _name("layer_type", layer_type))
        config = {**config, **overrides}

    rope, top_theta = _rope_dicts(config, family)
    null_types = (
        frozenset(k for k, v in rope.items() if v is None)
        if _is_nested(rope, config)
        else frozenset()
    )
    rope, layer_type = _choose_layer_type(rope, top_theta, config, family, layer_type)
    rope = _meaning(rope, family, "the RoPE dict")
    rope_type = rope["rope_type"]
    if rope_type in _NOT_IMPLEMENTED_TYPES:
        raise NotImplementedError(
            f"rope_type {rope_type!r} ({_NOT_IMPLEMENTED_TYPES[rope_type]}) is not implemented"
        )
    if rope_type not in ROPE_TYPES:
        raise ValueError(f"unknown rope_type {rope_type!r}; known: {', '.join(ROPE_TYPES)}")
    if family.only_default and rope_type != "default":
        raise ValueError(
            f"{model_type}'s code does not compute rope_type {rope_type!r}: {family.only_default}; "
            "posenc_ref refuses a RoPE the model would not compute (drop the scaling, or give "
            "rope_type 'default')"
        )
    kind = ROPE_TYPES[rope_type]
    allowed = COMMON_KEYS | kind.keys | family.rope_keys
    allowed |= MROPE_KEYS if family.mrope else frozenset()
    unknown = sorted(set(rope) - allowed)
    if unknown:
        mrope_hint = ""
        if set(unknown) & MROPE_KEYS:
            mrope_hint = f" ({model_type!r}'s code has no M-RoPE)"
        raise ValueError(
            f"RoPE key(s) {unknown} are not read by rope_type {rope_type!r}{mrope_hint}; it reads "
            f"{sorted(allowed - {'type'})}"
        )

    if family.fixed_theta is not None:
        if rope["rope_theta"] not in (None, family.fixed_theta):
            raise ValueError(
                f"{model_type}'s code fixes the base at {family.fixed_theta:g}; it reads no "
                f"rope_theta (got {_show(rope['rope_theta'])})"
            )
        rope["rope_theta"] = family.fixed_theta
    base = _real("rope_theta", rope["rope_theta"])
    if base <= 1:
        raise ValueError(f"rope_theta must be > 1, got {base!r}")
    for path, (quantity, why) in family.conflicts.items():
        value = _lookup(config, path)
        if value is not None and value != base:
            raise ValueError(
                f"{path} = {_show(value)} but {quantity} = {base:g}: {why}. The model was "
                f"configured with {path}; give {quantity} = {_show(value)} explicitly if that is "
                f"the base it needs"
            )
    head_dim = _head_dim(config, family, model_type, layer_type, "head_dim" in overrides)
    freq_dim, partial = _rotary_dim(config, rope, family, head_dim, kind.full_width, layer_type)
    # HF's rule for an odd width: frequencies base^(-2i / width) for i < ceil(width / 2), one pair
    # each, so the rotated part is rounded up to the next even width (transformers' validate_rope)
    rotary_dim = freq_dim + freq_dim % 2
    max_len = _same(
        "max_position_embeddings",
        config.get("max_position_embeddings"),
        rope.get("max_position_embeddings"),
        ("the top level", "the RoPE dict"),
    )
    max_len = None if max_len is None else _length("max_position_embeddings", max_len)
    original = _same(
        "original_max_position_embeddings",
        rope.get("original_max_position_embeddings"),
        config.get("original_max_position_embeddings"),
        ("the RoPE dict", "the top level"),
    )
    if original is not None:
        original = _length("original_max_position_embeddings", original)
    for key in ("factor", "attention_factor", "mscale", "mscale_all_dim", "beta_fast",
                "beta_slow", "low_freq_factor", "high_freq_factor"):  # fmt: skip
        if rope.get(key) is not None:
            _real(key, rope[key])  # a 5,000-digit number is a ValueError, never an OverflowError

    if freq_dim != rotary_dim and kind.transform is not None:
        raise NotImplementedError(
            f"an odd rotary width ({freq_dim}, rounded up to {rotary_dim} as HF does) with "
            f"rope_type {rope_type!r} is not implemented (only 'default' reads it)"
        )
    args = TypeArgs(rope, rotary_dim, head_dim, partial, base, max_len, original, freq_dim)
    read = kind.read(args)
    if family.normalized_after is not None and family.normalized_after(config):
        # q and k are L2-normalized right after the rotation (Llama 4's qk_norm): the norm
        # commutes with the rotation and cancels any factor on cos and sin.
        read = _without_attention_factor(read, rotary_dim, base)

    layout_used, output_layout = family.layout, family.output_layout
    if family.layout_key is not None:
        flag = config.get(family.layout_key, True)
        if not isinstance(flag, bool):
            raise TypeError(f"{family.layout_key} must be true or false, got {_show(flag)}")
        layout_used = "interleaved" if flag else "half"
        output_layout = "half"

    softmax_scale = 1.0
    if family.softmax_mscale and rope_type != "default" and rope.get("mscale_all_dim"):
        # The MLA families multiply their softmax scale by g(s, mscale_all_dim)^2 (outside RoPE).
        from ..rope_scaling import yarn_mscale

        softmax_scale = (
            yarn_mscale(read.factor, _real("mscale_all_dim", rope["mscale_all_dim"])) ** 2
        )

    section, assignment = _mrope(rope, family, rotary_dim, model_type)
    layers, nope_layers = _layers_of(config, family, layer_type, null_types)
    query_scale = family.query_scale(config, rope) if family.query_scale else None
    nope_query_scale = family.nope_query_scale(config) if family.nope_query_scale else None
    nope_dim = 0
    if family.nope_dim_key is not None and config.get(family.nope_dim_key) is not None:
        nope_dim = _length(family.nope_dim_key, config[family.nope_dim_key], 0)

    return RopeSpec(
        head_dim=head_dim,
        rotary_dim=rotary_dim,
        layout=layout_used,
        base=base,
        rope_type=rope_type,
        inv_freq=read.freqs.inv_freq,
        attention_factor=float(read.freqs.attention_factor),
        original_max_len=read.original_len,
        max_len=max_len,
        mrope_section=section,
        mrope_interleaved=assignment == "interleaved",
        mrope_assignment=assignment,
        output_layout=output_layout or layout_used,
        factor=read.factor,
        scaling=read.scaling,
        softmax_scale_factor=softmax_scale,
        model_type=model_type,
        layer_type=layer_type,
        nope_dim=nope_dim,
        query_scale=query_scale,
        layers=layers,
        nope_layers=nope_layers,
        nope_query_scale=nope_query_scale if nope_layers or nope_layers is None else None,
        clockwise=family.clockwise,
        normalized_after=bool(family.normalized_after and family.normalized_after(config)),
    )


def _without_attention_factor(read, rotary_dim: int, base: float):
    """The same frequencies with attention factor 1 (what a following L2 norm leaves of it)."""
    from dataclasses import replace as _replace

    from ..rope_scaling import ScaledFrequencies

    if read.freqs.attention_factor == 1.0:
        return read
    if read.scaling is None:
        return _replace(read, freqs=ScaledFrequencies(read.freqs.inv_freq, 1.0))
    scaling = read.scaling.replace(attention_factor=1.0)  # yarn and longrope: the final value
    return _replace(read, scaling=scaling, freqs=scaling.frequencies(rotary_dim, base))


def layer_specs(
    config: Mapping[str, Any] | object, *, layout: str | None = None
) -> list[RopeSpec | None]:
    """The RoPE of every layer of a model, in order: one :class:`RopeSpec` per layer, or ``None``.

    ``None`` marks a layer without RoPE (SmolLM3's and Llama 4's NoPE layers, a layer type
    whose ``rope_parameters`` is null). Layers of one layer type share one spec object. For a
    config that says nothing about its layers (no ``num_hidden_layers``), the list has one
    entry per layer type, in the order the types first appear.

    Parameters
    ----------
    config
        The model's configuration, as for :func:`rope_spec`.
    layout
        As for :func:`rope_spec`.

    Returns
    -------
    list of RopeSpec or None
    """
    plain, _ = _language_config(_plain(config))
    family, _ = _family_of(_language_config(_plain(config))[1], layout)
    plain = family.resolve(plain)
    types = plain.get("layer_types")
    count = _layer_count(plain)
    if types is not None:
        if not isinstance(types, (list, tuple)) or not all(isinstance(t, str) for t in types):
            raise TypeError(f"layer_types must be a list of strings, got {_show(types)}")
        if count is not None and len(types) != count:
            raise ValueError(f"layer_types has {len(types)} entries but num_hidden_layers={count}")
    per_type: dict[str | None, RopeSpec | None] = {}
    spec = None
    if types is None:
        spec = rope_spec(config, layout=layout)
        if count is None:
            return [spec]
        return [None if i in (spec.nope_layers or ()) else spec for i in range(count)]
    rotating = family.rope_layers(plain, count) if family.rope_layers is not None else None
    out: list[RopeSpec | None] = []
    for i, layer_type in enumerate(types):
        if layer_type not in per_type:
            of_type = [j for j, t in enumerate(types) if t == layer_type]
            if rotating is not None and not any(rotating[j] for j in of_type):
                per_type[layer_type] = None  # layers its code never rotates (LFM3's conv layers)
        if layer_type not in per_type:
            try:
                per_type[layer_type] = rope_spec(config, layer_type=layer_type, layout=layout)
            except ValueError as error:
                if "has no RoPE" not in str(error):
                    raise
                per_type[layer_type] = None
        spec = per_type[layer_type]
        out.append(None if spec is None or i in (spec.nope_layers or ()) else spec)
    return out if count is not None else [per_type[t] for t in dict.fromkeys(types)]
