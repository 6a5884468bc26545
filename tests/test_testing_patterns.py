"""The kit on engines' call patterns, M-RoPE images and conventions: bugs named, right fns pass.

Every adapter of posenc_ref.testing (offsets_fn, packed_fn, inplace_fn) and every call pattern
of the default check (decode steps, chunked prefill, GQA head counts, M-RoPE image calls) has a
correct function that passes and a planted bug that is named. The conventions engines follow
(YaRN's truncate and attention factor, LongRoPE's and dynamic NTK's load-time switch, NTK-alpha,
flash-attn's interleaved default) are each a named diagnosis on a function that follows them.
"""

import math

import pytest
import torch

from posenc_ref import RotaryEmbedding, inv_freq
from posenc_ref.models import released_config
from posenc_ref.rope_scaling import ScaledFrequencies, yarn
from posenc_ref.testing import (
    assert_rope_equal,
    assert_rope_grad_equal,
    inplace_fn,
    offset_fn,
    offsets_fn,
    packed_fn,
)
from tests.rope_implementations import user_rope
from tests.test_testing_rope import diagnosis, failure

REFERENCE = RotaryEmbedding(64, layout="half")


def named(fn, reference=REFERENCE, **options) -> list[str]:
    return diagnosis(failure(fn, reference, **options))


# --- decode, chunks, GQA -----------------------------------------------------------------------


def test_the_default_check_makes_decode_and_chunk_calls():
    seen = []

    def recording(q, k, positions):
        seen.append((positions.numel(), q.shape[1], k.shape[1]))
        return REFERENCE(q, k, positions)

    assert_rope_equal(recording, REFERENCE)
    assert (1, 2, 1) in seen  # a single-token decode step, with fewer key heads
    assert (64, 2, 2) in seen  # a chunk of a chunked prefill
    assert any(q > k for _, q, k in seen)  # grouped-query head counts


@pytest.mark.parametrize("shift", [1, -1])
def test_a_decode_only_off_by_one_is_named(shift):
    def decode_bug(q, k, positions):
        return REFERENCE(q, k, positions + shift if positions.numel() == 1 else positions)

    assert named(decode_bug) == ["the decode step off by one"]


def test_a_decode_step_at_zero_is_named():
    def decode_zero(q, k, positions):
        return REFERENCE(q, k, positions * 0 if positions.numel() == 1 else positions)

    assert named(decode_zero) == ["the decode step at position 0"]


def test_a_length_switch_on_the_chunk_length_is_named():
    reference = RotaryEmbedding.from_hf_config(released_config("Phi-3.5-mini (LongRoPE)"))

    def by_tokens(q, k, positions):  # the switch on the call's token count
        freqs = reference.frequencies(positions.numel())
        fn = user_rope(reference.head_dim, reference.base, inv_freq=freqs.inv_freq,
                       attention_factor=freqs.attention_factor)  # fmt: skip
        return fn(q, k, positions)

    # Below the original context of tokens per call, the switch on the token count and a switch
    # never made give the same output; both are named.
    assert "the length switch made on the chunk's length" in named(by_tokens, reference)


def test_gqa_query_heads_past_the_key_heads_unrotated_is_named():
    def gqa_bug(q, k, positions):
        q_rot, k_rot = REFERENCE(q, k, positions)
        kept = k.shape[1]
        return torch.cat([q_rot[:, :kept], q[:, kept:]], dim=1), k_rot

    assert named(gqa_bug) == ["only as many query heads rotated as key heads"]


def test_an_offset_applied_twice_is_named_not_low_precision():
    message = failure(lambda q, k, p: REFERENCE(q, k, p + p[0]), REFERENCE)
    assert diagnosis(message) == ["the offset applied twice"]
    assert "low precision" not in message


# --- adapters: offsets_fn, packed_fn, inplace_fn ----------------------------------------------


def per_row(x, offsets):
    rows = [REFERENCE(x[b : b + 1], x[b : b + 1], offset=int(offsets[b]))[0] for b in
            range(x.shape[0])]  # fmt: skip
    return torch.cat(rows)


def test_offsets_fn_passes_a_per_row_kernel_and_names_one_offset():
    assert_rope_equal(offsets_fn(per_row), REFERENCE)
    one = offsets_fn(lambda x, offsets: REFERENCE(x, x, offset=int(offsets[0]))[0])
    assert named(one) == ["one offset for every row"]


def packed_kernel(x, cu_seqlens, offsets):
    out = torch.empty_like(x)
    for j in range(offsets.numel()):
        a, b = int(cu_seqlens[j]), int(cu_seqlens[j + 1])
        piece = x[a:b].transpose(0, 1)[None]  # (1, heads, n, head_dim)
        out[a:b] = REFERENCE(piece, piece, offset=int(offsets[j]))[0][0].transpose(0, 1)
    return out


