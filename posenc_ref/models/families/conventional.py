r"""The families that follow transformers' conventions: one line each.

Their code rotates pairs with ``rotate_half`` (or interleaved pairs, ``layout="interleaved"``) on
the first ``int(head_dim * partial_rotary_factor)`` coordinates of every layer. A row holds the
config class's defaults only (the values transformers fills in when a ``config.json`` leaves a key
out): ``theta`` (``rope_theta``), ``head_dim``, ``partial`` (``partial_rotary_factor``), ``rope``
(the RoPE dict, one per layer type where the class has several). Proven by running each family's
attention on its default config (tests/test_models_hf.py, and the sweep over every family).
Adding a family that follows the conventions is one line here.
"""

from __future__ import annotations

from typing import Any

from .._rules import rope_by_layer_type as per_type
from ..family import Family

__all__ = ["CONVENTIONAL"]

GEMMA3_THETA = {"full_attention": 1_000_000.0, "sliding_attention": 10_000.0}
GEMMA3_ROPE = per_type(sliding=(1e4, None), full=(1e6, None))
MODERNBERT_THETA = {"full_attention": 160_000.0, "sliding_attention": 10_000.0}
MODERNBERT_ROPE = per_type(sliding=(1e4, None), full=(1.6e5, None))


def llama3_rope(factor: float, low: float, high: float, original: int) -> dict[str, Any]:
    """A ``rope_type="llama3"`` dict: factor, low and high frequency factors, original context."""
    return {"rope_type": "llama3", "factor": factor, "low_freq_factor": low,
            "high_freq_factor": high, "original_max_position_embeddings": original}  # fmt: skip


def yarn_rope(factor: float, original: int, **more: Any) -> dict[str, Any]:
    """A ``rope_type="yarn"`` dict (``beta_fast`` 32 and ``beta_slow`` 1 unless given)."""
    rope = {"rope_type": "yarn", "factor": factor, "beta_fast": 32.0, "beta_slow": 1.0}
    return {**rope, **more, "original_max_position_embeddings": original}


def conventional(name: str, **row: Any) -> Family:
    """The row of a family that follows the conventions (the source says which pairs)."""
    pairs = "interleaved pairs" if row.get("layout") == "interleaved" else "rotate_half"
    return Family(
        **row,
        source=f"modeling_{name}.py: {pairs} on the first int(head_dim * partial_rotary_factor) "
        "coordinates",
    )


GPT_OSS = yarn_rope(32.0, 4096, truncate=False)

# name -> the config class's defaults (sorted by when the row was proven, not by name)
ROWS: dict[str, dict[str, Any]] = {
    "apertus": dict(theta=12_000_000.0, rope=llama3_rope(8.0, 1.0, 4.0, 8192)),
    "arcee": dict(),
    "aria_text": dict(),
    "bitnet": dict(theta=500_000.0),
    "cohere": dict(layout="interleaved", theta=500_000.0),
    "csm": dict(theta=500_000.0),
    "cwm": dict(theta=1_000_000.0, head_dim=128, rope=llama3_rope(16.0, 1.0, 4.0, 8192)),
    "diffllama": dict(),
    "doge": dict(),
    "ernie4_5": dict(layout="interleaved", theta=500_000.0, head_dim=128),
    "ernie4_5_moe": dict(layout="interleaved", theta=500_000.0),
    "esmc": dict(),
    "eurobert": dict(),
    "falcon_h1": dict(),
    "flex_olmo": dict(theta=500_000.0),
    "gemma": dict(head_dim=256),
    "glm": dict(layout="interleaved", head_dim=128, partial=0.5),
    "glm4": dict(layout="interleaved", head_dim=128, partial=0.5),
    "gpt_oss": dict(theta=150_000.0, head_dim=64, rope=GPT_OSS),
    "gradium_phonon_tts": dict(),
    "granite": dict(),
    "granite_docling_text": dict(),
    "granitemoe": dict(),
    "granitemoeshared": dict(),
    "helium": dict(layout="interleaved", theta=100_000.0, head_dim=128),
    "higgs_audio_v2": dict(head_dim=128, theta=500_000.0, rope=llama3_rope(32.0, 0.125, 0.5, 1024)),
    "hrm_text": dict(head_dim=128),
    "hy_v3": dict(theta=11_158_840.0, head_dim=128),
    "hyperclovax": dict(),
    "jais2": dict(),
    "laguna": dict(head_dim=128, rope=per_type(full=(5e5, 0.5), sliding=(1e4, 1.0))),
    "lfm2": dict(theta=1_000_000.0),
    "llama": dict(),
    "mellum": dict(head_dim=128, rope=per_type(full=(5e5, None), sliding=(1e4, None))),
    "mistral": dict(),
    "mixtral": dict(theta=1_000_000.0),
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
    "nemotron": dict(partial=0.5),
    "nomic_bert": dict(theta=1000.0),
    "openai_privacy_filter": dict(layout="interleaved", theta=150_000.0, head_dim=64, rope=GPT_OSS),
    "phi4_multimodal": dict(),
    "unlimited_ocr_text": dict(),
    "olmo": dict(),
    "olmo2": dict(),
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
    "vaultgemma": dict(head_dim=256),
    "zaya": dict(head_dim=128, rope=per_type(hybrid=(5e6, 0.5), hybrid_sliding=(1e4, 0.5))),
    # rows added after the sweep read each family's code (tests/hf_sweep)
    "bamba": dict(partial=0.5),
    "blt_local_encoder": dict(layout="interleaved", theta=500_000.0),
    "blt_local_decoder": dict(layout="interleaved", theta=500_000.0),
    "blt_global_transformer": dict(layout="interleaved", theta=500_000.0),
    "chameleon": dict(),
    "deepseek_ocr2_text": dict(),
    "dia_encoder": dict(head_dim=128),
    "dia_decoder": dict(head_dim=128),
    "idefics": dict(),
    "kyutai_speech_to_text": dict(),
    "lfm2_moe": dict(theta=1_000_000.0),
    "moonshine_streaming": dict(layout="interleaved", partial=0.8),
    "moshi": dict(),
    "muse_glimmer_assistant": dict(theta=500_000.0, head_dim=128),
    "pocket_tts": dict(head_dim=64),
    "t5_gemma_module": dict(head_dim=256),
    "t5gemma2_text": dict(theta=GEMMA3_THETA, head_dim=256, rope=GEMMA3_ROPE),
    "voxtral_realtime_text": dict(),
}  # fmt: skip

CONVENTIONAL: dict[str, Family] = {name: conventional(name, **row) for name, row in ROWS.items()}
"""``model_type`` -> the row of a family that follows transformers' conventions."""
