r"""The rules family rows name: which layers rotate, layer types from a pattern, query scalings.

Each is a small function of the config (and the layer count) that a trait of a row holds
(:mod:`posenc_ref.models.traits`); each says which family's code it is read from.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any

from ..query_scale import QueryScale
from ._config import (
    CLASS_NOTES,
    MAX_WIDTH,
    bounded_int,
    given,
    is_number,
    layer_count,
    length,
    real,
    shown,
)


def no_rope_layers(config: Mapping[str, Any], count: int | None) -> list[bool]:
    """SmolLM3, Llama 4: ``no_rope_layers[i]`` is 1 where layer i *uses* RoPE (the name misleads).

    Absent, the config class builds it: every ``no_rope_layer_interval``-th layer (default 4)
    has no RoPE.
    """
    listed = config.get("no_rope_layers")
    if listed is None:
        interval = config.get("no_rope_layer_interval", 4)
        if isinstance(interval, float) and interval.is_integer():
            interval = int(interval)  # JSON writers give 4.0
        if not isinstance(interval, int) or isinstance(interval, bool) or interval < 1:
            raise ValueError(f"no_rope_layer_interval must be an integer >= 1, got {interval!r}")
        if count is None:
            raise ValueError(
                "no_rope_layers is absent and there is no num_hidden_layers to build it"
            )
        return [(i + 1) % interval != 0 for i in range(count)]
    if not isinstance(listed, (list, tuple)) or not all(
        isinstance(v, (int, float)) and v in (0, 1) for v in listed
    ):
        raise ValueError(
            f"no_rope_layers must be a list of 0 and 1 (1: the layer uses RoPE), got "
            f"{shown(listed)}"
        )
    if count is not None and len(listed) > count:
        listed = listed[:count]  # layer i reads entry i: the rest is never read (a note says so)
    elif count is not None and len(listed) < count:
        raise ValueError(
            f"no_rope_layers lists {len(listed)} entries but num_hidden_layers={count}: layer i "
            "reads entry i, so the code cannot build the last layers (transformers fails too)"
        )
    return [bool(v) for v in listed]


def listed_layer_types(config: Mapping[str, Any]) -> list[str]:
    types = config.get("layer_types")
    if types is None:
        raise ValueError(
            "this family's layers rotate or not by layer type, and the config has no layer_types "
            "(nor a pattern posenc_ref derives them from): give layer_types"
        )
    if not isinstance(types, (list, tuple)) or not all(isinstance(t, str) for t in types):
        raise TypeError(f"layer_types must be a list of strings, got {types!r}")
    return list(types)


def sliding_layers_only(config: Mapping[str, Any], count: int | None) -> list[bool]:
    """Flint, AFMoE: only the sliding-window layers rotate, the global ones have no RoPE."""
    return [t == "sliding_attention" for t in listed_layer_types(config)]


def sliding_layers_if_any(config: Mapping[str, Any], count: int | None) -> list[bool]:
    """EXAONE 4, Kolibri: all layers rotate without a sliding window; with one, only those."""
    types = listed_layer_types(config)
    if config.get("sliding_window") is None:
        return [True] * len(types)
    return [t == "sliding_attention" for t in types]


def rotate_types(*names: str) -> Callable[[Mapping[str, Any], int | None], list[bool]]:
    """Only the layers of these layer types rotate (hybrids: linear-attention layers take none)."""

    def rule(config: Mapping[str, Any], count: int | None) -> list[bool]:
        return [t in names for t in listed_layer_types(config)]

    rule.__doc__ = f"Only the {', '.join(names)} layers rotate."
    return rule


def cohere2_layers(config: Mapping[str, Any], count: int | None) -> list[bool]:
    """Cohere 2: the sliding-window layers rotate (none when sliding_window is null)."""
    types = listed_layer_types(config)
    if config.get("sliding_window") is None:
        return [False] * len(types)
    return [t == "sliding_attention" for t in types]


def pattern_types(
    key: str, default: int, other: str = "sliding_attention", full: str = "full_attention"
) -> Callable[[Mapping[str, Any], int | None], list[str]]:
    """``layer_types`` from a pattern: every ``key``-th layer ``full``, else ``other``."""

    def rule(config: Mapping[str, Any], count: int | None) -> list[str]:
        every = config.get(key, default)
        if isinstance(every, str):  # EXAONE 4 writes it as "LLLG"
            every = len(every)
        if not isinstance(every, int) or isinstance(every, bool) or every < 1:
            raise ValueError(f"{key} must be an integer >= 1, got {every!r}")
        return [other if (i + 1) % every else full for i in range(count or 0)]

    return rule


def all_full(config: Mapping[str, Any], count: int | None) -> list[str]:
    """Cohere Compass: every layer full attention unless the config lists its types."""
    return ["full_attention"] * (count or 0)


def every_sixth_and_last(config: Mapping[str, Any], count: int | None) -> list[str]:
    """NeoMME: every sixth layer and the last one full attention, the others sliding-window."""
    count = count or 0
    return [
        "full_attention" if (i + 1) % 6 == 0 or i == count - 1 else "sliding_attention"
        for i in range(count)
    ]


def no_rope_types(rope_type: str, nope_type: str):
    """Llama 4: a layer's type follows from no_rope_layers (chunked attention where it rotates)."""

    def rule(config: Mapping[str, Any], count: int | None) -> list[str]:
        return [rope_type if r else nope_type for r in no_rope_layers(config, count)]

    return rule


