r"""The RoPE families posenc_ref does not implement: the feature each needs.

``rope_spec`` refuses their configs with ``NotImplementedError`` naming the feature, also with
``layout=``, which could not stand in for it (:data:`~posenc_ref.models.NOT_IMPLEMENTED`).
"""

from __future__ import annotations

from ..family import Family
from ..traits import RopeNotImplemented

__all__ = ["NOT_IMPLEMENTED_ROWS"]


def refused(feature: str, source: str) -> Family:
    """The row of a family whose RoPE needs ``feature``, decided in ``source``."""
    return Family(traits=(RopeNotImplemented(feature),), source=source)


NOT_IMPLEMENTED_ROWS: dict[str, Family] = {
    "hunyuan_vl_text": refused(
        "an M-RoPE that is not a rotation of pairs. transformers 5.23's "
        "HunYuanVLRotaryEmbedding.recomposition_frequencies doubles the table (cat(freq, freq), "
        "the rotate_half layout) and splits the doubled table by 2 * mrope_section[j] "
        "coordinates, chunk j taking position row j mod len(mrope_section); the sections sum to "
        "head_dim // 2, so with [16, 16, 16, 16] coordinate c of pair c (< 32) turns by row 0's "
        "angle and its partner c + 64 by row 2's (pairs 32..63: rows 1 and 3). With distinct "
        "position rows cos and sin differ between the two coordinates of a pair; posenc_ref's "
        "M-RoPE turns each pair by one row's angle (equal rows, text, reduce to plain RoPE "
        "followed by the query/key RMSNorm of hunyuan_v1_dense)",
        "modeling_hunyuan_vl.py: HunYuanVLRotaryEmbedding.recomposition_frequencies",
    ),
    "qwen2_5_omni_dit": Family(
        traits=(
            RopeNotImplemented(
                "RoPE on the first attention head only: the DiT rotates query[:, :1] and "
                "key[:, :1] (its pairs read interleaved, 2i and 2i + 1, and written back in half "
                "order) and leaves every other head unrotated ('only first head is applied with "
                "RoPE', as its code says); a RopeSpec rotates every head"
            ),
        ),
        folder="qwen2_5_omni",
        source="modeling_qwen2_5_omni.py: DiTAttention.forward rotates the first head only",
    ),
    # vision towers: a 2-D RoPE over the patch grid, not a 1-D one (layout= cannot stand in)
    **{
        vision: refused(
            "a vision encoder's 2-D (axial) RoPE over its patch grid, not a 1-D RoPE: read it "
            f"with posenc_ref.models.axial_spec(config) (scheme {scheme!r} of "
            "posenc_ref.axial: its head width, base, grid positions and patch order), and "
            "rotate with posenc_ref.axial.apply_axial_rope",
            f"modeling_{folder}.py: the vision tower's rotary embedding over (height, width)",
        )
        for vision, scheme, folder in (
            ("pixtral", "pixtral", "pixtral"),
            ("qwen2_vl_vision", "qwen2_vl", "qwen2_vl"),
            ("qwen2_5_vl_vision", "qwen2_vl", "qwen2_5_vl"),
            ("qwen3_vl_vision", "qwen2_vl", "qwen3_vl"),
            ("qwen3_vl_moe_vision", "qwen2_vl", "qwen3_vl_moe"),
            ("qwen3_5_vision", "qwen2_vl", "qwen3_5"),
            ("qwen3_5_moe_vision", "qwen2_vl", "qwen3_5_moe"),
            ("llama4_vision_model", "llama4", "llama4"),
            ("mlcd_vision_model", "qwen2_vl", "mlcd"),
            ("dinov3_vit", "dinov3", "dinov3_vit"),
        )
    },
    "sam2_vision_model": refused(
        "a 2-D (axial) RoPE over a patch grid, not a 1-D RoPE: posenc_ref.axial's scheme 'sam2' "
        "rotates it (apply_axial_rope, with the memory attention's feature grid, "
        "memory_attention_rope_feat_sizes); posenc_ref.models.axial_spec does not read SAM 2 "
        "configs",
        "modeling_sam2.py: the memory attention's rotary embedding over (height, width)",
    ),
}
"""``model_type`` -> the row of a RoPE family whose RoPE needs a feature posenc_ref lacks."""
