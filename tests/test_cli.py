"""The command line: ``python -m posenc_ref inspect CONFIG [--layer-type T] [--plot FILE]``.

It prints what posenc_ref.encodings.positional_encoding reads from a config (for a RoPE, what
posenc_ref.models.rope_spec reads); these tests check that the printed numbers are the
encoding's (computed here, not copied from the output), that every kind is explained, that
--plot writes the file it reports, that a model id is found in a (fake) Hugging Face cache, and
that no input file makes it print a traceback: a missing file, bad JSON, huge integers, deep
nesting or a refused config exit with status 2 and one line naming the problem.
"""

import json
import math
import random
import re
import subprocess
import sys

import pytest

from posenc_ref.__main__ import describe, describe_encoding, main
from posenc_ref.encodings import positional_encoding, released_encoding_configs
from posenc_ref.models import QueryScale, rope_spec
from tests.configs import LLAMA31

PHI2 = {
    "model_type": "phi",
    "hidden_size": 2560,
    "num_attention_heads": 32,
    "partial_rotary_factor": 0.4,
    "rope_theta": 10000.0,
    "max_position_embeddings": 2048,
}


def write(tmp_path, config, name="config.json"):
    path = tmp_path / name
    path.write_text(json.dumps(config) if not isinstance(config, str) else config)
    return str(path)


def run(capsys, *argv):
    status = main(list(argv))
    out, err = capsys.readouterr()
    return status, out, err


def test_inspect_prints_the_specs_widths_layout_and_factors(tmp_path, capsys):
    status, out, err = run(capsys, "inspect", write(tmp_path, LLAMA31))
    assert status == 0 and err == ""
    spec = rope_spec(LLAMA31)
    assert f"rope_type '{spec.rope_type}', base {spec.base:.10g}" in out
    words = " ".join(out.split())  # lines are wrapped at 76 columns
    assert f"head_dim {spec.head_dim}, rotary_dim {spec.rotary_dim}: all of them rotated" in words
    assert f"pairs (i, i + {spec.rotary_dim // 2}), half" in words
    assert f"original {spec.original_max_len}, max_position_embeddings {spec.max_len}" in words


