"""The command line as a command: its name, --version, help examples, hints in flags, pipes.

The console scripts declared in pyproject.toml run ``posenc_ref.__main__:main``; ``--version``
prints the package's version; every subcommand's help ends in examples; refusals name the flag
(``--layout half``), not the Python keyword; a model id missing from the cache gets
``hf download`` and the close ids that are there; a reader that goes away (``| head``) ends the
run quietly; and RotaryEmbedding's repr does not show its table size as a context.
"""

import importlib
import io
import json
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from posenc_ref import RotaryEmbedding, __version__
from posenc_ref.__main__ import EXIT_BROKEN_PIPE, main
from posenc_ref.cli._words import EXAMPLES, cli_words
from tests.configs import LLAMA31 as LLAMA

ROOT = Path(__file__).resolve().parents[1]


def run(capsys, *argv):
    status = main(list(argv))
    out, err = capsys.readouterr()
    return status, out, err


def write(tmp_path, config, name="config.json"):
    path = tmp_path / name
    path.write_text(json.dumps(config))
    return str(path)


def test_console_scripts_run_main():
    scripts = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"]
    assert scripts == {
        "posenc-ref": "posenc_ref.__main__:main",
        "posenc_ref": "posenc_ref.__main__:main",
    }
    module, _, name = scripts["posenc-ref"].partition(":")
    assert getattr(importlib.import_module(module), name) is main


def test_version(capsys):
    with pytest.raises(SystemExit) as exit_:
        main(["--version"])
    assert exit_.value.code == 0 and capsys.readouterr().out == f"posenc-ref {__version__}\n"


@pytest.mark.parametrize("command", sorted(EXAMPLES))
def test_every_subcommands_help_ends_in_its_examples(capsys, command):
    with pytest.raises(SystemExit):
        main([command, "--help"])
    out = capsys.readouterr().out
    examples = out[out.index("\nexamples:\n") :]
    for _, arguments in EXAMPLES[command]:
        assert f"  python -m posenc_ref {arguments}\n" in examples


def test_the_programs_name_is_the_one_run(monkeypatch, capsys):
    monkeypatch.setattr(sys, "argv", ["/venv/bin/posenc-ref"])
    with pytest.raises(SystemExit):
        main(["--help"])
    out = capsys.readouterr().out
    assert out.startswith("usage: posenc-ref ") and "  posenc-ref inspect config.json\n" in out
    assert "python -m" not in out


def test_top_level_help_has_an_example_of_each_subcommand(capsys):
    with pytest.raises(SystemExit):
        main(["--help"])
    out = capsys.readouterr().out
    for command in EXAMPLES:
        assert f"  python -m posenc_ref {EXAMPLES[command][0][1]}\n" in out


# --------------------------------------------------------------------------- messages


@pytest.mark.parametrize(
    ("python", "command_line"),
    [
        ("pass layout='half' (HF's rotate_half)", "pass --layout half (HF's rotate_half)"),
        ('layout="interleaved" contradicts', "--layout interleaved contradicts"),
        ("one RoPE per layer type (a, b): pass layer_type=", "(a, b): pass --layer-type T"),
        (
            "layer_type='full' but no layer_types: leave layer_type out",
            "--layer-type full but no layer_types: leave --layer-type out",
        ),
        (
            "layer_type 'x' is not one of the config's layer_types",
            "--layer-type x is not one of the config's layer_types",
        ),
    ],
)
def test_hints_name_flags(python, command_line):
    assert cli_words(python).endswith(command_line)


def test_a_refusal_of_an_unknown_family_names_the_flag(tmp_path, capsys):
    path = write(tmp_path, {"model_type": "my_model", "hidden_size": 64, "num_attention_heads": 4})
    status, _, err = run(capsys, "inspect", path)
    assert status == 2 and "--layout half" in err and "--layout interleaved" in err
    assert "layout=" not in err


def test_a_layout_that_contradicts_the_family_names_the_flag(tmp_path, capsys):
    status, _, err = run(capsys, "inspect", write(tmp_path, LLAMA), "--layout", "interleaved")
    assert status == 2 and "--layout interleaved contradicts llama's code" in err


def test_a_layer_type_the_config_lacks_names_the_flag(tmp_path, capsys):
    status, _, err = run(capsys, "inspect", write(tmp_path, LLAMA), "--layer-type", "full")
    assert status == 2 and "--layer-type full, but this config has one RoPE" in err
    assert "leave --layer-type out" in err and "layer_type=" not in err


def cached(root, model_id, config):
    snapshot = root / ("models--" + model_id.replace("/", "--")) / "snapshots" / "r"
    snapshot.mkdir(parents=True)
    (snapshot / "config.json").write_text(json.dumps(config))


