r"""RoPE as released models use it: read a model's config, get its frequencies, widths and layout.

:func:`rope_spec` turns the contents of a model's ``config.json`` (a dict, or a transformers config
object when transformers is installed) into a :class:`RopeSpec`: head and rotary width, pair
layout, base, HF's ``rope_type``, the per-pair frequencies and the attention factor, the original
and extended context, and the M-RoPE sections. ``RotaryEmbedding.from_hf_config`` builds the
rotation module from the same spec. Both config forms in circulation are read:

- transformers >= 5: ``rope_parameters`` (``rope_type``, ``rope_theta``, ``factor``, ...), possibly
  one dict per layer type (Gemma 3: ``sliding_attention`` and ``full_attention``);
- older configs: ``rope_theta`` at the top level and ``rope_scaling`` with ``type`` or
  ``rope_type``, plus family-specific names (GPT-NeoX ``rotary_pct`` and ``rotary_emb_base``,
  Gemma 3 ``rope_local_base_freq``, Phi-3 ``"su"``, Qwen2-VL ``"mrope"``).

Which coordinates form a pair is not in any config: it is a property of the family's code. The
families posenc_ref knows (``FAMILIES``, keyed by ``model_type``) carry it, together with the
defaults their transformers config class fills in when a key is absent. For another family pass
``layout=`` yourself.

Nothing is ignored silently. A key inside the RoPE dict that the ``rope_type`` does not read, two
places that give different values for the same quantity, or widths that do not fit raise a
``ValueError`` naming the key; a RoPE key that posenc_ref knows but does not implement raises
``NotImplementedError`` saying so. Keys unrelated to RoPE (vocabulary size, layer count, ...) are
not looked at.

The released configs of the families on the site's model zoo ship with the package
(:func:`released_configs`). Explained on the site: [Model zoo](models.md).
"""

from __future__ import annotations

import copy
import inspect
import json
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from importlib import resources
from typing import Any

import torch

from ._checks import check_int, check_layout, check_positive_float
from .absolute import inv_freq as _inv_freq
from .rope_scaling import (
    SCALING_METHODS,
    ScaledFrequencies,
    yarn_mscale,
)

__all__ = [
    "RopeSpec",
    "rope_spec",
    "FAMILIES",
    "ROPE_TYPES",
    "released_configs",
    "released_config",
    "zoo_rows",
]


# --------------------------------------------------------------------------- families


@dataclass(frozen=True)
class _Family:
    """What a family's code decides and its configs do not say (transformers 5.23)."""

    layout: str = "half"
    # rope_theta when the config has none (the config class's default_theta)
    default_theta: float = 10000.0
    # partial_rotary_factor when the config has none (the config class's default)
    default_partial: float = 1.0
    # head_dim when the config has none and hidden_size / num_attention_heads is not used
    default_head_dim: int | None = None
    # where the rotary head width is read (DeepSeek-V3: the rope part of an MLA head)
    head_dim_key: str = "head_dim"
    # M-RoPE: None, "consecutive" or "interleaved", and the section the code falls back to
    mrope: str | None = None
    default_mrope_section: tuple[int, int, int] | None = None
    # legacy rope_type names the config class maps to current ones
    legacy_types: Mapping[str, str] = field(default_factory=dict)
    # top-level legacy keys only this family reads: name -> the quantity it gives
    legacy_keys: Mapping[str, str] = field(default_factory=dict)
    # order in which the rotated pair is written back (DeepSeek-V3: read interleaved, write half)
    output_layout: str | None = None
    per_layer_theta: Mapping[str, float] | None = None
    source: str = ""


_NEOX_KEYS = {"rotary_pct": "partial_rotary_factor", "rotary_emb_base": "rope_theta"}