def llama_4_scaling(config: Mapping[str, Any], rope: Mapping[str, Any]) -> QueryScale | None:
    """Ministral 3, Mistral 4: ``q *= 1 + beta ln(1 + floor(t / L))``, L the original context."""
    beta = rope.get("llama_4_scaling_beta")
    if beta is None or (is_number(beta) and beta == 0):
        return None  # transformers' factor is then 1 + 0 * ln(...) = 1: no scaling
    original = rope.get("original_max_position_embeddings")
    if original is None:
        raise ValueError("llama_4_scaling_beta needs original_max_position_embeddings (its length)")
    return QueryScale.checked(
        beta, length("original_max_position_embeddings", original), 0,
        "llama_4_scaling_beta, original_max_position_embeddings",
    )  # fmt: skip


def llama4_temperature(config: Mapping[str, Any]) -> QueryScale | None:
    """Llama 4's NoPE layers: ``q *= 1 + attn_scale ln(1 + floor((t + 1) / floor_scale))``."""
    if not config.get("attn_temperature_tuning", True):
        return None
    scale = config.get("attn_scale", 0.1)
    if is_number(scale) and scale == 0:
        return None  # 1 + 0 * ln(...) = 1: no scaling
    return QueryScale.checked(
        scale, length("floor_scale", config.get("floor_scale", 8192)), 1, "attn_scale, floor_scale"
    )


def beam_scalable_softmax(config: Mapping[str, Any]) -> QueryScale:
    """Beam's layers without RoPE: ``q *= (1 + (t + 1) / 2048) ** 0.1``, constants in its code.

    (``compute_attention_scaling`` in modeling_beam.py; no config key changes them.)
    """
    return QueryScale(0.1, 2048, 1, "modeling_beam.py: compute_attention_scaling", "power")


def layer_rope_theta(config: Mapping[str, Any], count: int | None) -> list[bool]:
    """Muse Glimmer, Muse Spark: a layer rotates where ``layer_rope_theta[i]`` is not 0.

    Absent, the config class makes every fourth layer counted back from the last a NoPE layer.
    Its code rotates every other layer with ``rope_theta``: a non-zero per-layer value different
    from the others would be ignored by it, so it is refused.
    """
    listed = config.get("layer_rope_theta")
    if listed is None:
        if count is None:
            raise ValueError("layer_rope_theta is absent and there is no num_hidden_layers")
        return [(count - 1 - i) % 4 != 0 for i in range(count)]
    numbers_of("layer_rope_theta", listed)
    if len({v for v in listed if v}) > 1:
        raise ValueError(
            "layer_rope_theta gives different non-zero bases; transformers 5.23's code rotates "
            "every such layer with rope_theta (the values only switch RoPE off where 0)"
        )
    return [bool(v) for v in listed]


def numbers_of(key: str, listed: object) -> None:
    """A list of finite numbers (a per-layer list of bases), or a TypeError naming ``key``."""
    if not isinstance(listed, (list, tuple)) or not all(
        is_number(v) and math.isfinite(v) for v in listed
    ):
        raise TypeError(f"{key} must be a list of numbers (0: no RoPE), got {listed!r}")


def granite_layer_rope_theta(config: Mapping[str, Any], count: int | None) -> list[bool]:
    """GraniteSWA: ``layer_rope_theta[i]`` is layer i's base, 0 for no RoPE (default: the base).

    One RoPE per spec: layers with a base other than ``rope_theta`` are refused (not implemented).
    """
    listed = config.get("layer_rope_theta")
    if listed is None:
        if count is None:
            raise ValueError("layer_rope_theta is absent and there is no num_hidden_layers")
        return [True] * count
    numbers_of("layer_rope_theta", listed)
    rope = config.get("rope_parameters") or {}
    base = rope.get("rope_theta", config.get("rope_theta")) if isinstance(rope, Mapping) else None
    if base is None:
        base = 10000.0  # the config class default (PreTrainedConfig), without rope_theta
    other = sorted({v for v in listed if v and v != base})
    if other:
        raise NotImplementedError(
            f"layer_rope_theta gives some layers their own base ({other}, rope_theta {base}): "
            "one RoPE per layer with its own base is not implemented"
        )
    return [bool(v) for v in listed]


