r"""``inspect --lerope-alpha``: one small tensor read from what a checkpoint's holder has.

Mistral Large 4's frequencies are scaled by a learned tensor (:mod:`posenc_ref.models._learned`)
that only the checkpoint holds. A user holding the checkpoint has its folder (``*.safetensors``
shards, perhaps with a ``*.safetensors.index.json``), one shard, or the values saved on their own
(``numpy.save``, ``torch.save``, a JSON list). Each is read with a bounded cost: a safetensors
file by its header and the tensor's own bytes (a shard may hold hundreds of gigabytes, which are
never read); a ``.npy``, ``.pt`` or ``.json`` file only when it is small.
"""

from __future__ import annotations

import json
import math
import struct
from pathlib import Path

import numpy as np
import torch

__all__ = ["read_checkpoint_tensor", "NAMES", "MAX_SMALL_FILE"]

# The tensor's names: transformers' state dict (multimodal, text-only) and the released
# checkpoint's (conversion_mapping.py renames lerope.alpha to the first)
NAMES = ("model.language_model.rotary_emb.alpha", "model.rotary_emb.alpha", "lerope.alpha")
MAX_SMALL_FILE = 16 * 2**20  # a file of the values alone: a few hundred bytes
MAX_HEADER = 100 * 2**20  # safetensors' own limit on a header
DTYPES = {"F64": np.float64, "F32": np.float32, "F16": np.float16, "BF16": np.uint16}


class CheckpointError(ValueError):
    """The tensor could not be read: the message names the file and what is wrong."""


def read_checkpoint_tensor(argument: str) -> tuple[torch.Tensor, str]:
    """``(values, where read)``: a folder, a ``.safetensors``, ``.npy``, ``.pt`` or ``.json``."""
    path = Path(argument)
    if path.is_dir():
        return _from_folder(path)
    if not path.exists():
        raise CheckpointError(f"--lerope-alpha {argument}: no such file or folder")
    if not path.is_file():
        raise CheckpointError(f"--lerope-alpha {argument}: not a regular file (a pipe or device)")
    suffix = path.suffix.lower()
    if suffix == ".safetensors":
        found = _from_safetensors(path, required=True)
        assert found is not None
        return found
    if path.stat().st_size > MAX_SMALL_FILE:
        raise CheckpointError(
            f"--lerope-alpha {argument}: {path.stat().st_size} bytes; a file of the values alone "
            f"is a few hundred bytes (at most {MAX_SMALL_FILE // 2**20} MiB is read). For a "
            "checkpoint, give its folder or its .safetensors shard"
        )
    if suffix == ".npy":
        try:
            array = np.load(path, allow_pickle=False)
        except (ValueError, OSError) as error:
            raise CheckpointError(f"--lerope-alpha {path}: not a readable .npy ({error})") from None
        if array.dtype.kind != "f":
            raise CheckpointError(
                f"--lerope-alpha {path}: the .npy holds {array.dtype} values, not floating ones"
            )
        # torch takes the machine's byte order only: a big-endian file is converted first
        return torch.from_numpy(array.astype(array.dtype.newbyteorder("="))), str(path)
    if suffix in (".pt", ".pth", ".bin"):
        return _from_torch(path)
    if suffix == ".json":
        try:
            values = json.loads(path.read_text(encoding="utf-8"))
        except (ValueError, OSError, RecursionError) as error:
            raise CheckpointError(f"--lerope-alpha {path}: not readable JSON ({error})") from None
        return torch.tensor(_numbers(values, path), dtype=torch.float64), str(path)
    raise CheckpointError(
        f"--lerope-alpha {argument}: give a checkpoint folder, a .safetensors file, or the "
        "values in a .npy, .pt or .json file"
    )


def _numbers(values: object, path: Path) -> list[float]:
    if not isinstance(values, list) or not all(
        isinstance(v, (int, float)) and not isinstance(v, bool) for v in values
    ):
        raise CheckpointError(f"--lerope-alpha {path}: the JSON must be a list of numbers")
    try:
        numbers = [float(v) for v in values]
    except OverflowError:
        numbers = [math.inf]
    if not all(math.isfinite(v) for v in numbers):
        raise CheckpointError(f"--lerope-alpha {path}: the JSON's numbers must be finite floats")
    return numbers


def _from_folder(folder: Path) -> tuple[torch.Tensor, str]:
    for index in sorted(folder.glob("*.safetensors.index.json")):
        try:
            weight_map = json.loads(index.read_text(encoding="utf-8")).get("weight_map", {})
        except (ValueError, OSError, AttributeError):
            continue
        for name in NAMES:
            shard = weight_map.get(name) if isinstance(weight_map, dict) else None
            if isinstance(shard, str) and (folder / shard).is_file():
                found = _from_safetensors(folder / shard, required=False)
                if found is not None:
                    return found
    for shard in sorted(folder.glob("*.safetensors")):
        found = _from_safetensors(shard, required=False)
        if found is not None:
            return found
    raise CheckpointError(
        f"--lerope-alpha {folder}: no safetensors file there holds {' or '.join(NAMES)}"
    )


