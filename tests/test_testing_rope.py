"""The RoPE conformance check, assert_rope_equal: no false alarms, a right diagnosis per bug.

Correct implementations (ours, HF transformers, a Meta-style complex rotation, typical float32
code) must pass; each deliberately wrong one in tests/rope_implementations.py must get its
diagnosis; options and messages behave as documented.
"""

import re

import pytest
import torch
from hypothesis import given, settings

from posenc_ref import RotaryEmbedding
from posenc_ref.models import released_configs
from posenc_ref.rope_scaling import ScaledFrequencies, llama3, yarn
from posenc_ref.testing import assert_rope_equal, rope_error
from posenc_ref.testing.strategies import rope_kwargs
from tests.rope_implementations import hf_family_rope, hf_rope, meta_style, user_rope

BF16, F16 = torch.bfloat16, torch.float16

SCALINGS = [
    None,
    {"method": "linear", "factor": 4.0},
    {"method": "ntk_aware", "factor": 4.0},
    {"method": "dynamic_ntk", "factor": 4.0, "original_max_len": 2048},
    {"method": "yarn", "factor": 8.0, "original_max_len": 4096},
    {"method": "llama3", "factor": 8.0, "original_max_len": 8192},
    yarn(64, factor=16.0, original_max_len=2048),  # a ScaledFrequencies given directly
]


def diagnosis(message: str) -> list[str]:
    """Titles of the causes the message names as reproducing the output."""
    if "Diagnosis (tested" not in message:
        return []
    block = message.split("Diagnosis (tested", 1)[1].split("Tolerance per coordinate", 1)[0]
    return re.findall(r"^    - ([^:]+):", block, flags=re.M)


def failure(fn, reference, **options) -> str:
    with pytest.raises(AssertionError) as info:
        assert_rope_equal(fn, reference, **options)
    return str(info.value)


# --- no false alarms ---------------------------------------------------------------------------


@pytest.mark.parametrize("scaling", SCALINGS, ids=lambda s: str(s)[:30])
@pytest.mark.parametrize("layout", ["interleaved", "half"])
def test_ours_passes_in_both_layouts_with_every_scaling(layout, scaling):
    """A second RotaryEmbedding with the same arguments agrees, float32 and bfloat16."""
    reference = RotaryEmbedding(64, layout=layout, scaling=scaling)
    twin = RotaryEmbedding(64, layout=layout, scaling=scaling)
    assert_rope_equal(twin, reference, dtypes=(torch.float32, BF16))


@pytest.mark.parametrize("layout", ["interleaved", "half"])
def test_ours_passes_with_partial_rotary(layout):
    reference = RotaryEmbedding(64, rotary_dim=24, layout=layout, base=500000.0)
    assert_rope_equal(RotaryEmbedding(64, rotary_dim=24, layout=layout, base=500000.0), reference)


@pytest.mark.parametrize("layout", ["interleaved", "half"])
@pytest.mark.parametrize("rotary_dim", [None, 16])
def test_float32_user_code_passes(layout, rotary_dim):
    """Typical float32 code (float32 frequencies and angles) is within the default tolerance."""
    reference = RotaryEmbedding(64, layout=layout, rotary_dim=rotary_dim)
    assert_rope_equal(user_rope(64, layout=layout, rotary_dim=rotary_dim), reference)


@pytest.mark.parametrize(
    "scaling",
    [
        {"method": "linear", "factor": 4.0},
        {"method": "yarn", "factor": 8.0, "original_max_len": 4096},
        {"method": "llama3", "factor": 8.0, "original_max_len": 8192},
    ],
    ids=lambda s: s["method"],
)
def test_float32_user_code_passes_with_scaled_frequencies(scaling):
    reference = RotaryEmbedding(128, base=500000.0, layout="half", scaling=scaling)
    freqs = reference.frequencies(0)
    fn = user_rope(128, inv_freq=freqs.inv_freq, attention_factor=freqs.attention_factor)
    assert_rope_equal(fn, reference, dtypes=(torch.float32, BF16))


@pytest.mark.parametrize("base", [10000.0, 500000.0])
def test_meta_style_complex_rotation_passes(base):
    assert_rope_equal(meta_style(128, base), RotaryEmbedding(128, base=base))


