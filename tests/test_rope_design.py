"""Why RoPE has its form (posenc_ref/rope_design.py).

The additive score's four terms, the requirement solved (the norm and the phase it forces), the
positional heads built from fast pairs, the position-free channels of slow pairs, p-RoPE and
Gemma 4's proportional type, and a score that grows with distance.
"""

import math

import pytest
import torch
from hypothesis import example, given
from hypothesis import strategies as st

from posenc_ref import apply_rope, inv_freq, rope_cos_sin, sinusoidal
from posenc_ref.beyond_rope import p_rope
from posenc_ref.rope_design import (
    additive_score_terms,
    causal_attention,
    positional_head,
    score_matrix,
    self_similarity,
)
from posenc_ref.rope_scaling import linear, ntk_aware, yarn
from tests.strategies import bases, head_dims, layouts, seeds

F64 = torch.float64


def randn(seed: int, *shape: int) -> torch.Tensor:
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed), dtype=F64)


@given(seed=seeds, width=st.sampled_from([4, 8, 16]), head=st.sampled_from([2, 4, 8]))
@example(seed=0, width=8, head=4)
def test_additive_score_is_the_sum_of_four_terms(seed, width, head):
    """(W_q(e_m + p_m))^T W_k(e_n + p_n) = cc + cp + pc + pp, exactly as the page expands it."""
    e_q, p_q, e_k, p_k = (randn(seed + i, 5, width) for i in range(4))
    w_q, w_k = randn(seed + 4, head, width), randn(seed + 5, head, width)
    terms = additive_score_terms(e_q, p_q, e_k, p_k, w_q, w_k)
    direct = ((e_q + p_q) @ w_q.T) @ ((e_k + p_k) @ w_k.T).T
    torch.testing.assert_close(terms.total(), direct, rtol=1e-12, atol=1e-12)


@given(seed=seeds, shift=st.integers(1, 500))
@example(seed=0, shift=7)
def test_additive_terms_with_position_depend_on_absolute_positions(seed, shift):
    """Sinusoidal positions, learned projections: shifting both tokens changes the 3 position terms.

    Only content-content is unchanged; RoPE's single term depends on the offset only.
    """
    width, head = 16, 8
    table = sinusoidal(600, width, dtype=F64)
    e_q, e_k = randn(seed, 1, width), randn(seed + 1, 1, width)
    w_q, w_k = randn(seed + 2, head, width), randn(seed + 3, head, width)
    m, n = 40, 30
    before = additive_score_terms(e_q, table[m : m + 1], e_k, table[n : n + 1], w_q, w_k)
    after = additive_score_terms(
        e_q, table[m + shift : m + shift + 1], e_k, table[n + shift : n + shift + 1], w_q, w_k
    )
    assert torch.equal(before.content_content, after.content_content)
    for name in ("content_position", "position_content", "position_position"):
        assert not torch.allclose(getattr(before, name), getattr(after, name), atol=1e-9), name
    # RoPE: the same content, rotated instead of added: one term, a function of m - n.
    omega = inv_freq(head)
    q, k = (e_q @ w_q.T)[0], (e_k @ w_k.T)[0]
    rotated = [
        score_matrix(torch.stack([q, k]), torch.stack([q, k]), omega, torch.tensor([a, b]))[0, 1]
        for a, b in ((m, n), (m + shift, n + shift))
    ]
    assert math.isclose(float(rotated[0]), float(rotated[1]), rel_tol=1e-9, abs_tol=1e-9)


@given(seed=seeds, m=st.integers(0, 200), n=st.integers(0, 200), eps=st.floats(1e-4, 1e-2))
@example(seed=0, m=5, n=3, eps=1e-3)
def test_a_phase_not_linear_in_position_breaks_the_requirement(seed, m, n, eps):
    """The derivation's step: the phase must be linear in m; a quadratic drift breaks the offset.

    Rotating by w (m + eps m^2) instead of w m keeps every norm, but shifting both positions by
    10 turns pair i's relative angle by w_i eps 20 (m - n): the score changes unless m = n.
    """
    dim = 8
    q, k = randn(seed, dim), randn(seed + 1, dim)
    omega = inv_freq(dim)

    def score(a, b, drift):
        pos = torch.tensor([a, b], dtype=F64)
        pos = pos + drift * pos**2
        cos, sin = rope_cos_sin(pos, omega, dtype=F64)
        x = apply_rope(torch.stack([q, k]), cos, sin)
        return float(x[0] @ x[1])

    assert math.isclose(score(m, n, 0.0), score(m + 10, n + 10, 0.0), abs_tol=1e-9)
    if m != n:  # equal positions cancel any phase; otherwise the drift shows
        assert abs(score(m, n, eps) - score(m + 10, n + 10, eps)) > 1e-12


