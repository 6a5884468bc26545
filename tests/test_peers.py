"""Agreement with the implementations people run (skipped when a peer is not installed).

HF transformers (``ROPE_INIT_FUNCTIONS``, ``LlamaRotaryEmbedding``, ``apply_rotary_pos_emb``; half
layout), torchtune (``RotaryPositionalEmbeddings``, ``Llama3ScaledRoPE``; interleaved) and
rotary-embedding-torch (interleaved; PI and NTK through its constructor). Where they disagree
with each other or with the papers, a test here pins the disagreement, so the docs' list of
differences stays true.

Tolerances. The peers compute in float32, we in float64:

- frequencies: ``base ** (2i/dim)`` in float32 rounds the exponent (relative 2**-24), which the
  power amplifies by ``ln(base)``; the power, reciprocal and division add a few ulps. So
  ``rtol = 2**-24 * (ln(base) + 8)``.
- angles: ``position * inv_freq`` in float32 is off by about ``position * 2**-24`` radians (the
  product's rounding) plus ``position * omega * rtol`` (the frequency's); cos and sin inherit it.
  So ``atol = 2**-24 * (max_position + 1) * (ln(base) + 10)``, plus a few ulps of the result.
"""

import math

import pytest
import torch

from posenc_ref import apply_rope, inv_freq, permute_qk_weight, rope_cos_sin
from posenc_ref.models import rope_spec
from posenc_ref.rope_scaling import (
    dynamic_ntk,
    linear,
    llama3,
    longrope,
    ntk_aware,
    yarn,
    yarn_mscale,
)

pytestmark = pytest.mark.peers

ULP = 2.0**-24
F64 = torch.float64
HEAD_DIMS = [16, 64, 128]


def freq_rtol(base: float) -> float:
    return ULP * (math.log(base) + 8)


def angle_atol(max_position: int, base: float) -> float:
    return ULP * (max_position + 1) * (math.log(base) + 10) + 8 * ULP


def randn(seed, *shape):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed))


def hf_format(table):
    """Our per-pair table in HF's format: the pair values twice, ``cat([t, t])`` (half layout)."""
    return torch.cat([table, table], dim=-1)


# --- HF transformers ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def hf():
    pytest.importorskip("transformers")
    from transformers import LlamaConfig
    from transformers.modeling_rope_utils import ROPE_INIT_FUNCTIONS
    from transformers.models.llama.modeling_llama import LlamaRotaryEmbedding, apply_rotary_pos_emb

    class HF:
        init = ROPE_INIT_FUNCTIONS
        rotary = LlamaRotaryEmbedding
        apply = staticmethod(apply_rotary_pos_emb)

        @staticmethod
        def config(head_dim, base, max_position_embeddings=4096, **rope):
            # Only the fields the RoPE functions read: head_dim, rope_parameters, max positions.
            return LlamaConfig(
                hidden_size=2 * head_dim,
                num_attention_heads=2,
                head_dim=head_dim,
                max_position_embeddings=max_position_embeddings,
                rope_parameters={"rope_theta": base, **rope},
            )

    return HF


@pytest.mark.parametrize("head_dim", HEAD_DIMS)
@pytest.mark.parametrize("base", [10000.0, 500000.0])
@pytest.mark.parametrize("factor", [2.0, 8.0])
def test_hf_linear(hf, head_dim, base, factor):
    config = hf.config(head_dim, base, rope_type="linear", factor=factor)
    theirs, scale = hf.init["linear"](config, "cpu")
    ours = linear(head_dim, base, factor=factor)
    torch.testing.assert_close(theirs.double(), ours.inv_freq, rtol=freq_rtol(base), atol=0)
    assert scale == ours.attention_factor == 1.0


