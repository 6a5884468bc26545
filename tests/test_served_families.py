"""Families vLLM serves that transformers does not define: each row against its code's facts.

transformers cannot run these models, so each family's rotation is written here from the facts
its rows cite (vLLM's model file, and the model's own modeling code where a public repository has
it: ``posenc_ref/models/families/served.py``), and ``RotaryEmbedding.from_hf_config`` on a
released-style config must agree with it to float64 rounding. A row whose code reads a feature
posenc_ref lacks is refused naming it. Table-driven and cheap: no model is built.
"""

import math

import pytest
import torch

from posenc_ref import RotaryEmbedding
from posenc_ref.encodings import positional_encoding
from posenc_ref.models import NoRopeError, layer_specs, rope_spec
from tests.test_remote_families import interleaved_oracle, rotate_half_oracle

# (9000 is past the module's 4096-row table: the rotation is then computed in the input's float64,
# as tests/test_remote_families.py compares)
POSITIONS = torch.tensor([0, 1, 7, 2047, 2048, 9000])


def rotated(config, head_dim, **kwargs):
    """The module's rotation of random queries at POSITIONS, in float64."""
    module = RotaryEmbedding.from_hf_config(config, **kwargs).to(torch.float64)
    generator = torch.Generator().manual_seed(0)
    q = torch.randn(2, len(POSITIONS), head_dim, dtype=torch.float64, generator=generator)
    out, _ = module(q, q, positions=POSITIONS)
    return q, out


LLAMA_7B = {"hidden_size": 4096, "num_attention_heads": 32, "num_hidden_layers": 32,
            "max_position_embeddings": 4096}  # fmt: skip

