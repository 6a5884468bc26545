"""Reference vectors: the three formats, their contents against from_hf_config, and verify."""

import contextlib
import io
import json
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

from posenc_ref import RotaryEmbedding, apply_rope_loop
from posenc_ref.__main__ import main
from posenc_ref.models import released_config
from posenc_ref.testing import build_vectors, read_vectors, verify_outputs, write_vectors
from posenc_ref.testing._vector_files import content_hash
from posenc_ref.testing._vectors import FORMAT, VERSION

ROOT = Path(__file__).resolve().parents[1]
FORMATS = (".safetensors", ".npz", ".json")


@pytest.fixture(scope="module")
def llama31():
    return build_vectors(released_config("Llama 3.1"))


def run_cli(*args) -> subprocess.CompletedProcess:
    """The command line's ``main`` run in this process, its output and status captured.

    In-process: a fresh interpreter would import torch again for each call (seconds). The
    process itself (``python -m posenc_ref``, a closed pipe) is tested below and in test_cli.py.
    """
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            status = main([str(arg) for arg in args])
        except SystemExit as exit_:  # argparse's usage errors
            status = exit_.code
    return subprocess.CompletedProcess(args, status, out.getvalue(), err.getvalue())


@pytest.mark.parametrize("suffix", FORMATS)
def test_each_format_holds_the_same_tensors_and_metadata(llama31, suffix, tmp_path):
    tensors, metadata = llama31
    path = write_vectors(tmp_path / f"v{suffix}", tensors, metadata)
    back, meta = read_vectors(path)
    assert meta == metadata
    assert set(back) == set(tensors)
    for name, t in tensors.items():
        assert back[name].dtype == t.dtype and torch.equal(back[name], t), name
    assert content_hash(back) == metadata["sha256"]


def test_safetensors_file_reads_with_the_safetensors_package(llama31, tmp_path):
    safetensors = pytest.importorskip("safetensors.torch")
    tensors, metadata = llama31
    path = write_vectors(tmp_path / "v.safetensors", tensors, metadata)
    loaded = safetensors.load_file(str(path))
    assert all(torch.equal(loaded[name], t) for name, t in tensors.items())


def test_npz_needs_no_pickle_and_keeps_bfloat16_bits(llama31, tmp_path):
    tensors, metadata = llama31
    path = write_vectors(tmp_path / "v.npz", tensors, metadata)
    with np.load(path, allow_pickle=False) as archive:
        bits = archive["rope/start/bfloat16/q"]
        assert bits.dtype == np.uint16
        meta = json.loads(str(archive["__metadata__"]))
    assert meta["tensors"]["rope/start/bfloat16/q"]["dtype"] == "BF16"
    expected = tensors["rope/start/bfloat16/q"].view(torch.int16).numpy().view(np.uint16)
    assert np.array_equal(bits, expected)


def test_metadata_says_what_the_issue_asks(llama31):
    _, metadata = llama31
    assert metadata["format"] == FORMAT and metadata["version"] == VERSION == 2
    assert metadata["config"] == released_config("Llama 3.1")
    windows = {case["window"] for case in metadata["cases"]}
    assert windows == {"start", "inside", "boundary", "far"}
    assert {case["dtype"] for case in metadata["cases"]} == {"float32", "bfloat16"}
    boundary = next(c for c in metadata["cases"] if c["window"] == "boundary")
    assert boundary["first"] < 8192 <= boundary["last"]  # crosses the original context
    tolerance = metadata["tolerance"]
    assert tolerance["unit_roundoff"] == {"float32": 2.0**-24, "bfloat16": 2.0**-8}
    assert tolerance["rtol"]["bfloat16"] == 8 * 2.0**-8


