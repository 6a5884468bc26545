r"""RoPE families whose config class reads a released ``config.json`` its own way: rows.

Their code follows transformers' conventions, but their config class does not read a released
file as the conventions would: it ignores the file's top-level RoPE keys (MiMo-V2-Flash), applies
the older flat ``rope_scaling`` to one layer type only (OLMo 3), or reads keys for something other
than the RoPE (GLM-4.5's ``use_qk_norm``). Each row cites the file and function whose behaviour it
states; each is proven on the released config by the corpus test (tests/test_real_configs.py).
"""

from __future__ import annotations

from .. import _rewrites as rewrites
from .. import _rules as rules
from ..family import Family
from ..traits import ConfigClass, Defaults, Ignored, LayerTypes, ReadAs, ReadElsewhere, ScaledType
from .conventional import MODERNBERT_ROPE, MODERNBERT_THETA

__all__ = ["CONFIG_CLASSES"]

per_type = rules.rope_by_layer_type

_MIMO_IGNORED = {
    "rope_theta": "MiMoV2FlashConfig.convert_rope_params_to_dict returns its kwargs untouched: the "
    "full-attention base is rope_parameters' (default 5e6)",
    "swa_rope_theta": "the sliding-window base is rope_parameters' (default 1e4)",
    "partial_rotary_factor": "read from rope_parameters per layer type (default 0.334)",
    "hybrid_layer_pattern": "layer_types is built in __post_init__ (the first and every sixth "
    "layer full attention)",
}

# the keys only ModernBERT's classes read (AFMoE's reads global_attn_every_n_layers too)
_MODERNBERT_KEYS = frozenset({"global_rope_theta", "local_rope_theta"})
_MODERNBERT_IGNORED = Ignored(
    {"rope_theta": "ModernBertConfig gives each layer type its base from rope_parameters, else "
     "global_rope_theta (full attention) and local_rope_theta (sliding window)"},
    compare={"rope_theta": ("full_attention", "base")},
)  # fmt: skip


def modernbert(name: str) -> Family:
    """ModernBERT and its decoder: the same config class rewrite, the same rotate_half."""
    return Family(
        theta=MODERNBERT_THETA,
        rope=MODERNBERT_ROPE,
        traits=(
            ConfigClass(rewrites.modernbert_config, _MODERNBERT_KEYS),
            _MODERNBERT_IGNORED,
            Defaults({"max_position_embeddings": 8192}),
        ),
        source=f"modeling_{name}.py: rotate_half, one table per layer type; "
        f"configuration_{name}.py: convert_rope_params_to_dict updates both layer types' "
        "default RoPE with a legacy rope_scaling and gives them global_rope_theta and "
        "local_rope_theta",
    )


CONFIG_CLASSES: dict[str, Family] = {
    "olmo3": Family(
        theta=500_000.0,
        rope=per_type(sliding=(5e5, None), full=(5e5, None)),
        traits=(ScaledType("full_attention", 500_000.0), LayerTypes(rules.every_nth_full(4))),
        source="modeling_olmo3.py: rotate_half, one table per layer type; configuration_olmo3.py: "
        "Olmo3Config.convert_rope_params_to_dict updates only rope_parameters['full_attention'] "
        "with a legacy rope_scaling, and gives the sliding-window layers default_theta (5e5)",
    ),
    "mimo_v2_flash": Family(
        head_dim=192,
        rope=per_type(full=(5e6, 0.334), sliding=(1e4, 0.334)),
        traits=(
            LayerTypes(rules.first_and_every(6)),
            Ignored(
                _MIMO_IGNORED,
                compare={
                    "rope_theta": ("full_attention", "base"),
                    "swa_rope_theta": ("sliding_attention", "base"),
                    "partial_rotary_factor": (None, "partial"),
                },
            ),
        ),
        source="modeling_mimo_v2_flash.py: rotate_half on int(head_dim * partial_rotary_factor) "
        "coordinates, one table per layer type; configuration_mimo_v2_flash.py: "
        "MiMoV2FlashConfig.__post_init__ fills rope_parameters per layer type and layer_types",
    ),  # fmt: skip
    "glm4_moe": Family(
        partial=0.5,
        traits=(
            ReadElsewhere(
                {
                    "use_qk_norm": "Glm4MoeAttention normalizes q and k per head "
                    "before the rotation: the RoPE is unchanged"
                }
            ),
        ),
        source="modeling_glm4_moe.py: rotate_half on the first int(head_dim * "
        "partial_rotary_factor) coordinates",
    ),  # fmt: skip
    "gemma2": Family(
        head_dim=256,
        traits=(LayerTypes(rules.every_nth_full(2)),),
        source="modeling_gemma2.py: rotate_half in every layer; configuration_gemma2.py builds "
        "layer_types (every second layer full attention) where the config has none",
    ),
    "modernbert": modernbert("modernbert"),
    "modernbert-decoder": modernbert("modernbert_decoder"),
    "step3p5": Family(
        head_dim=128,
        rope=per_type(full=(1e4, None)),
        traits=(ConfigClass(rewrites.step3p5_config, frozenset({"partial_rotary_factors"})),),
        source="modeling_step3p7.py: rotate_half on int(head_dim * partial_rotary_factor) "
        "coordinates, one table per layer type; configuration_step3p7.py: "
        "Step3p7TextConfig.__post_init__ builds each layer type's RoPE dict from rope_theta and "
        "partial_rotary_factors (numbers or per-layer lists) and rope_scaling (full attention)",
    ),
    "ultrabert": Family(
        rope=per_type(sliding=(1e4, None), full=(2.56e6, None)),
        traits=(ConfigClass(rewrites.ultrabert_config, frozenset({"attention_windows"})),),
        source="modeling_ultrabert.py: rotate_half, one table per layer type; "
        "configuration_ultrabert.py: UltraBertConfig.__post_init__ builds layer_types from "
        "attention_windows (else every third layer full) and the RoPE dicts from a per-layer "
        "rope_theta list where rope_parameters is absent",
    ),
    "minimax_m3_vl": Family(
        traits=(ReadAs("minimax_m3_vl_text"),),
        source="modeling_minimax_m3_vl.py: the language model's rotary embedding, as "
        "minimax_m3_vl_text's (a released config holds the text keys at its top level)",
    ),
}
"""``model_type`` -> the row of a family whose config class reads a released file its own way."""
