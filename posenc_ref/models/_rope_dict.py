r"""Step 4 of reading a RoPE: the one RoPE dict that applies, its type and its base.

Both config forms (``rope_parameters``; the older ``rope_theta`` + ``rope_scaling``), one dict
per layer type (and Gemma 3's older per-type bases), a layer type's ``per_layer_config``
overrides, the spelling of the type (``type`` or ``rope_type``, legacy names), the keys the type
and the family read, and the base (fixed by the code, or contradicted by a key it never reads).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ._config import TOP_LEVEL, copy, lookup, name, real, same, shown
from .family import Family
from .rope_types import COMMON_KEYS, ROPE_TYPES, RopeType
from .sparse_traits import NamedTables
from .traits import (
    AlphaType,
    BaseRatio,
    Conflicts,
    FixedBase,
    LegacyKeys,
    LegacyTypes,
    LocalBase,
    OnlyDefault,
    ScaledType,
)

MROPE_KEYS = frozenset({"mrope_section", "mrope_interleaved"})

# RoPE types posenc_ref knows but does not implement.
NOT_IMPLEMENTED_TYPES = {
    "axial": "2-D (axial) RoPE of vision encoders; posenc_ref.axial has the schemes of eight "
    "families' vision towers (apply_axial_rope), but this reader does not read vision configs"
}


@dataclass(frozen=True)
class ChosenRope:
    """What this step found.

    Attributes
    ----------
    config : dict
        The config, with the layer type's ``per_layer_config`` overrides.
    rope : dict
        The RoPE dict that applies: ``rope_type`` named as the code names it, ``rope_theta``
        filled in.
    kind : RopeType
        Its entry in :data:`~posenc_ref.models.ROPE_TYPES`.
    base : float
        ``rope_theta``.
    layer_type : str or None
        The layer type it belongs to.
    null_types : frozenset of str
        Layer types whose RoPE dict is null (no RoPE there).
    overrides : dict
        The layer type's ``per_layer_config`` overrides.
    table : str or None
        The name of the RoPE table the layer type uses, where the config names its tables
        (DeepSeek-V4: ``"main"`` or ``"compress"``).
    """

    config: dict[str, Any]
    rope: dict[str, Any]
    kind: RopeType
    base: float
    layer_type: str | None
    null_types: frozenset[str]
    overrides: dict[str, Any]
    table: str | None = None


def choose_rope(
    config: dict[str, Any], family: Family, model_type: str | None, layer_type: str | None
) -> ChosenRope:
    """The RoPE dict of ``layer_type`` (or the only one), checked against its type's keys."""
    types_fit_layers(config)
    overrides = {}
    if layer_type is not None:
        overrides = layer_overrides(config, name("layer_type", layer_type))
        config = {**config, **overrides}
    rope, top_theta = rope_dicts(config, family)
    nested = is_nested(rope)
    null_types = frozenset(k for k, v in rope.items() if v is None) if nested else frozenset()
    tables, table = family.trait(NamedTables), None
    if tables is not None:  # DeepSeek-V4: tables by name, and which one each layer type uses
        table = table_of(tables, config, layer_type)
        rope, _ = dict_of_layer_type(tables.build(config, rope, top_theta), None, family, table,
                                     False)  # fmt: skip
    else:
        rope, layer_type = choose_layer_type(rope, top_theta, config, family, layer_type)
    if nested and rope.get("partial_rotary_factor") is not None:
        # transformers fills each layer type's dict from the top level (setdefault): a type's
        # own partial_rotary_factor wins there (Laguna: 0.5 at the top, 1.0 for sliding layers)
        config = {k: v for k, v in config.items() if k != "partial_rotary_factor"}
    rope = meaning(rope, family, "the RoPE dict")
    if family.trait(AlphaType) and rope["rope_type"] == "dynamic" and rope.get("alpha"):
        rope["rope_type"] = "ntk_alpha"  # HunYuan's static NTK-alpha
    kind = rope_type_of(rope, family, model_type)
    base = base_of(rope, config, family, model_type)
    return ChosenRope(config, rope, kind, base, layer_type, null_types, overrides, table)


