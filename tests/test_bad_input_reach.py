"""Bad input found on the surfaces of issue 38 (item 5): each case a bug, fixed, and kept here.

Vision specs (grid, image size, input width), the lightning indexer's width, an odd MLA rope part,
``inspect --lerope-alpha``'s files, ``compare``'s numbers, ``inspect --cache`` pointed at a file,
and the cases still open from the last issue (Gemma 4's global layers, layer_types of the wrong
length, axial frequencies and pair axes).
"""

import json
import struct

import numpy as np
import pytest
import torch

from posenc_ref.__main__ import main
from posenc_ref.axial import axial_inv_freq, columns_first, rows_first
from posenc_ref.models import axial_spec, rope_spec
from tests.test_config_rewrites import RELEASED_LIKE

PIXTRAL = {"model_type": "pixtral", "hidden_size": 1024, "num_attention_heads": 16,
           "image_size": 1024, "patch_size": 16}  # fmt: skip


def test_pixtral_positions_past_its_grid_are_refused():
    spec = axial_spec(PIXTRAL)
    assert spec.max_grid == (64, 64)
    assert spec.positions(64, 64).shape == (64 * 64, 2)
    with pytest.raises(ValueError, match=r"height=100 patches is past .* 64 per side"):
        spec.positions(100, 100)
    with pytest.raises(ValueError, match="width=65"):
        spec.positions(1, 65)


def test_an_image_smaller_than_a_patch_is_refused():
    with pytest.raises(ValueError, match="image_size=8 is smaller than patch_size=16"):
        axial_spec({**PIXTRAL, "image_size": 8})


@pytest.mark.parametrize("width", [32, 128])
def test_axial_apply_checks_the_inputs_width(width):
    spec = axial_spec(PIXTRAL)
    with pytest.raises(ValueError, match=f"head_dim 64 .*got {width}"):
        spec.apply(torch.randn(1, 4, width), spec.positions(2, 2))
    assert spec.apply(torch.randn(1, 4, 64), spec.positions(2, 2)).shape == (1, 4, 64)


@pytest.mark.parametrize("hidden", [0, float("nan"), -1024])
def test_a_vision_width_of_zero_or_nan_is_refused(hidden):
    with pytest.raises((ValueError, TypeError), match="hidden_size"):
        axial_spec({**PIXTRAL, "hidden_size": hidden})


@pytest.mark.parametrize("model_type", ["deepseek_v32", "glm_moe_dsa"])
def test_an_indexer_head_past_any_model_is_refused(model_type):
    config = {"model_type": model_type, "hidden_size": 7168, "num_attention_heads": 64,
              "index_head_dim": 2**40}  # fmt: skip
    with pytest.raises(ValueError, match=r"index_head_dim must be at most 2\*\*20"):
        rope_spec(config)


@pytest.mark.parametrize("width", [3, 63])
def test_an_odd_rope_part_names_its_key(width):
    config = {"model_type": "deepseek_v3", "hidden_size": 7168, "num_attention_heads": 128,
              "qk_rope_head_dim": width}  # fmt: skip
    with pytest.raises(ValueError, match=f"qk_rope_head_dim = {width}: the rotary width"):
        rope_spec(config)


# --------------------------------------------------------------------------- inspect --lerope-alpha


def safetensors(path, header: object, data: bytes = b"\0" * 128) -> None:
    text = header if isinstance(header, bytes) else json.dumps(header).encode()
    path.write_bytes(struct.pack("<Q", len(text)) + text + data)


NAME = "lerope.alpha"
GOOD = {"dtype": "F32", "shape": [32], "data_offsets": [0, 128]}


