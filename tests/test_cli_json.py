"""The command line's JSON, its cache scan and ``compare``: checked against numbers computed here.

``--json`` output is validated against the documented schema (posenc_ref/cli/schema.json) for
every config of the corpus in ``../shared/real_configs`` (skipped where the corpus is absent),
for the released configs of every other encoding, for ``inspect --cache`` on a cache built
from the corpus, and for ``compare``. ``compare`` of Llama 3.1 with and without its scaling is
checked against the llama3 transform written out here in NumPy (the bands from wavelengths, not
from the package).
"""

import json
import math
from pathlib import Path

import numpy as np
import pytest

from posenc_ref.__main__ import main
from posenc_ref.cli import SCHEMA_VERSION, json_schema
from posenc_ref.encodings import positional_encoding, released_encoding_configs
from tests.configs import LLAMA31 as CONFIG_LLAMA31

jsonschema = pytest.importorskip("jsonschema", reason="the test extra installs jsonschema")

CORPUS = Path(__file__).resolve().parents[1].parent / "shared" / "real_configs"
CORPUS_FILES = sorted(p for p in CORPUS.glob("*.json")) if CORPUS.is_dir() else []
needs_corpus = pytest.mark.skipif(not CORPUS_FILES, reason=f"no corpus of configs at {CORPUS}")

LLAMA31 = {**CONFIG_LLAMA31, "num_hidden_layers": 32}
LLAMA31_UNSCALED = {k: v for k, v in LLAMA31.items() if k != "rope_scaling"}


@pytest.fixture(scope="module")
def validator():
    schema = json_schema()
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


def run_json(capsys, *argv):
    status = main([*argv, "--json"])
    out, err = capsys.readouterr()
    assert status == 0, err
    return json.loads(out)


def write(path, config):
    path.write_text(json.dumps(config))
    return str(path)


# --------------------------------------------------------------------------- inspect --json


def test_the_schema_is_valid_and_versioned(validator):
    schema = json_schema()
    assert schema["properties"]["schema_version"] == {"const": SCHEMA_VERSION}
    assert list(validator.iter_errors({"schema": "posenc_ref.cli"}))  # fields missing: refused
    wrong = {
        "schema": "posenc_ref.cli",
        "schema_version": 1,
        "command": "compare",
        "posenc_ref": "",
    }
    assert list(validator.iter_errors(wrong))  # a compare without a, b, layers


@needs_corpus
def test_inspect_json_validates_on_every_corpus_config(capsys, validator):
    read, refused = 0, []
    for path in CORPUS_FILES:
        status = main(["inspect", str(path), "--json"])
        out, err = capsys.readouterr()
        if status != 0:  # a refusal is one line on stderr, never JSON on stdout
            assert status == 2 and out == "" and err.startswith("error: "), (path.name, err)
            refused.append(path.name)
            continue
        document = json.loads(out)
        errors = [e.message for e in validator.iter_errors(document)]
        assert not errors, (path.name, errors[:3])
        read += 1
    assert read >= len(CORPUS_FILES) // 2, (
        refused
    )  # the others: the reader refuses them, in one line


@needs_corpus
def test_inspect_json_numbers_are_the_readers(capsys):
    for path in CORPUS_FILES[::7]:
        config = json.loads(path.read_text())
        try:
            encoding = positional_encoding(config)
        except (ValueError, TypeError, NotImplementedError):
            continue
        document = run_json(capsys, "inspect", str(path))["encoding"]
        assert document["kind"] == encoding.kind and document["notes"] == list(encoding.notes)
        if encoding.kind != "rope":
            continue
        assert len(document["rope"]) == len(encoding.specs)
        for written, spec in zip(document["rope"], encoding.specs.values(), strict=True):
            assert written["layer_type"] == spec.layer_type
            assert (written["rotary_dim"], written["layout"]) == (spec.rotary_dim, spec.layout)
            assert [p["inv_freq"] for p in written["pairs"]] == spec.inv_freq.tolist()
            assert written["base"] == spec.base


@pytest.mark.parametrize("entry", released_encoding_configs(), ids=lambda e: e["name"])
def test_inspect_json_of_every_other_encoding_validates(tmp_path, capsys, validator, entry):
    document = run_json(capsys, "inspect", write(tmp_path / "config.json", entry["config"]))
    validator.validate(document)
    encoding = positional_encoding(entry["config"])
    assert document["encoding"]["kind"] == encoding.kind != "rope"
    if encoding.kind == "alibi":
        slopes = document["encoding"]["parameters"]["slopes"]
        assert slopes == encoding.slopes().tolist()