def test_inspect_per_pair_rows_are_the_specs_numbers(tmp_path, capsys):
    _, out, _ = run(capsys, "inspect", write(tmp_path, LLAMA31), "--all-pairs")
    spec = rope_spec(LLAMA31)
    rows = re.findall(r"^\s+(\d+)\s+(\S+)\s+(\S+)\s+(\S+)\s+x (\S+)$", out, flags=re.M)
    assert [int(r[0]) for r in rows] == list(range(spec.rotary_dim // 2))
    for i, omega, wavelength, turns, _ in rows:
        w = float(spec.inv_freq[int(i)])
        assert float(omega) == pytest.approx(w, rel=1e-5)
        assert float(wavelength) == pytest.approx(2 * math.pi / w, rel=1e-5)
        assert float(turns) == pytest.approx(spec.original_max_len * w / (2 * math.pi), rel=1e-5)
    # Llama 3.1: the fastest pairs are kept (x 1), the slowest divided by the factor 8.
    assert rows[0][4] == "1" and float(rows[-1][4]) == pytest.approx(1 / 8)


def test_inspect_partial_rotary(tmp_path, capsys):
    _, out, _ = run(capsys, "inspect", write(tmp_path, PHI2))
    words = " ".join(out.split())  # lines are wrapped at 76 columns
    assert "head_dim 80, rotary_dim 32: the first 32 rotated, the last 48 passed through" in words
    assert "16 of 16" not in out  # the default table shows every pair when there are <= 16


GEMMA3 = {  # Gemma 3's form: one RoPE per layer type, in transformers 5's rope_parameters
    "model_type": "gemma3_text",
    "hidden_size": 2560,
    "num_attention_heads": 8,
    "head_dim": 256,
    "max_position_embeddings": 131072,
    "rope_parameters": {
        "sliding_attention": {"rope_type": "default", "rope_theta": 10000.0},
        "full_attention": {"rope_type": "linear", "factor": 8.0, "rope_theta": 1000000.0},
    },
}


def test_inspect_explains_every_layer_type(tmp_path, capsys):
    # issue 19: it used to exit with "pass --layer-type" when it could explain every layer type
    path = write(tmp_path, GEMMA3)
    status, out, err = run(capsys, "inspect", path)
    assert status == 0 and err == ""
    assert max(len(line) for line in out.splitlines()) <= 76
    assert "one RoPE per layer type: sliding_attention, full_attention" in " ".join(out.split())
    for layer_type in ("sliding_attention", "full_attention"):
        spec = rope_spec(GEMMA3, layer_type=layer_type)
        assert describe(spec) in out
        assert f"layer type {layer_type!r}: rope_type {spec.rope_type!r}" in " ".join(out.split())
    status, out, _ = run(capsys, "inspect", path, "--layer-type", "full_attention")
    assert status == 0 and "layer type 'full_attention'" in out
    assert "sliding_attention'" not in out


def test_inspect_plot_writes_the_file_it_reports(tmp_path, capsys):
    pytest.importorskip("matplotlib")
    figure = tmp_path / "rope.svg"
    status, out, _ = run(capsys, "inspect", write(tmp_path, LLAMA31), "--plot", str(figure))
    assert status == 0 and f"written to {figure}\n" in out
    assert figure.read_text().lstrip().startswith("<?xml")


def test_inspect_plot_into_a_folder_writes_one_file_per_layer_type(tmp_path, capsys):
    # issue 19: --plot DIR wrote DIR.png and reported DIR. A folder now gets a file per RoPE,
    # named after the model and the layer type, and each one written is reported.
    pytest.importorskip("matplotlib")
    folder = tmp_path / "figures"
    folder.mkdir()
    status, out, _ = run(capsys, "inspect", write(tmp_path, GEMMA3), "--plot", str(folder))
    assert status == 0
    written = sorted(p.name for p in folder.iterdir())
    assert written == [
        "gemma3_text_wavelengths_full_attention.svg",
        "gemma3_text_wavelengths_sliding_attention.svg",
    ]
    for name in written:
        assert f"written to {folder / name}\n" in out
    assert sorted(p.name for p in tmp_path.iterdir()) == ["config.json", "figures"]


@pytest.mark.parametrize("target", ["rope", "rope.txt", "missing/rope.svg"])
def test_inspect_plot_refuses_a_name_it_would_not_write_as_given(tmp_path, capsys, target):
    status, out, err = run(
        capsys, "inspect", write(tmp_path, LLAMA31), "--plot", str(tmp_path / target)
    )
    assert status == 2 and out == ""  # refused before anything is printed or written
    assert err.startswith("error: --plot ") and err.count("\n") == 1
    assert sorted(p.name for p in tmp_path.iterdir()) == ["config.json"]


@pytest.mark.parametrize(
    "content, message",
    [
        (None, "no such file"),
        ("{not json", "is not valid JSON: Expecting property name"),
        ("[1, 2]", "must hold a JSON object"),
        (
            {**LLAMA31, "rope_scaling": {**LLAMA31["rope_scaling"], "frobnicate": 1}},
            "frobnicate",
        ),
    ],
    ids=["missing", "bad json", "not an object", "unknown key"],
)
def test_inspect_errors_exit_2_with_one_line(tmp_path, capsys, content, message):
    path = str(tmp_path / "absent.json") if content is None else write(tmp_path, content)
    status, out, err = run(capsys, "inspect", path)
    assert status == 2 and out == ""
    assert err.startswith("error: ") and message in err
    assert err.count("\n") == 1  # one line, no traceback


def test_no_command_prints_help(capsys):
    status, out, _ = run(capsys)
    assert status == 2 and "inspect" in out


def test_lines_fit_76_columns(tmp_path, capsys):
    _, out, _ = run(capsys, "inspect", write(tmp_path, LLAMA31), "--all-pairs")
    assert max(len(line) for line in out.splitlines()) <= 76


def test_describe_names_the_layers_a_spec_covers():
    # RopeSpec fields of the every-family reader (issue 16): read where a spec has them
    from types import SimpleNamespace

    spec = rope_spec(LLAMA31)
    fields = {name: getattr(spec, name) for name in dir(spec) if not name.startswith("_")}
    scale = QueryScale(0.1, 8192, 0)
    richer = SimpleNamespace(
        **{
            **fields,
            "layers": (0, 1, 2),
            "nope_layers": tuple(range(3, 48, 4)),
            "nope_dim": 128,
            "query_scale": scale,
        }
    )
    words = " ".join(describe(richer).split())
    assert "layers: 0, 1, 2 use this RoPE" in words
    assert "no RoPE: layers 3, 7, 11, 15, 19, 23, 27, 31, ... (12 layers) rotate nothing" in words
    assert "each query/key head is 128 coordinates without position, then the 128 rotated" in words
    assert "grows with the position t: 1 + 0.1 ln(1 + floor((t + 0) / 8192))" in words
    assert max(len(line) for line in describe(richer).splitlines()) <= 76
    plain = " ".join(describe(spec).split())
    assert "layers:" not in plain and "no RoPE:" not in plain and "MLA:" not in plain


def test_describe_is_what_inspect_prints(tmp_path, capsys):
    _, out, _ = run(capsys, "inspect", write(tmp_path, PHI2))
    assert out.rstrip("\n") == describe(rope_spec(PHI2))


def test_python_dash_m_runs(tmp_path):
    result = subprocess.run(
        [sys.executable, "-m", "posenc_ref", "inspect", write(tmp_path, PHI2)],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert "rotary_dim 32" in result.stdout


# --------------------------------------------------------------------------- every kind

RELEASED = {entry["name"]: entry["config"] for entry in released_encoding_configs()}


@pytest.mark.parametrize("name", sorted(RELEASED))
def test_inspect_explains_models_without_rope(tmp_path, capsys, name):
    config = RELEASED[name]
    status, out, err = run(capsys, "inspect", write(tmp_path, config))
    assert status == 0 and err == ""
    encoding = positional_encoding(config)
    assert out.rstrip("\n") == describe_encoding(encoding)
    assert max(len(line) for line in out.splitlines()) <= 76
    words = " ".join(out.split())
    assert "RoPE" not in words and "pass layout" not in words
    headline = {
        "learned": "Learned absolute positions",
        "sinusoidal": "Sinusoidal positions",
        "alibi": "ALiBi",
        "t5": "T5 relative buckets",
        "nope": "No positional encoding",
    }[encoding.kind]
    assert words.startswith(f"{headline} (model_type {config['model_type']!r})")
    assert f"source: {encoding.source}" in words


def test_inspect_numbers_are_the_encodings(tmp_path, capsys):
    words = {}
    for name in ("RoBERTa base", "OPT 125M", "FSMT en-de", "BLOOM 176B", "Flan-T5 base"):
        _, out, _ = run(capsys, "inspect", write(tmp_path, RELEASED[name]))
        words[name] = " ".join(out.split())
    roberta = positional_encoding(RELEASED["RoBERTa base"])
    assert f"{roberta.rows} rows of width {roberta.dim}" in words["RoBERTa base"]
    assert f"token t reads row t + {roberta.offset}" in words["RoBERTa base"]
    assert f"tokens 0..{roberta.num_positions - 1} have a row" in words["RoBERTa base"]
    opt = positional_encoding(RELEASED["OPT 125M"])
    assert f"{opt.rows} rows" in words["OPT 125M"] and f"row t + {opt.offset}" in words["OPT 125M"]
    fsmt = positional_encoding(RELEASED["FSMT en-de"])
    assert f"omega_i = 10000^(-i/{fsmt.dim // 2 - 1})" in words["FSMT en-de"]
    assert f"base {fsmt.table_base:.6g}" in words["FSMT en-de"]
    assert f"angle (t + {fsmt.offset}) omega_i" in words["FSMT en-de"]
    bloom = positional_encoding(RELEASED["BLOOM 176B"])
    first = ", ".join(f"{float(s):.6g}" for s in bloom.slopes()[:8])
    assert f"slopes: {first}, ... (112 in all" in words["BLOOM 176B"]
    t5 = positional_encoding(RELEASED["Flan-T5 base"])
    assert f"from {t5.saturation(bidirectional=True)} on shares the last" in words["Flan-T5 base"]
    assert f"from {t5.saturation(bidirectional=False)} on the last" in words["Flan-T5 base"]


def test_layout_on_a_bert_config_explains_the_absolute_encoding(tmp_path, capsys):
    # issue 19: --layout half on a BERT config described a RoPE
    status, out, err = run(
        capsys, "inspect", write(tmp_path, RELEASED["BERT base"]), "--layout", "half"
    )
    assert status == 0 and err == ""
    words = " ".join(out.split())
    assert words.startswith("Learned absolute positions (model_type 'bert')")
    assert "note: --layout half does not apply: it is the pair layout of a RoPE" in words
    assert "rotary_dim" not in words and "pairs (i, i +" not in words


def test_plot_on_a_model_without_rope_says_nothing_was_drawn(tmp_path, capsys):
    status, out, _ = run(
        capsys, "inspect", write(tmp_path, RELEASED["GPT-2"]), "--plot", str(tmp_path / "a.svg")
    )
    assert status == 0 and "no figure was written" in " ".join(out.split())
    assert not (tmp_path / "a.svg").exists()


# --------------------------------------------------------------------------- bad input


def one_line_error(status, out, err, *needles):
    assert status == 2, err
    assert out == "" and err.startswith("error: ") and err.count("\n") == 1, err
    assert "Traceback" not in err
    for needle in needles:
        assert needle in err, err


@pytest.mark.parametrize(
    "config, needles",
    [
        ({"model_type": "bert", "max_position_embeddings": 10**20}, ["2**53", "(bert)"]),
        ({"model_type": "gpt2", "n_positions": 10**400}, ["n_positions", "digits"]),
        (
            {"model_type": ["llama"], "hidden_size": 64},
            ["model_type must be a string", "['llama']"],
        ),
        ({"model_type": {"name": "llama"}}, ["model_type must be a string"]),
        ({"model_type": "bert", "position_embedding_type": ["absolute"]}, ["must be a string"]),
        ({"model_type": "llava", "text_config": [LLAMA31]}, ["text_config must be a dict"]),
    ],
    ids=[
        "1e20 learned",
        "400 digits",
        "model_type list",
        "model_type dict",
        "name list",
        "text_config list",
    ],
)
def test_extreme_values_give_one_clear_line(tmp_path, capsys, config, needles):
    one_line_error(*run(capsys, "inspect", write(tmp_path, config)), *needles)


def test_a_rope_with_10_to_the_20_positions_is_explained_or_refused(tmp_path, capsys):
    # issue 19: an OverflowError traceback. Whether rope_spec accepts the value is its call;
    # either way the command answers without a traceback.
    status, out, err = run(
        capsys, "inspect", write(tmp_path, {**LLAMA31, "max_position_embeddings": 10**20})
    )
    if status == 0:
        assert "max_position_embeddings 100000000000000000000" in " ".join(out.split())
    else:
        one_line_error(status, out, err, "max_position_embeddings")


def test_a_5000_digit_integer_is_refused_even_under_an_ignored_key(tmp_path, capsys):
    digits = "7" * 5000
    for key in ("max_position_embeddings", "vocab_size"):  # read, and ignored
        text = json.dumps(LLAMA31)[:-1] + f', "{key}": {digits}}}'
        status, out, err = run(capsys, "inspect", write(tmp_path, text))
        one_line_error(status, out, err, "an integer of 5000 digits", "4300")


@pytest.mark.parametrize("depth", [100, 5000, 100_000])
def test_deep_nesting_is_refused_even_under_an_ignored_key(tmp_path, capsys, depth):
    text = json.dumps(LLAMA31)[:-1] + ', "junk": ' + "[" * depth + "]" * depth + "}"
    one_line_error(*run(capsys, "inspect", write(tmp_path, text)), "nests", "64")


def test_depth_is_counted_on_the_text_before_json_parses_it(tmp_path, capsys, monkeypatch):
    """100,000 levels refused without json.loads (whose recursion kills Pyodide, not CPython)."""
    import posenc_ref.__main__ as cli

    def parse(*args, **kwargs):
        raise AssertionError("json.loads was called")

    monkeypatch.setattr(cli, "json", type("NoParse", (), {"loads": parse}))
    for text in ("[" * 100_000 + "]" * 100_000, '{"a": ' + "[{" * 50_000,  # unclosed
                 json.dumps(LLAMA31)[:-1] + ', "x": ' + "[" * 65 + "]" * 65 + "}"):  # fmt: skip
        status, out, err = run(capsys, "inspect", write(tmp_path, text))
        assert (status, out) == (2, "") and "too deeply to read" in err and "64" in err, err


def test_brackets_in_strings_are_not_levels(tmp_path, capsys):
    """A string may hold any brackets, escaped quotes included; 64 levels of real ones are read."""
    strings = {"a": "[" * 1000, "b": '\\"[{' * 100, "c": "]" * 10 + "[" * 100, "d": "\\"}
    nested: object = strings
    for _ in range(62):  # inside the config's object, around the strings': 64 levels
        nested = [nested]
    status, _, err = run(capsys, "inspect", write(tmp_path, {**LLAMA31, "junk": nested}))
    assert status == 0, err
    nested = [nested]  # 65
    status, _, err = run(capsys, "inspect", write(tmp_path, {**LLAMA31, "junk": nested}))
    assert status == 2 and "too deeply to read" in err


def test_sixty_four_levels_are_read(tmp_path, capsys):
    nested = 1
    for _ in range(62):
        nested = [nested]
    status, _, err = run(capsys, "inspect", write(tmp_path, {**LLAMA31, "junk": nested}))
    assert status == 0, err


VALUES = [
    None,
    True,
    False,
    0,
    -1,
    1,
    3,
    10**20,
    -(2**63),
    2**64,
    1.5,
    -0.0,
    1e308,
    1e-300,
    "",
    "x",
    "llama",
    "yarn",
    "half",
    [],
    [1],
    ["llama"],
    {},
    {"a": 1},
    {"rope_type": "yarn"},
    [[[[1]]]],
    2**53 + 1,
]
KEYS = [
    "model_type",
    "rope_scaling",
    "rope_parameters",
    "text_config",
    "head_dim",
    "hidden_size",
    "num_attention_heads",
    "max_position_embeddings",
    "partial_rotary_factor",
    "layer_types",
    "rope_theta",
    "position_embedding_type",
    "alibi",
    "attn_config",
    "n_head",
    "pad_token_id",
    "relative_attention_num_buckets",
    "relative_attention_max_distance",
    "d_model",
]


def malformed_configs(count, seed=0):
    """Real configs with one to three values replaced by junk, at the top or one level down."""
    rng = random.Random(seed)
    bases = [*RELEASED.values(), LLAMA31, PHI2, GEMMA3]
    for _ in range(count):
        config = json.loads(json.dumps(rng.choice(bases)))
        for _ in range(rng.randint(1, 3)):
            inner = [v for v in config.values() if isinstance(v, dict)]
            target = rng.choice(inner) if inner and rng.random() < 0.3 else config
            key = rng.choice([*target, *KEYS])
            target[key] = json.loads(json.dumps(rng.choice(VALUES)))
        yield config


def test_no_malformed_config_gets_a_traceback(tmp_path, capsys):
    """Fuzz: 600 malformed configs; each is explained (0) or refused in one line (2).

    Status 3 (a failure inside posenc_ref) is never allowed: the RoPE reader names every bad
    value as the other kinds do.
    """
    path = tmp_path / "config.json"
    for config in malformed_configs(600):
        path.write_text(json.dumps(config))
        status, out, err = run(capsys, "inspect", str(path))
        assert "Traceback" not in out + err
        if status == 0:
            assert err == "" and max(len(line) for line in out.splitlines()) <= 76
            continue
        assert err.startswith("error: ") and err.count("\n") == 1, err
        assert status == 2, f"status {status} for {json.dumps(config)[:300]}: {err}"


def test_bad_files_in_process_and_through_python_dash_m(tmp_path, capsys):
    bad = {
        "huge.json": json.dumps({"model_type": "opt", "max_position_embeddings": 10**20}),
        "digits.json": '{"model_type": "llama", "x": ' + "9" * 5000 + "}",
        "deep.json": '{"x": ' + "[" * 100_000 + "]" * 100_000 + "}",
        "list.json": json.dumps({"model_type": ["llama"]}),
        "binary.json": "\udcff",
    }
    for name, text in bad.items():
        (tmp_path / name).write_bytes(text.encode("utf-8", "surrogateescape"))
        one_line_error(*run(capsys, "inspect", str(tmp_path / name)))
    # the real entry point, once: the deepest file, where a RecursionError would surface
    result = subprocess.run(
        [sys.executable, "-m", "posenc_ref", "inspect", str(tmp_path / "deep.json")],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert result.returncode == 2 and result.stdout == ""
    assert result.stderr.startswith("error: ") and result.stderr.count("\n") == 1


# --------------------------------------------------------------------------- a model id


def fake_cache(root, model_id, config, revision="0123abcd", ref=True):
    """The hub cache layout: models--ORG--NAME/refs/main names snapshots/REV/config.json."""
    repo = root / ("models--" + model_id.replace("/", "--"))
    snapshot = repo / "snapshots" / revision
    snapshot.mkdir(parents=True)
    (snapshot / "config.json").write_text(json.dumps(config))
    if ref:
        (repo / "refs").mkdir()
        (repo / "refs" / "main").write_text(revision + "\n")
    return snapshot / "config.json"


@pytest.fixture
def clean_env(monkeypatch, tmp_path):
    for variable in ("HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE", "HF_HOME", "XDG_CACHE_HOME"):
        monkeypatch.delenv(variable, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.chdir(tmp_path)
    return monkeypatch


@pytest.mark.parametrize("where", ["HF_HUB_CACHE", "HF_HOME", "XDG_CACHE_HOME", "home"])
def test_a_model_id_is_read_from_the_local_cache(tmp_path, capsys, clean_env, where):
    roots = {
        "HF_HUB_CACHE": tmp_path / "hub-cache",
        "HF_HOME": tmp_path / "hf-home" / "hub",
        "XDG_CACHE_HOME": tmp_path / "xdg" / "huggingface" / "hub",
        "home": tmp_path / "home" / ".cache" / "huggingface" / "hub",
    }
    if where != "home":
        clean_env.setenv(
            where,
            str(
                roots[where].parent
                if where == "HF_HOME"
                else roots[where].parent.parent
                if where == "XDG_CACHE_HOME"
                else roots[where]
            ),
        )
    fake_cache(roots[where], "Qwen/Qwen3-8B", LLAMA31)
    status, out, err = run(capsys, "inspect", "Qwen/Qwen3-8B")
    assert status == 0, err
    assert out.rstrip("\n") == describe(rope_spec(LLAMA31))


def test_the_cache_follows_refs_main(tmp_path, capsys, clean_env):
    clean_env.setenv("HF_HUB_CACHE", str(tmp_path / "cache"))
    fake_cache(tmp_path / "cache", "org/model", RELEASED["BERT base"], revision="old", ref=False)
    fake_cache_dir = tmp_path / "cache" / "models--org--model"
    newer = fake_cache_dir / "snapshots" / "new"
    newer.mkdir()
    (newer / "config.json").write_text(json.dumps(RELEASED["GPT-2"]))
    # two snapshots and no refs/main: which one is meant is unknown, so both are named
    status, out, err = run(capsys, "inspect", "org/model")
    one_line_error(status, out, err, "2 snapshots of org/model", str(newer / "config.json"))
    (fake_cache_dir / "refs").mkdir()
    (fake_cache_dir / "refs" / "main").write_text("new")
    status, out, _ = run(capsys, "inspect", "org/model")
    assert status == 0 and "model_type 'gpt2'" in out


def test_a_model_id_not_in_the_cache_names_the_file_to_pass(tmp_path, capsys, clean_env):
    clean_env.setenv("HF_HUB_CACHE", str(tmp_path / "cache"))
    status, out, err = run(capsys, "inspect", "Qwen/Qwen3-8B")
    repo = tmp_path / "cache" / "models--Qwen--Qwen3-8B"
    one_line_error(status, out, err, "no config.json of the model Qwen/Qwen3-8B", "never downloads")
    assert f"{repo}/snapshots/REVISION/config.json" in err
    assert "hf download Qwen/Qwen3-8B config.json" in err and "huggingface-cli" not in err


def test_a_folder_holding_a_config_is_read(tmp_path, capsys):
    write(tmp_path, PHI2)
    status, out, _ = run(capsys, "inspect", str(tmp_path))
    assert status == 0 and "rotary_dim 32" in out


def test_reading_a_model_id_imports_no_network_code(fresh_imports):
    """``main(["inspect", "org/model"])`` reads a Hugging Face cache and loads no network code.

    In a fresh interpreter, shared with other tests (tests/fresh_interpreter.py).
    """
    from tests.fresh_interpreter import modules_after, step_record

    assert step_record(fresh_imports, "inspect a model id")["result"] == 0
    loaded = modules_after(fresh_imports, "inspect a model id")
    # (torch itself imports http.client, for torch.hub; none of these)
    network = ("huggingface_hub", "transformers", "requests", "urllib3", "httpx")
    assert [m for m in network if m in loaded] == []
