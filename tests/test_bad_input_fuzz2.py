"""The second fuzz's bad input (issue 24, item 6), each judged against what transformers does.

Silently wrong answers first, then false refusals, crashes and hangs, and unclear messages. Where
transformers accepts a config, posenc_ref must read it as transformers does; where transformers
refuses it, posenc_ref refuses it too, naming the key.
"""

import json
import os

import pytest

from posenc_ref.__main__ import main
from posenc_ref.models import layer_specs, rope_spec

transformers = pytest.importorskip("transformers")

GEMMA4 = {"model_type": "gemma4_text", "hidden_size": 256, "num_attention_heads": 2,
          "head_dim": 256, "global_head_dim": 512, "num_hidden_layers": 2,
          "layer_types": ["sliding_attention", "full_attention"]}  # fmt: skip


@pytest.mark.parametrize("override", [256, 384])
def test_gemma4_per_layer_head_dim_wins_over_global_head_dim(override):
    """Gemma4TextAttention takes the per_layer_config head_dim; global_head_dim only without one."""
    from transformers.models.gemma4 import modeling_gemma4

    config = {**GEMMA4, "per_layer_config": {"1": {"head_dim": override}}}
    raw = dict(config)
    hf = transformers.Gemma4TextConfig(**{k: v for k, v in raw.items() if k != "model_type"})
    assert modeling_gemma4.Gemma4TextAttention(hf, 1).head_dim == override
    assert rope_spec(config, layer_type="full_attention").head_dim == override
    assert rope_spec(GEMMA4, layer_type="full_attention").head_dim == 512  # without an override


def test_an_odd_mla_rope_part_is_refused_as_transformers_refuses_it():
    """qk_rope_head_dim 63: transformers' validation wants an even rotary dimension."""
    config = {"model_type": "deepseek_v3", "hidden_size": 256, "num_attention_heads": 4,
              "qk_rope_head_dim": 63, "qk_nope_head_dim": 128}  # fmt: skip
    with pytest.raises(Exception, match="even"):
        transformers.DeepseekV3Config(**{k: v for k, v in config.items() if k != "model_type"})
    with pytest.raises(ValueError, match="rotary width 63 is odd"):
        rope_spec(config)


@pytest.mark.parametrize("family", ["granite_swa", "muse_spark_text"])
def test_layer_rope_theta_of_strings_is_refused_naming_the_key(family):
    """The config class types it list[float | int]: strings are refused where the code reads it."""
    config = {"model_type": family, "hidden_size": 256, "num_attention_heads": 2, "head_dim": 128,
              "num_hidden_layers": 2, "layer_rope_theta": ["1e4", "1e4"]}  # fmt: skip
    with pytest.raises(TypeError, match="layer_rope_theta must be a list of numbers"):
        layer_specs(config)
    # a family whose code never reads it ignores it, as transformers does, and says so
    gemma3 = {**config, "model_type": "gemma3_text"}
    assert any("layer_rope_theta" in n for s in layer_specs(gemma3) for n in s.notes)


def test_layer_rope_theta_equal_to_the_default_base_is_read():
    """GraniteSWA with layer_rope_theta [1e4, 1e4] and no rope_theta: transformers accepts it."""
    config = {"model_type": "granite_swa", "hidden_size": 256, "num_attention_heads": 2,
              "num_hidden_layers": 2, "layer_rope_theta": [10000.0, 10000.0]}  # fmt: skip
    raw = {k: v for k, v in config.items() if k != "model_type"}
    hf = transformers.AutoConfig.for_model("granite_swa", **raw)
    assert hf.rope_parameters["rope_theta"] == 10000.0
    assert [s.base for s in layer_specs(config)] == [10000.0, 10000.0]


def test_integral_floats_where_integers_belong_are_read():
    """JSON writers give 16384.0: transformers reads these rope_parameters entries as numbers."""
    ministral = {"model_type": "ministral3", "hidden_size": 256, "num_attention_heads": 2,
                 "head_dim": 128, "rope_parameters": {
                     "rope_type": "default", "rope_theta": 1e6, "llama_4_scaling_beta": 0.1,
                     "original_max_position_embeddings": 16384.0}}  # fmt: skip
    assert rope_spec(ministral).query_scale.length == 16384
    smollm3 = {"model_type": "smollm3", "hidden_size": 256, "num_attention_heads": 2,
               "num_hidden_layers": 8, "no_rope_layer_interval": 4.0}  # fmt: skip
    assert [s is None for s in layer_specs(smollm3)] == [False, False, False, True] * 2
    llama4 = {"model_type": "llama4_text", "hidden_size": 256, "num_attention_heads": 2,
              "head_dim": 128, "num_hidden_layers": 4, "floor_scale": 8192.0}  # fmt: skip
    nope = next(s for s in layer_specs(llama4) if s is not None).nope_query_scale
    assert nope.length == 8192


