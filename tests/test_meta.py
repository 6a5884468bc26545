"""Every public name works with ``meta`` tensors: shapes and dtypes without data.

Shape inference and the deferred initialisation of large models build whole networks on the
``meta`` device, where a tensor has a shape and a dtype but no values. A positional encoding must
then produce correctly shaped meta outputs (value checks are skipped, since there are no values;
shape and dtype checks still run), and functions that build tensors must accept
``device="meta"``.

The test enumerates ``posenc_ref.__all__``: a public name without a case below fails, so a new
function cannot be added without saying how it behaves on ``meta``.
"""

from __future__ import annotations

import inspect

import pytest
import torch

import posenc_ref
from posenc_ref import (
    LearnedPositionalEmbedding,
    RotaryEmbedding,
    ScaledFrequencies,
    SinusoidalPositionalEncoding,
    inv_freq,
    sinusoidal,
)

META = torch.device("meta")


def meta(*shape: int, dtype: torch.dtype = torch.float32) -> torch.Tensor:
    return torch.empty(*shape, dtype=dtype, device=META)


def expect(result, shape: tuple[int, ...], dtype: torch.dtype) -> None:
    assert isinstance(result, torch.Tensor), type(result)
    assert result.device == META, result.device
    assert tuple(result.shape) == shape and result.dtype == dtype, (result.shape, result.dtype)


# --- one case per public name: the call on meta, and what it must return -----------------------


def _sinusoidal_module():
    pe = SinusoidalPositionalEncoding(8, max_len=16, dropout=0.0, device="meta")
    expect(pe.table, (16, 8), torch.float32)
    expect(pe(meta(2, 5, 8), offset=3), (2, 5, 8), torch.float32)
    expect(pe(meta(2, 5, 8, dtype=torch.bfloat16)), (2, 5, 8), torch.bfloat16)


def _learned_module():
    emb = LearnedPositionalEmbedding(16, 8, dropout=0.0, device="meta")
    expect(emb.weight, (16, 8), torch.float32)
    expect(emb(meta(5, 2, 8)), (5, 2, 8), torch.float32)


def _rotary_module():
    rope = RotaryEmbedding(16, rotary_dim=8, max_len=32, device="meta")
    q_rot, k_rot = rope(meta(2, 4, 6, 16), meta(2, 1, 6, 16), offset=40)  # past max_len
    expect(q_rot, (2, 4, 6, 16), torch.float32)
    expect(k_rot, (2, 1, 6, 16), torch.float32)


def _rope_tables():
    positions = meta(2, 7, dtype=torch.int64)
    cos, sin = posenc_ref.rope_cos_sin(positions, posenc_ref.inv_freq(8, device="meta"))
    expect(cos, (2, 7, 4), torch.float32)
    expect(sin, (2, 7, 4), torch.float32)


def _apply_rope():
    x = meta(2, 3, 7, 16, dtype=torch.bfloat16)
    cos, sin = meta(7, 4), meta(7, 4)
    for layout in ("interleaved", "half"):
        out = posenc_ref.apply_rope(x, cos, sin, layout=layout, rotary_dim=8)
        expect(out, (2, 3, 7, 16), torch.bfloat16)


def _apply_rope_loop():
    x = meta(3, 7, 8)
    out = posenc_ref.apply_rope_loop(
        x, meta(7, dtype=torch.int64), posenc_ref.inv_freq(8, device="meta")
    )
    expect(out, (3, 7, 8), torch.float32)


def _scaled_frequencies():
    # A NamedTuple of frequencies and a factor. The frequencies are a property of the model, not
    # of the device: a module built on meta from (CPU, float64) scaled frequencies stays on meta.
    from posenc_ref.rope_scaling import linear

    freqs = linear(8, factor=2.0)
    assert isinstance(freqs, ScaledFrequencies)
    rope = RotaryEmbedding(8, scaling=freqs, max_len=16, device="meta")
    expect(rope(meta(1, 5, 8), meta(1, 5, 8))[0], (1, 5, 8), torch.float32)
    on_meta = ScaledFrequencies(posenc_ref.inv_freq(8, device="meta"), 1.0)
    expect(on_meta.inv_freq, (4,), torch.float64)


def _in_meta_context(function, *args):
    # Functions that take no tensor and return plain numbers or NumPy arrays: nothing to put on
    # meta, but they must keep working (and return real values) inside code that builds a model
    # under `with torch.device("meta")`.
    def check():
        with torch.device("meta"):
            result = function(*args)
        assert not isinstance(result, torch.Tensor), type(result)
        return result

    return check