def test_meta_style_passes_with_llama3_frequencies():
    reference = RotaryEmbedding(128, base=500000.0, scaling=llama3(128))
    assert_rope_equal(meta_style(128, inv_freq=reference.inv_freq), reference)


HF_CASES = [
    # (our scaling, HF rope_parameters, max_position_embeddings, base)
    (None, {}, 4096, 10000.0),
    ({"method": "linear", "factor": 4.0}, {"rope_type": "linear", "factor": 4.0}, 4096, 10000.0),
    (
        {"method": "dynamic_ntk", "factor": 4.0, "original_max_len": 4096},
        {"rope_type": "dynamic", "factor": 4.0},
        4096,
        10000.0,
    ),
    (
        {"method": "yarn", "factor": 8.0, "original_max_len": 4096},
        {"rope_type": "yarn", "factor": 8.0, "original_max_position_embeddings": 4096},
        32768,
        10000.0,
    ),
    (
        {"method": "llama3", "factor": 8.0, "original_max_len": 8192},
        {
            "rope_type": "llama3",
            "factor": 8.0,
            "low_freq_factor": 1.0,
            "high_freq_factor": 4.0,
            "original_max_position_embeddings": 8192,
        },
        131072,
        500000.0,
    ),
]


@pytest.mark.peers
@pytest.mark.parametrize("ours, theirs, max_positions, base", HF_CASES, ids=lambda c: str(c)[:24])
def test_hf_transformers_passes(ours, theirs, max_positions, base):
    """HF's own rotation (float32 angles, rotate_half) passes, in float32 and bfloat16."""
    pytest.importorskip("transformers")
    fn = hf_rope(128, base, max_positions, **theirs)
    reference = RotaryEmbedding(128, base=base, layout="half", scaling=ours)
    assert_rope_equal(fn, reference, dtypes=(torch.float32, BF16))


@pytest.mark.peers
def test_hf_transformers_partial_rotary_passes():
    pytest.importorskip("transformers")
    fn = hf_rope(64, 10000.0, partial_rotary_factor=0.25)
    assert_rope_equal(fn, RotaryEmbedding(64, rotary_dim=16, layout="half"))


RELEASED = {entry["name"]: entry["config"] for entry in released_configs()}
# Families whose HF rotation takes 1-D positions (M-RoPE, Gemma's per-layer dict and DeepSeek's
# MLA attention are checked separately below).
HF_FAMILIES = [
    "Llama 3.1",
    "Qwen2.5 (YaRN)",
    "GPT-NeoX / Pythia",
    "Phi-2",
    "GLM-4",
    "Phi-3.5-mini (LongRoPE)",
    "Phi-4-mini (LongRoPE, partial)",
    "gpt-oss (YaRN, truncate false)",
]


@pytest.mark.peers
@pytest.mark.parametrize("name", HF_FAMILIES)
def test_hf_rotation_of_released_models_passes_against_from_hf_config(name):
    """Each family's own HF code (partial rotary, GLM's interleaved pairs, LongRoPE's switch)."""
    pytest.importorskip("transformers")
    config = RELEASED[name]
    assert_rope_equal(hf_family_rope(config), RotaryEmbedding.from_hf_config(config))


def test_deepseek_output_order_is_followed_and_diagnosed():
    """DeepSeek-V3 writes its interleaved pairs back in half order; forgetting that is named."""
    reference = RotaryEmbedding.from_hf_config(RELEASED["DeepSeek-V3 (YaRN, mscale)"])
    assert_rope_equal(RotaryEmbedding.from_hf_config(RELEASED["DeepSeek-V3 (YaRN, mscale)"]),
                      reference)  # fmt: skip
    freqs = reference.frequencies(0)
    same_order = RotaryEmbedding(reference.head_dim, layout="interleaved", scaling=freqs)
    message = failure(same_order, reference)
    assert diagnosis(message) == ["results written back in the other order"]


