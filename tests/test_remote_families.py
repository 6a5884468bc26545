"""Remote-code families (issue 24, item 2): each row against a rotation written from its code.

transformers cannot run these models (their code ships beside the checkpoint), so each family's
rotation is written here from the facts of its public modeling code, the way the site's
derivations are written from formulas, and posenc_ref's reading of a released-style config must
agree with it to float64 rounding. The rows and their sources: posenc_ref/models/families/remote.py.
"""

import pytest
import torch

from posenc_ref import RotaryEmbedding
from posenc_ref.__main__ import main
from posenc_ref.models import layer_specs, rope_spec

torch.manual_seed(0)


def rotate_half_oracle(x, positions, dim, base):
    """rotate_half on the first ``dim`` coordinates: pairs (i, i + dim/2), t * base^(-2i/dim)."""
    inv = 1.0 / base ** (torch.arange(0, dim, 2, dtype=torch.float64) / dim)
    angle = positions.to(torch.float64)[:, None] * inv
    cos, sin = torch.cat([angle.cos()] * 2, -1), torch.cat([angle.sin()] * 2, -1)
    part, rest = x[..., :dim], x[..., dim:]
    a, b = part[..., : dim // 2], part[..., dim // 2 :]
    return torch.cat([part * cos + torch.cat([-b, a], -1) * sin, rest], -1)


def interleaved_oracle(x, positions, dim, base):
    """ChatGLM2's apply_rotary_pos_emb: pairs (2i, 2i+1) of the first ``dim``, the rest passed."""
    inv = 1.0 / base ** (torch.arange(0, dim, 2, dtype=torch.float64) / dim)
    angle = positions.to(torch.float64)[:, None] * inv
    part, rest = x[..., :dim], x[..., dim:]
    even, odd = part[..., 0::2], part[..., 1::2]
    out = torch.stack([even * angle.cos() - odd * angle.sin(),
                       odd * angle.cos() + even * angle.sin()], -1).flatten(-2)  # fmt: skip
    return torch.cat([out, rest], -1)


def rotated(config, head_dim, positions, **kwargs):
    module = RotaryEmbedding.from_hf_config(config, **kwargs).to(torch.float64)
    q = torch.randn(2, len(positions), head_dim, dtype=torch.float64)
    out, _ = module(q, q, positions=positions)
    return q, out


POSITIONS = torch.tensor([0, 1, 7, 2047, 2048, 9000])

FALCON_7B = {"model_type": "RefinedWebModel", "architectures": ["RWForCausalLM"],
             "hidden_size": 4544, "n_head": 71, "n_layer": 32, "alibi": False}  # fmt: skip
MIMO_7B = {"model_type": "mimo", "architectures": ["MiMoForCausalLM"], "hidden_size": 4096,
           "num_attention_heads": 32, "head_dim": 128, "max_position_embeddings": 32768,
           "rope_theta": 640000}  # fmt: skip
CHATGLM2 = {"model_type": "chatglm", "architectures": ["ChatGLMModel"], "hidden_size": 4096,
            "num_attention_heads": 32, "kv_channels": 128, "num_layers": 28,
            "seq_length": 32768}  # fmt: skip


def test_falcon_7b_refinedweb_is_rotate_half_base_10000_on_the_whole_head():
    """modelling_RW.py: inv_freq 1/10000^(2i/64), rotate_half, head 4544 / 71 = 64."""
    q, out = rotated(FALCON_7B, 64, POSITIONS)
    assert torch.allclose(out, rotate_half_oracle(q, POSITIONS, 64, 10000.0), atol=1e-12)
    with pytest.raises(ValueError, match="fixes the base at 10000"):
        rope_spec({**FALCON_7B, "rope_theta": 5e5})


def test_mimo_7b_is_qwen2s_rotation():
    q, out = rotated(MIMO_7B, 128, POSITIONS)
    assert torch.allclose(out, rotate_half_oracle(q, POSITIONS, 128, 640000.0), atol=1e-12)


def test_chatglm2_rotates_interleaved_pairs_of_the_first_half():
    """modeling_chatglm.py (v2/v3): RotaryEmbedding(kv_channels // 2), pairs (2i, 2i+1)."""
    q, out = rotated(CHATGLM2, 128, POSITIONS)
    assert torch.allclose(out, interleaved_oracle(q, POSITIONS, 64, 10000.0), atol=1e-12)


# GLM-4-9B-chat's config.json (THUDM/glm-4-9b-chat, as copied in aifunny/Hate-Detection
# chuli/glm4更新包/config.json @ 4f5fc7d1): the RoPE keys and the widths
GLM4_9B_CHAT = {**CHATGLM2, "num_layers": 40, "num_hidden_layers": 40, "rope_ratio": 500,
                "padded_vocab_size": 151552, "seq_length": 131072}  # fmt: skip


def glm4_oracle(x, positions, rope_ratio):
    """GLM-4's modeling_chatglm.py, written from its facts.

    base = 10000 * rope_ratio, theta_i = 1 / base^(2i / 64), angle = position * theta_i (the
    positions are not divided), pairs (2i, 2i+1) of the first 64 of 128 coordinates, the rest
    passed through.
    """
    base = 10000.0 * rope_ratio
    theta = 1.0 / base ** (torch.arange(0, 64, 2, dtype=torch.float64) / 64)
    angle = torch.outer(positions.to(torch.float64), theta)
    cos, sin = angle.cos(), angle.sin()
    pairs = x[..., :64].unflatten(-1, (32, 2))
    out = torch.stack([pairs[..., 0] * cos - pairs[..., 1] * sin,
                       pairs[..., 1] * cos + pairs[..., 0] * sin], -1)  # fmt: skip
    return torch.cat([out.flatten(-2), x[..., 64:]], -1)


@pytest.mark.parametrize("rope_ratio", [500, 10000, 2.5])
def test_glm4_rope_ratio_multiplies_the_base(rope_ratio):
    """GLM-4 (glm-4-9b-chat 500, glm-4-9b-chat-1m 10000): its code multiplies the base."""
    config = {**GLM4_9B_CHAT, "rope_ratio": rope_ratio}
    q, out = rotated(config, 128, POSITIONS)
    assert torch.allclose(out, glm4_oracle(q, POSITIONS, rope_ratio), atol=1e-12)
    assert rope_spec(config).base == 10000.0 * rope_ratio


def test_chatglm2_3_rope_ratio_is_refused_naming_both_codes():
    """ChatGLM2-6B-32k divides positions by it, ChatGLM3-6B-32k multiplies the base.

    The config (vocabulary 65024) does not say which code it ships.
    """
    with pytest.raises(NotImplementedError, match=r"divides the positions.*multiplies the base"):
        rope_spec({**CHATGLM2, "rope_ratio": 16, "padded_vocab_size": 65024})
    for one in ({**CHATGLM2, "rope_ratio": 1}, {**GLM4_9B_CHAT, "rope_ratio": 1}):
        assert rope_spec(one).base == 10000.0  # both codes read 1 the same
    for bad in (0, -2, "500", [500], float("inf")):
        with pytest.raises(ValueError, match="rope_ratio must be a finite number"):
            rope_spec({**GLM4_9B_CHAT, "rope_ratio": bad})


def test_rope_ratio_elsewhere_is_ignored_as_transformers_ignores_it():
    """A Llama config with rope_ratio: Llama's code never reads it; noted, not applied."""
    spec = rope_spec({"model_type": "llama", "hidden_size": 64, "num_attention_heads": 4,
                      "rope_ratio": 500})  # fmt: skip
    assert spec.base == 10000.0
    assert any("rope_ratio = 500 (read by chatglm)" in note for note in spec.notes)
    with pytest.raises(ValueError, match="rope_ratio is read by chatglm"):
        rope_spec({"model_type": "my_model", "head_dim": 64, "rope_ratio": 500}, layout="half")


def test_chatglm_6b_2d_positions_are_refused_naming_the_feature():
    with pytest.raises(NotImplementedError, match="2-D positions"):
        rope_spec({**CHATGLM2, "position_encoding_2d": True})


def test_decilm_layers_without_attention_take_no_rope():
    """Nemotron-NAS: Llama's RoPE in every layer whose attention is not a no-op."""
    blocks = [{"attention": {"no_op": i % 3 == 2, "replace_with_linear": False}}
              for i in range(6)]  # fmt: skip
    config = {"model_type": "nemotron-nas", "hidden_size": 512, "num_attention_heads": 4,
              "num_hidden_layers": 6, "rope_theta": 5e5, "block_configs": blocks}  # fmt: skip
    specs = layer_specs(config)
    assert [s is None for s in specs] == [False, False, True, False, False, True]
    q, out = rotated(config, 128, POSITIONS)
    assert torch.allclose(out, rotate_half_oracle(q, POSITIONS, 128, 5e5), atol=1e-12)


def test_telechat_needs_its_per_call_ntk_alpha():
    with pytest.raises(NotImplementedError, match="per-call NTK-alpha"):
        rope_spec({"model_type": "telechat", "hidden_size": 4096, "n_head": 32})


def test_an_unknown_model_type_is_read_through_its_architectures_and_says_so(tmp_path, capsys):
    """Kimi K2: model_type 'kimi_k2' (remote code), architectures DeepseekV3ForCausalLM."""
    kimi = {"model_type": "kimi_k2", "architectures": ["DeepseekV3ForCausalLM"],
            "hidden_size": 7168, "num_attention_heads": 64, "qk_rope_head_dim": 64,
            "qk_nope_head_dim": 128, "rope_theta": 50000.0}  # fmt: skip
    spec = rope_spec(kimi)
    assert spec.model_type == "deepseek_v3" and spec.layout == "interleaved"
    assert "inferred from architectures 'DeepseekV3ForCausalLM'" in spec.notes[0]
    auto_map = {"AutoModel": "modeling_deepseek.DeepseekV3ForCausalLM"}
    by_auto_map = {**kimi, "architectures": None, "auto_map": auto_map}
    assert "inferred from auto_map" in rope_spec(by_auto_map).notes[0]
    path = tmp_path / "config.json"
    path.write_text(__import__("json").dumps(kimi))
    assert main(["inspect", str(path)]) == 0
    assert "inferred from architectures" in " ".join(capsys.readouterr().out.split())