# (config, head width, rotated width, layout, base): the facts each row cites
PLAIN = {
    # Qwen-72B-Chat: rotary_emb_base (both names given, equal), rotary_pct 1, kv_channels 128
    "qwen": ({"model_type": "qwen", "architectures": ["QWenLMHeadModel"], "hidden_size": 8192,
              "num_attention_heads": 64, "kv_channels": 128, "rotary_emb_base": 1000000,
              "rope_theta": 1000000, "rotary_pct": 1.0, "seq_length": 32768,
              "use_dynamic_ntk": False, "use_logn_attn": False}, 128, 128, "half", 1e6),
    # Qwen-1.8B as mlc-llm copies it: hidden 2048 / 16 heads
    "qwen-1.8b": ({"model_type": "qwen", "hidden_size": 2048, "num_attention_heads": 16,
                   "rotary_emb_base": 10000, "rotary_pct": 1.0, "kv_channels": 128},
                  128, 128, "half", 1e4),
    # Baichuan2-7B as released: no RoPE key, hidden_size 4096 (vLLM: RoPE)
    "baichuan": ({"model_type": "baichuan", "architectures": ["BaichuanForCausalLM"],
                  **LLAMA_7B}, 128, 128, "half", 1e4),
    "baichuan-7b": ({"architectures": ["BaiChuanForCausalLM"], **LLAMA_7B}, 128, 128, "half", 1e4),
    # InternLM 1: its class default rotary {base 10000, dynamic} is plain RoPE within the
    # context (here 16384; past it, test_internlm_defaults_to_dynamic_ntk)
    "internlm": ({"model_type": "internlm", **LLAMA_7B, "max_position_embeddings": 16384}, 128,
                 128, "half", 1e4),
    "internlm-origin": ({"model_type": "internlm", **LLAMA_7B, "rotary": {
        "type": "origin", "base": 500000}}, 128, 128, "half", 5e5),
    # InternLM2-7B: rope_theta 1e6, head = hidden_size // heads (head_dim unread)
    "internlm2": ({"model_type": "internlm2", **LLAMA_7B, "rope_theta": 1000000,
                   "head_dim": 99}, 128, 128, "half", 1e6),
    "internlm3": ({"architectures": ["InternLM3ForCausalLM"], **LLAMA_7B, "head_dim": 128,
                   "rope_theta": 50000000}, 128, 128, "half", 5e7),
    # MiniCPM-2B-sft: 2304 / 36 = 64
    "minicpm": ({"model_type": "minicpm", "hidden_size": 2304, "num_attention_heads": 36},
                64, 64, "half", 1e4),
    # DeepSeek-MoE 16B: 2048 / 16
    "deepseek": ({"model_type": "deepseek", "hidden_size": 2048, "num_attention_heads": 16},
                 128, 128, "half", 1e4),
    "aquila": ({"model_type": "aquila", **LLAMA_7B}, 128, 128, "half", 1e4),
    "xverse": ({"model_type": "xverse", "hidden_size": 5120, "num_attention_heads": 40,
                "rope_theta": 500000}, 128, 128, "half", 5e5),
    "orion": ({"model_type": "orion", "hidden_size": 5120, "num_attention_heads": 40}, 128,
              128, "half", 1e4),
    "solar": ({"model_type": "solar", **LLAMA_7B, "head_dim": 96}, 96, 96, "half", 1e4),
    "teleflm": ({"model_type": "teleflm", **LLAMA_7B}, 128, 128, "half", 1e4),
    "telechat2": ({"model_type": "telechat", "architectures": ["TeleChat2ForCausalLM"],
                   **LLAMA_7B}, 128, 128, "half", 1e4),
    # EXAONE 3: the layer count is num_layers
    "exaone": ({"model_type": "exaone", "hidden_size": 4096, "num_attention_heads": 32,
                "num_layers": 32, "rope_theta": 500000}, 128, 128, "half", 5e5),
    "arctic": ({"model_type": "arctic", "hidden_size": 7168, "num_attention_heads": 56}, 128,
               128, "half", 1e4),
    "grok-1": ({"model_type": "grok-1", "architectures": ["Grok1ModelForCausalLM"],
                "hidden_size": 6144, "num_attention_heads": 48}, 128, 128, "half", 1e4),
    # StableLM-Epoch (stablelm-2-1_6b): rope_pct 0.25 of 2048 / 32 = 64 -> 16 rotated
    "stablelm_epoch": ({"model_type": "stablelm_epoch", "hidden_size": 2048,
                        "num_attention_heads": 32, "rope_pct": 0.25, "rope_theta": 10000},
                       64, 16, "half", 1e4),
    "plamo2": ({"model_type": "plamo2", "hidden_size": 2048, "hidden_size_per_head": 128,
                "num_attention_heads": 16, "num_hidden_layers": 4, "mamba_step": 2,
                "rope_theta": 1000000}, 128, 128, "half", 1e6),
    # Step 3: head_dim 256 and base 500000 are its config class's defaults
    "step3_text": ({"model_type": "step3_text", "hidden_size": 7168, "num_attention_heads": 64,
                    "max_position_embedding": 65536}, 256, 256, "half", 5e5),
    # Ling: rotary_dim ahead of partial_rotary_factor
    "bailing_moe": ({"model_type": "bailing_moe", "hidden_size": 2048,
                     "num_attention_heads": 16, "rotary_dim": 64}, 128, 64, "half", 1e4),
    "minimax_m3": ({"model_type": "minimax_m3", "architectures": ["MiniMaxM3ForCausalLM"],
                    "hidden_size": 6144, "num_attention_heads": 64, "head_dim": 128,
                    "partial_rotary_factor": 0.5, "rotary_dim": 64, "rope_theta": 5000000},
                   128, 64, "half", 5e6),
    "pangu_embedded": ({"model_type": "PanguEmbedded", **LLAMA_7B, "rope_theta": 16000000},
                       128, 128, "half", 1.6e7),
    # Molmo-7B-D: 3584 / 28, base 1e6
    "molmo": ({"model_type": "molmo", "hidden_size": 3584, "num_attention_heads": 28,
               "rope_theta": 1000000.0}, 128, 128, "half", 1e6),
    # MiniCPM-V 2.6: Qwen2's language model on the flat config
    "minicpmv-2.6": ({"model_type": "minicpmv", "version": 2.6, "hidden_size": 3584,
                      "num_attention_heads": 28, "rope_theta": 1000000.0, "query_num": 64},
                     128, 128, "half", 1e6),
    "minicpmv-2.0": ({"model_type": "minicpmv", "hidden_size": 2304, "num_attention_heads": 36,
                      "query_num": 64}, 64, 64, "half", 1e4),
    "minicpmo": ({"model_type": "minicpmo", "hidden_size": 3584, "num_attention_heads": 28,
                  "rope_theta": 1000000.0}, 128, 128, "half", 1e6),
    # DeepSeek-VL2-tiny's language model: both qk widths 0 is multi-head attention
    "deepseek-vl2-tiny": ({"model_type": "deepseek_vl_v2", "language_config": {
        "model_type": "deepseek_v2", "hidden_size": 1280, "num_attention_heads": 10,
        "qk_rope_head_dim": 0, "qk_nope_head_dim": 0}}, 128, 128, "half", 1e4),
    # InternVL2-2B: llm_config is InternLM2 (dynamic 2.0: plain within its context)
    "internvl-chat": ({"model_type": "internvl_chat", "architectures": ["InternVLChatModel"],
                       "llm_config": {"architectures": ["InternLM2ForCausalLM"],
                                      "model_type": "internlm2", "hidden_size": 2048,
                                      "num_attention_heads": 16, "rope_theta": 1000000,
                                      "max_position_embeddings": 32768,
                                      "rope_scaling": {"type": "dynamic", "factor": 2.0}}},
                      128, 128, "half", 1e6),
}  # fmt: skip


