"""Dual chunk attention's positions (posenc_ref/dual_chunk.py).

The distance agrees with an oracle built the way vLLM and SGLang build their tables (a query
table per regime over one chunk, a key table over every position, the inter-chunk query read
from the successive table's last row); it is exact inside a chunk and inside the local window,
never exceeds the chunk size, and rotating at DCA's positions scores by it. Pinned on Qwen2.5-1M's
sizes; bad input.
"""

import doctest
import functools

import pytest
import torch
from hypothesis import assume, example, given
from hypothesis import strategies as st

from posenc_ref import apply_rope, rope_cos_sin
from posenc_ref.absolute import inv_freq
from posenc_ref.dual_chunk import (
    dual_chunk_distance,
    dual_chunk_positions,
    dual_chunk_sparse_positions,
)
from tests.strategies import head_dims, seeds

F64 = torch.float64

# (chunk_size, local_size): small ones where every regime shows in a few positions, the engines'
# defaults, and Qwen2.5-1M's released values.
sizes = st.tuples(st.integers(2, 64), st.integers(0, 63)).filter(lambda s: s[1] < s[0]) | (
    st.sampled_from([(8192, 1024), (262144, 8192)])
)
pairs = st.tuples(st.integers(0, 1 << 20), st.integers(0, 1 << 20)).map(sorted)


@functools.cache
def _engine_tables(chunk_size: int, local_size: int) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """The query and successive-query tables over one chunk, built once per sizes.

    (Qwen2.5-1M's chunk holds 253,952 positions: building its tables per example cost more than
    the rest of the test.)
    """
    c = chunk_size - local_size
    return tuple(range(c)), tuple(min(t + c, chunk_size) for t in range(c))


def engine_distance(i: int, j: int, chunk_size: int, local_size: int) -> int:
    """The distance as the engines' tables give it (the facts, written out with Python ints).

    Tables over one chunk of length c: the query at ``t``, the successive query at
    ``min(t + c, chunk_size)``; keys at ``position % c``; the inter-chunk query is the
    successive table's row ``c - 1``. A query meets its own chunk's keys with the first table,
    the previous chunk's with the second, every earlier chunk's with the inter row.
    """
    c = chunk_size - local_size
    q_table, qc_table = _engine_tables(chunk_size, local_size)
    key = j % c
    if i // c == j // c:
        return q_table[i % c] - key
    if i // c == j // c + 1:
        return qc_table[i % c] - key
    return qc_table[c - 1] - key


@given(sizes, pairs)
@example((2, 0), (0, 0))  # the smallest chunks: c = 2, position 0
@example((2, 1), (0, 5))  # c = 1: every position is its own chunk
@example((8, 0), (3, 20))  # no local window: the successive query is always capped
def test_distance_is_the_engines(size, pair):
    chunk_size, local_size = size
    j, i = pair
    got = dual_chunk_distance(i, j, chunk_size=chunk_size, local_size=local_size)
    assert got.tolist() == [engine_distance(i, j, chunk_size, local_size)]


@given(sizes, st.lists(st.integers(0, 1 << 20), min_size=1, max_size=20))
@example((8, 2), [0, 5, 6, 13])
def test_sparse_positions_are_vllms_two_extra_tables(size, positions):
    """The five query tables of vLLM: the three dense ones, and two unclamped for the sparse path.

    Restated from DualChunkRotaryEmbedding: over one chunk ``t = 0 .. c - 1`` the
    ``qc_no_clamp`` table is ``t + c`` and the ``q_inter`` table ``t + chunk_size``, each read
    at ``position % c``; the clamped successive table differs from the first only past S.
    """
    chunk_size, local_size = size
    c = chunk_size - local_size
    succ, inter = dual_chunk_sparse_positions(
        torch.tensor(positions), chunk_size=chunk_size, local_size=local_size
    )
    assert succ.tolist() == [p % c + c for p in positions]
    assert inter.tolist() == [p % c + chunk_size for p in positions]
    dense = dual_chunk_positions(torch.tensor(positions), chunk_size=chunk_size,
                                 local_size=local_size)  # fmt: skip
    assert torch.equal(dense.successive, succ.clamp(max=chunk_size))


@given(sizes, st.lists(pairs, min_size=1, max_size=20))
def test_distance_is_the_regime_query_minus_the_key(size, some):
    """Vectorised over pairs, from the four position tensors of dual_chunk_positions."""
    chunk_size, local_size = size
    j = torch.tensor([a for a, _ in some])
    i = torch.tensor([b for _, b in some])
    c = chunk_size - local_size
    q = dual_chunk_positions(i, chunk_size=chunk_size, local_size=local_size)
    k = dual_chunk_positions(j, chunk_size=chunk_size, local_size=local_size).key
    between = i // c - j // c
    expected = (
        torch.where(between == 0, q.intra, torch.where(between == 1, q.successive, q.inter)) - k
    )
    got = dual_chunk_distance(i, j, chunk_size=chunk_size, local_size=local_size)
    assert torch.equal(got, expected)


@given(sizes, pairs)
def test_distance_never_exceeds_the_chunk_size(size, pair):
    chunk_size, local_size = size
    j, i = pair
    d = int(dual_chunk_distance(i, j, chunk_size=chunk_size, local_size=local_size))
    assert 0 <= d <= chunk_size
    if i != j:
        assert d >= 1  # two tokens never share a position