FAMILIES: dict[str, _Family] = {
    "llama": _Family(source="modeling_llama.py: rotate_half"),
    "mistral": _Family(source="modeling_mistral.py: rotate_half"),
    "mixtral": _Family(default_theta=1e6, source="modeling_mixtral.py: rotate_half"),
    "qwen2": _Family(source="modeling_qwen2.py: rotate_half"),
    "qwen3": _Family(default_head_dim=128, source="modeling_qwen3.py: rotate_half"),
    "gemma3_text": _Family(
        default_head_dim=256,
        per_layer_theta={"full_attention": 1e6, "sliding_attention": 1e4},
        source="modeling_gemma3.py: rotate_half, one rotary table per layer type",
    ),
    "gpt_neox": _Family(
        default_partial=0.25,
        legacy_keys=_NEOX_KEYS,
        source="modeling_gpt_neox.py: rotate_half on the first rotary_dim coordinates",
    ),
    "phi": _Family(
        default_partial=0.5,
        source="modeling_phi.py: the attention splits off rotary_dim coordinates, rotate_half",
    ),
    "stablelm": _Family(
        default_partial=0.25,
        source="modeling_stablelm.py: the attention splits off rotary_dim coordinates",
    ),
    "glm": _Family(
        layout="interleaved",
        default_partial=0.5,
        default_head_dim=128,
        source="modeling_glm.py: interleaved pairs (repeat_interleave) in the rotary part",
    ),
    "glm4": _Family(
        layout="interleaved",
        default_partial=0.5,
        default_head_dim=128,
        source="modeling_glm4.py: interleaved pairs (repeat_interleave) in the rotary part",
    ),
    "phi3": _Family(
        legacy_types={"su": "longrope", "yarn": "longrope"},
        source="modeling_phi3.py: rotate_half on the first rotary_dim coordinates; "
        "configuration_phi3.py maps the old types 'su' and 'yarn' to 'longrope'",
    ),
    "qwen2_vl": _Family(
        default_theta=1e6,
        mrope="consecutive",
        default_mrope_section=(16, 24, 24),
        legacy_types={"mrope": "default"},
        source="modeling_qwen2_vl.py: consecutive mrope_section, rotate_half",
    ),
    "qwen2_5_vl": _Family(
        default_theta=1e6,
        mrope="consecutive",
        default_mrope_section=(16, 24, 24),
        legacy_types={"mrope": "default"},
        source="modeling_qwen2_5_vl.py: consecutive mrope_section, rotate_half",
    ),
    "qwen3_vl": _Family(
        default_theta=5e5,
        default_head_dim=128,
        mrope="interleaved",
        default_mrope_section=(24, 20, 20),
        source="modeling_qwen3_vl.py: interleaved mrope_section, rotate_half",
    ),
    "qwen3_5": _Family(
        default_head_dim=256,
        default_partial=0.25,
        mrope="interleaved",
        default_mrope_section=(11, 11, 10),
        source="modeling_qwen3_5.py: interleaved mrope_section on the rotary part",
    ),
    "qwen3_5_moe": _Family(
        default_head_dim=256,
        default_partial=0.25,
        mrope="interleaved",
        default_mrope_section=(11, 11, 10),
        source="modeling_qwen3_5_moe.py: interleaved mrope_section on the rotary part",
    ),
    "deepseek_v3": _Family(
        layout="interleaved",
        head_dim_key="qk_rope_head_dim",
        default_head_dim=64,
        output_layout="half",
        source="modeling_deepseek_v3.py: apply_rotary_pos_emb_interleave reads pairs "
        "(2i, 2i+1) and writes cat(first coordinates, second coordinates)",
    ),
    "gpt_oss": _Family(
        default_theta=150000.0,
        default_head_dim=64,
        source="modeling_gpt_oss.py: first half / second half of the head",
    ),
}
"""``model_type`` -> what the family's code fixes (pair layout, defaults, legacy names)."""

# Multimodal wrappers keep the language model's config under "text_config".
_TEXT_MODEL_TYPES = {
    "gemma3": "gemma3_text",
    "qwen2_vl_text": "qwen2_vl",
    "qwen2_5_vl_text": "qwen2_5_vl",
    "qwen3_vl_text": "qwen3_vl",
    "qwen3_5_text": "qwen3_5",
    "qwen3_5_moe_text": "qwen3_5_moe",
}

# rope_type -> keys of the RoPE dict it reads (besides rope_type/type, rope_theta and
# partial_rotary_factor, which every type reads).
ROPE_TYPES: dict[str, frozenset[str]] = {
    "default": frozenset(),
    "linear": frozenset({"factor"}),
    "dynamic": frozenset({"factor"}),
    "yarn": frozenset(
        {
            "factor",
            "original_max_position_embeddings",
            "attention_factor",
            "beta_fast",
            "beta_slow",
            "mscale",
            "mscale_all_dim",
            "truncate",
        }
    ),
    "longrope": frozenset(
        {
            "short_factor",
            "long_factor",
            "original_max_position_embeddings",
            "factor",
            "attention_factor",
        }
    ),
    "llama3": frozenset(
        {"factor", "low_freq_factor", "high_freq_factor", "original_max_position_embeddings"}
    ),
    "proportional": frozenset({"factor"}),
}
"""HF ``rope_type`` names posenc_ref implements -> the keys each one reads."""

_COMMON_KEYS = frozenset({"rope_type", "type", "rope_theta", "partial_rotary_factor"})
_MROPE_KEYS = frozenset({"mrope_section", "mrope_interleaved"})
_NOT_IMPLEMENTED_TYPES = {
    "axial": "2-D (axial) RoPE of vision encoders",
}
# RoPE-related top-level keys of families posenc_ref does not implement.
_NOT_IMPLEMENTED_KEYS = {
    "rope_ratio": "ChatGLM's base multiplier (custom code)",
    "use_dynamic_ntk": "Qwen (1.x) custom-code dynamic NTK",
    "use_logn_attn": "Qwen (1.x) custom-code log-n attention scaling",
    "rotary_dim": "GPT-J / CodeGen's absolute rotary width with rotate_every_two",
    "no_rope_layers": "layers without RoPE (SmolLM3, Llama 4)",
    "nope_layer_interval": "layers without RoPE (Llama 4)",
    "rope_scaling_type": "a custom-code scaling switch",
}
# Keys the reader consumes at the top level of a config.
_TOP_KEYS = frozenset(
    {
        "rope_theta",
        "rope_scaling",
        "rope_parameters",
        "partial_rotary_factor",
        "max_position_embeddings",
        "original_max_position_embeddings",
        "rope_local_base_freq",
        "rope_interleave",
    }
)


