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
    "mistral_large4_text": refused(
        "learned scales of the inverse frequencies (LeRoPE: inv_freq * exp(alpha), alpha the "
        "checkpoint tensor model.language_model.rotary_emb.alpha of qk_rope_head_dim / 2 values, "
        "model.rotary_emb.alpha in a text-only model) and a learned softmax scaling: the "
        "frequencies depend on checkpoint weights, not only on the config",
        "modeling_mistral_large4.py: LeRoPE's learned scales of the frequencies",
    ),
    "dots3_note_text": refused(
        "MLA whose head widths differ by layer type (per_layer_config), with the rope part's "
        "pairs read interleaved and written in half order",
        "modeling_dots3_note.py: MLA with per-layer-type head widths",
    ),
    # vision towers: a 2-D RoPE over the patch grid, not a 1-D one (layout= cannot stand in)
    **{
        vision: refused(
            f"a vision encoder's 2-D (axial) RoPE over its patch grid: "
            f"posenc_ref.axial.apply_axial_rope with scheme {scheme!r} rotates it (the RoPE on a "
            "patch grid page derives it); the config reader does not read vision configs into a "
            "scheme yet",
            f"modeling_{folder}.py: the vision tower's rotary embedding over (height, width)",
        )
        for vision, scheme, folder in (
            ("pixtral", "pixtral", "pixtral"),
            ("qwen2_vl_vision", "qwen2_vl", "qwen2_vl"),
            ("qwen2_5_vl_vision", "qwen2_5_vl", "qwen2_5_vl"),
            ("qwen3_vl_vision", "qwen3_vl", "qwen3_vl"),
            ("llama4_vision_model", "llama4", "llama4"),
            ("mlcd_vision_model", "mlcd", "mlcd"),
            ("sam2_vision_model", "sam2_video", "sam2"),
            ("dinov3_vit", "dinov3_vit", "dinov3_vit"),
        )
    },
}
"""``model_type`` -> the row of a RoPE family whose RoPE needs a feature posenc_ref lacks."""
