"""RoPE as released models use it (posenc_ref/models.py, RotaryEmbedding.from_hf_config).

The config reader against the facts of each released family, both config forms, HF's rules for
widths and implicit values, every error it promises; the module built from a config against the
pure functions; the claims of the partial-rotary, LongRoPE and M-RoPE sections of the site. No
peer library needed (agreement with HF transformers is in tests/test_models_hf.py).
"""

import copy
import math

import pytest
import torch
from hypothesis import example, given
from hypothesis import strategies as st

from posenc_ref import (
    RotaryEmbedding,
    apply_rope,
    inv_freq,
    rope_cos_sin,
    to_half_layout,
)
from posenc_ref.models import FAMILIES, RopeSpec, released_config, released_configs, rope_spec
from posenc_ref.mrope import mrope_cos_sin, mrope_positions
from posenc_ref.rope_scaling import dynamic_ntk, longrope, yarn_mscale
from tests.strategies import bases, layouts, seeds

F64 = torch.float64

# --- the released families: facts from their configs and model cards --------------------------

# name: (head_dim, rotary_dim, layout, base, rope_type, original context, max_position_embeddings)
RELEASED = {
    "Llama 2": (128, 128, "half", 1e4, "default", 4096, 4096),
    "Llama 3.1": (128, 128, "half", 5e5, "llama3", 8192, 131072),
    "Llama 3.2": (64, 64, "half", 5e5, "llama3", 8192, 131072),
    "Mistral 7B": (128, 128, "half", 1e4, "default", 32768, 32768),
    "Qwen2.5 (YaRN)": (128, 128, "half", 1e6, "yarn", 32768, 32768),
    "GPT-NeoX / Pythia": (128, 32, "half", 1e4, "default", 2048, 2048),
    "Phi-2": (80, 32, "half", 1e4, "default", 2048, 2048),
    "StableLM": (80, 20, "half", 1e4, "default", 4096, 4096),
    "GLM-4": (128, 64, "interleaved", 1e4, "default", 32768, 32768),
    "Phi-3.5-mini (LongRoPE)": (96, 96, "half", 1e4, "longrope", 4096, 131072),
    "Phi-4-mini (LongRoPE, partial)": (128, 96, "half", 1e4, "longrope", 4096, 131072),
    "Qwen2-VL (M-RoPE)": (128, 128, "half", 1e6, "default", 32768, 32768),
    "Qwen2.5-VL (M-RoPE)": (128, 128, "half", 1e6, "default", 128000, 128000),
    "Qwen3-VL (interleaved M-RoPE)": (128, 128, "half", 5e6, "default", 262144, 262144),
    "Qwen3.6 (partial, interleaved M-RoPE)": (256, 64, "half", 1e7, "default", 262144, 262144),
    "DeepSeek-V3 (YaRN, mscale)": (64, 64, "interleaved", 1e4, "yarn", 4096, 163840),
    "gpt-oss (YaRN, truncate false)": (64, 64, "half", 1.5e5, "yarn", 4096, 131072),
    "Qwen3-8B": (128, 128, "half", 1e6, "default", 40960, 40960),
    "Qwen3-30B-A3B (MoE)": (128, 128, "half", 1e6, "default", 40960, 40960),
    "SmolLM3-3B (NoPE layers)": (128, 128, "half", 5e6, "default", 65536, 65536),
    "DeepSeek-V2-Lite (MLA, YaRN)": (64, 64, "interleaved", 1e4, "yarn", 4096, 163840),
    "Ministral 3 (YaRN, llama_4_scaling_beta)": (128, 128, "half", 1e6, "yarn", 16384, 262144),
    "Llama 4 Scout (NoPE layers, temperature tuning)": (
        128,
        128,
        "interleaved",
        5e5,
        "llama3",
        8192,
        262144,
    ),
}
# entries read per layer type, checked by their own tests below
PER_LAYER_TYPE = {"Gemma 3", "Gemma 4 (per-layer head widths, proportional)"}


def test_every_released_config_has_a_source_and_a_row_here():
    entries = released_configs()
    assert {e["name"] for e in entries} == set(RELEASED) | PER_LAYER_TYPE
    for e in entries:
        assert e["model"].count("/") == 1 and e["source"], e["name"]