# --------------------------------------------------------------------------- the spec


@dataclass(frozen=True, eq=False)
class RopeSpec:
    r"""A model's RoPE, as its code computes it: widths, layout, frequencies, factors.

    Built by :func:`rope_spec`; explained on the site: [Model zoo](models.md).

    Attributes
    ----------
    head_dim : int
        Width of the query/key head the rotation is applied to. For DeepSeek-V3 (MLA) this is
        ``qk_rope_head_dim``, the part of the head that carries RoPE.
    rotary_dim : int
        Rotated coordinates: the first ``rotary_dim`` of each head; the rest pass through.
    layout : str
        Pair layout inside the rotary part: ``"interleaved"`` or ``"half"``.
    output_layout : str
        Order in which rotated pairs are written back; equal to ``layout`` except for
        DeepSeek-V3, which reads interleaved pairs and writes them in half order.
    base : float
        ``rope_theta``.
    rope_type : str
        HF's name: ``"default"``, ``"linear"``, ``"dynamic"``, ``"yarn"``, ``"longrope"``,
        ``"llama3"``, ``"proportional"``.
    inv_freq : torch.Tensor
        ``(rotary_dim // 2,)`` float64: the frequencies used inside the original context.
    attention_factor : float
        Multiplied into cos and sin.
    original_max_len : int or None
        Pre-training context as the config states it (``original_max_position_embeddings``;
        ``max_position_embeddings`` for ``default`` and ``dynamic``, which have no other);
        ``None`` where the config does not say (``linear`` without the field).
    max_len : int or None
        ``max_position_embeddings``.
    mrope_section : tuple of int or None
        M-RoPE pair counts (time, height, width), ``None`` for one position row.
    mrope_interleaved : bool
        Qwen3-VL's interleaved section assignment.
    factor : float or None
        The extension ratio :math:`s` of the scaling types (as given, or derived from
        ``max_position_embeddings / original_max_position_embeddings`` where HF derives it);
        ``None`` for ``default``.
    scaling : dict or None
        The :mod:`posenc_ref.rope_scaling` method and its arguments, in the form
        ``RotaryEmbedding(scaling=...)`` takes, e.g. ``{"method": "yarn", "factor": 4.0, ...}``:
        for ``linear``, ``dynamic``, ``yarn``, ``longrope`` and ``llama3``; ``None`` for
        ``default`` and ``proportional``.
    softmax_scale_factor : float
        A factor the model applies to its softmax scale outside RoPE (DeepSeek-V3:
        ``yarn_mscale(s, mscale_all_dim) ** 2``); 1.0 elsewhere. Not part of the rotation.
    model_type, layer_type : str or None
        Where the spec comes from.
    """

    head_dim: int
    rotary_dim: int
    layout: str
    base: float
    rope_type: str
    inv_freq: torch.Tensor
    attention_factor: float
    original_max_len: int | None
    max_len: int | None
    mrope_section: tuple[int, int, int] | None = None
    mrope_interleaved: bool = False
    output_layout: str | None = None
    factor: float | None = None
    scaling: dict[str, Any] | None = None
    softmax_scale_factor: float = 1.0
    model_type: str | None = None
    layer_type: str | None = None

    def __post_init__(self) -> None:
        if self.output_layout is None:
            object.__setattr__(self, "output_layout", self.layout)

    def frequencies(self, seq_len: int) -> ScaledFrequencies:
        """Frequencies and attention factor for a call whose largest position is ``seq_len - 1``.

        Differs from ``(inv_freq, attention_factor)`` only for the length-dependent types:
        ``dynamic`` (the NTK base grows past ``max_len``) and ``longrope`` (the long list past
        ``original_max_len``).

        Parameters
        ----------
        seq_len
            Current length (largest position + 1), ``>= 0``.

        Returns
        -------
        ScaledFrequencies
            ``inv_freq`` of shape ``(rotary_dim // 2,)``, float64, and the attention factor.
        """
        seq_len = check_int("seq_len", seq_len)
        if self.scaling is None:
            return ScaledFrequencies(self.inv_freq.clone(), self.attention_factor)
        params = dict(self.scaling)
        method = SCALING_METHODS[params.pop("method")]
        if "seq_len" in inspect.signature(method).parameters:  # length-dependent
            params["seq_len"] = seq_len
        return method(self.rotary_dim, self.base, **params)

    def __repr__(self) -> str:
        extra = ""
        if self.mrope_section is not None:
            kind = "interleaved" if self.mrope_interleaved else "consecutive"
            extra = f", mrope_section={self.mrope_section} ({kind})"
        if self.output_layout != self.layout:
            extra += f", output_layout={self.output_layout!r}"
        return (
            f"RopeSpec(model_type={self.model_type!r}, layer_type={self.layer_type!r}, "
            f"rope_type={self.rope_type!r}, head_dim={self.head_dim}, "
            f"rotary_dim={self.rotary_dim}, layout={self.layout!r}, base={self.base:g}, "
            f"attention_factor={self.attention_factor:.6g}, "
            f"original_max_len={self.original_max_len}, max_len={self.max_len}{extra})"
        )


