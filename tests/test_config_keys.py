"""Keys read as transformers reads them (issue 24, item 1): each rule against transformers' code.

A key the family's code does not read is ignored with a note, and refused only where its value
contradicts what the code does; keys a config class takes through ``kwargs`` are read; falsy values
mean "not set" where transformers' code treats them so; a wrapper's text part is read through its
config class's renaming; OLMo 3's legacy ``rope_scaling`` applies to its full-attention layers only.
Every case reads the dict and the object transformers builds from it (item 5).
"""

import copy
import math

import pytest
import torch

from posenc_ref import RotaryEmbedding
from posenc_ref.__main__ import main
from posenc_ref.encodings import positional_encoding
from posenc_ref.models import layer_specs, rope_spec

transformers = pytest.importorskip("transformers")

QWEN3_MOE = {"model_type": "qwen3_moe", "hidden_size": 256, "num_attention_heads": 4,
             "head_dim": 64, "num_hidden_layers": 2, "rope_theta": 1e6}  # fmt: skip


def as_object(config):
    """The config object transformers builds from the dict (from a copy: from_dict edits it)."""
    auto = transformers.AutoConfig.for_model
    raw = copy.deepcopy(config)
    return auto(raw.pop("model_type"), **raw)


def both(config, **kwargs):
    """The spec read from the dict and from transformers' object: they must be the same RoPE."""
    a, b = rope_spec(config, **kwargs), rope_spec(as_object(config), **kwargs)
    assert (a.rotary_dim, a.layout, a.base, a.rope_type) == (
        b.rotary_dim, b.layout, b.base, b.rope_type)  # fmt: skip
    assert torch.equal(a.inv_freq, b.inv_freq)
    return a


def test_a_key_another_family_reads_is_ignored_with_a_note():
    """Qwen3-Coder's use_qk_norm: Qwen3MoeConfig stores it unread; so does posenc_ref, saying so."""
    spec = both({**QWEN3_MOE, "use_qk_norm": True})
    assert any("not read by this family's code: use_qk_norm" in n and "llama4_text" in n
               for n in spec.notes)  # fmt: skip
    assert rope_spec(QWEN3_MOE).notes == ()


def test_a_key_the_family_reads_for_something_else_is_no_note():
    """GLM-4.5 reads use_qk_norm (norms before the rotation): neither refused nor noted."""
    config = {"model_type": "glm4_moe", "hidden_size": 256, "num_attention_heads": 4,
              "head_dim": 64, "use_qk_norm": True}  # fmt: skip
    assert both(config).notes == ()


def test_rope_interleave_true_agrees_with_glm5_false_contradicts_it():
    """GLM-5's attention always interleaves (apply_rotary_pos_emb_interleave)."""
    glm5 = {"model_type": "glm_moe_dsa", "hidden_size": 256, "num_attention_heads": 4,
            "qk_rope_head_dim": 64, "qk_nope_head_dim": 192, "rope_theta": 1e6}  # fmt: skip
    spec = rope_spec({**glm5, "rope_interleave": True})
    assert spec.layout == "interleaved" and "its value agrees" in spec.notes[0]
    with pytest.raises(ValueError, match="rope_interleave = False contradicts glm_moe_dsa"):
        rope_spec({**glm5, "rope_interleave": False})


def test_phi1_rotary_dim_agrees_another_width_is_refused():
    """phi-1's rotary_dim 32 (unread by PhiConfig) equals 64 * 0.5: a note; 16 contradicts."""
    phi = {"model_type": "phi", "hidden_size": 2048, "num_attention_heads": 32,
           "partial_rotary_factor": 0.5}  # fmt: skip
    spec = both({**phi, "rotary_dim": 32})
    assert spec.rotary_dim == 32 and "its value agrees" in spec.notes[0]
    with pytest.raises(ValueError, match="rotary_dim = 16 contradicts phi's code"):
        rope_spec({**phi, "rotary_dim": 16})


def test_gemma3_sliding_window_pattern_read_through_kwargs():
    """Gemma3TextConfig reads kwargs.get("sliding_window_pattern", 6): the object is read too."""
    config = {"model_type": "gemma3_text", "num_hidden_layers": 12, "sliding_window_pattern": 6,
              "rope_theta": 1e6, "rope_local_base_freq": 1e4}  # fmt: skip
    obj = transformers.Gemma3TextConfig(sliding_window_pattern=6, num_hidden_layers=12)
    for read in (config, obj):
        specs = layer_specs(read)
        assert [s.base for s in specs] == [1e4] * 5 + [1e6] + [1e4] * 5 + [1e6]
        assert RotaryEmbedding.from_hf_config(read, layer_type="full_attention").base == 1e6


