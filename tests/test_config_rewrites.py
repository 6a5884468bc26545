"""Configs whose class rewrites them, and frequencies a checkpoint scales (issue 24, item 3).

dots3_note's class turns its ``swa_*`` keys into per-layer-type MLA widths; ModernBERT's applies
a legacy flat ``rope_scaling`` to both layer types and gives them ``global_rope_theta`` and
``local_rope_theta``; NeoMME's ``per_layer_config`` sets windows only. Each raw config is read
by posenc_ref and compared with what transformers' own config class and rotary module make of
the same dict (the frequencies of every layer type, to float32 rounding). Mistral Large 4's
LeRoPE values are checked as an argument here; the rotation itself is proven against its model
in tests/test_models_hf.py (test_mistral_large4_lerope).
"""

import copy
import importlib
import warnings

import numpy as np
import pytest
import torch

from posenc_ref import RotaryEmbedding
from posenc_ref.encodings import positional_encoding
from posenc_ref.models import layer_specs, rope_spec

ULP = 2.0**-24


@pytest.fixture(scope="module")
def transformers():
    module = pytest.importorskip("transformers")
    module.logging.set_verbosity_error()
    return module


def hf_config(transformers, raw: dict):
    """The config object transformers builds from the dict (as from_pretrained would)."""
    raw = copy.deepcopy(raw)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return transformers.AutoConfig.for_model(raw.pop("model_type"), **raw)


def hf_inv_freq(config, folder: str, name: str, layer_type: str) -> torch.Tensor:
    modeling = importlib.import_module(f"transformers.models.{folder}.modeling_{folder}")
    rotary = getattr(modeling, name)(config)
    return getattr(rotary, f"{layer_type}_inv_freq").double()


def agree(spec, theirs: torch.Tensor) -> None:
    assert spec.inv_freq.shape == theirs.shape
    torch.testing.assert_close(spec.inv_freq, theirs, rtol=8 * ULP, atol=0)


# --------------------------------------------------------------------------- dots3_note

DOTS3 = {"model_type": "dots3_note_text", "num_hidden_layers": 6, "hidden_size": 64,
         "num_attention_heads": 4, "num_key_value_heads": 4, "vocab_size": 32}  # fmt: skip
DOTS3_CASES = {
    "released keys only": {},
    "legacy full_attention": {"use_dsa": False},
    "own sliding widths": {"swa_head_dim": 256, "swa_qk_nope_head_dim": 224, "swa_rope_theta": 2e4},
    "own rope part": {"swa_qk_rope_head_dim": 32, "swa_qk_nope_head_dim": 96, "swa_head_dim": 128,
                      "qk_rope_head_dim": 32, "head_dim": 128},
    "no sliding": {"use_sliding_window": False, "rope_theta": 1e6},
    "layer_types given": {"layer_types": ["full_attention", "sliding_attention"] * 3},
}  # fmt: skip


@pytest.mark.parametrize("case", DOTS3_CASES)
def test_dots3_note_widths_per_layer_type_as_its_config_class_reads_them(transformers, case):
    """Every layer: its type, rope and nope widths, base and frequencies, as transformers's."""
    raw = {**DOTS3, **DOTS3_CASES[case]}
    theirs = hf_config(transformers, raw)
    for source in (raw, theirs, theirs.to_dict()):
        specs = layer_specs(source)
        assert [s.layer_type for s in specs] == theirs.layer_types
        for i, spec in enumerate(specs):
            own = theirs.per_layer_config[i]
            assert (spec.head_dim, spec.nope_dim) == (own.qk_rope_head_dim, own.qk_nope_head_dim)
            assert spec.rotary_dim == own.qk_rope_head_dim
            assert spec.base == theirs.rope_parameters[spec.layer_type]["rope_theta"]
            assert (spec.layout, spec.output_layout) == ("interleaved", "half")
        for layer_type in set(theirs.layer_types):
            spec = next(s for s in specs if s.layer_type == layer_type)
            agree(
                spec, hf_inv_freq(theirs, "dots3_note", "Dots3NoteTextRotaryEmbedding", layer_type)
            )


def test_dots3_note_swa_keys_beside_a_per_layer_config_are_what_the_class_ignores(transformers):
    sliding = {"qk_nope_head_dim": 160, "head_dim": 224}
    raw = {**DOTS3, "swa_qk_nope_head_dim": 224, "per_layer_config": dict.fromkeys("234", sliding)}
    theirs = hf_config(transformers, raw)
    specs = layer_specs(raw)
    assert specs[2].nope_dim == theirs.per_layer_config[2].qk_nope_head_dim == 160


# --------------------------------------------------------------------------- NeoMME


