"""Shapes of config met on files the reader was never built against, each against its class.

Found by running the corpus check (tests/corpus/check.py) on 65 configs from the corpus's own
source repositories that are not in the corpus. Each test writes the shape from its facts
(the source path and commit are cited) and compares the reader with what transformers 5.23's
config class and rotary module make of the same dict; the mechanical tests run the same rule
over every family it can apply to, so that a file of that shape in any family is caught:

- a config class that builds its RoPE dicts from the file's own keys (Step 3.5's per-layer
  ``rope_theta``, ModernBERT's ``global_rope_theta``): the row's default dict must not replace
  them, and a layer type the default dict lacks is read as the class builds it;
- Llama 4's class rebuilds an empty ``no_rope_layers`` as if absent (SmolLM3's does not).
"""

import warnings

import pytest
import torch

from posenc_ref.models import FAMILIES, layer_specs
from posenc_ref.models.classes import class_data
from posenc_ref.models.traits import RopeLayers

# The helpers that read a config dict as transformers does, shared with the rewrites' tests.
from tests.test_config_rewrites import ULP, hf_config, hf_inv_freq


@pytest.fixture(scope="module")
def transformers():
    module = pytest.importorskip("transformers")
    module.logging.set_verbosity_error()
    return module


def agree_per_type(raw: dict, theirs, folder: str, rotary: str) -> None:
    """Every layer's type and frequencies, from the dict and from the object, as the class's."""
    for source in (raw, theirs, theirs.to_dict()):
        specs = layer_specs(source)
        assert [s.layer_type for s in specs] == theirs.layer_types
        for layer_type in set(theirs.layer_types):
            spec = next(s for s in specs if s.layer_type == layer_type)
            got = hf_inv_freq(theirs, folder, rotary, layer_type)
            assert spec.inv_freq.shape == got.shape, layer_type
            torch.testing.assert_close(spec.inv_freq, got, rtol=8 * ULP, atol=0)


# --------------------------------------------------------------------------- Step 3.5 / 3.7

# Step-3.7-Flash as ai-dynamo/aiconfigurator describes it for its performance model
# (aic-core/src/aiconfigurator_core/model_configs/stepfun-ai--Step-3.7-Flash_config.json at
# 095f58a51c4c): the text keys flat beside model_type step3p7, 45 layers, one full-attention
# layer then three sliding-window ones, three MTP layers, no RoPE key at all.
STEP_TYPES = (["full_attention"] + ["sliding_attention"] * 3) * 11 + ["full_attention"]
STEP = {"model_type": "step3p5", "num_hidden_layers": 45, "hidden_size": 4096,
        "num_attention_heads": 64, "num_key_value_heads": 8, "head_dim": 128,
        "max_position_embeddings": 65536, "sliding_window": 512, "layer_types": STEP_TYPES,
        "num_nextn_predict_layers": 3}  # fmt: skip
# (the per-layer lists as Step-3.5-Flash's remote config class saves them: one entry per layer,
# MTP layers included; the values are test values)
MTP_PADDED = {"layer_types": STEP_TYPES + ["full_attention"] * 3,
              "rope_theta": [5e6 if t == "full_attention" else 1e4 for t in STEP_TYPES] + [5e6] * 3,
              "partial_rotary_factors": [0.5 if t == "full_attention" else 1.0
                                         for t in STEP_TYPES] + [0.5] * 3}  # fmt: skip
LLAMA3 = {"rope_type": "llama3", "factor": 2.0, "low_freq_factor": 1.0, "high_freq_factor": 32.0,
          "original_max_position_embeddings": 65536}  # fmt: skip
STEP_CASES = {
    "no RoPE key (the aiconfigurator file's text)": {},
    "per-layer lists padded with the MTP layers": MTP_PADDED,
    "one base for every layer": {"rope_theta": 5e5},
    "rope_scaling: the full-attention layers only": {"rope_scaling": LLAMA3},
    "a flat rope_parameters, which the class replaces": {
        "rope_parameters": {"rope_type": "default", "rope_theta": 5e5}},
    "a top-level partial_rotary_factor, which no layer reads": {"partial_rotary_factor": 0.5},
}  # fmt: skip