@given(
    dim=st.sampled_from([16, 32, 64, 128]),
    base=st.sampled_from([100.0, 10000.0, 500000.0]),
    offset=st.integers(0, 12),
    pairs=st.integers(1, 6),
    layout=layouts,
)
@example(dim=64, base=10000.0, offset=1, pairs=4, layout="interleaved")
def test_positional_head_peaks_exactly_at_its_offset(dim, base, offset, pairs, layout):
    """The score depends on m - n only and is largest at m - n = offset, among all keys <= m."""
    q, k = positional_head(dim, base, offset=offset, pairs=pairs, layout=layout)
    length = 48
    scores = score_matrix(q, k, inv_freq(dim, base), torch.arange(length), layout=layout)
    for m in range(offset, length):
        best = int(scores[m, : m + 1].argmax())
        assert best == m - offset
        assert math.isclose(float(scores[m, m - offset]), pairs, rel_tol=1e-12)


def test_positional_head_sharpens_to_one_hot_with_its_norm():
    """Scaling q and k by c multiplies every score by c^2: the weight on the target tends to 1."""
    dim, length = 64, 32
    weights = []
    for scale in (0.5, 1.0, 2.0, 4.0):
        q, k = positional_head(dim, offset=1, pairs=4, scale=scale)
        attention = causal_attention(score_matrix(q, k, inv_freq(dim), torch.arange(length)))
        weights.append(float(attention[length - 1, length - 2]))
    assert weights == sorted(weights) and weights[-1] > 0.999


@pytest.mark.parametrize(
    ("method", "target"),
    [
        (lambda d: linear(d, factor=4.0), 4),  # PI: the previous-token head points 4 back
        (lambda d: ntk_aware(d, factor=4.0), 1),  # fast pairs kept
        (lambda d: yarn(d, factor=4.0, original_max_len=4096), 1),
    ],
)
def test_interpolating_fast_pairs_moves_a_positional_head(method, target):
    """The page's reason fast pairs must not be interpolated: PI sends offset 1 to offset s."""
    dim = 64
    q, k = positional_head(dim, offset=1, pairs=4)
    scores = score_matrix(q, k, method(dim).inv_freq, torch.arange(64))
    assert {m - int(scores[m, : m + 1].argmax()) for m in range(8, 64)} == {target}


