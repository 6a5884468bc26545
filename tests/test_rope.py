"""Rotary embeddings (posenc_ref/rope_functions.py and the module in posenc_ref/rope.py).

Every RoPE property the site derives, the loop oracle, layouts and checkpoint permutation,
precision, the module and its cache, and bad input.
"""

import functools
import math

import mpmath
import pytest
import torch
from hypothesis import example, given
from hypothesis import strategies as st

from posenc_ref import (
    RotaryEmbedding,
    apply_rope,
    apply_rope_loop,
    inv_freq,
    permute_qk_weight,
    rope_cos_sin,
    to_half_layout,
    to_interleaved_layout,
)
from posenc_ref.rope_scaling import ScaledFrequencies, dynamic_ntk, linear, yarn
from tests.strategies import (
    attention_factors,
    bases,
    head_dims,
    layouts,
    rope_positions,
    seeds,
)

F64 = torch.float64


def randn(seed: int, *shape: int, dtype: torch.dtype = F64) -> torch.Tensor:
    generator = torch.Generator().manual_seed(seed)
    return torch.randn(*shape, generator=generator, dtype=F64).to(dtype)


def rope(x, positions, dim, base=10000.0, layout="interleaved", attention_factor=1.0):
    """The vectorized path in float64: x rotated at ``positions``."""
    positions = torch.as_tensor(positions)
    cos, sin = rope_cos_sin(
        positions, inv_freq(dim, base), attention_factor=attention_factor, dtype=F64
    )
    return apply_rope(x, cos, sin, layout=layout)


# --- the defining properties ------------------------------------------------------------------


@given(head_dims, bases, layouts, rope_positions, rope_positions, seeds)
@example(2, 10000.0, "interleaved", 0, 0, 0)
@example(2, 10000.0, "half", 5, 0, 1)
def test_score_depends_only_on_offset(dim, base, layout, m, n, seed):
    """<R(m) q, R(n) k> = <R(m - n) q, k> (m >= n) or <q, R(n - m) k> (m < n)."""
    q, k = randn(seed, dim), randn(seed + 1, dim)
    score = rope(q[None], [m], dim, base, layout) @ rope(k[None], [n], dim, base, layout).T
    if m >= n:
        expected = rope(q[None], [m - n], dim, base, layout) @ k
    else:
        expected = q @ rope(k[None], [n - m], dim, base, layout).T
    # float64 angles near 2**17 carry ~2**17 * 2**-53 rad; scores are O(|q| |k|).
    assert float(score) == pytest.approx(float(expected), abs=1e-9 * float(q.norm() * k.norm()))


@given(
    head_dims, layouts, st.lists(rope_positions, min_size=1, max_size=6), attention_factors, seeds
)
@example(2, "interleaved", [0], 1.0, 0)
def test_norm_scaled_by_attention_factor(dim, layout, positions, factor, seed):
    """|rope(x)| = a |x|: a rotation, times the attention factor where it is not 1."""
    x = randn(seed, len(positions), dim)
    rotated = rope(x, positions, dim, layout=layout, attention_factor=factor)
    torch.testing.assert_close(rotated.norm(dim=-1), factor * x.norm(dim=-1), rtol=1e-12, atol=0)


@given(head_dims, bases, layouts, seeds, st.sampled_from([torch.float32, F64, torch.bfloat16]))
@example(2, 10000.0, "interleaved", 0, torch.float32)
def test_position_zero_is_identity(dim, base, layout, seed, dtype):
    """rope(x, 0) = x exactly: cos 0 = 1 and sin 0 = 0 are exact in every dtype."""
    x = randn(seed, 3, 4, dim, dtype=dtype)
    cos, sin = rope_cos_sin(torch.zeros(4, dtype=torch.long), inv_freq(dim, base))
    assert torch.equal(apply_rope(x, cos, sin, layout=layout), x)


@given(head_dims, bases, layouts, rope_positions, rope_positions, seeds)
@example(2, 10000.0, "half", 0, 0, 0)
def test_composition(dim, base, layout, m, n, seed):
    """rope(rope(x, m), n) = rope(x, m + n): rotations by angles add."""
    x = randn(seed, 2, dim)
    twice = rope(rope(x, [m, m], dim, base, layout), [n, n], dim, base, layout)
    once = rope(x, [m + n, m + n], dim, base, layout)
    torch.testing.assert_close(twice, once, rtol=0, atol=1e-9 * float(x.abs().max()))


@given(head_dims, bases, layouts, seeds, st.integers(0, 2000), attention_factors)
@example(2, 10000.0, "interleaved", 0, 0, 1.0)
@example(16, 500000.0, "half", 1, 2000, 1.3)
def test_apply_rope_equals_loop_oracle(dim, base, layout, seed, start, factor):
    """The vectorized rotation equals the explicit per-pair 2x2 rotation (float64)."""
    x = randn(seed, 2, 3, 5, dim)
    positions = torch.arange(start, start + 5)
    omega = inv_freq(dim, base)
    cos, sin = rope_cos_sin(positions, omega, attention_factor=factor, dtype=F64)
    fast = apply_rope(x, cos, sin, layout=layout)
    slow = apply_rope_loop(x, positions, omega, layout=layout, attention_factor=factor)
    torch.testing.assert_close(fast, slow, rtol=0, atol=1e-12 * float(x.abs().max()))


@given(head_dims, layouts, seeds, st.lists(rope_positions, min_size=3, max_size=3))
def test_float32_close_to_oracle_at_any_position(dim, layout, seed, positions):
    """float32 tables from float64 angles: error of a few float32 roundings, at any position."""
    x = randn(seed, 3, dim, dtype=torch.float32)
    omega = inv_freq(dim)
    cos, sin = rope_cos_sin(torch.tensor(positions), omega)
    fast = apply_rope(x, cos, sin, layout=layout).double()
    exact = apply_rope_loop(x.double(), torch.tensor(positions), omega, layout=layout)
    # Each output is u cos - v sin: a few float32 roundings (2**-24 each) of terms <= |u| + |v|.
    bound = 4 * 2**-24 * float(x.abs().max()) * 2
    assert float((fast - exact).abs().max()) <= bound


