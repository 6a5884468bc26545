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
    MAX_WIDTH,
    bounded_int,
    given,
    is_number,
    length,
    shown,
)


def no_rope_layers(config: Mapping[str, Any], count: int | None) -> list[bool]:
    """SmolLM3, Mistral Large 4: ``no_rope_layers[i]`` is 1 where layer i *uses* RoPE.

    (The name misleads.) Absent, the config class builds it: every
    ``no_rope_layer_interval``-th layer (default 4) has no RoPE.
    """
    return _no_rope_layers(config, count, empty_is_absent=False)


def llama4_no_rope_layers(config: Mapping[str, Any], count: int | None) -> list[bool]:
    """Llama 4: as :func:`no_rope_layers`, but an empty list is built like an absent one.

    ``Llama4TextConfig.__post_init__`` keeps ``no_rope_layers if no_rope_layers else`` the
    default: any empty list is replaced (SmolLM3's and Mistral Large 4's classes test ``is
    None``, keep it, and their models cannot build a layer).
    """
    return _no_rope_layers(config, count, empty_is_absent=True)


def _no_rope_layers(config: Mapping[str, Any], count: int | None, *, empty_is_absent: bool
                    ) -> list[bool]:  # fmt: skip
    listed = config.get("no_rope_layers")
    if empty_is_absent and isinstance(listed, (list, tuple)) and not listed:
        listed = None
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


def pattern_and_last(
    key: str, default: int
) -> Callable[[Mapping[str, Any], int | None], list[str]]:
    """EmbeddingGemma 2: every ``key``-th layer full attention, and the last one too.

    (configuration_embedding_gemma2.py: ``__post_init__`` builds the pattern, then forces the
    last layer to full attention.)
    """
    pattern = pattern_types(key, default)

    def rule(config: Mapping[str, Any], count: int | None) -> list[str]:
        types = pattern(config, count)
        return [*types[:-1], "full_attention"] if types else types

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
        return [rope_type if r else nope_type for r in llama4_no_rope_layers(config, count)]

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


def full_then_linear(config: Mapping[str, Any], count: int | None) -> list[str]:
    """MiniMax-Text-01: even layers full attention, odd ones linear (configuration_minimax.py)."""
    return ["linear_attention" if i % 2 else "full_attention" for i in range(count or 0)]


def olmo_hybrid_types(config: Mapping[str, Any], count: int | None) -> list[str]:
    """OLMo Hybrid: every fourth layer full attention, the others linear.

    The last layer is full attention where that leaves none (configuration_olmo_hybrid.py).
    """
    types = ["full_attention" if i % 4 == 3 else "linear_attention" for i in range(count or 0)]
    if types and "full_attention" not in types:
        types[-1] = "full_attention"
    return types


def cohere2_moe_types(config: Mapping[str, Any], count: int | None) -> list[str]:
    """Cohere 2 MoE: the first ``first_k_dense_replace`` (dense) layers by their own pattern.

    ``prefix_dense_sliding_window_pattern`` (default 1: all full attention), the rest by
    ``sliding_window_pattern`` (default 4) counted from the first of them
    (configuration_cohere2_moe.py, ``__post_init__``).
    """
    n = count or 0
    dense = bounded_int("first_k_dense_replace", config.get("first_k_dense_replace") or 0,
                        "cohere2_moe", minimum=0, maximum=n)  # fmt: skip
    prefix = pattern_types("prefix_dense_sliding_window_pattern", 1)(config, dense)
    return prefix + pattern_types("sliding_window_pattern", 4)(config, n - dense)


def flint_types(config: Mapping[str, Any], count: int | None) -> list[str]:
    """Flint: layers 0, 1, every fourth from 1 and the last full attention, the others sliding.

    (configuration_flint.py, ``__post_init__``.)
    """
    n = count or 0
    return ["full_attention" if i < 2 or i % 4 == 1 or i == n - 1 else "sliding_attention"
            for i in range(n)]  # fmt: skip


def lfm3_types(config: Mapping[str, Any], count: int | None) -> list[str]:
    """LFM3: in each block of four, a conv layer, another, full attention, then sliding window.

    Layer 0 is a conv layer (configuration_lfm3.py: ``i % 4 == 2`` full, ``i % 4 == 0`` and
    ``i > 0`` sliding, else ``conv``).
    """
    return ["full_attention" if i % 4 == 2 else "sliding_attention" if i % 4 == 0 and i > 0
            else "conv" for i in range(count or 0)]  # fmt: skip


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
