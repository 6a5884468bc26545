"""Agreement of posenc_ref.models with HF transformers, family by family (skipped without it).

Every released config of the model zoo (posenc_ref/data/released_rope_configs.json) is built with
its transformers config class (nothing downloaded, no weights) and read by ``rope_spec``; the
family's own rotary module must produce the same frequencies and attention factor, inside and far
past the original context. The q/k rotation and logits comparisons are below.

Tolerances are those of tests/test_peers.py: HF forms frequencies in float32 (relative error
``2**-24 * (ln(base) + 8)``) and angles ``position * inv_freq`` in float32 (absolute error
``2**-24 * (max_position + 1) * (ln(base) + 10)``).
"""

import copy
import importlib
import math

import pytest
import torch

from posenc_ref.models import released_configs, rope_spec

pytestmark = pytest.mark.peers

ULP = 2.0**-24


def freq_rtol(base: float) -> float:
    return ULP * (math.log(base) + 8)


def angle_atol(max_position: int, base: float) -> float:
    return ULP * (max_position + 1) * (math.log(base) + 10) + 8 * ULP


# model_type of the language model -> (modeling module, rotary class)
ROTARY = {
    "llama": ("llama", "LlamaRotaryEmbedding"),
    "mistral": ("mistral", "MistralRotaryEmbedding"),
    "qwen2": ("qwen2", "Qwen2RotaryEmbedding"),
    "gemma3_text": ("gemma3", "Gemma3RotaryEmbedding"),
    "gpt_neox": ("gpt_neox", "GPTNeoXRotaryEmbedding"),
    "phi": ("phi", "PhiRotaryEmbedding"),
    "stablelm": ("stablelm", "StableLmRotaryEmbedding"),
    "glm4": ("glm4", "Glm4RotaryEmbedding"),
    "phi3": ("phi3", "Phi3RotaryEmbedding"),
    "qwen2_vl": ("qwen2_vl", "Qwen2VLRotaryEmbedding"),
    "qwen2_5_vl": ("qwen2_5_vl", "Qwen2_5_VLRotaryEmbedding"),
    "qwen3_vl": ("qwen3_vl", "Qwen3VLTextRotaryEmbedding"),
    "qwen3_5_moe": ("qwen3_5_moe", "Qwen3_5MoeTextRotaryEmbedding"),
    "deepseek_v3": ("deepseek_v3", "DeepseekV3RotaryEmbedding"),
    "gpt_oss": ("gpt_oss", "GptOssRotaryEmbedding"),
}

TEXT_TO_FAMILY = {
    "qwen2_vl_text": "qwen2_vl",
    "qwen2_5_vl_text": "qwen2_5_vl",
    "qwen3_vl_text": "qwen3_vl",
    "qwen3_5_moe_text": "qwen3_5_moe",
}

ENTRIES = [
    pytest.param(
        entry, layer_type, id=f"{entry['name']}" + (f"-{layer_type}" if layer_type else "")
    )
    for entry in released_configs()
    for layer_type in entry.get("layer_types", [None])
]


@pytest.fixture(scope="module")
def transformers():
    return pytest.importorskip("transformers")


def hf_text_config(transformers, config: dict):
    """The transformers config object of the language model, from the released dict."""
    config = copy.deepcopy(config)  # transformers standardizes the dicts it is given in place
    built = transformers.AutoConfig.for_model(config.pop("model_type"), **config)
    return built.get_text_config()


def hf_rotary(transformers, text_config):
    model_type = text_config.model_type
    key = TEXT_TO_FAMILY.get(model_type, model_type)
    module, name = ROTARY[key]
    modeling = importlib.import_module(f"transformers.models.{module}.modeling_{module}")
    return getattr(modeling, name)(text_config), modeling


def hf_frequencies(rotary, layer_type):
    prefix = f"{layer_type}_" if layer_type else ""
    inv_freq = getattr(rotary, f"{prefix}inv_freq")
    scale = getattr(rotary, f"{prefix}attention_scaling", None)
    if scale is None:
        scale = rotary.attention_scaling
    return inv_freq.double(), float(scale)


def test_every_family_of_the_issue_is_in_the_zoo():
    """Issue 8's table plus DeepSeek-V3: at least 15 released families, each rope_type covered."""
    names = [e["name"] for e in released_configs()]
    assert len(names) >= 15 and len(set(names)) == len(names)
    types = {e["config"].get("model_type") for e in released_configs()}
    for needed in ("llama", "mistral", "qwen2", "gemma3", "gpt_neox", "phi", "stablelm", "glm4",
                   "phi3", "qwen2_vl", "qwen2_5_vl", "qwen3_vl", "deepseek_v3"):  # fmt: skip
        assert needed in types, needed


@pytest.mark.parametrize("entry, layer_type", ENTRIES)
def test_released_frequencies_agree_with_hf(transformers, entry, layer_type):
    """Frequencies and attention factor at init (inside the original context)."""
    text_config = hf_text_config(transformers, entry["config"])
    rotary, _ = hf_rotary(transformers, text_config)
    theirs, scale = hf_frequencies(rotary, layer_type)
    spec = rope_spec(entry["config"], layer_type=layer_type)
    torch.testing.assert_close(theirs, spec.inv_freq, rtol=freq_rtol(spec.base), atol=0)
    assert scale == pytest.approx(spec.attention_factor, rel=1e-12)


@pytest.mark.parametrize("entry, layer_type", ENTRIES)
def test_transformers_config_object_reads_the_same(transformers, entry, layer_type):
    """A transformers config object (standardized to rope_parameters) gives the same spec."""
    from_dict = rope_spec(entry["config"], layer_type=layer_type)
    text_config = hf_text_config(transformers, entry["config"])
    from_object = rope_spec(text_config, layer_type=layer_type)
    for name in ("head_dim", "rotary_dim", "layout", "output_layout", "base", "rope_type",
                 "original_max_len", "max_len", "mrope_section", "mrope_interleaved"):  # fmt: skip
        assert getattr(from_object, name) == getattr(from_dict, name), name
    assert torch.equal(from_object.inv_freq, from_dict.inv_freq)
    assert from_object.attention_factor == from_dict.attention_factor