CASES = {
    "inv_freq": lambda: expect(posenc_ref.inv_freq(8, device="meta"), (4,), torch.float64),
    "wavelengths": lambda: expect(posenc_ref.wavelengths(8, device="meta"), (4,), torch.float64),
    "sinusoidal": lambda: expect(
        sinusoidal(5, 8, offset=2, device="meta", dtype=torch.float16), (5, 8), torch.float16
    ),
    "relative_rotation": lambda: expect(
        posenc_ref.relative_rotation(3, 8, device="meta"), (8, 8), torch.float64
    ),
    "sinusoidal_loop": _in_meta_context(posenc_ref.sinusoidal_loop, 3, 4),
    "binary_encoding": _in_meta_context(posenc_ref.binary_encoding, 4, 2),
    "adjacent_distance": _in_meta_context(posenc_ref.adjacent_distance, 8, 10000.0, 3),
    "offset_dot_product": _in_meta_context(posenc_ref.offset_dot_product, 8, 10000.0, 3),
    "available_devices": _in_meta_context(posenc_ref.available_devices),
    "select_device": lambda: posenc_ref.select_device("meta") == META or pytest.fail("not meta"),
    "SinusoidalPositionalEncoding": _sinusoidal_module,
    "LearnedPositionalEmbedding": _learned_module,
    "relative_positions": lambda: expect(
        posenc_ref.relative_positions(3, 5, device="meta"), (3, 5), torch.int64
    ),
    "shaw_relative_index": lambda: expect(
        posenc_ref.shaw_relative_index(meta(3, 5, dtype=torch.int64), 2), (3, 5), torch.int64
    ),
    "t5_relative_bucket": lambda: expect(
        posenc_ref.t5_relative_bucket(meta(3, 5, dtype=torch.int32), bidirectional=False),
        (3, 5),
        torch.int64,
    ),
    "alibi_slopes": lambda: expect(posenc_ref.alibi_slopes(6, device="meta"), (6,), torch.float32),
    "alibi_bias": lambda: expect(
        posenc_ref.alibi_bias(6, 3, 5, device="meta", dtype=torch.bfloat16),
        (6, 3, 5),
        torch.bfloat16,
    ),
    "kerple_log_bias": lambda: expect(
        posenc_ref.kerple_log_bias(meta(4), meta(4), 3, 5, device="meta", dtype=torch.bfloat16),
        (4, 3, 5),
        torch.bfloat16,
    ),
    "kerple_power_bias": lambda: expect(
        posenc_ref.kerple_power_bias(meta(4), meta(4), 3, 5, device="meta"),
        (4, 3, 5),
        torch.float32,
    ),
    "FireWeights": lambda: expect(
        posenc_ref.FireWeights(meta(8, 1), meta(8), meta(4, 8), meta(4)).w2, (4, 8), torch.float32
    ),
    "fire_bias": lambda: expect(
        posenc_ref.fire_bias(
            posenc_ref.FireWeights(meta(8, 1), meta(8), meta(4, 8), meta(4)), 3, 5, device="meta"
        ),
        (4, 3, 5),
        torch.float32,
    ),
    "RotaryEmbedding": _rotary_module,
    "ScaledFrequencies": _scaled_frequencies,
    "rope_cos_sin": _rope_tables,
    "apply_rope": _apply_rope,
    "apply_rope_loop": _apply_rope_loop,
    "to_half_layout": lambda: expect(posenc_ref.to_half_layout(meta(2, 8)), (2, 8), torch.float32),
    "to_interleaved_layout": lambda: expect(
        posenc_ref.to_interleaved_layout(meta(2, 8)), (2, 8), torch.float32
    ),
    "permute_qk_weight": lambda: expect(
        posenc_ref.permute_qk_weight(meta(4 * 8, 20), 4, to_layout="half"), (32, 20), torch.float32
    ),
}


@pytest.mark.parametrize("name", posenc_ref.__all__)
def test_public_name_works_on_meta(name):
    """Each public name: meta in, meta out with the right shape and dtype (or real numbers)."""
    if name not in CASES:
        pytest.fail(f"new public name {name!r}: add its meta case to CASES in tests/test_meta.py")
    CASES[name]()


def test_cases_cover_exactly_the_public_names():
    """No stale case for a name that left ``__all__``."""
    assert sorted(CASES) == sorted(posenc_ref.__all__)


