"""Files from other programs are untrusted input: about 500 broken vectors and outputs files.

Every one of them gets one clear message naming the file and the field: read_vectors and
verify_outputs raise VectorsFileError (a ValueError), and ``python -m posenc_ref verify``
exits 2 with one ``error:`` line, never a traceback or "a bug in posenc_ref". The cases are the
ones a bad-input fuzz found (issue 25): truncated files, headers that are not JSON objects,
unknown or missing dtypes, offsets past the end, huge or negative shapes, a header length of
2**63, a tensor named __metadata__, edited metadata, foreign zip members, deep JSON.
"""

from __future__ import annotations

import contextlib
import io
import json
import struct
import zipfile
from pathlib import Path

import numpy as np
import pytest
import torch

from posenc_ref.__main__ import main
from posenc_ref.testing import (
    VectorsFileError,
    build_vectors,
    read_vectors,
    verify_outputs,
    write_vectors,
)

TINY = {
    "model_type": "llama",
    "hidden_size": 16,
    "num_attention_heads": 2,
    "rope_theta": 10000.0,
    "max_position_embeddings": 64,
}


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    folder = tmp_path_factory.mktemp("fuzz")
    tensors, metadata = build_vectors(TINY)
    written = {s: write_vectors(folder / f"v{s}", tensors, metadata) for s in
               (".safetensors", ".npz", ".json")}  # fmt: skip
    outputs = {f"{c['name']}/{w}": tensors[f"{c['name']}/{w}"] for c in metadata["cases"]
               for w in ("q_rot", "k_rot")}  # fmt: skip
    good = write_vectors(folder / "out.npz", outputs, {})
    return folder, tensors, metadata, written, good


def cli(*args) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        status = main([str(a) for a in args])
    return status, out.getvalue(), err.getvalue()


def refused(path: Path, other: Path, *, as_outputs: bool = False) -> None:
    """``path`` must be refused with one clear message by the API and by the command line."""
    vectors, outputs = (other, path) if as_outputs else (path, other)
    with pytest.raises((VectorsFileError, FileNotFoundError)) as info:
        verify_outputs(vectors, outputs)
    assert str(path) in str(info.value) or path.name in str(info.value), str(info.value)
    status, _, err = cli("verify", vectors, outputs)
    assert status == 2, (path.name, status, err)
    assert err.startswith("error: ") and err.count("\n") == 1, err
    assert "bug in posenc_ref" not in err


def safetensors_with(header: object, data: bytes = b"", length: int | None = None) -> bytes:
    text = header if isinstance(header, bytes) else json.dumps(header).encode()
    return struct.pack("<Q", len(text) if length is None else length) + text + data