# --------------------------------------------------------------------------- reading


def _as_dict(config: object) -> dict[str, Any]:
    if isinstance(config, Mapping):
        return copy.deepcopy(dict(config))
    to_dict = getattr(config, "to_dict", None)
    if callable(to_dict):  # a transformers PreTrainedConfig (never imported here)
        return copy.deepcopy(to_dict())
    raise TypeError(
        "config must be a dict (the contents of config.json) or a transformers config object, "
        f"got {type(config).__name__}"
    )


def _integer(name: str, value: object, minimum: int = 1) -> int:
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    return check_int(name, value, minimum=minimum)


def _same(name: str, first: object, second: object, where: tuple[str, str]) -> object:
    """Return the value given in one or both places; raise if both give different values."""
    if first is None:
        return second
    if second is not None and first != second:
        raise ValueError(
            f"inconsistent {name}: {where[0]} gives {first!r} but {where[1]} gives {second!r}"
        )
    return first


def _language_config(config: dict[str, Any]) -> tuple[dict[str, Any], str | None]:
    model_type = config.get("model_type")
    text = config.get("text_config")
    if not isinstance(text, Mapping):
        return config, model_type
    text = dict(text)
    for key in ("rope_theta", "rope_scaling", "rope_parameters"):
        if config.get(key) is not None and text.get(key) is not None:
            _same(key, text[key], config[key], ("text_config", "the top level"))
        elif config.get(key) is not None:
            text[key] = config[key]
    return text, text.get("model_type") or model_type


def _family_of(model_type: str | None, layout: str | None) -> tuple[_Family, str | None]:
    key = _TEXT_MODEL_TYPES.get(model_type, model_type) if model_type else None
    family = FAMILIES.get(key) if key else None
    if family is None:
        if layout is None:
            raise ValueError(
                f"model_type {model_type!r} is not a family posenc_ref knows "
                f"({', '.join(sorted(FAMILIES))}); the pair layout is fixed by the family's code, "
                f"not by its config, so pass layout= ('interleaved' or 'half')"
            )
        return _Family(layout=check_layout(layout)), key
    if layout is not None and check_layout(layout) != family.layout:
        raise ValueError(
            f"layout={layout!r} contradicts {key}'s code, which pairs coordinates "
            f"{family.layout!r} ({family.source})"
        )
    return family, key


def _is_nested(rope: Mapping[str, Any]) -> bool:
    known = _COMMON_KEYS | _MROPE_KEYS | frozenset().union(*ROPE_TYPES.values())
    return bool(rope) and all(
        key not in known and (value is None or isinstance(value, Mapping))
        for key, value in rope.items()
    )


