r"""The RoPE families with an exception to transformers' conventions: rows with traits.

Each row says where its family's code decides what its config does not say, and carries one trait
(:mod:`posenc_ref.models.traits`) per kind of exception: a rotary width from a family key, MLA's
rope part, M-RoPE sections, layers without RoPE, a query scaling, a norm after the rotation, RoPE
switched by a config key, ... A family with a known kind of exception is one row here.
"""

from __future__ import annotations

from .. import _rules as rules
from .._rewrites import gemma4_config
from ..family import Family
from ..sparse_traits import Indexer
from ..traits import (
    Aliases,
    AlibiBias,
    AlphaType,
    Clockwise,
    ConfigClass,
    Conflicts,
    Defaults,
    Ignored,
    LayerHeadDims,
    LayerTypes,
    Legacy,
    LegacyKeys,
    LegacyTypes,
    LocalBase,
    Mla,
    MRope,
    NormAfter,
    Notes,
    OnlyDefault,
    QueryScaling,
    ReadAs,
    RopeLayers,
    SwitchedBy,
    Table,
)
from .builders import mla, rotate_every_two
from .conventional import GEMMA3_ROPE, GEMMA3_THETA

__all__ = ["EXCEPTIONS"]

per_type = rules.rope_by_layer_type

# --------------------------------------------------------------------------- shared parts of rows

_VL = MRope("consecutive", (16, 24, 24))
_MROPE_NAME = LegacyTypes({"mrope": "default"})
_QWEN3_VL = MRope("interleaved", (24, 20, 20))

_GEMMA4_ROPE = {
    "sliding_attention": {"rope_type": "default", "rope_theta": 10_000.0},
    "full_attention": {"rope_type": "proportional", "partial_rotary_factor": 0.25,
                       "rope_theta": 1_000_000.0},
}  # fmt: skip
_GEMMA4_WIDTHS = LayerHeadDims({"full_attention": ("global_head_dim", 512)})
# configuration_gemma4.py: every sixth layer and the last full attention where none are given
_GEMMA4 = (_GEMMA4_WIDTHS, LayerTypes(rules.every_sixth_and_last), ConfigClass(gemma4_config))
_GEMMA4_SOURCE = (
    "modeling_{}.py: rotate_half with one rotary table per layer type; the full-attention "
    "layers' heads are global_head_dim wide (a per_layer_config override of head_dim) and use "
    "'proportional' RoPE"
)

_NO_ROPE_LAYERS = RopeLayers(
    rules.no_rope_layers, frozenset({"no_rope_layers", "no_rope_layer_interval"})
)
# Where a family's layers rotate or not by whether a window is set, an absent sliding_window is
# the class's default (a window), not null (tests/test_class_data.py checks the value)
_WINDOW_4096 = Defaults({"sliding_window": 4096})
_FULL_ONLY = RopeLayers(rules.rotate_types("full_attention"))
_EVERY_4TH_FULL = LayerTypes(
    rules.pattern_types("full_attention_interval", 4, "linear_attention"),
    frozenset({"full_attention_interval"}),
)
_SLIDING_PATTERN = LayerTypes(
    rules.pattern_types("sliding_window_pattern", 4), frozenset({"sliding_window_pattern"})
)
_GEMMA3_PATTERN = LayerTypes(
    rules.pattern_types("sliding_window_pattern", 6), frozenset({"sliding_window_pattern"})
)
_LAYER_ROPE_THETA = frozenset({"layer_rope_theta"})
_LLAMA_4_SCALING = QueryScaling(
    rotating=rules.llama_4_scaling,
    rope_keys=frozenset({"llama_4_scaling_beta", "max_position_embeddings",
                         "original_max_position_embeddings"}),
)  # fmt: skip

# --------------------------------------------------------------------------- the rows

