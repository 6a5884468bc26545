"""The kit on RoPE as engines ship it: ten implementations pass, each planted bug is named.

The implementations (tests/engine_implementations.py) follow the facts of vLLM's base class,
Llama 3, YaRN, Phi-3 LongRoPE and M-RoPE, Meta's complex multiply, tinygrad,
rotary-embedding-torch, GPT-NeoX's Megatron rotary and mistral-inference's Pixtral: their calls
(flattened tokens, a start position, a patch grid), their tables (``max_position_embeddings``
rows, ``2 max_context``, ``original x factor``) and their dtypes. Each passes the check in its
own convention, and each mistake engines have shipped, planted in them, is caught and named.
"""

import pytest
import torch

from posenc_ref import RotaryEmbedding
from posenc_ref.models import released_config
from posenc_ref.testing import (
    assert_axial_rope_equal,
    assert_rope_equal,
    offset_fn,
    per_dtype_fn,
    tokens_fn,
)
from posenc_ref.testing._calls import position_runs
from tests import engine_implementations as engines
from tests.test_testing_rope import diagnosis

BF16 = torch.bfloat16


def from_config(name: str) -> RotaryEmbedding:
    return RotaryEmbedding.from_hf_config(released_config(name))


def named(fn, reference, **options) -> list[str]:
    with pytest.raises(AssertionError) as info:
        assert_rope_equal(fn, reference, **options)
    return diagnosis(str(info.value))


# --- vLLM's base class: flattened tokens, a cache of max_position_embeddings rows -------------

LLAMA2 = RotaryEmbedding(128, layout="half")  # base 10000, 4096 positions


def vllm_base(bug=None):
    return per_dtype_fn(
        lambda dtype: tokens_fn(engines.VllmRotary(128, 128, 4096, 10000.0, True, dtype, bug=bug))
    )


def test_vllm_base_class_passes_with_its_table_of_max_position_embeddings_rows():
    """max_position = 4095: the packed sequences, rows and chunks run below it, none dropped."""
    seen = []
    fn = vllm_base()

    def recording(q, k, positions):
        seen.append(positions.clone())
        return fn(q, k, positions)

    recording.patterns = fn.patterns
    assert_rope_equal(recording, LLAMA2, max_position=4095, dtypes=(torch.float32, BF16))
    shapes = {tuple(p.shape) for p in seen}
    assert (3, 1, 40) in shapes  # the rows, each from its own offset
    packed = [p for p in seen if p.dim() == 1 and len(position_runs(p)) == 4]
    assert packed and all(int(p.max()) <= 4095 for p in packed)  # four packed sequences
    assert sum(p.dim() == 1 and p.numel() == 64 for p in seen) >= 2  # the chunks
    assert max(int(p.max()) for p in seen) == 4095


def test_vllm_base_class_past_its_table_names_the_max_position_to_pass():
    with pytest.raises(AssertionError) as info:
        assert_rope_equal(vllm_base(), LLAMA2)
    message = str(info.value)
    assert message.startswith("fn raised IndexError")
    assert "Pass max_position=4095" in message


def test_vllm_head_split_forgotten_is_named():
    assert named(vllm_base("first_head"), LLAMA2, max_position=4095) == [
        "only the first head rotated"
    ]


# --- vLLM's Llama 3 and YaRN ------------------------------------------------------------------

LLAMA31 = from_config("Llama 3.1")


def vllm_llama3(bug=None):
    module = engines.VllmLlama3(128, 128, 131072, 500000.0, True, torch.float32, bug=bug)
    return tokens_fn(module)


def test_vllm_llama3_passes():
    assert_rope_equal(vllm_llama3(), LLAMA31, max_position=131071)


@pytest.mark.parametrize(
    "bug, title",
    [
        ("swapped", "Llama 3's low and high frequency factors swapped"),
        ("pairs", "the scaling factor on the wrong pairs"),
    ],
)
def test_vllm_llama3_bugs_are_named(bug, title):
    assert named(vllm_llama3(bug), LLAMA31, max_position=131071) == [title]


QWEN25_YARN = from_config("Qwen2.5 (YaRN)")


def vllm_yarn(bug=None):
    a = float(QWEN25_YARN.attention_factor)

    def build(dtype):
        module = engines.VllmYarn(128, 128, 32768, 1e6, True, dtype, factor=4.0,
                                  attention_factor=a, bug=bug)  # fmt: skip
        return tokens_fn(module)

    return per_dtype_fn(build)


def test_vllm_yarn_passes_in_each_activation_dtype():
    assert_rope_equal(vllm_yarn(), QWEN25_YARN, max_position=131071, dtypes=(torch.float32, BF16))


def test_vllm_yarn_cache_cast_to_float16_after_the_factor_is_named():
    assert named(vllm_yarn("float16"), QWEN25_YARN, max_position=131071) == [
        "the cos/sin table rounded to float16 after the attention factor"
    ]


# --- vLLM's Phi-3 LongRoPE and M-RoPE ---------------------------------------------------------

PHI35 = from_config("Phi-3.5-mini (LongRoPE)")


def vllm_longrope(max_model_len):
    params = PHI35.scaling_params
    return tokens_fn(
        engines.VllmLongRope(96, 96, 131072, 4096, 10000.0, params["short_factor"],
                             params["long_factor"], float(PHI35.attention_factor), max_model_len)
    )  # fmt: skip