@given(
    head_dims,
    layouts,
    seeds,
    st.lists(rope_positions, min_size=4, max_size=4),
    st.sampled_from([torch.bfloat16, torch.float16]),
)
@example(2, "interleaved", 0, [0, 1, 257, 4095], torch.bfloat16)
def test_half_precision_loses_only_the_final_rounding(dim, layout, seed, positions, dtype):
    """bf16/fp16 inputs: result within one rounding (to the input dtype) of the exact rotation.

    Rotating in bf16 itself would round u cos, v sin and their difference separately; under
    cancellation that error is far larger than one rounding of the (small) result.
    """
    x = randn(seed, 4, dim, dtype=dtype)
    omega = inv_freq(dim)
    cos, sin = rope_cos_sin(torch.tensor(positions), omega)
    result = apply_rope(x, cos, sin, layout=layout)
    assert result.dtype == dtype
    exact = apply_rope_loop(x.double(), torch.tensor(positions), omega, layout=layout)
    unit_roundoff = 2.0**-8 if dtype == torch.bfloat16 else 2.0**-11
    # One rounding of the result, plus the float32 work (cos/sin rounding, products, sum): a few
    # 2**-24 relative to the pair's magnitude |u| + |v| (<= 2 max|x|).
    bound = unit_roundoff * exact.abs() + 8 * 2**-24 * 2 * float(x.double().abs().max())
    assert torch.all((result.double() - exact).abs() <= bound)


def test_bf16_positions_would_merge_tokens():
    """Why positions are never bf16: 257 rounds to 256 (so they are refused)."""
    assert torch.tensor(257.0, dtype=torch.bfloat16).item() == 256.0
    with pytest.raises(TypeError, match="positions"):
        rope_cos_sin(torch.arange(300, dtype=torch.bfloat16), inv_freq(8))


# --- partial rotary ---------------------------------------------------------------------------

partial_widths = st.integers(1, 8).flatmap(
    lambda pairs: st.tuples(st.just(2 * pairs), st.integers(pairs, 12).map(lambda h: 2 * h))
)  # (rotary_dim, head_dim) with rotary_dim <= head_dim


@given(partial_widths, layouts, seeds, st.sampled_from([torch.float32, F64, torch.bfloat16]), bases)
@example((2, 4), "interleaved", 0, torch.float32, 10000.0)
@example((4, 4), "half", 0, torch.bfloat16, 10000.0)
def test_partial_rotary_passes_the_rest_through(widths, layout, seed, dtype, base):
    """Coordinates past rotary_dim are copied bit for bit.

    The first rotary_dim are RoPE of width rotary_dim (frequencies base^(-2i/rotary_dim), pairs
    laid out inside the rotary part), up to the rounding of kernels that see a strided slice.
    """
    rotary_dim, head_dim = widths
    x = randn(seed, 2, 5, head_dim, dtype=dtype)
    positions = torch.arange(3000, 3005)
    cos, sin = rope_cos_sin(positions, inv_freq(rotary_dim, base))
    got = apply_rope(x, cos, sin, layout=layout, rotary_dim=rotary_dim)
    assert torch.equal(got[..., rotary_dim:], x[..., rotary_dim:])
    alone = apply_rope(x[..., :rotary_dim].contiguous(), cos, sin, layout=layout)
    ulp = torch.finfo(dtype).eps
    torch.testing.assert_close(
        got[..., :rotary_dim], alone, rtol=ulp, atol=4 * ulp * float(x.abs().max())
    )
    out = torch.full_like(x, math.nan)
    apply_rope(x, cos, sin, layout=layout, rotary_dim=rotary_dim, out=out)
    assert torch.equal(out, got)


@given(partial_widths, layouts, seeds, st.integers(0, 5000), attention_factors)
@example((2, 6), "half", 0, 0, 1.0)
def test_partial_rotary_equals_loop_oracle(widths, layout, seed, start, factor):
    rotary_dim, head_dim = widths
    x = randn(seed, 3, 4, head_dim)
    positions = torch.arange(start, start + 4)
    omega = inv_freq(rotary_dim)
    cos, sin = rope_cos_sin(positions, omega, attention_factor=factor, dtype=F64)
    fast = apply_rope(x, cos, sin, layout=layout, rotary_dim=rotary_dim)
    slow = apply_rope_loop(
        x, positions, omega, layout=layout, rotary_dim=rotary_dim, attention_factor=factor
    )
    torch.testing.assert_close(fast, slow, rtol=0, atol=1e-12 * float(x.abs().max()))


@given(partial_widths, layouts, rope_positions, rope_positions, st.integers(1, 5000), seeds)
@example((2, 4), "interleaved", 0, 7, 3, 0)
def test_partial_rotary_score_depends_only_on_offset(widths, layout, m, n, shift, seed):
    """Partial rotary keeps the relative property: the score depends on m - n only.

    The pass-through part adds the same plain dot product at every position, so shifting both
    positions changes nothing.
    """
    rotary_dim, head_dim = widths
    q, k = randn(seed, 1, head_dim), randn(seed + 1, 1, head_dim)
    omega = inv_freq(rotary_dim)

    def score(m, n):
        rotated = []
        for x, p in ((q, m), (k, n)):
            cos, sin = rope_cos_sin(torch.tensor([p]), omega, dtype=F64)
            rotated.append(apply_rope(x, cos, sin, layout=layout, rotary_dim=rotary_dim))
        return float(rotated[0] @ rotated[1].T)

    assert score(m, n) == pytest.approx(
        score(m + shift, n + shift), abs=1e-9 * float(q.norm() * k.norm())
    )