def _rope_dict(
    config: dict[str, Any], family: _Family, model_type: str | None, layer_type: str | None
) -> tuple[dict[str, Any], str | None]:
    """The one RoPE dict that applies (with rope_theta filled in), and the layer type."""
    parameters = config.get("rope_parameters")
    scaling = config.get("rope_scaling")
    for name, value in (("rope_parameters", parameters), ("rope_scaling", scaling)):
        if value is not None and not isinstance(value, Mapping):
            raise TypeError(f"{name} must be a dict or null, got {value!r}")
    if parameters and scaling and dict(parameters) != dict(scaling):
        raise ValueError(
            f"inconsistent rope_parameters {dict(parameters)!r} and rope_scaling "
            f"{dict(scaling)!r}: give one (transformers >= 5 writes rope_parameters)"
        )
    rope = copy.deepcopy(dict(scaling or parameters or {}))
    top_theta = config.get("rope_theta")
    for legacy, meaning in family.legacy_keys.items():
        if config.get(legacy) is not None and meaning == "rope_theta":
            top_theta = _same("rope_theta", top_theta, config[legacy], ("rope_theta", legacy))

    if family.per_layer_theta is not None and not _is_nested(rope):
        # Gemma 3's older form: rope_theta and rope_scaling for full attention,
        # rope_local_base_freq for the sliding-window layers.
        full = dict(rope) if rope else {"rope_type": "default"}
        full.setdefault("rope_theta", top_theta)
        rope = {
            "full_attention": full,
            "sliding_attention": {
                "rope_type": "default",
                "rope_theta": config.get("rope_local_base_freq"),
            },
        }
        top_theta = None
    elif config.get("rope_local_base_freq") is not None:
        raise ValueError(
            f"rope_local_base_freq is read by Gemma 3's code only, not by {model_type!r}'s"
        )

    if _is_nested(rope):
        if layer_type is None:
            raise ValueError(
                f"this config has one RoPE per layer type ({', '.join(rope)}): pass layer_type="
            )
        if layer_type not in rope:
            raise ValueError(
                f"layer_type {layer_type!r} is not in the config's per-layer RoPE "
                f"({', '.join(rope)})"
            )
        chosen = rope[layer_type]
        if chosen is None:
            raise ValueError(f"layer type {layer_type!r} has no RoPE (its rope_parameters is null)")
        chosen = dict(chosen)
        if chosen.get("rope_theta") is None:
            if family.per_layer_theta is not None:
                default = family.per_layer_theta.get(layer_type, family.default_theta)
            else:
                default = family.default_theta
            chosen["rope_theta"] = top_theta if top_theta is not None else default
        elif top_theta is not None and family.per_layer_theta is None:
            _same(
                "rope_theta", chosen["rope_theta"], top_theta, ("rope_parameters", "the top level")
            )
        return chosen, layer_type

    if layer_type is not None:
        types = config.get("layer_types")
        if types is not None and layer_type not in types:
            raise ValueError(
                f"layer_type {layer_type!r} is not one of the config's layer_types "
                f"({', '.join(sorted(set(types)))})"
            )
    theta = _same(
        "rope_theta", rope.get("rope_theta"), top_theta, ("the RoPE dict", "the top level")
    )
    rope["rope_theta"] = family.default_theta if theta is None else theta
    return rope, layer_type


def _head_dim(config: dict[str, Any], family: _Family, model_type: str | None) -> int:
    value = config.get(family.head_dim_key)
    if value is not None:
        return _integer(family.head_dim_key, value)
    if family.head_dim_key == "head_dim":
        hidden, heads = config.get("hidden_size"), config.get("num_attention_heads")
        if hidden is not None and heads is not None:
            hidden = _integer("hidden_size", hidden)
            heads = _integer("num_attention_heads", heads)
            if family.default_head_dim is None:
                if hidden % heads:
                    raise ValueError(
                        f"hidden_size={hidden} is not a multiple of num_attention_heads={heads}; "
                        "give head_dim"
                    )
                return hidden // heads
    if family.default_head_dim is not None:
        return family.default_head_dim
    raise ValueError(
        f"the config gives no {family.head_dim_key!r} and no hidden_size / num_attention_heads "
        f"to derive it from (model_type {model_type!r})"
    )


