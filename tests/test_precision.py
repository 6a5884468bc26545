"""The precision page's error model for float32 angles (posenc_ref/plots/precision.py).

transformers' float32 recipe for the angles, the bound the page once used (exceeded), and the
conformance check's allowance (which covers it).
"""

import pytest
import torch
from hypothesis import example, given
from hypothesis import strategies as st

from posenc_ref import inv_freq
from posenc_ref.plots import check_allowance, float32_angle_errors, hf_float32_inv_freq
from posenc_ref.rope import RotaryEmbedding


def _worst(dim: int, bound: str) -> float:
    errors = float32_angle_errors(dim, 10000.0)
    return float((errors["error"] / errors[bound]).max())


def test_short_bound_is_exceeded_at_widths_80_and_96():
    """The bound t w 2^-23 misses the exponent: transformers exceeds it 2.8x at 80, 2.4x at 96.

    The numbers the precision page states; the check's allowance covers both widths.
    """
    assert f"{_worst(80, 'naive'):.1f}" == "2.8"
    assert f"{_worst(96, 'naive'):.1f}" == "2.4"
    for dim in (64, 80, 96, 128, 256):
        assert _worst(dim, "allowance") < 0.5


@given(
    half=st.integers(min_value=32, max_value=128),
    base=st.sampled_from([1e4, 5e5, 1e6, 1e7, 1e8]) | st.floats(min_value=1e4, max_value=1e8),
    start=st.integers(min_value=0, max_value=2**20 - 256),
)
@example(half=40, base=1e4, start=2**20 - 256)
@example(half=48, base=1e6, start=2**17)
def test_check_allowance_covers_transformers_float32_angles(half, base, start):
    """For widths 64 to 256, bases 1e4 to 1e8 and positions to 2^20: error <= the allowance."""
    positions = torch.arange(start, start + 256)
    errors = float32_angle_errors(2 * half, base, positions)
    assert bool((errors["error"] <= errors["allowance"]).all())


def test_check_allowance_covers_the_precision_page_model():
    """The check's float32-angle allowance is at least u t w (ln(1/w) + 3), the page's estimate.

    (The check's own derivation, on the check page, may add terms; this is the part the precision
    page derives.) Without float32 angles only the output rounding remains, the same at every
    position.
    """
    reference = RotaryEmbedding(96, base=10000.0, layout="half")
    positions = torch.tensor([0, 1, 1000, 2**20])
    u = 2.0**-24
    omega, t = inv_freq(96), positions.double()[:, None]
    rounding = check_allowance(reference, positions, float32_angles=False)
    angles = check_allowance(reference, positions) - rounding
    assert torch.equal(rounding, rounding[:1].expand_as(rounding))
    assert bool((angles >= u * t * omega * (torch.log(1 / omega) + 3) * (1 - 1e-12)).all())


@pytest.mark.parametrize("dim", [64, 80, 96, 128, 256])
@pytest.mark.parametrize("base", [1e4, 5e5, 1e6])
def test_hf_float32_inv_freq_is_transformers_buffer(dim, base):
    """The recipe is transformers' own: its inv_freq buffer, bit for bit."""
    transformers = pytest.importorskip("transformers")
    from transformers.models.llama.modeling_llama import LlamaRotaryEmbedding

    config = transformers.LlamaConfig(
        hidden_size=2 * dim,
        num_attention_heads=2,
        head_dim=dim,
        rope_parameters={"rope_type": "default", "rope_theta": base},
    )
    assert torch.equal(hf_float32_inv_freq(dim, base), LlamaRotaryEmbedding(config).inv_freq)
