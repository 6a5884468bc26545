"""Why context extension works (posenc_ref/rope_extension.py).

Position Interpolation's score function and its fit, the entropy argument behind YaRN's
temperature, the critical dimension, the base lower bound, ABF as an NTK-aware factor, and the
position maps of Self-Extend and ReRoPE.
"""

import math

import numpy as np
import pytest
import torch
from hypothesis import example, given, settings
from hypothesis import strategies as st

from posenc_ref import apply_rope, inv_freq, rope_cos_sin
from posenc_ref.rope_extension import (
    base_lower_bound,
    critical_dimension,
    entropy_keeping_scale,
    first_negative_distance,
    fit_score_function,
    lm_infinite_positions,
    ntk_equivalent_factor,
    passing_base_intervals,
    rerope_relative_positions,
    score_function,
    self_extend_max_length,
    self_extend_relative_positions,
    streaming_llm_positions,
)
from posenc_ref.rope_scaling import ntk_aware
from tests.strategies import bases, head_dims, seeds

F64 = torch.float64


@given(dim=head_dims, base=bases, seed=seeds, s=st.floats(0, 1e5))
@example(dim=2, base=10000.0, seed=0, s=0.0)
def test_score_function_is_the_rotated_score(dim, base, seed, s):
    """a(s) = Re sum_i q_i conj(k_i) e^{j s w_i} is <R_s q, k>: PI's score, fractional s too."""
    g = torch.Generator().manual_seed(seed)
    q, k = torch.randn(2, dim, generator=g, dtype=F64)
    omega = inv_freq(dim, base)
    h = torch.complex(q[0::2], q[1::2]) * torch.complex(k[0::2], -k[1::2])
    cos, sin = rope_cos_sin(torch.tensor([s], dtype=F64), omega, dtype=F64)
    rotated = float(apply_rope(q[None], cos, sin)[0] @ k)
    value = float(score_function(h, omega, torch.tensor([s], dtype=F64))[0])
    assert math.isclose(value, rotated, rel_tol=1e-9, abs_tol=1e-9)


def test_fit_meets_the_normal_equations():
    """The fit is a least-squares solution: the residual is orthogonal to every sinusoid.

    (A well-conditioned case: every pair turns many times over the points.)
    """
    omega = inv_freq(8, 10.0)
    g = torch.Generator().manual_seed(1)
    points, targets = torch.rand(200, generator=g, dtype=F64) * 500, torch.rand(200, generator=g)
    h = fit_score_function(omega, points, targets.double())
    residual = score_function(h, omega, points) - targets.double()
    angles = torch.outer(points, omega)
    for column in (torch.cos(angles), torch.sin(angles)):
        assert float((column.T @ residual).abs().max()) < 1e-8


def test_pi_fit_is_bounded_inside_and_not_outside():
    """Position Interpolation's Figure 2, d = 128 and L = 2048: bounded on [0, L], not past it.

    Bounded between the integers too (the fine grid), and orders of magnitude larger beyond L.
    """
    omega, length = inv_freq(128), 2048
    g = torch.Generator().manual_seed(0)
    points = torch.rand(2048, generator=g, dtype=F64) * length
    targets = torch.rand(2048, generator=g, dtype=F64) * 2 - 1
    h = fit_score_function(omega, points, targets)
    inside = score_function(h, omega, torch.linspace(0, length, 40001, dtype=F64)).abs().max()
    beyond = score_function(h, omega, torch.linspace(length, 2 * length, 40001, dtype=F64))
    assert float(inside) < 2.0
    assert float(beyond.abs().max()) > 1e3 * float(inside)


@given(factor=st.floats(1.0, 16.0), std=st.floats(0.3, 0.7))
@example(factor=8.0, std=0.5)
@settings(max_examples=20, deadline=None)
def test_entropy_keeping_scale_keeps_the_entropy(factor, std):
    """Softmax of s n Gaussian logits times lambda(s) has the entropy of n at 1 (n = 2^14).

    The large-n approximation needs n >> exp(lambda^2 sigma^2): here lambda^2 sigma^2 <= 6.
    """
    n = 1 << 14
    g = torch.Generator().manual_seed(0)

    def entropy(count, scale):
        logits = scale * std * torch.randn(count, generator=g, dtype=F64)
        p = torch.softmax(logits, dim=0)
        return float(-(p * torch.log(p)).sum())

    target = entropy(n, 1.0)
    scaled = entropy(int(factor * n), entropy_keeping_scale(factor, std))
    assert abs(scaled - target) < 0.06
    if factor > 2:  # without the scale the entropy grows by about ln s
        assert entropy(int(factor * n), 1.0) - target > 0.5 * math.log(factor)