def test_mrope_reference_is_checked_on_its_text_path():
    """With one position row, M-RoPE is plain RoPE: the same frequencies, no sections.

    The image call (three distinct rows) is left out with ``patterns``; a text-only function
    cannot take it (tests/test_testing_patterns.py checks what the image call finds).
    """
    reference = RotaryEmbedding.from_hf_config(RELEASED["Qwen2-VL (M-RoPE)"])
    text_only = RotaryEmbedding(
        reference.head_dim,
        layout=reference.layout,
        scaling=ScaledFrequencies(reference.inv_freq, reference.attention_factor),
    )
    assert_rope_equal(text_only, reference, patterns=("prefill", "decode", "chunk"))


@settings(max_examples=8)
@given(rope_kwargs(max_head_dim=32))
def test_any_reference_passes_against_its_twin(kwargs):
    """For references drawn by the kit's own strategy, a module with the same spec agrees."""
    assert_rope_equal(RotaryEmbedding(**kwargs), RotaryEmbedding(**kwargs), max_position=20_000)


@settings(max_examples=8)
@given(rope_kwargs(max_head_dim=32))
def test_any_reference_flags_the_other_layout(kwargs):
    """The same module in the other layout is diagnosed as such (unless one pair: no layout)."""
    other = dict(kwargs, layout="half" if kwargs["layout"] == "interleaved" else "interleaved")
    if kwargs["rotary_dim"] == 2:
        assert_rope_equal(RotaryEmbedding(**other), RotaryEmbedding(**kwargs))
        return
    message = failure(RotaryEmbedding(**other), RotaryEmbedding(**kwargs), max_position=20_000)
    assert "the other pair layout" in diagnosis(message)


# --- float32 angles ----------------------------------------------------------------------------


def test_float64_angles_pass_the_strict_check():
    reference = RotaryEmbedding(64, layout="half")
    assert_rope_equal(RotaryEmbedding(64, layout="half"), reference, float32_angles=False)
    assert_rope_equal(user_rope(64, float64_angles=True), reference, float32_angles=False)


def test_float32_angles_fail_the_strict_check_with_that_diagnosis():
    message = failure(user_rope(64), RotaryEmbedding(64, layout="half"), float32_angles=False)
    assert "Diagnosis (tested): float32 angles" in message


def test_rope_error_grows_with_position_for_float32_angles():
    """rope_error: float32 angles drift with the position, float64 angles stay at rounding."""
    reference = RotaryEmbedding(64, layout="half")
    positions = torch.tensor([1, 10, 100, 1000, 10_000, 100_000, 1_000_000])
    f32 = rope_error(user_rope(64), reference, positions)
    f64 = rope_error(user_rope(64, float64_angles=True), reference, positions)
    assert f32.shape == positions.shape and f32.dtype == torch.float64
    assert float(f32[-1]) > 100 * float(f32[0])
    assert float(f32[-1]) > 1e-3  # radians of drift at a million positions
    assert float(f64.max()) < 1e-6


# --- each diagnosis on a deliberately wrong implementation ------------------------------------

HALF = {"layout": "half"}
# Each row of the bug table names its own example (tests/test_testing_bugs.py); these are the
# other directions and parameters of some rows: the fitted base, the other layout's table, each
# quantity in each low-precision dtype.
WRONG = [
    # (description, user_rope keywords, reference keywords, expected title)
    ("half vs interleaved", {"layout": "half"}, {}, "the other pair layout"),
    (
        "interleaved rotation with a half table",
        {"layout": "interleaved", "table_layout": "half"},
        {},
        "a cos/sin table laid out for the other layout",
    ),
    ("positions minus 1", {"position_shift": -1}, HALF, "positions off by one"),
    ("base 12345", {"base": 12345.0}, HALF, "a different base"),
    ("exponent -i/d", {"frequency_width": 128}, HALF, "a different base"),
    ("f16 positions", {"positions_dtype": F16}, HALF, "positions in float16"),
    ("bf16 inv_freq", {"inv_freq_dtype": BF16}, HALF, "inv_freq in bfloat16"),
    ("f16 inv_freq", {"inv_freq_dtype": F16}, HALF, "inv_freq in float16"),
    ("bf16 angles", {"angle_dtype": BF16}, HALF, "angles in bfloat16"),
    ("f16 angles", {"angle_dtype": F16}, HALF, "angles in float16"),
    ("bf16 tables", {"table_dtype": BF16}, HALF, "cos/sin tables in bfloat16"),
    ("f16 tables", {"table_dtype": F16}, HALF, "cos/sin tables in float16"),
]