@pytest.mark.parametrize("head_dim", HEAD_DIMS)
@pytest.mark.parametrize("base", [10000.0, 1000000.0])
@pytest.mark.parametrize("factor", [2.0, 4.0])
@pytest.mark.parametrize("seq_len", [100, 2048, 3000, 20000])
def test_hf_dynamic(hf, head_dim, base, factor, seq_len):
    """HF's "dynamic" uses max_position_embeddings as the original length."""
    config = hf.config(head_dim, base, 2048, rope_type="dynamic", factor=factor)
    theirs, scale = hf.init["dynamic"](config, "cpu", seq_len=seq_len)
    ours = dynamic_ntk(head_dim, base, factor=factor, seq_len=seq_len, original_max_len=2048)
    new_base = base * (factor * max(seq_len, 2048) / 2048 - factor + 1) ** (
        head_dim / (head_dim - 2)
    )
    torch.testing.assert_close(theirs.double(), ours.inv_freq, rtol=freq_rtol(new_base), atol=0)
    assert scale == ours.attention_factor == 1.0


@pytest.mark.parametrize("family", ["hunyuan_v1_dense", "hunyuan_v1_moe"])
@pytest.mark.parametrize("head_dim", HEAD_DIMS)
@pytest.mark.parametrize(("base", "alpha"), [(10000.0, 1000.0), (10000.0, 1.5), (500000.0, 8.0)])
def test_hf_hunyuan_ntk_alpha_is_ntk_aware(family, head_dim, base, alpha):
    """Hunyuan's ``alpha`` is the NTK-aware base with s = alpha: base * alpha ** (d / (d - 2)).

    transformers reads ``rope_type`` "dynamic" with an ``alpha`` as its static ``ntk_alpha``.
    Released Hunyuan configs give alpha 1000.0 with rope_theta 10000.0 and head_dim 128.
    """
    pytest.importorskip("transformers")
    import importlib

    configs = importlib.import_module(f"transformers.models.{family}.configuration_{family}")
    modeling = importlib.import_module(f"transformers.models.{family}.modeling_{family}")
    config_class = next(
        v for k, v in vars(configs).items() if k.endswith("Config") and k.startswith("HunYuan")
    )
    rotary = next(v for k, v in vars(modeling).items() if k.endswith("RotaryEmbedding"))
    rope = {"rope_type": "dynamic", "alpha": alpha, "factor": 1.0, "rope_theta": base}
    config = config_class(
        hidden_size=2 * head_dim, num_attention_heads=2, head_dim=head_dim, rope_parameters=rope
    )
    module = rotary(config)
    assert module.rope_type == "ntk_alpha" and module.attention_scaling == 1.0
    ours = ntk_aware(head_dim, base, factor=alpha)
    new_base = base * alpha ** (head_dim / (head_dim - 2))
    torch.testing.assert_close(
        module.inv_freq.double(), ours.inv_freq, rtol=freq_rtol(new_base), atol=0
    )


YARN_CASES = [
    # head_dim, base, factor, original, extra rope_parameters, extra kwargs for ours
    (64, 10000.0, 4.0, 4096, {}, {}),
    (128, 10000.0, 16.0, 4096, {}, {}),
    (128, 1000000.0, 4.0, 32768, {}, {}),  # Qwen2.5-style long context
    (64, 150000.0, 32.0, 4096, {"truncate": False}, {"truncate": False}),  # gpt-oss-style
    (
        16,
        10000.0,
        8.0,
        2048,
        {"beta_fast": 16.0, "beta_slow": 2.0},
        {"beta_fast": 16.0, "beta_slow": 2.0},
    ),
    (64, 10000.0, 40.0, 4096, {"mscale": 1.0, "mscale_all_dim": 1.0}, {"attention_factor": 1.0}),
    (
        64,
        10000.0,
        40.0,
        4096,
        {"mscale": 0.707, "mscale_all_dim": 1.0},
        {"attention_factor": yarn_mscale(40.0, 0.707) / yarn_mscale(40.0, 1.0)},
    ),
    (64, 10000.0, 4.0, 4096, {"attention_factor": 1.3}, {"attention_factor": 1.3}),
]


