r"""What config classes do to a released ``config.json`` before their model reads it.

The rewrites that :class:`~posenc_ref.models.traits.ConfigClass` traits name (ModernBERT's,
Gemma 4's and dots3_note's layer types and RoPE per type) and DeepSeek-V4's two RoPE tables,
each read from the class's ``__post_init__`` in transformers 5.23 and proven against it in the
tests. The rules about layers and query scalings are in :mod:`posenc_ref.models._rules`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ._config import CLASS_NOTES, bounded_int, layer_count, length, real, shown


def deepseek_v4_tables(
    config: Mapping[str, Any], rope: Mapping[str, Any], theta: Any
) -> dict[str, dict[str, Any]]:
    """DeepSeek-V4's two RoPE tables, ``main`` and ``compress``, as its config class builds them.

    Already nested: kept. From the flat form (``rope_scaling``, ``rope_theta``,
    ``compress_rope_theta``): ``main`` is the default RoPE with ``rope_theta``; ``compress`` is
    the flat dict (YaRN in the released files) with ``compress_rope_theta`` (default 160000), and
    a YaRN ``compress`` gets ``attention_factor`` 1.0 unless given ("the V4 reference does NOT
    multiply cos/sin by YaRN's mscale", ``DeepseekV4Config.__post_init__``).
    """
    if isinstance(rope.get("main"), Mapping) and isinstance(rope.get("compress"), Mapping):
        return {"main": dict(rope["main"]), "compress": dict(rope["compress"])}
    flat = {k: v for k, v in rope.items() if k not in ("main", "compress", "rope_theta")}
    # main takes the top-level rope_theta (the class's default 10000), never the flat dict's
    main = {"rope_type": "default", "rope_theta": theta if theta is not None else 10000.0}
    compress = {**flat, "rope_theta": config.get("compress_rope_theta", 160000.0)}
    kind = compress.get("rope_type", compress.get("type", "default"))
    if kind == "yarn":
        compress.setdefault("attention_factor", 1.0)
    if "rope_type" not in compress and "type" not in compress:
        compress["rope_type"] = "default"
    return {"main": main, "compress": compress}


# dots3_note's sliding-window layers when the config gives no swa_* key
# (configuration_dots3_note.py: Dots3NoteTextConfig.__post_init__)
DOTS3_SLIDING = {"num_attention_heads": 64, "num_key_value_heads": 64, "q_lora_rank": 1024,
                 "kv_lora_rank": 1024, "head_dim": 256, "qk_nope_head_dim": 192,
                 "v_head_dim": 128}  # fmt: skip
# the keys only its class reads (use_dsa and use_sliding_window are other classes' words too)
DOTS3_KEYS = frozenset(f"swa_{key}" for key in (*DOTS3_SLIDING, "qk_rope_head_dim", "rope_theta"))


def dots3_note_config(config: Mapping[str, Any]) -> dict[str, Any]:
    """dots3_note's config as its class stores it: per-layer-type MLA widths and RoPE.

    ``Dots3NoteTextConfig.__post_init__`` builds ``layer_types`` (DSA layers ``indexed_attention``,
    called ``full_attention`` by legacy checkpoints; ``sliding_attention`` except for the first
    two layers and every fourth from layer 1), turns the ``swa_*`` keys into a
    ``per_layer_config`` of the sliding layers (unless the config gives one), and
    ``convert_rope_params_to_dict`` gives each layer type a RoPE dict (the sliding layers' base
    ``swa_rope_theta``) whose ``partial_rotary_factor`` it sets to that type's
    ``qk_rope_head_dim / head_dim``, whatever the file says.
    """
    out = dict(config)
    given_per_layer = "per_layer_config" in out
    use_dsa = out.pop("use_dsa", None if given_per_layer else True)
    use_sliding = out.pop("use_sliding_window", True)
    count = layer_count(out) or 46  # the class's default
    types = out.get("layer_types")
    if types is None:
        full = "full_attention" if use_dsa is False else "indexed_attention"
        types = [full if not use_sliding or i < 2 or i % 4 == 1 else "sliding_attention"
                 for i in range(count)]  # fmt: skip
    elif not isinstance(types, (list, tuple)) or not all(isinstance(t, str) for t in types):
        raise TypeError(f"layer_types must be a list of strings, got {types!r:.80}")
    if use_dsa is not None:
        old, new = ("full_attention", "indexed_attention")[:: 1 if use_dsa else -1]
        types = [new if t == old else t for t in types]
    out["layer_types"] = list(types)
    sliding = {key: out.pop(f"swa_{key}", value) for key, value in DOTS3_SLIDING.items()}
    for key in ("head_dim", "qk_nope_head_dim"):
        length(f"swa_{key}", sliding[key])
    sliding["qk_rope_head_dim"] = out.pop(
        "swa_qk_rope_head_dim",
        length("swa_head_dim", sliding["head_dim"])
        - length("swa_qk_nope_head_dim", sliding["qk_nope_head_dim"]),
    )
    length("swa_qk_rope_head_dim", sliding["qk_rope_head_dim"])
    if not given_per_layer:
        out["per_layer_config"] = {
            i: dict(sliding) for i, t in enumerate(types) if t == "sliding_attention"
        }
    out["rope_parameters"] = dots3_rope(out, types)
    return out


def dots3_rope(out: dict[str, Any], types: list[str]) -> dict[str, Any]:
    """One RoPE dict per layer type, its partial factor the type's rope part over its head."""
    swa_theta = out.pop("swa_rope_theta", 50_000.0)
    if out.get("rope_parameters") is None and out.get("rope_scaling") is None:
        real("swa_rope_theta", swa_theta)
    theta = out.pop("rope_theta", 80_000_000.0)
    out.pop("partial_rotary_factor", None)  # set per type below, as the class does
    rope = out.get("rope_parameters")
    if rope is None:
        scaling = out.get("rope_scaling")
        if scaling is not None and not isinstance(scaling, Mapping):
            raise TypeError(f"rope_scaling must be a dict or null, got {shown(scaling)}")
        rope = out.pop("rope_scaling", None) or {
            t: {"rope_type": "default", "rope_theta": swa_theta if t == "sliding_attention"
                else theta} for t in dict.fromkeys(types)
        }  # fmt: skip
    if not isinstance(rope, Mapping):
        raise TypeError(f"rope_parameters must be a dict or null, got {rope!r:.80}")
    nested = bool(rope) and all(k in types and isinstance(v, Mapping) for k, v in rope.items())
    rope = {
        t: dict(rope[t] if nested else rope) for t in (rope if nested else dict.fromkeys(types))
    }
    per_layer = out.get("per_layer_config") or {}
    if not isinstance(per_layer, Mapping):
        raise TypeError(
            f"per_layer_config must be a dict of layer index -> keys, got {per_layer!r:.80}"
        )
    # to_dict() writes the keys as "01": the layer reads the entry of its index
    by_index = {int(i): v for i, v in per_layer.items() if str(i).strip().isdigit()}
    for layer_type, params in rope.items():
        params.setdefault("rope_theta", theta)
        own = by_index.get(types.index(layer_type), {}) if layer_type in types else {}
        own = own if isinstance(own, Mapping) else {}
        part = own.get("qk_rope_head_dim", out.get("qk_rope_head_dim", 64))
        head = own.get("head_dim", out.get("head_dim", 256))
        params["partial_rotary_factor"] = length("qk_rope_head_dim", part) / length(
            "head_dim", head
        )
    return rope


def modernbert_config(config: Mapping[str, Any]) -> dict[str, Any]:
    """ModernBERT's (and its decoder's) config as its class stores it: one RoPE per layer type.

    ``ModernBertConfig.__post_init__`` builds ``layer_types`` (full attention every
    ``global_attn_every_n_layers``-th layer from layer 0, default 3) and
    ``convert_rope_params_to_dict`` starts from a default RoPE dict per layer type, updates both
    with a legacy flat ``rope_scaling``, and gives each its base where it has none:
    ``global_rope_theta`` (160000) for full attention, ``local_rope_theta`` (10000) for the
    sliding-window layers. A top-level ``rope_theta`` is never read.
    """
    out = dict(config)
    every = out.pop("global_attn_every_n_layers", 3)
    count = layer_count(out)
    if out.get("layer_types") is None and count is not None:
        every = bounded_int("global_attn_every_n_layers", every, "modernbert", minimum=1,
                            maximum=2**16)  # fmt: skip
        out["layer_types"] = ["sliding_attention" if i % every else "full_attention"
                              for i in range(count)]  # fmt: skip
    scaling = out.pop("rope_scaling", None)
    given = out.get("rope_parameters")
    notes: list[str] = []
    rope = {
        "sliding_attention": {"rope_type": "default"},
        "full_attention": {"rope_type": "default"},
    }
    if given is not None:
        if not isinstance(given, Mapping):
            raise TypeError(f"rope_parameters must be a dict or null, got {given!r:.80}")
        rope = {key: dict(value) if isinstance(value, Mapping) else value
                for key, value in given.items()}  # fmt: skip
        if not set(rope) <= {"full_attention", "sliding_attention"}:
            raise ValueError(
                "rope_parameters of ModernBERT must be one dict per layer type (full_attention, "
                f"sliding_attention), got the keys {sorted(map(str, rope))}; a single RoPE for "
                "every layer is written as the legacy rope_scaling"
            )

    if scaling is not None:
        if not isinstance(scaling, Mapping):
            raise TypeError(f"rope_scaling must be a dict or null, got {scaling!r:.80}")
        for layer_type in ("full_attention", "sliding_attention"):
            if not isinstance(rope.get(layer_type), dict):
                raise ValueError(
                    f"rope_scaling updates rope_parameters['{layer_type}'], which this config "
                    "does not give as a dict (ModernBertConfig.convert_rope_params_to_dict)"
                )
            rope[layer_type].update(scaling)
    for layer_type, key, default in (
        ("full_attention", "global_rope_theta", 160_000.0),
        ("sliding_attention", "local_rope_theta", 10_000.0),
    ):
        if rope.get(layer_type) is None:
            rope[layer_type] = {"rope_type": "default"}
        params = rope[layer_type]
        params.setdefault("rope_theta", out.pop(key, default))
        kind, legacy = params.get("rope_type"), params.get("type")
        if kind is not None and legacy is not None and kind != legacy:
            # the legacy "type" is read only where rope_type is absent: the model runs `kind`,
            # and the scaling's other keys are unread (transformers warns and ignores them)
            unread = sorted(k for k in params if k not in ("rope_type", "rope_theta", "type"))
            rope[layer_type] = {"rope_type": kind, "rope_theta": params["rope_theta"]}
            notes.append(
                f"not read by this family's code: rope_scaling's type {legacy!r} and "
                f"{', '.join(unread) or 'nothing else'} for the {layer_type} layers: ModernBERT's "
                f"config class updates its default RoPE dicts with rope_scaling, so their "
                f"rope_type stays {kind!r} and the model runs {kind!r} RoPE "
                "(configuration_modernbert.py: convert_rope_params_to_dict; 'type' is read only "
                "where rope_type is absent)"
            )
    out.pop("global_rope_theta", None)
    out.pop("local_rope_theta", None)
    out["rope_parameters"] = rope
    if notes:
        out[CLASS_NOTES] = tuple(notes)
    return out


def gemma4_config(config: Mapping[str, Any]) -> dict[str, Any]:
    """Gemma 4's class forces its last layer to full attention, even in given ``layer_types``.

    (configuration_gemma4.py: ``Gemma4TextConfig.__post_init__`` warns and sets
    ``layer_types[-1] = "full_attention"``.)
    """
    out = dict(config)
    types = out.get("layer_types")
    if isinstance(types, (list, tuple)) and types and types[-1] != "full_attention":
        out["layer_types"] = [*types[:-1], "full_attention"]
        out[CLASS_NOTES] = (
            f"layer_types ends in {shown(types[-1])}: Gemma 4's config class forces the last "
            "layer to full_attention (configuration_gemma4.py, __post_init__), and so does "
            "this reading",
        )
    return out


def step3p5_config(config: Mapping[str, Any]) -> dict[str, Any]:
    """Step 3.5's (and Step 3.7's text) config as its class stores it: a RoPE per layer type.

    ``Step3p7TextConfig.__post_init__`` (configuration_step3p7.py, transformers 5.23) cuts the
    multi-token-prediction layers' entries (``num_nextn_predict_layers``) off ``layer_types``,
    ``rope_theta`` and ``partial_rotary_factors`` where a list holds them, fills ``layer_types``
    with full attention, and, unless ``rope_parameters`` already holds a dict for every layer
    type present, builds one for each: the default RoPE with the ``rope_theta`` (a number, or
    one per layer: the type's first layer's) and ``partial_rotary_factors`` entry of the type's
    first layer, the full-attention one updated with ``rope_scaling``. What it does not read is
    noted: a flat ``rope_parameters``, and the top-level ``partial_rotary_factor`` (the rotary
    reads each type's own, default 1).
    """
    out = dict(config)
    count = layer_count(out) or 45  # the class's default
    mtp = bounded_int("num_nextn_predict_layers", out.get("num_nextn_predict_layers") or 0,
                      "step3p5", minimum=0, maximum=2**16)  # fmt: skip
    thetas = out.pop("rope_theta", 10_000.0)
    factors = out.pop("partial_rotary_factors", None)
    scaling = out.pop("rope_scaling", None)
    lists = {"layer_types": out.get("layer_types"), "rope_theta": thetas,
             "partial_rotary_factors": factors}  # fmt: skip
    if mtp:  # the padded lists lose their MTP layers' entries
        lists = {k: v[:count] if isinstance(v, list) and len(v) == count + mtp else v
                 for k, v in lists.items()}  # fmt: skip
    types = lists["layer_types"]
    if types is None:
        types = ["full_attention"] * count
    elif not isinstance(types, (list, tuple)) or not all(isinstance(t, str) for t in types):
        raise TypeError(f"layer_types must be a list of strings, got {shown(types)}")
    out["layer_types"] = list(types)
    notes: list[str] = []
    if "partial_rotary_factor" in out:
        notes.append(
            f"not read by this family's code: partial_rotary_factor = "
            f"{shown(out.pop('partial_rotary_factor'))} (Step3p7TextConfig gives each layer type "
            "its factor from partial_rotary_factors, default 1)"
        )
    rope = out.get("rope_parameters")
    present = dict.fromkeys(types)
    if isinstance(rope, Mapping) and all(isinstance(rope.get(t), Mapping) for t in present):
        out["rope_parameters"] = {t: dict(rope[t]) for t in present}
        unread = [k for k in ("rope_theta", "partial_rotary_factors", "rope_scaling")
                  if k in config]  # fmt: skip
        if unread:
            notes.append(
                f"not read by this family's code: {', '.join(unread)} (rope_parameters holds a "
                "dict for every layer type, which Step3p7TextConfig keeps as given)"
            )
    else:
        if rope is not None:
            notes.append(
                f"not read by this family's code: rope_parameters = {shown(rope)} (not one dict "
                "per layer type: Step3p7TextConfig builds them from rope_theta, "
                "partial_rotary_factors and rope_scaling)"
            )
        out["rope_parameters"] = step3p5_rope(list(types), lists, scaling)
    if notes:
        out[CLASS_NOTES] = tuple(notes)
    return out


def step3p5_rope(
    types: list[str], lists: Mapping[str, Any], scaling: object
) -> dict[str, dict[str, Any]]:
    """One default RoPE dict per layer type, from its first layer's base and partial factor."""
    out = {}
    for layer_type in dict.fromkeys(types):
        first = types.index(layer_type)
        params: dict[str, Any] = {"rope_type": "default"}
        for key, own in (("rope_theta", "rope_theta"),
                         ("partial_rotary_factors", "partial_rotary_factor")):  # fmt: skip
            value = lists[key]
            if isinstance(value, (list, tuple)):
                if len(value) <= first:
                    raise ValueError(
                        f"{key} lists {len(value)} entries, but layer {first} is the first of "
                        f"type {layer_type!r} and reads entry {first} (transformers fails too)"
                    )
                value = value[first]
            if value is not None:
                params[own] = real(f"{key} (layer {first})", value)
        out[layer_type] = params
    if scaling is not None and not isinstance(scaling, Mapping):
        raise TypeError(f"rope_scaling must be a dict or null, got {shown(scaling)}")
    if scaling and "full_attention" in out:
        out["full_attention"].update(scaling)
    return out


def ultrabert_config(config: Mapping[str, Any]) -> dict[str, Any]:
    """UltraBERT's config as its class stores it, older checkpoints' keys included.

    ``UltraBertConfig.__post_init__`` (configuration_ultrabert.py, transformers 5.23): where
    ``layer_types`` is absent, a layer is sliding-window attention where the older
    ``attention_windows`` gives it a window (else full attention), and without those every third
    layer is full attention; where ``rope_parameters`` is absent, the older per-layer
    ``rope_theta`` list gives each layer type a default RoPE dict, zipped with the layer types
    (a later layer of a type overwrites an earlier one's base).
    """
    out = dict(config)
    windows = out.pop("attention_windows", None)
    if out.get("layer_types") is None:
        if windows is not None:
            if not isinstance(windows, (list, tuple)):
                raise TypeError(f"attention_windows must be a list (one per layer), got "
                                f"{shown(windows)}")  # fmt: skip
            out["layer_types"] = ["sliding_attention" if w else "full_attention" for w in windows]
        else:
            count = layer_count(out) or 0
            out["layer_types"] = ["sliding_attention" if (i + 1) % 3 else "full_attention"
                                  for i in range(count)]  # fmt: skip
    theta = out.pop("rope_theta", None)
    if theta is None:
        return out
    if out.get("rope_parameters") is not None:
        out[CLASS_NOTES] = (
            f"not read by this family's code: rope_theta = {shown(theta)} (UltraBertConfig reads "
            "it only where rope_parameters is absent)",
        )
        return out
    if not isinstance(theta, (list, tuple)):
        raise TypeError(
            f"rope_theta must be a list of one base per layer for UltraBERT (its config class "
            f"zips it with layer_types; transformers fails on a number), got {shown(theta)}"
        )
    types = out["layer_types"]
    if not isinstance(types, (list, tuple)) or not all(isinstance(t, str) for t in types):
        raise TypeError(f"layer_types must be a list of strings, got {shown(types)}")
    rope: dict[str, Any] = {}
    for i, (kind, base) in enumerate(zip(types, theta, strict=False)):
        rope[kind] = {"rope_type": "default", "rope_theta": real(f"rope_theta[{i}]", base)}
    out["rope_parameters"] = rope
    return out