@pytest.mark.parametrize("bug, theirs, ours, title", WRONG, ids=[w[0] for w in WRONG])
def test_each_bug_gets_its_diagnosis(bug, theirs, ours, title):
    message = failure(user_rope(64, **theirs), RotaryEmbedding(64, **ours))
    assert diagnosis(message)[:1] == [title], message


def test_a_different_base_names_the_base():
    message = failure(user_rope(64, base=12345.0), RotaryEmbedding(64, layout="half"))
    assert "your fn uses base 12345 where the reference has 10000" in message
    message = failure(user_rope(64, frequency_width=128), RotaryEmbedding(64, layout="half"))
    assert "base 100 where" in message and "-i/d instead of -2i/d" in message


def test_meta_code_against_an_hf_reference_is_the_layout():
    message = failure(meta_style(64), RotaryEmbedding(64, layout="half"))
    assert diagnosis(message) == ["the other pair layout"]


def test_two_bugs_at_once_layout_and_position():
    message = failure(
        user_rope(64, layout="interleaved", position_shift=1), RotaryEmbedding(64, layout="half")
    )
    assert diagnosis(message)[:1] == ["the other pair layout and positions off by one"]


SCALED_WRONG = [
    # (scaling, what the wrong fn does, expected title)
    ({"method": "yarn", "factor": 8.0, "original_max_len": 4096}, "no factor",
     "the attention factor missing"),
    ({"method": "yarn", "factor": 8.0, "original_max_len": 4096}, "factor twice",
     "the attention factor applied twice"),
    ({"method": "yarn", "factor": 8.0, "original_max_len": 4096}, "plain",
     "the scaling method not applied"),
    ({"method": "llama3", "factor": 8.0, "original_max_len": 8192}, "plain",
     "the scaling method not applied"),
    ({"method": "linear", "factor": 4.0}, "plain", "the scaling method not applied"),
    ({"method": "dynamic_ntk", "factor": 4.0, "original_max_len": 2048}, "static dynamic",
     "dynamic NTK frozen at the maximum length"),
]  # fmt: skip


@pytest.mark.parametrize("scaling, bug, title", SCALED_WRONG, ids=[w[1] for w in SCALED_WRONG])
def test_scaling_bugs_get_their_diagnosis(scaling, bug, title):
    base = 500000.0 if scaling["method"] == "llama3" else 10000.0
    reference = RotaryEmbedding(128, base=base, layout="half", scaling=scaling)
    freqs = reference.frequencies(0)
    if bug == "no factor":
        fn = user_rope(128, base, inv_freq=freqs.inv_freq)
    elif bug == "factor twice":
        fn = user_rope(
            128, base, inv_freq=freqs.inv_freq, attention_factor=freqs.attention_factor**2
        )
    elif bug == "plain":
        fn = user_rope(128, base)
    else:  # vLLM-style: the frequencies of length factor * original at every length
        extended = reference.frequencies(4 * 2048)
        fn = user_rope(128, base, inv_freq=extended.inv_freq)
    assert diagnosis(failure(fn, reference))[:1] == [title]


def test_llama3_with_torchtune_default_base_is_a_base_diagnosis():
    """Llama 3 scaling on base 10000 (torchtune's Llama3ScaledRoPE default) names the base."""
    reference = RotaryEmbedding(128, base=500000.0, scaling=llama3(128))
    fn = meta_style(128, inv_freq=llama3(128, base=10000.0).inv_freq)
    message = failure(fn, RotaryEmbedding(128, base=500000.0, scaling={"method": "llama3"}))
    assert diagnosis(message)[:1] == ["a different base"]
    assert "base 10000 where the reference has 500000" in message
    del reference