@pytest.mark.parametrize(
    "name", ["Llama 3.1", "Gemma 3", "Qwen2-VL (M-RoPE)", "Phi-3.5-mini (LongRoPE)", "GLM-4"]
)
def test_contents_are_from_hf_configs_rotation(name):
    """Every expected output is from_hf_config's module run in float64 on the stored inputs.

    It equals the loop oracle, the cos/sin rows are the call's angles, the tolerance is positive.
    """
    config = released_config(name)
    tensors, metadata = build_vectors(config)
    for group, described in metadata["groups"].items():
        module = RotaryEmbedding.from_hf_config(config, layer_type=described["layer_type"])
        assert described["rotary_dim"] == module.rotary_dim
        assert described["layout"] == module.layout
        torch.testing.assert_close(tensors[f"{group}/inv_freq"], module.inv_freq, rtol=0, atol=0)
    assert any(c["position_rows"] == 3 for c in metadata["cases"]) == ("M-RoPE" in name)
    for case in metadata["cases"]:
        c = case["name"]
        described = metadata["groups"][case["group"]]
        module = RotaryEmbedding.from_hf_config(config, layer_type=described["layer_type"])
        q, k, positions = tensors[f"{c}/q"], tensors[f"{c}/k"], tensors[f"{c}/positions"]
        assert q.dtype == {"float32": torch.float32, "bfloat16": torch.bfloat16}[case["dtype"]]
        q_rot, k_rot = module(q.double(), k.double(), positions)
        assert torch.equal(q_rot, tensors[f"{c}/q_rot"]) and torch.equal(
            k_rot, tensors[f"{c}/k_rot"]
        )
        if case["position_rows"] == 3:
            assert not torch.equal(positions[0], positions[1])  # three different rows
        elif module.output_layout == module.layout:
            freqs = module.frequencies(case["seq_len"])
            oracle = apply_rope_loop(
                q.double(),
                positions,
                freqs.inv_freq,
                layout=module.layout,
                rotary_dim=module.rotary_dim,
                attention_factor=freqs.attention_factor,
            )
            torch.testing.assert_close(oracle, q_rot, rtol=0, atol=1e-12)
            angles = positions.double()[:, None] * freqs.inv_freq
            a = freqs.attention_factor
            torch.testing.assert_close(tensors[f"{c}/cos"], a * torch.cos(angles))
            torch.testing.assert_close(tensors[f"{c}/sin"], a * torch.sin(angles))
        tol = tensors[f"{c}/tol_q"]
        assert tol.shape == q.shape and bool((tol > 0).all())
        # an error of one rounding of the input dtype fits within it
        assert bool(((q_rot.to(q.dtype).double() - q_rot).abs() <= tol).all())


def test_gemma3_has_both_layer_types():
    _, metadata = build_vectors(released_config("Gemma 3"))
    assert set(metadata["groups"]) == {"sliding_attention", "full_attention"}
    bases = {g: d["base"] for g, d in metadata["groups"].items()}
    assert bases == {"sliding_attention": 10000.0, "full_attention": 1e6}


def _outputs(tensors, metadata, module):
    outputs = {}
    for case in metadata["cases"]:
        c = case["name"]
        q, k = module(tensors[f"{c}/q"], tensors[f"{c}/k"], tensors[f"{c}/positions"])
        outputs[f"{c}/q_rot"], outputs[f"{c}/k_rot"] = q, k
    return outputs


