"""A layer type with no entry in a per-layer-type RoPE dict is refused; a null entry has no RoPE.

transformers' rotary modules skip a layer type whose ``rope_parameters`` entry is null and read
``rope_parameters[layer_type]`` for every other type of ``layer_types``: a type that is missing
raises ``KeyError`` (Gemma 3's, run below). ``inspect`` used to print such a type as "no RoPE"
and exit 0; it now refuses it in the words of ``rope_spec`` and ``layer_specs``. A null entry
(Beam) and a type its family never rotates (LFM3's conv layers) still read as "no RoPE".
"""

import json

import pytest

from posenc_ref.__main__ import main
from posenc_ref.encodings import positional_encoding
from posenc_ref.models import layer_specs, rope_spec

MISSING = {"model_type": "gemma3_text", "num_hidden_layers": 2,
           "layer_types": ["full_attention", "chunked_attention"]}  # fmt: skip
WORDS = (
    "layer_types gives layer type 'chunked_attention' (layers 1), which has no entry in the "
    "per-layer-type rope_parameters (its entries: full_attention, sliding_attention): "
    "transformers' rotary module reads rope_parameters['chunked_attention'], has no such entry "
    "and raises KeyError. Give 'chunked_attention' an entry, or null for layers without RoPE"
)
BEAM_NULL = {
    "model_type": "beam",
    "num_hidden_layers": 2,
    "layer_types": ["sliding_attention", "full_attention"],
    "rope_parameters": {
        "sliding_attention": {"rope_type": "default", "rope_theta": 10000.0},
        "full_attention": None,
    },
}
TINY = {"hidden_size": 32, "intermediate_size": 64, "num_attention_heads": 2,
        "num_key_value_heads": 1, "head_dim": 16, "vocab_size": 64}  # fmt: skip


def inspect(tmp_path, capsys, config, *flags):
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config))
    status = main(["inspect", str(path), *flags])
    out = capsys.readouterr()
    return status, out.out, out.err


@pytest.mark.parametrize("flags", [(), ("--json",)])
def test_inspect_refuses_a_layer_type_without_an_entry(tmp_path, capsys, flags):
    status, out, err = inspect(tmp_path, capsys, MISSING, *flags)
    assert (status, out) == (2, "")
    assert WORDS in err and "no RoPE" not in err


def test_every_reader_says_the_same_words():
    for read in (
        layer_specs,
        positional_encoding,
        lambda c: rope_spec(c, layer_type="chunked_attention"),
    ):
        with pytest.raises(ValueError) as refused:
            read(MISSING)
        assert WORDS in str(refused.value)


def test_transformers_has_no_such_entry():
    """Gemma 3's rotary module, built from Gemma3TextConfig, raises KeyError on the repro."""
    transformers = pytest.importorskip("transformers")
    from transformers.models.gemma3 import modeling_gemma3

    config = transformers.Gemma3TextConfig(
        **{k: v for k, v in MISSING.items() if k != "model_type"}, **TINY
    )
    assert sorted(config.rope_parameters) == ["full_attention", "sliding_attention"]
    with pytest.raises(KeyError, match="chunked_attention"):
        modeling_gemma3.Gemma3RotaryEmbedding(config)


def test_a_null_entry_and_a_layer_its_family_never_rotates_have_no_rope(tmp_path, capsys):
    status, out, _ = inspect(tmp_path, capsys, BEAM_NULL)
    assert status == 0 and "  full_attention: layers 1: no RoPE" in out
    assert "  sliding_attention: layers 0: its own RoPE, below" in out
    status, out, _ = inspect(tmp_path, capsys, {"model_type": "lfm3", "num_hidden_layers": 8})
    assert status == 0 and "  conv: layers 0, 1, 3, 5, 7: no RoPE" in out
    assert layer_specs(BEAM_NULL)[1] is None


def test_beams_code_runs_its_null_layers_without_rope():
    """Beam's rotary module has no table for the null type, and its model runs (tiny sizes)."""
    pytest.importorskip("transformers")
    import torch
    from transformers.models.beam import configuration_beam, modeling_beam

    config = configuration_beam.BeamConfig(
        **{k: v for k, v in BEAM_NULL.items() if k != "model_type"}, **TINY
    )
    rotary = modeling_beam.BeamRotaryEmbedding(config)
    assert hasattr(rotary, "sliding_attention_inv_freq")
    assert not hasattr(rotary, "full_attention_inv_freq")
    modeling_beam.BeamModel(config).eval()(torch.arange(3)[None])


def test_a_layer_type_not_shown_is_not_one_without_rope(tmp_path, capsys):
    config = {**MISSING, "layer_types": ["full_attention", "sliding_attention"]}
    status, out, _ = inspect(tmp_path, capsys, config, "--layer-type", "full_attention")
    assert status == 0 and "no RoPE" not in out
    assert "  sliding_attention: layers 1: its own RoPE, not shown" in out