@given(dim=head_dims, base=bases, distance=st.integers(0, 10**6))
@example(dim=2, base=10000.0, distance=0)
def test_self_similarity_is_the_score_of_a_key_equal_to_its_query(dim, base, distance):
    """(1/N) sum cos(k w_i) is the rotated score of unit pairs, relative to distance 0."""
    omega = inv_freq(dim, base)
    x = torch.zeros(dim, dtype=F64)
    x[0::2] = 1.0
    cos, sin = rope_cos_sin(torch.tensor([distance]), omega, dtype=F64)
    score = float(apply_rope(x[None], cos, sin)[0] @ x) / (dim // 2)
    expected = float(self_similarity(omega, torch.tensor([distance]))[0])
    assert math.isclose(score, expected, rel_tol=1e-9, abs_tol=1e-9)


@given(seed=seeds, distance=st.integers(0, 5000))
@example(seed=0, distance=100)
def test_self_score_weights_each_pair_by_its_squared_norm(seed, distance):
    """<R_m q, R_n q> = sum_i |q_i|^2 cos((m - n) w_i): equal weights only for equal pair norms.

    Hence the expected score of an isotropic Gaussian query is self_similarity (times its mean
    squared norm), and that of an anisotropic one is not.
    """
    dim = 16
    q = randn(seed, dim)
    omega = inv_freq(dim)
    cos, sin = rope_cos_sin(torch.tensor([distance, 0]), omega, dtype=F64)
    rotated = apply_rope(q.expand(2, -1), cos, sin)
    norms = q[0::2] ** 2 + q[1::2] ** 2
    expected = float((norms * torch.cos(distance * omega)).sum())
    assert math.isclose(float(rotated[0] @ rotated[1]), expected, rel_tol=1e-9, abs_tol=1e-9)


@given(dim=st.sampled_from([8, 64, 128, 256]), base=bases, p=st.floats(0.0, 1.0))
@example(dim=512, base=1e6, p=0.25)
@example(dim=64, base=10000.0, p=0.0)
@example(dim=64, base=10000.0, p=1.0)
def test_p_rope_keeps_the_fastest_pairs(dim, base, p):
    """floor(p d / 2) pairs keep n^(-2i/d); the others are 0 and score like no encoding at all."""
    omega = p_rope(inv_freq(dim, base), p)
    kept = int(p * dim // 2)
    assert torch.equal(omega[:kept], inv_freq(dim, base)[:kept])
    assert bool((omega[kept:] == 0).all())
    distances = torch.tensor([0, 10**3, 10**6])
    frozen = torch.zeros(dim // 2 - kept, dtype=F64)
    if frozen.numel():
        assert torch.equal(self_similarity(frozen, distances), torch.ones(3, dtype=F64))


def test_gemma4_proportional_is_p_rope():
    """Gemma 4's full-attention layers: p-RoPE with p = partial_rotary_factor 0.25 on 512.

    Rotated coordinates are 0..63 and 256..319 (half layout), not the first 128.
    """
    from posenc_ref.models import released_config, rope_spec

    config = released_config("Gemma 4 (per-layer head widths, proportional)")
    spec = rope_spec(config, layer_type="full_attention")
    assert (spec.head_dim, spec.layout) == (512, "half")
    torch.testing.assert_close(
        spec.inv_freq, p_rope(inv_freq(512, spec.base), 0.25), rtol=1e-15, atol=0
    )
    x = randn(0, 1, 512)
    cos, sin = rope_cos_sin(torch.tensor([1000]), spec.inv_freq, dtype=F64)
    moved = (apply_rope(x, cos, sin, layout="half") != x)[0].nonzero().flatten()
    assert moved.tolist() == list(range(64)) + list(range(256, 320))


@given(dim=st.sampled_from([64, 128]), base=st.sampled_from([1e4, 5e5]), scale=st.floats(0.1, 10))
@example(dim=128, base=10000.0, scale=1.0)
def test_a_score_that_grows_with_distance(dim, base, scale):
    """Against 'RoPE scores decay with distance': q = -k on the slowest pair.

    The score is -scale^2 cos(r w) for a key r positions back, rising from -scale^2 at r = 0
    all the way to pi / w, far past a 4096 context for these bases.
    """
    omega = inv_freq(dim, base)
    q = torch.zeros(dim, dtype=F64)
    q[dim - 2] = scale  # the slowest pair, interleaved
    k = -q
    reach = math.pi / float(omega[-1])
    assert reach > 4096
    positions = torch.arange(0, 4097, 64)
    scores = score_matrix(q, k, omega, positions)[-1]
    # scores[n] pairs the query at 4096 with the key at positions[n]: distance 4096 - n.
    assert bool((scores.flip(0).diff() > 0).all())  # larger distance, larger score


def test_slow_pairs_match_is_not_negative_for_good_past_its_first_zero():
    """The 8 slowest pairs of a 128-wide head (base 10000), the page's left panel to 65536.

    The match first goes negative at 7,836 and is positive again from 34,293: the figure's alt
    text says 'first below zero', not 'below zero from then on'.
    """
    distances = torch.arange(0, 65537, dtype=F64)
    negative = self_similarity(inv_freq(128)[-8:], distances) < 0
    assert int(negative.nonzero()[0]) == 7836
    assert not bool(negative[34293:62722].any()) and bool(negative[34292])
