"""Relative schemes: Shaw clipping, T5 buckets, ALiBi (posenc_ref/relative.py)."""

import math

import pytest
import torch
from hypothesis import example, given
from hypothesis import strategies as st

from posenc_ref import (
    alibi_bias,
    alibi_slopes,
    relative_positions,
    shaw_relative_index,
    t5_relative_bucket,
)
from posenc_ref.relative import FireWeights, fire_bias, kerple_log_bias, kerple_power_bias


def reference_slopes(n: int) -> list[float]:
    """The ALiBi paper's recipe, restated: geometric for powers of two, interleaved otherwise."""

    def geometric(m: int) -> list[float]:
        start = 2 ** (-(2 ** -(math.log2(m) - 3)))  # 2^(-8/m), also the ratio
        return [start * start**i for i in range(m)]

    if math.log2(n).is_integer():
        return geometric(n)
    closest = 2 ** math.floor(math.log2(n))
    return geometric(closest) + reference_slopes(2 * closest)[0::2][: n - closest]


@given(st.integers(1, 128))
@example(12)
@example(1)
def test_alibi_slopes_reference(num_heads):
    """Slopes equal the reference sequence for every head count, powers of two or not."""
    got = alibi_slopes(num_heads, dtype=torch.float64)
    assert got.shape == (num_heads,)
    torch.testing.assert_close(
        got, torch.tensor(reference_slopes(num_heads), dtype=torch.float64), rtol=1e-14, atol=0
    )


def test_alibi_slopes_published_values():
    """8 heads: 1/2, 1/4, ..., 1/256. 12 heads: those, then 2^-0.5, 2^-1.5, 2^-2.5, 2^-3.5."""
    exponents_8 = [-1, -2, -3, -4, -5, -6, -7, -8]
    torch.testing.assert_close(
        alibi_slopes(8, dtype=torch.float64),
        torch.tensor([2.0**e for e in exponents_8], dtype=torch.float64),
    )
    exponents_12 = exponents_8 + [-0.5, -1.5, -2.5, -3.5]
    torch.testing.assert_close(
        alibi_slopes(12, dtype=torch.float64),
        torch.tensor([2.0**e for e in exponents_12], dtype=torch.float64),
    )


@given(st.integers(2, 128))
def test_alibi_slopes_not_monotone(num_heads):
    """Strictly decreasing exactly for powers of two; otherwise the extra slopes restart high."""
    slopes = alibi_slopes(num_heads, dtype=torch.float64)
    decreasing = bool(torch.all(slopes[1:] < slopes[:-1]))
    assert decreasing == math.log2(num_heads).is_integer()
    # Not the same set as the naive 2^(-8h/n) for all n.
    naive = torch.tensor([2.0 ** (-8 * h / num_heads) for h in range(1, num_heads + 1)])
    same = torch.allclose(slopes.float(), naive)
    assert same == math.log2(num_heads).is_integer()


@given(st.integers(1, 16), st.integers(1, 24))
def test_alibi_bias_linear(num_heads, length):
    """bias[h, i, j] = -m_h (i - j) for j <= i, -inf after the query (causal)."""
    bias = alibi_bias(num_heads, length, length, dtype=torch.float64)
    slopes = alibi_slopes(num_heads, dtype=torch.float64)
    # every (i, j) at once: the same elementwise comparisons as one call per entry, ~100x cheaper
    i, j = torch.arange(length)[:, None], torch.arange(length)[None, :]
    causal = (j <= i).expand(num_heads, length, length)
    want = -slopes[:, None, None] * (i - j)  # (heads, i, j): -m_h (i - j), as for one entry
    torch.testing.assert_close(bias[causal], want[causal], rtol=1e-15, atol=0)
    assert torch.all(bias[~causal] == float("-inf"))
    symmetric = alibi_bias(num_heads, length, length, causal=False, dtype=torch.float64)
    torch.testing.assert_close(symmetric, symmetric.transpose(1, 2))
    assert torch.all(symmetric.diagonal(dim1=1, dim2=2) == 0)


@given(st.integers(1, 8), st.integers(1, 32), st.data())
def test_alibi_bias_kv_cache_rows(num_heads, key_len, data):
    """New queries attending to a cache get the last rows of the full bias: nothing re-encoded."""
    query_len = data.draw(st.integers(0, key_len))
    full = alibi_bias(num_heads, key_len, key_len)
    cached = alibi_bias(num_heads, query_len, key_len)
    assert cached.shape == (num_heads, query_len, key_len)
    torch.testing.assert_close(cached, full[:, key_len - query_len :])