@pytest.mark.parametrize("head_dim, base, factor, original, theirs_extra, ours_extra", YARN_CASES)
def test_hf_yarn(hf, head_dim, base, factor, original, theirs_extra, ours_extra):
    config = hf.config(
        head_dim,
        base,
        rope_type="yarn",
        factor=factor,
        original_max_position_embeddings=original,
        **theirs_extra,
    )
    theirs, scale = hf.init["yarn"](config, "cpu")
    ours = yarn(head_dim, base, factor=factor, original_max_len=original, **ours_extra)
    torch.testing.assert_close(theirs.double(), ours.inv_freq, rtol=freq_rtol(base), atol=0)
    assert scale == pytest.approx(ours.attention_factor, rel=1e-12)


def test_hf_yarn_equal_mscales_give_factor_one(hf):
    """HF: mscale == mscale_all_dim means a = 1, not 0.1 ln s + 1 (engines differ here)."""
    config = hf.config(
        64, 10000.0, rope_type="yarn", factor=40.0, original_max_position_embeddings=4096,
        mscale=1.0, mscale_all_dim=1.0,
    )  # fmt: skip
    _, scale = hf.init["yarn"](config, "cpu")
    assert scale == 1.0 != yarn(64, factor=40.0, original_max_len=4096).attention_factor


@pytest.mark.parametrize("given", [{"mscale": 0.707}, {"mscale_all_dim": 0.707}])
def test_hf_yarn_lone_mscale_is_ignored(hf, given):
    """HF uses the mscale ratio only when both are set: a lone mscale or mscale_all_dim is ignored.

    a is then 0.1 ln s + 1, as with neither; so does posenc_ref's reader.
    """
    from posenc_ref.models import rope_spec

    config = hf.config(
        64, 10000.0, rope_type="yarn", factor=40.0, original_max_position_embeddings=4096,
        **given,
    )  # fmt: skip
    _, scale = hf.init["yarn"](config, "cpu")
    default = yarn(64, factor=40.0, original_max_len=4096).attention_factor
    assert scale == pytest.approx(default, rel=1e-12) and default == pytest.approx(
        0.1 * math.log(40.0) + 1, rel=1e-15
    )
    assert rope_spec(config.to_dict()).attention_factor == pytest.approx(default, rel=1e-15)


def test_hf_yarn_keeps_every_pair_below_the_reversal(hf):
    """Every pair turns > beta_fast times, but low <= dim - 1: HF keeps every pair, as we do.

    dim 128, base 100: every pair is fast from L ~ 18,700, HF's range reverses only from
    L >= 2 pi 32 base^2 ~ 2.01 million. At L = 65536 both keep every frequency.
    """
    original = 65536
    assert 2 * math.pi * 32 * 100.0 ** (126 / 128) < original < 2 * math.pi * 32 * 100.0**2
    config = hf.config(
        128, 100.0, rope_type="yarn", factor=4.0, original_max_position_embeddings=original
    )
    theirs, _ = hf.init["yarn"](config, "cpu")
    plain = inv_freq(128, 100.0)
    assert min(original * plain / (2 * math.pi)) > 32  # every pair fast
    torch.testing.assert_close(theirs.double(), plain, rtol=freq_rtol(100.0), atol=0)
    assert torch.equal(yarn(128, 100.0, factor=4.0, original_max_len=original).inv_freq, plain)


def test_hf_yarn_reversed_range_disagreement(hf):
    """Disagreement: once HF's lower bound clamps past dim - 1, HF interpolates every pair.

    That needs L >= 2 pi beta_fast base^2 roughly (floor(i*(beta_fast)) > dim - 1), far beyond
    "every pair turns > beta_fast times" (see the test above). HF's clamped correction range is
    reversed there (low > high = dim - 1); posenc_ref keeps every pair, which is what the method
    means. Far from any released config.
    """
    config = hf.config(8, 1.5, rope_type="yarn", factor=4.0, original_max_position_embeddings=4096)
    theirs, _ = hf.init["yarn"](config, "cpu")
    plain = inv_freq(8, 1.5)
    torch.testing.assert_close(theirs.double(), plain / 4, rtol=freq_rtol(1.5), atol=0)
    assert torch.equal(yarn(8, 1.5, factor=4.0, original_max_len=4096).inv_freq, plain)


