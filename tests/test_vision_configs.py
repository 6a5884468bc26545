"""Vision configs read into axial specs (posenc_ref.models.axial_spec), against transformers.

The rotation itself is proven family by family in tests/test_axial.py (the spec read from each
tiny config rotates as the family's own module and apply function) and the merge-block order in
tests/test_axial_merge_blocks.py. Here: every row's defaults are its config class's, the
released vision-language configs of ../shared/real_configs/ read to the frequencies of the
rotary module transformers builds from them, and the refusals name the reader.
"""

import json
import math

import pytest
import torch

from posenc_ref import RotaryEmbedding
from posenc_ref.models import VISION, axial_spec, rope_spec
from posenc_ref.models.vision import vision_tower

pytestmark = pytest.mark.peers


@pytest.fixture(scope="module")
def transformers():
    return pytest.importorskip("transformers")


def config_class(model_type: str):
    from transformers.models.auto.configuration_auto import CONFIG_MAPPING

    return CONFIG_MAPPING[model_type]


@pytest.mark.parametrize("model_type", sorted(VISION))
def test_row_defaults_are_the_config_class_defaults(transformers, model_type):
    """A config with only its model_type reads as the class's default config, object and dict."""
    full = config_class(model_type)()
    expected = axial_spec(full)
    assert axial_spec({"model_type": model_type}) == expected == axial_spec(full.to_dict())


# --------------------------------------------------------------------------- released configs

# The rotary class of each vision family and how its inv_freq lays out our frequencies.
ROTARY = {
    "pixtral": ("pixtral", "PixtralVisionRotaryEmbedding"),
    "qwen2_vl_vision": ("qwen2_vl", "Qwen2VLVisionRotaryEmbedding"),
    "qwen2_5_vl_vision": ("qwen2_5_vl", "Qwen2_5_VLVisionRotaryEmbedding"),
    "qwen3_vl_vision": ("qwen3_vl", "Qwen3VLVisionRotaryEmbedding"),
    "qwen3_5_vision": ("qwen3_5", "Qwen3_5VisionRotaryEmbedding"),
    "qwen3_5_moe_vision": ("qwen3_5_moe", "Qwen3_5MoeVisionRotaryEmbedding"),
}


def released_vl_configs() -> list:
    from tests.corpus.build import FOLDER, files

    if not FOLDER.is_dir():
        return []
    out = []
    for path in files():
        config = json.loads(path.read_text())
        if vision_tower(config) is not None:
            out.append(pytest.param(path, id=path.name[-60:]))
    return out