def types_fit_layers(config: Mapping[str, Any]) -> None:
    """One layer type per layer: transformers' layer_type_validation refuses any other count."""
    types, count = config.get("layer_types"), config.get("num_hidden_layers")
    if isinstance(types, (list, tuple)) and isinstance(count, int) and not isinstance(count, bool):
        if len(types) != count:
            raise ValueError(
                f"layer_types has {len(types)} entries but num_hidden_layers={count}: layer i "
                "is of layer_types[i] (transformers refuses the config too)"
            )


def table_of(tables: NamedTables, config: Mapping[str, Any], layer_type: str | None) -> str:
    """The name of the table ``layer_type`` uses; the layer type must be one of the config's."""
    types = config.get("layer_types")
    if not isinstance(types, (list, tuple)) or not all(isinstance(t, str) for t in types):
        raise TypeError(f"layer_types must be a list of strings, got {shown(types)}")
    which = {t: tables.table_of.get(t, tables.default) for t in dict.fromkeys(types)}
    listed = ", ".join(f"{t}: {table!r}" for t, table in which.items())
    if layer_type is None:
        raise ValueError(
            f"this config has one RoPE per layer type, from the tables its layer types use "
            f"({listed}): pass layer_type="
        )
    if layer_type not in which:
        raise ValueError(
            f"layer_type {layer_type!r} is not one of the config's layer_types ({listed})"
        )
    return which[layer_type]


# --------------------------------------------------------------------------- the dicts


def is_nested(rope: Mapping[str, Any]) -> bool:
    """One RoPE dict per layer type (transformers' rule: keys that are the config's layer types)."""
    if not rope:
        return False
    known = COMMON_KEYS | MROPE_KEYS | frozenset().union(*(t.keys for t in ROPE_TYPES.values()))
    return all(
        key not in known and (value is None or isinstance(value, Mapping))
        for key, value in rope.items()
    )


def meaning(rope: Mapping[str, Any], family: Family, where: str) -> dict[str, Any]:
    """A RoPE dict compared by what it means: one spelling of the type, legacy names mapped."""
    out = dict(rope)
    legacy = family.trait(LegacyTypes)
    names = [out.pop("rope_type", None), out.pop("type", None)]
    given = []
    for label, spelled in zip((f"{where}['rope_type']", f"{where}['type']"), names, strict=True):
        if spelled is not None:
            name(label, spelled)
            given.append(legacy.names.get(spelled, spelled) if legacy else spelled)
    if len(given) == 2 and given[0] != given[1]:
        raise ValueError(
            f"inconsistent rope_type {names[0]!r} and type {names[1]!r} in {where} (they mean "
            f"{given[0]!r} and {given[1]!r})"
        )
    out["rope_type"] = given[0] if given else "default"
    return out


def rope_dicts(config: dict[str, Any], family: Family) -> tuple[dict[str, Any], object]:
    """The RoPE dict (or the dict of per-layer-type dicts) and the top-level base."""
    parameters = config.get("rope_parameters")
    scaling = config.get("rope_scaling")
    for key, value in (("rope_parameters", parameters), ("rope_scaling", scaling)):
        if value is not None and not isinstance(value, Mapping):
            raise TypeError(f"{key} must be a dict or null, got {shown(value)}")
    parameters = per_layer_type_only(copy(parameters, "rope_parameters") or {}, config)
    scaling = per_layer_type_only(copy(scaling, "rope_scaling") or {}, config)
    for key, given in (config.get(TOP_LEVEL) or {}).items():
        own = parameters if key == "rope_parameters" else scaling
        if meaning(own, family, f"text_config's {key}") != meaning(given, family, key):
            raise ValueError(
                f"inconsistent {key}: text_config gives {shown(own)} but the top level gives "
                f"{shown(given)}, and they mean different RoPEs"
            )
    if parameters and scaling:
        # The same RoPE may be written both ways (a transformers object keeps the old
        # rope_scaling next to rope_parameters): compare what they mean, not how they are spelled.
        if is_nested(parameters) or is_nested(scaling):
            agree = parameters == scaling
        else:
            a = meaning(parameters, family, "rope_parameters")
            b = meaning(scaling, family, "rope_scaling")
            theta = same("rope_theta", a.pop("rope_theta", None), b.pop("rope_theta", None),
                         ("rope_parameters", "rope_scaling"))  # fmt: skip
            agree = a == b
            if agree and theta is not None:
                parameters = {**parameters, "rope_theta": theta}
        if not agree:
            raise ValueError(
                f"inconsistent rope_parameters {shown(parameters)} and rope_scaling "
                f"{shown(scaling)}: they mean different RoPEs; give one (transformers >= 5 "
                "writes rope_parameters)"
            )
    rope = parameters or scaling
    top_theta = config.get("rope_theta")
    legacy = family.trait(LegacyKeys)
    for key, spec in (legacy.by_key if legacy else {}).items():
        if spec.quantity == "rope_theta" and config.get(key) is not None:
            real(key, config[key])  # a number, named by the key the config gives
            top_theta = same("rope_theta", top_theta, config[key], ("rope_theta", key))
    return rope, top_theta


