"""Bad input to the config reader (posenc_ref.models): issue 19's defects, each at its mechanism.

Every case here once gave a wrong answer, a misleading message or an internal exception. Each
test names the mechanism it checks, so a regression points at the right place.
"""

import pytest
import torch

from posenc_ref import RotaryEmbedding
from posenc_ref.models import FAMILIES, NoRopeError, layer_specs, released_config, rope_spec
from posenc_ref.models.traits import LayoutFlag

LLAMA = {"model_type": "llama", "hidden_size": 4096, "num_attention_heads": 32,
         "max_position_embeddings": 8192}  # fmt: skip
# A DeepSeek-V2 / V3.2-style attention under a model_type the table does not know.
MLA_UNLISTED = {
    "model_type": "my_mla_model",
    "hidden_size": 5120,
    "num_attention_heads": 128,
    "qk_rope_head_dim": 64,
    "qk_nope_head_dim": 128,
    "rope_theta": 10000.0,
}


def both(config, **kwargs):
    """rope_spec and from_hf_config must give the same answer: call both, return the errors."""
    errors = []
    for read in (rope_spec, RotaryEmbedding.from_hf_config):
        try:
            read(config, **kwargs)
            errors.append(None)
        except Exception as error:  # noqa: BLE001 (compared below)
            errors.append(error)
    return errors


# --- an escape hatch never gives a wrong answer ------------------------------------------------


def test_layout_for_an_unlisted_mla_config_is_refused_not_read_as_hidden_over_heads():
    """layout= on an unknown family reads the convention only; a width key it cannot place refuses.

    The family code of such a config rotates qk_rope_head_dim (64) coordinates, not
    hidden_size / num_attention_heads (40); reading the latter would be silently wrong.
    """
    with pytest.raises(ValueError, match="qk_rope_head_dim") as error:
        rope_spec(MLA_UNLISTED, layout="interleaved")
    message = str(error.value)
    assert "deepseek_v2" in message and "deepseek_v3" in message
    assert "not in the family table" in message
    # the same config under a family that does read the key gives the family's width
    spec = rope_spec({**MLA_UNLISTED, "model_type": "deepseek_v2"})
    assert (spec.head_dim, spec.rotary_dim, spec.nope_dim) == (64, 64, 128)


def test_every_family_key_is_refused_for_an_unlisted_family():
    """Mechanism: any top-level key some row reads is refused where no row says it is read."""
    from posenc_ref.models.families import keys_read_by

    base = {"model_type": "my_model", "head_dim": 64, "rope_theta": 1e4}
    for key in keys_read_by():
        with pytest.raises(ValueError, match=key):
            rope_spec({**base, key: 3}, layout="half")


# --- refusal messages say what the code does ---------------------------------------------------


def test_rotary_dim_message_names_both_meanings():
    """rotary_dim is GPT-J's absolute width (interleaved) and MiniMax-M2's partial factor (half)."""
    with pytest.raises(ValueError, match="rotary_dim") as error:
        rope_spec({**LLAMA, "rotary_dim": 64})
    message = str(error.value)
    assert "minimax_m2" in message and "rotary_dim / head_dim" in message and "half" in message
    assert "gptj" in message and "rotate_every_two" in message and "interleaved" in message


def test_rotary_dim_is_read_as_each_family_reads_it():
    minimax = rope_spec({"model_type": "minimax_m2", "hidden_size": 3072, "num_attention_heads": 48,
                         "head_dim": 128, "rotary_dim": 64})  # fmt: skip
    assert (minimax.rotary_dim, minimax.layout) == (64, "half")
    gptj = rope_spec({"model_type": "gptj", "n_embd": 4096, "n_head": 16, "rotary_dim": 64})
    assert (gptj.head_dim, gptj.rotary_dim, gptj.layout) == (256, 64, "interleaved")
    whole = rope_spec({"model_type": "gptj", "n_embd": 4096, "n_head": 16, "rotary_dim": None})
    assert whole.rotary_dim == 256