@pytest.mark.parametrize("case", STEP_CASES)
def test_step3p5_rope_per_layer_type_as_its_config_class_builds_it(transformers, case):
    raw = {**STEP, **STEP_CASES[case]}
    theirs = hf_config(transformers, raw)
    agree_per_type(raw, theirs, "step3p7", "Step3p7RotaryEmbedding")


def test_step3p7_flat_file_is_read_where_its_text_keys_are(transformers):
    """The aiconfigurator file: both layer types rotate, as the class builds them.

    transformers' Step3p7Config builds its text_config from defaults (every layer full
    attention, base 1e4): the same rotation in every layer, so the two readings agree here.
    """
    flat = {**STEP, "model_type": "step3p7", "architectures": ["Step3p7FlashForCausalLM"]}
    specs = layer_specs(flat)
    assert [s.layer_type for s in specs] == STEP_TYPES
    text = hf_config(transformers, STEP)
    wrapper = hf_config(transformers, flat).get_text_config()
    for layer_type in ("full_attention", "sliding_attention"):
        got = hf_inv_freq(text, "step3p7", "Step3p7RotaryEmbedding", layer_type)
        spec = next(s for s in specs if s.layer_type == layer_type)
        torch.testing.assert_close(spec.inv_freq, got, rtol=8 * ULP, atol=0)
    default = hf_inv_freq(wrapper, "step3p7", "Step3p7RotaryEmbedding", "full_attention")
    torch.testing.assert_close(specs[1].inv_freq, default, rtol=8 * ULP, atol=0)


def test_step3p5_per_layer_list_too_short_is_refused_naming_it():
    raw = {**STEP, "rope_theta": [5e6]}
    with pytest.raises(ValueError, match=r"rope_theta lists 1 entries, but layer 1"):
        layer_specs(raw)


# --------------------------------------------------------------------------- every class


def nested_default_types() -> dict[str, list[str]]:
    """Families whose class's default RoPE dict is one per layer type -> those types."""
    out = {}
    for model_type, entry in class_data()["classes"].items():
        rope = entry.get("defaults", {}).get("rope_parameters")
        nested = (
            isinstance(rope, dict)
            and rope
            and all(v is None or isinstance(v, dict) for v in rope.values())
        )
        if (
            nested
            and model_type in FAMILIES
            and set(rope) & {"full_attention", "sliding_attention"}
        ):
            out[model_type] = list(rope)
    return out


@pytest.mark.parametrize("model_type", sorted(nested_default_types()))
def test_layer_types_beyond_the_class_default_dict_are_read_as_the_class_builds_them(
    transformers, model_type
):
    """Give the class both common layer types, whatever its default dict holds.

    A class that builds its dicts from the layer types present (Step 3.5) and one with a
    fixed default (Gemma 3) must both be read as they are built: every layer's base as the
    class's dict for its type; where the class's dict lacks a type, the reader refuses it.
    """
    types = ["full_attention", "sliding_attention"] * 2
    raw = {"model_type": model_type, "num_hidden_layers": 4, "layer_types": types}
    try:
        theirs = hf_config(transformers, raw)
    except Exception:  # noqa: BLE001 (the class refuses these layer types: nothing to compare)
        pytest.skip("the config class refuses these layer types")
    rope = theirs.rope_parameters
    if any(t not in rope for t in theirs.layer_types):  # its rotary module cannot be built
        with pytest.raises(ValueError):
            layer_specs(raw)
        return
    specs = layer_specs(raw)
    assert [s.layer_type for s in specs if s is not None] == [
        t for t in theirs.layer_types if rope[t] is not None
    ]
    for i, spec in enumerate(specs):
        if spec is not None:  # None: a layer its code does not rotate (Beam's null dict)
            assert spec.base == rope[theirs.layer_types[i]]["rope_theta"], (i, model_type)