def test_zero_means_not_set_where_transformers_reads_it_so():
    """Devstral 2: mscale_all_dim 0.0 and llama_4_scaling_beta 0.0 are "not set" in transformers."""
    rope = {"rope_type": "yarn", "factor": 64.0, "original_max_position_embeddings": 4096,
            "mscale": 1.0, "mscale_all_dim": 0.0, "beta_fast": 0, "beta_slow": 0,
            "llama_4_scaling_beta": 0.0, "rope_theta": 1e6}  # fmt: skip
    config = {"model_type": "ministral3", "hidden_size": 256, "num_attention_heads": 4,
              "head_dim": 64, "max_position_embeddings": 262144,
              "rope_parameters": rope}  # fmt: skip
    spec = both(config)
    assert spec.attention_factor == pytest.approx(0.1 * math.log(64.0) + 1)
    assert spec.query_scale is None


def test_mimo_v2_flash_ignores_its_top_level_rope_keys_and_says_they_agree():
    """MiMoV2FlashConfig.convert_rope_params_to_dict returns its kwargs: per-type defaults."""
    config = {"model_type": "mimo_v2_flash", "num_hidden_layers": 12, "hidden_size": 512,
              "num_attention_heads": 4, "head_dim": 192, "rope_theta": 5000000,
              "swa_rope_theta": 10000, "partial_rotary_factor": 0.334}  # fmt: skip
    specs = layer_specs(config)
    assert [s.layer_type for s in specs[:6]] == ["full_attention"] + ["sliding_attention"] * 4 + [
        "full_attention"]  # fmt: skip
    full = rope_spec(config, layer_type="full_attention")
    assert (full.base, full.rotary_dim) == (5e6, 64)
    assert any("rope_theta = 5000000" in n and "agrees" in n for n in full.notes)
    sliding = rope_spec({**config, "swa_rope_theta": 20000}, layer_type="sliding_attention")
    assert sliding.base == 1e4
    assert any("swa_rope_theta = 20000" in n and "computes base" in n for n in sliding.notes)


def test_olmo3_legacy_rope_scaling_applies_to_full_attention_only():
    """Olmo3Config updates rope_parameters['full_attention'] only: sliding layers plain RoPE."""
    config = {"model_type": "olmo3", "num_hidden_layers": 4, "hidden_size": 256,
              "num_attention_heads": 4, "rope_theta": 500000, "max_position_embeddings": 65536,
              "rope_scaling": {"rope_type": "yarn", "factor": 8.0, "attention_factor": 1.2079,
                               "original_max_position_embeddings": 8192}}  # fmt: skip
    obj = as_object(config)
    assert obj.rope_parameters["sliding_attention"]["rope_type"] == "default"
    for read in (config, obj):
        sliding = rope_spec(read, layer_type="sliding_attention")
        full = rope_spec(read, layer_type="full_attention")
        assert (sliding.rope_type, sliding.attention_factor, sliding.base) == ("default", 1.0, 5e5)
        assert (full.rope_type, full.attention_factor) == ("yarn", pytest.approx(1.2079))


@pytest.mark.parametrize(
    "wrapper, text, read_as",
    [("kimi_k25", "kimi_k2", "deepseek_v3"), ("exaone4_5", "exaone4_5_text", "exaone4")],
)
def test_a_wrapper_renames_its_text_part_as_its_config_class_does(wrapper, text, read_as):
    config = {"model_type": wrapper, "text_config": {
        "model_type": text, "hidden_size": 256, "num_attention_heads": 4, "num_hidden_layers": 4,
        "qk_rope_head_dim": 64, "qk_nope_head_dim": 128, "rope_theta": 5e4}}  # fmt: skip
    spec = rope_spec(config) if read_as == "deepseek_v3" else layer_specs(config)[0]
    assert spec.model_type == read_as
    assert any(f"'{text}' is read as '{read_as}'" in n for n in spec.notes)


def test_a_huge_layer_count_is_refused_at_once():
    with pytest.raises(ValueError, match="num_hidden_layers must be at most"):
        layer_specs({"model_type": "olmo3", "num_hidden_layers": 10**12})


def test_inspect_names_every_layer_type_and_prints_the_notes(tmp_path, capsys):
    config = {"model_type": "qwen3_next", "num_hidden_layers": 8, "hidden_size": 256,
              "num_attention_heads": 4, "head_dim": 64, "full_attention_interval": 4,
              "use_qk_norm": True}  # fmt: skip
    path = tmp_path / "config.json"
    path.write_text(__import__("json").dumps(config))
    assert main(["inspect", str(path)]) == 0
    out = " ".join(capsys.readouterr().out.split())  # the text wraps at 76 characters
    assert "linear_attention: layers 0, 1, 2, 4, 5, 6: no RoPE" in out
    assert "full_attention: layers 3, 7: the RoPE below" in out
    assert "not read by this family's code: use_qk_norm" in out
    encoding = positional_encoding(config)
    assert [(t.name, t.rotates) for t in encoding.layer_types] == [
        ("linear_attention", False), ("full_attention", True)]  # fmt: skip