def test_neomme_per_layer_windows_do_not_split_a_layer_type(transformers):
    """NeoMME's per_layer_config alternates sliding windows: one RoPE per layer type still."""
    raw = {"model_type": "neomme", "num_hidden_layers": 12}
    theirs = hf_config(transformers, raw)
    assert len({str(v) for v in theirs.to_dict()["per_layer_config"].values()}) > 1
    for source in (raw, theirs, theirs.to_dict()):
        specs = layer_specs(source)
        assert [s.layer_type for s in specs] == theirs.layer_types
        for layer_type in set(theirs.layer_types):
            spec = next(s for s in specs if s.layer_type == layer_type)
            agree(spec, hf_inv_freq(theirs, "neomme", "NeoMMERotaryEmbedding", layer_type))


def test_a_per_layer_width_within_a_layer_type_is_still_refused():
    raw = {"model_type": "neomme", "num_hidden_layers": 6,
           "per_layer_config": {"1": {"head_dim": 32, "sliding_window": 64}}}  # fmt: skip
    with pytest.raises(ValueError, match=r"layer 0: \{\}, layer 1: \{'head_dim': 32\}"):
        layer_specs(raw)


# --------------------------------------------------------------------------- ModernBERT

MODERNBERT_CASES = {
    "released": {"global_rope_theta": 160000.0, "local_rope_theta": 10000.0,
                 "global_attn_every_n_layers": 3},
    "legacy linear": {"rope_scaling": {"rope_type": "linear", "factor": 2.0}},
    "legacy with its own base": {"rope_scaling": {"rope_type": "linear", "factor": 2.0,
                                                  "rope_theta": 5e5}},
    "legacy dynamic, own bases": {"global_rope_theta": 2e5, "local_rope_theta": 2e4,
                                  "rope_scaling": {"rope_type": "dynamic", "factor": 2.0}},
    "legacy type only": {"rope_scaling": {"type": "yarn", "factor": 4.0}},
    "every second layer": {"global_attn_every_n_layers": 2},
    "top-level rope_theta": {"rope_theta": 3e5},
}  # fmt: skip


@pytest.mark.parametrize("folder", ["modernbert_decoder", "modernbert"])
@pytest.mark.parametrize("case", MODERNBERT_CASES)
def test_modernbert_legacy_rope_keys_read_as_its_config_class_does(transformers, folder, case):
    model_type = "modernbert-decoder" if folder == "modernbert_decoder" else "modernbert"
    raw = {"model_type": model_type, "num_hidden_layers": 5, "hidden_size": 64,
           "num_attention_heads": 4, **MODERNBERT_CASES[case]}  # fmt: skip
    theirs = hf_config(transformers, raw)
    rotary = (
        "ModernBertDecoderRotaryEmbedding"
        if folder != "modernbert"
        else "ModernBertRotaryEmbedding"
    )
    for source in (raw, theirs):
        specs = layer_specs(source)
        assert [s.layer_type for s in specs] == theirs.layer_types
        for layer_type, params in theirs.rope_parameters.items():
            spec = next(s for s in specs if s.layer_type == layer_type)
            assert (spec.rope_type, spec.base) == (params["rope_type"], params["rope_theta"])
            agree(spec, hf_inv_freq(theirs, folder, rotary, layer_type))
    notes = " ".join(layer_specs(raw)[0].notes)
    if case == "legacy type only":  # its code runs the default RoPE: said, not silent
        assert "rope_scaling's type 'yarn' and factor" in notes
    if case == "top-level rope_theta":
        assert "rope_theta = 300000.0" in notes and "160000 instead" in notes


# --------------------------------------------------------------------------- LeRoPE's argument

LARGE4 = {"model_type": "mistral_large4_text", "num_hidden_layers": 4, "qk_rope_head_dim": 16,
          "qk_nope_head_dim": 16}  # fmt: skip


def test_lerope_from_a_config_alone_is_refused_naming_the_tensor():
    with pytest.raises(
        ValueError, match=r"model\.language_model\.rotary_emb\.alpha.*lerope\.alpha"
    ):
        rope_spec(LARGE4)
    wrapper = {"model_type": "mistral_large4", "text_config": LARGE4}
    with pytest.raises(ValueError, match="Pass its values as lerope_alpha="):
        positional_encoding(wrapper)


@pytest.mark.parametrize(
    "alpha",
    [torch.full((8,), 0.25), np.full(8, 0.25, dtype=np.float32), [0.25] * 8,
     torch.full((8,), 0.25, dtype=torch.bfloat16)],
    ids=["tensor", "numpy", "list", "bfloat16"],
)  # fmt: skip
def test_lerope_alpha_scales_every_frequency_by_exp_alpha(alpha):
    default = {"rope_type": "default", "rope_theta": 1e4}
    plain = rope_spec({**LARGE4, "rope_parameters": default}, lerope_alpha=torch.zeros(8))
    spec = rope_spec({**LARGE4, "rope_parameters": {"rope_type": "default", "rope_theta": 1e4}},
                     lerope_alpha=alpha)  # fmt: skip
    torch.testing.assert_close(spec.inv_freq, plain.inv_freq * np.exp(0.25), rtol=1e-15, atol=0)
    assert any("exp(alpha)" in note for note in spec.notes)
    assert any("softmax_scaling" in note for note in spec.notes)  # the learned query scaling