def test_unexplained_failure_says_so_and_shows_what_was_observed():
    """Only q's pass-through coordinates zeroed: no model reproduces it; the facts are listed."""
    correct = user_rope(64, rotary_dim=16)

    def tail_zeroed(q, k, positions):
        q_rot, k_rot = correct(q, k, positions)
        return torch.cat([q_rot[..., :16], torch.zeros_like(q_rot[..., 16:])], -1), k_rot

    message = failure(tail_zeroed, RotaryEmbedding(64, rotary_dim=16, layout="half"))
    assert diagnosis(message) == []
    assert "none of the" in message
    assert "k agrees with the reference everywhere; only q does not" in message
    assert "coordinates past rotary_dim = 16 were changed" in message
    assert "coordinate 16 of q[0, 0]" in message  # the first disagreeing coordinate


# --- the message -------------------------------------------------------------------------------


def test_message_shows_first_disagreement_and_largest_error():
    message = failure(user_rope(64, position_shift=1), RotaryEmbedding(64, layout="half"))
    # Position 0 already differs (it is rotated as position 1); pair 0 is the fastest pair.
    assert "First disagreement: position 0, pair 0 (coordinates 0 and 32) of q[0, 0]" in message
    largest = re.search(r"Largest error: ([0-9.e+-]+) at position (\d+), pair (\d+)", message)
    assert largest is not None and float(largest.group(1)) > 0.1
    assert "positions 0..299 (float32)" in message


def test_precision_bug_message_shows_where_the_error_starts():
    """bf16 positions agree up to 256 (exact in bfloat16); the first disagreement is after."""
    message = failure(user_rope(64, positions_dtype=BF16), RotaryEmbedding(64, layout="half"))
    first = int(re.search(r"First disagreement: position (\d+)", message).group(1))
    assert first == 257  # the first integer bfloat16 cannot hold


def test_same_seed_same_message_other_seed_other_inputs():
    fn, reference = user_rope(64, layout="interleaved"), RotaryEmbedding(64, layout="half")
    assert failure(fn, reference, seed=3) == failure(fn, reference, seed=3)
    assert failure(fn, reference, seed=3) != failure(fn, reference, seed=4)


# --- options -----------------------------------------------------------------------------------


def test_max_position_limits_the_positions_checked():
    """A fn with a fixed table of 2048 rows passes when told so, and fails beyond."""
    table_len = 2048

    correct = user_rope(64)

    def fixed_table(q, k, positions):
        if int(positions.max()) >= table_len:
            raise IndexError("position beyond the table")
        return correct(q, k, positions)

    reference = RotaryEmbedding(64, layout="half")
    assert_rope_equal(fixed_table, reference, max_position=table_len - 1)
    with pytest.raises(AssertionError) as info:
        assert_rope_equal(fixed_table, reference)
    message = str(info.value)
    assert message.startswith("fn raised IndexError in the call with ")
    assert "position beyond the table" in message  # the user's own message
    assert "up to 2047 and raises from position 2048 on" in message
    assert "Pass max_position=2047" in message
    assert isinstance(info.value.__cause__, IndexError)  # their traceback is kept


def test_rtol_accepts_a_low_precision_table_when_asked():
    fn, reference = user_rope(64, table_dtype=BF16), RotaryEmbedding(64, layout="half")
    failure(fn, reference)
    assert_rope_equal(fn, reference, rtol=1e-2)


def test_atol_adds_an_absolute_allowance():
    fn, reference = user_rope(64, table_dtype=F16), RotaryEmbedding(64, layout="half")
    failure(fn, reference)
    assert_rope_equal(fn, reference, atol=1e-2)


def test_bfloat16_inputs_are_checked_in_their_own_calls():
    """A fn that breaks only for bfloat16 input passes float32-only and fails with bf16 asked."""
    correct = user_rope(64)

    def bf16_broken(q, k, positions):
        if q.dtype == BF16:
            positions = positions + 1
        return correct(q, k, positions)

    reference = RotaryEmbedding(64, layout="half")
    assert_rope_equal(bf16_broken, reference)
    message = failure(bf16_broken, reference, dtypes=(torch.float32, BF16))
    assert "positions 0..299 (float32): " in message and "(agrees)" in message
    assert re.search(r"positions 0\.\.299 \(bfloat16\): [^\n]*\n", message)