# --------------------------------------------------------------------------- widths and defaults


def absolute(value: float, head_dim: int) -> float:  # noqa: ARG001 (a legacy key's converter)
    """A legacy key that gives the quantity itself (GPT-J's ``rotary_dim``)."""
    return value


def fraction_of_head(value: float, head_dim: int) -> float:
    """A legacy width read as a fraction of the head (MiniMax-M2's ``rotary_dim``)."""
    return value / head_dim


def twice_hidden_per_head(config: Mapping[str, Any]) -> int | None:
    """Zamba 2's config class: ``attention_head_dim = 2 * hidden_size // num_attention_heads``."""
    hidden, heads = config.get("hidden_size"), config.get("num_attention_heads")
    if isinstance(hidden, int) and isinstance(heads, int) and heads > 0:
        return 2 * hidden // heads
    return None


def rope_by_layer_type(**types: tuple[float, float | None] | None) -> dict[str, Any]:
    """Default RoPE per layer type: ``layer_type=(rope_theta, partial_rotary_factor)`` or None.

    ``full`` and ``sliding`` stand for ``full_attention`` and ``sliding_attention``.
    """
    out: dict[str, Any] = {}
    for name, value in types.items():
        name = {"full": "full_attention", "sliding": "sliding_attention"}.get(name, name)
        if value is None:
            out[name] = None
            continue
        theta, partial = value
        out[name] = {"rope_type": "default", "rope_theta": theta}
        if partial is not None:
            out[name]["partial_rotary_factor"] = partial
    return out


# --------------------------------------------------------------------------- models without RoPE


def nemotron_h_layers(config: Mapping[str, Any]) -> tuple[int | None, int | None]:
    """Nemotron-H: ``layers_block_type`` (or ``layer_types``), else ``hybrid_override_pattern``."""
    types = config.get("layers_block_type") or config.get("layer_types")
    pattern = config.get("hybrid_override_pattern")
    if isinstance(types, list) and all(isinstance(t, str) for t in types):
        return len(types), types.count("full_attention")
    if isinstance(pattern, str):
        return len(pattern), pattern.count("*")
    return None, None


def state_space_layers(config: Mapping[str, Any]) -> tuple[int | None, int | None]:
    """Mamba, Mamba-2, Falcon-Mamba: no attention layer at all."""
    return None, 0


def jamba_layers(config: Mapping[str, Any]) -> tuple[int | None, int | None]:
    """Jamba: every ``attn_layer_period``-th layer from ``attn_layer_offset`` on attends."""
    layers, period, start = (
        bounded_int(key, given(config, (key,), default), "jamba", minimum=minimum,
                    maximum=MAX_WIDTH)
        for key, default, minimum in (("num_hidden_layers", 32, 1), ("attn_layer_period", 8, 1),
                                      ("attn_layer_offset", 4, 0))
    )  # fmt: skip
    return layers, sum(1 for i in range(layers) if i % period == start)


def first_and_every(every: int) -> Callable[[Mapping[str, Any], int | None], list[str]]:
    """MiMo-V2-Flash: the first layer and every ``every``-th full attention, the rest sliding."""

    def rule(config: Mapping[str, Any], count: int | None) -> list[str]:
        return [
            "full_attention" if i == 0 or (i + 1) % every == 0 else "sliding_attention"
            for i in range(count or 0)
        ]

    return rule


def every_nth_full(every: int) -> Callable[[Mapping[str, Any], int | None], list[str]]:
    """Gemma 2 (2), OLMo 3 (4): every ``every``-th layer full attention, the others sliding."""

    def rule(config: Mapping[str, Any], count: int | None) -> list[str]:
        return [
            "sliding_attention" if (i + 1) % every else "full_attention" for i in range(count or 0)
        ]

    return rule


def minimax_m3_types(config: Mapping[str, Any], count: int | None) -> list[str]:
    """MiniMax-M3: ``sparse_attention_config.sparse_attention_freq`` (1: a sparse layer)."""
    sparse = config.get("sparse_attention_config") or {}
    freq = sparse.get("sparse_attention_freq") if isinstance(sparse, Mapping) else None
    if freq is None:
        return ["full_attention"] * (count or 0)
    if not isinstance(freq, (list, tuple)):
        raise TypeError(
            f"sparse_attention_config.sparse_attention_freq must be a list, got {freq!r}"
        )
    return ["minimax_m3_sparse" if f else "full_attention" for f in freq]


