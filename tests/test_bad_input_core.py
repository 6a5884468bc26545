"""Bad and extreme input to the core modules: devices that do not exist, positions far away.

Each class of defect an outside audit found (issue 19) has a test here that would have caught
it: ``device="nonsense"`` and a GPU this machine lacks leaked torch's own errors, and a single
far position (``2**40``) made ``RotaryEmbedding`` grow its cached table to terabytes.
"""

import pytest
import torch

from posenc_ref import (
    LearnedPositionalEmbedding,
    RotaryEmbedding,
    SinusoidalPositionalEncoding,
    alibi_bias,
    alibi_slopes,
    apply_rope,
    inv_freq,
    relative_positions,
    relative_rotation,
    rope_cos_sin,
    sinusoidal,
    wavelengths,
)
from posenc_ref import device as device_module

# Every public callable that takes device=, with the rest of its arguments.
DEVICE_TAKERS = {
    "inv_freq": lambda device: inv_freq(8, device=device),
    "wavelengths": lambda device: wavelengths(8, device=device),
    "sinusoidal": lambda device: sinusoidal(4, 8, device=device),
    "relative_rotation": lambda device: relative_rotation(3, 8, device=device),
    "SinusoidalPositionalEncoding": lambda device: SinusoidalPositionalEncoding(8, device=device),
    "LearnedPositionalEmbedding": lambda device: LearnedPositionalEmbedding(4, 8, device=device),
    "relative_positions": lambda device: relative_positions(2, 3, device=device),
    "alibi_slopes": lambda device: alibi_slopes(4, device=device),
    "alibi_bias": lambda device: alibi_bias(4, 2, 3, device=device),
    "RotaryEmbedding": lambda device: RotaryEmbedding(8, device=device),
}


@pytest.fixture
def no_gpu(monkeypatch):
    monkeypatch.setattr(device_module, "_cuda_device_count", lambda: 0)
    monkeypatch.setattr(device_module, "_mps_available", lambda: False)


@pytest.mark.parametrize("name", sorted(DEVICE_TAKERS))
def test_unknown_device_type_names_the_argument(name, no_gpu):
    with pytest.raises(ValueError, match=r"device='nonsense' is not a device type; use 'auto'"):
        DEVICE_TAKERS[name]("nonsense")


@pytest.mark.parametrize("name", sorted(DEVICE_TAKERS))
@pytest.mark.parametrize("device", ["cuda", "cuda:3", "mps", torch.device("cuda", 1)])
def test_missing_accelerator_lists_what_is_available(name, device, no_gpu):
    with pytest.raises(RuntimeError, match=r"was requested but is not available; available: cpu$"):
        DEVICE_TAKERS[name](device)


@pytest.mark.parametrize("name", sorted(DEVICE_TAKERS))
def test_device_of_wrong_type(name, no_gpu):
    with pytest.raises(TypeError, match="device must be None, 'auto', a device string"):
        DEVICE_TAKERS[name](3)


@pytest.mark.parametrize("name", sorted(DEVICE_TAKERS))
def test_none_is_the_cpu_everywhere(name, no_gpu):
    # relative.py used torch's default device for None, absolute.py the CPU: now one policy.
    with torch.device("meta"):
        out = DEVICE_TAKERS[name](None)
    tensors = [out] if isinstance(out, torch.Tensor) else [*out.parameters(), *out.buffers()]
    assert tensors and all(t.device == torch.device("cpu") for t in tensors)


# --------------------------------------------------------------------------- far positions


def _expected(positions: torch.Tensor, q: torch.Tensor, rope: RotaryEmbedding) -> torch.Tensor:
    cos, sin = rope_cos_sin(positions, inv_freq(rope.head_dim, rope.base))
    return apply_rope(q, cos, sin, layout=rope.layout)


@pytest.mark.parametrize("far", [2**40, 2**52])
def test_far_offset_costs_one_row_per_position(far):
    rope = RotaryEmbedding(16, max_len=32)
    q, k = torch.randn(2, 3, 16), torch.randn(2, 3, 16)
    q_rot, k_rot = rope(q, k, offset=far)
    assert rope.max_len == 32  # not grown towards the far position
    positions = torch.arange(far, far + 3)
    torch.testing.assert_close(q_rot, _expected(positions, q, rope), rtol=0, atol=0)
    torch.testing.assert_close(k_rot, _expected(positions, k, rope), rtol=0, atol=0)


def test_far_position_tensor_is_computed_directly():
    rope = RotaryEmbedding(16, max_len=32)
    q, k = torch.randn(3, 16), torch.randn(3, 16)
    positions = torch.tensor([5, 2**40, 7])
    q_rot, _ = rope(q, k, positions)
    assert rope.max_len == 32
    torch.testing.assert_close(q_rot, _expected(positions, q, rope), rtol=0, atol=0)


def test_cos_sin_of_a_far_position_does_not_grow_the_table():
    rope = RotaryEmbedding(16, max_len=32)
    cos, sin = rope.cos_sin(torch.tensor([2**40]))
    assert rope.max_len == 32 and cos.shape == (1, 8)
    expected_cos, expected_sin = rope_cos_sin(torch.tensor([2**40]), inv_freq(16))
    assert torch.equal(cos, expected_cos) and torch.equal(sin, expected_sin)


def test_huge_max_len_builds_a_bounded_table_and_stays_exact():
    rope = RotaryEmbedding(8, max_len=2**40)
    assert rope.max_len <= 2**20
    q = torch.randn(1, 8)
    q_rot, _ = rope(q, q, offset=2**33)
    torch.testing.assert_close(q_rot, _expected(torch.tensor([2**33]), q, rope), rtol=0, atol=0)


def test_step_by_step_decoding_still_grows_the_table():
    # The cache is an optimisation for the common case: a KV cache advancing one step at a time
    # past the table doubles it (amortised O(1) per position), a prefill from 0 fits in one go.
    rope = RotaryEmbedding(8, max_len=4)
    x = torch.randn(1, 8)
    for position in range(4, 9):
        rope(x, x, offset=position)
    assert rope.max_len == 16
    rope(torch.randn(100, 8), torch.randn(100, 8))
    assert rope.max_len == 100
