"""The kit's float32 allowance: every common float32 kernel inside it, every low-precision bug out.

The kernels of posenc_ref.testing._kernels form their angles with the float32 operations real
code uses (a pow per pair, exp/log, ggml's repeated multiplication, float64 then a cast, YaRN's
float32 blend); for every base released models use (1e4 to 1e8), head widths 64 to 256 and
positions up to 2^20, their error must stay inside float32_angle_allowance. The quantities the
kit's low-precision bug models round (positions, frequencies, angles in bfloat16 or float16)
must leave it.
"""

import numpy as np
import pytest
import torch

from posenc_ref import RotaryEmbedding, inv_freq
from posenc_ref.rope_scaling import yarn
from posenc_ref.testing import assert_rope_equal, float32_angle_allowance
from posenc_ref.testing._kernels import FLOAT32_KERNELS, ggml_kernel
from posenc_ref.testing._tolerance import angle_allowance_per_position, frequency_steps
from tests.rope_implementations import user_rope

BASES = (1e4, 1e5, 5e5, 1e6, 1e7, 1e8)
WIDTHS = (64, 80, 96, 128, 256)
_RNG = np.random.default_rng(0)
POSITIONS = np.unique(
    np.concatenate([np.arange(1, 300), _RNG.integers(1, 1 << 20, 2000), (1 << 20) - np.arange(100)])
)


def frequencies(kernel: str, dim: int, base: float) -> torch.Tensor:
    if kernel == "yarn_blend":
        return yarn(dim, base, factor=8.0, original_max_len=4096).inv_freq
    return inv_freq(dim, base)


def ratio(angles: np.ndarray, omega: torch.Tensor, base: float) -> float:
    exact = POSITIONS[:, None].astype(np.float64) * omega.numpy()
    allowed = float32_angle_allowance(torch.from_numpy(POSITIONS), omega, base=base).numpy()
    return float((np.abs(angles.astype(np.float64) - exact) / allowed).max())


@pytest.mark.parametrize("kernel", sorted(FLOAT32_KERNELS))
def test_every_float32_kernel_is_inside_the_allowance(kernel):
    worst = max(
        ratio(FLOAT32_KERNELS[kernel](POSITIONS, dim, base), frequencies(kernel, dim, base), base)
        for base in BASES
        for dim in WIDTHS
    )
    assert worst <= 1.0, f"{kernel}: error / allowance {worst:.3g}"
    assert worst > 0.01  # the kernel does round: the check is not vacuous


def test_the_old_allowance_failed_ggml_and_the_new_one_holds_it():
    """Qwen2.5's base 1e6, head 128: ggml's loop exceeds 2 u m w (ln(1/w) + 4) near pair 30."""
    dim, base = 128, 1e6
    omega = inv_freq(dim, base)
    angles = ggml_kernel(POSITIONS, dim, base).astype(np.float64)
    error = np.abs(angles - POSITIONS[:, None] * omega.numpy())
    old = 2 * 2.0**-24 * POSITIONS[:, None] * omega.numpy() * (np.log(1 / omega.numpy()) + 4)
    assert (error / old).max() > 1
    assert ratio(angles.astype(np.float32), omega, base) <= 1


@pytest.mark.parametrize("low", [torch.bfloat16, torch.float16], ids=["bf16", "f16"])
@pytest.mark.parametrize("what", ["positions", "inv_freq", "angles"])
def test_low_precision_quantities_leave_the_allowance(what, low):
    for base in BASES:
        for dim in WIDTHS:
            omega = inv_freq(dim, base)
            m = torch.from_numpy(POSITIONS).to(torch.float64)
            p, w = m.to(torch.float32), omega.to(torch.float32)
            if what == "positions":
                p = p.to(low).to(torch.float32)
            if what == "inv_freq":
                w = w.to(low).to(torch.float32)
            angles = p[:, None] * w
            if what == "angles":
                angles = angles.to(low).to(torch.float32)
            error = (angles.double() - m[:, None] * omega).abs()
            allowed = float32_angle_allowance(m, omega, base=base)
            assert float((error / allowed).max()) > 10, (what, low, base, dim)


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16], ids=["bf16", "f16"])
@pytest.mark.parametrize("what", ["positions", "inv_freq", "angle", "table"])
@pytest.mark.parametrize("dim, base", [(256, 1e8)])
def test_the_kit_still_fails_every_low_precision_bug(what, dtype, dim, base):
    """Through assert_rope_equal, at the widest allowance (head 256, base 1e8)."""
    fn = user_rope(
        dim, base, **{"positions_dtype" if what == "positions" else f"{what}_dtype": dtype}
    )
    with pytest.raises(AssertionError):
        assert_rope_equal(fn, RotaryEmbedding(dim, base=base, layout="half"))


def test_the_allowance_has_its_documented_value():
    """At a million positions, head 128, base 10000: 2 u32 m (4 L + 3 i + 4) w, largest 1.28."""
    allowed = float32_angle_allowance(torch.tensor([1_000_000]), inv_freq(128), base=1e4)
    i = torch.arange(64, dtype=torch.float64)
    w = 1e4 ** (-2 * i / 128)
    by_hand = 2 * 2.0**-24 * 1e6 * w * (4 * torch.log(1 / w) + 3 * i + 4)
    torch.testing.assert_close(allowed[0], by_hand)
    assert round(float(allowed.max()), 2) == 1.28


def test_blend_term_covers_scaled_frequencies_only():
    plain = inv_freq(64, 1e4)
    scaled = yarn(64, 1e4, factor=8.0, original_max_len=4096).inv_freq
    m = torch.tensor([1000])
    a = float32_angle_allowance(m, plain, base=1e4)
    b = float32_angle_allowance(m, scaled, base=1e4)
    assert bool(b[0, -1] > a[0, -1] / 8) and torch.equal(a[0, :2], b[0, :2])


def test_frequency_steps_rank_repeated_frequencies():
    omega = torch.tensor([1.0, 0.1, 1.0, 0.1, 0.01])
    assert frequency_steps(omega).tolist() == [0.0, 1.0, 0.0, 1.0, 2.0]


def test_property_allowance_per_position_is_the_largest_over_pairs():
    per_position = angle_allowance_per_position(128)
    plain = 100.0 ** (-2 * torch.arange(64, dtype=torch.float64) / 128)
    assert per_position == pytest.approx(
        float(float32_angle_allowance(torch.ones(1), plain, base=100.0).max())
    )
