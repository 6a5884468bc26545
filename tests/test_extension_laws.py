"""Bounds and laws of context extension (posenc_ref/extension_laws.py).

PI's interpolation bound and RoFormer's bound hold for any coefficients; NTK-aware's usable
extension is where the first non-turning pair reaches its trained range; Liu et al.'s limit is a
wavelength; Resonance RoPE's integer wavelengths repeat every trained angle exactly. The page's
numbers are pinned from the formulas.
"""

import math

import pytest
import torch
from hypothesis import example, given, settings
from hypothesis import strategies as st

from posenc_ref import inv_freq
from posenc_ref.extension_laws import (
    angle_gap,
    extrapolation_bound,
    extrapolation_limit,
    full_turn_base,
    interpolation_bound,
    interpolation_bound_paper,
    ntk_factor_for_ratio,
    ntk_usable_ratio,
    resonance_inv_freq,
)
from posenc_ref.rope_extension import critical_dimension, score_function
from posenc_ref.rope_scaling import ntk_aware
from tests.strategies import bases, head_dims, seeds

F64 = torch.float64


def _h(seed: int, pairs: int) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    return torch.complex(*torch.randn(2, pairs, generator=g, dtype=F64))


@given(dim=head_dims, base=bases, seed=seeds, s=st.floats(0, 1e4), spacing=st.floats(0.1, 4.0))
@example(dim=2, base=10000.0, seed=0, s=0.5, spacing=1.0)
def test_interpolation_bound_holds(dim, base, seed, s, spacing):
    """|a(s) - chord| <= (s - s1)(s2 - s)/2 max|h| sum w^2, for any h and grid spacing."""
    omega, h = inv_freq(dim, base), _h(seed, dim // 2)
    s1 = math.floor(s / spacing) * spacing
    a = score_function(h, omega, torch.tensor([s1, s, s1 + spacing], dtype=F64))
    chord = a[0] + (s - s1) / spacing * (a[2] - a[0])
    bound = interpolation_bound(omega, torch.tensor([s], dtype=F64), h_max=float(h.abs().max()),
                                spacing=spacing)  # fmt: skip
    assert float((a[1] - chord).abs()) <= float(bound[0]) * (1 + 1e-9) + 1e-9


@given(dim=head_dims, base=bases, seed=seeds, s=st.lists(st.floats(0, 1e6), min_size=1))
def test_extrapolation_bound_holds(dim, base, seed, s):
    """RoFormer's summation by parts bounds |a(s)| at every distance."""
    omega, h = inv_freq(dim, base), _h(seed, dim // 2)
    distances = torch.tensor(s, dtype=F64)
    bound = extrapolation_bound(h, omega, distances)
    assert bool((score_function(h, omega, distances).abs() <= bound * (1 + 1e-9) + 1e-9).all())


@given(dim=st.sampled_from([16, 32, 64, 128, 256]), base=st.floats(100.0, 1e7))
def test_the_papers_closed_form_is_the_sum_approximated(dim, base):
    """The paper's d/(32 ln c) is the bound with its sum replaced by d/(4 ln c): a little below.

    The sum exceeds d/(4 ln c) by less than 1/2 + 4 ln c / d.
    """
    exact = float(interpolation_bound(inv_freq(dim, base), torch.tensor([0.5]))[0])
    paper = interpolation_bound_paper(dim, base)
    assert paper <= exact <= paper + (0.5 + 4 * math.log(base) / dim) / 8


def test_pi_bound_page_numbers():
    """At d = 128, base 1e4 PI's bound is 0.50 (the paper's form 0.43), RoFormer's 286 to 1391.

    RoFormer's for |h_i| = 1 at random phases, past L = 2048: hundreds of times more, as the
    paper says (about 600).
    """
    from posenc_ref.plots import pi_bounds_data

    data = pi_bounds_data()
    assert f"{data['interpolation']:.2f}" == "0.50"
    assert f"{interpolation_bound_paper(128):.2f}" == "0.43"
    far = data["extrapolation"][2048:]
    assert (f"{float(far.min()):.0f}", f"{float(far.max()):.0f}") == ("286", "1391")
    assert float(data["error"].max()) <= float(data["parabola"].max())


@given(dim=st.sampled_from([16, 32, 64, 128]), base=st.floats(100.0, 1e6),
       factor=st.floats(1.0, 64.0), length=st.integers(8, 8192))  # fmt: skip
@example(dim=128, base=10000.0, factor=4.0, length=4096)
@settings(deadline=None)
def test_ntk_usable_ratio_is_where_unseen_angles_begin(dim, base, factor, length):
    """Up to r L0 every pair that does not turn in L0 stays within its trained angles.

    Just past r L0 one leaves them (the first such pair); and r <= s.
    """
    ratio = ntk_usable_ratio(dim, base, factor, length)
    omega, scaled = inv_freq(dim, base), ntk_aware(dim, base, factor=factor).inv_freq
    slow = length * omega < 2 * math.pi  # pairs that never complete a turn in L0
    if not bool(slow.any()):
        assert ratio == math.inf
        return
    assert ratio <= factor * (1 + 1e-12)
    reach = ratio * length * scaled[slow]
    trained = length * omega[slow]
    assert bool((reach <= trained * (1 + 1e-9)).all())
    assert bool((reach * 1.001 > trained).any())


@given(dim=st.sampled_from([16, 64, 128]), ratio=st.floats(1.0, 64.0))
def test_ntk_factor_inverts_the_usable_ratio(dim, ratio):
    factor = ntk_factor_for_ratio(dim, 10000.0, ratio, 4096)
    assert factor >= ratio * (1 - 1e-12)
    assert math.isclose(ntk_usable_ratio(dim, 10000.0, factor, 4096), ratio, rel_tol=1e-9)


def test_ntk_page_numbers():
    """D = 128, base 1e4, L0 = 4096: 46 pairs turn, so s = 4 reaches 2.75 L0 and 4x needs 6.7."""
    assert critical_dimension(128, 1e4, 4096) == 92
    assert f"{ntk_usable_ratio(128, 1e4, 4.0, 4096):.2f}" == "2.75"
    assert f"{ntk_factor_for_ratio(128, 1e4, 4.0, 4096):.1f}" == "6.7"
    with pytest.raises(ValueError, match="no pair turns"):
        ntk_factor_for_ratio(16, 1e4, 2.0, 4)


@given(dim=st.sampled_from([16, 64, 128]), base=st.floats(10.0, 1e8), length=st.integers(8, 10**5))
def test_extrapolation_limit_is_the_first_untrained_wavelength(dim, base, length):
    """T_extra = 2 pi beta^(d_extra/d) is the wavelength, under beta, of pair d_extra / 2."""
    critical = critical_dimension(dim, 10000.0, length)
    limit = extrapolation_limit(dim, base, critical)
    if critical < dim:
        wavelength = 2 * math.pi / float(inv_freq(dim, base)[critical // 2])
        assert math.isclose(limit, wavelength, rel_tol=1e-9)


def test_liu_page_numbers():
    """LLaMA 2 (d 128, base 1e4, 4096 tokens): d_extra 92, and T_extra at three bases.

    4,712 at base 1e4, 78,400 at 5e5 and 129,027 at 1e6; every pair turns within 4096 below
    base 723.
    """
    critical = critical_dimension(128, 1e4, 4096)
    assert [round(extrapolation_limit(128, b, critical)) for b in (1e4, 5e5, 1e6)] == [
        4712, 78400, 129027]  # fmt: skip
    assert round(full_turn_base(128, 4096)) == 723


@given(dim=st.sampled_from([4, 16, 128]), length=st.integers(7, 10**6))
def test_full_turn_base_is_where_the_slowest_pair_fits(dim, length):
    base = full_turn_base(dim, length)
    if base <= 1.0:
        return
    slowest = 2 * math.pi / float(inv_freq(dim, base)[-1])
    assert math.isclose(slowest, length, rel_tol=1e-9)
    assert 2 * math.pi / float(inv_freq(dim, base * 1.001)[-1]) > length


@given(dim=head_dims, base=bases)
@example(dim=16, base=10000.0)
def test_resonance_wavelengths_are_integers_near_the_old_ones(dim, base):
    omega = inv_freq(dim, base)
    rounded = 2 * math.pi / resonance_inv_freq(dim, base)
    assert torch.allclose(rounded, rounded.round(), rtol=0, atol=1e-9)
    assert bool(((rounded - 2 * math.pi / omega).abs() <= 0.5 + 1e-9).all())


@given(dim=st.sampled_from([8, 16]), base=st.floats(2.0, 1e4), length=st.integers(8, 64))
@settings(deadline=None, max_examples=30)
def test_integer_wavelengths_leave_no_gap(dim, base, length):
    """A pair whose rounded wavelength is at most L0 has no gap past L0 (up to 3 L0 here).

    It repeats a trained angle at every position, to rounding; without rounding it need not.
    """
    rounded = resonance_inv_freq(dim, base)
    gaps = angle_gap(rounded, length, 3 * length)
    short = 2 * math.pi / rounded <= length + 1e-9
    assert bool((gaps[short] < 1e-9).all())


def test_resonance_page_numbers():
    """At d = 16, base 1e4, L0 = 64 pairs 0 .. 2 lose their gaps; the five slower keep theirs.

    Pairs 0 .. 2 have wavelengths 6, 20 and 63 once rounded.
    """
    omega = inv_freq(16)
    before, after = angle_gap(omega, 64, 256), angle_gap(resonance_inv_freq(16), 64, 256)
    assert bool((before[:3] > 0.04).all()) and bool((after[:3] < 1e-9).all())
    assert torch.allclose(before[3:], after[3:], atol=0.01)
    assert [round(x, 9) for x in (2 * math.pi / resonance_inv_freq(16))[:3].tolist()] == [
        6.0, 20.0, 63.0]  # fmt: skip


def test_bad_input_is_refused_with_the_argument_named():
    omega = inv_freq(16)
    with pytest.raises(ValueError, match="distances must be finite"):
        interpolation_bound(omega, torch.tensor([float("nan")]))
    with pytest.raises(ValueError, match="distances must be a 1-D"):
        extrapolation_bound(torch.ones(8, dtype=torch.complex128), omega, torch.ones(2, 2))
    with pytest.raises(ValueError, match="h must have the shape"):
        extrapolation_bound(torch.ones(3, dtype=torch.complex128), omega, torch.ones(2))
    with pytest.raises(ValueError, match="inv_freq must be"):
        interpolation_bound(torch.tensor([-1.0]), torch.ones(1))
    with pytest.raises(ValueError, match="critical must be an even integer"):
        extrapolation_limit(16, 1e4, 5)
    with pytest.raises(ValueError, match="max_len"):
        angle_gap(omega, 64, 32)
    with pytest.raises(ValueError, match="factor"):
        ntk_usable_ratio(16, 1e4, 0.5, 64)