def test_packed_fn_passes_a_varlen_kernel_and_names_the_run_on():
    assert_rope_equal(packed_fn(packed_kernel), REFERENCE)

    def run_on(x, cu_seqlens, offsets):
        whole = x.transpose(0, 1)[None]
        return REFERENCE(whole, whole, offset=int(offsets[0]))[0][0].transpose(0, 1)

    assert named(packed_fn(run_on)) == ["positions running on across packed sequences"]


def test_packed_fn_names_ignored_sequence_offsets():
    def from_zero(x, cu_seqlens, offsets):
        return packed_kernel(x, cu_seqlens, torch.zeros_like(offsets))

    assert named(packed_fn(from_zero)) == ["sequence offsets ignored in a packed row"]


def test_inplace_fn_passes_an_in_place_kernel_and_names_aliasing():
    def in_place(q, k, positions):
        q_rot, k_rot = REFERENCE(q, k, positions)
        q.copy_(q_rot)
        k.copy_(k_rot)

    assert_rope_equal(inplace_fn(in_place), REFERENCE)

    def aliased(q, k, positions):
        cos, sin = REFERENCE.cos_sin(positions)
        for x in (q, k):
            u, v = x[..., :32], x[..., 32:]
            u.copy_(u * cos - v * sin)
            v.copy_(u * sin + v * cos)  # reads the u it has just overwritten

    assert named(inplace_fn(aliased)) == ["an in-place update that reads its own output"]


def test_patterns_option_drives_a_plain_fn_with_rows_and_packed_calls():
    seen = set()

    def recording(q, k, positions):
        seen.add(tuple(positions.shape))
        return REFERENCE(q, k, positions)

    assert_rope_equal(recording, REFERENCE, patterns=("decode", "rows", "packed"))
    assert (3, 1, 40) in seen and (94,) in seen


def test_adapters_refuse_what_they_cannot_do():
    with pytest.raises(ValueError, match="cannot be written into"):
        inplace_fn(lambda q, k, p: None, arrays="jax")
    with pytest.raises(ValueError, match="patterns must be among"):
        assert_rope_equal(REFERENCE, REFERENCE, patterns=("rows", "sideways"))


# --- M-RoPE with images ------------------------------------------------------------------------

QWEN2_VL = RotaryEmbedding.from_hf_config(released_config("Qwen2-VL (M-RoPE)"))
QWEN3_VL = RotaryEmbedding.from_hf_config(released_config("Qwen3-VL (interleaved M-RoPE)"))


def mrope_module(reference, **changes) -> RotaryEmbedding:
    kwargs = {"mrope_section": reference.mrope_section, "mrope_assignment":
              reference.mrope_assignment, "layout": reference.layout}  # fmt: skip
    kwargs.update(changes)
    scaling = ScaledFrequencies(reference.inv_freq, reference.attention_factor)
    return RotaryEmbedding(reference.head_dim, scaling=scaling, **kwargs)


@pytest.mark.parametrize("reference", [QWEN2_VL, QWEN3_VL], ids=["qwen2_vl", "qwen3_vl"])
def test_mrope_functions_are_driven_with_image_positions_and_pass(reference):
    rows = []

    def recording(q, k, positions):
        rows.append(positions.shape)
        return reference(q, k, positions)

    assert_rope_equal(recording, reference)
    assert torch.Size([3, 81]) in rows


@pytest.mark.parametrize(
    "reference, changes, title",
    [
        # A module cannot hold Qwen3-VL's sections reordered, nor Qwen2-VL's [16, 24, 24] dealt
        # round-robin (height and width would outnumber time): section order on Qwen3-VL is
        # named by test_rows_in_the_wrong_order_are_named, on rows swapped by the function.
        (QWEN2_VL, {"mrope_section": [24, 24, 16]}, "M-RoPE sections in the wrong order"),
        (QWEN3_VL, {"mrope_assignment": "consecutive"},
         "consecutive sections instead of interleaved ones"),
        (QWEN2_VL, {"layout": "interleaved"}, "the other pair layout"),
        (QWEN3_VL, {"layout": "interleaved"}, "the other pair layout"),
    ],
    ids=["section order qwen2", "consecutive", "gpt-j pairs qwen2", "gpt-j pairs qwen3"],
)  # fmt: skip
def test_mrope_bugs_are_named(reference, changes, title):
    assert named(mrope_module(reference, **changes), reference)[:1] == [title]


@pytest.mark.parametrize("reference", [QWEN2_VL, QWEN3_VL], ids=["qwen2_vl", "qwen3_vl"])
def test_rows_in_the_wrong_order_are_named(reference):
    def height_width_swapped(q, k, positions):
        if positions.dim() == 2:
            positions = positions[[0, 2, 1]]
        return reference(q, k, positions)

    assert named(height_width_swapped, reference)[:1] == ["M-RoPE sections in the wrong order"]


