"""NoPE, p-RoPE, xPos, FoPE and RoPE-Mixed (posenc_ref/beyond_rope.py): oracles and properties."""

import math

import pytest
import torch
from hypothesis import example, given
from hypothesis import strategies as st

from posenc_ref import apply_rope, inv_freq, rope_cos_sin
from posenc_ref.axial import (
    SCHEMES,
    apply_axial_rope,
    axial_inv_freq,
    axial_pair_axes,
    grid_positions,
)
from posenc_ref.beyond_rope import (
    axial_as_mixed,
    fope_cos_sin,
    fope_inv_freq,
    nope_position_signal,
    p_rope,
    rope_mixed_angles,
    rope_mixed_cos_sin,
    rope_mixed_frequencies,
    uniform_attention,
    xpos_cos_sin,
    xpos_scale,
)
from tests.strategies import bases, head_dims, layouts, seeds


def _randn(seed: int, *shape: int) -> torch.Tensor:
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed), dtype=torch.float64)


# --------------------------------------------------------------------------- NoPE


@given(length=st.integers(1, 300))
@example(1)
def test_nope_causal_signal_is_one_over_position_plus_one(length):
    """A uniform causal head over a start marker reads 1/(m+1): distinct for every position."""
    signal = nope_position_signal(length)
    expected = 1.0 / torch.arange(1, length + 1, dtype=torch.float64)
    torch.testing.assert_close(signal, expected, rtol=1e-15, atol=0)
    assert bool((signal[1:] < signal[:-1]).all())  # strictly decreasing: position is recoverable


@given(length=st.integers(1, 300))
def test_nope_bidirectional_signal_is_constant(length):
    """Without the causal mask every position reads 1/L: nothing tells positions apart."""
    signal = nope_position_signal(length, causal=False)
    torch.testing.assert_close(signal, torch.full((length,), 1.0 / length, dtype=torch.float64))


@given(seed=seeds, length=st.integers(1, 12), causal=st.booleans())
def test_uniform_attention_equals_prefix_means(seed, length, causal):
    """The vectorized head equals the loop: query m averages keys 0..m (or all keys)."""
    values = _randn(seed, 2, length, 3)
    got = uniform_attention(values, causal=causal)
    for m in range(length):
        seen = values[:, : m + 1] if causal else values
        torch.testing.assert_close(got[:, m], seen.mean(dim=1), rtol=1e-13, atol=1e-14)


@given(seed=seeds, length=st.integers(2, 10))
def test_bidirectional_attention_ignores_order(seed, length):
    """Without mask and position, permuting the tokens permutes the outputs (here: all equal)."""
    values = _randn(seed, length, 4)
    perm = torch.randperm(length, generator=torch.Generator().manual_seed(seed))
    out = uniform_attention(values, causal=False)
    torch.testing.assert_close(uniform_attention(values[perm], causal=False), out[perm])
    causal = uniform_attention(values, causal=True)
    assert not torch.allclose(uniform_attention(values[perm], causal=True), causal[perm]) or bool(
        (perm == torch.arange(length)).all()
    )


# --------------------------------------------------------------------------- p-RoPE


@given(dim=head_dims, base=bases, fraction=st.floats(0.0, 1.0))
@example(dim=16, base=1e6, fraction=0.25)
@example(dim=2, base=100.0, fraction=0.0)
@example(dim=8, base=100.0, fraction=1.0)
def test_p_rope_keeps_the_fastest_fraction(dim, base, fraction):
    """floor(p * pairs) frequencies kept as they are, the slowest set to 0; p=1 RoPE, p=0 NoPE."""
    omega = inv_freq(dim, base)
    got = p_rope(omega, fraction)
    kept = math.floor(fraction * dim / 2)
    assert torch.equal(got[:kept], omega[:kept])
    assert bool((got[kept:] == 0).all())