EXCEPTIONS: dict[str, Family] = {
    # --- a rotary width and a base from the family's own (older) keys
    "gpt_neox": Family(
        partial=0.25,
        traits=(LegacyKeys({
            "rotary_pct": Legacy("partial_rotary_factor", None, "partial_rotary_factor (old name)"),
            "rotary_emb_base": Legacy("rope_theta", None, "rope_theta (old name)"),
        }),),
        source="modeling_gpt_neox.py: rotate_half on the first int(head_dim * "
        "partial_rotary_factor) coordinates; configuration_gpt_neox.py reads the older "
        "rotary_pct and rotary_emb_base",
    ),  # fmt: skip
    "gemma3_text": Family(
        theta=GEMMA3_THETA,
        head_dim=256,
        traits=(LocalBase("rope_local_base_freq"), _GEMMA3_PATTERN),
        source="modeling_gemma3.py: one rotary table per layer type; configuration_gemma3.py "
        "reads the older rope_theta + rope_local_base_freq, and sliding_window_pattern through "
        "kwargs.get (every sixth layer full attention)",
    ),
    "phi3": Family(
        traits=(LegacyTypes({"su": "longrope", "yarn": "longrope"}),),
        source="modeling_phi3.py: rotate_half on the first rotary_dim coordinates; "
        "configuration_phi3.py maps the old types 'su' and 'yarn' to 'longrope'",
    ),
    "qwen2_vl": Family(theta=1_000_000.0, traits=(_VL, _MROPE_NAME),
                       source="modeling_qwen2_vl.py: consecutive mrope_section, rotate_half"),
    "qwen2_5_vl": Family(theta=1_000_000.0, traits=(_VL, _MROPE_NAME),
                         source="modeling_qwen2_5_vl.py: consecutive mrope_section, rotate_half"),
    "qwen3_vl": Family(
        theta=500_000.0, head_dim=128, traits=(_QWEN3_VL,),
        source="modeling_qwen3_vl.py: interleaved mrope_section, rotate_half",
    ),
    "qwen3_vl_moe_text": Family(
        theta=500_000.0, traits=(_QWEN3_VL,),
        source="modeling_qwen3_vl_moe.py: interleaved mrope_section, rotate_half",
    ),
    "qwen3_omni_moe_text": Family(
        theta=1_000_000.0, traits=(_QWEN3_VL,),
        source="modeling_qwen3_omni_moe.py: interleaved mrope_section, rotate_half",
    ),
    "cosmos3_edge_text": Family(
        theta=100_000_000.0, head_dim=128, traits=(_QWEN3_VL,),
        source="modeling_cosmos3_edge.py: interleaved mrope_section, rotate_half",
    ),
    "qwen2_5_omni_text": Family(
        theta=1_000_000.0, traits=(_VL, _MROPE_NAME),
        source="modeling_qwen2_5_omni.py: consecutive mrope_section, rotate_half",
    ),
    "paddleocr_vl_text": Family(
        theta=500_000.0, head_dim=128, traits=(_VL, _MROPE_NAME),
        source="modeling_paddleocr_vl.py: consecutive mrope_section, rotate_half",
    ),
    "glm4v_text": Family(
        layout="interleaved", traits=(MRope("consecutive", (8, 12, 12)),),
        source="modeling_glm4v.py: consecutive mrope_section, pairs (2i, 2i+1) "
        "(rotate_half_llm, repeat_interleave) on the rotary part",
    ),
    "glm4v_moe_text": Family(
        partial=0.5, traits=(MRope("consecutive", (8, 12, 12)),),
        source="modeling_glm4v_moe.py: consecutive mrope_section, rotate_half on the rotary part "
        "(unlike GLM-4V, whose pairs are interleaved)",
    ),
    "glm_ocr_text": Family(
        layout="interleaved", traits=(MRope("consecutive", (8, 12, 12)),),
        source="modeling_glm_ocr.py: consecutive mrope_section, pairs (2i, 2i+1) on the "
        "rotary part",
    ),
    "glm_image_text": Family(
        traits=(MRope("consecutive", (8, 12, 12)),),
        source="modeling_glm_image.py: consecutive mrope_section, rotate_half on the rotary part",
    ),
    "qwen3_5": Family(
        head_dim=256, partial=0.25,
        traits=(MRope("interleaved", (11, 11, 10)), _FULL_ONLY, _EVERY_4TH_FULL),
        source="modeling_qwen3_5.py: interleaved mrope_section on the rotary part of the "
        "full_attention layers; the linear_attention (gated DeltaNet) layers take no position",
    ),
    "qwen3_5_moe": Family(
        head_dim=256, partial=0.25,
        traits=(MRope("interleaved", (11, 11, 10)), _FULL_ONLY, _EVERY_4TH_FULL),
        source="modeling_qwen3_5_moe.py: interleaved mrope_section on the rotary part of the "
        "full_attention layers; the linear_attention layers take no position",
    ),
    # --- MLA
    "deepseek_v2": Family(
        layout="interleaved",
        traits=(Mla(), Defaults({"qk_rope_head_dim": 64, "qk_nope_head_dim": 128})),
        source="modeling_deepseek_v2.py: the rope part (last in each head) as complex numbers "
        "of the pairs (2i, 2i+1), multiplied by the rotation and written back in place",
    ),
    "deepseek_v3": mla("deepseek_v3", "flag"),
    # the indexers: modeling_deepseek_v32.py (apply_rotary_pos_emb: "NON-interleaved") and
    # modeling_glm_moe_dsa.py (apply_rotary_pos_emb_interleave), the rope part split off first
    "deepseek_v32": mla("deepseek_v32", "interleave", Indexer("half")),
    "youtu": mla("youtu", "flag"),
    "axk1": mla("axk1", "flag"),
    # AXK2Indexer: rotate_half on the first qk_rope_head_dim of its heads, in every layer
    "axk2": mla("axk2", "interleave", Indexer("half"), widths=(32, 64)),
    "glm4_moe_lite": mla("glm4_moe_lite", "flag", widths=(64, 192)),
    "glm_moe_dsa": mla("glm_moe_dsa", "interleave",
                       Indexer("interleaved", "half", flag="indexer_rope_interleave"),
                       widths=(64, 192)),
    "bailing_hybrid": mla(
        "bailing_hybrid", "interleave", Aliases({"max_position_embeddings": "model_max_length"}),
        _FULL_ONLY, theta=6_000_000.0,
    ),
    # its rotary module reads head_dim (default 64), which must be the rope part's width
    "longcat_flash": mla(
        "longcat_flash", "interleave", Mla(partial_of=("head_dim",)), Defaults({"head_dim": 64}),
        theta=10_000_000.0,
    ),
    "minicpm3": mla("minicpm3", "half", widths=(32, 64)),
    # HYV4Indexer: rotate_half on the *last* qk_rope_head_dim of its heads ("flipped")
    "hy_v4": mla("hy_v4", "half", Indexer("half", place="last"), widths=(64, 192)),
    "mistral4": mla(
        "mistral4", "flag", Mla(partial_of=("qk_nope_head_dim", "qk_rope_head_dim")),
        _LLAMA_4_SCALING, widths=(64, 64),
        rope={"rope_type": "yarn", "factor": 128.0, "original_max_position_embeddings": 8192,
              "max_position_embeddings": 1_048_576, "beta_fast": 32.0, "beta_slow": 1.0,
              "mscale_all_dim": 1.0, "mscale": 1.0, "llama_4_scaling_beta": 0.1},
    ),
    # --- position-dependent query scaling
    "ministral3": Family(
        theta=1_000_000.0,
        head_dim=128,
        rope={"rope_type": "yarn", "factor": 16.0, "original_max_position_embeddings": 16384,
              "max_position_embeddings": 262144, "beta_fast": 32.0, "beta_slow": 1.0,
              "mscale_all_dim": 1.0, "mscale": 1.0, "llama_4_scaling_beta": 0.1},
        traits=(_LLAMA_4_SCALING,),
        source="modeling_ministral3.py: rotate_half, then query *= get_llama_4_attn_scale("
        "position_ids, llama_4_scaling_beta, original_max_position_embeddings)",
    ),
    # --- per-layer-type head widths
    "gemma4_text": Family(head_dim=256, rope=_GEMMA4_ROPE, traits=_GEMMA4,
                          source=_GEMMA4_SOURCE.format("gemma4")),
    "gemma4_unified_text": Family(head_dim=256, rope=_GEMMA4_ROPE, traits=_GEMMA4,
                                  source=_GEMMA4_SOURCE.format("gemma4_unified")),
    "gemma3n_text": Family(
        theta=GEMMA3_THETA, head_dim=256, rope=GEMMA3_ROPE,
        traits=(LayerTypes(rules.every_nth_full(5)),),
        source="modeling_gemma3n.py: rotate_half with one rotary table per layer type; "
        "configuration_gemma3n.py builds layer_types (every fifth layer full attention)",
    ),  # fmt: skip
    # Gemma 4's widths and forced last layer, Gemma 3's RoPE dicts
    "embedding_gemma2_text": Family(
        theta=GEMMA3_THETA,
        head_dim=256,
        rope=GEMMA3_ROPE,
        traits=(
            _GEMMA4_WIDTHS,
            LayerTypes(rules.pattern_and_last("sliding_window_pattern", 6),
                       frozenset({"sliding_window_pattern"})),
            ConfigClass(gemma4_config),
        ),  # fmt: skip
        source="modeling_embedding_gemma2.py: rotate_half with one rotary table per layer type; "
        "the full-attention layers' heads are global_head_dim wide (default 512, a "
        "per_layer_config override of head_dim); configuration_embedding_gemma2.py builds "
        "layer_types from sliding_window_pattern and forces the last layer to full attention",
    ),
    "diffusion_gemma_text": Family(head_dim=256, rope=_GEMMA4_ROPE, traits=_GEMMA4,
                                   source=_GEMMA4_SOURCE.format("diffusion_gemma")),
    # --- layers without RoPE
    "smollm3": Family(
        theta=2_000_000.0,
        traits=(_NO_ROPE_LAYERS,),
        source="modeling_smollm3.py: rotate_half in the layers where no_rope_layers[i] is 1, no "
        "rotation in the others",
    ),
    "llama4_text": Family(
        layout="interleaved",
        theta=500_000.0,
        head_dim=128,
        traits=(
            RopeLayers(rules.llama4_no_rope_layers, _NO_ROPE_LAYERS.reads),
            LayerTypes(rules.no_rope_types("chunked_attention", "full_attention")),
            QueryScaling(nope=rules.llama4_temperature, reads=frozenset({
                "attn_temperature_tuning", "attn_scale", "floor_scale"})),
            NormAfter("use_qk_norm", default=True),
        ),
        source="modeling_llama4.py: the pairs (2i, 2i+1) as complex numbers (view_as_complex) "
        "times freqs_cis in the layers where no_rope_layers[i] is 1; the others take no rotation "
        "and, with attn_temperature_tuning, scale their queries by 1 + attn_scale "
        "ln(1 + floor((t + 1) / floor_scale)); with use_qk_norm, q and k are L2-normalized "
        "right after the rotation (an attention factor cancels)",
    ),
    "cohere2": Family(
        layout="interleaved",
        traits=(RopeLayers(rules.cohere2_layers), _SLIDING_PATTERN, _WINDOW_4096),
        source="modeling_cohere2.py: interleaved pairs in the sliding-window layers only (the "
        "attention rotates when its sliding_window is set)",
    ),
    "cohere2_moe": Family(
        layout="interleaved",
        head_dim=128,
        traits=(
            RopeLayers(rules.cohere2_layers, frozenset({
                "sliding_window_pattern", "prefix_dense_sliding_window_pattern"})),
            LayerTypes(rules.cohere2_moe_types),
            _WINDOW_4096,
        ),
        source="modeling_cohere2_moe.py: interleaved pairs in the sliding-window layers only",
    ),
    "exaone4": Family(
        traits=(RopeLayers(rules.sliding_layers_if_any), _SLIDING_PATTERN, _WINDOW_4096),
        source="modeling_exaone4.py: rotate_half in every layer without a sliding window, else "
        "in the sliding-window layers only",
    ),
    "exaone_moe": Family(
        traits=(RopeLayers(rules.sliding_layers_if_any), _SLIDING_PATTERN, _WINDOW_4096),
        source="modeling_exaone_moe.py: rotate_half in every layer without a sliding window, "
        "else in the sliding-window layers only",
    ),
    "kolibri1": Family(
        head_dim=128,
        traits=(
            RopeLayers(rules.sliding_layers_if_any),
            LayerTypes(rules.every_nth_full(5)),
            Defaults({"sliding_window": 513}),
        ),
        source="modeling_kolibri1.py: rotate_half in every layer without a sliding window, else "
        "in the sliding-window layers only",
    ),
    "flint": Family(
        head_dim=128,
        traits=(RopeLayers(rules.sliding_layers_only), LayerTypes(rules.flint_types)),
        source="modeling_flint.py: rotate_half in the sliding-window layers only",
    ),
    "afmoe": Family(
        head_dim=128,
        traits=(
            RopeLayers(rules.sliding_layers_only),
            LayerTypes(rules.pattern_types("global_attn_every_n_layers", 4),
                       frozenset({"global_attn_every_n_layers"})),
        ),  # fmt: skip
        source="modeling_afmoe.py: rotate_half in the local (sliding-window) layers only",
    ),
    "muse_glimmer_text": Family(
        head_dim=128,
        traits=(RopeLayers(rules.layer_rope_theta, _LAYER_ROPE_THETA),),
        source="modeling_muse_glimmer.py: rotate_half in the layers whose layer_rope_theta is "
        "not 0 (default: every fourth counted back from the last has none)",
    ),
    "muse_spark_text": Family(
        head_dim=64,
        theta=500_000.0,
        traits=(RopeLayers(rules.layer_rope_theta, _LAYER_ROPE_THETA),),
        source="modeling_muse_spark.py: rotate_half in the layers whose layer_rope_theta is not "
        "0 (default: every fourth counted back from the last has none)",
    ),
    "lfm3": Family(
        theta=1_000_000.0,
        head_dim=128,
        rope={"sliding_attention": {"rope_type": "default", "rope_theta": 10_000.0},
              "full_attention": {"rope_type": "proportional", "rope_theta": 1_000_000.0,
                                 "partial_rotary_factor": 0.5}},
        traits=(
            RopeLayers(rules.rotate_types("full_attention", "sliding_attention")),
            LayerTypes(rules.lfm3_types),
        ),
        source="modeling_lfm3.py: rotate_half with one table per layer type ('proportional' in "
        "the full-attention layers); its conv layers take no position",
    ),
    "granite_swa": Family(
        traits=(RopeLayers(rules.granite_layer_rope_theta, _LAYER_ROPE_THETA),),
        source="modeling_granite_swa.py: rotate_half with layer_rope_theta[i] as layer i's base, "
        "no rotation where it is 0",
    ),
    "granitemoe_swa": Family(
        traits=(RopeLayers(rules.granite_layer_rope_theta, _LAYER_ROPE_THETA),),
        source="modeling_granitemoe_swa.py: rotate_half with layer_rope_theta[i] as layer i's "
        "base, no rotation where it is 0",
    ),
    # --- a norm right after the rotation
    "hunyuan_v1_dense": Family(
        traits=(NormAfter(), AlphaType()),
        source="modeling_hunyuan_v1_dense.py: rotate_half, then query_layernorm / key_layernorm "
        "(RMSNorm per head) on the rotated states; a dynamic rope_scaling with alpha is the "
        "static ntk_alpha",
    ),
    "hunyuan_v1_moe": Family(
        traits=(NormAfter(), AlphaType()),
        source="modeling_hunyuan_v1_moe.py: rotate_half, then query_layernorm / key_layernorm "
        "(RMSNorm per head) on the rotated states; a dynamic rope_scaling with alpha is the "
        "static ntk_alpha",
    ),
    # --- the other direction
    "nanochat": Family(
        traits=(Clockwise(), NormAfter()),
        source="modeling_nanochat.py: its rotate_half returns cat(x2, -x1), a rotation by -t w_i; "
        "q_norm / k_norm (RMSNorm) follow the rotation",
    ),
    # hybrids: their linear-attention layers take no position
    "minimax": Family(
        theta=1_000_000.0,
        traits=(_FULL_ONLY, LayerTypes(rules.full_then_linear)),
        source="modeling_minimax.py: rotate_half in the full_attention layers; the "
        "linear_attention (lightning) layers take no position",
    ),
    "olmo_hybrid": Family(
        traits=(_FULL_ONLY, LayerTypes(rules.olmo_hybrid_types)),
        source="modeling_olmo_hybrid.py: rotate_half in the full_attention layers; the "
        "linear_attention layers take no position",
    ),
    "qwen3_next": Family(
        head_dim=256,
        partial=0.25,
        traits=(_FULL_ONLY, _EVERY_4TH_FULL),
        source="modeling_qwen3_next.py: rotate_half on the first quarter of the head in the "
        "full_attention layers; the linear_attention (gated DeltaNet) layers take no position",
    ),
    "beam": Family(
        head_dim=128,
        rope=per_type(sliding=(1e4, None), full_attention=None),
        traits=(
            QueryScaling(nope=rules.beam_scalable_softmax),
            LayerTypes(rules.every_sixth_and_last),
        ),
        source="modeling_beam.py: rotate_half in the sliding-window layers; the full-attention "
        "layers' rope_parameters are null, and those layers scale their queries by "
        "(1 + (t + 1) / 2048) ** 0.1",
    ),
    # --- RoPE or not, by a config key
    "falcon": Family(
        instead="ALiBi attention biases",
        traits=(
            SwitchedBy("alibi", {False: "rope", True: "alibi"}, default=False),
            Aliases({"hidden_size": "n_embed"}),
            AlibiBias(("num_attention_heads", 71), width=("hidden_size", 4544)),
            Notes((  # both pinned by tests/test_encodings.py against transformers 5.23
                "transformers' Falcon builds this bias in bfloat16: slopes and key positions are "
                "rounded to 8 significant bits, so past position 256 neighbouring keys share a "
                "bias (257 is 256); the bias here is exact",
                "transformers 5.23's eager attention path adds the bias twice (to the logits and "
                "again with the mask); its SDPA path adds it once, as here",
            )),
        ),
        source="modeling_falcon.py: rotate_half on the whole head, unless alibi: then "
        "build_alibi_tensor (divided by sqrt(head_dim)) and no rotation",
    ),  # fmt: skip
    "esm": Family(
        encoding="learned",
        traits=(
            SwitchedBy("position_embedding_type", {"rotary": "rope", "absolute": "learned"},
                       default="absolute", refused_elsewhere=False),
            OnlyDefault("modeling_esm.py computes its frequencies from rope_theta alone "
                        "(compute_default_rope_parameters)"),
            # ESM-1b: positions from padding_idx + 1 (create_position_ids_from_input_ids), the
            # table's max_position_embeddings rows counting those; EsmConfig has no pad default
            Table(("max_position_embeddings", 1026), ("hidden_size", 768), offset=None,
                  rows_hold_offset=True),
        ),
        source="modeling_esm.py: rotate_half on the whole head when position_embedding_type is "
        "'rotary', learned absolute positions (from padding_idx + 1) otherwise",
    ),  # fmt: skip
    "granitemoehybrid": Family(
        encoding="nope",
        instead="no positional encoding: the attention layers take no position and the Mamba-2 "
        "layers carry order",
        traits=(
            SwitchedBy("position_embedding_type", {"rope": "rope", None: "nope", "nope": "nope"},
                       refused_elsewhere=False),
        ),
        source="modeling_granitemoehybrid.py: rotate_half on the whole head of the attention "
        "layers when position_embedding_type is 'rope' (the default null builds no rotary "
        "module)",
    ),  # fmt: skip
    "recurrent_gemma": Family(
        partial=0.5,
        traits=(OnlyDefault("RecurrentGemmaRotaryEmbedding raises for any other type"),),
        source="modeling_recurrent_gemma.py: rotate_half on the first half of the head in the "
        "attention blocks (every third block by default); the recurrent blocks take no position",
    ),
    "zamba2": Family(
        encoding="nope",
        instead="no positional encoding: its shared attention blocks take no position and the "
        "Mamba-2 layers carry order",
        traits=(
            SwitchedBy("use_mem_rope", {True: "rope", False: "nope"}, default=False),
            Aliases({"head_dim": "attention_head_dim"}),
            Defaults({"attention_head_dim": rules.twice_hidden_per_head}),
        ),
        source="modeling_zamba2.py: rotate_half on the whole head of its shared attention "
        "blocks when use_mem_rope; the heads are attention_head_dim = 2 hidden_size / "
        "num_attention_heads wide (the attention reads the block input concatenated with the "
        "first embedding)",
    ),
    # --- a rotary width from a family key
    "minimax_m2": Family(
        theta=5_000_000.0,
        head_dim=128,
        traits=(LegacyKeys({"rotary_dim": Legacy(
            "partial_rotary_factor", rules.fraction_of_head,
            "the rotary width, read as partial_rotary_factor = rotary_dim / head_dim")}),),
        source="modeling_minimax_m2.py: rotate_half on the first rotary_dim coordinates; "
        "configuration_minimax_m2.py turns rotary_dim into partial_rotary_factor = rotary_dim / "
        "head_dim",
    ),  # fmt: skip
    "minimax_m3_vl_text": Family(
        theta=5_000_000.0,
        head_dim=128,
        traits=(
            Ignored({"rotary_dim": "a field of its config class that its modeling code never "
                     "reads (the rotary width is int(head_dim * partial_rotary_factor))"},
                    compare={"rotary_dim": (None, "rotary_dim")}),
            LayerTypes(rules.minimax_m3_types, frozenset({"sparse_attention_config"})),
            # MiniMaxM3VLIndexer: rotate_half on the first rotary_dim of its sparse_index_dim heads
            Indexer("half", layer_types=frozenset({"minimax_m3_sparse"})),
            Aliases({"index_head_dim": "sparse_attention_config.sparse_index_dim"}),
        ),
        source="modeling_minimax_m3_vl.py: rotate_half on int(head_dim * partial_rotary_factor) "
        "coordinates",
    ),  # fmt: skip
    "gptj": rotate_every_two("gptj"),
    "codegen": rotate_every_two("codegen"),
    # --- head widths from family keys
    "jetmoe": Family(
        traits=(Aliases({"head_dim": "kv_channels"}), Defaults({"kv_channels": 128})),
        source="modeling_jetmoe.py: rotate_half on the first int(head_dim * "
        "partial_rotary_factor) coordinates; configuration_jetmoe.py: head_dim is kv_channels",
    ),
    "dbrx": Family(
        traits=(
            Aliases({"num_attention_heads": "n_heads", "hidden_size": "d_model",
                     "num_hidden_layers": "n_layers", "max_position_embeddings": "max_seq_len"}),
            Conflicts({"attn_config.rope_theta": (
                "rope_theta", "transformers 5.23's DbrxRotaryEmbedding reads rope_theta (its "
                "rope_parameters, default 10000), never attn_config.rope_theta")}),
        ),
        source="modeling_dbrx.py: rotate_half; configuration_dbrx.py: hidden_size is d_model, "
        "num_attention_heads n_heads; the base is rope_theta, not attn_config.rope_theta",
    ),  # fmt: skip
    "moonshine": Family(
        layout="interleaved",
        partial=0.9,
        traits=(Aliases({"num_attention_heads": "decoder_num_attention_heads",
                         "num_hidden_layers": "decoder_num_hidden_layers"}),),
        source="modeling_moonshine.py: interleaved pairs on int(head_dim * 0.9) coordinates; "
        "configuration_moonshine.py: num_attention_heads is decoder_num_attention_heads",
    ),  # fmt: skip
    # --- M-RoPE variants: assignments other than Qwen2-VL's and Qwen3-VL's (posenc_ref.mrope)
    "cohere_compass_text": Family(
        traits=(MRope("interleaved", (24, 20, 20)), LayerTypes(rules.all_full)),
        source="modeling_cohere_compass.py: rotate_half; recomposition_frequencies keeps the time "
        "row's table and overwrites pairs 1, 4, ... (< 3 * mrope_section[1]) with height's and "
        "2, 5, ... (< 3 * mrope_section[2]) with width's, per layer type (Qwen3-VL's rule)",
    ),
    "qwen4_exp_text": Family(
        head_dim=256,
        traits=(
            MRope("interleaved", (11, 11, 10)),
            RopeLayers(rules.rotate_types("indexed_attention", "full_attention")),
            LayerTypes(rules.pattern_types("full_attention_interval", 4, "linear_attention",
                                           "indexed_attention"),
                       frozenset({"full_attention_interval"})),
        ),
        source="modeling_qwen4_exp.py: rotate_half on the rotary part of the attention layers "
        "(indexed_attention; the config class renames full_attention so), Qwen3-VL's "
        "interleaved rule, which reads mrope_section[1:] only (time takes every other pair: "
        "107 of 128 with the defaults); the linear_attention (gated DeltaNet) layers take no "
        "position",
    ),  # fmt: skip
    "ernie4_5_vl_moe_text": Family(
        layout="interleaved", theta=500_000.0,
        traits=(
            MRope("alternating", (22, 22, 20), order=(1, 2, 0)),
            OnlyDefault("its rotary module raises for any other rope_type"),
        ),
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
        rope=per_type(full=(1e6, 0.25), sliding=(1e4, 1.0)),
        traits=(LayerTypes(rules.every_sixth_and_last), MRope("alternating_2d")),
        source="modeling_neomme.py: rotate_half on int(head_dim * partial_rotary_factor) "
        "coordinates, one table per layer type; two position rows (row, column): even pairs take "
        "the first, odd pairs the second (recomposition_frequencies); no mrope_section",
    ),
    # --- a wrapper's config read as its language model's
    **{
        wrapper: Family(traits=(ReadAs(text),), source=f"modeling_{code}.py: the language model's "
                        f"rotary embedding, as {text}'s")
        for wrapper, text, code in (
            ("gemma3", "gemma3_text", "gemma3"),
            ("qwen2_vl_text", "qwen2_vl", "qwen2_vl"),
            ("qwen2_5_vl_text", "qwen2_5_vl", "qwen2_5_vl"),
            ("qwen3_vl_text", "qwen3_vl", "qwen3_vl"),
            ("qwen3_5_text", "qwen3_5", "qwen3_5"),
            ("qwen3_5_moe_text", "qwen3_5_moe", "qwen3_5_moe"),
        )
    },  # fmt: skip
}  # fmt: skip
"""``model_type`` -> the row of a RoPE family with an exception to transformers' conventions."""
