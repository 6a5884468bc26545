r"""Reading and writing vectors files: ``.safetensors``, ``.npz`` and ``.json``, validated.

Explained on the site: [reference vectors](frameworks.md#frameworks-vectors).

A file from another program is untrusted input. Every field is checked against the format
before anything is allocated (a declared shape must fit the bytes that hold it; a header length
must fit the file; a dtype must be one of :data:`DTYPE_CODES`), and a file that breaks the
format raises :class:`VectorsFileError` (a ``ValueError``) naming the file and the field.

The formats:

- ``.safetensors``: an 8-byte little-endian header length, a JSON header naming each tensor's
  ``dtype``, ``shape`` and ``data_offsets``, then the bytes. ``__metadata__`` maps strings to
  strings: ``"posenc_ref"`` holds the metadata as JSON, and flat entries (see
  :func:`flat_metadata`) hold what a C or Rust reader needs without a JSON parser: per group
  ``GROUP/base``, ``GROUP/layout``, ``GROUP/head_dim``, ``GROUP/rotary_dim``, and per case
  ``CASE/dtype``.
- ``.npz``: one ``.npy`` member per tensor, and ``__metadata__``, a 0-d string array holding the
  metadata as JSON; bfloat16 tensors are stored as their uint16 bit patterns.
- ``.json``: ``{"metadata": ..., "tensors": {name: {"dtype", "shape", "data"}}}`` with ``data``
  flat, row-major (bfloat16 values as numbers).
"""

from __future__ import annotations

import hashlib
import json
import math
import struct
import zipfile
import zlib
from collections.abc import Mapping
from pathlib import Path

import numpy as np
import torch

__all__ = [
    "VectorsFileError",
    "DTYPE_CODES",
    "read_vectors",
    "write_vectors",
    "content_hash",
    "flat_metadata",
]

SUFFIXES = (".safetensors", ".npz", ".json")
MAX_DEPTH = 64  # JSON nesting a vectors file needs: a few levels

# safetensors' dtype names (also used in the metadata of every format) <-> torch and NumPy.
DTYPE_CODES = {
    "F64": (torch.float64, np.float64),
    "F32": (torch.float32, np.float32),
    "F16": (torch.float16, np.float16),
    "BF16": (torch.bfloat16, np.uint16),  # NumPy holds the bit pattern
    "I64": (torch.int64, np.int64),
}
# What a file may hold beside those, read and passed on (a vectors file never needs them, but an
# outputs file written by the safetensors library may carry masks or indices beside its outputs).
READ_ONLY_CODES = {
    "BOOL": (torch.bool, np.bool_),
    "U8": (torch.uint8, np.uint8),
    "I8": (torch.int8, np.int8),
    "I16": (torch.int16, np.int16),
    "I32": (torch.int32, np.int32),
}
READ_CODES = {**DTYPE_CODES, **READ_ONLY_CODES}
CODE_OF = {torch_dtype: code for code, (torch_dtype, _) in READ_CODES.items()}
ITEM_SIZE = {code: np.dtype(numpy_dtype).itemsize for code, (_, numpy_dtype) in READ_CODES.items()}


class VectorsFileError(ValueError):
    """A file that is not a valid vectors (or outputs) file; the message names file and field."""


def _fail(path: object, field: str, problem: str) -> VectorsFileError:
    return VectorsFileError(f"{path}: {field}: {problem}")


# --------------------------------------------------------------------------- writing


def _checked_tensors(tensors: object) -> dict[str, torch.Tensor]:
    """``tensors`` as CPU torch tensors of the supported dtypes, else a clear error."""
    if not isinstance(tensors, Mapping):
        raise TypeError(
            f"tensors must be a dict of name -> torch.Tensor or NumPy array, got "
            f"{type(tensors).__name__}"
        )
    written = {DTYPE_CODES[code][0] for code in DTYPE_CODES}
    accepted = ", ".join(str(d).replace("torch.", "") for d in written)
    out = {}
    for name, value in tensors.items():
        if not isinstance(name, str) or not name or name == "__metadata__":
            raise ValueError(
                f"tensor names must be non-empty strings other than '__metadata__' (the name "
                f"the formats keep for the metadata), got {name!r}"
            )
        if isinstance(value, np.ndarray):
            if value.dtype.kind not in "fiu" or value.dtype.byteorder == ">":
                raise TypeError(
                    f"tensor {name}: NumPy dtype {value.dtype} is not one of {accepted}"
                )
            value = torch.from_numpy(np.ascontiguousarray(value))
        if not isinstance(value, torch.Tensor):
            raise TypeError(
                f"tensor {name} must be a torch.Tensor or a NumPy array, got {type(value).__name__}"
            )
        if value.dtype not in written:
            raise TypeError(f"tensor {name}: dtype {value.dtype} is not one of {accepted}")
        if value.layout != torch.strided:
            raise TypeError(f"tensor {name} must be dense (strided), got {value.layout}")
        out[name] = value.detach().to("cpu").contiguous()
    return out