LLAMA3_CASES = [
    (128, 500000.0, 8.0, 1.0, 4.0, 8192),  # Llama 3.1
    (64, 500000.0, 32.0, 1.0, 4.0, 8192),  # Llama 3.2 1B/3B
    (128, 500000.0, 16.0, 1.0, 1.0, 8192),  # Llama 4 Scout: no middle band
    (16, 10000.0, 4.0, 1.0, 4.0, 2048),
]


LONGROPE_CASES = [
    # head_dim, base, max, original, explicit factor, explicit attention factor
    (96, 10000.0, 131072, 4096, None, None),  # Phi-3 mini 128k style: s from max / original
    (16, 10000.0, 2048, 512, 8.0, None),  # an explicit factor wins over max / original
    (16, 500000.0, 2048, 512, None, 1.25),  # an explicit attention factor is final
    (16, 10000.0, 512, 512, None, None),  # s = 1: attention factor 1
]


@pytest.mark.parametrize("head_dim, base, max_len, original, factor, attention", LONGROPE_CASES)
@pytest.mark.parametrize("seq_len", [None, 1, "original", "original+1", "4x"])
def test_hf_longrope(hf, head_dim, base, max_len, original, factor, attention, seq_len):
    """Short list up to the original length, long list past it; HF's s and attention factor."""
    pairs = head_dim // 2
    short = [1.0 + 0.01 * i for i in range(pairs)]
    long = [1.0 + 1.5 * i for i in range(pairs)]
    extra = {
        "short_factor": short,
        "long_factor": long,
        "original_max_position_embeddings": original,
    }
    if factor is not None:
        extra["factor"] = factor
    if attention is not None:
        extra["attention_factor"] = attention
    config = hf.config(head_dim, base, max_len, rope_type="longrope", **extra)
    length = {None: None, 1: 1, "original": original, "original+1": original + 1}.get(
        seq_len, 4 * original
    )
    theirs, scale = hf.init["longrope"](config, "cpu", seq_len=length)
    ours = longrope(
        head_dim, base, short_factor=short, long_factor=long, original_max_len=original,
        seq_len=length or 0, factor=factor, max_len=max_len, attention_factor=attention,
    )  # fmt: skip
    torch.testing.assert_close(theirs.double(), ours.inv_freq, rtol=freq_rtol(base), atol=0)
    assert scale == pytest.approx(ours.attention_factor, rel=1e-12)


