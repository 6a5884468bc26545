"""Transformer-XL, DeBERTa and CoPE (posenc_ref/relative_terms.py): oracles, properties, peers."""

import math

import pytest
import torch
from hypothesis import example, given
from hypothesis import strategies as st

from posenc_ref import relative_positions
from posenc_ref.relative_terms import (
    cope_bias,
    cope_positions,
    deberta_log_bucket,
    deberta_relative_index,
    deberta_scores,
    rel_shift,
    transformer_xl_scores,
)
from tests.strategies import seeds

lengths = st.integers(min_value=1, max_value=9)


def _randn(seed: int, *shape: int) -> torch.Tensor:
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed), dtype=torch.float64)


def _q_k_lengths(draw_q: int, extra: int) -> tuple[int, int]:
    return draw_q, draw_q + extra  # queries are the last q_len of k_len positions


# --------------------------------------------------------------------------- Transformer-XL


def transformer_xl_loop(q, k, r, u, v):
    """The paper's four terms, one (i, j) at a time (one head): the oracle."""
    q_len, k_len, dim = q.shape[0], k.shape[0], k.shape[1]
    out = torch.full((q_len, k_len), float("-inf"), dtype=torch.float64)
    for i in range(q_len):
        m = k_len - q_len + i  # the query's position
        for j in range(m + 1):
            a = q[i] @ k[j]
            b = q[i] @ r[m - j]
            c = u @ k[j]
            d = v @ r[m - j]
            out[i, j] = (a + b + c + d) / math.sqrt(dim)
    return out


@given(seed=seeds, q_len=lengths, extra=st.integers(0, 5), dim=st.sampled_from([1, 4, 8]))
@example(seed=0, q_len=1, extra=0, dim=1)
def test_transformer_xl_equals_loop(seed, q_len, extra, dim):
    """The vectorized scores equal the four terms summed pair by pair, with a memory (extra)."""
    q_len, k_len = _q_k_lengths(q_len, extra)
    q, k, r = _randn(seed, q_len, dim), _randn(seed + 1, k_len, dim), _randn(seed + 2, k_len, dim)
    u, v = _randn(seed + 3, 2, dim)
    got = transformer_xl_scores(q, k, r, u, v)
    torch.testing.assert_close(got, transformer_xl_loop(q, k, r, u, v))


@given(seed=seeds, q_len=lengths, extra=st.integers(0, 5), heads=st.integers(1, 3))
def test_rel_shift_gives_the_same_scores(seed, q_len, extra, heads):
    """The reference code's shift trick gives the directly indexed scores.

    Scores against distances (k_len - 1 .. 0), shifted, equal them on and below the causal
    diagonal.
    """
    q_len, k_len = _q_k_lengths(q_len, extra)
    dim = 4
    q, k = _randn(seed, 2, heads, q_len, dim), _randn(seed + 1, 2, heads, k_len, dim)
    r = _randn(seed + 2, heads, k_len, dim)  # row t: distance t
    u, v = _randn(seed + 3, 2, heads, 1, dim)
    direct = transformer_xl_scores(q, k, r, u[..., 0, :], v[..., 0, :])
    against_distance = (q + v) @ r.flip(-2).transpose(-1, -2)  # rows: distances k_len-1 .. 0
    shifted = (q + u) @ k.transpose(-1, -2) + rel_shift(against_distance)
    causal = relative_positions(q_len, k_len) <= 0
    torch.testing.assert_close(
        (shifted / math.sqrt(dim))[..., causal], direct[..., causal], rtol=1e-12, atol=1e-12
    )


@given(seed=seeds, length=st.integers(2, 9))
def test_transformer_xl_position_terms_depend_on_distance_only(seed, length):
    """With the same query at every position, terms (b) + (d) are a function of m - j alone."""
    dim = 4
    q = _randn(seed, 1, dim).expand(length, dim)
    k = torch.zeros(length, dim, dtype=torch.float64)  # switch off (a) and (c)
    r, (u, v) = _randn(seed + 1, length, dim), _randn(seed + 2, 2, dim)
    scores = transformer_xl_scores(q, k, r, u, v)
    for t in range(length):
        diagonal = torch.diagonal(scores, offset=-t)
        torch.testing.assert_close(diagonal, diagonal[:1].expand_as(diagonal))


def test_transformer_xl_refuses_bad_input():
    q, k = torch.zeros(3, 4), torch.zeros(2, 4)
    with pytest.raises(ValueError, match="query_len must be <= key_len"):
        transformer_xl_scores(q, k, torch.zeros(2, 4), torch.zeros(4), torch.zeros(4))
    with pytest.raises(ValueError, match="pos_key must have shape"):
        transformer_xl_scores(k, k, torch.zeros(3, 4), torch.zeros(4), torch.zeros(4))
    with pytest.raises(ValueError, match="u must have shape"):
        transformer_xl_scores(k, k, torch.zeros(2, 4), torch.zeros(3), torch.zeros(4))