def per_layer_type_only(rope: dict[str, Any], config: Mapping[str, Any]) -> dict[str, Any]:
    """A RoPE dict keyed by the config's layer types, without the entries beside them.

    transformers 5.23 reads ``rope_parameters[layer_type]`` wherever a key is one of the
    config's ``layer_types`` (``nested_rope_parameter_keys``); an entry beside them
    (``"original_max_position_embeddings": 4096`` next to ``full_attention`` and
    ``sliding_attention``) is read by no layer. (A note says so: ``_unread.stray_rope_notes``.)
    """
    types = config.get("layer_types")
    if not isinstance(types, (list, tuple)) or not rope:
        return rope
    nested = [k for k in rope if k in types and isinstance(rope[k], Mapping)]
    if not nested or len(nested) == len(rope):
        return rope
    return {k: v for k, v in rope.items() if k in types}


def choose_layer_type(
    rope: dict[str, Any], top_theta: object, config: dict[str, Any], family: Family,
    layer_type: str | None,
) -> tuple[dict[str, Any], str | None]:  # fmt: skip
    """The one RoPE dict that applies (with rope_theta filled in), and the layer type."""
    local = family.trait(LocalBase)
    per_type_theta = local is not None and isinstance(family.theta, Mapping)
    if per_type_theta and not is_nested(rope):
        # Gemma 3's older form: rope_theta and rope_scaling for full attention,
        # rope_local_base_freq for the sliding-window layers.
        full = dict(rope) if rope else {"rope_type": "default"}
        full.setdefault("rope_theta", top_theta)
        rope = {
            "full_attention": full,
            "sliding_attention": {"rope_type": "default", "rope_theta": local_base(config, local)},
        }
        top_theta = None
    scaled = family.trait(ScaledType)
    if scaled is not None and not is_nested(rope) and config.get("rope_parameters") is None:
        rope, top_theta = legacy_per_type(rope, top_theta, config, family, scaled), None
    if is_nested(rope):
        refuse_missing_entry(rope, config, layer_type)
        return dict_of_layer_type(rope, top_theta, family, layer_type, per_type_theta)
    if layer_type is not None:
        types = config.get("layer_types")
        if types is None:
            raise ValueError(
                f"layer_type={layer_type!r}, but this config has one RoPE for every layer and no "
                "layer_types: leave layer_type out"
            )
        if not isinstance(types, (list, tuple)) or not all(isinstance(t, str) for t in types):
            raise TypeError(f"layer_types must be a list of strings, got {shown(types)}")
        if layer_type not in types:
            raise ValueError(
                f"layer_type {layer_type!r} is not one of the config's layer_types "
                f"({', '.join(sorted(set(types)))})"
            )
    rope = dict(rope)
    where = ("the RoPE dict", "the top level")
    theta = same("rope_theta", rope.get("rope_theta"), top_theta, where)
    rope["rope_theta"] = family.theta_default(layer_type) if theta is None else theta
    return rope, layer_type


def local_base(config: Mapping[str, Any], local: LocalBase) -> float | None:
    """Gemma 3's older sliding-window base, checked under its own name."""
    value = config.get(local.key)
    return None if value is None else real(local.key, value)