def bad_files(tmp_path):
    """(file, what is wrong with it): each must be refused with exit 2, never crash (exit 3)."""
    out = []
    far = tmp_path / "far.safetensors"
    safetensors(far, {NAME: {**GOOD, "data_offsets": [2**70, 2**70 + 128]}})
    out.append((far, "bad data_offsets"))
    listed = tmp_path / "listed.safetensors"
    safetensors(listed, {NAME: ["F32", [32], [0, 128]]})
    out.append((listed, "not an object"))
    deep = tmp_path / "deep.safetensors"
    safetensors(deep, ("[" * 100_000 + "]" * 100_000).encode())
    out.append((deep, "unreadable header"))
    boolean = tmp_path / "boolean.safetensors"
    safetensors(boolean, {NAME: {**GOOD, "data_offsets": [True, 129]}})
    out.append((boolean, "bad data_offsets"))
    huge = tmp_path / "huge.json"
    huge.write_text("[" + "1" + "0" * 400 + "]")
    out.append((huge, "finite"))
    words = tmp_path / "words.npy"
    np.save(words, np.array(["a", "b"]))
    out.append((words, "not floating"))
    broken = tmp_path / "shards"
    broken.mkdir()
    (broken / "model.safetensors").symlink_to(tmp_path / "gone.safetensors")
    out.append((broken, "cannot be read"))
    return out


def test_inspect_lerope_alpha_refuses_every_bad_file(tmp_path, capsys):
    (tmp_path / "config.json").write_text(json.dumps(RELEASED_LIKE))
    for path, words in bad_files(tmp_path):
        status = main(["inspect", str(tmp_path / "config.json"), "--lerope-alpha", str(path)])
        err = capsys.readouterr().err
        assert status == 2, (path.name, err)
        assert words in err, (path.name, err)


def test_inspect_lerope_alpha_reads_a_big_endian_npy(tmp_path, capsys):
    (tmp_path / "config.json").write_text(json.dumps(RELEASED_LIKE))
    values = np.linspace(-0.4, 0.3, 32).astype(">f4")
    np.save(tmp_path / "alpha.npy", values)
    status = main(["inspect", str(tmp_path / "config.json"), "--lerope-alpha",
                   str(tmp_path / "alpha.npy"), "--all-pairs"])  # fmt: skip
    out, err = capsys.readouterr()
    assert status == 0, err
    native = torch.from_numpy(values.astype("<f4"))
    inv = rope_spec(RELEASED_LIKE, lerope_alpha=native).inv_freq
    assert f"{float(inv[0]):g}" in out and f"{float(inv[-1]):g}" in out


# --------------------------------------------------------------------------- compare, --cache

LLAMA = {"model_type": "llama", "hidden_size": 4096, "num_attention_heads": 32,
         "max_position_embeddings": 4096}  # fmt: skip


@pytest.mark.parametrize("flags", [["--at", str(2**70)], ["--context", str(2**64)]])
def test_compare_refuses_positions_past_int64(tmp_path, capsys, flags):
    (tmp_path / "a.json").write_text(json.dumps(LLAMA))
    (tmp_path / "b.json").write_text(json.dumps({**LLAMA, "rope_theta": 500000.0}))
    status = main(["compare", str(tmp_path / "a.json"), str(tmp_path / "b.json"), *flags])
    assert status == 2
    assert "2**53" in capsys.readouterr().err


def test_compare_of_two_models_without_rope_says_there_is_nothing_to_compare(tmp_path, capsys):
    (tmp_path / "a.json").write_text(json.dumps({"model_type": "gpt2"}))
    (tmp_path / "b.json").write_text(json.dumps({"model_type": "mamba"}))
    status = main(["compare", str(tmp_path / "a.json"), str(tmp_path / "b.json")])
    assert status == 2
    assert "nothing to compare" in capsys.readouterr().err


def test_compare_specs_of_none_is_a_type_error():
    from posenc_ref.cli import compare_specs

    with pytest.raises(TypeError, match="a must be a RopeSpec"):
        compare_specs(None, None)


def test_inspect_cache_in_a_file_says_it_is_not_a_folder(tmp_path, monkeypatch, capsys):
    path = tmp_path / "cache"
    path.write_text("not a folder")
    monkeypatch.setenv("HF_HUB_CACHE", str(path))
    assert main(["inspect", "--cache"]) == 2
    assert "is a file, not a folder" in capsys.readouterr().err


# --------------------------------------------------------------------------- still open before


GEMMA4 = {"model_type": "gemma4_text", "hidden_size": 256, "num_attention_heads": 2,
          "head_dim": 256, "num_hidden_layers": 2,
          "layer_types": ["sliding_attention", "full_attention"]}  # fmt: skip