@pytest.mark.parametrize("name", sorted(PLAIN))
def test_a_served_family_rotates_as_its_code(name):
    config, head, rotary, layout, base = PLAIN[name]
    q, out = rotated(config, head)
    oracle = rotate_half_oracle if layout == "half" else interleaved_oracle
    assert torch.allclose(out, oracle(q, POSITIONS, rotary, base), atol=1e-12)
    spec = rope_spec(config)
    assert (spec.head_dim, spec.rotary_dim, spec.layout, spec.base) == (head, rotary, layout, base)


def test_internlm_defaults_to_dynamic_ntk():
    """InternLM 1's rotary default: dynamic NTK with scaling_factor 1.

    Past 2048 positions the base is 10000 * (L / 2048) ** (d / (d - 2)) for a call of L
    positions (its modeling code).
    """
    config = {"model_type": "internlm", **LLAMA_7B, "max_position_embeddings": 2048}
    spec = rope_spec(config)
    assert (spec.rope_type, spec.factor) == ("dynamic", 1.0)
    length = 9001
    base = 10000 * (length / 2048) ** (128 / 126)
    inv = 1.0 / base ** (torch.arange(0, 128, 2, dtype=torch.float64) / 128)
    assert torch.allclose(spec.frequencies(length).inv_freq, inv,
                          rtol=1e-12)  # fmt: skip


def test_pangu_mla_rotates_the_rope_part_interleaved():
    """OpenPangu's MLA attention: pairs (2i, 2i+1) of qk_rope_head_dim, its yarn of factor 1."""
    config = {"model_type": "pangu_ultra_moe", **LLAMA_7B, "qk_nope_head_dim": 128,
              "qk_rope_head_dim": 64, "v_head_dim": 128, "kv_lora_rank": 512}  # fmt: skip
    spec = rope_spec(config)
    assert (spec.model_type, spec.head_dim, spec.layout, spec.nope_dim) == (
        "pangu_mla", 64, "interleaved", 128)  # fmt: skip
    q, out = rotated(config, 64)
    assert torch.allclose(out, interleaved_oracle(q, POSITIONS, 64, 1e4), atol=1e-12)


def test_qwen3_asr_thinker_reads_interleaved_mrope():
    config = {"model_type": "qwen3_asr", "thinker_config": {
        "model_type": "qwen3_asr_thinker", "text_config": {
            "model_type": "qwen3_asr_text", "hidden_size": 1024, "num_attention_heads": 16,
            "head_dim": 128, "rope_theta": 1000000, "rope_scaling": {
                "interleaved": True, "mrope_interleaved": True, "mrope_section": [24, 20, 20],
                "rope_type": "default"}}}}  # fmt: skip
    spec = rope_spec(config)
    assert (spec.mrope_section, spec.mrope_assignment, spec.base) == (
        (24, 20, 20), "interleaved", 1e6)  # fmt: skip
    # text and audio tokens: one position in every row, plain RoPE
    q, out = rotated(config, 128)
    assert torch.allclose(out, rotate_half_oracle(q, POSITIONS, 128, 1e6), atol=1e-12)


