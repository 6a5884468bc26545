r"""The family rows with an exception to transformers' conventions, and the helpers rows share.

Each row says where its family's code decides what its config does not say: a pair layout other
than ``rotate_half``, a rotary width from a family key, layers without RoPE, a query scaling,
M-RoPE sections, MLA's rope part. The rows of families that follow the conventions, and the
assembled :data:`~posenc_ref.models.FAMILIES`, are in :mod:`posenc_ref.models.families`.
"""

from __future__ import annotations

from typing import Any

from .family import Family, Legacy, _absolute, _fraction_of_head
from .rules import (
    _all_full,
    _beam_scalable_softmax,
    _cohere2_layers,
    _every_sixth_and_last,
    _granite_layer_rope_theta,
    _layer_rope_theta,
    _llama4_temperature,
    _llama_4_scaling,
    _no_rope_layers,
    _no_rope_types,
    _pattern_types,
    _rope_only_when,
    _rotate_types,
    _sliding_layers_if_any,
    _sliding_layers_only,
)

__all__ = ["EXCEPTIONS"]


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


def _twice_hidden_per_head(config: dict[str, Any]) -> int | None:
    """Zamba 2's config class: ``attention_head_dim = 2 * hidden_size // num_attention_heads``."""
    hidden, heads = config.get("hidden_size"), config.get("num_attention_heads")
    if isinstance(hidden, int) and isinstance(heads, int) and heads > 0:
        return 2 * hidden // heads
    return None


def _rotate_every_two(name: str) -> Family:
    """GPT-J and CodeGen: rotate_every_two on the first rotary_dim coordinates, base fixed."""
    return Family(
        layout="interleaved",
        fixed_theta=10000.0,
        aliases={"max_position_embeddings": "n_positions", "hidden_size": "n_embd",
                 "num_attention_heads": "n_head", "num_hidden_layers": "n_layer"},
        defaults={"rotary_dim": 64},
        legacy_keys={"rotary_dim": Legacy(
            "rotary_dim", _absolute, "the rotary width (null: the whole head), rotate_every_two")},
        source=f"modeling_{name}.py: rotate_every_two (pairs 2i, 2i+1) on the first rotary_dim "
        "coordinates, sin/cos from create_sinusoidal_positions(base 10000)",
    )  # fmt: skip


_GEMMA3_THETA = {"full_attention": 1_000_000.0, "sliding_attention": 10_000.0}

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