def test_floor_scale_is_named_in_its_message():
    llama4 = {"model_type": "llama4_text", "hidden_size": 256, "num_attention_heads": 2,
              "head_dim": 128, "num_hidden_layers": 4, "floor_scale": -1}  # fmt: skip
    with pytest.raises((TypeError, ValueError), match="floor_scale"):
        layer_specs(llama4)


@pytest.mark.parametrize(
    "config",
    [
        {**GEMMA4, "global_head_dim": 2**40},
        {"model_type": "deepseek_v3", "hidden_size": 256, "num_attention_heads": 4,
         "qk_rope_head_dim": 2**40, "qk_nope_head_dim": 128},
        {"model_type": "llama", "head_dim": 2**40},
    ],
)  # fmt: skip
def test_huge_widths_are_refused_before_any_table_is_built(config):
    with pytest.raises(ValueError, match="at most 2\\*\\*20"):
        layer_specs(config)


def test_a_huge_layer_count_is_refused_not_built():
    with pytest.raises(ValueError, match="num_hidden_layers must be at most"):
        layer_specs({"model_type": "llama", "head_dim": 64, "num_hidden_layers": 10**12})


def test_inspect_refuses_an_empty_argument_a_fifo_and_a_device(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "config.json").write_text(json.dumps({"model_type": "llama", "head_dim": 64}))
    assert main(["inspect", ""]) == 2
    assert "empty" in capsys.readouterr().err
    fifo = tmp_path / "fifo" / "config.json"
    fifo.parent.mkdir()
    os.mkfifo(fifo)
    assert main(["inspect", str(fifo)]) == 2
    assert "not a regular file" in capsys.readouterr().err
    zero = tmp_path / "zero.json"
    zero.symlink_to("/dev/zero")
    assert main(["inspect", str(zero)]) == 2
    assert "not a regular file" in capsys.readouterr().err


def test_a_cache_folder_spelling_is_not_a_model_id(tmp_path, monkeypatch, capsys):
    """'org--name' is how the cache spells a folder; the Hub refuses '--' in ids."""
    from posenc_ref._hub_cache import looks_like_model_id

    assert looks_like_model_id("meta-llama/Llama-3.1-8B")
    assert not looks_like_model_id("meta-llama--Llama-3.1-8B")
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path))
    assert main(["inspect", "meta-llama--Llama-3.1-8B"]) == 2
    assert "no such file" in capsys.readouterr().err


# --------------------------------------------------------------------------- the rest of item 6

SMOLLM3 = {"model_type": "smollm3", "hidden_size": 64, "num_attention_heads": 4,
           "num_hidden_layers": 2}  # fmt: skip


def test_no_rope_layers_longer_than_the_layers_is_read_as_transformers_does():
    """Layer i reads no_rope_layers[i]: transformers builds the model; the rest is noted."""
    config = {**SMOLLM3, "no_rope_layers": [1, 0, 0, 1]}
    hf = transformers.SmolLM3Config(**{k: v for k, v in config.items() if k != "model_type"})
    model = transformers.SmolLM3Model(hf)
    assert [layer.self_attn.use_rope for layer in model.layers] == [1, 0]
    assert [s is None for s in layer_specs(config)] == [False, True]
    assert "the last 2 are never read" in " ".join(rope_spec(config).notes)
    with pytest.raises(ValueError, match="no_rope_layers lists 1 entries but num_hidden_layers=2"):
        layer_specs({**SMOLLM3, "no_rope_layers": [1]})  # transformers: IndexError at layer 1