def test_layers_of_the_hybrids():
    """PLaMo 2 rotates its attention layers, MiniMax-Text-01 its softmax layers.

    (PLaMo 2: i % mamba_step == 1; MiniMax-Text-01: attn_type_list[i] == 1.)
    """
    plamo = {**PLAIN["plamo2"][0], "num_hidden_layers": 6}
    assert [s is None for s in layer_specs(plamo)] == [True, False] * 3
    minimax = {"model_type": "minimax_text_01", "hidden_size": 6144, "num_attention_heads": 64,
               "head_dim": 128, "rotary_dim": 64, "num_hidden_layers": 4,
               "attn_type_list": [0, 0, 0, 1], "rope_theta": 10000000}  # fmt: skip
    specs = layer_specs(minimax)
    assert [s is None for s in specs] == [True, True, True, False]
    assert (specs[3].rotary_dim, specs[3].head_dim) == (64, 128)


def test_plamo3_sliding_layers_take_rope_local_theta():
    config = {"model_type": "plamo3", "head_dim": 128, "hidden_size": 2048,
              "num_attention_heads": 16, "rope_theta": 1000000, "rope_local_theta": 10000,
              "layer_types": ["sliding_attention", "full_attention"]}  # fmt: skip
    full = rope_spec(config, layer_type="full_attention")
    sliding = rope_spec(config, layer_type="sliding_attention")
    assert (full.base, sliding.base) == (1e6, 1e4)


def alibi_slopes_oracle(heads):
    """ALiBi's slopes as the paper's reference (and Baichuan-13B's _get_interleave) form them."""

    def power_of_2(n):
        start = 2 ** (-(2 ** -(math.log2(n) - 3)))
        return [start * start**i for i in range(n)]

    if math.log2(heads).is_integer():
        return power_of_2(heads)
    closest = 2 ** math.floor(math.log2(heads))
    return power_of_2(closest) + alibi_slopes_oracle(2 * closest)[0::2][: heads - closest]


def test_baichuan_13b_and_jais_use_alibi():
    """vLLM: Baichuan with hidden_size other than 4096 (13B), Jais: ALiBi with standard slopes."""
    baichuan = positional_encoding({"model_type": "baichuan", "hidden_size": 5120,
                                    "num_attention_heads": 40})  # fmt: skip
    assert baichuan.kind == "alibi" and baichuan.num_heads == 40
    assert torch.allclose(baichuan.slopes(), torch.tensor(alibi_slopes_oracle(40),
                                                          dtype=torch.float64))  # fmt: skip
    with pytest.raises(NoRopeError, match="ALiBi"):
        rope_spec({"model_type": "baichuan", "hidden_size": 5120, "num_attention_heads": 40})
    jais = positional_encoding({"model_type": "jais", "n_head": 40, "n_embd": 5120,
                                "position_embedding_type": "alibi"})  # fmt: skip
    assert jais.kind == "alibi" and jais.num_heads == 40
    with pytest.raises(NotImplementedError, match="learned absolute table"):
        positional_encoding({"model_type": "jais", "n_head": 40, "n_embd": 5120})


@pytest.mark.parametrize("config, match", [
    ({"model_type": "qwen", "hidden_size": 4096, "num_attention_heads": 32,
      "use_dynamic_ntk": True}, "use_dynamic_ntk"),
    ({"model_type": "qwen", "hidden_size": 4096, "num_attention_heads": 32,
      "use_logn_attn": True}, "use_logn_attn"),
    ({"model_type": "PanguEmbedded", **LLAMA_7B, "param_sink_number": 128}, "sink attention"),
    ({"architectures": ["WhisperForConditionalGeneration"]}, "encoder-decoder"),
    ({"model_type": "telechat", "hidden_size": 4096, "n_head": 32}, "NTK-alpha"),
])  # fmt: skip
def test_a_feature_posenc_ref_lacks_is_named(config, match):
    with pytest.raises(NotImplementedError, match=match):
        positional_encoding(config)