@pytest.mark.parametrize("head_dim, fraction", [(16, 0.25), (64, 0.5), (512, 0.25), (32, 1.0)])
@pytest.mark.parametrize("factor", [1.0, 4.0])
def test_hf_proportional(hf, head_dim, fraction, factor):
    """Gemma 4's "proportional": the first pairs at head-width frequencies, the rest zero."""
    config = hf.config(
        head_dim, 1e6, rope_type="proportional", partial_rotary_factor=fraction, factor=factor
    )
    theirs, scale = hf.init["proportional"](config, "cpu")
    rotating = int(fraction * head_dim) // 2
    expected = torch.cat(
        [inv_freq(head_dim, 1e6)[:rotating], torch.zeros(head_dim // 2 - rotating, dtype=F64)]
    ) / factor  # fmt: skip
    torch.testing.assert_close(theirs.double(), expected, rtol=freq_rtol(1e6), atol=0)
    assert scale == 1.0
    spec = rope_spec(config.to_dict())
    assert spec.rotary_dim == head_dim and torch.equal(spec.inv_freq, expected)


@pytest.mark.parametrize("head_dim, base, factor, low, high, original", LLAMA3_CASES)
def test_hf_llama3(hf, head_dim, base, factor, low, high, original):
    config = hf.config(
        head_dim,
        base,
        rope_type="llama3",
        factor=factor,
        low_freq_factor=low,
        high_freq_factor=high,
        original_max_position_embeddings=original,
    )
    theirs, scale = hf.init["llama3"](config, "cpu")
    ours = llama3(
        head_dim,
        base,
        factor=factor,
        low_freq_factor=low,
        high_freq_factor=high,
        original_max_len=original,
    )
    torch.testing.assert_close(theirs.double(), ours.inv_freq, rtol=freq_rtol(base), atol=0)
    assert scale == ours.attention_factor == 1.0


@pytest.mark.parametrize("head_dim", HEAD_DIMS)
def test_hf_apply_rotary_pos_emb_is_half_layout(hf, head_dim):
    """Same float32 tables in, same rotated q and k out (a few float32 roundings apart)."""
    q, k = randn(0, 2, 4, 33, head_dim), randn(1, 2, 2, 33, head_dim)
    positions = torch.arange(1000, 1033)
    cos, sin = rope_cos_sin(positions, inv_freq(head_dim))
    # their cos: (batch, seq, dim), each pair's value twice
    theirs_q, theirs_k = hf.apply(q, k, hf_format(cos)[None], hf_format(sin)[None])
    atol = 4 * ULP * 2 * float(max(q.abs().max(), k.abs().max()))
    torch.testing.assert_close(apply_rope(q, cos, sin, layout="half"), theirs_q, rtol=0, atol=atol)
    torch.testing.assert_close(apply_rope(k, cos, sin, layout="half"), theirs_k, rtol=0, atol=atol)


@pytest.mark.parametrize(
    "rope_parameters, ours",
    [
        ({"rope_type": "default"}, lambda d, b: (inv_freq(d, b), 1.0)),
        ({"rope_type": "linear", "factor": 4.0}, lambda d, b: linear(d, b, factor=4.0)),
        (
            {"rope_type": "yarn", "factor": 8.0, "original_max_position_embeddings": 2048},
            lambda d, b: yarn(d, b, factor=8.0, original_max_len=2048),
        ),
        (
            {
                "rope_type": "llama3",
                "factor": 8.0,
                "low_freq_factor": 1.0,
                "high_freq_factor": 4.0,
                "original_max_position_embeddings": 2048,
            },
            lambda d, b: llama3(d, b, original_max_len=2048),
        ),
    ],
)
@pytest.mark.parametrize("base", [10000.0, 500000.0])
def test_hf_cos_sin_tables(hf, rope_parameters, ours, base):
    """HF's per-forward cos/sin (float32 angles) against ours, error growing with position."""
    head_dim = 64
    rotary = hf.rotary(hf.config(head_dim, base, **rope_parameters))
    position_ids = torch.tensor([[0, 1, 2, 255, 256, 257, 4095, 4096, 65535, 100_000]])
    cos, sin = rotary(torch.zeros(1, dtype=torch.float32), position_ids)
    freqs, factor = ours(head_dim, base)
    our_cos, our_sin = rope_cos_sin(position_ids, freqs, attention_factor=factor)
    our_cos, our_sin = hf_format(our_cos), hf_format(our_sin)
    atol = angle_atol(100_000, base) * factor
    torch.testing.assert_close(cos, our_cos, rtol=0, atol=atol)
    torch.testing.assert_close(sin, our_sin, rtol=0, atol=atol)
    # At position 0 both are exact.
    assert torch.equal(cos[0, 0], our_cos[0, 0])


def test_hf_dynamic_state_disagreement(hf):
    """Disagreement: HF's dynamic NTK keeps state, posenc_ref's is stateless.

    HF keeps the frequencies of the longest call for shorter calls still above the original
    length; posenc_ref recomputes from each call's length. Below the original length both reset.
    """
    head_dim, base, original = 32, 10000.0, 256
    rotary = hf.rotary(hf.config(head_dim, base, original, rope_type="dynamic", factor=4.0))
    x = torch.zeros(1)
    rotary(x, torch.arange(1024)[None])  # grows to seq_len 1024
    cos, _ = rotary(x, torch.arange(512)[None])  # HF: still the 1024 frequencies
    at_1024 = dynamic_ntk(head_dim, base, factor=4.0, seq_len=1024, original_max_len=original)
    at_512 = dynamic_ntk(head_dim, base, factor=4.0, seq_len=512, original_max_len=original)
    positions = torch.arange(512)
    atol = angle_atol(512, base)
    torch.testing.assert_close(
        cos[0], hf_format(rope_cos_sin(positions, at_1024.inv_freq)[0]), rtol=0, atol=atol
    )
    assert not torch.allclose(
        cos[0], hf_format(rope_cos_sin(positions, at_512.inv_freq)[0]), atol=1e-3
    )
    cos, _ = rotary(x, torch.arange(100)[None])  # shorter than the original: reset
    plain = hf_format(rope_cos_sin(torch.arange(100), inv_freq(head_dim, base))[0])
    torch.testing.assert_close(cos[0], plain, rtol=0, atol=angle_atol(100, base))


def test_hf_checkpoint_permutation_matches_hf_converter_convention(hf):
    """Meta weights permuted to_layout="half", rotated by HF's code, give Meta's scores.

    The Meta side uses our interleaved functions, the HF side HF's apply_rotary_pos_emb.
    """
    head_dim, heads, seq = 16, 2, 9
    wq, wk = randn(0, heads * head_dim, 12), randn(1, heads * head_dim, 12)
    tokens = randn(2, seq, 12)
    positions = torch.arange(seq)

    def heads_first(t):
        return t.unflatten(-1, (heads, head_dim)).transpose(0, 1)[None]  # (1, heads, seq, dim)

    cos, sin = rope_cos_sin(positions, inv_freq(head_dim))  # one table for both layouts
    q_meta = apply_rope(heads_first(tokens @ wq.T), cos, sin)
    k_meta = apply_rope(heads_first(tokens @ wk.T), cos, sin)
    q_hf, k_hf = hf.apply(
        heads_first(tokens @ permute_qk_weight(wq, heads, to_layout="half").T),
        heads_first(tokens @ permute_qk_weight(wk, heads, to_layout="half").T),
        hf_format(cos)[None],
        hf_format(sin)[None],
    )
    torch.testing.assert_close(
        q_hf @ k_hf.transpose(-1, -2), q_meta @ k_meta.transpose(-1, -2), rtol=1e-5, atol=1e-4
    )


# --- torchtune ---------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def torchtune_modules():
    pytest.importorskip("torchao")
    pytest.importorskip("torchtune")
    from torchtune.models.llama3_1 import Llama3ScaledRoPE
    from torchtune.modules import RotaryPositionalEmbeddings

    return RotaryPositionalEmbeddings, Llama3ScaledRoPE


@pytest.mark.parametrize("head_dim", HEAD_DIMS)
@pytest.mark.parametrize("base", [10000.0, 500000.0])
def test_torchtune_rope_is_interleaved(torchtune_modules, head_dim, base):
    rope_cls, _ = torchtune_modules
    max_seq_len = 4096
    theirs = rope_cls(head_dim, max_seq_len=max_seq_len, base=base)
    x = randn(0, 2, 40, 3, head_dim)  # torchtune: (batch, seq, heads, dim)
    positions = torch.tensor([[0, 1, 2, 3] * 10, list(range(4000, 4040))])  # packed, and late
    got = theirs(x, input_pos=positions)
    cos, sin = rope_cos_sin(positions[:, None, :], inv_freq(head_dim, base))  # (batch, 1, seq, dim)
    ours = apply_rope(x.transpose(1, 2), cos, sin).transpose(1, 2)
    atol = angle_atol(4040, base) * float(x.abs().max()) * 2
    torch.testing.assert_close(got, ours, rtol=0, atol=atol)


@pytest.mark.parametrize(
    "head_dim, base, factor, low, high, original", LLAMA3_CASES[:2] + LLAMA3_CASES[3:]
)
def test_torchtune_llama3(torchtune_modules, head_dim, base, factor, low, high, original):
    """Llama3ScaledRoPE agrees (its base defaults to 10000: pass Llama's 500000)."""
    _, llama3_cls = torchtune_modules
    theirs = llama3_cls(
        head_dim,
        max_seq_len=256,
        base=base,
        scale_factor=factor,
        low_freq_factor=low,
        high_freq_factor=high,
        old_context_len=original,
    )
    ours = llama3(
        head_dim,
        base,
        factor=factor,
        low_freq_factor=low,
        high_freq_factor=high,
        original_max_len=original,
    )
    torch.testing.assert_close(theirs.theta.double(), ours.inv_freq, rtol=freq_rtol(base), atol=0)
    x = randn(1, 1, 256, 2, head_dim)
    cos, sin = rope_cos_sin(torch.arange(256), ours.inv_freq)
    got = theirs(x)
    expected = apply_rope(x.transpose(1, 2), cos, sin).transpose(1, 2)
    atol = angle_atol(256, base) * float(x.abs().max()) * 2
    torch.testing.assert_close(got, expected, rtol=0, atol=atol)


# --- rotary-embedding-torch --------------------------------------------------------------------


@pytest.fixture(scope="module")
def lucidrains():
    module = pytest.importorskip("rotary_embedding_torch")
    return module.RotaryEmbedding


@pytest.mark.parametrize("head_dim", HEAD_DIMS)
@pytest.mark.parametrize("base", [10000.0, 500000.0])
@pytest.mark.parametrize("offset", [0, 3000])
def test_rotary_embedding_torch_plain(lucidrains, head_dim, base, offset):
    theirs = lucidrains(head_dim, theta=base)
    x = randn(0, 2, 3, 50, head_dim)  # (batch, heads, seq, dim)
    got = theirs.rotate_queries_or_keys(x, offset=offset)
    cos, sin = rope_cos_sin(torch.arange(offset, offset + 50), inv_freq(head_dim, base))
    atol = angle_atol(offset + 50, base) * float(x.abs().max()) * 2
    torch.testing.assert_close(got, apply_rope(x, cos, sin), rtol=0, atol=atol)


@pytest.mark.parametrize("head_dim", [16, 64])
@pytest.mark.parametrize("factor", [2.0, 8.0])
def test_rotary_embedding_torch_interpolate_is_linear(lucidrains, head_dim, factor):
    theirs = lucidrains(head_dim, interpolate_factor=factor)
    x = randn(1, 1, 2, 300, head_dim)
    got = theirs.rotate_queries_or_keys(x)
    cos, sin = rope_cos_sin(torch.arange(300), linear(head_dim, factor=factor).inv_freq)
    atol = angle_atol(300, 10000.0) * float(x.abs().max()) * 2
    torch.testing.assert_close(got, apply_rope(x, cos, sin), rtol=0, atol=atol)


@pytest.mark.parametrize("head_dim", [16, 64])
@pytest.mark.parametrize("factor", [2.0, 8.0])
def test_rotary_embedding_torch_theta_rescale_is_ntk_aware(lucidrains, head_dim, factor):
    theirs = lucidrains(head_dim, theta_rescale_factor=factor)
    ours = ntk_aware(head_dim, factor=factor)
    new_base = 10000.0 * factor ** (head_dim / (head_dim - 2))
    torch.testing.assert_close(
        theirs.freqs.detach().double(), ours.inv_freq, rtol=freq_rtol(new_base), atol=0
    )


def test_three_hunyuan_families_compute_ntk_alpha():
    """In transformers 5.23 HunYuan dense, MoE and VL define ``compute_ntk_alpha_rope_parameters``.

    The context-extension page counts them; the reader reads the two text families' configs so
    and refuses HunYuan-VL's text model for another reason (its pairs are not rotations).
    """
    transformers = pytest.importorskip("transformers")
    from pathlib import Path

    from posenc_ref.models import NOT_IMPLEMENTED

    models = Path(transformers.__file__).parent / "models"
    families = sorted(
        path.parent.name
        for path in models.glob("*/modeling_*.py")
        if "def compute_ntk_alpha_rope_parameters" in path.read_text(encoding="utf-8")
    )
    assert families == ["hunyuan_v1_dense", "hunyuan_v1_moe", "hunyuan_vl"]
    assert "hunyuan_vl_text" in NOT_IMPLEMENTED