def test_tensor_builders_accept_a_device():
    """Every public function or class that builds a tensor from numbers takes ``device=``."""
    takes_no_device = {  # they take tensors (output follows the input) or return numbers
        "adjacent_distance",
        "apply_rope",
        "apply_rope_loop",
        "available_devices",
        "binary_encoding",
        "offset_dot_product",
        "permute_qk_weight",
        "rope_cos_sin",
        "select_device",
        "shaw_relative_index",
        "sinusoidal_loop",
        "t5_relative_bucket",
        "to_half_layout",
        "to_interleaved_layout",
        "ScaledFrequencies",
        "FireWeights",  # a container of the caller's tensors
    }
    for name in sorted(set(posenc_ref.__all__) - takes_no_device):
        assert "device" in inspect.signature(getattr(posenc_ref, name)).parameters, name


# --- value checks are skipped on meta; shape and dtype checks are not ---------------------------


@pytest.mark.parametrize(
    ("call", "error", "message"),
    [
        (
            lambda: SinusoidalPositionalEncoding(8, max_len=4, device="meta")(meta(1, 5, 8)),
            ValueError,
            "do not fit in max_len=4",
        ),
        (
            lambda: SinusoidalPositionalEncoding(8, device="meta")(meta(1, 5, 6)),
            ValueError,
            "last dimension must be dim=8",
        ),
        (
            lambda: posenc_ref.t5_relative_bucket(meta(3, dtype=torch.float32)),
            TypeError,
            "must be an integer tensor",
        ),
        (
            lambda: posenc_ref.shaw_relative_index(meta(3, dtype=torch.bool), 2),
            TypeError,
            "must be an integer tensor",
        ),
        (
            lambda: posenc_ref.apply_rope(meta(2, 7, 8), meta(7, 8), meta(7, 8)),
            ValueError,
            "4",  # the tables must have rotary_dim // 2 = 4 entries, not 8
        ),
    ],
    ids=["module-length", "module-width", "t5-dtype", "shaw-dtype", "rope-table-width"],
)
def test_shape_and_dtype_checks_still_run_on_meta(call, error, message):
    with pytest.raises(error, match=message):
        call()


# --- deferred initialisation: meta, then to_empty, then reset_parameters ------------------------


def test_sinusoidal_module_deferred_initialisation():
    """Built on meta (no allocation), materialised with to_empty, filled by reset_parameters.

    to_empty leaves the non-persistent table uninitialised (a state_dict does not carry it);
    reset_parameters recomputes it, equal to a module built directly.
    """
    pe = SinusoidalPositionalEncoding(8, max_len=16, base=100.0, dropout=0.0, device="meta")
    pe.to_empty(device="cpu")
    pe.reset_parameters()
    direct = SinusoidalPositionalEncoding(8, max_len=16, base=100.0, dropout=0.0)
    torch.testing.assert_close(pe.table, direct.table, rtol=0, atol=0)
    x = torch.randn(2, 5, 8)
    torch.testing.assert_close(pe(x, offset=3), direct(x, offset=3), rtol=0, atol=0)


def test_learned_module_deferred_initialisation():
    """reset_parameters draws the weight with init_std, also after to_empty from meta."""
    emb = LearnedPositionalEmbedding(4096, 8, init_std=0.5, device="meta")
    emb.to_empty(device="cpu")
    torch.manual_seed(0)
    emb.reset_parameters()
    assert emb.weight.requires_grad
    assert abs(emb.weight.std().item() - 0.5) < 0.02  # 32768 draws: std within about 1%
    assert abs(emb.weight.mean().item()) < 0.02


def test_rotary_module_deferred_initialisation():
    """The rotary cache after to_empty is uninitialised memory; reset_parameters rebuilds it."""
    rope = RotaryEmbedding(8, rotary_dim=4, max_len=32, device="meta")
    rope.to_empty(device="cpu")
    rope.reset_parameters()
    direct = RotaryEmbedding(8, rotary_dim=4, max_len=32)
    torch.testing.assert_close(rope.cos_cached, direct.cos_cached, rtol=0, atol=0)
    q = torch.randn(1, 2, 5, 8)
    torch.testing.assert_close(rope(q, q, offset=7), direct(q, q, offset=7), rtol=0, atol=0)


def test_rotary_module_refuses_meta_frequencies():
    """Its frequencies are float64 CPU values: meta ones are refused with the way out."""
    meta_freqs = ScaledFrequencies(inv_freq(8).to("meta"), 1.0)
    with pytest.raises(ValueError, match="compute them on the CPU"):
        RotaryEmbedding(8, scaling=meta_freqs, device="meta")
