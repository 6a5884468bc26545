"""The command line: ``python -m posenc_ref inspect CONFIG.json [--layer-type T] [--plot FILE]``.

It prints what posenc_ref.models.rope_spec reads from a config; these tests check that the
printed numbers are the spec's (computed here from the spec, not copied from the output), that
--plot writes a figure, and that a missing file, bad JSON or a refused config exit with status 2
and one line naming the problem.
"""

import json
import math
import re
import subprocess
import sys

import pytest

from posenc_ref.__main__ import describe, main

models = pytest.importorskip(
    "posenc_ref.models",
    reason="posenc_ref.models (rope_spec, from the models helper's issue 8) is not on this "
    "branch yet; the CLI reads configs through it",
)

LLAMA31 = {
    "model_type": "llama",
    "hidden_size": 4096,
    "num_attention_heads": 32,
    "max_position_embeddings": 131072,
    "rope_theta": 500000.0,
    "rope_scaling": {
        "rope_type": "llama3",
        "factor": 8.0,
        "low_freq_factor": 1.0,
        "high_freq_factor": 4.0,
        "original_max_position_embeddings": 8192,
    },
}
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
    spec = models.rope_spec(LLAMA31)
    assert f"rope_type '{spec.rope_type}', base {spec.base:.10g}" in out
    words = " ".join(out.split())  # lines are wrapped at 76 columns
    assert f"head_dim {spec.head_dim}, rotary_dim {spec.rotary_dim}: all of them rotated" in words
    assert f"pairs (i, i + {spec.rotary_dim // 2}), half" in words
    assert f"original {spec.original_max_len}, max_position_embeddings {spec.max_len}" in words


def test_inspect_per_pair_rows_are_the_specs_numbers(tmp_path, capsys):
    _, out, _ = run(capsys, "inspect", write(tmp_path, LLAMA31), "--all-pairs")
    spec = models.rope_spec(LLAMA31)
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


def test_inspect_layer_type(tmp_path, capsys):
    config = {  # Gemma 3's form: one RoPE per layer type, in transformers 5's rope_parameters
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
    path = write(tmp_path, config)
    status, _, err = run(capsys, "inspect", path)
    assert status == 2 and "--layer-type" in err
    status, out, _ = run(capsys, "inspect", path, "--layer-type", "full_attention")
    assert status == 0 and "layer type 'full_attention'" in out


def test_inspect_plot_writes_a_figure(tmp_path, capsys):
    pytest.importorskip("matplotlib")
    figure = tmp_path / "rope.svg"
    status, out, _ = run(capsys, "inspect", write(tmp_path, LLAMA31), "--plot", str(figure))
    assert status == 0 and f"written to {figure}" in out
    assert figure.read_text().lstrip().startswith("<?xml")


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


def test_describe_is_what_inspect_prints(tmp_path, capsys):
    _, out, _ = run(capsys, "inspect", write(tmp_path, PHI2))
    assert out.rstrip("\n") == describe(models.rope_spec(PHI2))


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