@pytest.mark.parametrize("path", released_vl_configs())
def test_released_vision_towers_have_the_module_frequencies(transformers, path):
    """Each released VL file's tower: the frequencies of the rotary module transformers builds.

    The top-level config class builds the vision config from the file (whatever model_type the
    file's vision_config says); its rotary module's inv_freq (float32) must be ours.
    """
    import importlib

    raw = json.loads(path.read_text())
    spec = axial_spec(raw)
    config = config_class(raw["model_type"]).from_dict(json.loads(path.read_text()))
    vision = config.vision_config
    assert vision.model_type == spec.model_type
    folder, name = ROTARY[spec.model_type]
    m = importlib.import_module(f"transformers.models.{folder}.modeling_{folder}")
    theirs = getattr(m, name)(vision).inv_freq.double()
    ours = spec.inv_freq
    if spec.scheme == "qwen2_vl":  # the module holds one axis's d/4 frequencies
        ours = ours[: spec.head_dim // 4]
    # HF forms base ** (2i / d) in float32: relative error up to ~2**-24 (ln base + 10)
    torch.testing.assert_close(theirs, ours, rtol=2**-24 * (math.log(spec.base) + 10), atol=0)
    attention = vision.embed_dim if spec.model_type == "qwen2_vl_vision" else vision.hidden_size
    heads = getattr(vision, "num_heads", None) or vision.num_attention_heads
    assert spec.head_dim == getattr(vision, "head_dim", None) or attention // heads
    if hasattr(vision, "spatial_merge_size"):
        assert spec.merge_size == vision.spatial_merge_size


def test_released_vl_configs_are_found():
    from tests.corpus.build import FOLDER

    if not FOLDER.is_dir():
        pytest.skip(f"{FOLDER} is absent (the released configs stay in ../shared)")
    assert len(released_vl_configs()) >= 5


# --------------------------------------------------------------------------- refusals


@pytest.mark.parametrize("model_type", sorted(VISION))
def test_the_1d_reader_refuses_a_vision_config_and_names_axial_spec(transformers, model_type):
    """Also with layout= (a 1-D RoPE would be silently wrong): the message names the reader."""
    config = config_class(model_type)()
    for layout in (None, "half", "interleaved"):
        with pytest.raises(NotImplementedError, match=r"posenc_ref\.models\.axial_spec"):
            rope_spec(config, layout=layout)
        with pytest.raises(NotImplementedError, match=r"posenc_ref\.models\.axial_spec"):
            RotaryEmbedding.from_hf_config(config.to_dict(), layout=layout)


def test_bad_vision_values_are_refused_by_name():
    base = {"model_type": "qwen2_vl", "vision_config": {"embed_dim": 1280, "num_heads": 16}}
    with pytest.raises(ValueError, match=r"vision_config\.embed_dim=1280 is not a multiple of"):
        axial_spec({**base, "vision_config": {"embed_dim": 1280, "num_heads": 3}})
    with pytest.raises(ValueError, match="not a multiple of 4"):
        axial_spec({**base, "vision_config": {"embed_dim": 1302, "num_heads": 21}})
    with pytest.raises(ValueError, match=r"rope_parameters\.rope_type must be 'axial'"):
        axial_spec({**base, "vision_config": {"rope_parameters": {"rope_type": "yarn"}}})
    with pytest.raises(ValueError, match="inconsistent rope_theta"):
        axial_spec({"model_type": "pixtral", "rope_theta": 1e4,
                    "rope_parameters": {"rope_theta": 2e4}})  # fmt: skip
    with pytest.raises(ValueError, match=r"no vision tower posenc_ref reads .*'llama'"):
        axial_spec({"model_type": "llama"})
    with pytest.raises(TypeError, match="spatial_merge_size must be an integer"):
        axial_spec({**base, "vision_config": {"spatial_merge_size": "2"}})
    with pytest.raises(ValueError, match=r"vision_config\.num_heads must be an integer in"):
        axial_spec({**base, "vision_config": {"embed_dim": 1280, "num_heads": 2**40}})


def test_a_vision_config_is_its_own_tower_and_a_text_config_has_none():
    assert vision_tower({"model_type": "llama"}) is None
    spec = vision_tower({"model_type": "dinov3_vit", "rope_theta": 100.0})
    assert (spec.scheme, spec.base, spec.read_from) == ("dinov3", 100.0, "")


# --------------------------------------------------------------------------- inspect


def test_inspect_shows_a_vl_configs_vision_tower_and_reads_a_vision_config_alone(tmp_path, capsys):
    from posenc_ref.__main__ import main

    vl = tmp_path / "vl" / "config.json"
    vl.parent.mkdir()
    vl.write_text(json.dumps({
        "model_type": "qwen2_vl", "hidden_size": 3584, "num_attention_heads": 28,
        "rope_scaling": {"type": "mrope", "mrope_section": [16, 24, 24]}, "rope_theta": 1e6,
        "vision_config": {"embed_dim": 1280, "num_heads": 16, "spatial_merge_size": 2},
    }))  # fmt: skip
    assert main(["inspect", str(vl)]) == 0
    out = capsys.readouterr().out
    assert out.startswith("RoPE of model_type 'qwen2_vl'")  # the language model, then the tower
    assert "vision tower (vision_config model_type 'qwen2_vl_vision')" in out
    assert "head width 80" in out and "in 2 x 2 blocks" in out
    alone = tmp_path / "dinov3.json"
    alone.write_text(json.dumps({"model_type": "dinov3_vit", "rope_theta": 100.0}))
    assert main(["inspect", str(alone)]) == 0
    out = capsys.readouterr().out
    assert out.startswith("vision tower (model_type 'dinov3_vit')") and "base 100," in out


@pytest.mark.parametrize("model_type", ["sam2_vision_model", "sam2_video"])
def test_sam2_configs_with_layout_are_refused_not_read_as_1d(transformers, model_type):
    """SAM 2's axial RoPE (memory attention) is not read as a 1-D RoPE, whatever layout= says."""
    config = config_class(model_type)().to_dict()
    for layout in ("half", "interleaved"):
        with pytest.raises(NotImplementedError, match="axial"):
            rope_spec(config, layout=layout)