def test_vllm_longrope_passes_inside_its_original_context():
    assert_rope_equal(vllm_longrope(4096), PHI35, max_position=4095)


def test_vllm_longrope_switch_fixed_at_load_time_is_named():
    """A deviation vLLM ships on purpose (one cache for a long max_model_len), named as such."""
    assert named(vllm_longrope(131072), PHI35, max_position=131071) == [
        "the LongRoPE switch fixed at load time (long factors)"
    ]


QWEN25_VL = from_config("Qwen2.5-VL (M-RoPE)")


def vllm_mrope(bug=None):
    module = engines.VllmMRope(128, 128, 128000, 1e6, True, torch.float32,
                               mrope_section=QWEN25_VL.mrope_section, bug=bug)  # fmt: skip
    return tokens_fn(module)


def test_vllm_mrope_passes_with_images_and_packed_sequences():
    assert_rope_equal(vllm_mrope(), QWEN25_VL, max_position=127999)


def test_interleaved_sections_on_qwen2_5_vl_are_named():
    assert named(vllm_mrope("interleaved"), QWEN25_VL, max_position=127999) == [
        "interleaved sections instead of consecutive ones"
    ]


# --- Meta, tinygrad, rotary-embedding-torch, GPT-NeoX: a start position ----------------------

META = RotaryEmbedding(128, layout="interleaved", base=500000.0)


def test_meta_complex_multiply_passes_and_the_head_axis_is_named():
    assert_rope_equal(offset_fn(engines.meta_rope(128, 500000.0, 4096)), META, max_position=8191)
    bug = offset_fn(engines.meta_rope(128, 500000.0, 4096, bug="head_axis"))
    assert named(bug, META, max_position=8191) == ["positions taken along the head axis"]


TINY = RotaryEmbedding(128, layout="interleaved")


def test_tinygrad_passes_with_a_float32_table_and_its_float16_table_is_named():
    assert_rope_equal(offset_fn(engines.tinygrad_rope(128, 10000.0, 1024, dtype=torch.float32)),
                      TINY, max_position=2047)  # fmt: skip
    # (below 2048 positions float16 holds every integer: positions in float16 give the same)
    assert named(offset_fn(engines.tinygrad_rope(128, 10000.0, 1024)), TINY,
                 max_position=2047)[:1] == ["cos/sin tables in float16"]  # fmt: skip


def test_tinygrad_cos_and_sin_swapped_is_named():
    fn = offset_fn(engines.tinygrad_rope(128, 10000.0, 1024, dtype=torch.float32, bug="swapped"))
    with pytest.raises(AssertionError) as info:
        assert_rope_equal(fn, TINY, max_position=2047)
    assert diagnosis(str(info.value)) == ["cos and sin swapped"]
    assert "Observed: already wrong at position 0" in str(info.value)


def test_tinygrads_bare_assert_is_reported_as_its_own_with_the_table_length():
    fn = offset_fn(engines.tinygrad_rope(128, 10000.0, 1024, dtype=torch.float32))
    with pytest.raises(AssertionError) as info:
        assert_rope_equal(fn, TINY)
    message = str(info.value)
    assert message.startswith("fn raised AssertionError in the call with ")
    assert "(no message: a bare assert" in message
    assert "Pass max_position=2047" in message


def test_rotary_embedding_torch_passes_and_a_default_theta_is_named():
    pytest.importorskip("rotary_embedding_torch")
    reference = RotaryEmbedding(64, layout="interleaved", base=500000.0)
    assert_rope_equal(offset_fn(engines.lucidrains_rope(64, 500000.0)), reference)
    bug = offset_fn(engines.lucidrains_rope(64, 500000.0, bug="theta"))
    assert named(bug, reference)[:1] == ["a different base"]


def test_gpt_neox_passes_and_its_fp16_training_arithmetic_is_named():
    reference = RotaryEmbedding(64, layout="half")
    assert_rope_equal(offset_fn(engines.neox_rope(64, 10000.0)), reference, max_position=8191)
    fp16 = offset_fn(engines.neox_rope(64, 10000.0, bug="fp16"))
    assert named(fp16, reference, max_position=8191) == [
        "positions, inv_freq, angles and tables all in float16"
    ]


# --- mistral-inference's Pixtral: a patch grid, interleaved pairs -----------------------------

PIXTRAL = {"scheme": "pixtral", "head_dim": 64, "base": 10000.0}


def axial_named(fn, **options) -> list[str]:
    with pytest.raises(AssertionError) as info:
        assert_axial_rope_equal(fn, **PIXTRAL, **options)
    return diagnosis(str(info.value))


def test_mistral_inference_pixtral_passes_with_its_own_layout():
    assert_axial_rope_equal(engines.pixtral_mistral_rope(64, 10000.0), **PIXTRAL,
                            layout="interleaved")  # fmt: skip
    # against HF's half layout it is the layout, named, not an unexplained failure
    assert axial_named(engines.pixtral_mistral_rope(64, 10000.0)) == ["the other pair layout"]


def test_a_transposed_patch_grid_is_named():
    bug = engines.pixtral_mistral_rope(64, 10000.0, bug="transposed")
    assert axial_named(bug, layout="interleaved") == ["the patch grid transposed"]