def test_reference_is_not_modified():
    reference = RotaryEmbedding(64, layout="half", max_len=512)
    before = (reference.max_len, reference.cos_cached.dtype)
    assert_rope_equal(user_rope(64), reference)
    failure(user_rope(64, base=500000.0), reference)
    assert (reference.max_len, reference.cos_cached.dtype) == before


@pytest.mark.parametrize(
    "kwargs, error",
    [
        ({"max_position": 0}, ValueError),
        ({"max_position": 1.5}, TypeError),
        ({"dtypes": ()}, ValueError),
        ({"dtypes": (torch.int64,)}, TypeError),
        ({"dtypes": "float32"}, TypeError),
        ({"float32_angles": 1}, TypeError),
        ({"rtol": -1.0}, ValueError),
        ({"atol": float("nan")}, ValueError),
        ({"seed": -1}, ValueError),
        ({"seed": 1.0}, TypeError),
    ],
)
def test_bad_options_are_refused(kwargs, error):
    reference = RotaryEmbedding(8)
    with pytest.raises(error):
        assert_rope_equal(reference, reference, **kwargs)


def test_bad_fn_or_reference_is_refused():
    reference = RotaryEmbedding(8)
    with pytest.raises(TypeError, match="reference must be a posenc_ref.RotaryEmbedding"):
        assert_rope_equal(reference, "llama")
    with pytest.raises(TypeError, match="fn must be callable"):
        assert_rope_equal(None, reference)


@pytest.mark.parametrize(
    "result, match",
    [
        (lambda q, k: q, "must return \\(q_rot, k_rot\\)"),
        (lambda q, k: (q, k, q), "must return \\(q_rot, k_rot\\), got tuple of 3"),
        (lambda q, k: (q, k.tolist()), "list for k_rot, not an array"),
        (lambda q, k: (q.transpose(1, 2), k), "transpose around your code"),
        (lambda q, k: (q[..., :4], k), "shape \\(2, 2, 300, 4\\) for q of shape"),
        (lambda q, k: (q.float(), k.float()), "should return its input's dtype"),
    ],
    ids=["one tensor", "three", "list", "transposed", "width", "dtype"],
)
def test_malformed_outputs_fail_with_a_clear_message(result, match):
    reference = RotaryEmbedding(8)
    with pytest.raises(AssertionError, match=match):
        assert_rope_equal(lambda q, k, p: result(q, k), reference, dtypes=(torch.float64,))


def test_static_scaled_frequencies_reference_is_supported():
    freqs = ScaledFrequencies(torch.linspace(1.0, 0.01, 16, dtype=torch.float64), 1.3)
    reference = RotaryEmbedding(32, layout="half", scaling=freqs)
    fn = user_rope(32, inv_freq=freqs.inv_freq, attention_factor=1.3)
    assert_rope_equal(fn, reference)
    message = failure(user_rope(32, inv_freq=freqs.inv_freq), reference)
    assert diagnosis(message)[:1] == ["the attention factor missing"]


def test_low_precision_bounds_in_messages_are_the_unit_roundoff():
    """bfloat16 keeps 8 significant bits: rounding is off by up to 2^-8 relative, not 2^-9.

    The kit's messages and the check page once said 2^-9 (issue 19); the measured worst case
    of rounding many frequencies must reach past the wrong bound and stay within the right one.
    """
    from pathlib import Path

    values = torch.logspace(-4, 0, 100_001, dtype=torch.float64)  # normal in both
    for dtype, bits in ((torch.bfloat16, 8), (torch.float16, 11)):
        worst = float(((values.to(dtype).double() - values) / values).abs().max())
        assert 2.0 ** -(bits + 1) < worst <= 2.0**-bits
    reference = RotaryEmbedding(64, layout="half")
    for dtype, words in ((torch.bfloat16, "2^-8 of itself"), (torch.float16, "2^-11 of itself")):
        message = failure(
            user_rope(64, layout="half", inv_freq_dtype=dtype), reference, max_position=4000
        )
        assert words in " ".join(message.split())
    page = (Path(__file__).resolve().parents[1] / "docs" / "check.md").read_text()
    assert "2^{-9}" not in page and "2^{15}" not in page