def test_a_fixed_base_refuses_another():
    """Baichuan2-7B's code builds its RotaryEmbedding without a base: 10000 whatever is given."""
    with pytest.raises(ValueError, match="10000"):
        rope_spec({"model_type": "baichuan", **LLAMA_7B, "rope_theta": 500000})


def test_the_dispatch_rules_name_what_decided():
    spec = rope_spec({"model_type": "minicpmv", "version": 4.0, **LLAMA_7B})
    assert spec.model_type == "llama"
    assert any("version 4.0" in note for note in spec.notes)
    with pytest.raises(ValueError, match="MiniCPM-V version"):
        rope_spec({"model_type": "minicpmv", "version": 9.9, **LLAMA_7B})


# Released configs of served families found in public repositories beyond the corpus: the keys
# the reader reads, as each file gives them (source: repository@commit path; the mlc-llm entries
# are MODEL_PRESETS dict literals copied from the models' config.json), and what it reads. The
# LongRoPE factor lists are not copied: 48 values stand in for each.
MLC = "mlc-ai/mlc-llm@d1ea69a8 python/mlc_llm/model/model_preset.py"
SOPHGO = "sophgo/LLM-TPU"
FACTORS = {"long_factor": [1.0] * 48, "short_factor": [1.0] * 48, "type": "su"}
RELEASED = {
    "Qwen-72B-Chat": (
        f"{SOPHGO}@01f74606 models/Qwen/compile/files/Qwen-72B-Chat/config.json",
        {"model_type": "qwen", "hidden_size": 8192, "num_attention_heads": 64,
         "kv_channels": 128, "rope_theta": 1000000, "rotary_emb_base": 1000000,
         "rotary_pct": 1.0, "seq_length": 8192, "use_dynamic_ntk": False,
         "use_logn_attn": False}, ("qwen", "default", 128, 128, 1e6, None)),
    "Qwen-1.8B": (
        f"{MLC} (MODEL_PRESETS['qwen'])",
        {"model_type": "qwen", "hidden_size": 2048, "num_attention_heads": 16,
         "rotary_emb_base": 10000, "rotary_pct": 1.0, "seq_length": 8192,
         "use_dynamic_ntk": True, "use_logn_attn": True}, "use_dynamic_ntk"),
    "CodeFuse-DevOps-Model-7B-Chat": (
        f"{SOPHGO}@3279ff44 models/CodeFuse/compile/files/CodeFuse-DevOps-Model-7B-Chat/"
        "config.json",
        {"model_type": "qwen", "n_embd": 4096, "n_head": 32, "rotary_emb_base": 10000,
         "rotary_pct": 1.0, "seq_length": 2048, "use_dynamic_ntk": True,
         "use_logn_attn": True}, "use_dynamic_ntk"),
    "StableLM-2-1.6B": (
        "mlc-ai/mlc-llm@65ec85d7 python/mlc_chat/model/model_preset.py (stablelm_epoch)",
        {"model_type": "stablelm_epoch", "hidden_size": 2048, "num_attention_heads": 32,
         "rope_pct": 0.25, "rope_theta": 10000}, ("stablelm_epoch", "default", 64, 16, 1e4, None)),
    "Baichuan2-7B": (
        f"{MLC} (MODEL_PRESETS['baichuan'])",
        {"model_type": "baichuan", "architectures": ["BaichuanForCausalLM"], "hidden_size": 4096,
         "num_attention_heads": 32}, ("baichuan", "default", 128, 128, 1e4, None)),
    "DeepSeek-MoE-16B": (
        f"{MLC} (MODEL_PRESETS['deepseek'])",
        {"model_type": "deepseek", "hidden_size": 2048, "num_attention_heads": 16,
         "rope_scaling": None, "rope_theta": 10000}, ("deepseek", "default", 128, 128, 1e4, None)),
    "InternLM-chat-7B": (
        f"{MLC} (MODEL_PRESETS['internlm'])",
        {"model_type": "internlm", "hidden_size": 4096, "num_attention_heads": 32,
         "max_position_embeddings": 2048}, ("internlm", "dynamic", 128, 128, 1e4, 1.0)),
    "InternLM2-7B": (
        f"{MLC} (MODEL_PRESETS['internlm2'])",
        {"model_type": "internlm2", "hidden_size": 4096, "num_attention_heads": 32,
         "max_position_embeddings": 32768, "rope_scaling": None, "rope_theta": 1000000},
        ("internlm2", "default", 128, 128, 1e6, None)),
    "InternLM2.5-7B": (
        f"{MLC} (MODEL_PRESETS['internlm2_5_7b'])",
        {"model_type": "internlm2", "hidden_size": 4096, "num_attention_heads": 32,
         "max_position_embeddings": 32768, "rope_scaling": {"type": "dynamic", "factor": 2.0},
         "rope_theta": 1000000}, ("internlm2", "dynamic", 128, 128, 1e6, 2.0)),
    "MiniCPM-2B-128k": (
        f"{MLC} (MODEL_PRESETS['minicpm_2b'])",
        {"model_type": "minicpm", "hidden_size": 2304, "num_attention_heads": 36,
         "max_position_embeddings": 65536, "rope_scaling": {"type": "dynamic", "factor": 4.0},
         "rope_theta": 1000000.0}, ("minicpm", "dynamic", 64, 64, 1e6, 4.0)),
    "MiniCPM-MoE-8x2B": (
        f"{MLC} (MODEL_PRESETS['minicpm-moe-8x2b'])",
        {"model_type": "minicpm", "hidden_size": 2304, "num_attention_heads": 36,
         "rope_scaling": None}, ("minicpm", "default", 64, 64, 1e4, None)),
    "Orion-14B": (
        f"{MLC} (MODEL_PRESETS['orion'])",
        {"model_type": "orion", "hidden_size": 5120, "num_attention_heads": 40,
         "rope_scaling": None, "rope_theta": 10000.0}, ("orion", "default", 128, 128, 1e4, None)),
    "Phi-3.5-vision": (
        f"{MLC} (MODEL_PRESETS['phi-3_5-vision'])",
        {"model_type": "phi3_v", "hidden_size": 3072, "num_attention_heads": 32,
         "max_position_embeddings": 131072, "original_max_position_embeddings": 4096,
         "rope_scaling": FACTORS, "rope_theta": 10000.0},
        ("phi3", "longrope", 96, 96, 1e4, 32.0)),
    "InternVL2-2B": (
        f"{SOPHGO}@521bb09e models/InternVL2/compile/files/InternVL2-2B/config.json",
        {"model_type": "internvl_chat", "llm_config": {
            "architectures": ["InternLM2ForCausalLM"], "model_type": "internlm2",
            "hidden_size": 2048, "num_attention_heads": 16, "max_position_embeddings": 512,
            "rope_scaling": {"factor": 2.0, "type": "dynamic"}, "rope_theta": 1000000}},
        ("internlm2", "dynamic", 128, 128, 1e6, 2.0)),
    "InternVL2-4B": (
        f"{SOPHGO}@b2af6139 models/InternVL2/compile/files/InternVL2-4B/config.json",
        {"model_type": "internvl_chat", "llm_config": {
            "architectures": ["Phi3ForCausalLM"], "model_type": "phi3", "hidden_size": 3072,
            "num_attention_heads": 32, "max_position_embeddings": 512,
            "original_max_position_embeddings": 512, "rope_scaling": FACTORS,
            "rope_theta": 10000.0}}, ("phi3", "longrope", 96, 96, 1e4, 1.0)),
}  # fmt: skip


@pytest.mark.parametrize("name", sorted(RELEASED))
def test_released_configs_of_served_families(name):
    _, config, expected = RELEASED[name]
    if isinstance(expected, str):
        with pytest.raises(NotImplementedError, match=expected):
            rope_spec(config)
        return
    spec = rope_spec(config)
    got = (spec.model_type, spec.rope_type, spec.head_dim, spec.rotary_dim, spec.base, spec.factor)
    assert got == expected