def test_rope_interleave_message_lists_every_family_that_reads_it():
    with pytest.raises(ValueError, match="rope_interleave") as error:
        rope_spec({**LLAMA, "rope_interleave": True})
    readers = {name for name, row in FAMILIES.items()
               if (flag := row.trait(LayoutFlag)) and flag.key == "rope_interleave"}  # fmt: skip
    assert {"deepseek_v3", "glm4_moe_lite", "mistral4", "youtu"} <= readers
    for name in readers:
        assert name in str(error.value)


def test_a_model_without_rope_is_not_an_unknown_family():
    """Nemotron-H's attention takes no positions: NoRopeError (a ValueError) says so."""
    with pytest.raises(NoRopeError, match="uses no RoPE") as error:
        rope_spec({"model_type": "nemotron_h", "hidden_size": 4096, "num_attention_heads": 32})
    assert error.value.model_type == "nemotron_h" and "Mamba" in error.value.reason
    assert isinstance(error.value, ValueError)
    with pytest.raises(NoRopeError):
        RotaryEmbedding.from_hf_config({"model_type": "gpt2"})


@pytest.mark.parametrize("model_type", ["hunyuan_vl_text"])
def test_a_family_whose_rope_is_not_implemented_is_refused_even_with_layout(model_type):
    """The refusal names the missing feature; layout= cannot stand in for it."""
    from posenc_ref.models import NOT_IMPLEMENTED

    config = {"model_type": model_type, "hidden_size": 1024, "num_attention_heads": 8}
    for layout in (None, "half", "interleaved"):
        with pytest.raises(NotImplementedError) as error:
            rope_spec(config, layout=layout)
        assert NOT_IMPLEMENTED[model_type] in str(error.value)


@pytest.mark.parametrize(
    "config, flag",
    [
        ({"model_type": "esm", "hidden_size": 320, "num_attention_heads": 20}, "rotary"),
        ({"model_type": "granitemoehybrid", "hidden_size": 64, "num_attention_heads": 4}, "rope"),
        ({"model_type": "zamba2", "hidden_size": 64, "num_attention_heads": 4}, True),
    ],
    ids=["esm", "granitemoehybrid", "zamba2"],
)
def test_rope_behind_a_flag_is_no_rope_without_it(config, flag):
    """ESM, GraniteMoE-Hybrid, Zamba 2 build their rotary module only when a key says so."""
    with pytest.raises(NoRopeError):
        rope_spec(config)
    key = {"esm": "position_embedding_type", "granitemoehybrid": "position_embedding_type",
           "zamba2": "use_mem_rope"}[config["model_type"]]  # fmt: skip
    spec = rope_spec({**config, key: flag})
    expected = 2 * config["hidden_size"] // config["num_attention_heads"]  # Zamba 2's heads
    if config["model_type"] != "zamba2":
        expected //= 2
    assert spec.head_dim == expected


@pytest.mark.parametrize("model_type, extra", [
    ("esm", {"position_embedding_type": "rotary"}),
    ("recurrent_gemma", {}),
])  # fmt: skip
def test_a_type_the_code_does_not_compute_is_refused(model_type, extra):
    """ESM ignores rope_type, Recurrent Gemma raises for it: a scaled type is refused here."""
    config = {"model_type": model_type, "hidden_size": 256, "num_attention_heads": 4,
              "head_dim": 64, "max_position_embeddings": 2048, **extra,
              "rope_parameters": {"rope_type": "linear", "factor": 4.0,
                                  "rope_theta": 1e4}}  # fmt: skip
    with pytest.raises(ValueError, match="code does not compute rope_type 'linear'"):
        rope_spec(config)
    config["rope_parameters"] = {"rope_type": "default", "rope_theta": 1e4}
    assert rope_spec(config).rope_type == "default"


def test_unknown_family_message_names_the_missing_entry_and_the_way_out():
    with pytest.raises(ValueError) as error:
        rope_spec({"model_type": "my_model", "head_dim": 64})
    message = str(error.value)
    assert "FAMILIES" in message and "families/conventional.py" in message
    assert "layout='half'" in message and "layout='interleaved'" in message
    assert "is not a family posenc_ref knows" not in message


# --- transformers' rules where a config leaves a value out ------------------------------------