def test_p_rope_matches_gemma4_rotary_module():
    """Gemma 4's rotary module holds p-RoPE of the head's frequencies.

    transformers' "proportional" RoPE on the full-attention layers; the module is built from its
    config class with tiny sizes, nothing loaded.
    """
    pytest.importorskip("transformers")
    from transformers import Gemma4TextConfig
    from transformers.models.gemma4.modeling_gemma4 import Gemma4TextRotaryEmbedding

    for head_dim, fraction in [(16, 0.25), (32, 0.5), (16, 0.75), (64, 0.25)]:
        config = Gemma4TextConfig(
            hidden_size=64,
            num_attention_heads=4,
            head_dim=8,
            global_head_dim=head_dim,  # the full-attention layers' width
            num_hidden_layers=2,
            vocab_size=32,
            layer_types=["sliding_attention", "full_attention"],
        )
        config.rope_parameters["full_attention"]["partial_rotary_factor"] = fraction
        theirs = Gemma4TextRotaryEmbedding(config).full_attention_inv_freq
        base = config.rope_parameters["full_attention"]["rope_theta"]  # 1e6 by default
        ours = p_rope(inv_freq(head_dim, base), fraction)
        torch.testing.assert_close(ours.float(), theirs, rtol=1e-6, atol=0)


@given(dim=head_dims, seed=seeds, position=st.integers(0, 1 << 16), layout=layouts)
def test_p_rope_leaves_the_zero_pairs_untouched(dim, seed, position, layout):
    """Pairs with frequency 0 pass through apply_rope bit for bit (cos 1, sin 0)."""
    omega = p_rope(inv_freq(dim, 10000.0), 0.5)
    x = _randn(seed, 1, dim)
    cos, sin = rope_cos_sin(torch.tensor([position]), omega, dtype=torch.float64)
    out = apply_rope(x, cos, sin, layout=layout)
    kept = dim // 4
    if layout == "interleaved":
        still = torch.arange(2 * kept, dim)
    else:
        half = dim // 2
        still = torch.cat([torch.arange(kept, half), torch.arange(half + kept, dim)])
    assert torch.equal(out[:, still], x[:, still])


def test_p_rope_refuses_bad_input():
    with pytest.raises(ValueError, match="fraction must be in"):
        p_rope(inv_freq(8), 1.5)
    with pytest.raises(TypeError, match="fraction"):
        p_rope(inv_freq(8), "half")
    with pytest.raises(TypeError, match="inv_freq"):
        p_rope([1.0, 0.1], 0.5)


# --------------------------------------------------------------------------- xPos