def legacy_per_type(
    rope: dict[str, Any], top_theta: object, config: Mapping[str, Any], family: Family,
    scaled: ScaledType,
) -> dict[str, Any]:  # fmt: skip
    """OLMo 3's older form: the flat ``rope_scaling`` and ``rope_theta`` are its full layers'.

    Every other layer type gets the default RoPE with the class's ``default_theta``.
    """
    types = config.get("layer_types")
    if types is None:  # no layers to build them for: the class's types
        types = list(family.rope or ()) or [scaled.layer_type]
    if not isinstance(types, (list, tuple)) or not all(isinstance(t, str) for t in types):
        raise TypeError(f"layer_types must be a list of strings, got {shown(types)}")
    full = meaning(rope, family, "rope_scaling") if rope else {"rope_type": "default"}
    full.setdefault("rope_theta", top_theta if top_theta is not None else family.theta_default(
        scaled.layer_type))  # fmt: skip
    others = {"rope_type": "default", "rope_theta": scaled.others_base}
    return {t: (full if t == scaled.layer_type else dict(others)) for t in dict.fromkeys(types)}


def refuse_missing_entry(
    rope: Mapping[str, Any], config: Mapping[str, Any], layer_type: str | None
) -> None:
    """Refuse a layer type of the config's ``layer_types`` that its per-type RoPE dict lacks.

    A missing entry is not a null one: transformers' rotary modules skip a type whose entry is
    null (no RoPE) but read ``rope_parameters[layer_type]`` for every other type of
    ``layer_types``, and raise ``KeyError`` for one that is missing (Gemma 3's, run by
    ``tests/test_missing_rope_entry.py``).
    """
    types = config.get("layer_types")
    if layer_type is None or layer_type in rope or not isinstance(types, (list, tuple)):
        return
    layers = [i for i, t in enumerate(types) if t == layer_type]
    if not layers:
        return  # not one of the config's types: dict_of_layer_type names the bad argument
    few = ", ".join(str(i) for i in layers[:4])
    few += f", ... ({len(layers)} layers)" if len(layers) > 4 else ""
    raise ValueError(
        f"layer_types gives layer type {layer_type!r} (layers {few}), which has no entry in the "
        f"per-layer-type rope_parameters (its entries: {', '.join(str(k) for k in rope)}): "
        f"transformers' rotary module reads rope_parameters[{layer_type!r}], has no such entry "
        f"and raises KeyError. Give {layer_type!r} an entry, or null for layers without RoPE"
    )


def dict_of_layer_type(
    rope: dict[str, Any], top_theta: object, family: Family, layer_type: str | None,
    per_type_theta: bool,
) -> tuple[dict[str, Any], str]:  # fmt: skip
    """From a RoPE dict per layer type: the one of ``layer_type``."""
    if layer_type is None:
        raise ValueError(
            f"this config has one RoPE per layer type ({', '.join(rope)}): pass layer_type="
        )
    if layer_type not in rope:
        raise ValueError(
            f"layer_type {layer_type!r} is not in the config's per-layer RoPE ({', '.join(rope)})"
        )
    chosen = rope[layer_type]
    if chosen is None:
        raise ValueError(f"layer type {layer_type!r} has no RoPE (its rope_parameters is null)")
    chosen = dict(chosen)
    if chosen.get("rope_theta") is None:
        default = family.theta_default(layer_type)
        chosen["rope_theta"] = top_theta if top_theta is not None else default
    elif top_theta is not None and not per_type_theta:
        same("rope_theta", chosen["rope_theta"], top_theta, ("rope_parameters", "the top level"))
    return chosen, layer_type


# per_layer_config keys that change no layer's RoPE: the window a layer attends over, the widths
# of its values and latents, its MLP (NeoMME alternates sliding windows within a layer type;
# dots3_note's sliding layers have their own key/value heads and latent ranks)
NOT_ROPE = frozenset({"sliding_window", "num_key_value_heads", "q_lora_rank", "kv_lora_rank",
                      "v_head_dim", "intermediate_size", "moe_intermediate_size",
                      "num_experts", "n_routed_experts", "num_experts_per_tok", "mlp_bias",
                      "attention_bias", "attention_dropout"})  # fmt: skip