def test_yarn_without_factor_or_original_context_raises_as_transformers_does():
    """Transformers refuses YaRN without factor; posenc_ref derives it only from an explicit L."""
    config = {**LLAMA, "rope_scaling": {"rope_type": "yarn"}}
    errors = both(config)
    assert all(isinstance(e, ValueError) and "factor" in str(e) for e in errors)
    derived = rope_spec(
        {**LLAMA, "rope_scaling": {"rope_type": "yarn", "original_max_position_embeddings": 2048}}
    )
    assert derived.factor == 4.0  # 8192 / 2048, as HF derives it when factor is null


def test_qwen3_vl_section_that_cannot_be_dealt_is_refused_by_spec_and_module_alike():
    """[16, 24, 24] cannot be dealt round-robin (one check, in mrope_pair_rows, for both)."""
    rope = {"rope_type": "default", "rope_theta": 5e6, "mrope_section": [16, 24, 24],
            "mrope_interleaved": True}  # fmt: skip
    config = {"model_type": "qwen3_vl", "head_dim": 128, "rope_parameters": rope}
    errors = both(config)
    assert all(isinstance(e, ValueError) for e in errors), errors
    assert str(errors[0]) == str(errors[1])


ERNIE_VL = {"model_type": "ernie4_5_vl_moe_text", "hidden_size": 2560, "num_attention_heads": 20}


@pytest.mark.parametrize(
    "config, match",
    [
        # ERNIE 4.5 VL writes (height, width, time); its code stacks height and width pair by pair
        ({**ERNIE_VL, "rope_parameters": {"mrope_section": [22, 20, 22]}},
         r"alternates height and width.*height 22, width 20"),
        ({**ERNIE_VL, "rope_parameters": {"mrope_section": [22, 22, 22]}},
         r"mrope_section \[22, 22, 22\] sums to 66 pairs .* rotary_dim // 2 = 64"),
        ({**ERNIE_VL, "rope_parameters": {"mrope_section": [22, 22]}},
         r"3 pair counts \(.*height, width, time\)"),
        # the interleaved rule reads the height and width counts only; they must fit
        ({"model_type": "qwen3_vl", "head_dim": 16,
          "rope_parameters": {"mrope_section": [0, 5, 4]}}, "height and width 9 pairs"),
        # NeoMME's code reads no mrope_section: one that says otherwise is refused
        ({"model_type": "neomme", "num_hidden_layers": 1, "layer_types": ["sliding_attention"],
          "rope_parameters": {"sliding_attention": {"rope_type": "default", "rope_theta": 1e4,
                                                    "mrope_section": [10, 22]}}},
         "reads none; its two rows take \\[16, 16\\]"),
    ],
    ids=["ernie-unequal", "ernie-sum", "ernie-length", "interleaved-too-wide", "neomme-section"],
)  # fmt: skip
def test_mrope_sections_the_code_cannot_run_are_refused(config, match):
    """Checked once, in the reader, for the spec and the module alike."""
    errors = both(
        config, **({"layer_type": "sliding_attention"} if "layer_types" in config else {})
    )
    assert all(isinstance(e, ValueError) for e in errors), errors
    assert str(errors[0]) == str(errors[1])
    with pytest.raises(ValueError, match=match):
        raise errors[0]


def test_layer_type_is_validated_without_per_layer_rope():
    with pytest.raises(ValueError, match="leave layer_type out"):
        rope_spec(LLAMA, layer_type="sliding_attention")
    with pytest.raises(ValueError, match="not one of the config's layer_types"):
        rope_spec({**LLAMA, "layer_types": ["full_attention"]}, layer_type="sliding_attention")
    assert rope_spec({**LLAMA, "layer_types": ["full_attention"]}, layer_type="full_attention")


def test_text_config_that_is_a_list_is_refused():
    with pytest.raises(TypeError, match="text_config must be a dict"):
        rope_spec({"model_type": "qwen2_vl", "text_config": [{"model_type": "qwen2_vl"}]})


# --- consistent duplicates are accepted: meanings are compared, not spellings ------------------

LLAMA31 = {"factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
           "original_max_position_embeddings": 8192, "rope_type": "llama3"}  # fmt: skip


