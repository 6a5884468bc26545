r"""The family table: what a family's code decides and its config does not say.

One row per text rotary family of transformers 5.23 (``model_type`` of the language model). A
row holds the config class's defaults (the values transformers fills in when a ``config.json``
leaves a key out) and the family's *exceptions* to transformers' conventions: a pair layout
other than ``rotate_half``, a rotary width read from a family key, layers without RoPE, a query
scaling, M-RoPE sections. A family that follows the conventions has a row of defaults only.

Every row is proven by running the family's own code (tests/test_models_hf.py, and the sweep over
every family): never assumed from a convention. To add a family that follows the conventions, add
its row here; one with an exception goes in :mod:`posenc_ref.models.exceptions`. To add a RoPE
type, add an entry to :data:`~posenc_ref.models.ROPE_TYPES`.
"""

from __future__ import annotations

from functools import cache
from typing import Any

from .exceptions import _GEMMA3_THETA, EXCEPTIONS, _types
from .family import Family, Legacy, _keys_of

__all__ = ["FAMILIES", "NOT_IMPLEMENTED", "NO_ROPE", "TEXT_MODEL_TYPES", "keys_read_by"]


_NEOX_KEYS = {
    "rotary_pct": Legacy("partial_rotary_factor", None, "partial_rotary_factor (old name)"),
    "rotary_emb_base": Legacy("rope_theta", None, "rope_theta (old name)"),
}

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
    "granitemoe": dict(),
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
    "csm_depth_decoder_model": dict(theta=500_000.0),
    "dots1": dict(),
    "emu3_text_model": dict(theta=1_000_000.0),
    "gpt_neox_japanese": dict(),
    "granite4_vision_text": dict(),
    "gte": dict(theta=160_000.0),
    "jina_embeddings_v3": dict(theta=20_000.0),
    "ministral": dict(),
    "mllama_text_model": dict(theta=500_000.0),
    "modernbert": dict(theta={"full_attention": 160_000.0, "sliding_attention": 10_000.0},
        rope=_types(sliding_attention=(1e4, None), full_attention=(1.6e5, None))),
    "nemotron": dict(partial=0.5),
    "nomic_bert": dict(theta=1000.0),
    "openai_privacy_filter": dict(layout="interleaved", theta=150_000.0, head_dim=64,
        rope={"rope_type": "yarn",
        "factor": 32.0, "beta_fast": 32.0, "beta_slow": 1.0, "truncate": False,
        "original_max_position_embeddings": 4096}),
    "phi4_multimodal": dict(),
    "unlimited_ocr_text": dict(),
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
    # rows added after the sweep read each family's code (tests/hf_sweep)
    "bamba": dict(partial=0.5),
    "blt_local_encoder": dict(layout="interleaved", theta=500_000.0),
    "blt_local_decoder": dict(layout="interleaved", theta=500_000.0, head_dim=64),
    "blt_global_transformer": dict(layout="interleaved", theta=500_000.0, head_dim=128),
    "chameleon": dict(),
    "deepseek_ocr2_text": dict(head_dim=128),
    "dia_encoder": dict(head_dim=128),
    "dia_decoder": dict(head_dim=128),
    "gemma3n_text": dict(theta=_GEMMA3_THETA, head_dim=256,
        rope=_types(sliding_attention=(1e4, None), full_attention=(1e6, None))),
    "idefics": dict(),
    "kyutai_speech_to_text": dict(head_dim=64),
    "lfm2_moe": dict(theta=1_000_000.0),
    "moonshine_streaming": dict(layout="interleaved", partial=0.8),
    "moshi": dict(head_dim=128),
    "muse_glimmer_assistant": dict(theta=500_000.0, head_dim=128),
    "pocket_tts": dict(head_dim=64),
    "step3p5": dict(head_dim=128, rope=_types(full_attention=(1e4, None))),
    "t5_gemma_module": dict(head_dim=256),
    "t5gemma2_text": dict(theta=_GEMMA3_THETA, head_dim=256,
        rope=_types(sliding_attention=(1e4, None), full_attention=(1e6, None))),
    "voxtral_realtime_text": dict(head_dim=128),
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
    **EXCEPTIONS,
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

# Families whose RoPE posenc_ref does not implement: the feature each needs (a refusal, also
# with layout=, which could not stand in for it).
NOT_IMPLEMENTED: dict[str, str] = {
    "hunyuan_vl_text": "an M-RoPE that is not a rotation of pairs. transformers 5.23's "
    "HunYuanVLRotaryEmbedding.recomposition_frequencies doubles the table (cat(freq, freq), the "
    "rotate_half layout) and splits the doubled table by 2 * mrope_section[j] coordinates, "
    "chunk j taking position row j mod len(mrope_section); the sections sum to head_dim // 2, "
    "so with [16, 16, 16, 16] coordinate c of pair c (< 32) turns by row 0's angle and its "
    "partner c + 64 by row 2's (pairs 32..63: rows 1 and 3). With distinct position rows cos "
    "and sin differ between the two coordinates of a pair; posenc_ref's M-RoPE turns each pair "
    "by one row's angle (equal rows, text, reduce to plain RoPE followed by the query/key "
    "RMSNorm of hunyuan_v1_dense)",
    "mistral_large4_text": "learned scales of the inverse frequencies (LeRoPE) and a learned "
    "softmax scaling: the frequencies depend on checkpoint weights, not only on the config",
    "deepseek_v4": "compressed keys (block summaries) rotated at their blocks' positions with a "
    "second base, beside the MLA rope part: rope_parameters 'main' and 'compress'",
    "dots3_note_text": "MLA whose head widths differ by layer type (per_layer_config), with the "
    "rope part's pairs read interleaved and written in half order",
}
"""``model_type`` -> the feature its RoPE needs that posenc_ref does not implement."""

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


@cache
def keys_read_by() -> dict[str, dict[str, list[str]]]:
    """Every family-specific key -> {what it means there: the families that read it}."""
    out: dict[str, dict[str, list[str]]] = {}
    for name, family in FAMILIES.items():
        for key, meaning in _keys_of(family).items():
            layout = f" ({family.layout} layout)" if key in family.legacy_keys else ""
            out.setdefault(key, {}).setdefault(meaning + layout, []).append(name)
    return out