# --------------------------------------------------------------------------- DeBERTa


@given(offset=st.integers(-100, 100), k=st.integers(1, 40))
def test_deberta_index_is_the_papers_delta(offset, k):
    """delta(i, j) = 0 for i - j <= -k, 2k - 1 for i - j >= k, i - j + k between."""
    i_minus_j = -offset  # the function takes key - query
    if i_minus_j <= -k:
        want = 0
    elif i_minus_j >= k:
        want = 2 * k - 1
    else:
        want = i_minus_j + k
    assert int(deberta_relative_index(torch.tensor([offset]), k)) == want


def _hf_heads(x: torch.Tensor, heads: int) -> torch.Tensor:
    return x.view(*x.shape[:-1], heads, -1).transpose(-2, -3)


@pytest.mark.parametrize("length,k", [(7, 3), (5, 8), (1, 2)])
def test_deberta_matches_transformers_v1(length, k):
    """DeBERTa's DisentangledSelfAttention (transformers), random weights: the same logits."""
    pytest.importorskip("transformers")
    from transformers import DebertaConfig
    from transformers.models.deberta.modeling_deberta import (
        DisentangledSelfAttention,
        build_relative_position,
    )

    heads, dim = 2, 8
    config = DebertaConfig(
        hidden_size=heads * dim,
        num_attention_heads=heads,
        relative_attention=True,
        pos_att_type=["c2p", "p2c"],
        max_relative_positions=k,
    )
    torch.manual_seed(0)
    attention = DisentangledSelfAttention(config).eval().double()
    for parameter in attention.parameters():
        torch.nn.init.normal_(parameter)
    hidden = torch.randn(1, length, heads * dim, dtype=torch.float64)
    table = torch.randn(2 * k, heads * dim, dtype=torch.float64)
    relative = build_relative_position(hidden, hidden)
    scale = 1 / math.sqrt(3 * dim)
    q, key, _ = _hf_heads(attention.in_proj(hidden), heads).chunk(3, dim=-1)
    q = q + _hf_heads(attention.q_bias[None], heads)
    with torch.no_grad():
        theirs = (q * scale) @ key.transpose(-1, -2) + attention.disentangled_att_bias(
            q * scale, key, relative, table, 3
        )
        pos_key = _hf_heads(attention.pos_proj(table), heads)
        pos_query = _hf_heads(attention.pos_q_proj(table), heads)
        ours = deberta_scores(q, key, pos_query, pos_key, k)
    # transformers divides pos_query by a float32 sqrt(3d): one float32 rounding, 1e-7 relative.
    torch.testing.assert_close(ours, theirs, rtol=1e-6, atol=1e-6)