def test_inspect_json_per_pair_table_is_computed_from_the_frequencies(tmp_path, capsys):
    document = run_json(capsys, "inspect", write(tmp_path / "c.json", LLAMA31))
    (spec,) = document["encoding"]["rope"]
    base, dim = 500000.0, 128
    for row in spec["pairs"]:
        unscaled = base ** (-2 * row["pair"] / dim)
        assert row["wavelength"] == pytest.approx(2 * math.pi / row["inv_freq"], rel=1e-15)
        assert row["turns"] == pytest.approx(8192 / row["wavelength"], rel=1e-15)
        assert row["ratio"] == pytest.approx(row["inv_freq"] / unscaled, rel=1e-12)
    assert spec["scaling"] == {
        "method": "llama3",
        "params": {
            "original_max_len": 8192,
            "factor": 8.0,
            "low_freq_factor": 1.0,
            "high_freq_factor": 4.0,
        },
    }


# --------------------------------------------------------------------------- inspect --cache


def corpus_cache(root, files):
    """A hub cache holding each corpus config as the model corpus/<file stem>."""
    ids = []
    for k, path in enumerate(files):
        model_id = f"corpus/m{k:03d}-{path.stem[-40:].replace('__', '-')}"
        repo = root / ("models--" + model_id.replace("/", "--"))
        (repo / "snapshots" / "rev").mkdir(parents=True)
        (repo / "snapshots" / "rev" / "config.json").write_text(path.read_text())
        (repo / "refs").mkdir()
        (repo / "refs" / "main").write_text("rev")
        ids.append(model_id)
    return ids


@needs_corpus
def test_inspect_cache_has_a_row_per_model_and_a_reason_for_each_failure(
    tmp_path, capsys, monkeypatch, validator
):
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hub"))
    ids = corpus_cache(tmp_path / "hub", CORPUS_FILES[:30])
    (tmp_path / "hub" / "models--broken--json" / "snapshots" / "r").mkdir(parents=True)
    (tmp_path / "hub" / "models--broken--json" / "snapshots" / "r" / "config.json").write_text("{")
    (tmp_path / "hub" / "models--no--config" / "snapshots" / "r").mkdir(parents=True)
    document = run_json(capsys, "inspect", "--cache")
    validator.validate(document)
    rows = {row["id"]: row for row in document["models"]}
    assert set(rows) == {*ids, "broken/json", "no/config"}
    assert "not valid JSON" in rows["broken/json"]["error"]
    assert "no config.json" in rows["no/config"]["error"]
    for model_id, path in zip(ids, CORPUS_FILES[:30], strict=True):
        try:
            encoding = positional_encoding(json.loads(path.read_text()))
        except (ValueError, TypeError, NotImplementedError):
            assert rows[model_id]["status"] == "error" and rows[model_id]["error"]
            continue
        assert rows[model_id]["encoding"] == encoding.kind
        if encoding.kind == "rope":
            types = [layer["rope_type"] for layer in rows[model_id]["layers"]]
            assert types == [s.rope_type for s in encoding.specs.values()]

    status = main(["inspect", "--cache"])
    out, err = capsys.readouterr()
    assert status == 0 and "reading 32/32 models" in err  # a progress line on a large cache
    assert out.splitlines()[0].split()[:3] == ["id", "encoding", "rope"]
    assert "broken/json" in out and "32 models in" in out and "Traceback" not in out + err