@pytest.mark.parametrize(
    "config",
    [
        {**LLAMA, "rope_theta": 5e5, "rope_scaling": LLAMA31, "rope_parameters": LLAMA31},
        {**LLAMA, "rope_scaling": LLAMA31, "rope_parameters": {**LLAMA31, "rope_theta": 5e5},
         "rope_theta": 5e5},
        {**LLAMA, "rope_theta": 5e5, "rope_scaling": {**LLAMA31, "type": "llama3"}},
        {**LLAMA, "rope_theta": 5e5,
         "rope_scaling": {**{k: v for k, v in LLAMA31.items() if k != "rope_type"},
                          "type": "llama3"},
         "rope_parameters": LLAMA31},
    ],
    ids=["both-dicts", "theta-in-one", "type-and-rope_type", "old-and-new-spelling"],
)  # fmt: skip
def test_consistent_duplicates_are_accepted(config):
    spec = rope_spec(config)
    reference = rope_spec({**LLAMA, "rope_theta": 5e5, "rope_scaling": LLAMA31})
    assert spec.rope_type == "llama3" and spec.base == 5e5
    assert torch.equal(spec.inv_freq, reference.inv_freq)


def test_inconsistent_duplicates_are_still_refused():
    with pytest.raises(ValueError, match="inconsistent"):
        rope_spec({**LLAMA, "rope_scaling": LLAMA31, "rope_parameters": {**LLAMA31, "factor": 4.0}})
    with pytest.raises(ValueError, match="inconsistent rope_type"):
        rope_spec({**LLAMA, "rope_scaling": {**LLAMA31, "type": "linear"}})


# --- values of the wrong kind and size -------------------------------------------------------


@pytest.mark.parametrize(
    "config, kwargs, match",
    [
        ({"model_type": ["llama"], "head_dim": 64}, {}, "model_type must be a string"),
        ({"model_type": {"a": 1}, "head_dim": 64}, {}, "model_type must be a string"),
        ({**LLAMA, "rope_scaling": {"rope_type": ["linear"], "factor": 2.0}}, {},
         r"rope_type'\] must be a string"),
        ({**LLAMA, "rope_scaling": {"type": {"x": 1}, "factor": 2.0}}, {}, "must be a string"),
        (released_config("Gemma 3"), {"layer_type": ["full_attention"]},
         "layer_type must be a string"),
        ({"model_type": "qwen2_vl", "text_config": {"model_type": ["qwen2_vl"]}}, {},
         "text_config.model_type must be a string"),
    ],
)  # fmt: skip
def test_a_list_where_a_name_is_expected_is_a_clear_type_error(config, kwargs, match):
    with pytest.raises(TypeError, match=match):
        rope_spec(config, **kwargs)


HUGE = 10**5000  # a 5,001-digit integer: repr() of it raises in Python >= 3.11


@pytest.mark.parametrize(
    "change",
    [
        {"max_position_embeddings": 1e20},
        {"max_position_embeddings": HUGE},
        {"max_position_embeddings": 2**53},
        {"head_dim": HUGE},
        {"rope_theta": HUGE},
        {"rope_theta": 1e308 * 10},
        {"rope_scaling": {"rope_type": "yarn", "factor": HUGE,
                          "original_max_position_embeddings": 2048}},
        {"rope_scaling": {"rope_type": "yarn", "original_max_position_embeddings": HUGE}},
        {"partial_rotary_factor": HUGE},
        {"num_hidden_layers": HUGE, "layer_types": ["full_attention"]},
    ],
    ids=lambda c: next(iter(c)) + ("-" + str(sorted(c[next(iter(c))])) if isinstance(
        c[next(iter(c))], dict) else ""),
)  # fmt: skip
def test_huge_numbers_are_a_value_error_never_an_overflow(change):
    errors = both({**LLAMA, **change})
    for error in errors:
        assert isinstance(error, ValueError), repr(error)
        assert len(str(error)) < 2000  # the number is described, not printed


def test_huge_numbers_in_a_message_are_described():
    with pytest.raises(ValueError, match="digits"):
        rope_spec({**LLAMA, "max_position_embeddings": HUGE})


def nested(depth: int) -> dict:
    value: dict = {}
    for _ in range(depth):
        value = {"a": value}
    return value


def test_deep_nesting_in_a_read_key_is_a_value_error():
    errors = both({**LLAMA, "rope_scaling": {"rope_type": "linear", "factor": 2.0,
                                             "extra": nested(100_000)}})  # fmt: skip
    assert all(isinstance(e, ValueError) and "nested too deeply" in str(e) for e in errors)