@given(partial_widths, layouts, st.integers(1, 40), st.integers(0, 100), seeds)
def test_module_partial_rotary_equals_pure_functions(widths, layout, seq_len, offset, seed):
    rotary_dim, head_dim = widths
    module = RotaryEmbedding(head_dim, rotary_dim=rotary_dim, layout=layout, max_len=8)
    q = randn(seed, 2, seq_len, head_dim, dtype=torch.float32)
    k = randn(seed + 1, 1, seq_len, head_dim, dtype=torch.float32)
    cos, sin = rope_cos_sin(torch.arange(offset, offset + seq_len), inv_freq(rotary_dim))
    got = module(q, k, offset=offset)
    for x, y in ((q, got[0]), (k, got[1])):
        assert torch.equal(y, apply_rope(x, cos, sin, layout=layout, rotary_dim=rotary_dim))
    assert module.inv_freq.shape == (rotary_dim // 2,)


def test_tables_are_the_same_for_both_layouts():
    """A table cannot be 'built for the other layout'.

    There is one table, and the layout is chosen only where the rotation is applied (the most
    common bug of converted checkpoints cannot be written); a full-width table is refused.
    """
    cos, sin = rope_cos_sin(torch.arange(6), inv_freq(8), dtype=F64)
    x = randn(0, 6, 8)
    a = apply_rope(x, cos, sin, layout="interleaved")
    b = apply_rope(to_half_layout(x), cos, sin, layout="half")
    torch.testing.assert_close(to_half_layout(a), b, rtol=0, atol=1e-15)
    full_width = torch.cat([cos, cos], dim=-1)  # an HF-style table, each value twice
    with pytest.raises(ValueError, match="one value per rotated pair"):
        apply_rope(x, full_width, full_width, layout="interleaved")


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_half_precision_tables_are_refused(dtype):
    """bf16 tables would add ~1e-3 to every rotation (8-bit cos/sin): refused, with the fix."""
    cos, sin = rope_cos_sin(torch.arange(4), inv_freq(8))
    x = torch.zeros(4, 8, dtype=dtype)
    with pytest.raises(TypeError, match="cos's dtype must be torch.float32 or torch.float64"):
        apply_rope(x, cos.to(dtype), sin.to(dtype))
    with pytest.raises(TypeError, match="dtype must be torch.float32"):
        rope_cos_sin(torch.arange(4), inv_freq(8), dtype=dtype)
    with pytest.raises(TypeError, match="dtype must be torch.float32"):
        RotaryEmbedding(8).cos_sin(torch.arange(4), dtype=dtype)


def test_meta_tensors():
    """Shape inference and deferred initialisation: every rope function runs on meta tensors."""
    meta = torch.device("meta")
    positions = torch.arange(5, device=meta)
    cos, sin = rope_cos_sin(positions, inv_freq(8).to(meta))
    assert cos.shape == (5, 4) and cos.device == meta
    for dtype in (torch.float32, torch.bfloat16):
        x = torch.empty(2, 3, 5, 12, device=meta, dtype=dtype)
        for layout in ("interleaved", "half"):
            y = apply_rope(x, cos, sin, layout=layout, rotary_dim=8)
            assert (y.shape, y.dtype, y.device) == (x.shape, dtype, meta)
            y = apply_rope(x, cos, sin, layout=layout, rotary_dim=8, out=torch.empty_like(x))
            assert y.device == meta
    x = torch.empty(2, 3, 5, 8, device=meta)
    assert apply_rope_loop(x, positions, inv_freq(8)).device == meta
    for scaling in (None, {"method": "dynamic_ntk", "factor": 2.0, "original_max_len": 2}):
        module = RotaryEmbedding(8, scaling=scaling, device=meta)
        assert module(x, x)[0].device == meta
        assert module(x, x, positions)[1].shape == x.shape


# --- tables -----------------------------------------------------------------------------------


@given(head_dims, bases, st.lists(rope_positions, min_size=1, max_size=5))
@example(2, 10000.0, [0])
def test_cos_sin_tables_from_math(dim, base, positions):
    """Entry (m, i) is cos/sin of m * base^(-2i/dim): one value per pair, for both layouts."""
    cos, sin = rope_cos_sin(torch.tensor(positions), inv_freq(dim, base), dtype=F64)
    assert cos.shape == sin.shape == (len(positions), dim // 2)
    for row, m in enumerate(positions):
        for i in range(dim // 2):
            angle = m * math.pow(base, -2 * i / dim)
            # abs: one ulp of omega, times positions up to 2**17, moves the angle by ~1e-11
            assert float(cos[row, i]) == pytest.approx(math.cos(angle), abs=1e-10)
            assert float(sin[row, i]) == pytest.approx(math.sin(angle), abs=1e-10)


def test_float64_angles_beat_float32_angles_at_long_positions():
    """Tables from float64 angles stay within float32 rounding at 2**20; float32 angles do not."""
    positions = torch.arange((1 << 20) - 64, 1 << 20)
    omega = inv_freq(128)
    cos32, _ = rope_cos_sin(positions, omega)  # float64 angles, float32 result
    exact, _ = rope_cos_sin(positions, omega, dtype=F64)
    angles32 = positions.float()[:, None] * omega.float()  # the float32-angle recipe
    naive = torch.cos(angles32).double()
    assert float((cos32.double() - exact).abs().max()) < 1e-7
    assert float((naive - exact).abs().max()) > 1e-3


def test_regression_values_from_mpmath():
    """A few entries of the rotation, evaluated at 50 digits from the definition."""
    mpmath.mp.dps = 50
    dim, base = 8, 10000
    x = torch.tensor([[1.0, 2.0, -0.5, 0.25, 3.0, -1.0, 0.0, 1.5]], dtype=F64)
    for m in (1, 7, 100_000):
        for layout in ("interleaved", "half"):
            got = rope(x, [m], dim, base, layout)[0]
            for i in range(dim // 2):
                j, k = (2 * i, 2 * i + 1) if layout == "interleaved" else (i, i + dim // 2)
                angle = m * mpmath.power(base, mpmath.mpf(-2 * i) / dim)
                u, v = mpmath.mpf(float(x[0, j])), mpmath.mpf(float(x[0, k]))
                assert float(got[j]) == pytest.approx(
                    float(u * mpmath.cos(angle) - v * mpmath.sin(angle)), abs=1e-10
                )
                assert float(got[k]) == pytest.approx(
                    float(u * mpmath.sin(angle) + v * mpmath.cos(angle)), abs=1e-10
                )


def test_tables_broadcast_over_leading_dims():
    """Positions (batch, 1, seq_len) give tables that broadcast over heads (packed sequences)."""
    positions = torch.tensor([[[0, 1, 2]], [[5, 6, 7]]])  # (2, 1, 3)
    cos, sin = rope_cos_sin(positions, inv_freq(4), dtype=F64)
    assert cos.shape == sin.shape == (2, 1, 3, 2)
    x = randn(0, 2, 3, 3, 4)  # (batch, heads, seq, dim)
    got = apply_rope(x, cos, sin)
    torch.testing.assert_close(got, apply_rope_loop(x, positions, inv_freq(4)))


def test_out_argument():
    """out= receives the result (also for bf16, via one cast); out=x is refused."""
    cos, sin = rope_cos_sin(torch.arange(5), inv_freq(8))
    for layout in ("interleaved", "half"):
        for dtype in (torch.float32, torch.bfloat16):
            x = randn(3, 2, 5, 8, dtype=dtype)
            out = torch.empty_like(x)
            assert apply_rope(x, cos, sin, layout=layout, out=out) is out
            assert torch.equal(out, apply_rope(x, cos, sin, layout=layout))
        x = randn(3, 2, 5, 8, dtype=torch.float32)
        with pytest.raises(ValueError, match="out"):
            apply_rope(x, cos, sin, layout=layout, out=x)
    # a non-contiguous out (a slice of a wider buffer) works too
    x = randn(4, 5, 8, dtype=torch.float32)
    wide = torch.zeros(5, 10)
    apply_rope(x, cos, sin, out=wide[:, 1:9])
    assert torch.equal(wide[:, 1:9], apply_rope(x, cos, sin))


def test_out_argument_empty_and_sliced():
    """out= with no positions works (there is no data pointer to compare).

    Slices of one buffer count as shared memory (conservative), so they are refused.
    """
    cos, sin = rope_cos_sin(torch.arange(0), inv_freq(8))
    x = torch.zeros(2, 0, 8)
    assert apply_rope(x, cos, sin, out=torch.empty_like(x)).shape == (2, 0, 8)
    buffer = torch.zeros(5, 16)
    cos, sin = rope_cos_sin(torch.arange(5), inv_freq(8))
    with pytest.raises(ValueError, match="share memory"):
        apply_rope(buffer[:, :8], cos, sin, out=buffer[:, 8:])


def test_non_contiguous_input():
    """A q sliced out of a fused qkv projection at an odd offset is rotated correctly."""
    qkv = randn(5, 5, 25)
    q = qkv[:, 1:9]  # odd storage offset: not viewable as complex pairs
    cos, sin = rope_cos_sin(torch.arange(5), inv_freq(8), dtype=F64)
    torch.testing.assert_close(
        apply_rope(q, cos, sin), apply_rope_loop(q, torch.arange(5), inv_freq(8))
    )


def test_apply_rope_is_differentiable():
    """Gradients flow (the rotation is orthogonal: the gradient of sum(y * g) is R^T g)."""
    x = randn(1, 2, 4, 8).requires_grad_()
    for layout in ("interleaved", "half"):
        cos, sin = rope_cos_sin(torch.arange(4), inv_freq(8), dtype=F64)
        g = randn(2, 2, 4, 8)
        (grad,) = torch.autograd.grad((apply_rope(x, cos, sin, layout=layout) * g).sum(), x)
        back = apply_rope(g, cos, -sin, layout=layout)  # R(-angle) = R^T
        torch.testing.assert_close(grad, back)


# --- layouts and checkpoint conversion --------------------------------------------------------


@given(head_dims, seeds)
@example(2, 0)
def test_layout_helpers_are_inverse_permutations(dim, seed):
    """to_half_layout puts even coordinates first; to_interleaved_layout undoes it."""
    x = randn(seed, 3, dim)
    half = to_half_layout(x)
    assert torch.equal(half[:, : dim // 2], x[:, 0::2])
    assert torch.equal(half[:, dim // 2 :], x[:, 1::2])
    assert torch.equal(to_interleaved_layout(half), x)


@given(head_dims, bases, seeds, st.integers(0, 5000))
@example(2, 10000.0, 0, 0)
def test_layouts_agree_after_permutation(dim, base, seed, start):
    """Half-split RoPE of the permuted vector is the permuted interleaved RoPE."""
    x = randn(seed, 4, dim)
    positions = list(range(start, start + 4))
    interleaved = rope(x, positions, dim, base, "interleaved")
    half = rope(to_half_layout(x), positions, dim, base, "half")
    torch.testing.assert_close(half, to_half_layout(interleaved), rtol=0, atol=1e-12)


@given(
    st.integers(1, 8).map(lambda h: 2 * h),
    st.sampled_from([(4, 4), (4, 2), (2, 1), (1, 1)]),
    seeds,
)
@example(2, (1, 1), 0)
def test_weight_permutation_keeps_attention_scores(head_dim, heads, seed):
    """Permuted projections + half RoPE give Meta-style interleaved scores.

    Grouped-query attention (k permuted with the kv-head count) and biases included.
    """
    num_heads, num_kv_heads = heads
    in_features, seq = 6, 5
    wq, wk = (
        randn(seed, num_heads * head_dim, in_features),
        randn(seed + 1, num_kv_heads * head_dim, in_features),
    )
    bq, bk = randn(seed + 2, num_heads * head_dim), randn(seed + 3, num_kv_heads * head_dim)
    tokens = randn(seed + 4, seq, in_features)

    def scores(wq, bq, wk, bk, layout):
        q = (tokens @ wq.T + bq).unflatten(-1, (num_heads, head_dim)).transpose(0, 1)
        k = (tokens @ wk.T + bk).unflatten(-1, (num_kv_heads, head_dim)).transpose(0, 1)
        q, k = (
            rope(q, range(seq), head_dim, layout=layout),
            rope(k, range(seq), head_dim, layout=layout),
        )
        k = k.repeat_interleave(num_heads // num_kv_heads, dim=0)
        return q @ k.transpose(-1, -2)  # (heads, seq, seq)

    meta = scores(wq, bq, wk, bk, "interleaved")
    hf = scores(
        permute_qk_weight(wq, num_heads, to_layout="half"),
        permute_qk_weight(bq, num_heads, to_layout="half"),
        permute_qk_weight(wk, num_kv_heads, to_layout="half"),
        permute_qk_weight(bk, num_kv_heads, to_layout="half"),
        "half",
    )
    torch.testing.assert_close(hf, meta)
    back = permute_qk_weight(
        permute_qk_weight(wq, num_heads, to_layout="half"), num_heads, to_layout="interleaved"
    )
    assert torch.equal(back, wq)


def test_weight_permutation_rows_per_head():
    """Meta -> HF moves head h's row 2i to row i and row 2i+1 to row i + head_dim/2."""
    rows = torch.arange(12, dtype=F64)  # 2 heads of head_dim 6, as a bias
    assert permute_qk_weight(rows, 2, to_layout="half").tolist() == [
        0, 2, 4, 1, 3, 5, 6, 8, 10, 7, 9, 11
    ]  # fmt: skip
    # per head, the weight rows move exactly like the coordinates of the rotated vector
    weight = randn(0, 12, 3)
    per_head = weight.unflatten(0, (2, 6)).transpose(-1, -2)  # (heads, in, head_dim)
    expected = to_half_layout(per_head).transpose(-1, -2).flatten(0, 1)
    assert torch.equal(permute_qk_weight(weight, 2, to_layout="half"), expected)


# --- the module -------------------------------------------------------------------------------


def pure(q, k, positions, head_dim, base=10000.0, layout="interleaved", freqs=None):
    """What RotaryEmbedding must equal: the pure functions, tables in float32."""
    freqs = freqs or ScaledFrequencies(inv_freq(head_dim, base), 1.0)
    cos, sin = rope_cos_sin(positions, freqs.inv_freq, attention_factor=freqs.attention_factor)
    return apply_rope(q, cos, sin, layout=layout), apply_rope(k, cos, sin, layout=layout)


@given(head_dims, layouts, st.integers(1, 40), st.integers(0, 100), st.integers(1, 64), seeds)
@example(2, "interleaved", 1, 0, 1, 0)
def test_module_equals_pure_functions(head_dim, layout, seq_len, offset, max_len, seed):
    """Any offset (KV cache) and any length, shorter or longer than the initial table."""
    module = RotaryEmbedding(head_dim, layout=layout, max_len=max_len)
    q, k = (
        randn(seed, 2, 3, seq_len, head_dim, dtype=torch.float32),
        randn(seed + 1, 2, 1, seq_len, head_dim, dtype=torch.float32),
    )
    got = module(q, k, offset=offset)
    expected = pure(q, k, torch.arange(offset, offset + seq_len), head_dim, layout=layout)
    assert torch.equal(got[0], expected[0]) and torch.equal(got[1], expected[1])
    # The table grows when the call could have walked there (at most doubling it, or twice the
    # call's own length); a farther position is computed directly and leaves it as it was.
    if offset + seq_len <= 2 * max(max_len, seq_len):
        assert module.max_len >= offset + seq_len
    else:
        assert module.max_len == max_len


def test_module_table_grows_and_stays_equal():
    module = RotaryEmbedding(8, max_len=4)
    q = k = randn(0, 1, 10, 8, dtype=torch.float32)
    module(q, k)
    assert module.max_len >= 10
    grown = module.cos_cached.clone()
    torch.testing.assert_close(
        grown, rope_cos_sin(torch.arange(module.max_len), inv_freq(8))[0], rtol=0, atol=0
    )
    module(q[:, :3], k[:, :3])  # shorter: no rebuild
    assert torch.equal(module.cos_cached, grown)


def test_module_kv_cache_steps_equal_full_sequence():
    """Decoding one token at a time with offset= gives the rows of the full-sequence call."""
    module = RotaryEmbedding(16, layout="half", max_len=2)
    q, k = randn(1, 1, 2, 7, 16, dtype=torch.float32), randn(2, 1, 2, 7, 16, dtype=torch.float32)
    full_q, full_k = module(q, k)
    for t in range(7):
        step_q, step_k = module(q[:, :, t : t + 1], k[:, :, t : t + 1], offset=t)
        # close, not bitwise: kernels may round a strided slice differently from the full tensor
        torch.testing.assert_close(step_q, full_q[:, :, t : t + 1])
        torch.testing.assert_close(step_k, full_k[:, :, t : t + 1])


def test_module_packed_positions():
    """Arbitrary position tensors (packed sequences restart at 0)."""
    module = RotaryEmbedding(8, max_len=3)
    positions = torch.tensor([[0, 1, 2, 0, 1, 2, 3, 4]])[:, None, :]  # (batch, 1, seq)
    q, k = randn(0, 1, 2, 8, 8, dtype=torch.float32), randn(1, 1, 2, 8, 8, dtype=torch.float32)
    got = module(q, k, positions)
    expected = pure(q, k, positions, 8)
    assert torch.equal(got[0], expected[0]) and torch.equal(got[1], expected[1])


def test_module_buffers_follow_to_and_are_not_saved():
    module = RotaryEmbedding(8, max_len=16)
    assert set(dict(module.named_buffers())) == {"cos_cached", "sin_cached"}
    assert module.state_dict() == {}
    module.to(torch.device("cpu"))
    assert module.cos_cached.device.type == "cpu"
    # After a bf16 cast the table is rebuilt in float32 from float64 angles, not used in bf16.
    module.to(torch.bfloat16)
    q = randn(0, 1, 300, 8, dtype=torch.bfloat16)
    got = module(q, q)
    assert got[0].dtype == torch.bfloat16
    assert module.cos_cached.dtype == torch.float32
    assert torch.equal(got[0], pure(q, q, torch.arange(300), 8)[0])
    # float64 inputs get a float64 table
    q64 = randn(0, 1, 5, 8)
    torch.testing.assert_close(
        module(q64, q64)[0], apply_rope_loop(q64, torch.arange(5), inv_freq(8)), rtol=0, atol=1e-14
    )


@pytest.mark.parametrize(
    "scaling, freqs",
    [
        ({"method": "linear", "factor": 4.0}, linear(16, factor=4.0)),
        (
            {"method": "yarn", "factor": 8.0, "original_max_len": 64, "truncate": False},
            yarn(16, factor=8.0, original_max_len=64, truncate=False),
        ),
        (yarn(16, factor=4.0, original_max_len=32), yarn(16, factor=4.0, original_max_len=32)),
    ],
)
def test_module_static_scaling(scaling, freqs):
    """A dict or a ScaledFrequencies: the module rotates with those frequencies and factor."""
    module = RotaryEmbedding(16, scaling=scaling, max_len=8)
    q, k = randn(0, 2, 20, 16, dtype=torch.float32), randn(1, 2, 20, 16, dtype=torch.float32)
    got = module(q, k)
    expected = pure(q, k, torch.arange(20), 16, freqs=freqs)
    assert torch.equal(got[0], expected[0]) and torch.equal(got[1], expected[1])


def test_module_dynamic_ntk_uses_current_length():
    """Dynamic NTK in the module: plain RoPE inside the original context.

    Past it, dynamic_ntk(seq_len = last position + 1), recomputed per call (stateless: a short
    call after a long one is plain again).
    """
    module = RotaryEmbedding(
        16, scaling={"method": "dynamic_ntk", "factor": 4.0, "original_max_len": 32}
    )
    short = randn(0, 1, 32, 16, dtype=torch.float32)
    plain = pure(short, short, torch.arange(32), 16)
    assert torch.equal(module(short, short)[0], plain[0])
    long = randn(1, 1, 50, 16, dtype=torch.float32)
    got = module(long, long)[0]
    freqs = dynamic_ntk(16, factor=4.0, seq_len=50, original_max_len=32)
    assert torch.equal(got, pure(long, long, torch.arange(50), 16, freqs=freqs)[0])
    assert not torch.equal(got[:, :32], pure(long[:, :32], long[:, :32], torch.arange(32), 16)[0])
    # one decoding step at position 60: frequencies from seq_len 61
    step = module(long[:, :1], long[:, :1], offset=60)[0]
    freqs = dynamic_ntk(16, factor=4.0, seq_len=61, original_max_len=32)
    assert torch.equal(step, pure(long[:, :1], long[:, :1], torch.tensor([60]), 16, freqs=freqs)[0])
    assert torch.equal(module(short, short)[0], plain[0])


# --- bad input --------------------------------------------------------------------------------

X = torch.zeros(2, 3, 8)
COS, SIN = rope_cos_sin(torch.arange(3), inv_freq(8))


@pytest.mark.parametrize(
    "call, error, match",
    [
        (lambda: rope_cos_sin([0, 1], inv_freq(8)), TypeError, "positions"),
        (lambda: rope_cos_sin(torch.tensor([0, -1]), inv_freq(8)), ValueError, "positions"),
        (lambda: rope_cos_sin(torch.tensor(3), inv_freq(8)), ValueError, "positions"),
        (lambda: rope_cos_sin(torch.tensor([0.0, math.nan]), inv_freq(8)), ValueError, "positions"),
        (lambda: rope_cos_sin(torch.tensor([True]), inv_freq(8)), TypeError, "positions"),
        (lambda: rope_cos_sin(torch.arange(3), inv_freq(8).reshape(2, 2)), ValueError, "inv_freq"),
        (lambda: rope_cos_sin(torch.arange(3), torch.arange(4)), ValueError, "inv_freq"),
        (lambda: rope_cos_sin(torch.arange(3), inv_freq(8).bfloat16()), TypeError, "inv_freq"),
        (lambda: rope_cos_sin(torch.arange(3), -inv_freq(8)), ValueError, "inv_freq"),
        (lambda: rope_cos_sin(torch.arange(3), inv_freq(8) * math.inf), ValueError, "inv_freq"),
        (lambda: rope_cos_sin(torch.arange(3), linear(8, factor=2.0)), TypeError, "inv_freq"),
        (
            lambda: rope_cos_sin(torch.arange(3), inv_freq(8), attention_factor=0.0),
            ValueError,
            "attention_factor",
        ),
        (lambda: rope_cos_sin(torch.arange(3), inv_freq(8), dtype=torch.int32), TypeError, "dtype"),
        (lambda: apply_rope(X.numpy(), COS, SIN), TypeError, "x"),
        (lambda: apply_rope(torch.zeros(2, 3, 7), COS, SIN), ValueError, "head_dim"),
        (lambda: apply_rope(torch.zeros(2, 3, 6), COS, SIN), ValueError, "cos"),
        (lambda: apply_rope(X, COS, SIN[:2]), ValueError, "same shape"),
        (lambda: apply_rope(X, COS[:2], SIN[:2]), ValueError, "broadcast"),
        (lambda: apply_rope(X[:, :1], COS, SIN), ValueError, "broadcast"),
        (lambda: apply_rope(X.long(), COS, SIN), TypeError, "x"),
        (lambda: apply_rope(X, COS, SIN, layout="rotate_half"), ValueError, "layout"),
        (lambda: apply_rope(X, COS, SIN, out=torch.empty(2, 3, 8, dtype=F64)), ValueError, "out"),
        (lambda: apply_rope(X, COS, SIN, rotary_dim=6), ValueError, "cos"),
        (lambda: apply_rope(X, COS, SIN, rotary_dim=3), ValueError, "rotary_dim"),
        (lambda: apply_rope(X, COS, SIN, rotary_dim=10), ValueError, "rotary_dim"),
        (lambda: apply_rope(X, COS, SIN, rotary_dim=0), ValueError, "rotary_dim"),
        (lambda: apply_rope(X, COS, SIN, rotary_dim=4.0), TypeError, "rotary_dim"),
        (lambda: apply_rope(X, COS.bfloat16(), SIN.bfloat16()), TypeError, "cos"),
        (lambda: apply_rope(X, COS[0], SIN[0]), ValueError, "cos"),
        (lambda: apply_rope_loop(X, torch.arange(3), inv_freq(6)), ValueError, "inv_freq"),
        (lambda: apply_rope_loop(X, torch.arange(4), inv_freq(8)), ValueError, "positions"),
        (lambda: to_half_layout(torch.zeros(3, 5)), ValueError, "last dimension"),
        (lambda: to_interleaved_layout("x"), TypeError, "x"),
        (
            lambda: permute_qk_weight(torch.zeros(12, 4), 5, to_layout="half"),
            ValueError,
            "num_heads",
        ),
        (lambda: permute_qk_weight(torch.zeros(12, 4), 4, to_layout="half"), ValueError, "even"),
        (
            lambda: permute_qk_weight(torch.zeros(12, 4), 0, to_layout="half"),
            ValueError,
            "num_heads",
        ),
        (lambda: permute_qk_weight(torch.zeros(12, 4), 2, to_layout="meta"), ValueError, "layout"),
        (
            lambda: permute_qk_weight(torch.zeros(2, 12, 4), 2, to_layout="half"),
            ValueError,
            "weight",
        ),
        (lambda: RotaryEmbedding(7), ValueError, "head_dim"),
        (lambda: RotaryEmbedding(8, base=1.0), ValueError, "base"),
        (lambda: RotaryEmbedding(8, layout="gptj"), ValueError, "layout"),
        (lambda: RotaryEmbedding(8, max_len=0), ValueError, "max_len"),
        (lambda: RotaryEmbedding(8, rotary_dim=10), ValueError, "rotary_dim"),
        (lambda: RotaryEmbedding(8, rotary_dim=3), ValueError, "rotary_dim"),
        (
            lambda: RotaryEmbedding(8, rotary_dim=4, scaling=linear(8, factor=2.0)),
            ValueError,
            "rotary_dim",
        ),
        (lambda: RotaryEmbedding(8, scaling="yarn"), TypeError, "scaling"),
        (lambda: RotaryEmbedding(8, scaling={"method": "ntk"}), ValueError, "method"),
        (
            lambda: RotaryEmbedding(8, scaling={"rope_type": "yarn", "factor": 2.0}),
            ValueError,
            "method",
        ),
        (
            lambda: RotaryEmbedding(8, scaling={"method": "linear", "scale": 2.0}),
            ValueError,
            "scale",
        ),
        (
            lambda: RotaryEmbedding(8, scaling={"method": "yarn", "factor": 2.0}),
            TypeError,
            "original_max_len",
        ),
        (
            lambda: RotaryEmbedding(8, scaling={"method": "linear", "factor": 0.5}),
            ValueError,
            "factor",
        ),
        (
            lambda: RotaryEmbedding(8, scaling={"method": "dynamic_ntk", "factor": 2.0}),
            ValueError,
            "original_max_len",
        ),
        (lambda: RotaryEmbedding(8, scaling=linear(6, factor=2.0)), ValueError, "inv_freq"),
    ],
)
def test_bad_input(call, error, match):
    with pytest.raises(error, match=match):
        call()


@pytest.mark.parametrize(
    "kwargs, error, match",
    [
        ({"q": torch.zeros(1, 3, 6)}, ValueError, "head_dim"),
        ({"k": torch.zeros(1, 4, 8)}, ValueError, "seq_len"),
        ({"positions": torch.arange(3), "offset": 2}, ValueError, "offset"),
        ({"positions": torch.arange(4)}, ValueError, "seq_len"),
        ({"positions": torch.arange(3.0)}, TypeError, "integer"),
        ({"positions": torch.tensor([0, -1, 2])}, ValueError, "positions"),
        ({"offset": -1}, ValueError, "offset"),
        ({"positions": torch.zeros(2, 3, dtype=torch.long)}, ValueError, "broadcast"),
    ],
)
def test_module_bad_input(kwargs, error, match):
    module = RotaryEmbedding(8, max_len=4)
    args = {"q": torch.zeros(1, 3, 8), "k": torch.zeros(1, 3, 8)} | kwargs
    with pytest.raises(error, match=match):
        module(**args)


BLOCK_CASES = {
    # case: (x shape (batch, heads, seq_len, head_dim), rotary_dim, positions)
    "seq": ((2, 3, 11, 8), None, torch.arange(100, 111)),
    "packed": ((2, 3, 11, 8), None, torch.tensor([list(range(11)), list(range(50, 61))])[:, None]),
    "one_position": ((2, 3, 11, 8), None, torch.tensor([7])),
    "partial": ((2, 3, 11, 12), 8, torch.arange(11)),
    "x_positions_strided": ((2, 3, 11, 8), None, torch.arange(11)),  # (b, s, h, d) transposed
    "x_last_dim_strided": ((2, 3, 11, 8), None, torch.arange(11)),  # every other column
    "out_strided": ((2, 3, 11, 8), None, torch.arange(11)),  # out with a row pitch of 10
    "out_odd_offset": ((2, 3, 11, 8), 6, torch.arange(11)),  # no complex view of out
    "no_positions": ((2, 3, 0, 8), None, torch.arange(0)),
}


def _block_case_tensors(case, dtype):
    shape, rotary_dim, positions = BLOCK_CASES[case]
    x = randn(0, *shape, dtype=dtype)
    if case == "x_positions_strided":
        x = randn(0, 2, 11, 3, 8, dtype=dtype).transpose(1, 2)
    elif case == "x_last_dim_strided":
        x = randn(0, 2, 3, 11, 16, dtype=dtype)[..., ::2]
    out = torch.empty_like(x)
    if case == "out_strided":
        out = torch.empty(2, 3, 11, 10, dtype=dtype)[..., 1:9]
    elif case == "out_odd_offset":
        out = torch.empty(x.numel() + 1, dtype=dtype)[1:].view(x.shape)
    return x, rotary_dim, positions, out


@pytest.mark.parametrize("layout", ["interleaved", "half"])
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16, torch.float32, F64])
@pytest.mark.parametrize("case", list(BLOCK_CASES))
def test_blocked_path(monkeypatch, layout, dtype, case):
    """The eager kernels equal the loop oracle and the out-of-place formula, in every variant.

    Tables per position, per (batch, position) and one for all positions; partial rotary;
    inputs and outputs that are not contiguous or not viewable as complex pairs; a new result
    and out=. Each in blocks of 3 positions (with a remainder, as on the CPU) and in one block
    (as on a GPU). Half precision may differ from the exact result by one final rounding only.
    """
    import posenc_ref._rotate as kernels

    x, rotary_dim, positions, out = _block_case_tensors(case, dtype)
    width = rotary_dim or x.shape[-1]
    table_dtype = F64 if dtype == F64 else torch.float32
    cos, sin = rope_cos_sin(positions, inv_freq(width), dtype=table_dtype)
    exact = apply_rope_loop(x.double(), positions, inv_freq(width), layout=layout, rotary_dim=width)
    formula = kernels.rotate_formula(x, cos, sin, layout, width)
    eps = torch.finfo(dtype).eps  # spacing of numbers in [1, 2)
    per_position = x[..., :1, :].numel()
    for block_elements in (max(1, 3 * per_position), 1 << 30):  # blocks of 3 positions; one block
        monkeypatch.setattr(kernels, "BLOCK_ELEMENTS", block_elements)
        results = [apply_rope(x, cos, sin, layout=layout, rotary_dim=rotary_dim)]
        if x.numel():  # (apply_rope's aliasing check cannot tell two empty tensors apart)
            out.fill_(math.nan)
            assert apply_rope(x, cos, sin, layout=layout, rotary_dim=rotary_dim, out=out) is out
            results.append(out)
        for got in results:
            assert got.dtype == dtype and got.shape == x.shape
            assert torch.equal(got[..., width:], x[..., width:])  # passed through, bit for bit
            if dtype in (torch.bfloat16, torch.float16):  # one rounding of the float32 result
                bound = eps / 2 * exact.abs() + 1e-6
            else:  # float32/float64 tables and arithmetic
                bound = 8 * eps * (exact.abs() + 1)
            assert torch.all((got.double() - exact).abs() <= bound)
            torch.testing.assert_close(got, formula, rtol=eps, atol=eps)


def test_bfloat16_bits_round_as_torch_does():
    """The bit-level float32 -> bfloat16 rounding of the compiled interleaved path equals torch's.

    Every class of value: random bit patterns (normals of both signs, subnormals), exact ties
    (low 16 bits 0x8000, even and odd), the largest finite values that round to infinity,
    infinities and NaNs.
    """
    from posenc_ref._rotate import bfloat16_bits

    generator = torch.Generator().manual_seed(3)
    bits = torch.randint(-(2**31), 2**31, (200_000,), generator=generator, dtype=torch.int64)
    special = [0x3F808000, 0x3F818000, 0x3F807FFF, 0x7F7FFFFF, 0x7F7F8000, 0x7F800000, 0x00008000]
    special += [0x00018000, 0x7FC00000, 0x7F800001, 0x00000000]
    special += [value - 2**32 for value in (0x80000000, 0xBF808000, 0xFF7FFFFF, 0xFF800000)]
    bits = torch.cat([bits, torch.tensor(special)]).to(torch.int32)
    values = bits.view(torch.float32)
    got = bfloat16_bits(values)
    want = values.to(torch.bfloat16).view(torch.int16).to(torch.int32) << 16
    nan = values.isnan()
    assert torch.equal(got[~nan], want[~nan])
    assert torch.all(got[nan].view(torch.float32).isnan())


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("rotary_dim", [16, 10])
def test_pair_words_equal_the_formula(monkeypatch, dtype, rotary_dim):
    """The compiled path's pair-word rotation, run eagerly, equals the formula bit for bit.

    Including infinities, NaN and a value whose rotation overflows the dtype.
    """
    import posenc_ref._rotate as kernels

    x = randn(4, 2, 3, 9, 16, dtype=dtype)
    x[0, 0, 0, 2], x[0, 0, 1, 3], x[0, 0, 2, 4] = math.inf, math.nan, 3e38
    cos, sin = rope_cos_sin(torch.arange(100, 109), inv_freq(rotary_dim))
    words = kernels.rotate_pair_words(x, cos, sin, rotary_dim)
    monkeypatch.setattr(kernels, "pair_words_apply", lambda *args: False)
    formula = kernels.rotate_formula(x, cos, sin, "interleaved", rotary_dim)
    assert words.dtype == dtype and words.shape == x.shape
    assert torch.equal(words.isnan(), formula.isnan())
    assert torch.equal(words.nan_to_num(0.0), formula.nan_to_num(0.0))


def test_pair_words_only_where_x_is_viewable(monkeypatch):
    """The pair-word view is used only where x is contiguous and starts at a pair."""
    import posenc_ref._rotate as kernels

    monkeypatch.setattr(kernels, "PAIR_WORDS_COMPILE", True)  # (the torch version gate)
    apply = kernels.pair_words_apply
    x = randn(5, 2, 9, 3, 16, dtype=torch.float32)
    cos, sin = rope_cos_sin(torch.arange(9), inv_freq(16))
    assert apply(x, cos, sin)
    assert apply(x.flatten()[2:18].view(1, 16), cos[:1], sin[:1])
    assert not apply(x.flatten()[1:17].view(1, 16), cos[:1], sin[:1])  # starts inside a pair
    assert not apply(x.transpose(1, 2), cos, sin)  # strided: inductor would copy it first
    assert not apply(x.double(), cos.double(), sin.double())  # float64: no word
    assert not apply(x.half(), cos, sin)  # float16: not measured
    leaf = x.clone().requires_grad_()
    assert not apply(leaf, cos, sin)  # bit views have no gradient
    with torch.no_grad():
        assert apply(leaf, cos, sin)
    monkeypatch.setattr(kernels, "PAIR_WORDS_COMPILE", False)
    assert not apply(x, cos, sin)


# --- the core imports no config code ----------------------------------------------------------


def test_the_rotation_imports_no_config_code(fresh_imports):
    """``import posenc_ref`` (and the module) loads no config reader: only from_hf_config does.

    Nor does the first rotation import SymPy (``torch.broadcast_shapes`` would: half a second).
    In one fresh interpreter shared with other tests (tests/fresh_interpreter.py).
    """
    from tests.fresh_interpreter import modules_after

    loaded = modules_after(fresh_imports, "import posenc_ref.rope")
    config = sorted(
        m for m in loaded if m.startswith(("posenc_ref.models", "posenc_ref.encodings"))
    )
    assert not config, f"import posenc_ref, posenc_ref.rope loaded {config}"
    assert "sympy" not in modules_after(fresh_imports, "the first rotation"), (
        "the first rotation imported sympy"
    )
    assert "posenc_ref.models" in modules_after(fresh_imports, "from_hf_config")


@pytest.mark.parametrize(
    "shapes",
    [
        [(), ()],
        [(3,), ()],
        [(2, 1, 4), (3, 1)],
        [(1, 5), (4, 1), (1,)],
        [(0,), (1,)],
        [(0, 3), (2, 1, 1)],
        [(2, 3), (3, 2)],
        [(0,), (2,)],
        [(4, 12, 32), (12, 32)],
        [(4, 12, 32), (1, 12, 33)],
    ],
)
def test_broadcast_shape_is_torchs(shapes):
    """The checks' broadcast (no SymPy import) gives torch.broadcast_shapes' shape, or refuses."""
    from posenc_ref._checks import broadcast_shape

    try:
        want = tuple(torch.broadcast_shapes(*shapes))
    except RuntimeError:
        want = None
    assert broadcast_shape(*shapes) == want


def test_from_spec_keeps_the_frequencies_the_reader_computed(monkeypatch):
    """The module holds the spec's own tensor; the method is called only past the context."""
    from posenc_ref import rope_scaling
    from posenc_ref.models import rope_spec

    spec = rope_spec(
        {
            "model_type": "phi3",
            "head_dim": 8,
            "max_position_embeddings": 64,
            "rope_scaling": {
                "type": "longrope",
                "short_factor": [1.0, 1.0, 2.0, 2.0],
                "long_factor": [1.0, 2.0, 4.0, 8.0],
                "original_max_position_embeddings": 16,
            },
        }
    )
    calls = []
    method = rope_scaling.METHODS["longrope"]

    @functools.wraps(method.function)  # its signature (the row's keys) and its formula on floats
    def counted(*args, **kwargs):
        calls.append(kwargs["seq_len"])
        return method.function(*args, **kwargs)

    monkeypatch.setitem(rope_scaling.METHODS, "longrope", rope_scaling.Method(counted))
    module = RotaryEmbedding.from_spec(spec, max_len=16)
    assert calls == [] and module.spec is spec
    assert module.inv_freq.data_ptr() == spec.inv_freq.data_ptr()
    assert (module.method, module.scaling, module.attention_factor) == (
        "longrope", spec.scaling, spec.attention_factor)  # fmt: skip
    q = randn(0, 1, 1, 20, 8)
    module(q, q)  # positions 0..19: past the original 16, so the long list, computed per call
    assert calls == [20]
    torch.testing.assert_close(
        module.frequencies(20).inv_freq, spec.frequencies(20).inv_freq, rtol=0, atol=0
    )
