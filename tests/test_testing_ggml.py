"""The kit on ggml, llama.cpp's tensor library: its float32 RoPE passes, its planted bugs do not.

ggml forms each pair's angle by repeated float32 multiplication (``theta *= theta_scale``), a
correct kernel whose rounding the kit's first float32 allowance did not cover (issue 25: it
failed Qwen2.5-7B near position 131 000, pair 30). ggml's own ``ggml_rope_ext`` and
``ggml_rope_multi`` are built from the llama-cpp-python source distribution by
tests/ggml_rope.py (cached in .cache/, about two minutes of CPU the first time) and called
through ctypes; without cmake, a compiler or the download these tests skip, and the loop
itself is still checked through its float32 reproduction (posenc_ref.testing._kernels).
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from posenc_ref import RotaryEmbedding
from posenc_ref.models import released_config
from posenc_ref.testing import assert_rope_equal, offset_fn, positions_fn
from posenc_ref.testing._kernels import ggml_kernel
from tests.ggml_rope import IMROPE, MROPE, NEOX, NORMAL, Ggml, ggml_library
from tests.test_testing_rope import diagnosis, failure

# The base model Qwen/Qwen2.5-7B's config.json (its RoPE keys): base 1e6, head 3584 / 28 = 128,
# max_position_embeddings 131072, no rope_scaling. The check reaches 8 x 131072 positions.
QWEN25_7B = {
    "model_type": "qwen2",
    "hidden_size": 3584,
    "num_attention_heads": 28,
    "num_key_value_heads": 4,
    "max_position_embeddings": 131072,
    "rope_theta": 1000000.0,
}
# meta-llama/Meta-Llama-3-8B's config.json: base 500000, head 128, 8192 positions.
LLAMA3_8B = {
    "model_type": "llama",
    "hidden_size": 4096,
    "num_attention_heads": 32,
    "num_key_value_heads": 8,
    "max_position_embeddings": 8192,
    "rope_theta": 500000.0,
}


@pytest.fixture(scope="session")
def ggml() -> Ggml:
    folder = ggml_library()
    if isinstance(folder, str):
        pytest.skip(folder)
    return Ggml(folder)


def ggml_offset_fn(ggml: Ggml, *, mode: int, base: float, dims: int | None = None, **yarn):
    """``fn(x, offset)`` over ggml_rope_ext: (batch, heads, n, d) to ggml's (n, heads, d)."""

    def rotate(x: np.ndarray, offset: int) -> np.ndarray:
        out = np.empty_like(x)
        positions = np.arange(offset, offset + x.shape[2])
        for b in range(x.shape[0]):
            tokens = np.transpose(x[b], (1, 0, 2))
            rotated = ggml.rope(
                tokens, positions, n_dims=dims or x.shape[-1], mode=mode, base=base, **yarn
            )
            out[b] = np.transpose(rotated, (1, 0, 2))
        return out

    return offset_fn(rotate, arrays="numpy")


@pytest.mark.parametrize(
    "config",
    [QWEN25_7B, released_config("Qwen3-8B"), LLAMA3_8B],
    ids=["Qwen2.5-7B", "Qwen3-8B", "Llama-3-8B"],
)
def test_ggml_rope_ext_passes(ggml, config):
    reference = RotaryEmbedding.from_hf_config(config)
    fn = ggml_offset_fn(ggml, mode=NEOX, base=reference.base)
    assert_rope_equal(fn, reference, max_position=1 << 20)


def test_ggml_yarn_passes_for_qwen25_yarn(ggml):
    """YaRN as llama.cpp runs it: freq_scale 1/s, ext_factor 1, ggml's own mscale."""
    config = released_config("Qwen2.5 (YaRN)")
    reference = RotaryEmbedding.from_hf_config(config)
    scaling = config["rope_scaling"]
    fn = ggml_offset_fn(
        ggml,
        mode=NEOX,
        base=reference.base,
        freq_scale=1 / scaling["factor"],
        ext_factor=1.0,
        n_ctx_orig=scaling["original_max_position_embeddings"],
    )
    assert_rope_equal(fn, reference)


def test_ggml_llama31_passes_with_its_frequency_factors(ggml):
    """llama.cpp runs Llama 3.1's scaling as per-pair frequency factors (GGUF rope_freqs)."""
    reference = RotaryEmbedding.from_hf_config(released_config("Llama 3.1"))
    plain = reference.base ** (-torch.arange(0, 128, 2, dtype=torch.float64) / 128)
    factors = (plain / reference.inv_freq).numpy().astype(np.float32)
    fn = ggml_offset_fn(ggml, mode=NEOX, base=reference.base, freq_factors=factors)
    assert_rope_equal(fn, reference)