def test_a_missing_id_suggests_hf_download_and_the_close_ids(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hub"))
    cached(tmp_path / "hub", "Qwen/Qwen3-8B", LLAMA)
    cached(tmp_path / "hub", "meta-llama/Llama-3.1-8B", LLAMA)
    status, out, err = run(capsys, "inspect", "qwen/qwen3-8b")
    assert status == 2 and out == "" and err.count("\n") == 1
    assert "Did you mean Qwen/Qwen3-8B (in the cache)?" in err
    assert "hf download qwen/qwen3-8b config.json" in err
    status, _, err = run(capsys, "inspect", "meta-llama/Llama-3.1-8b")
    assert "Did you mean meta-llama/Llama-3.1-8B" in err
    status, _, err = run(capsys, "inspect", "google/gemma-3-1b-it")
    assert "Did you mean" not in err and "hf download google/gemma-3-1b-it" in err


def test_where_without_cache_and_cache_with_a_config_are_refused(tmp_path, capsys):
    path = write(tmp_path, LLAMA)
    status, _, err = run(capsys, "inspect", path, "--where", "rope_type=yarn")
    assert status == 2 and "--where filters the rows of --cache" in err
    status, _, err = run(capsys, "inspect", path, "--cache")
    assert status == 2 and f"leave out {path}" in err


def test_inspect_without_a_config_asks_for_one_or_for_the_cache(capsys):
    status, out, err = run(capsys, "inspect")
    assert status == 2 and out == "" and "give a CONFIG" in err and "--cache" in err


def test_an_empty_cache_says_so(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "nothing-here"))
    status, out, _ = run(capsys, "inspect", "--cache")
    assert (
        status == 0 and out == f"no model in the Hugging Face cache {tmp_path / 'nothing-here'}\n"
    )
    status, out, _ = run(capsys, "inspect", "--cache", "--json")
    assert status == 0 and json.loads(out)["models"] == []


@pytest.mark.parametrize(
    ("flags", "needle"),
    [
        (["--at", "x"], "--at x: give positions as integers"),
        (["--context", "0"], "--context 0: the original context must be >= 1"),
        (["--layer-type", "full"], "--layer-type full"),
        (["--plot", "missing/d.svg"], "--plot missing/d.svg: the folder missing does not exist"),
    ],
)
def test_compare_refuses_bad_flags_in_one_line(tmp_path, capsys, monkeypatch, flags, needle):
    monkeypatch.chdir(tmp_path)
    path = write(tmp_path, LLAMA)
    status, out, err = run(capsys, "compare", path, path, *flags)
    assert status == 2 and out == "" and err.count("\n") == 1 and needle in err, err


# --------------------------------------------------------------------------- pipes


class ClosedPipe(io.TextIOWrapper):
    """A stdout whose reader has gone: every write raises BrokenPipeError."""

    def write(self, text):
        raise BrokenPipeError(32, "Broken pipe")


def test_a_broken_pipe_ends_quietly(tmp_path, capsys, monkeypatch):
    path = write(tmp_path, LLAMA)
    stream = ClosedPipe(open(tmp_path / "out", "wb"))  # noqa: SIM115 - main re-points its fd
    monkeypatch.setattr(sys, "stdout", stream)
    status = main(["inspect", path, "--json"])
    monkeypatch.undo()
    assert status == EXIT_BROKEN_PIPE and capsys.readouterr().err == ""


def test_a_broken_pipe_through_the_command_prints_nothing(tmp_path):
    # one head of 16384: 8192 pairs, a JSON of about a megabyte, far more than a pipe buffers
    path = write(tmp_path, {**LLAMA, "hidden_size": 16384, "num_attention_heads": 1})
    program = (
        "import sys; from posenc_ref.__main__ import main; "
        "sys.exit(main(['inspect', sys.argv[1], '--json']))"
    )
    process = subprocess.Popen(
        [sys.executable, "-c", program, path],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env={"PYTHONPATH": ":".join(sys.path), "PATH": ""},
    )
    process.stdout.readline()
    process.stdout.close()  # what `| head -1` does
    _, err = process.communicate(timeout=300)
    assert err == b"" and process.returncode == EXIT_BROKEN_PIPE


# --------------------------------------------------------------------------- the repr


def test_rotary_embeddings_repr_does_not_show_its_cache_as_the_context():
    module = RotaryEmbedding.from_hf_config(LLAMA)
    text = repr(module)
    assert "original_max_len=8192" in text and "max_positions=131072" in text
    assert f"cached_rows={module.max_len}" in text and " max_len=" not in text
    plain = repr(RotaryEmbedding(64, max_len=128))
    assert "cached_rows=128" in plain and "max_len" not in plain and "max_positions" not in plain


def test_a_note_names_the_flag_not_the_keyword(capsys, tmp_path):
    """A pair layout given for a model without RoPE is noted in the command line's words."""
    bloom = {"model_type": "bloom", "n_head": 16, "hidden_size": 1024, "n_layer": 2}
    status, out, _ = run(capsys, "inspect", write(tmp_path, bloom), "--layout", "half")
    assert status == 0, out
    assert "note:" in out and "--layout half does not apply" in out
    assert "layout='half'" not in out