@pytest.mark.parametrize(
    "extra, width",
    [
        ({"per_layer_config": {"1": {"num_key_value_heads": 1}}}, 256),
        ({"per_layer_config": {"1": {"num_key_value_heads": 1}}, "global_head_dim": 512}, 256),
        ({"per_layer_config": {}}, 256),
        ({"per_layer_config": {"1": {"head_dim": 384}}}, 384),
        ({}, 512),
        ({"global_head_dim": 384}, 384),
    ],
)
def test_gemma4_global_layers_are_as_wide_as_its_attention(extra, width):
    """Gemma4TextConfig writes global_head_dim (default 512) only where per_layer_config is absent.

    The widths are Gemma4TextAttention's (transformers 5.23), checked where it is installed.
    """
    config = {**GEMMA4, **extra}
    assert rope_spec(config, layer_type="full_attention").head_dim == width
    transformers = pytest.importorskip("transformers")
    from transformers.models.gemma4 import modeling_gemma4

    hf = transformers.Gemma4TextConfig(**{k: v for k, v in config.items() if k != "model_type"})
    assert modeling_gemma4.Gemma4TextAttention(hf, 1).head_dim == width


@pytest.mark.parametrize(
    "config, layer_type",
    [
        ({"model_type": "smollm3", "hidden_size": 2048, "num_attention_heads": 16,
          "num_hidden_layers": 4, "no_rope_layers": [1, 1, 1, 0],
          "layer_types": ["full_attention"] * 2}, "full_attention"),
        ({"model_type": "beam", "hidden_size": 2048, "num_attention_heads": 16,
          "num_hidden_layers": 4, "layer_types": ["sliding_attention", "full_attention"]},
         "sliding_attention"),
    ],
)  # fmt: skip
def test_layer_types_of_the_wrong_length_are_refused(config, layer_type):
    with pytest.raises(ValueError, match="layer_types has 2 entries but num_hidden_layers=4"):
        rope_spec(config, layer_type=layer_type)


def test_axial_frequencies_and_pair_axes_refuse_impossible_widths():
    with pytest.raises(ValueError, match=r"dim must be at most 2\*\*20"):
        axial_inv_freq(2**40, 100.0, "qwen2_vl")
    for split in (rows_first, columns_first):
        with pytest.raises(ValueError, match="pairs must be an integer >= 0"):
            split(-3)
        with pytest.raises(TypeError, match="pairs"):
            split(2.5)


# --------------------------------------------------------------------------- words and values


def test_hunyuan_ntk_alpha_below_one_is_read_as_its_code_reads_it():
    """HunYuan's NTK-alpha 0.5 gives the smaller base rope_theta * alpha ** (d / (d - 2))."""
    config = {
        "model_type": "hunyuan_v1_dense",
        "hidden_size": 1024,
        "num_attention_heads": 8,
        "head_dim": 128,
        "rope_scaling": {"type": "dynamic", "alpha": 0.5, "factor": 1.0},
    }
    spec = rope_spec(config)
    base = 10000.0 * 0.5 ** (128 / 126)
    assert torch.allclose(
        spec.inv_freq, base ** -(torch.arange(0, 128, 2, dtype=torch.float64) / 128)
    )
    with pytest.raises(ValueError, match="alpha=1e.308 makes the base"):
        rope_spec({**config, "rope_scaling": {"type": "dynamic", "alpha": 1e308, "factor": 1.0}})
    transformers = pytest.importorskip("transformers")
    from transformers.models.hunyuan_v1_dense import modeling_hunyuan_v1_dense as hunyuan

    hf = transformers.HunYuanDenseV1Config(**{k: v for k, v in config.items() if k != "model_type"})
    theirs = hunyuan.HunYuanDenseV1RotaryEmbedding(hf).inv_freq.double()
    assert torch.allclose(spec.inv_freq, theirs, rtol=1e-6)


def test_falcon_rw_with_alibi_says_alibi():
    """Falcon-RW (RefinedWebModel) with alibi: its code adds ALiBi before the 1/sqrt(d) scale."""
    from posenc_ref.encodings import positional_encoding
    from posenc_ref.models import NoRopeError

    config = {"model_type": "RefinedWebModel", "hidden_size": 4544, "n_head": 71, "alibi": True}
    with pytest.raises(NoRopeError, match="ALiBi attention biases"):
        rope_spec(config)
    encoding = positional_encoding(config)
    assert encoding.kind == "alibi" and encoding.num_heads == 71
    assert encoding.logit_scale == pytest.approx(1 / 8)