# Families with an exception to the conventions (each says where its code decides it).
EXCEPTIONS: dict[str, Family] = {
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
        aliases={"max_position_embeddings": "model_max_length"},
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
        rope_keys=frozenset({"llama_4_scaling_beta", "max_position_embeddings",
                             "original_max_position_embeddings"}),
        query_scale=_llama_4_scaling,
    ),
    # --- position-dependent query scaling
    "ministral3": Family(
        theta=1_000_000.0,
        head_dim=128,
        rope={"rope_type": "yarn", "factor": 16.0, "original_max_position_embeddings": 16384,
              "max_position_embeddings": 262144, "beta_fast": 32.0, "beta_slow": 1.0,
              "mscale_all_dim": 1.0, "mscale": 1.0, "llama_4_scaling_beta": 0.1},
        rope_keys=frozenset({"llama_4_scaling_beta", "max_position_embeddings",
                             "original_max_position_embeddings"}),
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
        normalized_after=lambda config: bool(config.get("use_qk_norm", True)),
        reads=frozenset({"no_rope_layers", "no_rope_layer_interval", "attn_temperature_tuning",
                         "attn_scale", "floor_scale", "use_qk_norm"}),
        source="modeling_llama4.py: the pairs (2i, 2i+1) as complex numbers (view_as_complex) "
        "times freqs_cis in the layers where no_rope_layers[i] is 1; the others take no rotation "
        "and, with attn_temperature_tuning, scale their queries by 1 + attn_scale "
        "ln(1 + floor((t + 1) / floor_scale)); with use_qk_norm, q and k are L2-normalized "
        "right after the rotation (an attention factor cancels)",
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
    "muse_glimmer_text": Family(
        head_dim=128,
        rope_layers=_layer_rope_theta,
        reads=frozenset({"layer_rope_theta"}),
        source="modeling_muse_glimmer.py: rotate_half in the layers whose layer_rope_theta is "
        "not 0 (default: every fourth counted back from the last has none)",
    ),
    "muse_spark_text": Family(
        head_dim=64,
        theta=500_000.0,
        rope_layers=_layer_rope_theta,
        reads=frozenset({"layer_rope_theta"}),
        source="modeling_muse_spark.py: rotate_half in the layers whose layer_rope_theta is not "
        "0 (default: every fourth counted back from the last has none)",
    ),
    "lfm3": Family(
        theta=1_000_000.0,
        head_dim=128,
        rope={"sliding_attention": {"rope_type": "default", "rope_theta": 10_000.0},
              "full_attention": {"rope_type": "proportional", "rope_theta": 1_000_000.0,
                                 "partial_rotary_factor": 0.5}},
        rope_layers=_rotate_types("full_attention", "sliding_attention"),
        source="modeling_lfm3.py: rotate_half with one table per layer type ('proportional' in "
        "the full-attention layers); its conv layers take no position",
    ),
    "granite_swa": Family(
        rope_layers=_granite_layer_rope_theta,
        reads=frozenset({"layer_rope_theta"}),
        source="modeling_granite_swa.py: rotate_half with layer_rope_theta[i] as layer i's base, "
        "no rotation where it is 0",
    ),
    "granitemoe_swa": Family(
        rope_layers=_granite_layer_rope_theta,
        reads=frozenset({"layer_rope_theta"}),
        source="modeling_granitemoe_swa.py: rotate_half with layer_rope_theta[i] as layer i's "
        "base, no rotation where it is 0",
    ),
    # --- a norm right after the rotation
    "hunyuan_v1_dense": Family(
        normalized_after=lambda config: True,
        source="modeling_hunyuan_v1_dense.py: rotate_half, then query_layernorm / key_layernorm "
        "(RMSNorm per head) on the rotated states",
    ),
    "hunyuan_v1_moe": Family(
        normalized_after=lambda config: True,
        source="modeling_hunyuan_v1_moe.py: rotate_half, then query_layernorm / key_layernorm "
        "(RMSNorm per head) on the rotated states",
    ),
    # --- the other direction
    "nanochat": Family(
        clockwise=True,
        normalized_after=lambda config: True,
        source="modeling_nanochat.py: its rotate_half returns cat(x2, -x1), a rotation by -t w_i; "
        "q_norm / k_norm (RMSNorm) follow the rotation",
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
        nope_query_scale=_beam_scalable_softmax,
        source="modeling_beam.py: rotate_half in the sliding-window layers; the full-attention "
        "layers' rope_parameters are null, and those layers scale their queries by "
        "(1 + (t + 1) / 2048) ** 0.1",
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
    # --- RoPE only with position_embedding_type
    "esm": Family(
        no_rope_when=_rope_only_when(
            "position_embedding_type", "rotary", "learned absolute position embeddings", "absolute"
        ),
        only_default="modeling_esm.py computes its frequencies from rope_theta alone "
        "(compute_default_rope_parameters)",
        source="modeling_esm.py: rotate_half on the whole head when position_embedding_type is "
        "'rotary', learned absolute positions otherwise",
    ),
    "granitemoehybrid": Family(
        no_rope_when=_rope_only_when(
            "position_embedding_type", "rope",
            "no positional encoding: the attention layers take no position and the Mamba-2 "
            "layers carry order",
        ),
        source="modeling_granitemoehybrid.py: rotate_half on the whole head of the attention "
        "layers when position_embedding_type is 'rope' (the default null builds no rotary "
        "module)",
    ),
    "recurrent_gemma": Family(
        head_dim=256,
        partial=0.5,
        only_default="RecurrentGemmaRotaryEmbedding raises for any other type",
        source="modeling_recurrent_gemma.py: rotate_half on the first half of the head in the "
        "attention blocks (every third block by default); the recurrent blocks take no position",
    ),
    "zamba2": Family(
        aliases={"head_dim": "attention_head_dim"},
        defaults={"attention_head_dim": _twice_hidden_per_head},
        no_rope_when=_rope_only_when(
            "use_mem_rope", True,
            "no positional encoding: its shared attention blocks take no position and the "
            "Mamba-2 layers carry order", False,
        ),
        reads=frozenset({"use_mem_rope"}),
        source="modeling_zamba2.py: rotate_half on the whole head of its shared attention "
        "blocks when use_mem_rope; the heads are attention_head_dim = 2 hidden_size / "
        "num_attention_heads wide (the attention reads the block input concatenated with the "
        "first embedding)",
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
    "gptj": _rotate_every_two("gptj"),
    "codegen": _rotate_every_two("codegen"),
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
    # --- M-RoPE variants: assignments other than Qwen2-VL's and Qwen3-VL's (posenc_ref.mrope)
    "cohere_compass_text": Family(
        mrope="interleaved", mrope_section=(24, 20, 20), layer_types=_all_full,
        source="modeling_cohere_compass.py: rotate_half; recomposition_frequencies keeps the time "
        "row's table and overwrites pairs 1, 4, ... (< 3 * mrope_section[1]) with height's and "
        "2, 5, ... (< 3 * mrope_section[2]) with width's, per layer type (Qwen3-VL's rule)",
    ),
    "qwen4_exp_text": Family(
        head_dim=256, mrope="interleaved", mrope_section=(11, 11, 10),
        rope_layers=_rotate_types("indexed_attention", "full_attention"),
        layer_types=_pattern_types(
            "full_attention_interval", 4, "linear_attention", "indexed_attention"),
        reads=frozenset({"full_attention_interval"}),
        source="modeling_qwen4_exp.py: rotate_half on the rotary part of the attention layers "
        "(indexed_attention; the config class renames full_attention so), Qwen3-VL's "
        "interleaved rule, which reads mrope_section[1:] only (time takes every other pair: "
        "107 of 128 with the defaults); the linear_attention (gated DeltaNet) layers take no "
        "position",
    ),
    "ernie4_5_vl_moe_text": Family(
        layout="interleaved", theta=500_000.0,
        mrope="alternating", mrope_section=(22, 22, 20), mrope_order=(1, 2, 0),
        only_default="its rotary module raises for any other rope_type",
        source="modeling_ernie4_5_vl_moe.py: pairs (2i, 2i+1) (rotate_half_text) on the whole "
        "head; mrope_section is (height, width, time): the first height + width frequencies "
        "alternate between the height and width rows (pre-rotated inv_freq, stacked back), the "
        "last time ones take the time row; its rotary module raises for any rope_type but "
        "'default'",
    ),
    "neomme": Family(
        theta={"full_attention": 1_000_000.0, "sliding_attention": 10_000.0},
        partial={"full_attention": 0.25, "sliding_attention": 1.0},
        head_dim=64,
        rope=_types(full_attention=(1e6, 0.25), sliding_attention=(1e4, 1.0)),
        layer_types=_every_sixth_and_last,
        mrope="alternating_2d",
        source="modeling_neomme.py: rotate_half on int(head_dim * partial_rotary_factor) "
        "coordinates, one table per layer type; two position rows (row, column): even pairs take "
        "the first, odd pairs the second (recomposition_frequencies); no mrope_section",
    ),
}  # fmt: skip
"""``model_type`` -> the row of a family with an exception to transformers' conventions."""