def test_lerope_scales_frequencies_computed_per_call_too():
    """Dynamic NTK past the context: the grown frequencies are scaled as well."""
    alpha = torch.linspace(-0.5, 0.5, 8)
    rope = {"rope_type": "dynamic", "rope_theta": 1e4, "factor": 2.0}
    config = {**LARGE4, "max_position_embeddings": 64, "rope_parameters": rope}
    plain = rope_spec(config, lerope_alpha=torch.zeros(8))
    scaled = rope_spec(config, lerope_alpha=alpha)
    for seq_len in (10, 64, 1000):
        torch.testing.assert_close(
            scaled.frequencies(seq_len).inv_freq,
            plain.frequencies(seq_len).inv_freq * alpha.double().exp(),
        )
    module = RotaryEmbedding.from_hf_config(config, lerope_alpha=alpha)
    torch.testing.assert_close(module.frequencies(1000).inv_freq, scaled.frequencies(1000).inv_freq)


@pytest.mark.parametrize(
    "alpha, error, match",
    [
        (torch.zeros(7), ValueError, r"lerope_alpha must have shape \(8,\).*got shape \(7,\)"),
        (torch.zeros(2, 4), ValueError, r"shape \(8,\)"),
        (
            torch.tensor([0.0] * 7 + [float("nan")]),
            ValueError,
            "must be finite, got nan at index 7",
        ),
        (torch.tensor([0.0] * 7 + [float("inf")]), ValueError, "must be finite"),
        (torch.full((8,), 100.0), ValueError, "overflow"),
        (torch.zeros(8, dtype=torch.complex64), TypeError, "real numbers"),
        (torch.zeros(8, dtype=torch.bool), TypeError, "real numbers"),
        (["a"] * 8, TypeError, "lerope_alpha must hold 8 real numbers"),
        (torch.zeros(8, device="meta"), ValueError, "meta device"),
        ("0.1", TypeError, "lerope_alpha must hold"),
    ],
    ids=["short", "2-D", "nan", "inf", "overflow", "complex", "bool", "strings", "meta", "text"],
)
def test_lerope_alpha_bad_values_are_refused_naming_the_argument(alpha, error, match):
    with pytest.raises(error, match=match):
        rope_spec(LARGE4, lerope_alpha=alpha)


def test_lerope_alpha_for_another_family_is_refused():
    with pytest.raises(ValueError, match="lerope_alpha.*llama's code does not"):
        rope_spec({"model_type": "llama", "hidden_size": 64, "num_attention_heads": 4},
                  lerope_alpha=torch.zeros(8))  # fmt: skip
    with pytest.raises(ValueError, match="leave lerope_alpha out"):
        positional_encoding({"model_type": "gpt2"}, lerope_alpha=torch.zeros(8))


# --------------------------------------------------------------------------- inspect --lerope-alpha

ALPHA = torch.linspace(-0.4, 0.3, 32)
RELEASED_LIKE = {"model_type": "mistral_large4", "text_config": {
    "model_type": "mistral_large4_text", "num_hidden_layers": 8}}  # fmt: skip


def safetensors_file(path, tensors: dict) -> None:
    """The safetensors layout: an 8-byte header length, a JSON header, then the bytes."""
    import json
    import struct

    header, chunks, offset = {}, [], 0
    for name, t in tensors.items():
        data = t.contiguous().view(torch.int16).numpy().tobytes() if t.dtype == torch.bfloat16 \
            else t.numpy().tobytes()  # fmt: skip
        code = {torch.float32: "F32", torch.bfloat16: "BF16"}[t.dtype]
        header[name] = {
            "dtype": code,
            "shape": list(t.shape),
            "data_offsets": [offset, offset + len(data)],
        }
        chunks.append(data)
        offset += len(data)
    text = json.dumps(header).encode()
    path.write_bytes(struct.pack("<Q", len(text)) + text + b"".join(chunks))


def inspected(capsys, *args):
    from posenc_ref.__main__ import main

    status = main(["inspect", *map(str, args)])
    out, err = capsys.readouterr()
    return status, out, err


def expected_inv_freq(alpha) -> torch.Tensor:
    return rope_spec(RELEASED_LIKE, lerope_alpha=alpha).inv_freq


