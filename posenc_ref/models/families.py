r"""The family table: what a family's code decides and its config does not say.

One row per text rotary family of transformers 5.23 (``model_type`` of the language model). A
row holds the config class's defaults (the values transformers fills in when a ``config.json``
leaves a key out) and the family's *exceptions* to transformers' conventions: a pair layout
other than ``rotate_half``, a rotary width read from a family key, layers without RoPE, a query
scaling, M-RoPE sections. A family that follows the conventions has a row of defaults only.

Every row is proven by running the family's own code (tests/test_models_hf.py, and the sweep over
every family): never assumed from a convention. To add a family, add its row here; to add a RoPE
type, add an entry to :data:`~posenc_ref.models.ROPE_TYPES`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from functools import cache
from typing import Any

from .spec import QueryScale, _check_query_scale

__all__ = ["Family", "FAMILIES", "NO_ROPE", "TEXT_MODEL_TYPES", "family_keys", "keys_read_by"]


def _absolute(value: float, head_dim: int) -> float:  # noqa: ARG001 (the legacy-key signature)
    return value


def _fraction_of_head(value: float, head_dim: int) -> float:
    return value / head_dim


@dataclass(frozen=True)
class Legacy:
    """A top-level key only this family reads, and the quantity it gives."""

    quantity: str  # "rope_theta", "partial_rotary_factor" or "rotary_dim" (an absolute width)
    convert: Callable[[float, int], float] | None = None  # (value, head_dim) -> quantity
    meaning: str = ""

    def __iter__(self):  # unpacks as (quantity, convert, meaning)
        return iter((self.quantity, self.convert, self.meaning))


@dataclass(frozen=True)
class Family:
    """One family's row: its config class's defaults and its exceptions to the conventions.

    Attributes
    ----------
    layout : str
        Which coordinates pair: ``"half"`` (``rotate_half``: i and i + d/2) or
        ``"interleaved"`` (2i and 2i + 1).
    theta : float or dict
        ``rope_theta`` when the config has none (the config class's ``default_theta``); a dict
        by layer type where the class has one per type.
    head_dim : int or None
        The config class's ``head_dim`` when the key is absent (``None``: hidden / heads).
    partial : float
        ``partial_rotary_factor`` when the config has none.
    rope : dict or None
        The RoPE dict (or one per layer type) the config class fills in when the config has
        neither ``rope_parameters`` nor ``rope_scaling`` (``rope_theta`` apart).
    defaults : dict
        Other keys the config class fills in when absent (MLA: ``qk_rope_head_dim``, ...).
    aliases : dict
        The config class's ``attribute_map``: a standard key -> the family's name for it
        (DBRX: ``hidden_size`` is ``d_model``); a dotted name reaches into a sub-dict.
    output_layout : str or None
        The order the rotated pairs are written back in, when it is not ``layout``.
    layout_key : str or None
        A config flag that switches the layout: true reads interleaved pairs and writes them in
        half order, false is plain ``rotate_half`` (the MLA families' ``rope_interleave``; its
        default true).
    head_dim_key : str
        The key of the width handed to RoPE (MLA: ``qk_rope_head_dim``).
    layer_head_dims : dict
        Layer type -> (the key of that type's head width, its default): Gemma 4's full-attention
        layers read ``global_head_dim`` (default 512), written by transformers 5.23 as a
        ``per_layer_config`` override of ``head_dim``.
    nope_dim_key : str or None
        MLA: the key of the width of the head part without position (``qk_nope_head_dim``).
    legacy_keys : dict
        Top-level keys only this family reads -> :class:`Legacy`.
    legacy_types : dict
        Old ``rope_type`` names the config class maps to current ones.
    rope_keys : frozenset
        Keys of the RoPE dict the family reads besides its type's (``llama_4_scaling_beta``).
    fixed_theta : float or None
        The base the code fixes (GPT-J, CodeGen); ``rope_theta`` is then refused.
    mrope : str or None
        M-RoPE: ``"consecutive"`` or ``"interleaved"`` section assignment; ``mrope_section``
        its default sections.
    local_base_key : str or None
        Gemma 3's older form: the top-level key of the sliding layers' base.
    rope_layers : callable or None
        ``(config, num_hidden_layers) -> list of bool``: which layers rotate (the others have no
        RoPE); ``None``: every layer of a RoPE layer type.
    layer_types : callable or None
        ``(config, num_hidden_layers) -> list of str``: the config class's ``layer_types`` when
        the config has none (a pattern of sliding and full layers).
    partial_of : tuple of str or None
        MLA: the keys whose sum the partial factor multiplies in the family's rotary module
        (``qk_rope_head_dim``; Mistral 4: ``qk_nope_head_dim`` + ``qk_rope_head_dim``); the
        product must be the rope part's width.
    ignored : dict
        Keys the config class carries but the code never reads -> why that is harmless.
    conflicts : dict
        A (dotted) key the code never reads but a released config uses -> (the quantity it
        looks like, why): refused where it differs from what the code does use.
    no_rope_when : callable or None
        ``config -> reason or None``: a config under which the family's model uses no RoPE at
        all (Falcon with ``alibi``).
    query_scale, nope_query_scale : callable or None
        ``(config[, rope dict]) -> QueryScale``: the query scaling of the rotating layers, of
        the layers without RoPE.
    softmax_mscale : bool
        The attention multiplies its softmax scale by ``g(s, mscale_all_dim)**2`` (MLA).
    reads : frozenset
        Other top-level keys the family's code reads (for the refusal of keys it does not).
    source : str
        Where in the family's code this is decided.
    """

    layout: str = "half"
    theta: float | Mapping[str, float] = 10000.0
    head_dim: int | None = None
    partial: float = 1.0
    rope: Mapping[str, Any] | None = None
    aliases: Mapping[str, str] = field(default_factory=dict)
    defaults: Mapping[str, Any] = field(default_factory=dict)
    output_layout: str | None = None
    layout_key: str | None = None
    head_dim_key: str = "head_dim"
    layer_head_dims: Mapping[str, tuple[str, int]] = field(default_factory=dict)
    nope_dim_key: str | None = None
    legacy_keys: Mapping[str, Legacy] = field(default_factory=dict)
    legacy_types: Mapping[str, str] = field(default_factory=dict)
    rope_keys: frozenset[str] = frozenset()
    fixed_theta: float | None = None
    mrope: str | None = None
    mrope_section: tuple[int, int, int] | None = None
    local_base_key: str | None = None
    rope_layers: Callable[[Mapping[str, Any], int | None], list[bool]] | None = None
    layer_types: Callable[[Mapping[str, Any], int | None], list[str]] | None = None
    partial_of: tuple[str, ...] | None = None
    ignored: Mapping[str, str] = field(default_factory=dict)
    conflicts: Mapping[str, tuple[str, str]] = field(default_factory=dict)
    no_rope_when: Callable[[Mapping[str, Any]], str | None] | None = None
    query_scale: Callable[[Mapping[str, Any], Mapping[str, Any]], QueryScale | None] | None = None
    nope_query_scale: Callable[[Mapping[str, Any]], QueryScale | None] | None = None
    softmax_mscale: bool = False
    reads: frozenset[str] = frozenset()
    source: str = ""

    # -- what the reader asks a row

    @property
    def default_partial(self) -> float:
        """``partial_rotary_factor`` when the config gives none."""
        return self.partial

    @property
    def default_mrope_section(self) -> tuple[int, int, int] | None:
        """``mrope_section`` when the config gives none."""
        return self.mrope_section

    @property
    def per_layer_theta(self) -> Mapping[str, float] | None:
        """Gemma 3's older form (a top-level base per layer type), else None."""
        return self.theta if self.local_base_key and isinstance(self.theta, Mapping) else None

    def theta_default(self, layer_type: str | None) -> float:
        """``rope_theta`` when the config gives none (for one layer type)."""
        if isinstance(self.theta, Mapping):
            if layer_type in self.theta:
                return self.theta[layer_type]
            return self.theta.get("full_attention", 10000.0)
        return self.theta

    def resolve(self, config: Mapping[str, Any]) -> dict[str, Any]:
        """The config with the family's names mapped to the standard ones and defaults filled."""
        out = dict(config)
        for key, value in self.defaults.items():
            out.setdefault(key, value)
        for standard, own in self.aliases.items():
            value = _lookup(out, own)
            if value is not None:
                given = out.get(standard)
                if given is not None and given != value:
                    raise ValueError(
                        f"inconsistent {standard}: the config gives {given!r} and {own} gives "
                        f"{value!r} (the family's name for it)"
                    )
                out[standard] = value
        if out.get("layer_types") is None and self.layer_types is not None:
            count = out.get("num_hidden_layers")
            if isinstance(count, int) and not isinstance(count, bool) and count >= 1:
                out["layer_types"] = self.layer_types(out, count)
        if (
            "head_dim" not in config
            and self.head_dim is not None
            and self.head_dim_key == "head_dim"
        ):
            out["head_dim"] = self.head_dim
        if self.rope is not None and config.get("rope_parameters") is None and config.get(
            "rope_scaling"
        ) is None:  # fmt: skip
            out["rope_parameters"] = {k: (dict(v) if isinstance(v, Mapping) else v)
                                      for k, v in self.rope.items()}  # fmt: skip
        return out


def _lookup(config: Mapping[str, Any], path: str) -> Any:
    value: Any = config
    for part in path.split("."):
        if not isinstance(value, Mapping):
            return None
        value = value.get(part)
    return value


# --------------------------------------------------------------------------- the rules rows use


def _no_rope_layers(config: Mapping[str, Any], count: int | None) -> list[bool]:
    """SmolLM3, Llama 4: ``no_rope_layers[i]`` is 1 where layer i *uses* RoPE (the name misleads).

    Absent, the config class builds it: every ``no_rope_layer_interval``-th layer (default 4)
    has no RoPE.
    """
    listed = config.get("no_rope_layers")
    if listed is None:
        interval = config.get("no_rope_layer_interval", 4)
        if not isinstance(interval, int) or isinstance(interval, bool) or interval < 1:
            raise ValueError(f"no_rope_layer_interval must be an integer >= 1, got {interval!r}")
        if count is None:
            raise ValueError(
                "no_rope_layers is absent and there is no num_hidden_layers to build it"
            )
        return [(i + 1) % interval != 0 for i in range(count)]
    if not isinstance(listed, (list, tuple)) or not all(v in (0, 1) for v in listed):
        raise ValueError(
            f"no_rope_layers must be a list of 0 and 1 (1: the layer uses RoPE), got {listed!r}"
        )
    return [bool(v) for v in listed]


def _layer_types(config: Mapping[str, Any]) -> list[str]:
    types = config.get("layer_types")
    if types is None:
        raise ValueError(
            "this family's layers rotate or not by layer type, and the config has no layer_types "
            "(nor a pattern posenc_ref derives them from): give layer_types"
        )
    if not isinstance(types, (list, tuple)) or not all(isinstance(t, str) for t in types):
        raise TypeError(f"layer_types must be a list of strings, got {types!r}")
    return list(types)


def _sliding_layers_only(config: Mapping[str, Any], count: int | None) -> list[bool]:
    """Flint, AFMoE: only the sliding-window layers rotate, the global ones have no RoPE."""
    return [t == "sliding_attention" for t in _layer_types(config)]


def _sliding_layers_if_any(config: Mapping[str, Any], count: int | None) -> list[bool]:
    """EXAONE 4, Kolibri: all layers rotate without a sliding window; with one, only those."""
    types = _layer_types(config)
    if config.get("sliding_window") is None:
        return [True] * len(types)
    return [t == "sliding_attention" for t in types]


def _rotate_types(*names: str) -> Callable[[Mapping[str, Any], int | None], list[bool]]:
    """Only the layers of these layer types rotate (hybrids: linear-attention layers take none)."""

    def rule(config: Mapping[str, Any], count: int | None) -> list[bool]:
        return [t in names for t in _layer_types(config)]

    rule.__doc__ = f"Only the {', '.join(names)} layers rotate."
    return rule


def _cohere2_layers(config: Mapping[str, Any], count: int | None) -> list[bool]:
    """Cohere 2: the sliding-window layers rotate (none when sliding_window is null)."""
    types = _layer_types(config)
    if config.get("sliding_window") is None:
        return [False] * len(types)
    return [t == "sliding_attention" for t in types]


def _pattern_types(
    key: str, default: int, other: str = "sliding_attention"
) -> Callable[[Mapping[str, Any], int | None], list[str]]:
    """``layer_types`` from a pattern: every ``key``-th layer full attention, else ``other``."""

    def rule(config: Mapping[str, Any], count: int | None) -> list[str]:
        every = config.get(key, default)
        if isinstance(every, str):  # EXAONE 4 writes it as "LLLG"
            every = len(every)
        if not isinstance(every, int) or isinstance(every, bool) or every < 1:
            raise ValueError(f"{key} must be an integer >= 1, got {every!r}")
        return [other if (i + 1) % every else "full_attention" for i in range(count or 0)]

    return rule


def _no_rope_types(rope_type: str, nope_type: str):
    """Llama 4: a layer's type follows from no_rope_layers (chunked attention where it rotates)."""

    def rule(config: Mapping[str, Any], count: int | None) -> list[str]:
        return [rope_type if r else nope_type for r in _no_rope_layers(config, count)]

    return rule


def _llama_4_scaling(config: Mapping[str, Any], rope: Mapping[str, Any]) -> QueryScale | None:
    """Ministral 3, Mistral 4: ``q *= 1 + beta ln(1 + floor(t / L))``, L the original context."""
    beta = rope.get("llama_4_scaling_beta")
    if beta is None:
        return None
    length = rope.get("original_max_position_embeddings")
    if length is None:
        raise ValueError("llama_4_scaling_beta needs original_max_position_embeddings (its length)")
    return _check_query_scale(
        beta, length, 0, "llama_4_scaling_beta, original_max_position_embeddings"
    )


def _llama4_temperature(config: Mapping[str, Any]) -> QueryScale | None:
    """Llama 4's NoPE layers: ``q *= 1 + attn_scale ln(1 + floor((t + 1) / floor_scale))``."""
    if not config.get("attn_temperature_tuning", True):
        return None
    return _check_query_scale(
        config.get("attn_scale", 0.1), config.get("floor_scale", 8192), 1, "attn_scale, floor_scale"
    )


# --------------------------------------------------------------------------- rows


def _types(**types: tuple[float, float | None] | None) -> dict[str, Any]:
    """Default RoPE per layer type: ``layer_type=(rope_theta, partial_rotary_factor)`` or None."""
    out: dict[str, Any] = {}
    for name, value in types.items():
        if value is None:
            out[name] = None
            continue
        theta, partial = value
        out[name] = {"rope_type": "default", "rope_theta": theta}
        if partial is not None:
            out[name]["partial_rotary_factor"] = partial
    return out


# MLA (multi-head latent attention, DeepSeek-V2 and its descendants): each query/key head is
# cat(nope part, rope part); only the rope part (qk_rope_head_dim wide, last) is rotated, and the
# attention multiplies its softmax scale by g(s, mscale_all_dim)^2 under YaRN.
_MLA: dict[str, Any] = dict(
    head_dim_key="qk_rope_head_dim",
    nope_dim_key="qk_nope_head_dim",
    partial_of=("qk_rope_head_dim",),
    softmax_mscale=True,
    defaults={"qk_rope_head_dim": 64, "qk_nope_head_dim": 128},
)
# apply_rotary_pos_emb_interleave: pairs (2i, 2i+1) of the rope part, written back in half order
_MLA_INTERLEAVE = dict(_MLA, layout="interleaved", output_layout="half")
# the same, switched by the config's rope_interleave (default true; false: rotate_half)
_MLA_FLAG = dict(_MLA_INTERLEAVE, layout_key="rope_interleave")
_MLA_SOURCE = (
    "modeling_{}.py: the attention splits each head into (qk_nope_head_dim, qk_rope_head_dim), "
    "rotates the rope part with {} and writes it last"
)


def _mla(name: str, how: str, **row: Any) -> Family:
    kind = {"flag": _MLA_FLAG, "interleave": _MLA_INTERLEAVE, "half": _MLA}[how]
    rotation = {
        "flag": "apply_rotary_pos_emb_interleave when rope_interleave (else rotate_half)",
        "interleave": "apply_rotary_pos_emb_interleave (pairs 2i, 2i+1, written in half order)",
        "half": "rotate_half",
    }[how]
    merged = {**kind, **row}
    merged["defaults"] = {**kind["defaults"], **row.get("defaults", {})}
    return Family(**merged, source=_MLA_SOURCE.format(name, rotation))


_GEMMA3_THETA = {"full_attention": 1_000_000.0, "sliding_attention": 10_000.0}
_NEOX_KEYS = {
    "rotary_pct": Legacy("partial_rotary_factor", None, "partial_rotary_factor (old name)"),
    "rotary_emb_base": Legacy("rope_theta", None, "rope_theta (old name)"),
}
_VL = dict(mrope="consecutive", mrope_section=(16, 24, 24), legacy_types={"mrope": "default"})

_GEMMA4 = dict(
    head_dim=256,
    rope={"sliding_attention": {"rope_type": "default", "rope_theta": 10_000.0},
          "full_attention": {"rope_type": "proportional", "partial_rotary_factor": 0.25,
                             "rope_theta": 1_000_000.0}},
    layer_head_dims={"full_attention": ("global_head_dim", 512)},
)  # fmt: skip
_GEMMA4_SOURCE = (
    "modeling_{}.py: rotate_half with one rotary table per layer type; the full-attention "
    "layers' heads are global_head_dim wide (a per_layer_config override of head_dim) and use "
    "'proportional' RoPE"
)

# Families that follow transformers' conventions: rotate_half (or interleaved pairs, as noted) on
# the first int(head_dim * partial_rotary_factor) coordinates of every layer. A row holds the
# config class's defaults only. Proven by running each family's attention on its default config.
_CONVENTIONAL: dict[str, dict[str, Any]] = {
    "apertus": dict(theta=12_000_000.0, rope={"rope_type": "llama3", "factor": 8.0,
        "original_max_position_embeddings": 8192, "low_freq_factor": 1.0, "high_freq_factor": 4.0}),
    "arcee": dict(),
    "aria_text": dict(),
    "bitnet": dict(theta=500_000.0),
    "cohere": dict(layout="interleaved", theta=500_000.0),
    "csm": dict(theta=500_000.0),
    "cwm": dict(theta=1_000_000.0, head_dim=128, rope={"rope_type": "llama3", "factor": 16.0,
        "high_freq_factor": 4.0, "low_freq_factor": 1.0, "original_max_position_embeddings": 8192}),
    "diffllama": dict(),
    "doge": dict(),
    "embedding_gemma2_text": dict(theta=_GEMMA3_THETA, head_dim=256,
        rope=_types(sliding_attention=(1e4, None), full_attention=(1e6, None))),
    "ernie4_5": dict(layout="interleaved", theta=500_000.0, head_dim=128),
    "ernie4_5_moe": dict(layout="interleaved", theta=500_000.0),
    "esmc": dict(),
    "eurobert": dict(),
    "falcon_h1": dict(),
    "flex_olmo": dict(theta=500_000.0),
    "gemma": dict(head_dim=256),
    "gemma2": dict(head_dim=256),
    "glm": dict(layout="interleaved", head_dim=128, partial=0.5),
    "glm4": dict(layout="interleaved", head_dim=128, partial=0.5),
    "glm4_moe": dict(partial=0.5),
    "gpt_neox": dict(partial=0.25, legacy_keys=_NEOX_KEYS),
    "gpt_oss": dict(theta=150_000.0, head_dim=64, rope={"rope_type": "yarn", "factor": 32.0,
        "beta_fast": 32.0, "beta_slow": 1.0, "truncate": False,
        "original_max_position_embeddings": 4096}),
    "gradium_phonon_tts": dict(),
    "granite": dict(),
    "granite_docling_text": dict(),
    "granite_swa": dict(),
    "granitemoe": dict(),
    "granitemoe_swa": dict(),
    "granitemoeshared": dict(),
    "helium": dict(layout="interleaved", theta=100_000.0, head_dim=128),
    "higgs_audio_v2": dict(head_dim=128, theta=500_000.0, rope={"rope_type": "llama3",
        "factor": 32.0, "high_freq_factor": 0.5, "low_freq_factor": 0.125,
        "original_max_position_embeddings": 1024}),
    "hrm_text": dict(head_dim=128),
    "hy_v3": dict(theta=11_158_840.0, head_dim=128),
    "hyperclovax": dict(),
    "jais2": dict(),
    "jetmoe": dict(aliases={"head_dim": "kv_channels"}, defaults={"kv_channels": 128}),
    "laguna": dict(head_dim=128,
        rope=_types(full_attention=(5e5, 0.5), sliding_attention=(1e4, 1.0))),
    "lfm2": dict(theta=1_000_000.0),
    "llama": dict(),
    "mellum": dict(head_dim=128,
        rope=_types(full_attention=(5e5, None), sliding_attention=(1e4, None))),
    "mimo_v2_flash": dict(head_dim=192,
        rope=_types(full_attention=(5e6, 0.334), sliding_attention=(1e4, 0.334))),
    "mistral": dict(),
    "mixtral": dict(theta=1_000_000.0),
    "modernbert-decoder": dict(theta={"full_attention": 160_000.0, "sliding_attention": 10_000.0},
        rope=_types(sliding_attention=(1e4, None), full_attention=(1.6e5, None))),
    "molmo2_text": dict(head_dim=128),
    "muse_glimmer_text": dict(head_dim=128),
    "muse_spark_text": dict(head_dim=64, theta=500_000.0),
    "olmo": dict(),
    "olmo2": dict(),
    "olmo3": dict(theta=500_000.0,
        rope=_types(sliding_attention=(5e5, None), full_attention=(5e5, None))),
    "olmoe": dict(),
    "persimmon": dict(partial=0.5),
    "phi": dict(partial=0.5),
    "phimoe": dict(theta=1_000_000.0),
    "qwen2": dict(),
    "qwen2_moe": dict(),
    "qwen3": dict(head_dim=128),
    "qwen3_moe": dict(),
    "seed_oss": dict(head_dim=128),
    "solar_open": dict(theta=1_000_000.0, head_dim=128),
    "stablelm": dict(partial=0.25),
    "starcoder2": dict(),
    "ultrabert": dict(rope=_types(sliding_attention=(1e4, None), full_attention=(2.56e6, None))),
    "vaultgemma": dict(head_dim=256),
    "zaya": dict(head_dim=128, rope=_types(hybrid=(5e6, 0.5), hybrid_sliding=(1e4, 0.5))),
}  # fmt: skip

# Families with an exception to the conventions (each says where its code decides it).
_EXCEPTIONS: dict[str, Family] = {
    "gemma3_text": Family(
        theta=_GEMMA3_THETA,
        head_dim=256,
        local_base_key="rope_local_base_freq",
        source="modeling_gemma3.py: one rotary table per layer type; configuration_gemma3.py "
        "reads the older rope_theta + rope_local_base_freq",
    ),
    "phi3": Family(
        legacy_types={"su": "longrope", "yarn": "longrope"},
        source="modeling_phi3.py: rotate_half on the first rotary_dim coordinates; "
        "configuration_phi3.py maps the old types 'su' and 'yarn' to 'longrope'",
    ),
    "qwen2_vl": Family(theta=1_000_000.0, **_VL, source="modeling_qwen2_vl.py: consecutive "
                       "mrope_section, rotate_half"),
    "qwen2_5_vl": Family(theta=1_000_000.0, **_VL, source="modeling_qwen2_5_vl.py: "
                         "consecutive mrope_section, rotate_half"),
    "qwen3_vl": Family(
        theta=500_000.0, head_dim=128, mrope="interleaved", mrope_section=(24, 20, 20),
        source="modeling_qwen3_vl.py: interleaved mrope_section, rotate_half",
    ),
    "qwen3_vl_moe_text": Family(
        theta=500_000.0, mrope="interleaved", mrope_section=(24, 20, 20),
        source="modeling_qwen3_vl_moe.py: interleaved mrope_section, rotate_half",
    ),
    "qwen3_omni_moe_text": Family(
        theta=1_000_000.0, mrope="interleaved", mrope_section=(24, 20, 20),
        source="modeling_qwen3_omni_moe.py: interleaved mrope_section, rotate_half",
    ),
    "cosmos3_edge_text": Family(
        theta=100_000_000.0, head_dim=128, mrope="interleaved", mrope_section=(24, 20, 20),
        source="modeling_cosmos3_edge.py: interleaved mrope_section, rotate_half",
    ),
    "qwen2_5_omni_text": Family(
        theta=1_000_000.0, **_VL,
        source="modeling_qwen2_5_omni.py: consecutive mrope_section, rotate_half",
    ),
    "paddleocr_vl_text": Family(
        theta=500_000.0, head_dim=128, **_VL,
        source="modeling_paddleocr_vl.py: consecutive mrope_section, rotate_half",
    ),
    "glm4v_text": Family(
        layout="interleaved", mrope="consecutive", mrope_section=(8, 12, 12),
        source="modeling_glm4v.py: consecutive mrope_section, pairs (2i, 2i+1) "
        "(rotate_half_llm, repeat_interleave) on the rotary part",
    ),
    "glm4v_moe_text": Family(
        partial=0.5, mrope="consecutive", mrope_section=(8, 12, 12),
        source="modeling_glm4v_moe.py: consecutive mrope_section, rotate_half on the rotary part "
        "(unlike GLM-4V, whose pairs are interleaved)",
    ),
    "glm_ocr_text": Family(
        layout="interleaved", mrope="consecutive", mrope_section=(8, 12, 12),
        source="modeling_glm_ocr.py: consecutive mrope_section, pairs (2i, 2i+1) on the "
        "rotary part",
    ),
    "glm_image_text": Family(
        mrope="consecutive", mrope_section=(8, 12, 12),
        source="modeling_glm_image.py: consecutive mrope_section, rotate_half on the rotary part",
    ),
    "qwen3_5": Family(
        head_dim=256, partial=0.25, mrope="interleaved", mrope_section=(11, 11, 10),
        rope_layers=_rotate_types("full_attention"),
        layer_types=_pattern_types("full_attention_interval", 4, "linear_attention"),
        reads=frozenset({"full_attention_interval"}),
        source="modeling_qwen3_5.py: interleaved mrope_section on the rotary part of the "
        "full_attention layers; the linear_attention (gated DeltaNet) layers take no position",
    ),
    "qwen3_5_moe": Family(
        head_dim=256, partial=0.25, mrope="interleaved", mrope_section=(11, 11, 10),
        rope_layers=_rotate_types("full_attention"),
        layer_types=_pattern_types("full_attention_interval", 4, "linear_attention"),
        reads=frozenset({"full_attention_interval"}),
        source="modeling_qwen3_5_moe.py: interleaved mrope_section on the rotary part of the "
        "full_attention layers; the linear_attention layers take no position",
    ),
    # --- MLA
    "deepseek_v2": Family(
        **_MLA, layout="interleaved",
        source="modeling_deepseek_v2.py: the rope part (last in each head) as complex numbers "
        "of the pairs (2i, 2i+1), multiplied by the rotation and written back in place",
    ),
    "deepseek_v3": _mla("deepseek_v3", "flag"),
    "deepseek_v32": _mla("deepseek_v32", "interleave"),
    "youtu": _mla("youtu", "flag"),
    "axk1": _mla("axk1", "flag"),
    "axk2": _mla("axk2", "interleave", defaults={"qk_rope_head_dim": 32, "qk_nope_head_dim": 64}),
    "glm4_moe_lite": _mla("glm4_moe_lite", "flag", defaults={"qk_nope_head_dim": 192}),
    "glm_moe_dsa": _mla("glm_moe_dsa", "interleave", defaults={"qk_nope_head_dim": 192}),
    "bailing_hybrid": _mla(
        "bailing_hybrid", "interleave", theta=6_000_000.0,
        rope_layers=_rotate_types("full_attention"),
    ),
    # its rotary module reads head_dim (default 64), which must be the rope part's width
    "longcat_flash": _mla(
        "longcat_flash", "interleave", theta=10_000_000.0, partial_of=("head_dim",),
        defaults={"head_dim": 64},
    ),
    "minicpm3": _mla("minicpm3", "half", defaults={"qk_rope_head_dim": 32, "qk_nope_head_dim": 64}),
    "hy_v4": _mla("hy_v4", "half", defaults={"qk_nope_head_dim": 192}),
    "mistral4": _mla(
        "mistral4", "flag",
        defaults={"qk_nope_head_dim": 64},
        partial_of=("qk_nope_head_dim", "qk_rope_head_dim"),
        rope={"rope_type": "yarn", "factor": 128.0, "original_max_position_embeddings": 8192,
              "max_position_embeddings": 1_048_576, "beta_fast": 32.0, "beta_slow": 1.0,
              "mscale_all_dim": 1.0, "mscale": 1.0, "llama_4_scaling_beta": 0.1},
        rope_keys=frozenset({"llama_4_scaling_beta", "max_position_embeddings"}),
        query_scale=_llama_4_scaling,
    ),
    # --- position-dependent query scaling
    "ministral3": Family(
        theta=1_000_000.0,
        head_dim=128,
        rope={"rope_type": "yarn", "factor": 16.0, "original_max_position_embeddings": 16384,
              "max_position_embeddings": 262144, "beta_fast": 32.0, "beta_slow": 1.0,
              "mscale_all_dim": 1.0, "mscale": 1.0, "llama_4_scaling_beta": 0.1},
        rope_keys=frozenset({"llama_4_scaling_beta", "max_position_embeddings"}),
        query_scale=_llama_4_scaling,
        source="modeling_ministral3.py: rotate_half, then query *= get_llama_4_attn_scale("
        "position_ids, llama_4_scaling_beta, original_max_position_embeddings)",
    ),
    # --- per-layer-type head widths
    "gemma4_text": Family(**_GEMMA4, source=_GEMMA4_SOURCE.format("gemma4")),
    "gemma4_unified_text": Family(**_GEMMA4, source=_GEMMA4_SOURCE.format("gemma4_unified")),
    "diffusion_gemma_text": Family(**_GEMMA4, source=_GEMMA4_SOURCE.format("diffusion_gemma")),
    # --- layers without RoPE
    "smollm3": Family(
        theta=2_000_000.0,
        rope_layers=_no_rope_layers,
        reads=frozenset({"no_rope_layers", "no_rope_layer_interval"}),
        source="modeling_smollm3.py: rotate_half in the layers where no_rope_layers[i] is 1, no "
        "rotation in the others",
    ),
    "llama4_text": Family(
        layout="interleaved",
        theta=500_000.0,
        head_dim=128,
        rope_layers=_no_rope_layers,
        layer_types=_no_rope_types("chunked_attention", "full_attention"),
        nope_query_scale=_llama4_temperature,
        reads=frozenset({"no_rope_layers", "no_rope_layer_interval", "attn_temperature_tuning",
                         "attn_scale", "floor_scale"}),
        source="modeling_llama4.py: the pairs (2i, 2i+1) as complex numbers (view_as_complex) "
        "times freqs_cis in the layers where no_rope_layers[i] is 1; the others take no rotation "
        "and, with attn_temperature_tuning, scale their queries by 1 + attn_scale "
        "ln(1 + floor((t + 1) / floor_scale))",
    ),
    "cohere2": Family(
        layout="interleaved",
        rope_layers=_cohere2_layers,
        layer_types=_pattern_types("sliding_window_pattern", 4),
        reads=frozenset({"sliding_window_pattern"}),
        source="modeling_cohere2.py: interleaved pairs in the sliding-window layers only (the "
        "attention rotates when its sliding_window is set)",
    ),
    "cohere2_moe": Family(
        layout="interleaved",
        head_dim=128,
        rope_layers=_cohere2_layers,
        reads=frozenset({"sliding_window_pattern", "prefix_dense_sliding_window_pattern"}),
        source="modeling_cohere2_moe.py: interleaved pairs in the sliding-window layers only",
    ),
    "exaone4": Family(
        rope_layers=_sliding_layers_if_any,
        layer_types=_pattern_types("sliding_window_pattern", 4),
        reads=frozenset({"sliding_window_pattern"}),
        source="modeling_exaone4.py: rotate_half in every layer without a sliding window, else "
        "in the sliding-window layers only",
    ),
    "exaone_moe": Family(
        rope_layers=_sliding_layers_if_any,
        layer_types=_pattern_types("sliding_window_pattern", 4),
        reads=frozenset({"sliding_window_pattern"}),
        source="modeling_exaone_moe.py: rotate_half in every layer without a sliding window, "
        "else in the sliding-window layers only",
    ),
    "kolibri1": Family(
        head_dim=128,
        rope_layers=_sliding_layers_if_any,
        source="modeling_kolibri1.py: rotate_half in every layer without a sliding window, else "
        "in the sliding-window layers only",
    ),
    "flint": Family(
        head_dim=128,
        rope_layers=_sliding_layers_only,
        source="modeling_flint.py: rotate_half in the sliding-window layers only",
    ),
    "afmoe": Family(
        head_dim=128,
        rope_layers=_sliding_layers_only,
        source="modeling_afmoe.py: rotate_half in the local (sliding-window) layers only",
    ),
    # hybrids: their linear-attention layers take no position
    "minimax": Family(
        theta=1_000_000.0,
        rope_layers=_rotate_types("full_attention"),
        source="modeling_minimax.py: rotate_half in the full_attention layers; the "
        "linear_attention (lightning) layers take no position",
    ),
    "olmo_hybrid": Family(
        rope_layers=_rotate_types("full_attention"),
        source="modeling_olmo_hybrid.py: rotate_half in the full_attention layers; the "
        "linear_attention layers take no position",
    ),
    "qwen3_next": Family(
        head_dim=256,
        partial=0.25,
        rope_layers=_rotate_types("full_attention"),
        layer_types=_pattern_types("full_attention_interval", 4, "linear_attention"),
        reads=frozenset({"full_attention_interval"}),
        source="modeling_qwen3_next.py: rotate_half on the first quarter of the head in the "
        "full_attention layers; the linear_attention (gated DeltaNet) layers take no position",
    ),
    "beam": Family(
        head_dim=128,
        rope=_types(sliding_attention=(1e4, None), full_attention=None),
        source="modeling_beam.py: rotate_half in the sliding-window layers; the full-attention "
        "layers' rope_parameters are null",
    ),
    # --- RoPE or not, by a config flag
    "falcon": Family(
        no_rope_when=lambda config: (
            "ALiBi attention biases (alibi: true)" if config.get("alibi") else None
        ),
        reads=frozenset({"alibi"}),
        source="modeling_falcon.py: rotate_half on the whole head, unless alibi (then ALiBi "
        "biases and no rotation)",
    ),
    # --- a rotary width from a family key
    "minimax_m2": Family(
        theta=5_000_000.0,
        head_dim=128,
        legacy_keys={"rotary_dim": Legacy(
            "partial_rotary_factor", _fraction_of_head,
            "the rotary width, read as partial_rotary_factor = rotary_dim / head_dim")},
        source="modeling_minimax_m2.py: rotate_half on the first rotary_dim coordinates; "
        "configuration_minimax_m2.py turns rotary_dim into partial_rotary_factor = rotary_dim / "
        "head_dim",
    ),
    "minimax_m3_vl_text": Family(
        theta=5_000_000.0,
        head_dim=128,
        ignored={"rotary_dim": "a field of its config class that its modeling code never reads "
                 "(the rotary width is int(head_dim * partial_rotary_factor))"},
        source="modeling_minimax_m3_vl.py: rotate_half on int(head_dim * partial_rotary_factor) "
        "coordinates",
    ),
    "gptj": Family(
        layout="interleaved",
        fixed_theta=10000.0,
        aliases={"max_position_embeddings": "n_positions", "hidden_size": "n_embd",
                 "num_attention_heads": "n_head", "num_hidden_layers": "n_layer"},
        defaults={"rotary_dim": 64},
        legacy_keys={"rotary_dim": Legacy(
            "rotary_dim", _absolute, "the rotary width (null: the whole head), rotate_every_two")},
        source="modeling_gptj.py: rotate_every_two (pairs 2i, 2i+1) on the first rotary_dim "
        "coordinates, sin/cos from create_sinusoidal_positions(base 10000)",
    ),
    "codegen": Family(
        layout="interleaved",
        fixed_theta=10000.0,
        aliases={"max_position_embeddings": "n_positions", "hidden_size": "n_embd",
                 "num_attention_heads": "n_head", "num_hidden_layers": "n_layer"},
        defaults={"rotary_dim": 64},
        legacy_keys={"rotary_dim": Legacy(
            "rotary_dim", _absolute, "the rotary width (null: the whole head), rotate_every_two")},
        source="modeling_codegen.py: rotate_every_two (pairs 2i, 2i+1) on the first rotary_dim "
        "coordinates, sin/cos from create_sinusoidal_positions(base 10000)",
    ),
    # --- head widths from family keys
    "dbrx": Family(
        aliases={"num_attention_heads": "n_heads", "hidden_size": "d_model",
                 "num_hidden_layers": "n_layers", "max_position_embeddings": "max_seq_len"},
        conflicts={"attn_config.rope_theta": (
            "rope_theta", "transformers 5.23's DbrxRotaryEmbedding reads rope_theta (its "
            "rope_parameters, default 10000), never attn_config.rope_theta")},
        source="modeling_dbrx.py: rotate_half; configuration_dbrx.py: hidden_size is d_model, "
        "num_attention_heads n_heads; the base is rope_theta, not attn_config.rope_theta",
    ),
    "moonshine": Family(
        layout="interleaved",
        partial=0.9,
        aliases={"num_attention_heads": "decoder_num_attention_heads",
                 "num_hidden_layers": "decoder_num_hidden_layers"},
        source="modeling_moonshine.py: interleaved pairs on int(head_dim * 0.9) coordinates; "
        "configuration_moonshine.py: num_attention_heads is decoder_num_attention_heads",
    ),
}  # fmt: skip

FAMILIES: dict[str, Family] = {
    **{
        name: Family(
            **row,
            source=row.get(
                "source",
                f"modeling_{name}.py: "
                + ("interleaved pairs" if row.get("layout") == "interleaved" else "rotate_half")
                + " on the first int(head_dim * partial_rotary_factor) coordinates",
            ),
        )  # fmt: skip
        for name, row in _CONVENTIONAL.items()
    },
    **_EXCEPTIONS,
}
"""``model_type`` of the language model -> its :class:`Family` row."""

# Multimodal wrappers keep the language model's config under "text_config"; a config of the
# wrapper without one is read as its language model.
TEXT_MODEL_TYPES = {
    "gemma3": "gemma3_text",
    "qwen2_vl_text": "qwen2_vl",
    "qwen2_5_vl_text": "qwen2_5_vl",
    "qwen3_vl_text": "qwen3_vl",
    "qwen3_5_text": "qwen3_5",
    "qwen3_5_moe_text": "qwen3_5_moe",
}

# Families whose language model uses no RoPE: what they use instead.
NO_ROPE: dict[str, str] = {
    "nemotron_h": "Nemotron-H's attention layers (between Mamba-2 layers) take no positional "
    "encoding; the Mamba-2 layers carry order",
    "bert": "learned absolute position embeddings (position_embedding_type 'absolute')",
    "roberta": "learned absolute position embeddings",
    "gpt2": "learned absolute position embeddings",
    "opt": "learned absolute position embeddings",
    "bloom": "ALiBi attention biases",
    "mpt": "ALiBi attention biases",
    "t5": "T5 relative position buckets",
    "mamba": "no attention and no positional encoding (a state-space model)",
    "mamba2": "no attention and no positional encoding (a state-space model)",
    "falcon_mamba": "no attention and no positional encoding (a state-space model)",
    "jamba": "its attention layers take no positional encoding; the Mamba layers carry order",
}
"""``model_type`` -> what its model uses instead of RoPE (it raises ``NoRopeError``)."""


def _keys_of(family: Family) -> dict[str, str]:
    """Top-level keys this family's row reads beyond the conventions -> what they mean."""
    out: dict[str, str] = {}
    if family.layout_key:
        out[family.layout_key] = (
            "true: the rope part's pairs (2i, 2i+1) are rotated and written back in half order"
        )
    if family.head_dim_key != "head_dim":
        out[family.head_dim_key] = "the width of the rotated part of each head"
    if family.nope_dim_key:
        out[family.nope_dim_key] = "the width of the head part without position"
    for key, _default in family.layer_head_dims.values():
        out[key] = "the head width of one layer type"
    for key, legacy in family.legacy_keys.items():
        out[key] = legacy.meaning or legacy.quantity
    if family.local_base_key:
        out[family.local_base_key] = "the base of the sliding-window layers"
    for key in family.reads:
        out.setdefault(key, "read by its code")
    return out


def family_keys(family: Family) -> frozenset[str]:
    """The family-specific top-level keys a row reads."""
    return frozenset(_keys_of(family))


@cache
def keys_read_by() -> dict[str, dict[str, list[str]]]:
    """Every family-specific key -> {what it means there: the families that read it}."""
    out: dict[str, dict[str, list[str]]] = {}
    for name, family in FAMILIES.items():
        for key, meaning in _keys_of(family).items():
            layout = f" ({family.layout} layout)" if key in family.legacy_keys else ""
            out.setdefault(key, {}).setdefault(meaning + layout, []).append(name)
    return out


def _with(family: Family, **change: Any) -> Family:
    return replace(family, **change)