@pytest.mark.parametrize("model_type", sorted(nested_default_types()))
def test_a_default_dict_type_no_layer_uses_is_not_asked_for(transformers, model_type):
    """Every layer one type of the class's default dict: the command line reads those layers.

    LFM3 with four layers has no sliding layer, yet its class's dict keeps a sliding entry;
    ``inspect`` asked for it and refused a config transformers builds. The types shown are the
    ones the layers use, each with its own spec.
    """
    from posenc_ref.encodings import positional_encoding, rope_layer_types

    for only in ("full_attention", "sliding_attention"):
        raw = {"model_type": model_type, "num_hidden_layers": 2, "layer_types": [only] * 2}
        try:
            theirs = hf_config(transformers, raw)
        except Exception:  # noqa: BLE001 (the class refuses these layer types)
            continue
        rope = theirs.rope_parameters
        if any(t not in rope for t in theirs.layer_types):
            continue  # its rotary module has no table for a type its layers use
        assert positional_encoding(raw) is not None, (model_type, only)
        used = {t for t in theirs.layer_types if rope[t] is not None}  # the class's own types
        if not used:
            continue  # no layer rotates (Beam's null type): every entry is described instead
        assert set(rope_layer_types(raw, FAMILIES[model_type])) == used, (model_type, only)


def test_lfm3_with_no_sliding_layer_is_read(transformers):
    """LFM3's class builds four layers as conv, conv, full, conv: one RoPE, as its code has."""
    from posenc_ref.encodings import positional_encoding

    raw = {"model_type": "lfm3", "num_hidden_layers": 4}
    theirs = hf_config(transformers, raw)
    assert "sliding_attention" not in theirs.layer_types
    positional_encoding(raw)  # refused before ("--layer-type sliding_attention ...")
    specs = layer_specs(raw)
    assert [s is not None for s in specs] == [t == "full_attention" for t in theirs.layer_types]


ROPE_TYPES_IN_TRANSFORMERS = sorted(
    name for name, row in FAMILIES.items()
    if row.encoding == "rope" and name in class_data()["classes"]
)  # fmt: skip


def test_layer_types_the_class_builds_are_never_read_otherwise(transformers):
    """Every RoPE family, five layers and no layer_types: the class's types, or a refusal.

    Five layers, so that a class forcing its last layer to full attention (Gemma 4,
    EmbeddingGemma 2) differs from a plain every-sixth pattern. A refusal asks for the layer
    types; a list of types other than the class's would be a wrong answer.
    """
    from transformers.models.auto.configuration_auto import CONFIG_MAPPING

    compared = 0
    for model_type in ROPE_TYPES_IN_TRANSFORMERS:
        if model_type not in CONFIG_MAPPING:
            continue
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                config = CONFIG_MAPPING[model_type](num_hidden_layers=5)
            except Exception:  # noqa: BLE001 (a class that needs more than a layer count)
                continue
        types = getattr(config, "layer_types", None)
        if not isinstance(types, list) or len(set(types)) < 2:
            continue
        try:
            specs = layer_specs({"model_type": model_type, "num_hidden_layers": 5})
        except ValueError as error:
            assert "layer_type" in str(error), (model_type, str(error))
            continue
        got = [None if s is None else s.layer_type for s in specs]
        assert all(g is None or g == t for g, t in zip(got, types, strict=True)), model_type
        rope = config.rope_parameters or {}
        for spec, layer_type in zip(specs, types, strict=True):
            own = rope.get(layer_type, rope)  # one dict per layer type, or one for all
            if spec is not None and isinstance(own, dict) and "rope_theta" in own:
                assert spec.base == own["rope_theta"], (model_type, layer_type)
        compared += 1
    # measured: all 39 families whose class builds several layer types from a layer count
    assert compared >= 39


WINDOWED = sorted(
    name for name, row in FAMILIES.items()
    if row.trait(RopeLayers) is not None and name in class_data()["classes"]
)  # fmt: skip


def test_an_absent_sliding_window_is_the_classs_default(transformers):
    """Which layers rotate, without sliding_window and with the class's default: the same.

    (Cohere 2 rotates only where a window is set, EXAONE 4 only in the sliding layers when
    one is: an absent key is the class's window, 4096 or 513, not null.)
    """
    from transformers.models.auto.configuration_auto import CONFIG_MAPPING

    types = ["sliding_attention", "sliding_attention", "sliding_attention", "full_attention"]
    checked = 0
    for model_type in WINDOWED:
        raw = {"model_type": model_type, "num_hidden_layers": 4, "layer_types": types}
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                window = CONFIG_MAPPING[model_type](num_hidden_layers=4).sliding_window
            absent = [s is not None for s in layer_specs(raw)]
        except (AttributeError, KeyError, TypeError, ValueError):
            continue  # no window in this class, or no reading of these layer types
        given = [s is not None for s in layer_specs({**raw, "sliding_window": window})]
        assert absent == given, model_type
        checked += 1
    assert checked >= 5  # Cohere 2 (and MoE), EXAONE 4 (and MoE), Kolibri at least