def layer_overrides(config: Mapping[str, Any], layer_type: str | None) -> dict[str, Any]:
    """The per_layer_config of transformers (layer index -> keys it overrides), for a type.

    Layers of one type may differ in keys that change no RoPE (:data:`NOT_ROPE`); in any other
    key they must agree, since posenc_ref reads one RoPE per layer type.
    """
    per_layer = config.get("per_layer_config")
    if not per_layer:
        return {}
    if not isinstance(per_layer, Mapping):
        raise TypeError(
            f"per_layer_config must be a dict of layer index -> keys, got {shown(per_layer)}"
        )
    types = config.get("layer_types")
    found: dict[int, dict[str, Any]] = {}
    for index, overrides in per_layer.items():
        try:
            layer = int(index)
        except (TypeError, ValueError):
            raise ValueError(
                f"per_layer_config keys must be layer indices, got {shown(index)}"
            ) from None
        if not isinstance(overrides, Mapping):
            raise TypeError(f"per_layer_config[{index!r}] must be a dict, got {shown(overrides)}")
        if types is None or not 0 <= layer < len(types):
            raise ValueError(
                f"per_layer_config names layer {layer}, which layer_types does not have"
            )
        if types[layer] == layer_type:
            found[layer] = {k: v for k, v in overrides.items() if k not in NOT_ROPE}
    if not any(found.values()):
        return {}
    layers = [i for i, t in enumerate(types) if t == layer_type]
    first = found.get(layers[0], {})
    differ = next((i for i in layers if found.get(i, {}) != first), None)
    if differ is not None:
        raise ValueError(
            f"per_layer_config gives the {layer_type!r} layers different values (layer "
            f"{layers[0]}: {shown(first)}, layer {differ}: {shown(found.get(differ, {}))}); "
            "posenc_ref reads one RoPE per layer type"
        )
    return first


# --------------------------------------------------------------------------- type and base


def rope_type_of(rope: Mapping[str, Any], family: Family, model_type: str | None) -> RopeType:
    """The type's entry; every key of the dict must be read by the type or the family."""
    rope_type = rope["rope_type"]
    if rope_type in NOT_IMPLEMENTED_TYPES:
        raise NotImplementedError(
            f"rope_type {rope_type!r} ({NOT_IMPLEMENTED_TYPES[rope_type]}) is not implemented"
        )
    if rope_type not in ROPE_TYPES:
        raise ValueError(f"unknown rope_type {rope_type!r}; known: {', '.join(ROPE_TYPES)}")
    only = family.trait(OnlyDefault)
    if only is not None and rope_type != "default":
        raise ValueError(
            f"{model_type}'s code does not compute rope_type {rope_type!r}: {only.why}; "
            "posenc_ref refuses a RoPE the model would not compute (drop the scaling, or give "
            "rope_type 'default')"
        )
    kind = ROPE_TYPES[rope_type]
    allowed = COMMON_KEYS | kind.keys | family.rope_keys()
    unknown = sorted(set(rope) - allowed)
    if unknown:
        mrope_hint = ""
        if set(unknown) & MROPE_KEYS:
            mrope_hint = f" ({model_type!r}'s code has no M-RoPE)"
        raise ValueError(
            f"RoPE key(s) {unknown} are not read by rope_type {rope_type!r}{mrope_hint}; it reads "
            f"{sorted(allowed - {'type'})}"
        )
    return kind


def base_of(
    rope: dict[str, Any], config: Mapping[str, Any], family: Family, model_type: str | None
) -> float:
    """``rope_theta``: the code's fixed base, or the config's, checked against keys it ignores."""
    fixed = family.trait(FixedBase)
    if fixed is not None:
        if rope["rope_theta"] not in (None, fixed.base):
            raise ValueError(
                f"{model_type}'s code fixes the base at {fixed.base:g}; it reads no "
                f"rope_theta (got {shown(rope['rope_theta'])})"
            )
        rope["rope_theta"] = fixed.base
    ratio = family.trait(BaseRatio)
    if ratio is not None:  # GLM-4's rope_ratio: the code's base times the factor
        rope["rope_theta"] = real("rope_theta", rope["rope_theta"]) * ratio.rule(config)
    base = real("rope_theta", rope["rope_theta"])
    if base <= 1:
        raise ValueError(f"rope_theta must be > 1, got {base!r}")
    conflicts = family.trait(Conflicts)
    for path, (quantity, why) in (conflicts.paths if conflicts else {}).items():
        value = lookup(config, path)
        if value is not None and value != base:
            raise ValueError(
                f"{path} = {shown(value)} but {quantity} = {base:g}: {why}. The model was "
                f"configured with {path}; give {quantity} = {shown(value)} explicitly if that is "
                f"the base it needs"
            )
    return base