@given(st.integers(0, 20), st.integers(0, 20))
def test_relative_positions(query_len, extra):
    key_len = query_len + extra
    rel = relative_positions(query_len, key_len)
    rows = rel.tolist()  # Python ints: reading a tensor element by element costs microseconds
    for i in range(query_len):
        for j in range(key_len):
            assert rows[i][j] == j - (extra + i)


BUCKET_CONFIGS = st.sampled_from([(32, 128), (16, 64), (8, 20), (64, 512), (4, 10)])


@given(BUCKET_CONFIGS, st.booleans())
@example((32, 128), True)
@example((32, 128), False)
def test_t5_buckets_monotone(config, bidirectional):
    """Within each direction, the bucket never decreases as the distance grows."""
    num_buckets, max_distance = config
    distance = torch.arange(0, 4 * max_distance)
    past = t5_relative_bucket(
        -distance, bidirectional=bidirectional, num_buckets=num_buckets, max_distance=max_distance
    )
    assert torch.all(past[1:] >= past[:-1])
    assert past.min() >= 0 and past.max() <= num_buckets - 1
    if bidirectional:
        future = t5_relative_bucket(
            distance[1:], num_buckets=num_buckets, max_distance=max_distance
        )
        assert torch.all(future[1:] >= future[:-1])
        # The two directions use disjoint halves of the buckets.
        assert set(past.tolist()).isdisjoint(future.tolist())
    else:
        future = t5_relative_bucket(
            distance, bidirectional=False, num_buckets=num_buckets, max_distance=max_distance
        )
        assert torch.all(future == 0)  # a decoder only tells past distances apart


@given(BUCKET_CONFIGS, st.booleans(), st.integers(0, 10_000))
def test_t5_buckets_saturate(config, bidirectional, beyond):
    """Every distance from max_distance on lands in the direction's last bucket."""
    num_buckets, max_distance = config
    per_direction = num_buckets // 2 if bidirectional else num_buckets
    rel = torch.tensor([-(max_distance + beyond)])
    bucket = t5_relative_bucket(
        rel, bidirectional=bidirectional, num_buckets=num_buckets, max_distance=max_distance
    )
    assert bucket.item() == per_direction - 1
    # The cap, not the log rule, decides from max_distance on: there, the uncapped formula
    # e + ln(n/e)/ln(max_distance/e) * (N - e) reaches N, one past the last bucket.
    e = per_direction // 2
    uncapped = e + math.log((max_distance + beyond) / e) / math.log(max_distance / e) * e
    assert uncapped >= per_direction - 1e-9