def tensor_list(tensors: Mapping[str, torch.Tensor]) -> dict:
    """Each tensor's safetensors dtype name and shape, by name (sorted)."""
    return {
        name: {"dtype": CODE_OF[t.dtype], "shape": list(t.shape)}
        for name, t in sorted(tensors.items())
    }


def flat_metadata(metadata: Mapping) -> dict[str, str]:
    """The string entries a safetensors reader without JSON needs: per group and per case.

    ``GROUP/base``, ``GROUP/layout``, ``GROUP/head_dim``, ``GROUP/rotary_dim``,
    ``GROUP/output_layout`` and ``CASE/dtype`` (``F32`` or ``BF16``), with ``format`` and
    ``version``; empty for a file without groups (an outputs file). Entries whose source is not
    well formed are left out (the JSON metadata is written as given).
    """
    flat = {}
    if "format" in metadata:
        flat.update(format=str(metadata["format"]), version=str(metadata.get("version")))
    groups, cases = metadata.get("groups"), metadata.get("cases")
    for group, described in groups.items() if isinstance(groups, Mapping) else ():
        for key in ("base", "layout", "head_dim", "rotary_dim", "output_layout"):
            value = described.get(key) if isinstance(described, Mapping) else None
            if value is not None:
                flat[f"{group}/{key}"] = repr(value) if isinstance(value, float) else str(value)
    codes = {"float32": "F32", "bfloat16": "BF16"}
    for case in cases if isinstance(cases, list) else ():
        if isinstance(case, Mapping) and isinstance(case.get("name"), str):
            if case.get("dtype") in codes:
                flat[f"{case['name']}/dtype"] = codes[case["dtype"]]
    return flat


def tensor_bytes(t: torch.Tensor) -> bytes:
    """A tensor's little-endian bytes (bfloat16 as its bit pattern)."""
    array = t.view(torch.int16).numpy() if t.dtype == torch.bfloat16 else t.numpy()
    return array.astype(array.dtype.newbyteorder("<"), copy=False).tobytes()


def content_hash(tensors: Mapping[str, torch.Tensor]) -> str:
    """SHA-256 of the tensors, the ``sha256`` of a vectors file's metadata.

    For each name in sorted order: ``name NUL dtype NUL shape NUL`` (UTF-8; dtype as in
    safetensors, shape as ``2,16,64``), then the tensor's little-endian bytes.
    """
    digest = hashlib.sha256()
    for name in sorted(tensors):
        t = tensors[name].detach().to("cpu").contiguous()
        shape = ",".join(str(s) for s in t.shape)
        digest.update(f"{name}\0{CODE_OF[t.dtype]}\0{shape}\0".encode())
        digest.update(tensor_bytes(t))
    return digest.hexdigest()


def write_vectors(path: str | Path, tensors: Mapping, metadata: Mapping) -> Path:
    """Write ``tensors`` and ``metadata`` to ``path``; the suffix picks the format.

    Explained on the site: [reference vectors](frameworks.md#frameworks-vectors).

    Parameters
    ----------
    path
        Ends in ``.safetensors``, ``.npz`` or ``.json``.
    tensors
        Name to ``torch.Tensor`` or NumPy array of dtype float64, float32, float16, bfloat16
        (torch) or int64; names are non-empty strings, not ``__metadata__``.
    metadata
        A JSON-serialisable dict (``{}`` for an outputs file): as returned by
        :func:`~posenc_ref.testing.build_vectors`, or your own.

    Returns
    -------
    pathlib.Path

    Raises
    ------
    TypeError, ValueError
        For a tensor of another type or dtype, a bad name, metadata that is not a JSON object,
        or a path with another suffix.
    """
    path = Path(path)
    suffix = checked_suffix(path)
    tensors = _checked_tensors(tensors)
    if not isinstance(metadata, Mapping):
        raise TypeError(f"metadata must be a dict, got {type(metadata).__name__}")
    # Every file says what each tensor is (an outputs file too): in .npz a bfloat16 tensor is
    # stored as its bits, and only this tells a reader to reinterpret them.
    metadata = {**metadata, "tensors": tensor_list(tensors)}
    try:
        text = json.dumps(metadata)
    except (TypeError, ValueError) as error:
        raise TypeError(f"metadata must be JSON-serialisable: {error}") from error
    if suffix == ".safetensors":
        path.write_bytes(_safetensors_bytes(tensors, text, flat_metadata(metadata)))
    elif suffix == ".npz":
        arrays = {name: _as_numpy(t) for name, t in tensors.items()}
        with path.open("wb") as file:
            np.savez(file, __metadata__=np.array(text), **arrays)
    else:
        entries = {
            name: {
                "dtype": CODE_OF[t.dtype],
                "shape": list(t.shape),
                "data": (t.float() if t.dtype == torch.bfloat16 else t).flatten().tolist(),
            }
            for name, t in tensors.items()
        }
        path.write_text(json.dumps({"metadata": json.loads(text), "tensors": entries}))
    return path


