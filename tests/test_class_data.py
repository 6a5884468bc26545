"""The config classes' defaults and rewrites, by construction (issue 38, item 1).

``posenc_ref/models/class_data.json`` is written by ``python -m tests.class_data --write`` from
transformers' config classes; the reader fills a key a config leaves out from it. Here: the
committed file is what the installed transformers' classes say (regenerated and compared); the
hand-written defaults of the family rows agree with it; the head width the reader derives where a
class derives one is the class's; and the cases issue 38 names, read with and without
transformers.
"""

import json
import math

import pytest

from posenc_ref.models import FAMILIES, axial_spec, rope_spec
from posenc_ref.models.classes import class_data, class_of, wrapper_of
from posenc_ref.models.traits import ConfigClass, Defaults, Mla, NamedTables, ReadAs
from tests import class_data as generator

DATA = class_data()
build = generator.build  # an instance, or None where the class refuses the values


@pytest.fixture(scope="module")
def transformers():
    module = pytest.importorskip("transformers")
    if not module.__version__.startswith(DATA["transformers"].rsplit(".", 1)[0]):
        pytest.skip(f"class_data.json describes transformers {DATA['transformers']}")
    return module


def test_the_committed_file_is_what_the_classes_say(transformers):
    """Regenerated from the installed classes (the types the file describes), it is the same."""
    from transformers.models.auto.configuration_auto import CONFIG_MAPPING_NAMES

    assert DATA["model_types"] == sorted(CONFIG_MAPPING_NAMES)
    types = sorted(set(DATA["classes"]) | set(DATA["wrappers"]))
    fresh = generator.generate(types)
    assert fresh["keys"] == DATA["keys"], (
        "the reader's keys moved: python -m tests.class_data --write"
    )
    assert fresh["classes"] == DATA["classes"]
    assert fresh["wrappers"] == DATA["wrappers"]
    committed = {k: v for k, v in DATA["architectures"].items() if v in fresh["classes"] or
                 v in fresh["wrappers"]}  # fmt: skip
    assert fresh["architectures"] == committed


def rope_theta(rope, layer_type=None):
    if layer_type is not None and isinstance(rope.get(layer_type), dict):
        return rope[layer_type].get("rope_theta")
    return rope.get("rope_theta")


def row_theta(row, layer_type):
    """The base a row gives a config without any RoPE key (its RoPE dict's, else its theta)."""
    own = row.rope or {}
    if layer_type is not None and isinstance(own.get(layer_type), dict):
        own = own[layer_type]
    elif layer_type is not None and own and any(isinstance(v, dict) for v in own.values()):
        own = {}
    return own.get("rope_theta", row.theta_default(layer_type))


@pytest.mark.parametrize("name", sorted(n for n in FAMILIES if class_of(n)))
def test_a_rows_own_defaults_are_its_config_classs(name):
    """Where a row still writes a default by hand, it is the one the class data holds."""
    row, entry = FAMILIES[name], class_of(name)
    read_as = row.trait(ReadAs)
    row = FAMILIES[read_as.model_type] if read_as else row  # read with its text row
    defaults = entry["defaults"]
    rope = defaults.get("rope_parameters")
    built = row.trait(NamedTables) or row.trait(ConfigClass)  # a rule builds its dicts (tested
    if row.encoding == "rope" and isinstance(rope, dict) and not built:  # with the rule)
        types = [t for t in rope if isinstance(rope[t], dict)] or [None]
        for layer_type in types:
            theta = rope_theta(rope, layer_type)
            if theta is not None:
                assert math.isclose(row_theta(row, layer_type), theta), (name, layer_type)
    if row.head_dim is not None and "head_dim" in defaults and row.trait(Mla) is None:
        assert row.head_dim == defaults["head_dim"], name
    own = row.trait(Defaults)
    for key, value in (own.values if own else {}).items():
        if key in defaults and not callable(value):
            assert value == defaults[key], (name, key)


def test_a_derived_head_width_is_the_classs(transformers):
    """Where a class derives head_dim from the widths, the reader's rule gives its value."""
    from transformers.models.auto.configuration_auto import CONFIG_MAPPING

    checked, wrong = 0, {}
    for name, entry in DATA["classes"].items():
        row = FAMILIES.get(name)
        if row is None or row.encoding != "rope" or "head_dim" not in entry.get("derived", ()):
            continue
        config = build(CONFIG_MAPPING[name], hidden_size=1040, num_attention_heads=8)
        if config is None or getattr(config, "head_dim", None) is None:
            continue
        given = {"model_type": name, "hidden_size": 1040, "num_attention_heads": 8}
        try:
            spec = rope_spec(given)
        except (ValueError, NotImplementedError):
            continue  # a row that needs more keys than the widths (layer types, M-RoPE)
        if not spec.head_dim == config.head_dim == 130:
            wrong[name] = (spec.head_dim, config.head_dim)
        checked += 1
    assert wrong == {}
    assert checked >= 20


def test_pixtral_derives_its_head_width_from_the_widths():
    """PixtralVisionConfig: head_dim = hidden_size // num_attention_heads (not a constant 64)."""
    assert axial_spec({"model_type": "pixtral", "hidden_size": 2048,
                       "num_attention_heads": 16}).head_dim == 128  # fmt: skip
    mistral3 = {"model_type": "mistral3", "vision_config": {
        "model_type": "pixtral", "hidden_size": 1280, "num_attention_heads": 16}}  # fmt: skip
    assert axial_spec(mistral3).head_dim == 80
    assert "head_dim" in class_of("pixtral")["derived"]


def test_pixtral_head_width_is_the_classs(transformers):
    from transformers import PixtralVisionConfig

    assert PixtralVisionConfig(hidden_size=2048, num_attention_heads=16).head_dim == 128


def test_pe_audio_takes_its_class_head_width():
    """PeAudioEncoderConfig's head_dim default is 128 (hidden_size / heads would give 64)."""
    audio = {"hidden_size": 1024, "num_attention_heads": 16}
    spec = rope_spec({"model_type": "pe_audio", "audio_config": audio})
    assert spec.head_dim == 128 == class_of("pe_audio_encoder")["defaults"]["head_dim"]


QWEN2_AUDIO = {  # Qwen2-Audio-7B's text_config carries only what differs from Qwen2Config
    "model_type": "qwen2_audio",
    "text_config": {"model_type": "qwen2", "intermediate_size": 11008,
                    "max_position_embeddings": 8192, "rope_theta": 10000, "vocab_size": 156032},
}  # fmt: skip


def test_a_sparse_text_config_is_filled_from_its_class():
    spec = rope_spec(QWEN2_AUDIO)
    assert (spec.head_dim, spec.base) == (4096 // 32, 10000)
    assert wrapper_of("qwen2_audio")["model_type"] == "qwen2"


def test_a_sparse_text_config_is_what_transformers_builds(transformers):
    config = transformers.Qwen2AudioConfig.from_dict(json.loads(json.dumps(QWEN2_AUDIO)))
    text = config.get_text_config()
    assert text.hidden_size // text.num_attention_heads == rope_spec(QWEN2_AUDIO).head_dim


def test_an_explicit_null_is_the_config_s_not_the_default():
    """GPT-J's "rotary_dim": null rotates the whole head; absent, the class's 64 applies."""
    gptj = {"model_type": "gptj", "n_embd": 4096, "n_head": 16}
    assert rope_spec(gptj).rotary_dim == 64
    assert rope_spec({**gptj, "rotary_dim": None}).rotary_dim == 256