@given(BUCKET_CONFIGS, st.booleans())
def test_t5_exact_buckets(config, bidirectional):
    """Small distances (below half a direction's buckets) each get their own bucket."""
    num_buckets, max_distance = config
    per_direction = num_buckets // 2 if bidirectional else num_buckets
    exact = torch.arange(per_direction // 2)
    got = t5_relative_bucket(
        -exact, bidirectional=bidirectional, num_buckets=num_buckets, max_distance=max_distance
    )
    assert got.tolist() == exact.tolist()
    if bidirectional:
        got_future = t5_relative_bucket(
            exact[1:], num_buckets=num_buckets, max_distance=max_distance
        )
        assert got_future.tolist() == (exact[1:] + per_direction).tolist()


def test_t5_matches_transformers():
    """Bit-for-bit agreement with HF transformers' T5 bucketing (the checkpoints' reference)."""
    t5 = pytest.importorskip("transformers.models.t5.modeling_t5")
    rel = torch.arange(-700, 700)[None, :] - torch.arange(0, 3)[:, None]
    for bidirectional in (True, False):
        for num_buckets, max_distance in [(32, 128), (64, 256), (16, 40)]:
            theirs = t5.T5Attention._relative_position_bucket(
                rel, bidirectional=bidirectional, num_buckets=num_buckets, max_distance=max_distance
            )
            ours = t5_relative_bucket(
                rel, bidirectional=bidirectional, num_buckets=num_buckets, max_distance=max_distance
            )
            torch.testing.assert_close(ours, theirs, rtol=0, atol=0)


def test_alibi_matches_bloom():
    """HF Bloom's ALiBi slopes are the same set (its fp32 pow needs a relative tolerance)."""
    bloom = pytest.importorskip("transformers.models.bloom.modeling_bloom")
    for num_heads in (1, 4, 8, 12, 16, 20, 32, 40):
        mask = torch.ones(1, 5)
        theirs = bloom.build_alibi_tensor(mask, num_heads, torch.float32)  # (heads, 1, keys)
        slopes_from_bloom = theirs[:, 0, 1]  # slope * key position 1
        torch.testing.assert_close(slopes_from_bloom, alibi_slopes(num_heads), rtol=1e-6, atol=0)


@given(st.integers(1, 16), st.lists(st.integers(-100, 100), min_size=1, max_size=50))
def test_shaw_clipping(k, distances):
    """Distances are clipped to [-K, K] and shifted to rows 0..2K."""
    rel = torch.tensor(distances)
    index = shaw_relative_index(rel, k)
    assert index.min() >= 0 and index.max() <= 2 * k
    for d, row in zip(distances, index.tolist(), strict=True):
        assert row == max(-k, min(k, d)) + k


BAD_CALLS = [
    (alibi_slopes, (0,), {}, ValueError, "num_heads must be an integer >= 1"),
    (alibi_slopes, (2.0,), {}, TypeError, "num_heads must be an integer"),
    (alibi_bias, (4, 5, 3), {}, ValueError, "query_len must be <= key_len"),
    (alibi_bias, (4, -1, 3), {}, ValueError, "query_len must be an integer >= 0"),
    (alibi_bias, (4, 2, 3), {"causal": "yes"}, TypeError, "causal must be True or False"),
    (relative_positions, (2, 1), {}, ValueError, "query_len must be <= key_len"),
    (t5_relative_bucket, (torch.tensor([1.5]),), {}, TypeError, "integer tensor"),
    (t5_relative_bucket, ([1, 2],), {}, TypeError, "relative_position must be a torch.Tensor"),
    (t5_relative_bucket, (torch.tensor([1]),), {"num_buckets": 31}, ValueError, "must be even"),
    (t5_relative_bucket, (torch.tensor([1]),), {"num_buckets": 2}, ValueError, ">= 4"),
    (
        t5_relative_bucket,
        (torch.tensor([1]),),
        {"max_distance": 8},
        ValueError,
        "max_distance must be > 8",
    ),
    (
        t5_relative_bucket,
        (torch.tensor([1]),),
        {"bidirectional": 1},
        TypeError,
        "bidirectional must be",
    ),
    (shaw_relative_index, (torch.tensor([1]), 0), {}, ValueError, "max_relative_position must be"),
    # uint8 holds no negative distance: shaw_relative_index(tensor([0], uint8), 2) returned row 4
    # (the row of distance +2) instead of row 2, because the clamp's -2 wrapped around.
    (
        shaw_relative_index,
        (torch.tensor([0, 200], dtype=torch.uint8), 2),
        {},
        TypeError,
        r"must be a signed integer tensor \(key - query is negative",
    ),
    (
        t5_relative_bucket,
        (torch.tensor([0, 255], dtype=torch.uint8),),
        {},
        TypeError,
        "relative_position must be a signed integer tensor",
    ),
]


@pytest.mark.parametrize(
    ("func", "args", "kwargs", "error", "message"),
    BAD_CALLS,
    ids=[f"{c[0].__name__}-{i}" for i, c in enumerate(BAD_CALLS)],
)
def test_bad_arguments(func, args, kwargs, error, message):
    """Each bad argument raises an error that names it and says what is accepted."""
    with pytest.raises(error, match=message):
        func(*args, **kwargs)


# --------------------------------------------------------------------------- KERPLE and FIRE

heads_st = st.integers(1, 6)


def _positive(seed: int, heads: int, high: float = 2.0) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    return 0.01 + (high - 0.01) * torch.rand(heads, generator=g, dtype=torch.float64)


@given(heads=heads_st, q_len=st.integers(0, 12), extra=st.integers(0, 6), seed=st.integers(0, 99))
def test_kerple_equals_reference_code(heads, q_len, extra, seed):
    """The biases equal the reference code's kernels, restated.

    -p log(1 + a diff) and -a diff^p on the lower triangle (diff = m - p), for queries at the
    end of a key/value cache.
    """
    k_len = q_len + extra
    r1, r2 = _positive(seed, heads), _positive(seed + 1, heads)
    m = torch.arange(k_len - q_len, k_len, dtype=torch.float64)[:, None]
    diff = (m - torch.arange(k_len, dtype=torch.float64)[None, :]).clamp(min=0)
    future = relative_positions(q_len, k_len) > 0
    log_ref = (-r1[:, None, None] * torch.log(1 + r2[:, None, None] * diff)).masked_fill(
        future, float("-inf")
    )
    power_ref = (-r1[:, None, None] * diff.pow(r2[:, None, None])).masked_fill(
        future, float("-inf")
    )
    got_log = kerple_log_bias(r1, r2, q_len, k_len, dtype=torch.float64)
    got_power = kerple_power_bias(r1, r2, q_len, k_len, dtype=torch.float64)
    torch.testing.assert_close(got_log, log_ref, rtol=1e-14, atol=1e-14)
    torch.testing.assert_close(got_power, power_ref, rtol=1e-14, atol=1e-14)


@given(num_heads=st.integers(1, 16), length=st.integers(0, 20), causal=st.booleans())
def test_kerple_power_with_exponent_one_is_alibi(num_heads, length, causal):
    """r2 = 1 and r1 = ALiBi's slopes: the power kernel is ALiBi's bias exactly."""
    slopes = alibi_slopes(num_heads, dtype=torch.float64)
    got = kerple_power_bias(slopes, torch.ones(num_heads, dtype=torch.float64), length, length,
                            causal=causal, dtype=torch.float64)  # fmt: skip
    assert torch.equal(
        got, alibi_bias(num_heads, length, length, causal=causal, dtype=torch.float64)
    )


@given(seed=st.integers(0, 99), length=st.integers(2, 200))
def test_kerple_log_falls_slower_than_linear(seed, length):
    """The log bias decreases with distance, and its steps shrink (concave in the distance)."""
    r1, r2 = _positive(seed, 1), _positive(seed + 1, 1)
    row = kerple_log_bias(r1, r2, 1, length, dtype=torch.float64)[0, 0].flip(0)  # distance 0, 1, ..
    steps = row[:-1] - row[1:]
    assert bool((steps > 0).all())
    assert bool((steps[1:] <= steps[:-1] + 1e-15).all())


def test_kerple_refuses_bad_input():
    ones = torch.ones(2)
    with pytest.raises(ValueError, match=r"r2 must be in \(0, 2\]"):
        kerple_power_bias(ones, torch.tensor([1.0, 2.5]), 3, 3)
    with pytest.raises(ValueError, match="r1 must be in"):
        kerple_log_bias(torch.tensor([1.0, 0.0]), ones, 3, 3)
    with pytest.raises(ValueError, match="same shape"):
        kerple_log_bias(ones, torch.ones(3), 3, 3)
    with pytest.raises(ValueError, match="query_len must be <= key_len"):
        kerple_log_bias(ones, ones, 4, 3)


def _fire_weights(seed: int, heads: int = 3, width: int = 8, **kw) -> FireWeights:
    g = torch.Generator().manual_seed(seed)
    w = [
        torch.randn(*s, generator=g, dtype=torch.float64)
        for s in [(width, 1), (width,), (heads, width), (heads,)]
    ]
    return FireWeights(*w, **kw)


def fire_reference(weights: FireWeights, length: int, eps: float = 1e-6) -> torch.Tensor:
    """The FIRE paper's module, restated for fixed weights: the full (length x length) bias."""
    positions = torch.arange(length, dtype=torch.float64)
    rel_distance = positions[:, None] - positions[None, :]
    pos_normalizer = torch.max(positions, torch.tensor(weights.threshold, dtype=torch.float64))[
        :, None
    ]
    rel_distance = torch.log(torch.abs(weights.c * rel_distance) + 1)
    pos_normalizer = torch.log(torch.abs(weights.c * pos_normalizer) + 1) + eps
    x = (rel_distance / pos_normalizer).unsqueeze(-1)
    hidden = torch.relu(x @ weights.w1.T + weights.b1)
    return (hidden @ weights.w2.T + weights.b2).permute(2, 0, 1)


@given(
    seed=st.integers(0, 99), length=st.integers(0, 40), threshold=st.sampled_from([1.0, 8.0, 512.0])
)
def test_fire_equals_reference_module(seed, length, threshold):
    """Non-causal FIRE equals the paper's code; causal FIRE equals it below the diagonal."""
    weights = _fire_weights(seed, c=0.3, threshold=threshold)
    want = fire_reference(weights, length)
    got = fire_bias(weights, length, length, causal=False, dtype=torch.float64)
    torch.testing.assert_close(got, want, rtol=1e-13, atol=1e-13)
    causal = fire_bias(weights, length, length, dtype=torch.float64)
    future = relative_positions(length, length) > 0
    assert bool(torch.isneginf(causal[:, future]).all())
    torch.testing.assert_close(causal[:, ~future], want[:, ~future], rtol=1e-13, atol=1e-13)


@given(seed=st.integers(0, 99), q_len=st.integers(0, 10), extra=st.integers(0, 30))
def test_fire_cache_rows_equal_full_rows(seed, q_len, extra):
    """Queries at the end of a key/value cache get the last rows of the full bias."""
    weights = _fire_weights(seed, threshold=5.0)
    k_len = q_len + extra
    full = fire_bias(weights, k_len, k_len, dtype=torch.float64)
    assert torch.equal(
        fire_bias(weights, q_len, k_len, dtype=torch.float64), full[:, k_len - q_len :]
    )


def _identity_fire(c: float, threshold: float) -> FireWeights:
    """An MLP that returns its input, so the bias is the normalised log-distance itself."""
    one, zero = torch.ones(1, 1, dtype=torch.float64), torch.zeros(1, dtype=torch.float64)
    return FireWeights(one, zero, one, zero, c, threshold)


@given(length=st.integers(1, 3000), c=st.floats(0.01, 10.0), threshold=st.floats(1.0, 1000.0))
def test_fire_mlp_input_stays_in_unit_interval(length, c, threshold):
    """The MLP's input psi(m - p) / psi(max(L, m)) lies in [0, 1) at any length.

    For every query and past key: the MLP never sees an input outside the trained range.
    """
    x = fire_bias(_identity_fire(c, threshold), 1, length, dtype=torch.float64)[0, 0]
    assert float(x.min()) >= 0.0 and float(x.max()) < 1.0


def test_fire_input_of_the_farthest_key():
    """The farthest key's input is 1 for queries at or past L and psi(m) / psi(L) before it.

    The numbers of the page's figure (L = 64, c = 0.1): the query at 32 ends at about 0.72.
    """
    psi = lambda x: math.log(0.1 * x + 1)  # noqa: E731
    for m, want in [(32, psi(32) / psi(64)), (64, 1.0), (128, 1.0), (512, 1.0)]:
        x = fire_bias(_identity_fire(0.1, 64.0), 1, m + 1, dtype=torch.float64)[0, 0]  # query m
        assert math.isclose(float(x[0]), want, rel_tol=1e-5)  # the key at 0
    assert round(psi(32) / psi(64), 2) == 0.72


@given(seed=st.integers(0, 99), shift=st.integers(1, 20))
def test_fire_is_relative_below_the_threshold(seed, shift):
    """Before the threshold L the bias depends on m - p only; past it, on m too.

    For queries before L the normaliser is psi(L); past L it grows with m, so the same
    distance maps to a smaller input.
    """
    bias = fire_bias(_fire_weights(seed, threshold=40.0), 80, 80, dtype=torch.float64)
    m, p = 10, 4
    torch.testing.assert_close(bias[:, m + shift, p + shift], bias[:, m, p])
    x = fire_bias(_identity_fire(0.1, 40.0), 80, 80, dtype=torch.float64)[0]
    assert float(x[50 + shift, 40 + shift]) < float(x[50, 40])


def test_fire_refuses_bad_input():
    good = _fire_weights(0)
    with pytest.raises(ValueError, match="FireWeights must have shapes"):
        fire_bias(good._replace(w1=torch.zeros(8)), 3, 3)
    with pytest.raises(ValueError, match="threshold"):
        fire_bias(good._replace(threshold=0.0), 3, 3)
    with pytest.raises(TypeError, match="FireWeights"):
        fire_bias((1, 2, 3, 4), 3, 3)