def decilm_attention_layers(config: Mapping[str, Any], count: int | None) -> list[bool]:
    """DeciLM (Nemotron-NAS): a layer rotates unless its attention is a no-op or a linear layer.

    ``block_configs[i]["attention"]``: ``no_op`` (no attention) or ``replace_with_linear``.
    """
    blocks = config.get("block_configs")
    if not isinstance(blocks, (list, tuple)) or not all(isinstance(b, Mapping) for b in blocks):
        raise TypeError(f"block_configs must be a list of dicts (one per layer), got {blocks!r}")
    rotates = []
    for i, block in enumerate(blocks):
        attention = block.get("attention") or {}
        if not isinstance(attention, Mapping):
            raise TypeError(f"block_configs[{i}]['attention'] must be a dict, got {attention!r}")
        rotates.append(not (attention.get("no_op") or attention.get("replace_with_linear")))
    return rotates


# DeepSeek-V4 (configuration_deepseek_v4.py): a legacy compress ratio -> the layer type it makes
V4_RATIO_TYPES = {
    0: "sliding_attention",
    4: "compressed_sparse_attention",
    128: "heavily_compressed_attention",
}


def deepseek_v4_types(config: Mapping[str, Any], count: int | None) -> list[str]:
    """DeepSeek-V4's ``layer_types``: from the legacy ``compress_ratios`` (one per layer).

    Else the class's default: two heavily compressed layers, then CSA and HCA alternating
    (``DeepseekV4Config.__post_init__``). Cut to the layer count, as the class does (the
    released lists carry one more entry, for the next-token-prediction layer).
    """
    ratios = config.get("compress_ratios")
    n = count or 0
    if ratios is None:
        rest = [
            "compressed_sparse_attention" if i % 2 else "heavily_compressed_attention"
            for i in range(max(n - 2, 0))
        ]
        return (["heavily_compressed_attention"] * min(n, 2) + rest)[:n]
    if not isinstance(ratios, (list, tuple)) or any(
        isinstance(r, bool) or r not in V4_RATIO_TYPES for r in ratios
    ):
        raise ValueError(
            f"compress_ratios must list one of {sorted(V4_RATIO_TYPES)} per layer (0: sliding "
            f"window only, 4: compressed sparse, 128: heavily compressed), got {ratios!r}"
        )
    return [V4_RATIO_TYPES[int(r)] for r in ratios][: count if count is not None else None]


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


# GLM-4's tokenizer: the chatglm checkpoints with this vocabulary run GLM-4's modeling_chatglm.py
GLM4_VOCABULARY = 151552
CHATGLM_RATIO_SOURCES = (
    "THUDM/glm-4-9b-chat modeling_chatglm.py (RotaryEmbedding.forward_impl: base = base * "
    "self.rope_ratio; read in aifunny/Hate-Detection chuli/glm4更新包/modeling_chatglm.py "
    "@ 4f5fc7d1, and in the glm-4-9b and glm-4-9b-chat-1m copies beside it)"
)


def chatglm_rope_ratio(config: Mapping[str, Any]) -> float:
    """ChatGLM's ``rope_ratio``: the factor on the base 10000, where the config says whose code.

    Two revisions of THUDM's remote code read the same key differently: GLM-4's (every chatglm
    checkpoint with GLM-4's vocabulary of 151552 tokens) multiplies the base by it, as does
    chatglm3-6b-32k's (vLLM's chatglm.py cites it); chatglm2-6b-32k's divides the positions by
    it (position interpolation). A ChatGLM2/3 config (vocabulary 65024) does not say which of
    these its checkpoint ships, so a ratio other than 1 there is refused, naming both.
    """
    ratio = config.get("rope_ratio")
    if ratio is None:
        return 1.0
    if isinstance(ratio, bool) or not is_number(ratio) or not 0 < float(ratio) < math.inf:
        raise ValueError(f"rope_ratio must be a finite number > 0, got {ratio!r:.80}")
    if float(ratio) == 1.0 or config.get("padded_vocab_size") == GLM4_VOCABULARY:
        return float(ratio)
    raise NotImplementedError(
        f"rope_ratio = {ratio!r} in a ChatGLM2/ChatGLM3 config (padded_vocab_size "
        f"{config.get('padded_vocab_size')!r}, not GLM-4's {GLM4_VOCABULARY}): THUDM's code reads "
        "it two ways and the config does not say which it ships. THUDM/chatglm2-6b-32k's "
        "modeling_chatglm.py divides the positions by it (RotaryEmbedding.forward_impl: seq_idx "
        "= arange(seq_len) / self.rope_ratio; read in hzg0601/cn-llm-codes "
        "chatglm2-6b-32k/modeling_chatglm.py @ 6669078), THUDM/chatglm3-6b-32k's multiplies the "
        "base by it (as vLLM's chatglm.py cites, revision e210410); posenc_ref does not guess "
        "which (without rope_ratio, or with 1, both read the same)"
    )


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