def test_inspect_reads_lerope_alpha_from_a_checkpoint_folder(tmp_path, capsys):
    """A converted checkpoint: the index names the shard, only the tensor's bytes are read."""
    import json

    (tmp_path / "config.json").write_text(json.dumps(RELEASED_LIKE))
    name = "model.language_model.rotary_emb.alpha"
    safetensors_file(tmp_path / "model-00001-of-00002.safetensors",
                     {"other": torch.zeros(3), name: ALPHA.to(torch.bfloat16)})  # fmt: skip
    safetensors_file(tmp_path / "model-00002-of-00002.safetensors", {"x": torch.zeros(2)})
    index = {"weight_map": {name: "model-00001-of-00002.safetensors",
                            "x": "model-00002-of-00002.safetensors"}}  # fmt: skip
    (tmp_path / "model.safetensors.index.json").write_text(json.dumps(index))
    status, out, err = inspected(capsys, tmp_path, "--lerope-alpha", tmp_path, "--json")
    assert status == 0, err
    assert json.loads(out)["encoding"]["model_type"] == "mistral_large4_text"
    assert "exp(alpha)" in out and "softmax_scaling" in out
    inv = expected_inv_freq(ALPHA.to(torch.bfloat16))  # the values as the shard stores them
    status, text, _ = inspected(capsys, tmp_path, "--lerope-alpha", tmp_path, "--all-pairs")
    assert status == 0
    assert f"{float(inv[0]):g}" in text and f"{float(inv[-1]):g}" in text


@pytest.mark.parametrize("kind", ["released shard", "lone tensor", "npy", "pt", "json"])
def test_inspect_reads_lerope_alpha_from_what_a_user_holds(tmp_path, capsys, kind):
    import json

    config = tmp_path / "config.json"
    config.write_text(json.dumps(RELEASED_LIKE))
    if kind == "released shard":  # Mistral's own format: the tensor is lerope.alpha
        path = tmp_path / "consolidated.safetensors"
        safetensors_file(
            path, {"layers.0.attention.wq.weight": torch.zeros(4), "lerope.alpha": ALPHA}
        )
    elif kind == "lone tensor":
        path = tmp_path / "alpha.safetensors"
        safetensors_file(path, {"alpha": ALPHA})
    elif kind == "npy":
        path = tmp_path / "alpha.npy"
        np.save(path, ALPHA.numpy())
    elif kind == "pt":
        path = tmp_path / "alpha.pt"
        torch.save({"model.rotary_emb.alpha": ALPHA}, path)
    else:
        path = tmp_path / "alpha.json"
        path.write_text(json.dumps(ALPHA.tolist()))
    status, out, err = inspected(capsys, config, "--lerope-alpha", path, "--all-pairs")
    assert status == 0, err
    inv = expected_inv_freq(ALPHA)
    assert f"{float(inv[5]):g}" in out


@pytest.mark.parametrize(
    "setup, message",
    [
        (lambda p: None, "Give them with --lerope-alpha FILE"),
        (lambda p: np.save(p / "a.npy", np.zeros(31)), "--lerope-alpha must have shape (32,)"),
        (lambda p: safetensors_file(p / "s.safetensors", dict.fromkeys("xy", torch.zeros(2))),
         "holds no tensor named"),
        (lambda p: (p / "a.safetensors").write_bytes(b"\xff" * 16), "header"),
        (lambda p: (p / "a.txt").write_text("0.1"), "give a checkpoint folder"),
        (lambda p: (p / "a.pt").write_bytes(b"not a pickle"), "torch.load"),
    ],
    ids=["no flag", "wrong shape", "no such tensor", "bad header", "unknown suffix", "bad pt"],
)  # fmt: skip
def test_inspect_lerope_alpha_refusals_exit_2(tmp_path, capsys, setup, message):
    import json

    (tmp_path / "config.json").write_text(json.dumps(RELEASED_LIKE))
    setup(tmp_path)
    args = [tmp_path / "config.json"]
    given = [p for p in tmp_path.iterdir() if p.name != "config.json"]
    if given:
        args += ["--lerope-alpha", given[0]]
    status, out, err = inspected(capsys, *args)
    assert status == 2 and out == "" and message in err, err
    assert "Traceback" not in err


def test_inspect_lerope_alpha_elsewhere_is_refused(tmp_path, capsys):
    import json

    (tmp_path / "config.json").write_text(json.dumps({"model_type": "gpt2"}))
    np.save(tmp_path / "a.npy", np.zeros(32))
    status, _, err = inspected(capsys, tmp_path, "--lerope-alpha", tmp_path / "a.npy")
    assert status == 2 and "leave --lerope-alpha out" in err
    status, _, err = inspected(capsys, "--cache", "--lerope-alpha", tmp_path / "a.npy")
    assert status == 2 and "--lerope-alpha apply to one CONFIG" in err