@pytest.mark.parametrize(
    "change",
    [{"model_type": nested(100_000)}, {"rope_theta": nested(100_000)},
     {"rope_theta": [10**5000]}],
    ids=["deep-model_type", "deep-rope_theta", "huge-int-in-a-list"],
)  # fmt: skip
def test_a_value_that_cannot_be_printed_still_gets_a_message_naming_its_key(change):
    """The error message describes the value (its repr would recurse or refuse to print)."""
    with pytest.raises(TypeError) as error:
        rope_spec({**LLAMA, **change})
    assert next(iter(change)) in str(error.value) and len(str(error.value)) < 200


def test_deep_nesting_under_an_ignored_key_is_ignored():
    """Keys unrelated to RoPE are not walked at all (no copy, no recursion)."""
    spec = rope_spec({**LLAMA, "quantization_config": nested(100_000)})
    assert spec.head_dim == 128


# --- the new variants refuse what does not fit ------------------------------------------------


@pytest.mark.parametrize(
    "config, match",
    [
        ({"model_type": "smollm3", "hidden_size": 2048, "num_attention_heads": 16,
          "num_hidden_layers": 4, "no_rope_layers": [1, 2, 1, 1]}, "no_rope_layers"),
        ({"model_type": "smollm3", "hidden_size": 2048, "num_attention_heads": 16,
          "num_hidden_layers": 4, "no_rope_layers": [1, 1, 1]}, "num_hidden_layers=4"),
        ({"model_type": "mistral4", "hidden_size": 4096, "num_attention_heads": 32,
          "max_position_embeddings": 1048576, "qk_rope_head_dim": 64, "qk_nope_head_dim": 64,
          "rope_parameters": {"rope_type": "default", "partial_rotary_factor": 0.25}},
         "rope part"),
        ({"model_type": "ministral3", "hidden_size": 4096, "num_attention_heads": 32,
          "max_position_embeddings": 262144,
          "rope_parameters": {"rope_type": "default", "llama_4_scaling_beta": 0.1}},
         "original_max_position_embeddings"),
        ({"model_type": "ministral3", "hidden_size": 4096, "num_attention_heads": 32,
          "max_position_embeddings": 262144,
          "rope_parameters": {"rope_type": "yarn", "factor": 16.0,
                              "original_max_position_embeddings": 16384,
                              "max_position_embeddings": 131072}},
         "max_position_embeddings"),
        ({"model_type": "gptj", "n_embd": 4096, "n_head": 16, "rotary_dim": 63}, "even"),
        ({"model_type": "gptj", "n_embd": 4096, "n_head": 16, "rope_theta": 5e5}, "fixes"),
        ({"model_type": "dbrx", "d_model": 2048, "n_heads": 16, "hidden_size": 4096},
         "inconsistent hidden_size"),
    ],
)  # fmt: skip
def test_variant_keys_that_do_not_fit(config, match):
    with pytest.raises((ValueError, TypeError), match=match):
        rope_spec(config)


def test_layer_specs_refuses_what_rope_spec_refuses():
    with pytest.raises(ValueError, match="layer_types has 2 entries"):
        layer_specs({**LLAMA, "num_hidden_layers": 3, "layer_types": ["a", "b"]})
    with pytest.raises(NoRopeError):
        layer_specs({"model_type": "nemotron_h"})


def test_layers_the_config_does_not_list_are_unknown_not_empty():
    """Without a layer count: SmolLM3Config's default (36 layers); no class: unknown (None)."""
    spec = rope_spec({"model_type": "smollm3", "hidden_size": 2048, "num_attention_heads": 16})
    assert spec.nope_layers == tuple(range(3, 36, 4))
    plamo = rope_spec({"model_type": "plamo2", "hidden_size_per_head": 128, "mamba_step": 2})
    assert plamo.nope_layers is None and plamo.layers is None
    listed = rope_spec({"model_type": "smollm3", "hidden_size": 2048, "num_attention_heads": 16,
                        "num_hidden_layers": 8})  # fmt: skip
    assert listed.nope_layers == (3, 7)