def checked_suffix(path: Path) -> str:
    if path.suffix not in SUFFIXES:
        raise ValueError(f"{path}: the file name must end in one of {SUFFIXES}")
    return path.suffix


def _as_numpy(t: torch.Tensor) -> np.ndarray:
    return t.view(torch.int16).numpy().view(np.uint16) if t.dtype == torch.bfloat16 else t.numpy()


def _safetensors_bytes(tensors: Mapping[str, torch.Tensor], text: str, flat: dict) -> bytes:
    header: dict = {"__metadata__": {"posenc_ref": text, **flat}}
    chunks, offset = [], 0
    for name in sorted(tensors):
        data = tensor_bytes(tensors[name])
        header[name] = {
            "dtype": CODE_OF[tensors[name].dtype],
            "shape": list(tensors[name].shape),
            "data_offsets": [offset, offset + len(data)],
        }
        chunks.append(data)
        offset += len(data)
    encoded = json.dumps(header, separators=(",", ":")).encode()
    encoded += b" " * (-len(encoded) % 8)  # the data starts 8-byte aligned
    return struct.pack("<Q", len(encoded)) + encoded + b"".join(chunks)


# --------------------------------------------------------------------------- reading


def read_vectors(path: str | Path) -> tuple[dict[str, torch.Tensor], dict]:
    """Read a vectors (or outputs) file of any of the three formats, checking every field.

    Explained on the site: [reference vectors](frameworks.md#frameworks-vectors).

    Parameters
    ----------
    path
        A ``.safetensors``, ``.npz`` or ``.json`` file.

    Returns
    -------
    tuple
        ``(tensors, metadata)``: CPU tensors by name, and the metadata dict (``{}`` for a file
        without any).

    Raises
    ------
    FileNotFoundError
        No such file.
    VectorsFileError
        (a ``ValueError``) The file breaks its format; the message names the file and the field.
    """
    path = Path(path)
    suffix = checked_suffix(path)
    if not path.is_file():
        raise FileNotFoundError(f"{path}: no such file")
    if suffix == ".safetensors":
        tensors, metadata = _read_safetensors(path)
    elif suffix == ".npz":
        tensors, metadata = _read_npz(path)
    else:
        tensors, metadata = _read_json(path)
    if "sha256" in metadata:  # a file that says what it holds must hold it
        if not isinstance(metadata["sha256"], str) or metadata["sha256"] != content_hash(tensors):
            raise _fail(
                path, "sha256", "the contents do not match their sha256 (the file was changed)"
            )
    return tensors, metadata


def parse_json(text: str | bytes, path: object, field: str) -> object:
    """JSON with a bound on its nesting, or a :class:`VectorsFileError` naming the field."""
    try:
        value = json.loads(text)
    except RecursionError:
        raise _fail(path, field, "JSON nested too deeply to read") from None
    except (ValueError, UnicodeDecodeError) as error:
        raise _fail(path, field, f"not valid JSON ({error})") from None
    stack = [(value, 0)]
    while stack:
        item, level = stack.pop()
        if level > MAX_DEPTH:
            raise _fail(path, field, f"JSON nested more than {MAX_DEPTH} levels")
        if isinstance(item, dict):
            stack.extend((v, level + 1) for v in item.values())
        elif isinstance(item, list):
            stack.extend((v, level + 1) for v in item)
    return value