@needs_corpus
def test_where_keeps_exactly_the_matching_rows(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hub"))
    ids = corpus_cache(tmp_path / "hub", CORPUS_FILES[:30])
    expected = {"llama3": set(), "yarn": set(), "interleaved": set()}
    for model_id, path in zip(ids, CORPUS_FILES[:30], strict=True):
        try:
            encoding = positional_encoding(json.loads(path.read_text()))
        except (ValueError, TypeError, NotImplementedError):
            continue
        specs = encoding.specs.values() if encoding.kind == "rope" else []
        for spec in specs:
            if spec.rope_type in expected:
                expected[spec.rope_type].add(model_id)
            if spec.layout == "interleaved":
                expected["interleaved"].add(model_id)
    for where, key in (("rope_type=llama3", "llama3"), ("rope_type=yarn", "yarn")):
        got = {r["id"] for r in run_json(capsys, "inspect", "--cache", "--where", where)["models"]}
        assert got == expected[key]
    got = run_json(capsys, "inspect", "--cache", "--where", "layout=interleaved")["models"]
    assert {r["id"] for r in got} == expected["interleaved"]
    both = run_json(
        capsys, "inspect", "--cache", "--where", "rope_type=yarn", "--where", "layout!=interleaved"
    )["models"]
    assert {r["id"] for r in both} == expected["yarn"] - expected["interleaved"]


def test_where_numbers_compare_as_numbers_and_ids_as_patterns(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hub"))
    for model_id, config in (("meta/Llama", LLAMA31), ("meta/Plain", LLAMA31_UNSCALED)):
        snapshot = tmp_path / "hub" / ("models--" + model_id.replace("/", "--")) / "snapshots"
        (snapshot / "r").mkdir(parents=True)
        write(snapshot / "r" / "config.json", config)
    ids = lambda *w: [r["id"] for r in run_json(capsys, "inspect", "--cache", *w)["models"]]  # noqa: E731
    assert ids("--where", "base=5e5") == ["meta/Llama", "meta/Plain"]
    assert ids("--where", "factor=8") == ["meta/Llama"]
    assert ids("--where", "factor=none") == ["meta/Plain"]
    assert ids("--where", "id=META/P*") == ["meta/Plain"]
    status = main(["inspect", "--cache", "--where", "theta=1"])
    _, err = capsys.readouterr()
    assert status == 2 and "unknown key 'theta'" in err and "rope_type" in err


# --------------------------------------------------------------------------- compare


def llama3_by_hand(dim=128, base=500000.0, factor=8.0, low=1.0, high=4.0, original=8192):
    """The llama3 transform and its bands, from the wavelengths (numpy, float64)."""
    omega = base ** (-np.arange(0, dim, 2, dtype=np.float64) / dim)
    wavelength = 2 * np.pi / omega
    fast = wavelength < original / high
    slow = wavelength > original / low
    smooth = (original / wavelength - low) / (high - low)
    scaled = np.where(fast, omega, np.where(slow, omega / factor, 0.0))
    middle = ~fast & ~slow
    scaled[middle] = ((1 - smooth) * omega / factor + smooth * omega)[middle]
    return omega, scaled, {"fast": fast, "middle": middle, "slow": slow}


def test_compare_llama31_with_and_without_its_scaling(tmp_path, capsys, validator):
    a, b = write(tmp_path / "a.json", LLAMA31), write(tmp_path / "b.json", LLAMA31_UNSCALED)
    document = run_json(capsys, "compare", a, b)
    validator.validate(document)
    (layer,) = document["layers"]
    fields = {d["field"]: (d["a"], d["b"]) for d in layer["differences"]}
    assert fields["rope_type"] == ("llama3", "default")
    assert fields["scaling.method"] == ("llama3", None)
    assert fields["original_max_len"] == (8192, 131072)
    assert "base" not in fields and "rotary_dim" not in fields

    omega, scaled, masks = llama3_by_hand()
    assert layer["context"] == 8192 and layer["positions"] == [16384, 131071]
    assert layer["bands_from"] == "llama3 bands of A"
    bands = {band["name"]: band for band in layer["bands"]}
    assert list(bands) == ["fast", "middle", "slow"]
    for name, band in bands.items():
        pairs = np.flatnonzero(masks[name])
        assert band["pairs"] == [pairs[0], pairs[-1]] and band["count"] == len(pairs)
        gap = np.abs(scaled - omega)[pairs].max()
        expected = [8191 * gap, 16384 * gap, 131071 * gap]
        assert [band["inside"], *band["past"]] == pytest.approx(expected, rel=1e-12, abs=0)
    assert bands["fast"]["inside"] == 0 and bands["fast"]["past"] == [0, 0]  # unchanged, always
    assert bands["middle"]["inside"] > 1 and bands["slow"]["inside"] > 1  # inside L0 already
    assert layer["agreement"] == {"until": 0, "everywhere": False, "checked_up_to": 131071}

    status = main(["compare", a, b])
    text, _ = capsys.readouterr()
    assert status == 0 and "fast (kept)" in text and "divided by 8" in text
    assert f"{8191 * np.abs(scaled - omega)[masks['slow']].max():.3g}" in text


def test_compare_dynamic_ntk_agrees_up_to_the_last_position_of_max_len(tmp_path, capsys):
    dynamic = {**LLAMA31_UNSCALED, "max_position_embeddings": 4096}
    dynamic["rope_scaling"] = {"rope_type": "dynamic", "factor": 2.0}
    a = write(tmp_path / "a.json", dynamic)
    b = write(tmp_path / "b.json", {**LLAMA31_UNSCALED, "max_position_embeddings": 4096})
    (layer,) = run_json(capsys, "compare", a, b, "--at", "8192")["layers"]
    # dynamic NTK keeps the frequencies for calls up to 4096 positions and grows its base past
    assert layer["agreement"]["until"] == 4095 and not layer["agreement"]["everywhere"]
    assert layer["bands_from"] == "deciles of the pairs" and len(layer["bands"]) == 10
    assert all(band["inside"] == 0 for band in layer["bands"])
    # past it, at m = 8192 (a call of 8193 positions): the NTK base, written out here
    grown = 500000.0 * (2.0 * 8193 / 4096 - 1) ** (128 / 126)
    exponents = np.arange(0, 128, 2, dtype=np.float64) / 128
    gap = 8192 * np.abs(grown**-exponents - 500000.0**-exponents)
    for band in layer["bands"]:
        first, last = band["pairs"]
        assert band["past"][0] == pytest.approx(gap[first : last + 1].max(), rel=1e-9)
    assert layer["pairs"][0]["past"] == [0.0]  # pair 0 turns at 1 rad per position, any base


def test_compare_a_config_with_itself_finds_nothing(tmp_path, capsys):
    a = write(tmp_path / "a.json", LLAMA31)
    (layer,) = run_json(capsys, "compare", a, a)["layers"]
    assert layer["differences"] == [] and layer["agreement"]["everywhere"]
    assert all(band["inside"] == 0 and set(band["past"]) == {0} for band in layer["bands"])


def test_compare_widths_that_differ_are_named_and_not_compared(tmp_path, capsys, validator):
    a = write(tmp_path / "a.json", LLAMA31_UNSCALED)
    b = write(tmp_path / "b.json", {**LLAMA31_UNSCALED, "partial_rotary_factor": 0.5})
    document = run_json(capsys, "compare", a, b)
    validator.validate(document)
    (layer,) = document["layers"]
    assert not layer["comparable"] and "rotary widths differ (128 and 64)" in layer["reason"]


def test_compare_plot_writes_the_figure(tmp_path, capsys):
    a, b = write(tmp_path / "a.json", LLAMA31), write(tmp_path / "b.json", LLAMA31_UNSCALED)
    status = main(["compare", a, b, "--plot", str(tmp_path / "d.svg")])
    out, _ = capsys.readouterr()
    assert status == 0 and (tmp_path / "d.svg").stat().st_size > 1000
    assert f"figure written to {tmp_path / 'd.svg'}" in out


def test_compare_of_encodings_without_rope_says_so(tmp_path, capsys, validator):
    gpt2 = {"model_type": "gpt2", "n_positions": 1024, "n_embd": 768, "n_head": 12}
    document = run_json(
        capsys, "compare", write(tmp_path / "a.json", gpt2), write(tmp_path / "b.json", LLAMA31)
    )
    validator.validate(document)
    assert (
        document["layers"] == [] and "A uses learned positions and B rope" in document["notes"][0]
    )


@needs_corpus
def test_compare_on_corpus_neighbours_answers_or_refuses_in_one_line(capsys, validator):
    compared = 0
    for a, b in zip(CORPUS_FILES[:24], CORPUS_FILES[1:25], strict=True):
        status = main(["compare", str(a), str(b), "--json"])
        out, err = capsys.readouterr()
        if status == 2:  # a config the reader refuses: its one line, and no JSON
            assert out == "" and err.startswith("error: ") and err.count("\n") == 1, err
            continue
        assert status == 0, err
        validator.validate(json.loads(out))
        compared += 1
    assert compared >= 10


def test_vectors_and_verify_json_validate_and_say_each_case(tmp_path, capsys, validator):
    """``vectors --json`` lists what it wrote; ``verify --json`` gives each case's status.

    The outputs are the reference module's (every case agrees), then the same file with the
    first case dropped (that case missing: exit 1 without --allow-missing, 0 with it).
    """
    from posenc_ref import RotaryEmbedding
    from posenc_ref.models import released_config
    from posenc_ref.testing import read_vectors, write_vectors

    config = released_config("Llama 3.1")
    write(tmp_path / "config.json", config)
    out = run_json(capsys, "vectors", str(tmp_path / "config.json"), "-o", str(tmp_path / "v.npz"))
    validator.validate(out)
    assert out["groups"]["rope"]["base"] == config["rope_theta"]
    assert (out["groups"]["rope"]["layout"], out["groups"]["rope"]["rope_type"]) == (
        "half",
        "llama3",
    )
    tensors, metadata = read_vectors(tmp_path / "v.npz")
    assert [c["name"] for c in out["cases"]] == [c["name"] for c in metadata["cases"]]
    module = RotaryEmbedding.from_hf_config(config)
    outputs = {}
    for case in metadata["cases"]:
        c = case["name"]
        q, k = module(tensors[f"{c}/q"], tensors[f"{c}/k"], tensors[f"{c}/positions"])
        outputs[f"{c}/q_rot"], outputs[f"{c}/k_rot"] = q, k
    write_vectors(tmp_path / "mine.npz", outputs, {})
    out = run_json(capsys, "verify", str(tmp_path / "v.npz"), str(tmp_path / "mine.npz"))
    validator.validate(out)
    assert out["agrees"] and {c["status"] for c in out["cases"]} == {"agrees"}
    assert all(c["error_over_tolerance"] <= 1 for c in out["cases"])
    first = metadata["cases"][0]["name"]
    partial = {n: t for n, t in outputs.items() if not n.startswith(first + "/")}
    write_vectors(tmp_path / "some.npz", partial, {})
    status = main(["verify", str(tmp_path / "v.npz"), str(tmp_path / "some.npz"), "--json"])
    out = json.loads(capsys.readouterr().out)
    validator.validate(out)
    assert status == 1 and not out["agrees"]
    assert [c["name"] for c in out["cases"] if c["status"] == "missing"] == [first]
    assert out["cases"][0]["error_over_tolerance"] is None
    out = run_json(
        capsys, "verify", str(tmp_path / "v.npz"), str(tmp_path / "some.npz"), "--allow-missing"
    )
    assert out["agrees"]


# Pixtral-12B's vision encoder (mistral-community/pixtral-12b's vision_config, its keys as released)
PIXTRAL_VISION = {"model_type": "pixtral", "hidden_size": 1024, "num_attention_heads": 16,
                  "head_dim": 64, "image_size": 1024, "patch_size": 16,
                  "rope_theta": 10000.0}  # fmt: skip


def test_inspect_json_of_a_vision_config_alone_is_its_axial_spec(tmp_path, capsys, validator):
    from posenc_ref.models import axial_spec

    document = run_json(capsys, "inspect", write(tmp_path / "vision.json", PIXTRAL_VISION))
    validator.validate(document)
    spec = axial_spec(PIXTRAL_VISION)
    encoding = document["encoding"]
    assert encoding["kind"] == "axial" and encoding["model_type"] == "pixtral"
    written = encoding["parameters"]
    assert (written["scheme"], written["head_dim"], written["base"]) == (
        spec.scheme, spec.head_dim, spec.base)  # fmt: skip
    assert written["inv_freq"] == spec.inv_freq.tolist()
    assert written["pair_axes"] == spec.pair_axes.tolist()
    assert "vision_tower" not in document


@needs_corpus
def test_inspect_json_of_a_vision_language_config_writes_its_tower(capsys, validator):
    from posenc_ref.models.vision import vision_tower

    written = 0
    for path in CORPUS_FILES:
        config = json.loads(path.read_text())
        try:
            tower = vision_tower(config)
        except (ValueError, TypeError):
            continue
        if tower is None:
            continue
        document = run_json(capsys, "inspect", str(path))
        validator.validate(document)
        assert document["encoding"]["kind"] == "rope"  # the language model, as before
        assert document["vision_tower"]["inv_freq"] == tower.inv_freq.tolist(), path.name
        assert document["vision_tower"]["read_from"] == tower.read_from
        written += 1
    assert written >= 10  # the corpus's vision-language files (13 when this was written)