def _partial(config: dict[str, Any], rope: dict[str, Any], family: _Family) -> float:
    value = rope.get("partial_rotary_factor")
    value = _same(
        "partial_rotary_factor",
        value,
        config.get("partial_rotary_factor"),
        ("the RoPE dict", "the top level"),
    )
    for legacy, meaning in family.legacy_keys.items():
        if meaning == "partial_rotary_factor" and config.get(legacy) is not None:
            value = _same(
                "partial_rotary_factor", value, config[legacy], ("partial_rotary_factor", legacy)
            )
    if value is None:
        return family.default_partial
    value = check_positive_float("partial_rotary_factor", value)
    if value > 1:
        raise ValueError(f"partial_rotary_factor must be in (0, 1], got {value!r}")
    return value


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
    their ``text_config``. Absent keys take the value the family's transformers config class
    would (``FAMILIES``); HF's own rules are followed where a config leaves something implicit:
    the rotary width is ``int(head_dim * partial_rotary_factor)``; ``yarn`` and ``longrope``
    derive ``factor`` from ``max_position_embeddings / original_max_position_embeddings`` when
    it is absent; ``yarn``'s attention factor is the explicit ``attention_factor``, else
    ``g(s, mscale) / g(s, mscale_all_dim)`` when both are given, else ``0.1 ln s + 1``;
    ``dynamic`` uses ``max_position_embeddings`` as its original length.

    Parameters
    ----------
    config
        The model's configuration.
    layer_type
        For configs with one RoPE per layer type (Gemma 3: ``"sliding_attention"``,
        ``"full_attention"``): which one. Optional otherwise.
    layout
        Pair layout for a ``model_type`` not in ``FAMILIES``; for a known family it must agree
        with the family's code (or be left out).

    Returns
    -------
    RopeSpec

    Raises
    ------
    ValueError
        Unknown keys in the RoPE dict, inconsistent values (naming the key), widths that do not
        fit, an unknown family without ``layout``.
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
    config = _as_dict(config)
    config, model_type = _language_config(config)
    for key, what in _NOT_IMPLEMENTED_KEYS.items():
        if config.get(key) not in (None, False):
            raise NotImplementedError(f"{key} ({what}) is not implemented by posenc_ref")
    family, model_type = _family_of(model_type, layout)
    for legacy in ("rotary_pct", "rotary_emb_base"):
        if config.get(legacy) is not None and legacy not in family.legacy_keys:
            raise ValueError(
                f"{legacy} is read by GPT-NeoX's config class only, not by {model_type!r}'s; "
                f"use {_NEOX_KEYS[legacy]}"
            )
    if config.get("rope_interleave") is not None and model_type != "deepseek_v3":
        raise ValueError(
            f"rope_interleave is read by DeepSeek-V3's code only, not {model_type!r}'s"
        )

    rope, layer_type = _rope_dict(config, family, model_type, layer_type)

    # Older configs say "type", newer "rope_type"; a transformers object may carry both (the old
    # name next to the converted one), which is consistent when they mean the same type.
    names = [rope.get("rope_type"), rope.get("type")]
    given = [family.legacy_types.get(n, n) for n in names if n is not None]
    if len(given) == 2 and given[0] != given[1]:
        raise ValueError(
            f"inconsistent rope_type {names[0]!r} and type {names[1]!r} (they mean "
            f"{given[0]!r} and {given[1]!r})"
        )
    rope_type = given[0] if given else "default"
    if rope_type in _NOT_IMPLEMENTED_TYPES:
        raise NotImplementedError(
            f"rope_type {rope_type!r} ({_NOT_IMPLEMENTED_TYPES[rope_type]}) is not implemented"
        )
    if rope_type not in ROPE_TYPES:
        raise ValueError(f"unknown rope_type {rope_type!r}; known: {', '.join(ROPE_TYPES)}")
    allowed = _COMMON_KEYS | ROPE_TYPES[rope_type] | (_MROPE_KEYS if family.mrope else frozenset())
    unknown = sorted(set(rope) - allowed)
    if unknown:
        mrope_hint = ""
        if set(unknown) & _MROPE_KEYS:
            mrope_hint = f" ({model_type!r}'s code has no M-RoPE)"
        raise ValueError(
            f"RoPE key(s) {unknown} are not read by rope_type {rope_type!r}{mrope_hint}; it reads "
            f"{sorted(allowed - {'type'})}"
        )

    base = check_positive_float("rope_theta", rope["rope_theta"])
    if base <= 1:
        raise ValueError(f"rope_theta must be > 1, got {base!r}")
    head_dim = _head_dim(config, family, model_type)
    partial = _partial(config, rope, family)
    max_len = config.get("max_position_embeddings")
    max_len = None if max_len is None else _integer("max_position_embeddings", max_len)
    original = _same(
        "original_max_position_embeddings",
        rope.get("original_max_position_embeddings"),
        config.get("original_max_position_embeddings"),
        ("the RoPE dict", "the top level"),
    )
    original = None if original is None else _integer("original_max_position_embeddings", original)

    if rope_type == "proportional":
        # Gemma 4's global layers: the first pairs rotate with frequencies computed for the full
        # head width, the others have frequency 0 (they are left as they are); the table covers
        # the whole head.
        rotary_dim = head_dim
    else:
        rotary_dim = int(head_dim * partial)
        if rotary_dim < 2 or rotary_dim % 2:
            raise ValueError(
                f"partial_rotary_factor={partial!r} gives rotary_dim=int({head_dim} * {partial}) "
                f"= {rotary_dim}, which must be even and >= 2"
            )

    output_layout = family.output_layout
    layout_used = family.layout
    if model_type == "deepseek_v3":
        interleave = config.get("rope_interleave", True)
        if not isinstance(interleave, bool):
            raise TypeError(f"rope_interleave must be true or false, got {interleave!r}")
        layout_used = "interleaved" if interleave else "half"

    factor = None
    if rope_type in ("linear", "dynamic", "llama3"):
        factor = check_positive_float("factor", _required(rope, "factor", rope_type))
    elif rope_type == "proportional":
        factor = check_positive_float("factor", rope.get("factor", 1.0))
    elif rope_type in ("yarn", "longrope"):
        factor = _factor_or_ratio(rope, max_len, original or max_len, rope_type)
    freqs, scaling, softmax_scale, original_len = _frequencies(
        rope_type, rope, rotary_dim, head_dim, base, partial, max_len, original
    )
    if model_type == "deepseek_v3" and rope_type == "yarn" and rope.get("mscale_all_dim"):
        # DeepSeek-V3's attention multiplies its softmax scale by g(s, mscale_all_dim)^2
        # (outside RoPE, so not in the tables).
        s = _factor_or_ratio(rope, max_len, original_len, "yarn")
        softmax_scale = (
            yarn_mscale(s, check_positive_float("mscale_all_dim", rope["mscale_all_dim"])) ** 2
        )

    section, interleaved = None, False
    if family.mrope is not None:
        raw = rope.get("mrope_section", family.default_mrope_section)
        if isinstance(raw, (str, bytes)) or not hasattr(raw, "__len__") or len(raw) != 3:
            raise ValueError(f"mrope_section must be three pair counts, got {raw!r}")
        section = tuple(_integer(f"mrope_section[{j}]", n, 0) for j, n in enumerate(raw))
        if sum(section) != rotary_dim // 2:
            raise ValueError(
                f"mrope_section {list(section)} sums to {sum(section)} pairs but the rotary part "
                f"has rotary_dim // 2 = {rotary_dim // 2}"
            )
        interleaved = family.mrope == "interleaved"
        flag = rope.get("mrope_interleaved")
        if flag is not None and bool(flag) != interleaved:
            raise ValueError(
                f"mrope_interleaved={flag!r} contradicts {model_type}'s code, which assigns "
                f"sections {family.mrope!r}"
            )

    return RopeSpec(
        head_dim=head_dim,
        rotary_dim=rotary_dim,
        layout=layout_used,
        base=base,
        rope_type=rope_type,
        inv_freq=freqs.inv_freq,
        attention_factor=float(freqs.attention_factor),
        original_max_len=original_len,
        max_len=max_len,
        mrope_section=section,
        mrope_interleaved=interleaved,
        output_layout=output_layout or layout_used,
        factor=factor,
        scaling=scaling,
        softmax_scale_factor=softmax_scale,
        model_type=model_type,
        layer_type=layer_type,
    )