def _shape(entry: Mapping, path: object, field: str) -> tuple[int, ...]:
    shape = entry.get("shape")
    if not isinstance(shape, list) or not all(
        isinstance(n, int) and not isinstance(n, bool) and n >= 0 for n in shape
    ):
        raise _fail(path, f"{field}.shape", f"must be a list of integers >= 0, got {shape!r:.80}")
    if len(shape) > 8:
        raise _fail(path, f"{field}.shape", f"has {len(shape)} dimensions; vectors have at most 4")
    return tuple(shape)


def _dtype(entry: Mapping, path: object, field: str) -> str:
    code = entry.get("dtype")
    if code not in READ_CODES:
        raise _fail(path, f"{field}.dtype", f"must be one of {tuple(READ_CODES)}, got {code!r:.40}")
    return code


def _metadata_object(value: object, path: object, field: str) -> dict:
    if not isinstance(value, dict):
        raise _fail(path, field, f"must be a JSON object, got {type(value).__name__}")
    return value


def _read_safetensors(path: Path) -> tuple[dict[str, torch.Tensor], dict]:
    data = path.read_bytes()
    if len(data) < 8:
        raise _fail(path, "header length", f"the file has {len(data)} bytes, fewer than 8")
    (length,) = struct.unpack("<Q", data[:8])
    if length > len(data) - 8:
        raise _fail(
            path, "header length", f"{length} bytes runs past the end of the file ({len(data)})"
        )
    header = _metadata_object(parse_json(data[8 : 8 + length], path, "header"), path, "header")
    start, size = 8 + length, len(data) - 8 - length
    raw = header.pop("__metadata__", {})
    raw = _metadata_object(raw, path, "__metadata__")
    if "dtype" in raw or "data_offsets" in raw:
        raise _fail(path, "__metadata__", "a tensor may not be named __metadata__")
    if not all(isinstance(v, str) for v in raw.values()):
        raise _fail(path, "__metadata__", "must map strings to strings")
    text = raw.get("posenc_ref", "{}")
    metadata = _metadata_object(
        parse_json(text, path, "__metadata__.posenc_ref"), path, "__metadata__.posenc_ref"
    )
    # The flat entries repeat the JSON metadata for readers without JSON: a file whose two
    # say different things (its version among them) cannot be read as either.
    for key, value in flat_metadata(metadata).items():
        if key in raw and raw[key] != value:
            raise _fail(
                path,
                f"__metadata__.{key}",
                f"says {raw[key]!r:.40}, the JSON metadata (__metadata__.posenc_ref) says "
                f"{value!r:.40}",
            )
    if "version" in raw and "version" not in metadata:
        raise _fail(
            path, "__metadata__.version", f"says {raw['version']!r:.40}; the JSON metadata has none"
        )
    tensors = {}
    for name, entry in header.items():
        entry = _metadata_object(entry, path, f"tensor {name}")
        code, shape = _dtype(entry, path, f"tensor {name}"), _shape(entry, path, f"tensor {name}")
        offsets = entry.get("data_offsets")
        if (
            not isinstance(offsets, list)
            or len(offsets) != 2
            or not all(isinstance(o, int) and not isinstance(o, bool) for o in offsets)
            or not 0 <= offsets[0] <= offsets[1] <= size
        ):
            raise _fail(
                path,
                f"tensor {name}.data_offsets",
                f"must be [begin, end] with 0 <= begin <= end <= {size} (the data), got "
                f"{offsets!r:.80}",
            )
        expected = math.prod(shape) * ITEM_SIZE[code]
        if offsets[1] - offsets[0] != expected:
            raise _fail(
                path,
                f"tensor {name}",
                f"shape {list(shape)} of {code} needs {expected} bytes, data_offsets hold "
                f"{offsets[1] - offsets[0]}",
            )
        chunk = data[start + offsets[0] : start + offsets[1]]
        tensors[name] = _from_bytes(chunk, code, shape)
    return tensors, metadata


def _from_bytes(chunk: bytes, code: str, shape: tuple[int, ...]) -> torch.Tensor:
    numpy_dtype = np.dtype(READ_CODES[code][1]).newbyteorder("<")
    array = np.frombuffer(chunk, dtype=numpy_dtype).astype(numpy_dtype.newbyteorder("="))
    t = torch.from_numpy(array)
    if code == "BF16":
        t = t.view(torch.int16).view(torch.bfloat16)
    return t.reshape(shape)


