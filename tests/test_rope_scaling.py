"""Context extension (posenc_ref/rope_scaling.py).

Factor 1 is the identity, PI equals positions / s, NTK keeps omega_0 and maps the slowest pair like
PI, YaRN and Llama 3 band limits from independently computed turn counts, regression values from
the papers' formulas evaluated with mpmath, and bad input.
"""

import math

import mpmath
import pytest
import torch
from hypothesis import assume, example, given
from hypothesis import strategies as st

from posenc_ref import apply_rope, apply_rope_loop, inv_freq, rope_cos_sin
from posenc_ref.rope_scaling import (
    SCALING_METHODS,
    ScaledFrequencies,
    dynamic_ntk,
    linear,
    llama3,
    longrope,
    longrope_attention_factor,
    ntk_aware,
    yarn,
    yarn_mscale,
)
from tests.strategies import (
    bases,
    factors,
    head_dims,
    ntk_dims,
    original_max_lens,
    rope_positions,
    seeds,
)

F64 = torch.float64


def turns(dim: int, base: float, original_max_len: int) -> list[float]:
    """Rotations of each pair within the original context, L * omega_i / (2 pi), with math."""
    return [
        original_max_len * math.pow(base, -2 * i / dim) / (2 * math.pi) for i in range(dim // 2)
    ]


def ratios(freqs: ScaledFrequencies, dim: int, base: float) -> torch.Tensor:
    """omega'_i / omega_i: 1 = kept, 1/s = interpolated."""
    return freqs.inv_freq / inv_freq(dim, base)


# --- factor 1 is the identity -----------------------------------------------------------------


@given(ntk_dims, bases, original_max_lens, st.integers(0, 1 << 18))
@example(4, 10000.0, 4096, 0)
def test_factor_one_is_identity(dim, base, original_max_len, seq_len):
    """Factor 1 changes nothing (dynamic NTK: within the original context, see below)."""
    plain = inv_freq(dim, base)
    # Dynamic NTK's bracket at s = 1 is l / L: past the original length it still raises the base
    # (HF's formula, which we follow), so its identity holds only for l <= L.
    seq_len = min(seq_len, original_max_len)
    results = {
        "linear": linear(dim, base, factor=1.0),
        "ntk_aware": ntk_aware(dim, base, factor=1.0),
        "dynamic_ntk": dynamic_ntk(
            dim, base, factor=1.0, seq_len=seq_len, original_max_len=original_max_len
        ),
        "yarn": yarn(dim, base, factor=1.0, original_max_len=original_max_len),
        "llama3": llama3(dim, base, factor=1.0, original_max_len=original_max_len),
        # LongRoPE's lists are the method: with every rescale factor 1 and s = 1 it is plain RoPE
        # on both sides of the switch.
        "longrope": longrope(
            dim,
            base,
            short_factor=[1.0] * (dim // 2),
            long_factor=[1.0] * (dim // 2),
            original_max_len=max(original_max_len, 2),
            seq_len=seq_len,
            factor=1.0,
        ),
    }
    assert set(results) == set(SCALING_METHODS)
    for name, freqs in results.items():
        assert freqs.inv_freq.dtype == F64 and freqs.inv_freq.shape == (dim // 2,), name
        torch.testing.assert_close(freqs.inv_freq, plain, rtol=1e-14, atol=0, msg=name)
        assert freqs.attention_factor == 1.0, name


# --- linear (Position Interpolation) ----------------------------------------------------------


@given(head_dims, bases, factors, st.lists(rope_positions, min_size=1, max_size=4), seeds)
@example(2, 10000.0, 4.0, [0, 1, 4], 0)
def test_linear_equals_positions_divided_by_factor(dim, base, factor, positions, seed):
    """Rotating position m with omega / s is rotating position m / s with omega (the oracle)."""
    x = torch.randn(len(positions), dim, generator=torch.Generator().manual_seed(seed), dtype=F64)
    freqs = linear(dim, base, factor=factor)
    cos, sin = rope_cos_sin(torch.tensor(positions), freqs.inv_freq, dtype=F64)
    scaled = apply_rope(x, cos, sin)
    fractional = torch.tensor(positions, dtype=F64) / factor
    expected = apply_rope_loop(x, fractional, inv_freq(dim, base))
    torch.testing.assert_close(scaled, expected, rtol=0, atol=1e-9)


@given(head_dims, bases, factors, st.lists(st.integers(0, 1 << 16), min_size=1, max_size=4))
@example(2, 10000.0, 8.0, [0, 1, 4096])
def test_decay_bound_under_linear_scaling_is_the_bound_at_distance_over_factor(
    dim, base, factor, distances
):
    """The decay bound with omega / s at distance r is the unscaled bound at r / s (PI again).

    ``rope_decay_bound(..., inv_freq=...)`` is what the site's explorer draws under scaling; with
    ``inv_freq(dim, base)`` it is the default curve.
    """
    from posenc_ref.plots import rope_decay_bound

    r = torch.tensor(distances, dtype=F64).numpy()
    scaled = rope_decay_bound(r, inv_freq=linear(dim, base, factor=factor).inv_freq)
    plain = rope_decay_bound(r, dim, base, inv_freq=inv_freq(dim, base))
    assert (plain == rope_decay_bound(r, dim, base)).all()
    # Angles r * (omega / s) and (r / s) * omega differ by rounding only: ~1e-16 * r radians.
    expected = rope_decay_bound(r / factor, dim, base)
    torch.testing.assert_close(
        torch.from_numpy(scaled), torch.from_numpy(expected), rtol=0, atol=1e-9
    )


# --- NTK-aware and dynamic NTK ----------------------------------------------------------------


@given(ntk_dims, bases, factors)
@example(4, 10000.0, 1.0)
@example(128, 10000.0, 8.0)
def test_ntk_keeps_fastest_and_maps_slowest_like_pi(dim, base, factor):
    r = ratios(ntk_aware(dim, base, factor=factor), dim, base)
    assert r[0] == 1.0
    assert float(r[-1]) == pytest.approx(1 / factor, rel=1e-12)
    # in between: every pair slowed, by at most s, more so the slower it is
    assert torch.all(r <= 1.0 + 1e-15) and torch.all(r >= 1 / factor - 1e-15)
    assert torch.all(r[1:] <= r[:-1] + 1e-15)


@given(ntk_dims, bases, factors, original_max_lens, st.integers(0, 1 << 18))
@example(4, 10000.0, 2.0, 4096, 4096)
def test_dynamic_ntk_formula(dim, base, factor, original_max_len, seq_len):
    """No change up to the original length; past it, NTK with the bracket s * l / L - (s - 1)."""
    got = dynamic_ntk(dim, base, factor=factor, seq_len=seq_len, original_max_len=original_max_len)
    if seq_len <= original_max_len:
        torch.testing.assert_close(got.inv_freq, inv_freq(dim, base), rtol=1e-14, atol=0)
    bracket = factor * max(seq_len, original_max_len) / original_max_len - (factor - 1)
    new_base = base * bracket ** (dim / (dim - 2))
    expected = [math.pow(new_base, -2 * i / dim) for i in range(dim // 2)]
    torch.testing.assert_close(got.inv_freq, torch.tensor(expected, dtype=F64), rtol=1e-12, atol=0)


@given(ntk_dims, bases, factors, original_max_lens)
def test_dynamic_ntk_at_extended_length_is_static_ntk(dim, base, factor, original_max_len):
    """At l = s L the bracket is s^2 - (s - 1): the static value vLLM uses under "dynamic"."""
    seq_len = factor * original_max_len
    assume(seq_len == int(seq_len))
    got = dynamic_ntk(
        dim, base, factor=factor, seq_len=int(seq_len), original_max_len=original_max_len
    )
    static = ntk_aware(dim, base, factor=factor**2 - (factor - 1))
    torch.testing.assert_close(got.inv_freq, static.inv_freq, rtol=1e-12, atol=0)


@given(
    ntk_dims, bases, factors, original_max_lens, st.integers(0, 1 << 16), st.integers(1, 1 << 16)
)
def test_dynamic_ntk_slows_down_as_length_grows(dim, base, factor, original_max_len, seq_len, more):
    shorter = dynamic_ntk(
        dim, base, factor=factor, seq_len=seq_len, original_max_len=original_max_len
    )
    longer = dynamic_ntk(
        dim, base, factor=factor, seq_len=seq_len + more, original_max_len=original_max_len
    )
    assert torch.all(longer.inv_freq <= shorter.inv_freq * (1 + 1e-15))
    assert longer.inv_freq[0] == 1.0


# --- YaRN -------------------------------------------------------------------------------------


@given(
    head_dims,
    bases,
    factors,
    original_max_lens,
    st.sampled_from([(32.0, 1.0), (16.0, 2.0), (64.0, 0.5)]),
    st.booleans(),
)
@example(8, 10000.0, 4.0, 64, (32.0, 1.0), True)
@example(128, 500000.0, 32.0, 4096, (32.0, 1.0), False)
def test_yarn_bands(dim, base, factor, original_max_len, betas, truncate):
    """Pairs turning more than beta_fast times in L keep omega; fewer than beta_slow get omega / s.

    The ratio omega' / omega falls monotonically in between.
    """
    beta_fast, beta_slow = betas
    freqs = yarn(
        dim,
        base,
        factor=factor,
        original_max_len=original_max_len,
        beta_fast=beta_fast,
        beta_slow=beta_slow,
        truncate=truncate,
    )
    r = ratios(freqs, dim, base)
    for i, n in enumerate(turns(dim, base, original_max_len)):
        if n > beta_fast * (1 + 1e-9):
            assert float(r[i]) == pytest.approx(1.0, rel=1e-12), (i, n)
        elif n < beta_slow * (1 - 1e-9):
            assert float(r[i]) == pytest.approx(1 / factor, rel=1e-12), (i, n)
    assert torch.all(r[1:] <= r[:-1] + 1e-15)
    assert torch.all(r <= 1 + 1e-15) and torch.all(r >= 1 / factor - 1e-15)


@given(factors)
@example(1.0)
@example(16.0)
def test_yarn_attention_factor(factor):
    """Default a = 0.1 ln s + 1; an explicit value is the final a, not a multiplier."""
    assert yarn(8, factor=factor, original_max_len=64).attention_factor == pytest.approx(
        0.1 * math.log(factor) + 1.0, rel=1e-15
    )
    assert yarn(8, factor=factor, original_max_len=64, attention_factor=1.5).attention_factor == 1.5
    assert yarn_mscale(factor, 0.707) == pytest.approx(0.1 * 0.707 * math.log(factor) + 1.0)


def test_yarn_truncate_changes_the_ramp():
    """truncate=False keeps the fractional correction range (gpt-oss configs): a different ramp."""
    kw = {"factor": 32.0, "original_max_len": 4096}
    a, b = yarn(64, 150000.0, **kw), yarn(64, 150000.0, truncate=False, **kw)
    assert not torch.equal(a.inv_freq, b.inv_freq)
    # fractional bounds from math, then the linear ramp over the pair index
    low = 64 * math.log(4096 / (2 * math.pi * 32)) / (2 * math.log(150000.0))
    high = 64 * math.log(4096 / (2 * math.pi * 1)) / (2 * math.log(150000.0))
    for i in range(32):
        gamma = min(max((i - low) / (high - low), 0.0), 1.0)
        omega = 150000.0 ** (-2 * i / 64)
        assert float(b.inv_freq[i]) == pytest.approx((1 - gamma) * omega + gamma * omega / 32)


def test_yarn_upper_bound_clamped_at_dim_minus_one():
    """The deployed code clamps the upper bound at dim - 1, not at the last pair dim/2 - 1.

    When i*(beta_slow) lies past the last pair, the ramp runs on to dim - 1 and even the last
    pair is only partly interpolated (a clamp at dim/2 - 1 would give it omega / s).
    """
    dim, base, s = 8, 10.0, 4.0
    freqs = yarn(dim, base, factor=s, original_max_len=10**6, beta_fast=1e5, beta_slow=1.0)
    low = math.floor(dim * math.log(10**6 / (2 * math.pi * 1e5)) / (2 * math.log(base)))
    assert dim * math.log(10**6 / (2 * math.pi)) / (2 * math.log(base)) > dim - 1
    high = dim - 1  # the clamp
    for i in range(dim // 2):
        gamma = min(max((i - low) / (high - low), 0.0), 1.0)
        omega = base ** (-2 * i / dim)
        assert float(freqs.inv_freq[i]) == pytest.approx((1 - gamma) * omega + gamma * omega / s)
    assert float(freqs.inv_freq[-1]) > base ** (-(dim - 2) / dim) / s * 1.5


def test_yarn_keeps_every_pair_when_all_are_fast():
    """Every pair turns more than beta_fast times (tiny base): nothing is interpolated."""
    freqs = yarn(8, 1.5, factor=4.0, original_max_len=4096)
    assert min(turns(8, 1.5, 4096)) > 32
    assert torch.equal(freqs.inv_freq, inv_freq(8, 1.5))


# --- Llama 3 ----------------------------------------------------------------------------------


@given(
    head_dims,
    bases,
    factors,
    st.sampled_from([(1.0, 4.0), (1.0, 1.0), (0.5, 8.0), (2.0, 3.0)]),
    original_max_lens,
)
@example(128, 500000.0, 8.0, (1.0, 4.0), 8192)
@example(2, 10000.0, 1.0, (1.0, 4.0), 8192)
def test_llama3_bands(dim, base, factor, bands, original_max_len):
    """Wavelength below L/high: kept; above L/low: divided by s; monotone and continuous between."""
    low, high = bands
    freqs = llama3(
        dim,
        base,
        factor=factor,
        low_freq_factor=low,
        high_freq_factor=high,
        original_max_len=original_max_len,
    )
    r = ratios(freqs, dim, base)
    for i in range(dim // 2):
        wavelength = 2 * math.pi / math.pow(base, -2 * i / dim)
        if wavelength < original_max_len / high * (1 - 1e-9):
            assert float(r[i]) == pytest.approx(1.0, rel=1e-12)
        elif wavelength > original_max_len / low * (1 + 1e-9):
            assert float(r[i]) == pytest.approx(1 / factor, rel=1e-12)
        else:  # the blend, written from the definition
            sigma = (original_max_len / wavelength - low) / (high - low) if high > low else 1.0
            assert float(r[i]) == pytest.approx((1 - sigma) / factor + sigma, rel=1e-9)
    assert torch.all(r[1:] <= r[:-1] + 1e-15)
    assert freqs.attention_factor == 1.0


# --- regression values from the papers' formulas (mpmath, 50 digits) --------------------------


def mp_inv_freq(dim, base):
    return [mpmath.power(base, mpmath.mpf(-2 * i) / dim) for i in range(dim // 2)]


def test_regression_ntk_and_linear():
    mpmath.mp.dps = 50
    dim, base, s = 16, 10000, 8
    new_base = base * mpmath.power(s, mpmath.mpf(dim) / (dim - 2))
    expected = [mpmath.power(new_base, mpmath.mpf(-2 * i) / dim) for i in range(dim // 2)]
    got = ntk_aware(dim, base, factor=s).inv_freq.tolist()
    assert got == pytest.approx([float(v) for v in expected], rel=1e-14)
    got = linear(dim, base, factor=s).inv_freq.tolist()
    assert got == pytest.approx([float(v / s) for v in mp_inv_freq(dim, base)], rel=1e-14)


def test_regression_yarn_small_config():
    """YaRN for dim 8, base 10000, s 4, L 64: i*(32) < 0 -> low 0; i*(1) ~ 1.008 -> high ceil 2."""
    mpmath.mp.dps = 50
    dim, base, s, L = 8, 10000, 4, 64

    def pair_index(turns):
        return dim * mpmath.log(L / (2 * mpmath.pi * turns)) / (2 * mpmath.log(base))

    low, high = max(mpmath.floor(pair_index(32)), 0), min(mpmath.ceil(pair_index(1)), dim - 1)
    assert (low, high) == (0, 2)
    expected = []
    for i, omega in enumerate(mp_inv_freq(dim, base)):
        gamma = min(max((i - low) / (high - low), 0), 1)
        expected.append(float((1 - gamma) * omega + gamma * omega / s))
    freqs = yarn(dim, base, factor=s, original_max_len=L)
    assert freqs.inv_freq.tolist() == pytest.approx(expected, rel=1e-14)
    assert freqs.attention_factor == pytest.approx(float(mpmath.mpf("0.1") * mpmath.log(s) + 1))
    assert expected == pytest.approx([1.0, 0.0625, 0.0025, 0.00025], rel=1e-14)


def test_regression_llama3_meta_defaults():
    """Llama 3.1 (dim 128, base 500000, s 8, l 1, h 4, L 8192), band by band with mpmath."""
    mpmath.mp.dps = 50
    dim, base, s, lo, hi, L = 128, 500000, 8, 1, 4, 8192
    expected = []
    for omega in mp_inv_freq(dim, base):
        wavelength = 2 * mpmath.pi / omega
        if wavelength < L / hi:
            expected.append(omega)
        elif wavelength > L / lo:
            expected.append(omega / s)
        else:
            sigma = (L / wavelength - lo) / (hi - lo)
            expected.append((1 - sigma) * omega / s + sigma * omega)
    got = llama3(dim).inv_freq.tolist()
    assert got == pytest.approx([float(v) for v in expected], rel=1e-13)
    kept = sum(1 for omega in mp_inv_freq(dim, base) if 2 * mpmath.pi / omega < L / hi)
    divided = sum(1 for omega in mp_inv_freq(dim, base) if 2 * mpmath.pi / omega > L / lo)
    assert (kept, divided) == (29, 29)  # 6 pairs in the blend: 29 .. 34


# --- LongRoPE ----------------------------------------------------------------------------------

rescale_lists = st.integers(1, 32).flatmap(
    lambda pairs: st.tuples(
        st.lists(st.floats(0.5, 80.0), min_size=pairs, max_size=pairs),
        st.lists(st.floats(0.5, 80.0), min_size=pairs, max_size=pairs),
    )
)


@given(
    rescale_lists,
    bases,
    st.integers(2, 1 << 17),
    st.integers(0, 1 << 19),
    st.floats(1.0, 64.0) | st.none(),
)
@example(([1.0, 4.0], [2.0, 8.0]), 10000.0, 4096, 4096, None)
@example(([1.0, 4.0], [2.0, 8.0]), 10000.0, 4096, 4097, None)
def test_longrope_formula(lists, base, original_max_len, seq_len, factor):
    """omega_i / phi_i with phi the short list up to L and the long list past it; HF's a and s."""
    short, long = lists
    dim = 2 * len(short)
    max_len = 32 * original_max_len
    got = longrope(
        dim,
        base,
        short_factor=short,
        long_factor=long,
        original_max_len=original_max_len,
        seq_len=seq_len,
        factor=factor,
        max_len=max_len,
    )
    rescale = long if seq_len > original_max_len else short
    expected = [math.pow(base, -2 * i / dim) / phi for i, phi in enumerate(rescale)]
    torch.testing.assert_close(got.inv_freq, torch.tensor(expected, dtype=F64), rtol=1e-13, atol=0)
    s = max_len / original_max_len if factor is None else factor
    a = 1.0 if s <= 1 else math.sqrt(1 + math.log(s) / math.log(original_max_len))
    assert got.attention_factor == pytest.approx(a, rel=1e-15)
    assert longrope_attention_factor(s, original_max_len) == got.attention_factor


@given(rescale_lists, st.integers(2, 1 << 17))
def test_longrope_switches_after_the_original_length(lists, original_max_len):
    """Lengths up to L use the short list, L + 1 and beyond the long one (HF: seq_len > L)."""
    short, long = lists
    dim = 2 * len(short)

    def at(seq_len):
        return longrope(
            dim,
            short_factor=short,
            long_factor=long,
            original_max_len=original_max_len,
            seq_len=seq_len,
            factor=2.0,
        ).inv_freq

    omega = inv_freq(dim)
    for seq_len in (0, 1, original_max_len):
        torch.testing.assert_close(at(seq_len) * torch.tensor(short, dtype=F64), omega)
    for seq_len in (original_max_len + 1, 4 * original_max_len):
        torch.testing.assert_close(at(seq_len) * torch.tensor(long, dtype=F64), omega)


@given(st.floats(0.1, 4.0), st.integers(2, 1 << 17), st.integers(1, 64))
def test_longrope_explicit_attention_factor_is_final(a, original_max_len, multiple):
    """An explicit attention_factor is used as is (HF semantics), whatever s is."""
    got = longrope(
        4,
        short_factor=[1.0, 2.0],
        long_factor=[1.0, 8.0],
        original_max_len=original_max_len,
        seq_len=0,
        max_len=multiple * original_max_len,
        attention_factor=a,
    )
    assert got.attention_factor == a


def test_regression_longrope_phi3_attention_factor():
    """Phi-3/3.5 mini 128k: s = 131072 / 4096 = 32, L = 4096, so ln s / ln L = 5/12 exactly."""
    mpmath.mp.dps = 50
    expected = mpmath.sqrt(1 + mpmath.log(32) / mpmath.log(4096))
    assert expected == pytest.approx(float(mpmath.sqrt(mpmath.mpf(17) / 12)), rel=1e-40)
    got = longrope(
        4,
        short_factor=[1.0, 1.0],
        long_factor=[1.0, 1.0],
        original_max_len=4096,
        seq_len=5000,
        max_len=131072,
    )
    assert got.attention_factor == pytest.approx(float(expected), rel=1e-15)


@given(
    st.integers(1, 16),
    seeds,
    st.integers(2, 64),
    st.integers(0, 512),
    st.integers(0, 512),
    st.integers(1, 1000),
)
def test_longrope_cached_key_score_mixes_two_frequency_sets(pairs, seed, L, m, n, shift):
    """A cached key (short list) against a new query (long list) mixes two frequency sets.

    The score is Re sum_i q_i conj(k_i) exp(j (m omega_i / phi_long - n omega_i / phi_short)),
    which depends on m and n separately; with one list for both it depends on m - n only.
    """
    dim = 2 * pairs
    gen = torch.Generator().manual_seed(seed)
    short = (1 + 3 * torch.rand(pairs, generator=gen, dtype=F64)).tolist()
    long = (4 + 60 * torch.rand(pairs, generator=gen, dtype=F64)).tolist()
    q, k = torch.randn(2, dim, generator=gen, dtype=F64)
    kw = {"short_factor": short, "long_factor": long, "original_max_len": L, "factor": 4.0}
    omega_short = longrope(dim, seq_len=L, **kw).inv_freq
    omega_long = longrope(dim, seq_len=L + 1, **kw).inv_freq

    def rotated(x, position, omega):
        cos, sin = rope_cos_sin(torch.tensor([position]), omega, dtype=F64)
        return apply_rope(x[None], cos, sin)[0]

    def formula(m, n, omega_q, omega_k):
        qc = torch.complex(q[0::2], q[1::2])  # interleaved pairs
        kc = torch.complex(k[0::2], k[1::2])
        phase = torch.exp(1j * (m * omega_q - n * omega_k))
        return float((qc * kc.conj() * phase).sum().real)

    mixed = float(rotated(q, m, omega_long) @ rotated(k, n, omega_short))
    assert mixed == pytest.approx(formula(m, n, omega_long, omega_short), abs=1e-9)
    consistent = float(rotated(q, m, omega_long) @ rotated(k, n, omega_long))
    shifted = float(rotated(q, m + shift, omega_long) @ rotated(k, n + shift, omega_long))
    assert consistent == pytest.approx(shifted, abs=1e-9)


# --- bad input --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "call, error, match",
    [
        (lambda: linear(7, factor=2.0), ValueError, "dim"),
        (lambda: linear(8, factor=0.5), ValueError, "factor"),
        (lambda: linear(8, factor="2"), TypeError, "factor"),
        (lambda: linear(8, factor=math.inf), ValueError, "factor"),
        (lambda: linear(8, 0.5, factor=2.0), ValueError, "base"),
        (lambda: ntk_aware(2, factor=2.0), ValueError, "dim"),
        (lambda: ntk_aware(8, factor=0.9), ValueError, "factor"),
        (
            lambda: dynamic_ntk(8, factor=2.0, seq_len=-1, original_max_len=16),
            ValueError,
            "seq_len",
        ),
        (
            lambda: dynamic_ntk(8, factor=2.0, seq_len=4, original_max_len=0),
            ValueError,
            "original_max_len",
        ),
        (
            lambda: dynamic_ntk(8, factor=2.0, seq_len=4.5, original_max_len=16),
            TypeError,
            "seq_len",
        ),
        (
            lambda: yarn(8, factor=2.0, original_max_len=16, beta_fast=1.0, beta_slow=32.0),
            ValueError,
            "beta_fast",
        ),
        (lambda: yarn(8, factor=2.0, original_max_len=16, beta_slow=0.0), ValueError, "beta_slow"),
        (lambda: yarn(8, factor=2.0, original_max_len=16, truncate=1), TypeError, "truncate"),
        (
            lambda: yarn(8, factor=2.0, original_max_len=16, attention_factor=-1.0),
            ValueError,
            "attention_factor",
        ),
        (lambda: yarn(8, factor=0.5, original_max_len=16), ValueError, "factor"),
        (
            lambda: llama3(8, low_freq_factor=4.0, high_freq_factor=1.0),
            ValueError,
            "high_freq_factor",
        ),
        (lambda: llama3(8, low_freq_factor=0.0), ValueError, "low_freq_factor"),
        (lambda: llama3(8, original_max_len=0), ValueError, "original_max_len"),
        (lambda: llama3(8, factor=0.25), ValueError, "factor"),
        (lambda: yarn_mscale(0.0), ValueError, "factor"),
        (
            lambda: longrope(
                4,
                short_factor=[1.0],
                long_factor=[1.0, 1.0],
                original_max_len=8,
                seq_len=0,
                factor=2.0,
            ),
            ValueError,
            "short_factor",
        ),
        (
            lambda: longrope(
                4,
                short_factor=[1.0, 1.0],
                long_factor=[1.0, 0.0],
                original_max_len=8,
                seq_len=0,
                factor=2.0,
            ),
            ValueError,
            r"long_factor\[1\]",
        ),
        (
            lambda: longrope(
                4,
                short_factor="11",
                long_factor=[1.0, 1.0],
                original_max_len=8,
                seq_len=0,
                factor=2.0,
            ),
            TypeError,
            "short_factor",
        ),
        (
            lambda: longrope(
                4, short_factor=[1.0, 1.0], long_factor=[1.0, 1.0], original_max_len=8, seq_len=0
            ),
            ValueError,
            "max_len",
        ),
        (
            lambda: longrope(
                4,
                short_factor=[1.0, 1.0],
                long_factor=[1.0, 1.0],
                original_max_len=8,
                seq_len=0,
                max_len=4,
            ),
            ValueError,
            "max_len",
        ),
        (
            lambda: longrope(
                4,
                short_factor=[1.0, 1.0],
                long_factor=[1.0, 1.0],
                original_max_len=1,
                seq_len=0,
                factor=2.0,
            ),
            ValueError,
            "original_max_len",
        ),
        (
            lambda: longrope(
                4,
                short_factor=[1.0, 1.0],
                long_factor=[1.0, 1.0],
                original_max_len=8,
                seq_len=-1,
                factor=2.0,
            ),
            ValueError,
            "seq_len",
        ),
        (
            lambda: longrope(
                4,
                short_factor=[1.0, 1.0],
                long_factor=[1.0, 1.0],
                original_max_len=8,
                seq_len=0,
                factor=0.5,
            ),
            ValueError,
            "factor",
        ),
    ],
)
def test_bad_input(call, error, match):
    with pytest.raises(error, match=match):
        call()


# --- the table of methods and the typed scaling -----------------------------------------------


def test_methods_table_reads_what_each_function_takes():
    """Each row's keys and length dependence come from its function's keyword-only parameters.

    Pinned here for every method of the package: the keys its documentation lists, in order,
    and ``seq_len`` exactly where the frequencies depend on the current length.
    """
    from posenc_ref.rope_scaling import METHODS

    expected = {
        "linear": (("factor",), False),
        "ntk_aware": (("factor",), False),
        "dynamic_ntk": (("factor", "original_max_len"), True),
        "yarn": (("factor", "original_max_len", "beta_fast", "beta_slow", "truncate",
                  "attention_factor"), False),
        "llama3": (("factor", "low_freq_factor", "high_freq_factor", "original_max_len"), False),
        "longrope": (("short_factor", "long_factor", "original_max_len", "factor", "max_len",
                      "attention_factor"), True),
    }  # fmt: skip
    assert set(METHODS) == set(SCALING_METHODS) == set(expected)
    for name, method in METHODS.items():
        assert (method.keys, method.length_dependent) == expected[name], name
        assert SCALING_METHODS[name] is method.function


def test_scaling_reads_as_its_dict_and_computes_through_the_table():
    """A Scaling equals its dict form and gives its function's frequencies.

    ``Scaling(method, params)`` reads as ``{"method": ..., **params}``; ``seq_len`` reaches the
    function only where the method depends on it.
    """
    import copy
    import pickle

    from posenc_ref.rope_scaling import Scaling

    scaling = Scaling("dynamic_ntk", {"factor": 4.0, "original_max_len": 32})
    assert scaling == {"method": "dynamic_ntk", "factor": 4.0, "original_max_len": 32}
    assert dict(scaling) == {"method": "dynamic_ntk", "factor": 4.0, "original_max_len": 32}
    assert scaling["factor"] == 4.0 and len(scaling) == 3
    assert Scaling.from_mapping(dict(scaling)) == scaling
    assert copy.deepcopy(scaling) == scaling and pickle.loads(pickle.dumps(scaling)) == scaling
    assert (scaling.length_dependent, scaling.varies_past) == (True, 32)
    for seq_len in (0, 32, 100):
        expected = dynamic_ntk(8, 10000.0, factor=4.0, seq_len=seq_len, original_max_len=32)
        assert torch.equal(scaling.frequencies(8, 10000.0, seq_len).inv_freq, expected.inv_freq)
    fixed = Scaling("yarn", {"factor": 4.0, "original_max_len": 64})
    assert (fixed.length_dependent, fixed.varies_past) == (False, None)
    expected = yarn(8, factor=4.0, original_max_len=64)
    got = fixed.frequencies(8, 10000.0, seq_len=10**6)  # seq_len is not the method's
    assert torch.equal(got.inv_freq, expected.inv_freq)
    assert got.attention_factor == expected.attention_factor
    assert fixed.replace(attention_factor=1.0)["attention_factor"] == 1.0
    assert "attention_factor" not in fixed  # replace made a new one
    with pytest.raises(AttributeError, match="immutable"):
        fixed.method = "linear"


@pytest.mark.parametrize(
    "method, params, match",
    [
        ("ntk", {}, r"scaling\['method'\] must be one of"),
        ("linear", {"scale": 2.0}, r"scaling keys \['scale'\] are not accepted by method"),
        ("dynamic_ntk", {"factor": 2.0}, "needs 'original_max_len'"),
        ("longrope", {"short_factor": [1.0]}, "needs 'original_max_len'"),
    ],
)
def test_scaling_refuses_unknown_methods_and_keys(method, params, match):
    from posenc_ref.rope_scaling import Scaling

    with pytest.raises(ValueError, match=match):
        Scaling(method, params)