def test_truncated_files_are_refused(files):
    folder, _, _, written, good = files
    count = 0
    for suffix, path in written.items():
        whole = path.read_bytes()
        cuts = sorted({0, 1, 7, 8, 9, 20, len(whole) // 2, len(whole) - 1}
                      | set(range(8, len(whole), max(len(whole) // 110, 1))))  # fmt: skip
        for cut in cuts:
            if cut >= len(whole):
                continue
            broken = folder / f"cut{cut}{suffix}"
            broken.write_bytes(whole[:cut])
            refused(broken, good)
            count += 1
    assert count > 300


@pytest.mark.parametrize(
    "header",
    [[], "text", 1, None, [1, 2], {"t": []}, {"t": "x"}, {"t": {"shape": [1]}},
     {"t": {"dtype": "I32", "shape": [1], "data_offsets": [0, 4]}},
     {"t": {"dtype": "BOOL", "shape": [1], "data_offsets": [0, 1]}},
     {"t": {"dtype": "F8_E4M3", "shape": [1], "data_offsets": [0, 1]}},
     {"t": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4000]}},
     {"t": {"dtype": "F32", "shape": [2**40, 2**40], "data_offsets": [0, 4]}},
     {"t": {"dtype": "F32", "shape": [-1], "data_offsets": [0, 4]}},
     {"t": {"dtype": "F32", "shape": [1.5], "data_offsets": [0, 4]}},
     {"t": {"dtype": "F32", "shape": [1], "data_offsets": [4, 0]}},
     {"t": {"dtype": "F32", "shape": [1], "data_offsets": "0-4"}},
     {"__metadata__": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]}},
     {"__metadata__": {"posenc_ref": 3}}, {"__metadata__": {"posenc_ref": "[1]"}},
     {"__metadata__": {"posenc_ref": "{"}}, {"__metadata__": []}],
)  # fmt: skip
def test_safetensors_headers_are_checked(files, header, tmp_path):
    _, _, _, written, good = files
    path = tmp_path / "h.safetensors"
    path.write_bytes(safetensors_with(header, b"\0" * 8))
    refused(path, good)
    refused(path, written[".safetensors"], as_outputs=True)


@pytest.mark.parametrize("length", [2**63, 2**64 - 1, 10**9, 17])
def test_header_lengths_past_the_file_are_refused(files, length, tmp_path):
    path = tmp_path / "l.safetensors"
    path.write_bytes(safetensors_with({}, b"\0" * 8, length=length))
    refused(path, files[4])


@pytest.mark.parametrize("depth", [100, 100_000])
def test_deep_json_is_refused(files, depth, tmp_path):
    deep = ("[" * depth + "]" * depth).encode()
    (tmp_path / "d.json").write_bytes(b'{"tensors": ' + deep + b"}")
    refused(tmp_path / "d.json", files[4])
    (tmp_path / "d.safetensors").write_bytes(safetensors_with(b'{"a": ' + deep + b"}"))
    refused(tmp_path / "d.safetensors", files[4])


def test_npz_archives_are_checked(files, tmp_path):
    _, _, metadata, _, good = files
    cases = {
        "other.npz": {"notes.txt": b"hello"},
        "pickled.npz": {"t.npy": None},  # an object array (needs pickle)
        "huge.npz": {"t.npy": "huge"},
        "text.npz": {"__metadata__.npy": "[1, 2]"},
        "int32.npz": {"t.npy": np.arange(4, dtype=np.int32)},
    }
    for name, members in cases.items():
        path = tmp_path / name
        with zipfile.ZipFile(path, "w") as archive:
            for member, value in members.items():
                buffer = io.BytesIO()
                if value is None:
                    np.save(buffer, np.array([{"a": 1}], dtype=object), allow_pickle=True)
                elif isinstance(value, np.ndarray):
                    np.save(buffer, value)
                elif value == "huge":
                    np.lib.format.write_array_header_1_0(
                        buffer, {"descr": "<f4", "fortran_order": False, "shape": (2**40,)}
                    )
                elif isinstance(value, str):
                    np.save(buffer, np.array(value))
                else:
                    buffer.write(value)
                archive.writestr(member, buffer.getvalue())
        refused(path, good)


def edited(metadata: dict, edit) -> dict:
    copy = json.loads(json.dumps(metadata))
    edit(copy)
    return copy


METADATA_EDITS = {
    "no cases": lambda m: m.pop("cases"),
    "cases not a list": lambda m: m.update(cases="all"),
    "empty cases": lambda m: m.update(cases=[]),
    "case not an object": lambda m: m["cases"].__setitem__(0, 3),
    "case renamed": lambda m: m["cases"][0].update(name="rope/nowhere/float32"),
    "case name missing": lambda m: m["cases"][0].pop("name"),
    "unknown group": lambda m: m["cases"][0].update(group="elsewhere"),
    "dtype float8": lambda m: m["cases"][0].update(dtype="float8"),
    "three position rows": lambda m: m["cases"][0].update(position_rows=3),
    "position rows 0": lambda m: m["cases"][0].update(position_rows=0),
    "first not a number": lambda m: m["cases"][0].update(first="zero"),
    "no groups": lambda m: m.pop("groups"),
    "groups a list": lambda m: m.update(groups=[1]),
    "group without keys": lambda m: m["groups"].update(rope={}),
    "group layer_type 3": lambda m: m["groups"]["rope"].update(layer_type=3),
    "no config": lambda m: m.pop("config"),
    "config a number": lambda m: m.update(config=3),
    "config refused": lambda m: m.update(config={"model_type": "llama"}),
    "config of another model": lambda m: m["config"].update(rope_theta=500000.0),
    "version 99": lambda m: m.update(version=99),
    "foreign format": lambda m: m.update(format="something else"),
    "sha256 edited": lambda m: m.update(sha256="0" * 64),
}


@pytest.mark.parametrize("edit", sorted(METADATA_EDITS))
@pytest.mark.parametrize("suffix", [".safetensors", ".npz", ".json"])
def test_edited_metadata_is_refused(files, edit, suffix, tmp_path):
    _, tensors, metadata, _, good = files
    path = write_vectors(tmp_path / f"e{suffix}", tensors, edited(metadata, METADATA_EDITS[edit]))
    refused(path, good)


@pytest.mark.parametrize("what", ["positions", "q", "tol_k"])
def test_missing_or_reshaped_tensors_are_refused(files, what, tmp_path):
    _, tensors, metadata, _, good = files
    name = f"{metadata['cases'][0]['name']}/{what}"
    without = {n: t for n, t in tensors.items() if n != name}
    reshaped = {**tensors, name: tensors[name].flatten()[:3]}
    for label, changed in (("without", without), ("reshaped", reshaped)):
        meta = {**metadata}
        from posenc_ref.testing._vector_files import content_hash

        meta["sha256"] = content_hash(changed)  # a consistent file, with a broken case
        path = write_vectors(tmp_path / f"{label}.npz", changed, meta)
        refused(path, good)


@pytest.mark.parametrize(
    "value, words",
    [(torch.zeros(1, 1, 16, 8, dtype=torch.int64), "int64 of shape (1, 1, 16, 8)"),
     (torch.zeros(1, 1, 16, 4), "float32 of shape (1, 1, 16, 4)")],
    ids=["int64", "width"],
)  # fmt: skip
def test_outputs_of_the_wrong_dtype_or_shape_are_named(files, value, words, tmp_path):
    _, tensors, metadata, written, _ = files
    name = metadata["cases"][0]["name"]
    path = write_vectors(tmp_path / "o.npz", {f"{name}/q_rot": value, f"{name}/k_rot": value}, {})
    with pytest.raises(VectorsFileError, match=words.replace("(", r"\(").replace(")", r"\)")):
        verify_outputs(written[".npz"], path)
    refused(path, written[".npz"], as_outputs=True)


@pytest.mark.parametrize(
    "tensors, error, words",
    [({"t": torch.zeros(2, dtype=torch.int32)}, TypeError, "dtype torch.int32 is not one of"),
     ({"t": torch.zeros(2, dtype=torch.bool)}, TypeError, "dtype torch.bool"),
     ({"t": [1.0, 2.0]}, TypeError, "must be a torch.Tensor or a NumPy array, got list"),
     ({"t": np.zeros(2, dtype=bool)}, TypeError, "NumPy dtype bool"),
     ({"__metadata__": torch.zeros(2)}, ValueError, "other than '__metadata__'"),
     ({"": torch.zeros(2)}, ValueError, "non-empty strings"),
     ([torch.zeros(2)], TypeError, "must be a dict")],
    ids=["int32", "bool", "list", "numpy bool", "__metadata__", "empty name", "not a dict"],
)  # fmt: skip
def test_write_vectors_says_what_it_takes(tensors, error, words, tmp_path):
    with pytest.raises(error, match=words):
        write_vectors(tmp_path / "w.npz", tensors, {})


def test_write_vectors_takes_numpy_arrays(tmp_path):
    path = write_vectors(tmp_path / "n.safetensors", {"t": np.arange(3.0)}, {})
    assert torch.equal(read_vectors(path)[0]["t"], torch.arange(3.0, dtype=torch.float64))


def test_a_valid_file_still_verifies(files):
    _, _, _, written, good = files
    for path in written.values():
        assert verify_outputs(path, good)[0]
        assert cli("verify", path, good)[0] == 0