def _factor_or_ratio(
    rope: Mapping[str, Any], max_len: int | None, original: int | None, rope_type: str
) -> float:
    factor = rope.get("factor")
    if factor is not None:
        return check_positive_float("factor", factor)
    if max_len is None or original is None:
        raise ValueError(
            f"rope_type {rope_type!r} needs factor, or max_position_embeddings and "
            "original_max_position_embeddings to derive it"
        )
    return max_len / original


def _required(rope: Mapping[str, Any], key: str, rope_type: str) -> Any:
    if rope.get(key) is None:
        raise ValueError(f"rope_type {rope_type!r} needs the key {key!r}")
    return rope[key]


def _frequencies(
    rope_type: str,
    rope: Mapping[str, Any],
    rotary_dim: int,
    head_dim: int,
    base: float,
    partial: float,
    max_len: int | None,
    original: int | None,
) -> tuple[ScaledFrequencies, dict[str, Any] | None, float, int | None]:
    """(frequencies inside the original context, the scaling dict, softmax factor, L)."""
    if rope_type == "default":
        return ScaledFrequencies(_inv_freq(rotary_dim, base), 1.0), None, 1.0, original or max_len
    if rope_type == "linear":
        scaling = {
            "method": "linear",
            "factor": check_positive_float("factor", _required(rope, "factor", rope_type)),
        }
        return _scaled(scaling, rotary_dim, base), scaling, 1.0, original
    if rope_type == "proportional":
        factor = check_positive_float("factor", rope.get("factor", 1.0))
        angles = int(partial * head_dim // 2)  # pairs that rotate, as HF counts them
        omega = torch.zeros(head_dim // 2, dtype=torch.float64)
        omega[:angles] = _inv_freq(head_dim, base)[:angles]
        if factor < 1:
            raise ValueError(f"factor must be >= 1, got {factor!r}")
        return ScaledFrequencies(omega / factor, 1.0), None, 1.0, original
    if rope_type == "dynamic":
        factor = check_positive_float("factor", _required(rope, "factor", rope_type))
        if max_len is None:
            raise ValueError("rope_type 'dynamic' needs max_position_embeddings (its L)")
        scaling = {"method": "dynamic_ntk", "factor": factor, "original_max_len": max_len}
        return _scaled(scaling, rotary_dim, base), scaling, 1.0, max_len
    # The types that have an original length default it to max_position_embeddings (HF).
    if original is None:
        original = max_len
    if original is None:
        raise ValueError(
            f"rope_type {rope_type!r} needs original_max_position_embeddings "
            "(or max_position_embeddings)"
        )
    if rope_type == "llama3":
        scaling = {"method": "llama3", "original_max_len": original}
        for key in ("factor", "low_freq_factor", "high_freq_factor"):
            scaling[key] = check_positive_float(key, _required(rope, key, rope_type))
        return _scaled(scaling, rotary_dim, base), scaling, 1.0, original
    if rope_type == "yarn":
        factor = _factor_or_ratio(rope, max_len, original, rope_type)
        if rope.get("factor") is not None and max_len is not None:
            implied = max_len / original
            if implied not in (1.0, factor):
                raise ValueError(
                    f"inconsistent factor: rope factor {factor!r} but max_position_embeddings / "
                    f"original_max_position_embeddings = {max_len} / {original} = {implied!r}"
                )
        attention = rope.get("attention_factor")
        mscale, mscale_all = rope.get("mscale"), rope.get("mscale_all_dim")
        if attention is None and mscale and mscale_all:
            attention = yarn_mscale(factor, check_positive_float("mscale", mscale)) / yarn_mscale(
                factor, check_positive_float("mscale_all_dim", mscale_all)
            )
        truncate = rope.get("truncate", True)
        if not isinstance(truncate, bool):
            raise TypeError(f"truncate must be true or false, got {truncate!r}")
        scaling = {
            "method": "yarn",
            "factor": factor,
            "original_max_len": original,
            # HF: a missing or zero beta means the paper's value
            "beta_fast": check_positive_float("beta_fast", rope.get("beta_fast") or 32.0),
            "beta_slow": check_positive_float("beta_slow", rope.get("beta_slow") or 1.0),
            "truncate": truncate,
        }
        if attention is not None:
            scaling["attention_factor"] = check_positive_float("attention_factor", attention)
        return _scaled(scaling, rotary_dim, base), scaling, 1.0, original
    # longrope
    short = _required(rope, "short_factor", rope_type)
    long = _required(rope, "long_factor", rope_type)
    scaling = {
        "method": "longrope",
        "short_factor": [float(v) for v in _factor_list("short_factor", short, rotary_dim)],
        "long_factor": [float(v) for v in _factor_list("long_factor", long, rotary_dim)],
        "original_max_len": original,
        "factor": _factor_or_ratio(rope, max_len, original, rope_type),
    }
    if rope.get("attention_factor") is not None:
        scaling["attention_factor"] = check_positive_float(
            "attention_factor", rope["attention_factor"]
        )
    return _scaled(scaling, rotary_dim, base), scaling, 1.0, original


def _scaled(scaling: Mapping[str, Any], rotary_dim: int, base: float) -> ScaledFrequencies:
    """The frequencies of a scaling dict inside the original context (seq_len 0 where asked)."""
    params = dict(scaling)
    method = SCALING_METHODS[params.pop("method")]
    if "seq_len" in inspect.signature(method).parameters:
        params["seq_len"] = 0
    return method(rotary_dim, base, **params)


def _factor_list(name: str, values: object, rotary_dim: int) -> list[float]:
    if isinstance(values, (str, bytes)) or not isinstance(values, (list, tuple)):
        raise TypeError(f"{name} must be a list of numbers, got {values!r}")
    if len(values) != rotary_dim // 2:
        raise ValueError(
            f"{name} has {len(values)} entries but the rotary part has rotary_dim // 2 = "
            f"{rotary_dim // 2} pairs"
        )
    return [check_positive_float(f"{name}[{i}]", v) for i, v in enumerate(values)]


# --------------------------------------------------------------------------- released configs


def released_configs() -> list[dict[str, Any]]:
    """The released RoPE configs of the model zoo, from the data file shipped with the package.

    Each entry has ``name`` (the family), ``model`` (the Hugging Face repository the config comes
    from), ``source`` (where the numbers were read), ``config`` (the RoPE-relevant keys of the
    model's ``config.json``, in the form it was released in) and ``layer_types`` (the layer types
    to read, for configs with one RoPE per layer type; else absent).

    Returns
    -------
    list of dict
        A fresh copy on each call.
    """
    text = resources.files("posenc_ref").joinpath("released_rope_configs.json").read_text()
    return json.loads(text)["models"]


def zoo_rows() -> list[dict[str, Any]]:
    r"""One row per released family (and per layer type), computed through :func:`rope_spec`.

    The model zoo's table: HF ``rope_type``, base, head and rotary width, pair layout, original
    and extended context, attention factor, and how many pairs complete at least one full turn
    inside the original context (:math:`L\,\omega_i / 2\pi \ge 1`, with the frequencies used
    there). The extended context is ``max_position_embeddings``, or :math:`s L` where a YaRN
    config extends past it (Qwen2.5's recommended block).

    Returns
    -------
    list of dict
        Keys ``name``, ``model``, ``layer_type``, ``spec`` (the :class:`RopeSpec`),
        ``original`` and ``extended`` (int or None), ``full_turns`` (int or None: ``None`` when
        the config does not state the original context).
    """
    rows = []
    for entry in released_configs():
        for layer_type in entry.get("layer_types", [None]):
            spec = rope_spec(entry["config"], layer_type=layer_type)
            original = spec.original_max_len
            extended = spec.max_len
            if spec.rope_type == "yarn" and original is not None and spec.factor is not None:
                extended = max(extended or 0, round(spec.factor * original))
            turns = None
            if original is not None:
                turns = int((original * spec.inv_freq / (2 * math.pi) >= 1).sum())
            rows.append(
                {
                    "name": entry["name"],
                    "model": entry["model"],
                    "layer_type": layer_type,
                    "spec": spec,
                    "original": original,
                    "extended": extended,
                    "full_turns": turns,
                }
            )
    return rows


def released_config(name: str) -> dict[str, Any]:
    """The config dict of one released family by its ``name`` in :func:`released_configs`.

    Parameters
    ----------
    name
        For example ``"Phi-4-mini"``.

    Returns
    -------
    dict
    """
    entries = released_configs()
    for entry in entries:
        if entry["name"] == name:
            return entry["config"]
    raise ValueError(f"no released config named {name!r}; known: {[e['name'] for e in entries]}")
