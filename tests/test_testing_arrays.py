"""The kit with other array libraries and calling conventions: conversions and adapters.

NumPy is always there; JAX, MLX and ml_dtypes are optional (the frameworks extra) and their
tests skip without them.
"""

import numpy as np
import pytest
import torch

from posenc_ref import RotaryEmbedding, rope_cos_sin
from posenc_ref.testing import (
    assert_composition,
    assert_layout_permutation,
    assert_norm_preserved,
    assert_relative_property,
    assert_rope_equal,
    offset_fn,
    positions_fn,
    qk_fn,
    rope_error,
    table_fn,
)
from posenc_ref.testing._arrays import to_library, to_torch

HALF = RotaryEmbedding(32, layout="half")


def numpy_rope(q, k, positions, dtype=None):
    """HF's rotation written in NumPy: float32 angles, rotate_half, the input's dtype back."""
    inv_freq = (1.0 / 10000.0 ** (np.arange(0, 32, 2, dtype=np.float32) / 32)).astype(np.float32)
    angles = positions[:, None].astype(np.float32) * inv_freq
    cos = np.concatenate([np.cos(angles)] * 2, axis=-1)
    sin = np.concatenate([np.sin(angles)] * 2, axis=-1)

    def rotate(x):
        x32 = x.astype(np.float32)
        half = np.concatenate([-x32[..., 16:], x32[..., :16]], axis=-1)
        return (x32 * cos + half * sin).astype(dtype or x.dtype)

    return rotate(q), rotate(k)


def message(check, *args, **kwargs) -> str:
    with pytest.raises(AssertionError) as info:
        check(*args, **kwargs)
    return str(info.value)


def diagnosis(text: str) -> list[str]:
    return [
        line.split(":")[0].strip(" -") for line in text.splitlines() if line.startswith("    - ")
    ]


# --------------------------------------------------------------------------- conversion


def test_numpy_function_passes_and_its_bugs_are_diagnosed_as_in_torch():
    assert_rope_equal(qk_fn(numpy_rope, arrays="numpy"), HALF)
    interleaved = RotaryEmbedding(32, layout="interleaved")
    text = message(assert_rope_equal, qk_fn(numpy_rope, arrays="numpy"), interleaved)
    assert diagnosis(text) == ["the other pair layout"]


def test_returned_dtype_is_judged_not_converted():
    """A NumPy function that returns float32 for float64 input is told so, not cast back."""
    fn = qk_fn(lambda q, k, p: numpy_rope(q, k, p, dtype=np.float32), arrays="numpy")
    text = message(assert_rope_equal, fn, HALF, dtypes=(torch.float64,))
    assert "q_rot as float32 for float64 input" in text


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.float16, torch.int64])
def test_numpy_round_trip_is_exact(dtype):
    t = (torch.randn(3, 5) * 100).to(dtype)
    back = to_torch(to_library(t, "numpy"), "x")
    assert back.dtype == dtype and torch.equal(back, t)


def test_bfloat16_for_numpy_uses_ml_dtypes_bit_for_bit():
    ml_dtypes = pytest.importorskip("ml_dtypes")
    t = torch.randn(4, 7).to(torch.bfloat16)
    array = to_library(t, "numpy")
    assert array.dtype == ml_dtypes.bfloat16
    back = to_torch(array, "x")
    assert back.dtype == torch.bfloat16 and torch.equal(back, t)
    # and a NumPy function checked with bfloat16 inputs is judged as bfloat16
    assert_rope_equal(qk_fn(numpy_rope, arrays="numpy"), HALF, dtypes=(torch.bfloat16,))


def test_outputs_of_unknown_kinds_are_named():
    with pytest.raises(AssertionError, match="list for q_rot, not an array"):
        to_torch([1.0, 2.0], "q_rot")


def test_unknown_library_is_refused():
    with pytest.raises(ValueError, match="arrays must be one of"):
        qk_fn(numpy_rope, arrays="tensorflow")
    with pytest.raises(TypeError, match=r"callable as fn\(x, offset\)"):
        offset_fn(None)


def test_no_jax_or_mlx_import_unless_asked(fresh_imports):
    """In a fresh interpreter (shared: tests/fresh_interpreter.py), the kit on NumPy arrays."""
    from tests.fresh_interpreter import modules_after

    loaded = modules_after(fresh_imports, "the kit with NumPy arrays")
    assert sorted(m for m in ("jax", "mlx", "ml_dtypes") if m in loaded) == []


# --------------------------------------------------------------------------- one output check


MALFORMED = [
    (lambda q, k: q, r"must return \(q_rot, k_rot\), got Tensor"),
    (lambda q, k: (q, k, q), r"must return \(q_rot, k_rot\), got tuple of 3"),
    (lambda q, k: (q, k.tolist()), "list for k_rot, not an array"),
    (lambda q, k: (q[..., :-2], k), "q_rot of shape .* for q of shape"),
    (lambda q, k: (q.double(), k.double()), "q_rot as float64 for float32 input"),
]


def _checks():
    return {
        "assert_rope_equal": lambda fn: assert_rope_equal(fn, HALF, max_position=400),
        "rope_error": lambda fn: rope_error(fn, HALF, torch.arange(5)),
        "assert_relative_property": lambda fn: assert_relative_property(fn, 32),
        "assert_norm_preserved": lambda fn: assert_norm_preserved(fn, 32),
        "assert_composition": lambda fn: assert_composition(fn, 32),
        "assert_layout_permutation": lambda fn: assert_layout_permutation(fn, fn, 32),
    }