def _read_npz(path: Path) -> tuple[dict[str, torch.Tensor], dict]:
    try:
        archive = zipfile.ZipFile(path)
    except (zipfile.BadZipFile, OSError, ValueError) as error:
        raise _fail(path, "archive", f"not a readable .npz (zip) file ({error})") from None
    with archive:
        members = {}
        for info in archive.infolist():
            if not info.filename.endswith(".npy") or info.is_dir():
                raise _fail(path, info.filename, "the archive holds a file that is not .npy")
            members[info.filename[:-4]] = info
        metadata = {}
        if "__metadata__" in members:
            array = _npy(archive, members.pop("__metadata__"), path, "__metadata__", text=True)
            metadata = _metadata_object(
                parse_json(str(array), path, "__metadata__"), path, "__metadata__"
            )
        kinds = metadata.get("tensors") if isinstance(metadata.get("tensors"), dict) else {}
        tensors = {}
        for name, info in members.items():
            array = _npy(archive, info, path, name)
            kind = kinds.get(name)
            if isinstance(kind, dict) and kind.get("dtype") == "BF16":
                if array.dtype != np.uint16:
                    raise _fail(
                        path, name, f"BF16 bits must be stored as uint16, got {array.dtype}"
                    )
                tensors[name] = torch.from_numpy(array.view(np.int16)).view(torch.bfloat16)
            else:
                tensors[name] = torch.from_numpy(array)
    return tensors, metadata


def _npy(archive, info, path: Path, name: str, text: bool = False) -> np.ndarray:
    """One member, its header checked against its size before the data is read."""
    try:
        with archive.open(info) as file:
            version = np.lib.format.read_magic(file)
            read_header = {
                (1, 0): np.lib.format.read_array_header_1_0,
                (2, 0): np.lib.format.read_array_header_2_0,
            }.get(version)
            if read_header is None:
                raise _fail(path, name, f"unknown .npy version {version}")
            shape, fortran, dtype = read_header(file)
            header_size = file.tell()
        numbers = {np.dtype(d).newbyteorder("<").str for _, d in READ_CODES.values()}
        if dtype.kind != "U" if text else dtype.newbyteorder("<").str not in numbers:
            raise _fail(path, name, f".npy dtype {dtype} is not one a vectors file holds")
        if (
            fortran
            or len(shape) > 8
            or math.prod(shape) * dtype.itemsize != (info.file_size - header_size)
        ):
            raise _fail(
                path,
                name,
                f"declared shape {shape} does not match the member's "
                f"{info.file_size - header_size} bytes of data",
            )
        with archive.open(info) as file:
            return np.lib.format.read_array(file, allow_pickle=False)
    except VectorsFileError:
        raise
    except (ValueError, EOFError, OSError, zipfile.BadZipFile, zlib.error, MemoryError) as error:
        raise _fail(
            path, name, f"unreadable .npy member ({type(error).__name__}: {error})"
        ) from None


def _read_json(path: Path) -> tuple[dict[str, torch.Tensor], dict]:
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        raise _fail(path, "file", f"cannot read it as UTF-8 text ({error})") from None
    document = _metadata_object(parse_json(text, path, "document"), path, "document")
    entries = _metadata_object(document.get("tensors", {}), path, "tensors")
    metadata = _metadata_object(document.get("metadata", {}), path, "metadata")
    tensors = {}
    for name, entry in entries.items():
        entry = _metadata_object(entry, path, f"tensor {name}")
        code, shape = _dtype(entry, path, f"tensor {name}"), _shape(entry, path, f"tensor {name}")
        values = entry.get("data")
        if not isinstance(values, list) or len(values) != math.prod(shape):
            count = len(values) if isinstance(values, list) else type(values).__name__
            raise _fail(
                path,
                f"tensor {name}.data",
                f"needs {math.prod(shape)} numbers for shape {list(shape)}, got {count}",
            )
        integral = code not in ("F64", "F32", "F16", "BF16", "BOOL")
        if code == "BOOL":
            ok, words = all(isinstance(v, bool) for v in values), "true or false"
        else:
            number = (int,) if integral else (int, float)
            ok = all(isinstance(v, number) and not isinstance(v, bool) for v in values)
            words = "integers" if integral else "numbers"
        if not ok:
            raise _fail(path, f"tensor {name}.data", f"must hold only {words}")
        wide = torch.bool if code == "BOOL" else torch.int64 if integral else torch.float64
        try:
            tensors[name] = torch.tensor(values, dtype=wide).to(READ_CODES[code][0]).reshape(shape)
        except (OverflowError, RuntimeError) as error:
            raise _fail(path, f"tensor {name}.data", str(error)) from None
    return tensors, metadata