@given(sizes, st.integers(0, 1 << 20), st.data())
def test_intra_chunk_and_local_window_are_exact(size, i, data):
    chunk_size, local_size = size
    c = chunk_size - local_size
    same_chunk = data.draw(st.integers((i // c) * c, i))
    dca = {"chunk_size": chunk_size, "local_size": local_size}
    assert int(dual_chunk_distance(i, same_chunk, **dca)) == i - same_chunk
    assume(c >= local_size)  # otherwise two chunks back can be within the window
    near = data.draw(st.integers(max(0, i - local_size), i))
    assert int(dual_chunk_distance(i, near, **dca)) == i - near


@given(sizes)
def test_plain_rope_inside_the_first_chunk(size):
    chunk_size, local_size = size
    c = min(chunk_size - local_size, 200)
    i, j = torch.tril_indices(c, c)
    assert torch.equal(
        dual_chunk_distance(i, j, chunk_size=chunk_size, local_size=local_size), i - j
    )


@given(head_dims, st.sampled_from(["half", "interleaved"]), sizes, pairs, seeds)
def test_rotating_at_the_positions_scores_by_the_distance(dim, layout, size, pair, seed):
    """Rotated at DCA's positions, the score is the score of the distance d(i, j).

    <R(query position) q, R(key position) k> = <R(d) q, k>: RoPE's relative property.
    """
    chunk_size, local_size = size
    j, i = pair
    c = chunk_size - local_size
    gen = torch.Generator().manual_seed(seed)
    q, k = torch.randn(2, 1, dim, generator=gen, dtype=F64)
    p = dual_chunk_positions(torch.tensor([i]), chunk_size=chunk_size, local_size=local_size)
    key = dual_chunk_positions(torch.tensor([j]), chunk_size=chunk_size, local_size=local_size).key
    between = i // c - j // c
    query = p.intra if between == 0 else p.successive if between == 1 else p.inter
    freqs = inv_freq(dim, 10000.0)

    def rotated(x, at):
        cos, sin = rope_cos_sin(at, freqs, dtype=F64)
        return apply_rope(x, cos, sin, layout=layout)

    d = dual_chunk_distance(i, j, chunk_size=chunk_size, local_size=local_size)
    score = float(rotated(q, query) @ rotated(k, key).T)
    assert score == pytest.approx(float(rotated(q, d) @ k.T), abs=1e-9 * (1 + abs(score)))


def test_qwen25_1m_sizes():
    """Qwen2.5-1M: chunk_size 262144, local_size 8192, so c = 253952 (worked by hand)."""
    sizes = {"chunk_size": 262144, "local_size": 8192}
    p = dual_chunk_positions(torch.tensor([0, 253951, 253952, 262144, 600000]), **sizes)
    assert p.key.tolist() == [0, 253951, 0, 8192, 92096]
    assert p.successive.tolist() == [253952, 262144, 253952, 262144, 262144]
    assert p.inter.tolist() == [262144] * 5
    i = torch.tensor([600000, 600000, 270000, 258000])
    j = torch.tensor([10, 300000, 100, 253000])
    # two chunks back (inter); the chunk before, the query capped at chunk_size (600000 is at
    # 92096 in its chunk, 270000 at 16048, both past local_size); the chunk before, within
    # the local window (258000 is at 4048): the true distance
    assert dual_chunk_distance(i, j, **sizes).tolist() == [
        262144 - 10,
        262144 - (300000 - 253952),
        262144 - 100,
        5000,
    ]


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"chunk_size": 8, "local_size": 8}, ValueError, "local_size must be < chunk_size"),
        ({"chunk_size": 1, "local_size": 0}, ValueError, "chunk_size"),
        ({"chunk_size": 8, "local_size": -1}, ValueError, "local_size"),
        ({"chunk_size": 8.0, "local_size": 2}, TypeError, "chunk_size"),
        ({"chunk_size": True, "local_size": 0}, TypeError, "chunk_size"),
    ],
)
def test_bad_sizes(kwargs, error, match):
    with pytest.raises(error, match=match):
        dual_chunk_positions(torch.tensor([0, 1]), **kwargs)
    with pytest.raises(error, match=match):
        dual_chunk_distance(1, 0, **kwargs)


def test_bad_positions():
    sizes = {"chunk_size": 8, "local_size": 2}
    with pytest.raises(ValueError, match="causal"):
        dual_chunk_distance(3, 4, **sizes)
    with pytest.raises(TypeError, match="query_positions must have an integer dtype"):
        dual_chunk_distance(torch.tensor([3.0]), 1, **sizes)
    with pytest.raises(ValueError, match="key_positions must be >= 0"):
        dual_chunk_distance(3, torch.tensor([-1]), **sizes)
    with pytest.raises(ValueError, match="do not broadcast"):
        dual_chunk_distance(torch.tensor([3, 4, 5]), torch.tensor([1, 2]), **sizes)
    with pytest.raises(ValueError, match="positions must be >= 0"):
        dual_chunk_positions(torch.tensor([-2]), **sizes)


def test_docstring_examples():
    import posenc_ref.dual_chunk

    result = doctest.testmod(posenc_ref.dual_chunk, extraglobs={"torch": torch})
    assert result.attempted >= 2 and result.failed == 0