def test_two_position_rows_of_neomme():
    """An M-RoPE family with two rows (NeoMME) gets ``..._2rows`` cases its module reproduces."""
    config = {"model_type": "neomme", "num_hidden_layers": 2,
              "layer_types": ["sliding_attention", "full_attention"]}  # fmt: skip
    tensors, metadata = build_vectors(config)
    several = [c for c in metadata["cases"] if c["position_rows"] > 1]
    assert several and all(c["position_rows"] == 2 for c in several)
    assert all("_2rows" in c["name"] or c["window"] == "image" for c in several)
    assert {g["mrope_assignment"] for g in metadata["groups"].values()} == {"alternating_2d"}
    for case in several[:: len(several) // 4]:
        c = case["name"]
        described = metadata["groups"][case["group"]]
        module = RotaryEmbedding.from_hf_config(config, layer_type=described["layer_type"])
        positions = tensors[f"{c}/positions"]
        assert positions.shape[0] == 2 and not torch.equal(positions[0], positions[1])
        q_rot, _ = module(tensors[f"{c}/q"].double(), tensors[f"{c}/k"].double(), positions)
        assert torch.equal(q_rot, tensors[f"{c}/q_rot"])


def test_cli_writes_and_verify_diagnoses_a_wrong_outputs_file(tmp_path):
    config = released_config("Llama 3.1")
    (tmp_path / "config.json").write_text(json.dumps(config))
    run = run_cli("vectors", tmp_path / "config.json", "-o", tmp_path / "v.safetensors")
    assert run.returncode == 0, run.stderr
    assert "version 2" in run.stdout
    assert "rope: base 500000, layout half, head_dim 128, rope_type llama3" in run.stdout
    tensors, metadata = read_vectors(tmp_path / "v.safetensors")
    right = RotaryEmbedding.from_hf_config(config)
    write_vectors(tmp_path / "right.npz", _outputs(tensors, metadata, right), {})
    run = run_cli("verify", tmp_path / "v.safetensors", tmp_path / "right.npz")
    assert run.returncode == 0, run.stdout + run.stderr
    assert run.stdout.startswith("AGREES: all 8 cases compared are within tolerance.")
    # the deliberately wrong one: Meta's interleaved pairs on a half-layout model
    wrong = RotaryEmbedding(
        right.head_dim, base=right.base, layout="interleaved", scaling=dict(right.spec.scaling)
    )
    write_vectors(tmp_path / "wrong.json", _outputs(tensors, metadata, wrong), {})
    run = run_cli("verify", tmp_path / "v.safetensors", tmp_path / "wrong.json")
    assert run.returncode == 1, run.stderr
    lines = run.stdout.splitlines()
    assert lines[0].startswith("DISAGREES: ")
    cases = [line for line in lines if line.startswith("  rope/")]
    assert len(cases) == 8 and all(line.endswith(("DISAGREES", "agrees")) for line in cases)
    assert "- the other pair layout: your fn rotates pairs (2i, 2i+1)" in run.stdout
    report = lines[lines.index("") :]
    assert max(len(line) for line in report) <= 80  # the report is wrapped, the cases are not


def test_verify_gives_the_kits_diagnosis_for_a_dropped_attention_factor(tmp_path):
    config = released_config("Qwen2.5 (YaRN)")
    tensors, metadata = build_vectors(config)
    write_vectors(tmp_path / "v.npz", tensors, metadata)
    module = RotaryEmbedding.from_hf_config(config)
    plain = RotaryEmbedding(
        module.head_dim,
        base=module.base,
        layout="half",
        scaling=type(module.frequencies(0))(module.inv_freq, 1.0),
    )
    write_vectors(tmp_path / "out.safetensors", _outputs(tensors, metadata, plain), {})
    agrees, report = verify_outputs(tmp_path / "v.npz", tmp_path / "out.safetensors")
    assert not agrees
    assert "- the attention factor missing" in report


def test_verify_refuses_a_changed_file_and_foreign_names(llama31, tmp_path):
    tensors, metadata = llama31
    changed = dict(tensors)
    changed["rope/start/float32/q_rot"] = changed["rope/start/float32/q_rot"] + 1e-9
    write_vectors(tmp_path / "changed.npz", changed, metadata)
    write_vectors(tmp_path / "out.npz", {"q_rot": torch.zeros(1)}, {})
    with pytest.raises(ValueError, match="do not match their sha256"):
        verify_outputs(tmp_path / "changed.npz", tmp_path / "out.npz")
    write_vectors(tmp_path / "v.npz", tensors, metadata)
    with pytest.raises(ValueError, match="holds none of the cases"):
        verify_outputs(tmp_path / "v.npz", tmp_path / "out.npz")
    run = run_cli("verify", tmp_path / "v.npz", tmp_path / "missing.npz")
    assert run.returncode == 2 and "no such file" in run.stderr


def test_verify_says_which_cases_are_missing_and_fails_unless_allowed(llama31, tmp_path):
    tensors, metadata = llama31
    write_vectors(tmp_path / "v.npz", tensors, metadata)
    right = RotaryEmbedding.from_hf_config(released_config("Llama 3.1"))
    half = {n: t for n, t in _outputs(tensors, metadata, right).items() if "float32" in n}
    write_vectors(tmp_path / "half.npz", half, {})
    run = run_cli("verify", tmp_path / "v.npz", tmp_path / "half.npz")
    assert run.returncode == 1, run.stdout + run.stderr
    assert run.stdout.startswith("INCOMPLETE: the 4 cases compared agree")
    assert "4 of the 8 cases are missing from half.npz" in run.stdout
    missing = [line.split() for line in run.stdout.splitlines() if line.endswith("MISSING")]
    assert ["rope/far/bfloat16", "positions", "131056..131071", "MISSING"] in missing
    run = run_cli("verify", tmp_path / "v.npz", tmp_path / "half.npz", "--allow-missing")
    assert run.returncode == 0 and run.stdout.startswith("AGREES: all 4 cases compared")


def test_verify_into_a_closed_pipe_exits_quietly(llama31, tmp_path):
    tensors, metadata = llama31
    write_vectors(tmp_path / "v.npz", tensors, metadata)
    wrong = RotaryEmbedding(128, base=500000.0, layout="interleaved")
    write_vectors(tmp_path / "w.npz", _outputs(tensors, metadata, wrong), {})
    command = f"{sys.executable} -m posenc_ref verify {tmp_path / 'v.npz'} {tmp_path / 'w.npz'}"
    run = subprocess.run(
        f"set -o pipefail; {command} | head -1", shell=True, executable="/bin/bash",
        capture_output=True, text=True, cwd=ROOT,
    )  # fmt: skip
    assert run.stdout.startswith("DISAGREES")
    assert "bug in posenc_ref" not in run.stderr and "Traceback" not in run.stderr


def test_vectors_cli_refuses_bad_input(tmp_path):
    (tmp_path / "config.json").write_text(json.dumps(released_config("Llama 3.1")))
    run = run_cli("vectors", tmp_path / "config.json", "-o", tmp_path / "v.txt")
    assert run.returncode == 2 and ".safetensors, .npz or .json" in run.stderr
    (tmp_path / "bert.json").write_text(json.dumps({"model_type": "bert"}))
    run = run_cli("vectors", tmp_path / "bert.json", "-o", tmp_path / "v.json")
    assert run.returncode == 2 and run.stderr.startswith("error: ")


C_CONFIGS = {
    # Qwen/Qwen2.5-7B's config.json (its RoPE keys): base 1e6, the half layout
    "Qwen2.5-7B": {"model_type": "qwen2", "hidden_size": 3584, "num_attention_heads": 28,
                   "rope_theta": 1000000.0, "max_position_embeddings": 131072},
    # EleutherAI/gpt-j-6b's: interleaved pairs, rotary_dim 64 of a 256-wide head
    "GPT-J-6B": {"model_type": "gptj", "n_embd": 4096, "n_head": 16, "rotary_dim": 64,
                 "n_positions": 2048},
}  # fmt: skip


@pytest.mark.parametrize("family", sorted(C_CONFIGS))
def test_c_program_reads_two_families_from_the_file(family, tmp_path):
    """The page's C example takes base, layout and widths from the file; bfloat16 q too."""
    compiler = shutil.which("cc") or shutil.which("gcc")
    if compiler is None:
        pytest.skip("no C compiler on this machine")
    binary = tmp_path / "read_vectors"
    source = ROOT / "docs" / "examples" / "read_vectors.c"
    subprocess.run([compiler, "-O2", "-Wall", "-o", binary, source, "-lm"], check=True)
    tensors, metadata = build_vectors(C_CONFIGS[family])
    path = write_vectors(tmp_path / "v.safetensors", tensors, metadata)
    for case in metadata["cases"]:
        run = subprocess.run([binary, path, case["name"]], capture_output=True, text=True)
        assert run.returncode == 0, run.stdout + run.stderr
        count = tensors[f"{case['name']}/q"].numel()
        assert f"{count} of {count} elements within tolerance" in run.stdout
    # a scaled model (Llama 3.1): the example's plain RoPE is told apart far out
    scaled = write_vectors(tmp_path / "s.safetensors", *build_vectors(released_config("Llama 3.1")))
    run = subprocess.run([binary, scaled, "rope/far/float32"], capture_output=True, text=True)
    assert run.returncode == 1, run.stdout


# --- issue 39, item 7: what a file says of itself is checked --------------------------------


@pytest.mark.parametrize("suffix", FORMATS)
def test_read_vectors_checks_the_sha256(llama31, suffix, tmp_path):
    tensors, metadata = llama31
    changed = dict(tensors)
    changed["rope/start/float32/q"] = changed["rope/start/float32/q"] * 2
    write_vectors(tmp_path / f"changed{suffix}", changed, metadata)
    with pytest.raises(ValueError, match="sha256: the contents do not match"):
        read_vectors(tmp_path / f"changed{suffix}")


def test_a_version_2_file_without_what_version_2_added_is_refused(tmp_path):
    tensors, metadata = build_vectors(released_config("Qwen2-VL (M-RoPE)"))
    old = {**metadata, "cases": [c for c in metadata["cases"] if c["window"] != "image"]}
    write_vectors(tmp_path / "v.npz", tensors, old)
    write_vectors(tmp_path / "out.npz", {"q_rot": torch.zeros(1)}, {})
    with pytest.raises(ValueError, match="version: 2, but the file lacks what version 2 added"):
        verify_outputs(tmp_path / "v.npz", tmp_path / "out.npz")


def test_flat_safetensors_entries_that_contradict_the_json_are_refused(llama31, tmp_path):
    from safetensors.torch import save_file

    tensors, metadata = llama31
    path = tmp_path / "v.safetensors"
    write_vectors(path, tensors, metadata)
    raw = json.loads(path.read_bytes()[8 : 8 + int.from_bytes(path.read_bytes()[:8], "little")])
    flat = dict(raw["__metadata__"], version="1")  # the JSON says 2
    save_file({k: v.clone() for k, v in tensors.items()}, str(path), metadata=flat)
    with pytest.raises(ValueError, match=r"__metadata__.version: says '1', the JSON"):
        read_vectors(path)


def test_an_outputs_file_with_extra_bool_and_int32_tensors_is_read(llama31, tmp_path):
    from safetensors.torch import save_file

    tensors, metadata = llama31
    right = RotaryEmbedding.from_hf_config(released_config("Llama 3.1"))
    outputs = {}
    for case in metadata["cases"]:
        name = case["name"]
        q, k, p = (tensors[f"{name}/{w}"] for w in ("q", "k", "positions"))
        q_rot, k_rot = right(q, k, p)
        outputs[f"{name}/q_rot"], outputs[f"{name}/k_rot"] = q_rot.contiguous(), k_rot.contiguous()
    outputs["mask"] = torch.ones(4, dtype=torch.bool)
    outputs["token_index"] = torch.arange(4, dtype=torch.int32)
    write_vectors(tmp_path / "v.safetensors", tensors, metadata)
    save_file(outputs, str(tmp_path / "out.safetensors"))
    read, _ = read_vectors(tmp_path / "out.safetensors")
    assert read["mask"].dtype == torch.bool and read["token_index"].dtype == torch.int32
    agrees, report = verify_outputs(tmp_path / "v.safetensors", tmp_path / "out.safetensors")
    assert agrees, report