@pytest.mark.parametrize(
    "config, key",
    [
        ({"model_type": "gpt_neox", "hidden_size": 64, "num_attention_heads": 4,
          "rotary_pct": [1]}, "rotary_pct"),
        ({"model_type": "gpt_neox", "hidden_size": 64, "num_attention_heads": 4,
          "rotary_emb_base": {"a": 1}}, "rotary_emb_base"),
        ({"model_type": "gemma3_text", "num_hidden_layers": 6, "rope_local_base_freq": [1]},
         "rope_local_base_freq"),
        ({"model_type": "dots3_note_text", "num_hidden_layers": 6, "swa_head_dim": [1]},
         "swa_head_dim"),
        ({"model_type": "dots3_note_text", "num_hidden_layers": 6, "swa_rope_theta": {"a": 1}},
         "swa_rope_theta"),
        ({"model_type": "dots3_note_text", "num_hidden_layers": 6, "rope_scaling": [1]},
         "rope_scaling"),
        ({"model_type": "gemma3_text", "num_hidden_layers": 2, "layer_types": {"a": 1}},
         "layer_types"),
        ({"model_type": "modernbert", "num_hidden_layers": 3, "hidden_size": 64,
          "num_attention_heads": 4, "rope_parameters": {"a": 1}}, "rope_parameters"),
        ({"model_type": "chatglm", "kv_channels": [128], "hidden_size": 4096,
          "num_attention_heads": 32}, "kv_channels"),
    ],
    ids=["rotary_pct", "rotary_emb_base", "rope_local_base_freq", "swa_head_dim",
         "swa_rope_theta", "dots3-rope_scaling", "layer_types", "modernbert-rope_parameters",
         "kv_channels"],
)  # fmt: skip
def test_a_list_or_dict_where_a_value_belongs_names_its_own_key(config, key):
    """A fuzz of 4,228 configs (lists and dicts in every key read, and in the RoPE dicts)."""
    from posenc_ref.encodings import positional_encoding

    for read in (layer_specs, positional_encoding):
        with pytest.raises((TypeError, ValueError), match=key) as caught:
            read(config)
        assert "unhashable" not in str(caught.value)


def test_a_key_only_gemma3_reads_is_not_taken_as_layer_types_elsewhere():
    """rope_local_base_freq in a Llama config: ignored with a note, as transformers ignores it."""
    from posenc_ref.encodings import positional_encoding

    config = {"model_type": "llama", "hidden_size": 64, "num_attention_heads": 4,
              "rope_local_base_freq": 10000.0}  # fmt: skip
    encoding = positional_encoding(config)
    assert list(encoding.specs) == [None]
    assert any("rope_local_base_freq" in note for note in encoding.notes)


def test_gemma4_layer_types_built_as_its_config_class_builds_them():
    hf = transformers.Gemma4TextConfig(num_hidden_layers=7)
    config = {"model_type": "gemma4_text", "num_hidden_layers": 7}
    assert [s.layer_type for s in layer_specs(config)] == hf.layer_types


@pytest.mark.parametrize("revision", ["a" * 300, "../../elsewhere", ".."])
def test_a_damaged_refs_main_exits_2_with_a_message(tmp_path, monkeypatch, capsys, revision):
    repo = tmp_path / "models--org--model"
    (repo / "snapshots" / "abc").mkdir(parents=True)
    (repo / "snapshots" / "abc" / "config.json").write_text(json.dumps(SMOLLM3))
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text(revision)
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "elsewhere" / "config.json").write_text(json.dumps(SMOLLM3))
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path))
    assert main(["inspect", "org/model"]) == 2
    err = capsys.readouterr().err
    assert "refs/main" in err and "the cache is damaged" in err and "Traceback" not in err


def test_a_folder_whose_config_json_is_a_pipe_is_named(tmp_path, capsys):
    os.mkfifo(tmp_path / "config.json")
    assert main(["inspect", str(tmp_path)]) == 2
    assert "config.json is not a regular file (a pipe or a device)" in capsys.readouterr().err


@pytest.mark.skipif(not os.path.exists("/proc/self/status"), reason="needs Linux's /proc")
def test_a_file_longer_than_its_size_says_is_read_with_a_bound(monkeypatch, capsys):
    """/proc files say 0 bytes: the read itself stops at the limit."""
    from posenc_ref import __main__ as cli

    assert os.stat("/proc/self/status").st_size == 0
    monkeypatch.setattr(cli, "MAX_BYTES", 64)
    assert main(["inspect", "/proc/self/status"]) == 2
    assert "holds more than 64 bytes" in capsys.readouterr().err


def test_gemma4_last_layer_is_full_attention_as_its_config_class_forces():
    """Given layer_types ending in a sliding layer: the class makes the last one full."""
    types = ["sliding_attention", "full_attention", "sliding_attention"]
    hf = transformers.Gemma4TextConfig(num_hidden_layers=3, layer_types=list(types))
    config = {"model_type": "gemma4_text", "num_hidden_layers": 3, "layer_types": types}
    specs = layer_specs(config)
    assert [s.layer_type for s in specs] == hf.layer_types == [*types[:2], "full_attention"]
    assert any("forces the last layer" in note for note in specs[-1].notes)