@pytest.mark.parametrize("check", list(_checks()))
@pytest.mark.parametrize("result, match", MALFORMED, ids=["one", "three", "list", "width", "dtype"])
def test_every_check_names_a_malformed_output_the_same_way(check, result, match):
    """rope_error used to fail inside with numpy, a wrong width or three outputs (issue 19)."""
    with pytest.raises(AssertionError, match=match):
        _checks()[check](lambda q, k, p: result(q, k))


# --------------------------------------------------------------------------- adapters


def test_offset_fn_and_positions_fn_pass_for_a_correct_rotation():
    assert_rope_equal(offset_fn(lambda x, offset: HALF(x, x, offset=offset)[0]), HALF)
    assert_rope_equal(positions_fn(lambda x, p: HALF(x, x, p)[0]), HALF)


def test_offset_fn_splits_runs_for_the_property_checks():
    calls = []

    def rotate(x, offset):
        calls.append((offset, x.shape[-2]))
        return HALF(x, x, offset=offset)[0]

    assert_relative_property(offset_fn(rotate), 32, positions=[0, 1, 2, 100, 101])
    assert (100, 2) in calls and (0, 3) in calls


def test_offset_fn_that_ignores_its_offset_is_diagnosed():
    fn = offset_fn(lambda x, offset: HALF(x, x)[0])  # always from position 0
    assert diagnosis(message(assert_rope_equal, fn, HALF)) == ["positions ignored"]


def test_table_fn_checks_the_table_per_pair_and_per_coordinate():
    cos, sin = rope_cos_sin(torch.arange(5000), HALF.inv_freq)
    assert_rope_equal(table_fn(cos.numpy(), sin.numpy(), layout="half"), HALF)  # max_position
    wide = table_fn(torch.cat([cos, cos], -1), torch.cat([sin, sin], -1), layout="half")
    assert_rope_equal(wide, HALF)
    # a table laid out for the other layout than its rotation
    mixed = table_fn(
        cos.repeat_interleave(2, -1), sin.repeat_interleave(2, -1), layout="half", rotary_dim=32
    )
    text = message(assert_rope_equal, mixed, HALF)
    assert diagnosis(text) == ["a cos/sin table laid out for the other layout"]
    # a table of another base, in bfloat16
    other, other_sin = rope_cos_sin(torch.arange(5000), RotaryEmbedding(32, base=500000.0).inv_freq)
    text = message(assert_rope_equal, table_fn(other, other_sin, layout="half"), HALF)
    assert diagnosis(text) == ["a different base"]
    assert "base 500000" in text
    with pytest.raises(ValueError, match="table has rows for positions 0..4999"):
        assert_rope_equal(table_fn(cos, sin, layout="half"), HALF, max_position=6000)


def test_table_fn_refuses_mismatched_tables():
    with pytest.raises(ValueError, match="tables of one shape"):
        table_fn(torch.ones(4, 8), torch.ones(4, 6), layout="half")
    with pytest.raises(ValueError, match="layout must be one of"):
        table_fn(torch.ones(4, 8), torch.ones(4, 8), layout="neox")


def test_far_positions_cost_their_number_not_their_value():
    """max_position=2**40 builds no table sized by the position (issue 19)."""
    reference = RotaryEmbedding(
        32,
        layout="half",
        scaling={"method": "dynamic_ntk", "factor": 4.0, "original_max_len": 4096},
    )
    assert_rope_equal(reference, reference, max_position=2**40)
    assert reference.max_len <= 1 << 20
    errors = rope_error(reference, reference, torch.tensor([0, 2**40]))
    assert errors.shape == (2,) and float(errors.max()) < 8 * 2.0**-24  # float32 rounding only


# --------------------------------------------------------------------------- JAX and MLX


def test_jax_function_checked_in_one_call():
    jnp = pytest.importorskip("jax.numpy")

    def jax_rope(x, positions):
        inv_freq = 1.0 / 10000.0 ** (jnp.arange(0, 32, 2, dtype=jnp.float32) / 32)
        angles = positions[:, None].astype(jnp.float32) * inv_freq
        cos = jnp.concatenate([jnp.cos(angles)] * 2, -1)
        sin = jnp.concatenate([jnp.sin(angles)] * 2, -1)
        half = jnp.concatenate([-x[..., 16:], x[..., :16]], -1)
        return (x * cos + half * sin).astype(x.dtype)

    both = (torch.float32, torch.bfloat16)
    assert_rope_equal(positions_fn(jax_rope, arrays="jax"), HALF, dtypes=both)
    text = message(
        assert_rope_equal,
        positions_fn(lambda x, p: jax_rope(x, p + 1), arrays="jax"),
        HALF,
    )
    assert diagnosis(text) == ["positions off by one"]


def test_mlx_function_checked_in_one_call():
    mx = pytest.importorskip("mlx.core")

    def mlx_rope(x, offset):
        return mx.fast.rope(x, 32, traditional=False, base=10000.0, scale=1.0, offset=offset)

    both = (torch.float32, torch.bfloat16)
    assert_rope_equal(offset_fn(mlx_rope, arrays="mlx"), HALF, dtypes=both)
    assert_norm_preserved(offset_fn(mlx_rope, arrays="mlx"), 32)
    text = message(
        assert_rope_equal,
        offset_fn(mlx_rope, arrays="mlx"),
        RotaryEmbedding(32, base=500000.0, layout="half"),
    )
    assert diagnosis(text) == ["a different base"]