def test_ggml_with_a_planted_base_fails_with_its_name(ggml):
    reference = RotaryEmbedding.from_hf_config(QWEN25_7B)
    message = failure(ggml_offset_fn(ggml, mode=NEOX, base=500000.0), reference)
    assert diagnosis(message)[:1] == ["a different base"]
    assert "base 500000 where the reference has 1000000" in message


def test_ggml_normal_mode_is_the_interleaved_layout(ggml):
    """GGML_ROPE_TYPE_NORMAL rotates pairs (2i, 2i+1): the other layout for a Qwen reference."""
    reference = RotaryEmbedding.from_hf_config(QWEN25_7B)
    message = failure(ggml_offset_fn(ggml, mode=NORMAL, base=reference.base), reference)
    assert diagnosis(message)[:1] == ["the other pair layout"]
    interleaved = RotaryEmbedding(128, base=1e6, layout="interleaved")
    assert_rope_equal(ggml_offset_fn(ggml, mode=NORMAL, base=1e6), interleaved)


def ggml_multi_fn(ggml: Ggml, *, mode: int, base: float, sections: tuple[int, int, int]):
    """``fn(x, positions)`` over ggml_rope_multi, with (3, n) M-RoPE rows or (n,) text."""

    def rotate(x: np.ndarray, positions: np.ndarray) -> np.ndarray:
        rows = positions if positions.ndim == 2 else np.stack([positions] * 3)
        # ggml takes a fourth row for pairs outside the three sections (IMROPE's leftovers);
        # transformers gives those pairs the time row, so that is what it gets here.
        rows = np.concatenate([rows, rows[:1]])
        out = np.empty_like(x)
        for b in range(x.shape[0]):
            tokens = np.transpose(x[b], (1, 0, 2))
            rotated = ggml.rope(
                tokens, rows, n_dims=x.shape[-1], mode=mode, base=base, sections=(*sections, 0)
            )
            out[b] = np.transpose(rotated, (1, 0, 2))
        return out

    return positions_fn(rotate, arrays="numpy")


def test_ggml_mrope_passes_qwen2_vl_with_image_positions(ggml):
    reference = RotaryEmbedding.from_hf_config(released_config("Qwen2-VL (M-RoPE)"))
    fn = ggml_multi_fn(ggml, mode=MROPE, base=reference.base, sections=(16, 24, 24))
    assert_rope_equal(fn, reference)


def test_ggml_imrope_passes_qwen3_vl_and_mrope_is_named_consecutive(ggml):
    reference = RotaryEmbedding.from_hf_config(released_config("Qwen3-VL (interleaved M-RoPE)"))
    right = ggml_multi_fn(ggml, mode=IMROPE, base=reference.base, sections=(24, 20, 20))
    assert_rope_equal(right, reference)
    wrong = ggml_multi_fn(ggml, mode=MROPE, base=reference.base, sections=(24, 20, 20))
    message = failure(wrong, reference)
    assert diagnosis(message)[:1] == ["consecutive sections instead of interleaved ones"]


def test_ggml_loop_with_a_float16_cache_is_named_float16():
    """Ggml's loop, reproduced in float32, with its cos/sin cache stored in float16."""
    reference = RotaryEmbedding.from_hf_config(QWEN25_7B)

    def rotate(x: np.ndarray, offset: int) -> np.ndarray:
        n, half = x.shape[2], x.shape[-1] // 2
        angles = ggml_kernel(np.arange(offset, offset + n), x.shape[-1], reference.base)
        cos = np.cos(angles).astype(np.float16).astype(np.float32)
        sin = np.sin(angles).astype(np.float16).astype(np.float32)
        u, v = x[..., :half], x[..., half:]
        return np.concatenate([u * cos - v * sin, u * sin + v * cos], axis=-1).astype(x.dtype)

    assert_rope_equal_kwargs = {"max_position": 1 << 20}
    message = failure(offset_fn(rotate, arrays="numpy"), reference, **assert_rope_equal_kwargs)
    assert diagnosis(message)[:1] == ["cos/sin tables in float16"]

    def float32_cache(x: np.ndarray, offset: int) -> np.ndarray:
        n, half = x.shape[2], x.shape[-1] // 2
        angles = ggml_kernel(np.arange(offset, offset + n), x.shape[-1], reference.base)
        cos, sin = np.cos(angles), np.sin(angles)
        u, v = x[..., :half], x[..., half:]
        return np.concatenate([u * cos - v * sin, u * sin + v * cos], axis=-1).astype(x.dtype)

    assert_rope_equal(offset_fn(float32_cache, arrays="numpy"), reference, max_position=1 << 20)