def xpos_loop(x: torch.Tensor, position: float, dim: int, base: float, key: bool, scale_base):
    """XPos one pair at a time: rotate (x_2i, x_2i+1) by m w_i, scale by zeta_i^(+-m/B)."""
    out = x.clone()
    for i in range(dim // 2):
        omega = base ** (-2 * i / dim)
        zeta = (2 * i / dim + 0.4) / 1.4
        scale = zeta ** ((-position if key else position) / scale_base)
        c, s = math.cos(position * omega), math.sin(position * omega)
        u, v = float(x[2 * i]), float(x[2 * i + 1])
        out[2 * i] = scale * (u * c - v * s)
        out[2 * i + 1] = scale * (v * c + u * s)
    return out


@given(dim=head_dims, seed=seeds, position=st.integers(-2000, 2000), key=st.booleans())
def test_xpos_equals_loop(dim, seed, position, key):
    """The tables through apply_rope equal the pair-by-pair definition (interleaved pairs)."""
    x = _randn(seed, dim)
    cos, sin = xpos_cos_sin(
        torch.tensor([position]), inv_freq(dim), key=key, scale_base=512.0, dtype=torch.float64
    )
    got = apply_rope(x[None], cos, sin)[0]
    torch.testing.assert_close(got, xpos_loop(x, position, dim, 10000.0, key, 512.0))


@given(
    dim=head_dims,
    seed=seeds,
    m=st.integers(0, 3000),
    n=st.integers(0, 3000),
    shift=st.integers(-3000, 3000),
)
def test_xpos_score_depends_on_offset_only(dim, seed, m, n, shift):
    """<f_q(q, m), f_k(k, n)> is unchanged when both positions move: rotation and scale cancel."""
    q, k = _randn(seed, 2, dim)
    omega = inv_freq(dim)

    def score(at_q, at_k):
        cq, sq = xpos_cos_sin(torch.tensor([at_q]), omega, dtype=torch.float64)
        ck, sk = xpos_cos_sin(torch.tensor([at_k]), omega, key=True, dtype=torch.float64)
        return float((apply_rope(q[None], cq, sq) * apply_rope(k[None], ck, sk)).sum())

    # Errors: one rounding per factor, relative to the pair's scale zeta^((m-n)/B), plus the
    # angle's rounding, which grows with the position.
    decay = float(xpos_scale(torch.tensor([m - n]), dim).max())
    reach = (abs(m) + abs(n) + abs(shift) + 1) * 1e-13
    tol = reach * decay * float(q.norm() * k.norm())
    assert score(m + shift, n + shift) == pytest.approx(score(m, n), abs=tol)


@given(dim=head_dims, m=st.integers(0, 5000), n=st.integers(0, 5000))
def test_xpos_scale_product_decays_with_distance(dim, m, n):
    """Query scale times key scale is zeta_i^((m-n)/B): <= 1 for m >= n, fast pairs decay most."""
    positions = torch.tensor([m, n])
    product = xpos_scale(positions[:1], dim) * xpos_scale(positions[1:], dim, key=True)
    zeta = (2 * torch.arange(dim // 2, dtype=torch.float64) / dim + 0.4) / 1.4
    decay = zeta ** ((m - n) / 512.0)
    torch.testing.assert_close(product[0], decay, rtol=1e-12, atol=0)
    if m >= n:
        assert bool((decay <= 1).all())
        assert bool((decay[1:] >= decay[:-1]).all())  # slow pairs decay less


def test_xpos_fastest_pair_numbers():
    """The page's numbers: zeta_0 = 0.286 per B = 512 positions, below a tenth past about 940."""
    scale = xpos_scale(torch.tensor([512, 930, 950]), 64)[:, 0]
    assert round(float(scale[0]), 3) == 0.286
    assert float(scale[1]) > 0.1 > float(scale[2])


@given(dim=head_dims, length=st.integers(1, 64))
def test_xpos_scale_matches_torchscale_centring(dim, length):
    """Torchscale's XPOS: scale (2i + 0.4d) / 1.4d to the power (t - ceil(L/2)) / 512."""
    t = torch.arange(length, dtype=torch.float64)
    theirs = (torch.arange(0, dim, 2, dtype=torch.float64) + 0.4 * dim) / (1.4 * dim)
    theirs = theirs ** ((t - math.ceil(length / 2)) / 512.0)[:, None]
    ours = xpos_scale(torch.arange(length) - math.ceil(length / 2), dim)
    torch.testing.assert_close(ours, theirs, rtol=1e-13, atol=0)


def test_xpos_refuses_bad_input():
    with pytest.raises(ValueError, match="scale_base"):
        xpos_scale(torch.arange(4), 8, scale_base=0.0)
    with pytest.raises(ValueError, match="dim"):
        xpos_scale(torch.arange(4), 7)
    with pytest.raises(TypeError, match="key"):
        xpos_cos_sin(torch.arange(4), inv_freq(8), key=1)


# --------------------------------------------------------------------------- FoPE


@given(dim=head_dims, base=bases, length=st.integers(1, 1 << 16))
@example(dim=16, base=10000.0, length=6)  # under 2 pi: nothing is kept
def test_fope_keeps_frequencies_that_turn_within_training(dim, base, length):
    """Kept: the prefix of inv_freq with wavelength under L0, i.e. at least one full turn."""
    kept = fope_inv_freq(dim, base, original_max_len=length)
    omega = inv_freq(dim, base)
    assert torch.equal(kept, omega[: kept.numel()])
    assert bool((kept * length > 2 * math.pi).all())
    if kept.numel() < omega.numel():
        assert float(omega[kept.numel()]) * length <= 2 * math.pi


@given(dim=head_dims, max_position=st.integers(1, 1 << 20), count=st.integers(0, 64))
@example(dim=128, max_position=262144, count=0)
def test_fope_clip_is_vllms_rule(dim, max_position, count):
    """The clip of vLLM's ``_compute_inv_freq``, restated, is fope_inv_freq's (or a slice).

    vLLM keeps w > 2 pi / max_position_embeddings, or the first num_inv_freq when the config sets
    it; fope_inv_freq with that length, or inv_freq sliced, gives each.
    """
    omega = inv_freq(dim, 10000.0)
    theirs = omega[omega > 2.0 * math.pi / max_position]
    assert torch.equal(fope_inv_freq(dim, 10000.0, original_max_len=max_position), theirs)
    selected = torch.ones_like(omega, dtype=torch.bool)
    selected[count:] = False  # num_inv_freq = count
    assert torch.equal(omega[selected], inv_freq(dim, 10000.0)[:count])


@given(dim=head_dims, length=st.integers(8, 4096), positions=st.lists(st.integers(0, 5000)))
def test_fope_with_identity_coefficients_is_clipped_rope(dim, length, positions):
    """A = B = I: the tables are RoPE's with the clipped (zero) frequencies."""
    kept = fope_inv_freq(dim, 10000.0, original_max_len=length)
    eye = torch.eye(kept.numel(), dtype=torch.float64)
    pos = torch.tensor(positions or [0])
    got = fope_cos_sin(pos, kept, eye, eye, rotary_dim=dim, clipped="identity", dtype=torch.float64)
    clipped = torch.cat([kept, torch.zeros(dim // 2 - kept.numel(), dtype=torch.float64)])
    want = rope_cos_sin(pos, clipped, dtype=torch.float64)
    torch.testing.assert_close(got, want, rtol=1e-14, atol=1e-14)


@given(seed=seeds, heads=st.integers(1, 3), dim=st.sampled_from([8, 16, 32]))
def test_fope_matches_vllm_formula(seed, heads, dim):
    """The tables equal vLLM's FourierRotaryEmbedding, restated.

    Cos and sin of the kept angles times the per-head coefficients, padded with cos 1 and sin 1
    (``value=1`` for both in vLLM's ``_compute_cos_sin_cache``, read at commit c215d1e, as in
    FoPE's reference code and SGLang), rotated NeoX style (the half layout).
    """
    length = 64
    kept = fope_inv_freq(dim, 10000.0, original_max_len=length)
    coef_cos, coef_sin = _randn(seed, 2, heads, kept.numel(), kept.numel())
    t = torch.arange(length, dtype=torch.float64)
    freqs = t[:, None] * kept  # (t, D)
    sin = torch.einsum("tD,hDd->thd", freqs.sin(), coef_sin)
    cos = torch.einsum("tD,hDd->thd", freqs.cos(), coef_cos)
    pad = dim // 2 - kept.numel()
    sin = torch.nn.functional.pad(sin, (0, pad), value=1.0)
    cos = torch.nn.functional.pad(cos, (0, pad), value=1.0)
    x = _randn(seed + 1, length, heads, dim)  # (t, heads, head_size) as in vLLM
    rotated = torch.cat([-x[..., dim // 2 :], x[..., : dim // 2]], dim=-1)
    theirs = x * torch.cat([cos, cos], -1) + rotated * torch.cat([sin, sin], -1)
    c, s = fope_cos_sin(
        torch.arange(length), kept, coef_cos, coef_sin, rotary_dim=dim, dtype=torch.float64
    )  # (heads, t, dim / 2)
    ours = apply_rope(x.transpose(0, 1), c, s, layout="half").transpose(0, 1)
    torch.testing.assert_close(ours, theirs, rtol=1e-12, atol=1e-12)


def test_fope_scores_are_not_purely_relative():
    """With off-diagonal coefficients the score changes when both positions move alike."""
    dim, length = 16, 64
    kept = fope_inv_freq(dim, 10000.0, original_max_len=length)
    coef = torch.eye(kept.numel(), dtype=torch.float64) + 0.3 * _randn(
        0, kept.numel(), kept.numel()
    )
    q, k = _randn(1, 2, dim)

    def score(m, n):
        c, s = fope_cos_sin(torch.tensor([m, n]), kept, coef, coef, rotary_dim=dim)
        c, s = c.double(), s.double()
        return float((apply_rope(q[None], c[:1], s[:1]) * apply_rope(k[None], c[1:], s[1:])).sum())

    assert abs(score(10, 3) - score(20, 13)) > 1e-3


def test_fope_refuses_bad_input():
    kept = fope_inv_freq(8, original_max_len=64)
    eye = torch.eye(kept.numel())
    with pytest.raises(ValueError, match="one row per kept frequency"):
        fope_cos_sin(torch.arange(4), kept, torch.eye(5), torch.eye(5), rotary_dim=8)
    with pytest.raises(ValueError, match="output pairs"):
        wide = torch.ones(kept.numel(), 9)
        fope_cos_sin(torch.arange(4), kept, wide, wide, rotary_dim=8)
    with pytest.raises(ValueError, match="same shape"):
        fope_cos_sin(torch.arange(4), kept, eye, eye[:, :1], rotary_dim=8)
    for bad in ["zero", 0, None]:
        with pytest.raises(ValueError, match="clipped must be one of"):
            fope_cos_sin(torch.arange(4), kept, eye, eye, rotary_dim=8, clipped=bad)


def test_fope_without_kept_frequencies_is_unrotated():
    """Under 2 pi nothing is kept: every pair is at frequency 0 (cos 1, sin 1 or 0)."""
    kept = fope_inv_freq(8, original_max_len=6)
    assert kept.numel() == 0
    empty = torch.zeros(0, 0)
    cos, sin = fope_cos_sin(torch.arange(3), kept, empty, empty, rotary_dim=8, clipped="identity")
    assert torch.equal(cos, torch.ones(3, 4)) and torch.equal(sin, torch.zeros(3, 4))
    cos, sin = fope_cos_sin(torch.arange(3), kept, empty, empty, rotary_dim=8)
    assert torch.equal(cos, torch.ones(3, 4)) and torch.equal(sin, torch.ones(3, 4))


def test_fope_reference_clipped_pair_is_a_scaled_45_degree_turn():
    """With the released padding a clipped pair (u, v) becomes (u - v, v + u) at every position."""
    dim, length = 16, 64
    kept = fope_inv_freq(dim, 10000.0, original_max_len=length)
    eye = torch.eye(kept.numel(), dtype=torch.float64)
    c, s = fope_cos_sin(torch.arange(5), kept, eye, eye, rotary_dim=dim, dtype=torch.float64)
    x = _randn(3, 5, dim)
    out = apply_rope(x, c, s, layout="half")
    half, k = dim // 2, kept.numel()
    u, v = x[:, k:half], x[:, half + k :]
    torch.testing.assert_close(out[:, k:half], u - v, rtol=1e-14, atol=1e-14)
    torch.testing.assert_close(out[:, half + k :], v + u, rtol=1e-14, atol=1e-14)


# --------------------------------------------------------------------------- RoPE-Mixed


@given(
    scheme=st.sampled_from(sorted(SCHEMES)),
    dim=st.sampled_from([4, 8, 16]),
    seed=seeds,
    side=st.integers(1, 4),
)
def test_axial_is_mixed_with_one_axis_per_pair(scheme, dim, seed, side):
    """RoPE-Mixed with axis-aligned frequencies reproduces apply_axial_rope for every scheme."""
    base = 100.0
    positions = grid_positions(side, side + 1, scheme)
    freqs = axial_as_mixed(axial_inv_freq(dim, base, scheme), axial_pair_axes(dim, scheme))
    x = _randn(seed, 2, positions.shape[0], dim)
    cos, sin = rope_mixed_cos_sin(positions, freqs, dtype=torch.float64)
    got = apply_rope(x, cos, sin, layout=SCHEMES[scheme].layout)
    torch.testing.assert_close(got, apply_axial_rope(x, positions, base=base, scheme=scheme))


def _score_table(q, k, freqs, offsets):
    """Score of q at (0, 0) and k at each (dy, dx), interleaved pairs."""
    pos = torch.tensor([[0, 0], *offsets], dtype=torch.float64)
    cos, sin = rope_mixed_cos_sin(pos, freqs, dtype=torch.float64)
    rq = apply_rope(q[None], cos[:1], sin[:1])
    rk = apply_rope(k.expand(len(offsets), -1), cos[1:], sin[1:])
    return (rq * rk).sum(-1)


@given(seed=seeds, dy=st.integers(-20, 20), dx=st.integers(-20, 20))
def test_axial_score_is_row_part_plus_column_part(seed, dy, dx):
    """Axial: S(dy+1, dx+1) - S(dy+1, dx) - S(dy, dx+1) + S(dy, dx) = 0, no diagonal term."""
    dim = 8
    freqs = axial_as_mixed(axial_inv_freq(dim, 100.0, "sam2"), axial_pair_axes(dim, "sam2"))
    q, k = _randn(seed, 2, dim)
    s = _score_table(q, k, freqs, [(dy + 1, dx + 1), (dy + 1, dx), (dy, dx + 1), (dy, dx)])
    scale = float(q.norm() * k.norm())
    assert float(s[0] - s[1] - s[2] + s[3]) == pytest.approx(0.0, abs=1e-12 * scale)


def test_mixed_score_has_a_diagonal_term():
    """RoPE-Mixed with oblique frequencies: the same second difference is far from 0."""
    dim = 8
    freqs = rope_mixed_frequencies(dim, 1, base=10.0, generator=torch.Generator().manual_seed(3))[0]
    q, k = _randn(5, 2, dim)
    s = _score_table(q, k, freqs, [(1, 1), (1, 0), (0, 1), (0, 0)])
    assert abs(float(s[0] - s[1] - s[2] + s[3])) > 1e-2


@given(seed=seeds, shift=st.tuples(st.integers(-30, 30), st.integers(-30, 30)))
def test_mixed_score_depends_on_offset_only(seed, shift):
    """Moving query and key patches by the same (a, b) leaves the RoPE-Mixed score unchanged."""
    dim = 16
    freqs = rope_mixed_frequencies(dim, 1, generator=torch.Generator().manual_seed(seed))[0]
    q, k = _randn(seed, 2, dim)
    pos = torch.tensor([[2, 5], [7, 1], [2 + shift[0], 5 + shift[1]], [7 + shift[0], 1 + shift[1]]])
    cos, sin = rope_mixed_cos_sin(pos, freqs, dtype=torch.float64)
    r = apply_rope(torch.stack([q, k, q, k]), cos, sin)
    assert float((r[2] * r[3]).sum()) == pytest.approx(float((r[0] * r[1]).sum()), abs=1e-11)


@given(dim=st.sampled_from([4, 8, 16, 64]), heads=st.integers(1, 4), seed=seeds)
def test_mixed_initial_frequencies(dim, heads, seed):
    """Axial magnitudes base^(-4k/d) in both halves; the halves perpendicular in every head."""
    freqs = rope_mixed_frequencies(
        dim, heads, base=10.0, generator=torch.Generator().manual_seed(seed)
    )
    assert freqs.shape == (heads, dim // 2, 2)
    magnitude = 10.0 ** (-torch.arange(0, dim, 4, dtype=torch.float64) / dim)
    torch.testing.assert_close(freqs.norm(dim=-1), magnitude.repeat(2).expand(heads, -1))
    first, second = freqs[:, : dim // 4], freqs[:, dim // 4 :]
    torch.testing.assert_close(
        (first * second).sum(-1),
        torch.zeros(heads, dim // 4, dtype=torch.float64),
        atol=1e-15,
        rtol=0,
    )


def test_mixed_angles_are_a_projection_of_the_position():
    freqs = torch.tensor([[1.0, 0.0], [0.0, 2.0], [0.5, 0.5]], dtype=torch.float64)
    angles = rope_mixed_angles(torch.tensor([[3, 4]]), freqs)
    assert angles.tolist() == [[3.0, 8.0, 3.5]]


def test_mixed_refuses_bad_input():
    with pytest.raises(ValueError, match="positions must have shape"):
        rope_mixed_angles(torch.zeros(4, 3), torch.zeros(2, 2))
    with pytest.raises(ValueError, match="freqs must be"):
        rope_mixed_angles(torch.zeros(4, 2), torch.zeros(2, 3))
    with pytest.raises(ValueError, match="multiple of 4"):
        rope_mixed_frequencies(6, 1)
    with pytest.raises(ValueError, match="pair_axes"):
        axial_as_mixed(inv_freq(8), torch.tensor([0, 1, 2, 0]))