def test_deberta_matches_transformers_v2_log_buckets():
    """DeBERTa-v2/v3 (shared projections, log buckets): the same logits as transformers."""
    pytest.importorskip("transformers")
    from transformers import DebertaV2Config
    from transformers.models.deberta_v2.modeling_deberta_v2 import (
        DisentangledSelfAttention,
        build_relative_position,
    )

    heads, dim, length, buckets, max_position = 2, 8, 40, 4, 16
    config = DebertaV2Config(
        hidden_size=heads * dim,
        num_attention_heads=heads,
        relative_attention=True,
        pos_att_type=["c2p", "p2c"],
        max_relative_positions=max_position,
        position_buckets=buckets,
        share_att_key=True,
    )
    torch.manual_seed(1)
    attention = DisentangledSelfAttention(config).eval().double()
    for parameter in attention.parameters():
        torch.nn.init.normal_(parameter)
    hidden = torch.randn(1, length, heads * dim, dtype=torch.float64)
    table = torch.randn(2 * buckets, heads * dim, dtype=torch.float64)
    relative = build_relative_position(
        hidden, hidden, bucket_size=buckets, max_position=max_position
    )
    with torch.no_grad():
        # transformers' v2 layout: (batch * heads, seq_len, head_dim)
        q = attention.transpose_for_scores(attention.query_proj(hidden), heads)
        key = attention.transpose_for_scores(attention.key_proj(hidden), heads)
        theirs = q @ key.transpose(-1, -2) / math.sqrt(3 * dim)
        theirs = theirs + attention.disentangled_attention_bias(q, key, relative, table, 3)
        bucketed = deberta_log_bucket(relative_positions(length, length), buckets, max_position)
        pos_query = attention.transpose_for_scores(attention.query_proj(table[None]), heads)
        pos_key = attention.transpose_for_scores(attention.key_proj(table[None]), heads)
        ours = deberta_scores(q, key, pos_query, pos_key, buckets, relative_position=-bucketed)
    torch.testing.assert_close(ours, theirs, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("buckets,max_position", [(256, 512), (4, 16), (8, 9), (6, 100)])
def test_deberta_log_bucket_matches_transformers(buckets, max_position):
    """Every offset up to 4 * max_position lands in transformers' bucket, bit for bit."""
    pytest.importorskip("transformers")
    from transformers.models.deberta_v2.modeling_deberta_v2 import make_log_bucket_position

    offsets = torch.arange(-4 * max_position, 4 * max_position + 1)  # query - key, HF's sign
    theirs = make_log_bucket_position(offsets, buckets, max_position).long()
    assert torch.equal(deberta_log_bucket(-offsets, buckets, max_position), theirs)


def test_deberta_refuses_bad_input():
    q = torch.zeros(3, 4)
    with pytest.raises(ValueError, match="pos_query must have shape"):
        deberta_scores(q, q, torch.zeros(5, 4), torch.zeros(6, 4), 3)
    with pytest.raises(ValueError, match="relative_position must have shape"):
        table = torch.zeros(6, 4)
        deberta_scores(q, q, table, table, 3, relative_position=torch.zeros(2, 3, dtype=torch.long))
    with pytest.raises(ValueError, match="max_position"):
        deberta_log_bucket(torch.arange(3), 8, 5)
    with pytest.raises(TypeError, match="signed integer"):
        deberta_relative_index(torch.arange(3, dtype=torch.uint8), 2)


# --------------------------------------------------------------------------- CoPE


@given(seed=seeds, q_len=lengths, extra=st.integers(0, 4))
def test_cope_positions_equal_loop(seed, q_len, extra):
    """p_ij = sum of sigma(z_it) over t = j .. m_i, and 0 for keys after the query."""
    q_len, k_len = _q_k_lengths(q_len, extra)
    logits = _randn(seed, 2, q_len, k_len)
    got = cope_positions(logits)
    gates = torch.sigmoid(logits)
    for i in range(q_len):
        m = k_len - q_len + i
        for j in range(k_len):
            want = gates[:, i, j : m + 1].sum(-1) if j <= m else torch.zeros(2, dtype=torch.float64)
            torch.testing.assert_close(got[:, i, j], want)


@given(length=st.integers(1, 20))
def test_cope_with_open_gates_counts_tokens(length):
    """Every gate open: p_ij = i - j + 1, the relative position counted in tokens (plus one)."""
    got = cope_positions(torch.full((length, length), 50.0, dtype=torch.float64))
    rel = relative_positions(length, length)
    want = torch.where(rel <= 0, (1 - rel).to(torch.float64), torch.zeros((), dtype=torch.float64))
    torch.testing.assert_close(got, want)


@given(seed=seeds, length=st.integers(1, 12))
def test_cope_positions_fall_with_the_key(seed, length):
    """Positions are >= 0 and non-increasing from the first key to the query."""
    got = cope_positions(_randn(seed, length, length))
    assert bool((got >= 0).all())
    assert bool((got[..., 1:] <= got[..., :-1]).all())


@given(seed=seeds, length=st.integers(1, 8), table=st.integers(1, 12))
def test_cope_bias_interpolates_vectors(seed, length, table):
    """The bias is q . e[p] with e interpolated between neighbouring integers.

    That is the paper's definition; the function interpolates the products instead.
    """
    dim = 4
    q = _randn(seed, length, dim)
    pos_emb = _randn(seed + 1, dim, table)
    positions = cope_positions(_randn(seed + 2, length, length) * 3)
    got = cope_bias(q, positions, pos_emb)
    for i in range(length):
        for j in range(length):
            p = min(float(positions[i, j]), table - 1)
            lo, hi = math.floor(p), math.ceil(p)
            e = (p - lo) * pos_emb[:, hi] + (1 - p + lo) * pos_emb[:, lo]
            assert float(got[i, j]) == pytest.approx(float(q[i] @ e), abs=1e-12)


def test_cope_bias_at_integers_is_the_table_row():
    q = torch.tensor([[1.0, 2.0]])
    pos_emb = torch.tensor([[1.0, 0.0, 3.0], [0.0, 1.0, 5.0]])
    positions = torch.tensor([[0.0, 1.0, 2.0, 7.0]])  # 7 is past the table: clamped to row 2
    assert cope_bias(q, positions, pos_emb).tolist() == [[1.0, 2.0, 13.0, 13.0]]


def test_cope_refuses_bad_input():
    with pytest.raises(ValueError, match="gate_logits"):
        cope_positions(torch.zeros(3))
    with pytest.raises(ValueError, match=">= 0"):
        cope_bias(torch.zeros(1, 2), torch.full((1, 3), -1.0), torch.zeros(2, 3))
    with pytest.raises(ValueError, match="same d"):
        cope_bias(torch.zeros(1, 2), torch.zeros(1, 3), torch.zeros(3, 3))