@pytest.mark.parametrize("family", ["hunyuan_v1_dense", "hunyuan_v1_moe"])
def test_hunyuan_ntk_alpha_is_read_as_transformers_computes_it(family):
    """A dynamic rope_scaling with alpha (Hunyuan-A13B: 1000) is transformers' static ntk_alpha."""
    import importlib

    config = {"model_type": family, "hidden_size": 512, "num_attention_heads": 4,
              "head_dim": 128, "rope_theta": 10000.0, "max_position_embeddings": 32768,
              "rope_scaling": {"alpha": 1000.0, "factor": 1.0, "type": "dynamic"}}  # fmt: skip
    module = importlib.import_module(f"transformers.models.{family}.modeling_{family}")
    rotary = next(getattr(module, n) for n in dir(module) if n.endswith("RotaryEmbedding"))
    theirs = rotary(as_object(config))
    spec = both(config)
    assert spec.rope_type == "ntk_alpha" and theirs.rope_type == "ntk_alpha"
    assert torch.allclose(spec.inv_freq, theirs.inv_freq.double(), rtol=1e-6, atol=0)
    # static: a call past the context uses the same frequencies
    assert torch.equal(spec.frequencies(10**6).inv_freq, spec.inv_freq)


def test_dual_chunk_attention_config_is_noted_with_the_engines_that_apply_it():
    """Qwen2.5-7B-Instruct-1M: transformers ignores it (plain RoPE); vLLM and SGLang apply it."""
    config = {"model_type": "qwen2", "hidden_size": 256, "num_attention_heads": 2,
              "rope_theta": 1e7, "dual_chunk_attention_config": {
                  "chunk_size": 262144, "local_size": 8192,
                  "original_max_position_embeddings": 262144}}  # fmt: skip
    spec = both(config)
    assert spec.rope_type == "default" and spec.base == 1e7
    note = next(n for n in spec.notes if n.startswith("dual_chunk_attention_config"))
    assert "vLLM and SGLang" in note and "253952" in note


def test_a_wrappers_top_level_rope_is_not_its_language_models():
    """Qwen2.5-VL, LLaVA: transformers builds the language model from text_config alone.

    The wrapper's own top-level RoPE keys are not read (a note says so), whatever they say; the
    config object transformers builds agrees.
    """
    scaling = {"type": "mrope", "mrope_section": [16, 24, 24]}
    other = {**scaling, "mrope_section": [16, 16, 32]}
    config = {"model_type": "qwen2_5_vl", "rope_scaling": other, "rope_theta": 5.0,
              "text_config": {"model_type": "qwen2_5_vl_text", "hidden_size": 3584,
                              "num_attention_heads": 28, "rope_theta": 1e6,
                              "rope_scaling": {**scaling, "rope_type": "default"}}}  # fmt: skip
    spec = rope_spec(config)
    assert spec.mrope_section == (16, 24, 24) and spec.base == 1e6
    assert any("not read: rope_theta = 5.0 at the top level" in note for note in spec.notes)
    built = as_object(config).get_text_config()
    assert built.rope_parameters["rope_theta"] == 1e6
    assert built.rope_parameters["mrope_section"] == [16, 24, 24]
    llava = {"model_type": "llava", "rope_theta": 1.0,
             "text_config": {"model_type": "llama", "rope_theta": 500000.0}}  # fmt: skip
    assert rope_spec(llava).base == 500000.0
    assert as_object(llava).get_text_config().rope_parameters["rope_theta"] == 500000.0


def test_esm1b_learned_positions_are_read_as_its_code_numbers_them():
    """ESM-1b (absolute positions): rows from padding_idx + 1, as EsmEmbeddings numbers them."""
    from transformers.models.esm.modeling_esm import create_position_ids_from_input_ids

    from posenc_ref.encodings import positional_encoding

    config = {"model_type": "esm", "position_embedding_type": "absolute", "hidden_size": 1280,
              "num_attention_heads": 20, "max_position_embeddings": 1026,
              "pad_token_id": 1}  # fmt: skip
    encoding = positional_encoding(config)
    ids = torch.tensor([[5, 6, 7, 8]])
    rows = create_position_ids_from_input_ids(ids, config["pad_token_id"])[0]
    assert torch.equal(rows, torch.arange(4) + encoding.offset)
    assert encoding.num_positions + encoding.offset == config["max_position_embeddings"]
    assert positional_encoding(as_object(config)).offset == encoding.offset