@given(dim=st.sampled_from([16, 64, 128, 256]), base=bases, length=st.integers(8, 10**6))
@example(dim=128, base=10000.0, length=4096)
def test_critical_dimension_counts_pairs_that_turn_once(dim, base, length):
    """2 |{i : L w_i >= 2 pi}|, equal to 2 ceil((d/2) log_n(L / 2 pi)) clamped to [0, d]."""
    value = critical_dimension(dim, base, length)
    x = (dim / 2) * math.log(length / (2 * math.pi)) / math.log(base)
    if abs(x - round(x)) > 1e-9:  # the closed form, away from its integer edge cases
        assert value == 2 * min(max(math.ceil(x), 0), dim // 2)
    turns = length * inv_freq(dim, base) / (2 * math.pi)
    assert value == 2 * int((turns >= 1).sum())


def test_critical_dimension_of_llama2_and_llama3():
    """Llama 2 (base 1e4, L0 4096): 92 of 128; Llama 3 (base 5e5, L0 8192): 70 of 128."""
    assert critical_dimension(128, 10000.0, 4096) == 92
    assert critical_dimension(128, 500000.0, 8192) == 70


def _holds(base, dim, length):
    omega = inv_freq(dim, base).numpy()
    m = np.arange(length, dtype=np.float64)
    return bool((np.cos(np.outer(m, omega)).sum(axis=1) >= 0).all())


@given(length=st.integers(2, 512), dim=st.sampled_from([8, 16, 32]))
@example(length=100, dim=16)
@settings(max_examples=25, deadline=None)
def test_base_lower_bound_is_the_first_base_that_passes(length, dim):
    """The bound meets the condition and no base of the grid below it does."""
    bound = base_lower_bound(length, dim, per_decade=50)
    assert _holds(bound, dim, length)
    k = round(50 * math.log10(bound))
    assert not any(_holds(10.0 ** (j / 50), dim, length) for j in range(1, k))


def test_base_lower_bound_matches_the_published_numbers():
    """Head 128: 4.3e3 for a 1k context, 1.2e4 for 2k, 8.4e4 for 8k; not an interval.

    The numbers of Su's recomputation of Men et al.'s bound (kexue.fm/archives/10122); past the
    bound some larger bases fail again.
    """
    assert f"{base_lower_bound(1024):.2g}" == "4.3e+03"
    assert f"{base_lower_bound(2048):.2g}" == "1.2e+04"
    assert f"{base_lower_bound(8192):.2g}" == "8.4e+04"
    bound = base_lower_bound(1024)
    assert any(not _holds(bound * 10 ** (j / 400), 128, 1024) for j in range(1, 400))
    # At 4096 the smallest passing base sits in a window 26953 .. 26973 that this grid misses
    # (the page finds it on a finer one: test_base_bound_page_numbers).
    assert [_holds(b, 128, 4096) for b in (26952.0, 26953.0, 26973.0, 26974.0)] == [
        False, True, True, False,
    ]  # fmt: skip
    assert f"{base_lower_bound(4096):.3g}" == "2.87e+04"


@pytest.mark.parametrize(
    ("dim", "length", "low", "high"),
    [(16, 100, 2.0, 1e3), (32, 300, 100.0, 1e4), (128, 512, 1e3, 5e3), (8, 40, 1.5, 50.0)],
)
def test_passing_base_intervals_are_the_brute_force_ones(dim, length, low, high):
    """Every base of a fine log grid passes iff it lies in a returned interval.

    Each interval's ends pass, and a base just outside fails (unless the end is the range's).
    """
    intervals = passing_base_intervals(length, dim, low=low, high=high, per_decade=500)
    for first, last in intervals:
        assert first_negative_distance(first, length, dim) is None
        assert first_negative_distance(last, length, dim) is None
        if first > low:
            assert first_negative_distance(first * (1 - 1e-9), length, dim) is not None
        if last < high:
            assert first_negative_distance(last * (1 + 1e-9), length, dim) is not None
    for base in np.geomspace(low, high, 600):
        inside = any(a <= base <= b for a, b in intervals)
        assert inside == (first_negative_distance(float(base), length, dim) is None), base


def test_base_bound_page_numbers():
    """The page's numbers: the first passing bases, the published ones that fail, the last window.

    Head 128. First passing base 4,293 (1k), 11,587 (2k), 26,952 (4k), 83,764 (8k); the published
    1.2e4 fails at distance 1,554 and 2.7e4 at 4,079, 4.3e3 and 8.4e4 pass; at 2k bases fail
    again up to 22,764.
    """
    for context, first in [(1024, 4293), (2048, 11587), (4096, 26952), (8192, 83764)]:
        (start, _), *_ = passing_base_intervals(context, low=first - 2.0, high=first + 2.0)
        assert round(start) == first
    assert first_negative_distance(1.2e4, 2048) == 1554
    assert first_negative_distance(2.7e4, 4096) == 4079
    assert first_negative_distance(4.3e3, 1024) is None
    assert first_negative_distance(8.4e4, 8192) is None
    ((start, end),) = passing_base_intervals(2048, low=22700.0, high=22800.0)
    assert round(start) == 22764 and end == 22800.0


@given(dim=st.sampled_from([4, 16, 64, 128]), base=bases, ratio=st.floats(1.0, 1e4))
@example(dim=128, base=10000.0, ratio=50.0)  # Llama 2 Long: 10000 -> 500000
def test_abf_is_ntk_aware_with_the_equivalent_factor(dim, base, ratio):
    """A new base n' is NTK-aware scaling with s = (n'/n)^((d-2)/d)."""
    new_base = base * ratio
    factor = ntk_equivalent_factor(dim, base, new_base)
    torch.testing.assert_close(
        ntk_aware(dim, base, factor=factor).inv_freq, inv_freq(dim, new_base), rtol=1e-12, atol=0
    )


@given(
    length=st.integers(1, 80),
    group=st.integers(1, 9),
    window=st.integers(1, 40),
)
@example(length=64, group=4, window=8)
def test_self_extend_positions(length, group, window):
    """Exact inside the window, the grouped formula outside, never decreasing along a row."""
    m_, n_ = torch.arange(length)[:, None], torch.arange(length)[None, :]
    rel = self_extend_relative_positions(m_, n_.clamp(max=m_), group_size=group, window=window)
    rows = rel.tolist()  # Python ints: reading a tensor element by element costs microseconds
    for m in range(length):
        for n in range(m + 1):
            if m - n < window:
                assert rows[m][n] == m - n
            else:
                assert rows[m][n] == m // group - n // group + window - window // group
        assert bool((rel[m, : m + 1].flip(0).diff() >= 0).all())  # farther keys, not nearer


@given(original=st.integers(16, 4096), group=st.integers(1, 16), window=st.integers(1, 15))
@example(original=4096, group=8, window=1024)
@settings(max_examples=40, deadline=None)
def test_self_extend_max_length(original, group, window):
    """At the returned length the largest relative position is below L0; one longer, it is not."""
    if window >= original:
        with pytest.raises(ValueError, match="window"):
            self_extend_max_length(original, group_size=group, window=window)
        return
    length = self_extend_max_length(original, group_size=group, window=window)

    def largest(n):  # query n - 1, key 0
        return (n - 1) // group + window - window // group if n - 1 >= window else n - 1

    assert largest(length) <= original - 1 < largest(length + 1)


@given(length=st.integers(1, 60), window=st.integers(1, 30), leak=st.none() | st.floats(1, 64))
@example(length=32, window=8, leak=None)
@example(length=32, window=8, leak=4.0)
def test_rerope_positions(length, window, leak):
    """Exact inside the window; clipped at w (ReRoPE) or w + (d - w)/k (leaky) beyond."""
    m_, n_ = torch.arange(length)[:, None], torch.arange(length)[None, :]
    rel = rerope_relative_positions(m_, n_.clamp(max=m_), window=window, leak=leak)
    rows = rel.double().tolist()  # the float(rel[m, n]) of each element, read at once
    for m in range(length):
        for n in range(m + 1):
            d = m - n
            want = d if d < window else (window if leak is None else window + (d - window) / leak)
            assert math.isclose(rows[m][n], want, rel_tol=1e-12)
    assert float(rel.max()) <= max(length - 1, 0)


def test_relative_positions_refuse_a_later_key():
    """A causal query sees no key after it: such a pair is refused, not silently mapped."""
    with pytest.raises(ValueError, match="key_positions must be <= query_positions"):
        self_extend_relative_positions(torch.tensor(3), torch.tensor(5), group_size=2, window=2)
    with pytest.raises(TypeError, match="integer positions"):
        rerope_relative_positions(torch.tensor(3.0), torch.tensor(1), window=2)


def test_pi_sinusoids_are_dependent_to_working_precision():
    """The page's singular values: the smallest is at float64's rounding of the largest.

    So the printed ratio (about 1e-17) is a floor set by the arithmetic, not a property of the
    sinusoids, and the page says so instead of 'seventeen orders of magnitude'.
    """
    omega = inv_freq(128)
    k = torch.linspace(0, 2048, 4097, dtype=F64)
    angles = torch.outer(k, omega)
    sv = torch.linalg.svdvals(torch.cat([torch.cos(angles), torch.sin(angles)], dim=1))
    eps = torch.finfo(F64).eps
    assert float(sv[-1]) < 10 * eps * float(sv[0])  # at the rounding level: rank-deficient
    assert 1e-18 < float(sv[-1] / sv[0]) < 1e-16  # the page's "about 1e-17" (1.6e-17 here)


def test_fast_pairs_under_ntk_aware_and_yarn():
    """At s = 4, d = 64, YaRN keeps the 11 fastest pairs exactly; NTK-aware only pair 0.

    NTK-aware slows pair 3 by 13 % (s^(-6/62)): the page no longer says it leaves them as they are.
    """
    from posenc_ref.rope_scaling import yarn

    omega = inv_freq(64)
    kept = yarn(64, factor=4.0, original_max_len=4096).inv_freq == omega
    assert int(kept.sum()) == 11 and bool(kept[:11].all())
    ratio = ntk_aware(64, factor=4.0).inv_freq / omega
    assert float(ratio[0]) == 1.0
    assert f"{1 - float(ratio[3]):.2f}" == "0.13"
    assert math.isclose(float(ratio[3]), 4.0 ** (-6 / 62), rel_tol=1e-12)


@given(length=st.integers(1, 300), sinks=st.integers(0, 8), window=st.integers(1, 64),
       cap=st.integers(1, 64))  # fmt: skip
@example(length=16384, sinks=4, window=4096, cap=4096)
def test_lm_infinite_positions(length, sinks, window, cap):
    """The last query sees the first sinks and the last window keys, each at min(m - p, cap)."""
    m, p = torch.tensor(length - 1), torch.arange(length)
    got = lm_infinite_positions(m, p, sinks=sinks, window=window, cap=cap)
    assert got.visible.tolist() == [q < sinks or length - 1 - q < window for q in range(length)]
    assert got.distance.tolist() == [min(length - 1 - q, cap) for q in range(length)]


@given(length=st.integers(1, 300), sinks=st.integers(0, 8), window=st.integers(1, 64))
@example(length=16384, sinks=4, window=4092)
def test_streaming_llm_positions(length, sinks, window):
    """Keys are numbered by their place in a cache of the first sinks and the last window tokens.

    The query sees at most sinks + window keys, recent ones at their true distance, and no
    distance exceeds sinks + window - 1; before the cache fills, nothing changes.
    """
    m, p = torch.tensor(length - 1), torch.arange(length)
    got = streaming_llm_positions(m, p, sinks=sinks, window=window)
    kept = [q for q in range(length) if q < sinks or length - 1 - q < window]
    if length <= sinks + window:
        kept = list(range(length))
    assert got.visible.nonzero().flatten().tolist() == kept
    cache = {q: slot for slot, q in enumerate(kept)}  # place in the cache, in order
    assert [int(got.distance[q]) for q in kept] == [cache[length - 1] - cache[q] for q in kept]
    assert int(got.distance[got.visible].max()) <= sinks + window - 1 or length <= sinks + window


@given(length=st.integers(1, 200), window=st.integers(1, 64))
def test_lm_infinite_within_the_window_is_rerope(length, window):
    """Without sinks and with cap = window, LM-Infinite is ReRoPE restricted to the window."""
    m, p = torch.tensor(length - 1), torch.arange(length)
    got = lm_infinite_positions(m, p, sinks=0, window=window, cap=window)
    rerope = rerope_relative_positions(m, p, window=window)
    assert torch.equal(got.distance[got.visible].double(), rerope[got.visible])
    assert int(got.visible.sum()) == min(length, window)