@pytest.mark.parametrize("reference", [QWEN2_VL, QWEN3_VL], ids=["qwen2_vl", "qwen3_vl"])
def test_the_1d_fallback_is_named(reference):
    def one_dimensional(q, k, positions):
        if positions.dim() == 2:
            first = int(positions[:, 0].min())
            positions = torch.arange(first, first + positions.shape[-1])
        return reference(q, k, positions)

    assert named(one_dimensional, reference) == ["the 1-D fallback"]
    plain = offset_fn(lambda x, offset: reference(x, x, offset=offset)[0])
    assert named(plain, reference) == ["the 1-D fallback"]  # an offset-only kernel


@pytest.mark.parametrize("reference", [QWEN2_VL, QWEN3_VL], ids=["qwen2_vl", "qwen3_vl"])
def test_text_that_does_not_resume_after_the_image_is_named(reference):
    from posenc_ref.testing._plan import mrope_segments

    def no_resume(q, k, positions):
        if positions.dim() == 2:  # the kit's image call: text after a grid from the token count
            positions = mrope_segments(int(positions[0, 0]), resume=False)[0]
        return reference(q, k, positions)

    assert named(no_resume, reference) == ["text positions that do not resume after the image"]


# --- conventions engines follow ----------------------------------------------------------------


def scaled(reference, inv_freq=None, attention_factor=None) -> RotaryEmbedding:
    freqs = reference.frequencies(0)
    return RotaryEmbedding(
        reference.head_dim,
        rotary_dim=reference.rotary_dim,
        layout=reference.layout,
        output_layout=reference.output_layout,
        scaling=ScaledFrequencies(
            freqs.inv_freq if inv_freq is None else inv_freq,
            freqs.attention_factor if attention_factor is None else attention_factor,
        ),
    )


def test_yarn_truncated_where_gpt_oss_says_not_is_named():
    reference = RotaryEmbedding.from_hf_config(released_config("gpt-oss (YaRN, truncate false)"))
    params = {**reference.scaling_params, "truncate": True}  # llama.cpp, TensorRT-LLM, mlx-lm
    truncated = yarn(reference.rotary_dim, reference.base, **params)
    message = failure(scaled(reference, truncated.inv_freq), reference)
    assert diagnosis(message) == ["YaRN's band edges truncated"]
    assert "llama.cpp" in message


def test_yarn_attention_factor_curves_are_named():
    reference = RotaryEmbedding.from_hf_config(released_config("Qwen2.5 (YaRN)"))
    telechat = 0.07 * math.log(4.0) + 1
    assert named(scaled(reference, attention_factor=telechat), reference) == [
        "YaRN's attention factor 0.07 ln s + 1"
    ]
    deepseek = RotaryEmbedding.from_hf_config(released_config("DeepSeek-V3 (YaRN, mscale)"))
    default = 0.1 * math.log(40.0) + 1  # the config's mscale / mscale_all_dim ratio ignored
    assert named(scaled(deepseek, attention_factor=default), deepseek)[:1] == [
        "YaRN's 0.1 ln s + 1 instead of the config's attention factor"
    ]
    explicit = RotaryEmbedding(
        128, layout="half",
        scaling={"method": "yarn", "factor": 8.0, "original_max_len": 4096,
                 "attention_factor": 1.2},
    )  # fmt: skip
    multiplier = 1.2 * (0.1 * math.log(8.0) + 1)  # vLLM / SGLang reading it as attn_factor
    assert named(scaled(explicit, attention_factor=multiplier), explicit) == [
        "the attention factor read as a multiplier"
    ]
    assert named(scaled(explicit, attention_factor=1.0), explicit) == [
        "the attention factor missing"
    ]  # SGLang's YaRN before its fix


def test_longrope_switch_fixed_at_load_time_is_named():
    reference = RotaryEmbedding.from_hf_config(released_config("Phi-3.5-mini (LongRoPE)"))
    long_ = reference.frequencies(10**6)
    message = failure(scaled(reference, long_.inv_freq, long_.attention_factor), reference)
    assert diagnosis(message) == ["the LongRoPE switch fixed at load time (long factors)"]
    assert "max_model_len" in message and "n_ctx" in message