@pytest.mark.parametrize("name", list(RELEASED))
def test_released_specs(name):
    head, rotary, layout, base, rope_type, original, max_len = RELEASED[name]
    spec = rope_spec(released_config(name))
    got = (spec.head_dim, spec.rotary_dim, spec.layout, spec.base, spec.rope_type)
    assert got == (head, rotary, layout, base, rope_type)
    assert (spec.original_max_len, spec.max_len) == (original, max_len)
    assert spec.inv_freq.dtype == F64 and spec.inv_freq.shape == (rotary // 2,)


def test_released_gemma3_per_layer_type():
    config = released_config("Gemma 3")
    local = rope_spec(config, layer_type="sliding_attention")
    full = rope_spec(config, layer_type="full_attention")
    assert (local.rope_type, local.base, full.rope_type, full.base) == (
        "default",
        1e4,
        "linear",
        1e6,
    )
    torch.testing.assert_close(full.inv_freq, inv_freq(256, 1e6) / 8, rtol=1e-15, atol=0)
    assert torch.equal(local.inv_freq, inv_freq(256, 1e4))


def test_released_layers_without_rope_and_query_scales():
    """SmolLM3, Llama 4: every fourth layer has no RoPE; query scalings of Llama 4, Ministral 3.

    Llama 4 scales the queries of its layers without RoPE by 1 + 0.1 ln(1 + floor((t + 1) /
    8192)); Ministral 3 scales every query by 1 + 0.1 ln(1 + floor(t / 16384)).
    """
    smol = rope_spec(released_config("SmolLM3-3B (NoPE layers)"))
    assert smol.nope_layers == tuple(range(3, 36, 4)) and smol.nope_query_scale is None
    llama4 = rope_spec(
        released_config("Llama 4 Scout (NoPE layers, temperature tuning)"),
        layer_type="chunked_attention",
    )
    assert (llama4.layout, llama4.rope_type, llama4.factor) == ("interleaved", "llama3", 8.0)
    assert llama4.nope_layers == tuple(range(3, 48, 4))
    scale = llama4.nope_query_scale
    assert (scale.beta, scale.length, scale.shift) == (0.1, 8192, 1)
    assert scale.value(8190) == 1.0 and scale.value(8191) == pytest.approx(1 + 0.1 * math.log(2))
    ministral = rope_spec(released_config("Ministral 3 (YaRN, llama_4_scaling_beta)"))
    assert (ministral.query_scale.beta, ministral.query_scale.length) == (0.1, 16384)
    assert ministral.query_scale.value(16383) == 1.0
    assert ministral.query_scale.value(262143) == pytest.approx(1 + 0.1 * math.log(16))


def test_released_mla_and_per_layer_widths():
    """DeepSeek-V2-Lite's split MLA head; Gemma 4's per-layer-type widths.

    DeepSeek-V2-Lite: a 64-wide rope part after 128 coordinates without position, equal
    mscales (attention factor 1) and g(40, 0.707)^2 on the softmax scale. Gemma 4: 256-wide
    sliding heads, 512-wide global heads of which 'proportional' rotates 0.25 * 512 / 2 = 64
    pairs.
    """
    lite = rope_spec(released_config("DeepSeek-V2-Lite (MLA, YaRN)"))
    assert (lite.head_dim, lite.nope_dim, lite.output_layout) == (64, 128, "interleaved")
    assert lite.attention_factor == 1.0
    assert lite.softmax_scale_factor == pytest.approx((0.1 * 0.707 * math.log(40) + 1) ** 2)
    config = released_config("Gemma 4 (per-layer head widths, proportional)")
    local = rope_spec(config, layer_type="sliding_attention")
    full = rope_spec(config, layer_type="full_attention")
    assert (local.head_dim, full.head_dim) == (256, 512)
    assert int((full.inv_freq > 0).sum()) == 64 and full.inv_freq.numel() == 256
    torch.testing.assert_close(full.inv_freq[:64], inv_freq(512, 1e6)[:64], rtol=0, atol=0)


def test_released_special_cases():
    """Attention factors and orders with closed forms: Phi-3.5, gpt-oss, DeepSeek-V3, M-RoPE."""
    phi = rope_spec(released_config("Phi-3.5-mini (LongRoPE)"))
    assert phi.attention_factor == pytest.approx(math.sqrt(17 / 12), rel=1e-15)  # s 32, L 4096
    oss = rope_spec(released_config("gpt-oss (YaRN, truncate false)"))
    assert oss.attention_factor == pytest.approx(0.1 * math.log(32) + 1, rel=1e-15)
    deepseek = rope_spec(released_config("DeepSeek-V3 (YaRN, mscale)"))
    assert deepseek.attention_factor == 1.0  # equal mscales: g(s, 1) / g(s, 1)
    assert deepseek.output_layout == "half" and deepseek.layout == "interleaved"
    assert deepseek.softmax_scale_factor == pytest.approx((0.1 * math.log(40) + 1) ** 2)
    qwen2 = rope_spec(released_config("Qwen2-VL (M-RoPE)"))
    assert (qwen2.mrope_section, qwen2.mrope_interleaved) == ((16, 24, 24), False)
    qwen3 = rope_spec(released_config("Qwen3-VL (interleaved M-RoPE)"))
    assert (qwen3.mrope_section, qwen3.mrope_interleaved) == ((24, 20, 20), True)


# --- both config forms ------------------------------------------------------------------------


def to_rope_parameters(config: dict) -> dict:
    """The transformers >= 5 form of an older config, written out by hand."""
    config = copy.deepcopy(config)
    if "text_config" in config:
        config["text_config"] = to_rope_parameters(config["text_config"])
        return config
    if "rope_parameters" in config:  # already the new form
        return config
    rope = dict(config.pop("rope_scaling", None) or {"rope_type": "default"})
    if "type" in rope:
        rope["rope_type"] = {"su": "longrope", "mrope": "default"}.get(rope["type"], rope["type"])
        del rope["type"]
    theta = config.pop("rope_theta", None)
    theta = config.pop("rotary_emb_base", theta)
    if "rope_local_base_freq" in config:  # Gemma 3: one dict per layer type
        local = config.pop("rope_local_base_freq")
        config["rope_parameters"] = {
            "full_attention": {**rope, "rope_theta": theta},
            "sliding_attention": {"rope_type": "default", "rope_theta": local},
        }
        return config
    if theta is not None:
        rope["rope_theta"] = theta
    partial = config.pop("partial_rotary_factor", None)
    partial = config.pop("rotary_pct", partial)
    if partial is not None:
        rope["partial_rotary_factor"] = partial
    if "original_max_position_embeddings" in config:
        rope["original_max_position_embeddings"] = config.pop("original_max_position_embeddings")
    config["rope_parameters"] = rope
    return config


def same_spec(a: RopeSpec, b: RopeSpec) -> None:
    for name in ("head_dim", "rotary_dim", "layout", "output_layout", "base", "rope_type",
                 "attention_factor", "original_max_len", "max_len", "mrope_section",
                 "mrope_interleaved", "scaling", "softmax_scale_factor"):  # fmt: skip
        assert getattr(a, name) == getattr(b, name), name
    assert torch.equal(a.inv_freq, b.inv_freq)


@pytest.mark.parametrize("entry", released_configs(), ids=lambda e: e["name"])
def test_both_config_forms_give_the_same_spec(entry):
    for layer_type in entry.get("layer_types", [None]):
        legacy = rope_spec(entry["config"], layer_type=layer_type)
        new = rope_spec(to_rope_parameters(entry["config"]), layer_type=layer_type)
        same_spec(legacy, new)


@given(
    st.integers(1, 128).map(lambda h: 2 * h),
    st.sampled_from([0.25, 0.4, 0.5, 0.75, 1.0]) | st.floats(0.05, 1.0),
    bases.filter(lambda b: b <= 1e7),
)
@example(80, 0.4, 10000.0)
@example(128, 0.25, 10000.0)
def test_rotary_width_and_frequencies_follow_hf(head_dim, partial, base):
    """rotary_dim = int(head_dim * partial_rotary_factor); omega_i = base^(-2i / rotary_dim).

    An odd width w is HF's too: the frequencies base^(-2i / w) for i < ceil(w / 2), one pair
    each, so the rotated part is w + 1 wide (transformers' validate_rope rounds it up).
    """
    config = {
        "model_type": "gpt_neox",
        "head_dim": head_dim,
        "rope_theta": base,
        "partial_rotary_factor": partial,
    }
    width = int(head_dim * partial)
    if width < 2 or width + width % 2 > head_dim:
        with pytest.raises(ValueError, match="partial_rotary_factor"):
            rope_spec(config)
        return
    spec = rope_spec(config)
    assert (spec.head_dim, spec.rotary_dim) == (head_dim, width + width % 2)
    expected = [math.pow(base, -2 * i / width) for i in range((width + 1) // 2)]
    torch.testing.assert_close(spec.inv_freq, torch.tensor(expected, dtype=F64), rtol=1e-13, atol=0)


def test_family_defaults_fill_absent_keys():
    """Absent keys take the config class's defaults: Phi 0.5, GPT-NeoX 0.25, Qwen2-VL 1e6, ..."""
    assert rope_spec({"model_type": "phi", "head_dim": 64}).rotary_dim == 32
    assert rope_spec({"model_type": "gpt_neox", "head_dim": 64}).rotary_dim == 16
    assert rope_spec({"model_type": "qwen2_vl", "head_dim": 128}).base == 1e6
    assert rope_spec({"model_type": "qwen3_vl"}).mrope_section == (24, 20, 20)
    assert rope_spec({"model_type": "llama", "head_dim": 64}).base == 1e4
    spec = rope_spec({"model_type": "deepseek_v3", "rope_interleave": False})
    assert (spec.head_dim, spec.layout, spec.output_layout) == (64, "half", "half")


def test_unknown_family_needs_a_layout():
    config = {"model_type": "my_model", "head_dim": 32, "rope_theta": 1e4}
    with pytest.raises(ValueError, match="my_model.*layout="):
        rope_spec(config)
    assert rope_spec(config, layout="interleaved").layout == "interleaved"


def test_every_family_says_where_its_layout_comes_from():
    from posenc_ref.models.families import REMOTE, SERVED

    for name, family in FAMILIES.items():
        if name in REMOTE:  # remote code: the repository, then the file in it
            owner_repo, path = family.source.split(" ", 2)[:2]
            assert owner_repo.count("/") == 1 and ".py" in path, name
        elif name in SERVED:  # vLLM's model file, or the model's own (repository@commit path)
            first, path = family.source.split(" ", 2)[:2]
            vllm = first == "vLLM" and path.startswith("0.")
            assert vllm or ("@" in first and first.count("/") == 1 and ".py" in path), name
        else:
            assert family.source.startswith("modeling_"), name


def test_frequencies_of_length_dependent_types():
    phi = rope_spec(released_config("Phi-4-mini (LongRoPE, partial)"))
    short = phi.frequencies(4096)
    long = phi.frequencies(4097)
    assert torch.equal(short.inv_freq, phi.inv_freq)
    expected = longrope(
        96,
        short_factor=[1.0] * 48,
        long_factor=released_config("Phi-4-mini (LongRoPE, partial)")["rope_scaling"][
            "long_factor"
        ],
        original_max_len=4096,
        seq_len=4097,
        max_len=131072,
    )
    assert torch.equal(long.inv_freq, expected.inv_freq)
    assert long.attention_factor == short.attention_factor == phi.attention_factor
    config = {"model_type": "llama", "head_dim": 32, "max_position_embeddings": 1024,
              "rope_scaling": {"type": "dynamic", "factor": 2.0}}  # fmt: skip
    dyn = rope_spec(config)
    assert dyn.original_max_len == 1024 and torch.equal(
        dyn.frequencies(1024).inv_freq, inv_freq(32)
    )
    grown = dynamic_ntk(32, factor=2.0, seq_len=3000, original_max_len=1024)
    assert torch.equal(dyn.frequencies(3000).inv_freq, grown.inv_freq)


def test_yarn_attention_factor_rules():
    """Explicit attention_factor is final; both mscales give a ratio; else 0.1 ln s + 1."""
    base = {"model_type": "llama", "head_dim": 64, "max_position_embeddings": 8192}

    def spec(**rope):
        rope = {
            "rope_type": "yarn",
            "factor": 4.0,
            "original_max_position_embeddings": 2048,
            **rope,
        }
        return rope_spec({**base, "rope_scaling": rope})

    assert spec().attention_factor == yarn_mscale(4.0)
    assert spec(attention_factor=1.5).attention_factor == 1.5
    assert spec(mscale=0.707, mscale_all_dim=1.0).attention_factor == pytest.approx(
        yarn_mscale(4.0, 0.707) / yarn_mscale(4.0, 1.0)
    )
    assert spec(mscale=1.0).attention_factor == yarn_mscale(4.0)  # one mscale alone is unused
    no_factor = rope_spec(
        {**base, "rope_scaling": {"rope_type": "yarn", "original_max_position_embeddings": 2048}}
    )
    assert no_factor.attention_factor == yarn_mscale(4.0)  # s = 8192 / 2048


# --- errors: nothing is ignored ---------------------------------------------------------------

LLAMA = {"model_type": "llama", "head_dim": 64, "max_position_embeddings": 4096}


@pytest.mark.parametrize(
    "config, kwargs, error, match",
    [
        ({**LLAMA, "rope_scaling": {"type": "linear", "factor": 2.0, "betta": 1}}, {},
         ValueError, "betta"),
        ({**LLAMA, "rope_scaling": {"rope_type": "linear", "factor": 2.0, "beta_fast": 32}}, {},
         ValueError, "beta_fast"),
        ({**LLAMA, "rope_theta": 1e4, "rope_parameters": {"rope_theta": 5e5}}, {},
         ValueError, "rope_theta"),
        ({**LLAMA, "rope_scaling": {"type": "linear", "factor": 2.0},
          "rope_parameters": {"rope_type": "linear", "factor": 4.0}}, {},
         ValueError, "rope_parameters.*rope_scaling"),
        ({**LLAMA, "rope_scaling": {"type": "linear", "rope_type": "yarn", "factor": 2.0}}, {},
         ValueError, "rope_type"),
        ({"model_type": "gpt_neox", "head_dim": 64, "rotary_pct": 0.25,
          "partial_rotary_factor": 0.5}, {}, ValueError, "partial_rotary_factor"),
        ({**LLAMA, "rotary_pct": 0.25}, {}, ValueError, "rotary_pct"),
        ({**LLAMA, "rope_interleave": True}, {}, ValueError, "rope_interleave"),
        ({**LLAMA, "rope_scaling": {"rope_type": "axial"}}, {}, NotImplementedError, "axial"),
        ({**LLAMA, "rope_scaling": {"rope_type": "ntk"}}, {}, ValueError, "unknown rope_type"),
        ({"model_type": "my_model", "head_dim": 64}, {}, ValueError, "layout="),
        ({"model_type": "mamba"}, {}, ValueError, "uses no RoPE"),
        ({"model_type": "glm4", "head_dim": 64}, {"layout": "half"}, ValueError, "interleaved"),
        ({"model_type": "orion"}, {}, ValueError, "head_dim"),  # a remote family: no class
        ({"model_type": "llama", "hidden_size": 100, "num_attention_heads": 3}, {},
         ValueError, "hidden_size"),
        ({**LLAMA, "partial_rotary_factor": 0.01}, {}, ValueError, "partial_rotary_factor"),
        ({**LLAMA, "partial_rotary_factor": 0.3,
          "rope_scaling": {"rope_type": "linear", "factor": 2.0}}, {}, NotImplementedError,
         "odd rotary width"),
        ({**LLAMA, "partial_rotary_factor": 1.5}, {}, ValueError, "partial_rotary_factor"),
        ({**LLAMA, "rope_theta": 1.0}, {}, ValueError, "rope_theta"),
        ({**LLAMA, "rope_theta": "1e4"}, {}, TypeError, "rope_theta"),
        ({**LLAMA, "rope_scaling": {"rope_type": "linear"}}, {}, ValueError, "'factor'"),
        ({**LLAMA, "rope_scaling": {"rope_type": "yarn", "factor": 4.0,
                                    "original_max_position_embeddings": 2048}}, {},
         ValueError, "inconsistent factor"),
        ({**LLAMA, "original_max_position_embeddings": 1024,
          "rope_scaling": {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0,
                           "high_freq_factor": 4.0, "original_max_position_embeddings": 2048}}, {},
         ValueError, "original_max_position_embeddings"),
        ({"model_type": "phi3", "head_dim": 8, "max_position_embeddings": 64,
          "original_max_position_embeddings": 16,
          "rope_scaling": {"type": "su", "short_factor": [1.0] * 3, "long_factor": [1.0] * 4}},
         {}, ValueError, "short_factor"),
        ({"model_type": "qwen2_vl", "head_dim": 64,
          "rope_scaling": {"type": "mrope", "mrope_section": [16, 24, 24]}}, {},
         ValueError, "mrope_section"),
        ({"model_type": "qwen2_vl", "head_dim": 128,
          "rope_scaling": {"mrope_section": [16, 24, 24], "mrope_interleaved": True}}, {},
         ValueError, "mrope_interleaved"),
        ({**LLAMA, "rope_scaling": {"rope_type": "default", "mrope_section": [8, 12, 12]}}, {},
         ValueError, "M-RoPE"),
        (released_config("Gemma 3"), {}, ValueError, "layer_type="),
        (released_config("Gemma 3"), {"layer_type": "chunked_attention"}, ValueError,
         "chunked_attention"),
        ({**LLAMA, "layer_types": ["full_attention"]}, {"layer_type": "sliding_attention"},
         ValueError, "sliding_attention"),
        ({"model_type": "gemma3_text", "head_dim": 32,
          "rope_parameters": {"full_attention": None,
                              "sliding_attention": {"rope_type": "default"}}},
         {"layer_type": "full_attention"}, ValueError, "no RoPE"),
        ([("model_type", "llama")], {}, TypeError, "config"),
    ],
)  # fmt: skip
def test_bad_config(config, kwargs, error, match):
    with pytest.raises(error, match=match):
        rope_spec(config, **kwargs)


# --- the module built from a config -----------------------------------------------------------


def pure_rotation(spec: RopeSpec, x: torch.Tensor, positions: torch.Tensor) -> torch.Tensor:
    """apply_rope on the spec's tables, computed for this call's length (the definition)."""
    length = int(positions.max()) + 1
    freqs = spec.frequencies(length)
    if spec.mrope_section is not None:
        if positions.dim() == 1:
            positions = positions.expand(3, -1)
        cos, sin = mrope_cos_sin(
            positions, freqs.inv_freq, spec.mrope_section, interleaved=spec.mrope_interleaved,
            attention_factor=freqs.attention_factor, dtype=x.dtype,
        )  # fmt: skip
    else:
        cos, sin = rope_cos_sin(
            positions, freqs.inv_freq, attention_factor=freqs.attention_factor, dtype=x.dtype
        )
    y = apply_rope(x, cos, sin, layout=spec.layout, rotary_dim=spec.rotary_dim)
    if spec.output_layout != spec.layout:  # DeepSeek-V3
        r = spec.rotary_dim
        y = torch.cat([to_half_layout(y[..., :r]), y[..., r:]], dim=-1)
    return y


@pytest.mark.parametrize("entry", released_configs(), ids=lambda e: e["name"])
@pytest.mark.parametrize("start", [0, 3000, 150000])
def test_from_hf_config_equals_the_pure_functions(entry, start):
    """The module (its cache, its per-call frequencies) equals apply_rope on the spec's tables."""
    for layer_type in entry.get("layer_types", [None]):
        rope = RotaryEmbedding.from_hf_config(entry["config"], layer_type=layer_type, max_len=64)
        spec = rope.spec
        gen = torch.Generator().manual_seed(start)
        if spec.mrope_section is not None:
            positions = mrope_positions(3, (1, 3, 4), 2, start=start)
        else:
            positions = torch.arange(start, start + 17)
        seq = positions.shape[-1]
        q = torch.randn(2, 3, seq, spec.head_dim, dtype=F64, generator=gen)
        k = torch.randn(2, 1, seq, spec.head_dim, dtype=F64, generator=gen)
        q_rot, k_rot = rope(q, k, positions)
        expected_q = pure_rotation(spec, q, positions)
        if spec.query_scale is not None:  # Ministral 3: sigma(t) on the queries only
            expected_q = expected_q * spec.query_scale(positions)[:, None]
        torch.testing.assert_close(q_rot, expected_q, rtol=0, atol=1e-12)
        torch.testing.assert_close(k_rot, pure_rotation(spec, k, positions), rtol=0, atol=1e-12)


def test_longrope_module_switches_per_call():
    """Calls within the original context use the short list, longer calls the long list."""
    config = released_config("Phi-3.5-mini (LongRoPE)")
    rope = RotaryEmbedding.from_hf_config(config)
    spec = rope.spec
    x = torch.randn(1, 1, 2, 96, dtype=F64)
    inside, past = torch.tensor([4000, 4095]), torch.tensor([4000, 4096])
    # the same position 4000 is rotated differently depending on the call's length
    a = rope(x, x, inside)[0][..., 0, :]
    b = rope(x, x, past)[0][..., 0, :]
    short, long = spec.frequencies(4096), spec.frequencies(4097)
    for got, freqs in ((a, short), (b, long)):
        cos, sin = rope_cos_sin(
            torch.tensor([4000]), freqs.inv_freq, attention_factor=freqs.attention_factor, dtype=F64
        )
        torch.testing.assert_close(
            got, apply_rope(x[..., :1, :], cos, sin, layout="half")[..., 0, :]
        )
    assert not torch.allclose(a, b)
    # stateless: after a long call, a short one is back on the short list
    torch.testing.assert_close(rope(x, x, inside)[0][..., 0, :], a, rtol=0, atol=0)


@given(seeds, st.integers(0, 1 << 14), st.integers(0, 1 << 14), st.integers(1, 1 << 12))
def test_output_layout_keeps_every_score(seed, m, n, shift):
    """DeepSeek-V3's write-back order permutes q and k alike: every score is unchanged.

    The score q . k stays the plain interleaved one, so it still depends on m - n only.
    """
    gen = torch.Generator().manual_seed(seed)
    q, k = torch.randn(2, 1, 1, 64, dtype=F64, generator=gen)
    plain = RotaryEmbedding(64, layout="interleaved")
    reordered = RotaryEmbedding(64, layout="interleaved", output_layout="half")

    def score(rope, m, n):
        qr = rope(q, q, torch.tensor([m]))[0]
        kr = rope(k, k, torch.tensor([n]))[1]
        return float((qr * kr).sum())

    assert score(reordered, m, n) == pytest.approx(score(plain, m, n), abs=1e-10)
    assert score(reordered, m + shift, n + shift) == pytest.approx(score(plain, m, n), abs=1e-9)
    qr = reordered(q, q, torch.tensor([m]))[0]
    assert torch.equal(qr, to_half_layout(plain(q, q, torch.tensor([m]))[0]))


# --- partial rotary: the claims of the site ---------------------------------------------------


@given(
    st.integers(1, 16).map(lambda h: 2 * h),
    st.integers(1, 8),
    layouts,
    bases,
    seeds,
    st.integers(0, 1 << 16),
    st.integers(0, 1 << 16),
    st.integers(0, 1 << 16),
)
@example(16, 2, "half", 10000.0, 0, 0, 5, 1000)
def test_partial_rotary_score_splits(rotary_pairs, extra_pairs, layout, base, seed, m, n, shift):
    """Score = (rotated part: a function of m - n) + (pass-through part: q_p . k_p, constant).

    So the relative property survives partial rotary, and the pass-through term does not decay.
    """
    rotary_dim = 2 * rotary_pairs
    head_dim = rotary_dim + 2 * extra_pairs
    gen = torch.Generator().manual_seed(seed)
    q, k = torch.randn(2, 1, head_dim, dtype=F64, generator=gen)
    rope = RotaryEmbedding(head_dim, base=base, layout=layout, rotary_dim=rotary_dim)

    def score(m, n):
        qr = rope(q[None], q[None], torch.tensor([m]))[0][0]
        kr = rope(k[None], k[None], torch.tensor([n]))[0][0]
        return qr @ kr.T

    passed = float(q[0, rotary_dim:] @ k[0, rotary_dim:])
    total = float(score(m, n))
    shifted = float(score(m + shift, n + shift))
    assert shifted == pytest.approx(total, abs=1e-9 * (1 + float(q.norm() * k.norm())))
    # the rotated part alone, from the full-width formula on the first rotary_dim coordinates
    cos, sin = rope_cos_sin(torch.tensor([m - n]) if m >= n else torch.tensor([n - m]),
                            inv_freq(rotary_dim, base), dtype=F64)  # fmt: skip
    sign = 1.0 if m >= n else -1.0
    qr = apply_rope(q[:, :rotary_dim], cos, sign * sin, layout=layout)
    rotated = float(qr @ k[:, :rotary_dim].T)
    assert total == pytest.approx(rotated + passed, abs=1e-9 * (1 + float(q.norm() * k.norm())))


# --- bad input to the new module arguments ----------------------------------------------------


@pytest.mark.parametrize(
    "call, error, match",
    [
        (lambda: RotaryEmbedding(16, mrope_section=[2, 2, 2]), ValueError, "mrope_section"),
        (lambda: RotaryEmbedding(16, mrope_interleaved=True), ValueError, "mrope_section"),
        (lambda: RotaryEmbedding(16, output_layout="halves"), ValueError, "layout"),
        (
            lambda: RotaryEmbedding(16, mrope_section=[4, 2, 2])(
                torch.zeros(1, 2, 5, 16),
                torch.zeros(1, 2, 5, 16),
                torch.zeros(2, 5, dtype=torch.long),
            ),
            ValueError,
            r"\(3, \.\.\., seq_len\)",
        ),
        (
            lambda: RotaryEmbedding.from_hf_config({"model_type": "glm4"}, layout="half"),
            ValueError,
            "interleaved",
        ),  # fmt: skip
    ],
)
def test_bad_module_input(call, error, match):
    with pytest.raises(error, match=match):
        call()


@given(
    st.sampled_from([((16, 24, 24), False), ((24, 20, 20), True), ((2, 1, 1), False)]),
    seeds,
    st.integers(0, 30),
    st.tuples(st.integers(1, 2), st.integers(1, 5), st.integers(1, 5)),
    st.integers(0, 5000),
)
def test_mrope_module_equals_functions(mode, seed, before, grid, start):
    """The module's gather from its 1-D table equals mrope_cos_sin, bit for bit, as it grows."""
    section, interleaved = mode
    pairs = sum(section)
    rope = RotaryEmbedding(
        2 * pairs, layout="half", mrope_section=section, mrope_interleaved=interleaved, max_len=8
    )
    positions = mrope_positions(before, grid, 3, start=start)
    gen = torch.Generator().manual_seed(seed)
    x = torch.randn(1, 2, positions.shape[1], 2 * pairs, generator=gen)
    got = rope(x, x, positions)[0]
    cos, sin = mrope_cos_sin(positions, inv_freq(2 * pairs), section, interleaved=interleaved)
    assert torch.equal(got, apply_rope(x, cos, sin, layout="half"))
    text = torch.arange(start, start + 7)
    y = torch.randn(1, 2, 7, 2 * pairs, generator=gen)
    plain = RotaryEmbedding(2 * pairs, layout="half")
    assert torch.equal(rope(y, y, text)[0], plain(y, y, text)[0])
    assert torch.equal(rope(y, y, text.expand(3, -1))[0], plain(y, y, text)[0])


@given(
    st.integers(1, 32).map(lambda h: 2 * h),
    st.integers(1, 16),
    bases,
    seeds,
    st.integers(-(1 << 16), 1 << 16),
)
@example(32, 24, 10000.0, 0, 0)
def test_partial_rotary_decay_bound_covers_only_the_rotated_part(
    rotary_dim, extra_pairs, base, seed, distance
):
    """RoFormer's decay bound holds for the rotated part, with N = rotary_dim / 2 pairs.

    |score - q_p . k_p| <= max_j |h_j - h_{j-1}| * sum_{j <= N} |S_j|; the pass-through part is
    outside the bound and keeps its value at every distance.
    """
    head_dim = rotary_dim + 2 * extra_pairs
    gen = torch.Generator().manual_seed(seed)
    q, k = torch.randn(2, 1, head_dim, dtype=F64, generator=gen)
    rope = RotaryEmbedding(head_dim, base=base, layout="interleaved", rotary_dim=rotary_dim)
    m, n = max(distance, 0), max(-distance, 0)
    qr = rope(q[None], q[None], torch.tensor([m]))[0][0, 0]
    kr = rope(k[None], k[None], torch.tensor([n]))[0][0, 0]
    passed = float(q[0, rotary_dim:] @ k[0, rotary_dim:])
    rotated = float(qr @ kr) - passed
    h = (
        torch.complex(q[0, 0:rotary_dim:2], q[0, 1:rotary_dim:2])
        * torch.complex(k[0, 0:rotary_dim:2], k[0, 1:rotary_dim:2]).conj()
    )  # h_i = q^(i) conj(k^(i)), i < r / 2
    h = torch.cat([h, torch.zeros(1, dtype=h.dtype)])  # h_N = 0
    phasors = torch.exp(1j * (m - n) * inv_freq(rotary_dim, base))
    partial_sums = torch.cumsum(phasors, 0).abs()  # |S_1| .. |S_N|
    bound = float((h[1:] - h[:-1]).abs().max() * partial_sums.sum())
    assert abs(rotated) <= bound * (1 + 1e-12) + 1e-12


# --- the position-dependent query scaling (models.md#models-query-scale) -----------------------


@given(st.floats(0.01, 2.0), st.integers(1, 1 << 16), st.sampled_from([0, 1]),
       st.integers(0, 1 << 40))  # fmt: skip
@example(0.1, 8192, 1, 8191)
@example(0.1, 16384, 0, 16384)
def test_query_scale_is_the_staircase_of_the_page(beta, length, shift, t):
    """sigma(t) = 1 + beta ln(1 + floor((t + c) / T)), as the page derives it.

    1 inside the first step, nondecreasing, the tensor form equals the Python form, and
    1 + beta ln(t / T) far out.
    """
    from posenc_ref.models import QueryScale

    scale = QueryScale(beta, length, shift)
    steps = (t + shift) // length
    assert scale.value(t) == pytest.approx(1 + beta * math.log1p(steps), rel=1e-12)
    assert float(scale(torch.tensor([t]))[0]) == pytest.approx(scale.value(t), rel=1e-12)
    if t + shift < length:
        assert scale.value(t) == 1.0
    assert scale.value(t + length) >= scale.value(t)
    if steps >= 1000:
        far = 1 + beta * math.log((t + shift) / length)
        assert abs(scale.value(t) - far) <= 2 * beta / steps


@given(st.floats(0.01, 2.0), st.integers(1, 1 << 16), st.sampled_from([0, 1]),
       st.integers(0, 1 << 40))  # fmt: skip
@example(0.1, 2048, 1, 2047)
def test_query_scale_power_form_is_the_page_formula(beta, length, shift, t):
    """sigma(t) = (1 + (t + c) / T) ** beta, as the page writes it.

    Increasing from the first position (no flat stretch), the tensor form equals the Python form,
    and ln sigma ~ beta ln(t / T) far out.
    """
    from posenc_ref.models import QueryScale

    scale = QueryScale(beta, length, shift, form="power")
    assert scale.value(t) == pytest.approx((1 + (t + shift) / length) ** beta, rel=1e-12)
    assert float(scale(torch.tensor([t]))[0]) == pytest.approx(scale.value(t), rel=1e-12)
    assert scale.value(t + 1) > scale.value(t) > 1.0 or (t + shift == 0 and scale.value(t) == 1)
    if t + shift >= 1000 * length:
        assert abs(math.log(scale.value(t)) - beta * math.log((t + shift) / length)) <= (
            beta * 1.001 * length / (t + shift) + 1e-12  # float64's rounding of ln(...)
        )


def test_query_scale_form_is_checked():
    from posenc_ref.models import QueryScale

    with pytest.raises(ValueError, match=r"form must be one of \('floor', 'power'\), got 'exp'"):
        QueryScale(0.1, 2048, 1, form="exp")


def test_module_query_scale_multiplies_queries_only():
    """RotaryEmbedding(query_scale=sigma): q -> sigma(t) R_t q, k -> R_t k, offsets included."""
    from posenc_ref.models import QueryScale

    scale = QueryScale(0.1, 16, 0)
    scaled = RotaryEmbedding(8, layout="half", query_scale=scale)
    plain = RotaryEmbedding(8, layout="half")
    gen = torch.Generator().manual_seed(0)
    q, k = torch.randn(2, 1, 2, 5, 8, dtype=F64, generator=gen)
    for kwargs in ({"positions": torch.tensor([0, 15, 16, 47, 1000])}, {"offset": 30}):
        q_s, k_s = scaled(q, k, **kwargs)
        q_p, k_p = plain(q, k, **kwargs)
        where = kwargs.get("positions", torch.arange(30, 35))
        torch.testing.assert_close(q_s, q_p * scale(where)[:, None], rtol=1e-15, atol=0)
        assert torch.equal(k_s, k_p)
    with pytest.raises(TypeError, match="query_scale"):
        RotaryEmbedding(8, query_scale=0.1)
    with pytest.raises(ValueError, match="M-RoPE"):
        RotaryEmbedding(8, mrope_section=[2, 1, 1], query_scale=scale)


def test_layer_specs_lists_every_layer():
    """One entry per layer, None where the layer has no RoPE, one spec object per layer type."""
    from posenc_ref.models import layer_specs

    config = released_config("Gemma 3")
    config["text_config"].update(
        num_hidden_layers=6, layer_types=["sliding_attention"] * 5 + ["full_attention"]
    )
    gemma = layer_specs(config)
    assert [s.layer_type for s in gemma] == ["sliding_attention"] * 5 + ["full_attention"]
    assert gemma[0] is gemma[4] and gemma[0] is not gemma[5]
    smol = layer_specs(released_config("SmolLM3-3B (NoPE layers)"))
    assert [s is None for s in smol] == [False, False, False, True] * 9
    # no layer count: LlamaConfig's default, 32; a family without a config class: one entry
    assert len(layer_specs({"model_type": "llama", "head_dim": 64})) == 32
    assert len(layer_specs({"model_type": "my_model", "head_dim": 64}, layout="half")) == 1


def test_layer_specs_copies_a_config_object_once():
    """A config object's ``to_dict()`` is called once, however many layer types are read.

    (transformers' is a deep copy of the whole config: seconds for a quantized model's.) The
    specs are those of its dict.
    """
    from posenc_ref.models import layer_specs

    class ConfigObject:  # what posenc_ref uses of a transformers PreTrainedConfig
        calls = 0

        def to_dict(self):
            ConfigObject.calls += 1
            return copy.deepcopy(config)

    config = released_config("Gemma 3")
    config["text_config"].update(
        num_hidden_layers=6, layer_types=["sliding_attention"] * 5 + ["full_attention"]
    )
    import dataclasses

    def fields(spec):  # a spec's fields, tensors as lists (a tensor's == is elementwise)
        return [
            v.tolist() if isinstance(v, torch.Tensor) else v
            for v in (getattr(spec, f.name) for f in dataclasses.fields(spec))
        ]

    from_object = layer_specs(ConfigObject())
    assert ConfigObject.calls == 1
    assert [fields(s) for s in from_object] == [fields(s) for s in layer_specs(config)]


# --- the reader's structure: named steps, each module once, in order ---------------------------

# The modules of posenc_ref.models that rope_spec's steps live in, in the order it calls them.
READER_STEPS = (
    "posenc_ref.models._language",
    "posenc_ref.models.families",
    "posenc_ref.models.family",
    "posenc_ref.models._rope_dict",
    "posenc_ref.models._shape",
    "posenc_ref.models.rope_types",
    "posenc_ref.models._layers",
    "posenc_ref.models.spec",
    "posenc_ref.models.sparse",
    "posenc_ref.models._unread",
    "posenc_ref.models._learned",
)
# Step modules no other step calls into: each is entered once, from rope_spec. (The value helpers
# of _config, the row's methods in family.py and the traits are what every step asks.)
OWN_STEPS = frozenset(READER_STEPS) - {
    "posenc_ref.models._config",
    "posenc_ref.models.family",
    "posenc_ref.models.spec",
}


def reader_trace(config, **kwargs):
    """``(modules rope_spec calls, in order, repeats merged; calls from one step into another)``."""
    import sys

    from posenc_ref.models import read_rope

    def module(frame):
        return frame.f_globals.get("__name__", "")

    def reader_frame(frame):  # the nearest caller in posenc_ref.models (skipping stdlib, core)
        while frame is not None and not module(frame).startswith("posenc_ref.models"):
            frame = frame.f_back
        return frame

    steps, crossings = [], []

    def profile(frame, event, arg):
        if event != "call":
            return
        callee = module(frame)
        if frame.f_back is not None and frame.f_back.f_code is read_rope.rope_spec.__code__:
            if not steps or steps[-1] != callee:
                steps.append(callee)
            return
        caller = reader_frame(frame.f_back)
        if caller is None or caller.f_code is read_rope.rope_spec.__code__:
            return
        if callee in OWN_STEPS and module(caller) != callee:
            crossings.append(f"{module(caller)}.{caller.f_code.co_name} -> {callee}")

    sys.setprofile(profile)
    try:
        spec = rope_spec(config, **kwargs)
    finally:
        sys.setprofile(None)
    return spec, steps, crossings


@pytest.mark.parametrize(
    "name, layer_type",
    [
        ("Llama 3.1", None),
        ("DeepSeek-V3 (YaRN, mscale)", None),
        ("Qwen3.6 (partial, interleaved M-RoPE)", None),
        ("Gemma 3", "sliding_attention"),
        ("Phi-4-mini (LongRoPE, partial)", None),
        ("Llama 4 Scout (NoPE layers, temperature tuning)", None),
        ("Ministral 3 (YaRN, llama_4_scaling_beta)", None),
        ("Gemma 4 (per-layer head widths, proportional)", "full_attention"),
    ],
)
def test_a_config_passes_through_the_reader_once_in_order(name, layer_type):
    """rope_spec is its steps, each in its module: one pass, in order, no step calling another.

    Every call rope_spec makes lands in the next module of READER_STEPS (never one it has left),
    and below it no step module calls into another one: the steps ask the row and its traits
    and the value helpers, never each other.
    """
    config = released_config(name)
    spec, steps, crossings = reader_trace(config, layer_type=layer_type)
    assert spec.model_type is not None
    assert steps == list(READER_STEPS)
    assert crossings == []


def test_a_conventional_family_is_one_line():
    """Every row of conventional.py is one line of its file: adding one is adding a line."""
    import inspect

    from posenc_ref.models.families import conventional

    lines = inspect.getsource(conventional).splitlines()
    for name in conventional.ROWS:
        found = [line for line in lines if line.lstrip().startswith(f'"{name}": dict(')]
        assert len(found) == 1 and found[0].rstrip().endswith("),"), name


def test_the_family_table_is_one_table_of_disjoint_files():
    """The files' rows are merged into FAMILIES; a model_type in two files is refused."""
    from posenc_ref.encodings import ENCODING_FAMILIES
    from posenc_ref.models import NO_ROPE, NOT_IMPLEMENTED, Family
    from posenc_ref.models.families import (
        COMPRESSED,
        CONFIG_CLASSES,
        CONVENTIONAL,
        EXCEPTIONS,
        MEDIA,
        MLA_VARIANTS,
        NOT_IMPLEMENTED_ROWS,
        REMOTE,
        SERVED,
        WITHOUT_ROPE,
        merged,
    )
    from posenc_ref.models.traits import Clockwise

    files = (CONVENTIONAL, EXCEPTIONS, MLA_VARIANTS, CONFIG_CLASSES, COMPRESSED, REMOTE,
             NOT_IMPLEMENTED_ROWS, WITHOUT_ROPE, MEDIA, SERVED)  # fmt: skip
    assert sum(len(rows) for rows in files) == len(FAMILIES)
    assert all(FAMILIES[name] is row for rows in files for name, row in rows.items())
    with pytest.raises(ValueError, match=r"\['llama'\] have rows in two files"):
        merged(CONVENTIONAL, {"llama": Family()})
    with pytest.raises(ValueError, match="at most one of each kind"):
        Family(traits=(Clockwise(), Clockwise()))
    # the views are views: every name in them is a row
    assert set(NO_ROPE) | set(NOT_IMPLEMENTED) | set(ENCODING_FAMILIES) <= set(FAMILIES)
    # remote-code and served families refused for a feature keep their row beside the others
    assert set(NOT_IMPLEMENTED) - set(REMOTE) - set(SERVED) == set(NOT_IMPLEMENTED_ROWS)