ULTRABERT = {"model_type": "ultrabert", "num_hidden_layers": 6, "hidden_size": 64,
             "num_attention_heads": 4}  # fmt: skip
ULTRABERT_CASES = {
    "class default types": {},
    "older attention_windows": {"attention_windows": [128, 128, 0, 128, 0, 0]},
    "older per-layer bases": {"attention_windows": [128, 0, 128, 0, 128, 0],
                              "rope_theta": [1e4, 1e6, 2e4, 2e6, 3e4, 3e6]},
}  # fmt: skip


@pytest.mark.parametrize("case", ULTRABERT_CASES)
def test_ultrabert_older_keys_as_its_class_reads_them(transformers, case):
    raw = {**ULTRABERT, **ULTRABERT_CASES[case]}
    theirs = hf_config(transformers, raw)
    agree_per_type(raw, theirs, "ultrabert", "UltrabertRotaryEmbedding")


EMBEDDING_GEMMA2_CASES = {
    "class default types": {"num_hidden_layers": 5},
    "own pattern": {"num_hidden_layers": 8, "sliding_window_pattern": 3},
    "types ending in sliding": {"num_hidden_layers": 4,
                                "layer_types": ["full_attention", "sliding_attention"] * 2},
    "own global width": {"num_hidden_layers": 6, "global_head_dim": 384},
}  # fmt: skip


@pytest.mark.parametrize("case", EMBEDDING_GEMMA2_CASES)
def test_embedding_gemma2_widths_and_types_as_its_class_builds_them(transformers, case):
    """Full-attention heads global_head_dim wide (default 512), the last layer full attention."""
    raw = {"model_type": "embedding_gemma2_text", **EMBEDDING_GEMMA2_CASES[case]}
    theirs = hf_config(transformers, raw)
    agree_per_type(raw, theirs, "embedding_gemma2", "EmbeddingGemma2RotaryEmbedding")


def test_modernbert_own_bases_without_a_rope_dict(transformers):
    """ModernBERT's class builds both dicts from global_rope_theta and local_rope_theta."""
    raw = {"model_type": "modernbert", "num_hidden_layers": 6, "hidden_size": 64,
           "num_attention_heads": 4, "global_rope_theta": 8e4, "local_rope_theta": 2e4}  # fmt: skip
    theirs = hf_config(transformers, raw)
    agree_per_type(raw, theirs, "modernbert", "ModernBertRotaryEmbedding")


# --------------------------------------------------------------------------- no_rope_layers

# Llama 4 Scout's text config as aws-neuron/neuronx-distributed-inference's integration test
# reduces it (test/integration/tp32/models/llama/llama4/config_16E_4layer.json): four layers and
# "no_rope_layers": [] (the released Scout config's empty list, kept as the class rebuilds it)
NO_ROPE_READERS = sorted(
    name for name, row in FAMILIES.items()
    if (rule := row.trait(RopeLayers)) is not None and "no_rope_layers" in rule.reads
)  # fmt: skip


@pytest.mark.parametrize("model_type", NO_ROPE_READERS)
def test_an_empty_no_rope_layers_is_read_as_the_class_reads_it(transformers, model_type):
    """Llama 4's class rebuilds it (every fourth layer without RoPE); SmolLM3's keeps it."""
    raw = {"model_type": model_type, "num_hidden_layers": 4, "no_rope_layers": []}
    try:
        listed = hf_config(transformers, raw).no_rope_layers
    except IndexError:  # SmolLM3's class reads entry i for layer i's type
        listed = []
    if len(listed) < 4:  # the model reads entry i for layer i: it cannot build the last layers
        with pytest.raises(ValueError, match="no_rope_layers lists 0 entries"):
            layer_specs(raw)
        return
    rotating = [spec is not None for spec in layer_specs(raw)]
    assert rotating == [bool(v) for v in listed]