def test_dynamic_ntk_frozen_and_read_as_alpha_are_named():
    reference = RotaryEmbedding(
        128, layout="half",
        scaling={"method": "dynamic_ntk", "factor": 4.0, "original_max_len": 2048},
    )  # fmt: skip
    frozen = reference.frequencies(4 * 2048)
    assert named(user_rope(128, inv_freq=frozen.inv_freq), reference) == [
        "dynamic NTK frozen at the maximum length"
    ]
    alpha = user_rope(128, 10000.0 * 4.0 ** (128 / 126))  # TensorRT-LLM's reading
    message = failure(alpha, reference)
    assert diagnosis(message) == ["dynamic NTK read as NTK-alpha"]
    assert "TensorRT-LLM" in message


def test_flash_attn_interleaved_default_is_the_layout_and_named():
    """flash_attn_with_kvcache rotates interleaved pairs by default: on an HF model, wrong."""
    message = failure(user_rope(64, layout="interleaved"), REFERENCE)
    assert diagnosis(message) == ["the other pair layout"]
    assert "flash_attn_with_kvcache" in message


# --- reports -----------------------------------------------------------------------------------

LLAMA31 = RotaryEmbedding.from_hf_config(released_config("Llama 3.1"))


def test_swapped_llama3_factors_are_named_with_their_pairs():
    from posenc_ref.testing._engine_bugs import llama3_swapped
    from posenc_ref.testing._setting import Setting

    model = next(llama3_swapped(Setting(LLAMA31, [])))
    swapped = model.model.frequencies(0).inv_freq
    message = failure(scaled(LLAMA31, swapped), LLAMA31)
    assert diagnosis(message) == ["Llama 3's low and high frequency factors swapped"]
    assert "Wrong: pairs 29..34 of 0..63" in message


def test_an_unexplained_error_still_gets_pairs_positions_and_the_closest_model():
    """A 1 % error on the middle band of Llama 3.1: no model, but where and how far."""
    plain = inv_freq(128, 500000.0)  # the frequencies llama3() starts from, bit for bit
    middle = (LLAMA31.inv_freq != plain) & (LLAMA31.inv_freq != plain / 8)
    off = LLAMA31.inv_freq * torch.where(middle, 1.01, 1.0)
    message = failure(scaled(LLAMA31, off), LLAMA31)
    assert diagnosis(message) == []
    assert "Wrong: pairs 29..34 of 0..63, at positions 1..300" in message
    assert "Closest:" in message


@pytest.mark.parametrize(
    "dtypes, title",
    [
        ({"positions_dtype": torch.bfloat16, "inv_freq_dtype": torch.bfloat16},
         "positions and inv_freq in bfloat16"),
        ({"angle_dtype": torch.bfloat16}, "angles in bfloat16"),
    ],
    ids=["positions+inv_freq", "angles"],
)  # fmt: skip
def test_precision_bugs_and_their_pairs_are_named(dtypes, title):
    message = failure(user_rope(128, 500000.0, inv_freq=LLAMA31.inv_freq, **dtypes), LLAMA31)
    assert diagnosis(message) == [title]


def test_a_single_nan_is_reported_where_it_is_and_not_as_a_trend():
    def one_nan(q, k, positions):
        q_rot, k_rot = REFERENCE(q, k, positions)
        if positions.numel() > 1 and int(positions[0]) == 0:
            q_rot[0, 0, 5, 3] = float("nan")
        return q_rot, k_rot

    message = failure(one_nan, REFERENCE)
    assert "NaN or infinity: 1 in q (position 5, pair 3" in message
    assert "low precision" not in message


# --- the backward pass -------------------------------------------------------------------------


class ConjugateForgotten(torch.autograd.Function):
    """A fused rotation whose backward turns by +theta (flash-attn's conjugate=False)."""

    @staticmethod
    def forward(ctx, x, cos, sin):
        ctx.save_for_backward(cos, sin)
        u, v = x[..., :32], x[..., 32:]
        return torch.cat([u * cos - v * sin, u * sin + v * cos], -1)

    @staticmethod
    def backward(ctx, g):
        cos, sin = ctx.saved_tensors
        u, v = g[..., :32], g[..., 32:]
        return torch.cat([u * cos - v * sin, u * sin + v * cos], -1), None, None


def test_gradient_check_passes_autograd_and_names_a_forgotten_conjugate():
    assert_rope_grad_equal(user_rope(64), REFERENCE)

    def fused(q, k, positions):
        cos, sin = REFERENCE.cos_sin(positions)
        return ConjugateForgotten.apply(q, cos, sin), ConjugateForgotten.apply(k, cos, sin)

    with pytest.raises(AssertionError) as info:
        assert_rope_grad_equal(fused, REFERENCE)
    assert diagnosis(str(info.value)) == [
        "the backward rotation by +theta (the conjugate forgotten)"
    ]


def test_gradient_check_refuses_outputs_without_gradients():
    with pytest.raises(AssertionError, match="carry no gradient"):
        assert_rope_grad_equal(lambda q, k, p: REFERENCE(q.detach(), k.detach(), p), REFERENCE)