def _from_safetensors(path: Path, *, required: bool) -> tuple[torch.Tensor, str] | None:
    """The tensor from a safetensors file, reading its header and the tensor's bytes only."""
    try:
        return _read_safetensors(path, required)
    except OSError as error:  # a shard that is a broken link, unreadable, removed meanwhile
        raise CheckpointError(f"--lerope-alpha {path}: cannot be read ({error})") from None


def _read_safetensors(path: Path, required: bool) -> tuple[torch.Tensor, str] | None:
    with path.open("rb") as f:
        head = f.read(8)
        if len(head) < 8:
            raise CheckpointError(f"--lerope-alpha {path}: not a safetensors file (too short)")
        (length,) = struct.unpack("<Q", head)
        if length > MAX_HEADER:
            raise CheckpointError(f"--lerope-alpha {path}: a header of {length} bytes is not one")
        try:
            header = json.loads(f.read(length))
        except (ValueError, RecursionError) as error:
            raise CheckpointError(f"--lerope-alpha {path}: unreadable header ({error})") from None
        if not isinstance(header, dict):
            raise CheckpointError(f"--lerope-alpha {path}: the header is not a JSON object")
        tensors = {k: v for k, v in header.items() if k != "__metadata__"}
        name = next((n for n in NAMES if n in tensors), None)
        if name is None and required and len(tensors) == 1:
            name = next(iter(tensors))  # a file of this tensor alone, under any name
        if name is None:
            if required:
                raise CheckpointError(
                    f"--lerope-alpha {path}: holds no tensor named {' or '.join(NAMES)}"
                )
            return None
        entry = tensors[name]
        if not isinstance(entry, dict):
            raise CheckpointError(
                f"--lerope-alpha {path}: tensor {name}'s header entry is not an object"
            )
        code, shape = entry.get("dtype"), entry.get("shape")
        offsets = entry.get("data_offsets")
        if (
            code not in DTYPES
            or not isinstance(shape, list)
            or len(shape) != 1
            or not (isinstance(shape[0], int) and not isinstance(shape[0], bool) and shape[0] >= 0)
        ):
            raise CheckpointError(
                f"--lerope-alpha {path}: tensor {name} is {code} of shape {shape}; expected one "
                "row of floating values (F32, BF16, F16 or F64)"
            )
        size = np.dtype(DTYPES[code]).itemsize
        end = path.stat().st_size - 8 - length  # the data's bytes
        if (
            not isinstance(offsets, list) or len(offsets) != 2
            or not all(isinstance(o, int) and not isinstance(o, bool) for o in offsets)
            or offsets[1] - offsets[0] != math.prod(shape) * size or offsets[0] < 0
            or offsets[1] > end
        ):  # fmt: skip
            raise CheckpointError(
                f"--lerope-alpha {path}: tensor {name} has bad data_offsets {offsets!r:.80} "
                f"(two integers within the file's {end} data bytes, {math.prod(shape) * size} "
                "apart)"
            )
        f.seek(8 + length + offsets[0])
        data = f.read(offsets[1] - offsets[0])
    if len(data) != offsets[1] - offsets[0]:
        raise CheckpointError(f"--lerope-alpha {path}: the file ends inside tensor {name}")
    array = np.frombuffer(data, dtype=np.dtype(DTYPES[code]).newbyteorder("<")).copy()
    tensor = torch.from_numpy(array.astype(array.dtype.newbyteorder("=")))
    if code == "BF16":
        tensor = tensor.view(torch.int16).view(torch.bfloat16)
    return tensor, f"{path} ({name})"


def _from_torch(path: Path) -> tuple[torch.Tensor, str]:
    try:
        loaded = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as error:  # noqa: BLE001 (torch raises many kinds for a bad file)
        raise CheckpointError(
            f"--lerope-alpha {path}: not a file torch.load reads with weights_only ({error})"
        ) from None
    if isinstance(loaded, torch.Tensor):
        return loaded, str(path)
    if isinstance(loaded, dict):
        name = next((n for n in NAMES if isinstance(loaded.get(n), torch.Tensor)), None)
        if name is not None:
            return loaded[name], f"{path} ({name})"
    raise CheckpointError(
        f"--lerope-alpha {path}: holds neither a tensor nor a dict with {' or '.join(NAMES)}"
    )
