r"""Reference vectors for any language: a model's RoPE as inputs, expected outputs and tolerances.

Explained on the site: [reference vectors](frameworks.md#frameworks-vectors).

:func:`write_vectors` computes, for a model's config, random queries and keys at windows of
positions (the start, the end of the original context, across the point where a scaling method
switches, far past it), in float32 and bfloat16, for every layer type (and with three distinct
position rows for M-RoPE), with the expected outputs in float64, the per-pair cos/sin rows and
the allowed error of every element. It writes them as ``.safetensors``, ``.npz`` or ``.json``,
all three holding the same tensors and the same metadata (format ``posenc_ref.rope_vectors``,
version :data:`VERSION`). :func:`verify_outputs` reads someone's outputs for those inputs and
returns the report the kit's :func:`~posenc_ref.testing.assert_rope_equal` would give.

The format, version 1 (new versions add keys; a reader checks ``version``):

- one tensor per name ``GROUP/WINDOW/DTYPE/WHAT``; ``GROUP`` is ``rope`` or the layer type,
  ``WINDOW`` one of ``start``, ``inside``, ``boundary``, ``far`` (``..._3rows`` for M-RoPE
  cases with three position rows, ``..._2rows`` with NeoMME's two), ``DTYPE`` ``float32`` or
  ``bfloat16``; ``WHAT``: ``positions`` (int64, ``(n,)``, or ``(rows, n)``: time, height,
  width, or height, width), ``q`` and ``k``
  (``(batch, heads, n, head_dim)`` in ``DTYPE``), ``q_rot`` and ``k_rot`` (the expected outputs,
  float64), ``tol_q`` and ``tol_k`` (the allowed absolute error per element, float64), ``cos``
  and ``sin`` (float64 ``(n, rotary_dim // 2)``: the angle of pair ``i`` at each position,
  attention factor included), and per group ``GROUP/inv_freq`` (float64, inside the original
  context);
- metadata (JSON): ``format``, ``version``, ``package_version``, the ``config`` it came from,
  per group the RoPE it describes (widths, layout, base, ``rope_type``, original context,
  M-RoPE sections), per case its window, dtype, call length and attention factor, the
  ``tolerance`` model with its numbers, every tensor's ``dtype`` and ``shape``, and ``sha256``,
  the hash of the contents (:func:`content_hash`).

In ``.safetensors`` the metadata is the string ``__metadata__["posenc_ref"]``; in ``.npz`` the
0-d string array ``__metadata__``, with bfloat16 tensors stored as their uint16 bit patterns
(NumPy has no bfloat16); in ``.json`` the object ``metadata`` beside ``tensors`` (each
``{"dtype", "shape", "data"}`` with ``data`` flat, row-major).
"""

from __future__ import annotations

import hashlib
import json
import math
import struct
from collections.abc import Mapping
from pathlib import Path

import numpy as np
import torch

from ..rope import RotaryEmbedding
from ._common import ANGLE_MARGIN, ANGLE_ULPS, OUTPUT_ROUNDINGS, UNIT_ROUNDOFF, check_seed
from ._model import reference_model
from ._plan import DEFAULT_CONTEXT, DEFAULT_FAR, Call, Window, excess_ratio, rope_allowance

__all__ = ["write_vectors", "read_vectors", "verify_outputs", "content_hash", "VERSION"]

FORMAT = "posenc_ref.rope_vectors"
VERSION = 1
WINDOW = 16
BATCH, HEADS = 1, 1
DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16}
SUFFIXES = (".safetensors", ".npz", ".json")

# safetensors' dtype names (also used in the metadata of every format) <-> torch and NumPy.
DTYPE_CODES = {
    "F64": (torch.float64, np.float64),
    "F32": (torch.float32, np.float32),
    "F16": (torch.float16, np.float16),
    "BF16": (torch.bfloat16, np.uint16),  # NumPy holds the bit pattern
    "I64": (torch.int64, np.int64),
}
CODE_OF = {torch_dtype: code for code, (torch_dtype, _) in DTYPE_CODES.items()}


# --------------------------------------------------------------------------- the layer types


def modules_of(config: Mapping, layer_type: str | None, layout: str | None) -> dict:
    """``{group name: RotaryEmbedding}``: the one RoPE of the config, or one per layer type."""
    kwargs = {} if layout is None else {"layout": layout}
    if layer_type is not None:
        return {layer_type: RotaryEmbedding.from_hf_config(config, layer_type=layer_type, **kwargs)}
    try:
        return {"rope": RotaryEmbedding.from_hf_config(config, **kwargs)}
    except ValueError as error:
        if "layer_type" not in str(error):
            raise
        first_error = error
    modules = {}
    for name in layer_type_names(config):
        try:
            modules[name] = RotaryEmbedding.from_hf_config(config, layer_type=name, **kwargs)
        except (ValueError, TypeError):
            continue
    if not modules:
        raise first_error
    return modules


def layer_type_names(config: Mapping) -> list[str]:
    # transformers' own places: layer_types (one entry per layer) and a rope_parameters dict per
    # layer type, in the config or its text_config; the two Gemma names otherwise.
    names: list[str] = []
    for part in (config, config.get("text_config")):
        if not isinstance(part, Mapping):
            continue
        if isinstance(part.get("layer_types"), list):
            names += [n for n in part["layer_types"] if isinstance(n, str)]
        rope = part.get("rope_parameters")
        if (
            isinstance(rope, Mapping)
            and rope
            and all(isinstance(v, Mapping) for v in rope.values())
        ):
            names += list(rope)
    return list(dict.fromkeys(names or ["sliding_attention", "full_attention"]))


# --------------------------------------------------------------------------- the cases


def context_of(module: RotaryEmbedding) -> int:
    spec = module.spec
    for value in (getattr(spec, "original_max_len", None), getattr(spec, "max_len", None)):
        if isinstance(value, int) and value > WINDOW:
            return value
    return DEFAULT_CONTEXT


def window_starts(context: int) -> dict[str, int]:
    """First position of each window of ``WINDOW`` positions."""
    far = max(8 * context, DEFAULT_FAR)
    return {
        "start": 0,
        "inside": context - WINDOW,  # the last positions of the original context
        "boundary": context - WINDOW // 2,  # the call's length crosses it
        "far": far - WINDOW,
    }


def distinct_rows(positions: torch.Tensor, count: int) -> torch.Tensor:
    """``count`` distinct position rows for an M-RoPE case (3: time, height, width)."""
    return torch.stack([positions, positions // 2, positions // 3][:count])


def make_case(module, positions, dtype, generator) -> dict[str, torch.Tensor]:
    n = positions.shape[-1]
    shape = (BATCH, HEADS, n, module.head_dim)
    q = torch.randn(shape, generator=generator, dtype=torch.float64).to(dtype)
    k = torch.randn(shape, generator=generator, dtype=torch.float64).to(dtype)
    q64, k64 = q.double(), k.double()
    with torch.no_grad():
        q_rot, k_rot = module(q64, k64, positions)  # the float64 path of the module
    cos, sin = module.cos_sin(positions, dtype=torch.float64)
    # The tolerance of the kit; for three rows, each pair's angle is at most the largest row's.
    m = positions if positions.dim() == 1 else positions.amax(dim=0)
    seq_len = int(positions.max()) + 1
    model = reference_model(module)
    tol = [
        rope_allowance(model, x, m, seq_len, dtype, float32_angles=True, rtol=None, atol=0.0)
        for x in (q64, k64)
    ]
    return {
        "positions": positions,
        "q": q,
        "k": k,
        "q_rot": q_rot,
        "k_rot": k_rot,
        "tol_q": tol[0],
        "tol_k": tol[1],
        "cos": cos.reshape(n, -1),
        "sin": sin.reshape(n, -1),
    }


def describe_module(module: RotaryEmbedding, layer_type: str | None) -> dict:
    spec = module.spec
    return {
        "layer_type": layer_type,
        "head_dim": module.head_dim,
        "rotary_dim": module.rotary_dim,
        "layout": module.layout,
        "output_layout": module.output_layout,
        "base": module.base,
        "rope_type": getattr(spec, "rope_type", None),
        "original_max_len": getattr(spec, "original_max_len", None),
        "max_position_embeddings": getattr(spec, "max_len", None),
        "mrope_section": None if module.mrope_section is None else list(module.mrope_section),
        "mrope_interleaved": module.mrope_interleaved,
        "mrope_assignment": module.mrope_assignment,
    }


def build_vectors(
    config: Mapping,
    *,
    layer_type: str | None = None,
    layout: str | None = None,
    seed: int = 0,
) -> tuple[dict[str, torch.Tensor], dict]:
    """The tensors and the metadata of a vectors file for ``config`` (nothing written).

    Parameters
    ----------
    config
        A model's ``config.json`` contents, read by
        :meth:`~posenc_ref.RotaryEmbedding.from_hf_config`.
    layer_type
        One layer type only (default: every layer type the config has).
    layout
        Pair layout, for a family posenc_ref does not know.
    seed
        Seed of the random inputs.

    Returns
    -------
    tuple
        ``(tensors, metadata)``: a dict of CPU tensors by name, and the metadata dict.
    """
    from .. import __version__

    if not isinstance(config, Mapping):
        raise TypeError(f"config must be a dict (a config.json), got {type(config).__name__}")
    generator = torch.Generator().manual_seed(check_seed(seed))
    tensors: dict[str, torch.Tensor] = {}
    groups, cases = {}, []
    for group, module in modules_of(config, layer_type, layout).items():
        groups[group] = describe_module(module, None if group == "rope" else group)
        tensors[f"{group}/inv_freq"] = module.frequencies(0).inv_freq.to(torch.float64)
        context = context_of(module)
        for window, start in window_starts(context).items():
            positions = torch.arange(start, start + WINDOW)
            rows = [(window, positions)]
            if module.mrope_section is not None:
                count = len(module.mrope_section)
                rows.append((f"{window}_{count}rows", distinct_rows(positions, count)))
            for name, pos in rows:
                for dtype_name, dtype in DTYPES.items():
                    prefix = f"{group}/{name}/{dtype_name}"
                    for what, value in make_case(module, pos, dtype, generator).items():
                        tensors[f"{prefix}/{what}"] = value.detach().to("cpu").contiguous()
                    seq_len = int(pos.max()) + 1
                    cases.append(
                        {
                            "name": prefix,
                            "group": group,
                            "window": name,
                            "dtype": dtype_name,
                            "first": int(pos.min()),
                            "last": int(pos.max()),
                            "position_rows": 1 if pos.dim() == 1 else pos.shape[0],
                            "seq_len": seq_len,
                            "original_context": context,
                            "attention_factor": float(module.frequencies(seq_len).attention_factor),
                        }
                    )
    metadata = {
        "format": FORMAT,
        "version": VERSION,
        "package": "posenc_ref",
        "package_version": __version__,
        "config": json.loads(json.dumps(config)),
        "seed": seed,
        "layout_argument": layout,
        "groups": groups,
        "cases": cases,
        "tolerance": tolerance_metadata(),
        "tensors": tensor_list(tensors),
    }
    metadata["sha256"] = content_hash(tensors)
    return tensors, metadata


def tensor_list(tensors: Mapping[str, torch.Tensor]) -> dict:
    return {
        name: {"dtype": CODE_OF[t.dtype], "shape": list(t.shape)}
        for name, t in sorted(tensors.items())
    }


def tolerance_metadata() -> dict:
    return {
        "formula": (
            "tol = a * |pair| * (rtol + angle) for the two coordinates of a rotated pair, with "
            "angle = margin * u32 * m * w * (ln(1/w) + ulps) (float32 angles accepted); "
            "coordinates past rotary_dim: u(dtype) * |x|"
        ),
        "per_element": "GROUP/WINDOW/DTYPE/tol_q and tol_k hold it for every element",
        "rtol": {name: OUTPUT_ROUNDINGS * UNIT_ROUNDOFF[d] for name, d in DTYPES.items()},
        "unit_roundoff": {name: UNIT_ROUNDOFF[d] for name, d in DTYPES.items()},
        "u32": UNIT_ROUNDOFF[torch.float32],
        "margin": ANGLE_MARGIN,
        "ulps": ANGLE_ULPS,
        "float32_angles": True,
        "compare": "|yours - expected| <= tol, element by element",
    }


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


def tensor_bytes(t: torch.Tensor) -> bytes:
    array = t.view(torch.int16).numpy() if t.dtype == torch.bfloat16 else t.numpy()
    return array.astype(array.dtype.newbyteorder("<"), copy=False).tobytes()


# --------------------------------------------------------------------------- files


def write_vectors(path: str | Path, tensors: Mapping[str, torch.Tensor], metadata: dict) -> Path:
    """Write ``tensors`` and ``metadata`` to ``path``; the suffix picks the format.

    Parameters
    ----------
    path
        Ends in ``.safetensors``, ``.npz`` or ``.json``.
    tensors, metadata
        As returned by :func:`build_vectors` (or outputs of your own, for :func:`verify_outputs`).

    Returns
    -------
    pathlib.Path
    """
    path = Path(path)
    suffix = checked_suffix(path)
    tensors = {name: t.detach().to("cpu").contiguous() for name, t in tensors.items()}
    # Every file says what each tensor is (an outputs file too): in .npz a bfloat16 tensor is
    # stored as its bits, and only this tells a reader to reinterpret them.
    metadata = {**metadata, "tensors": tensor_list(tensors)}
    if suffix == ".safetensors":
        path.write_bytes(safetensors_bytes(tensors, metadata))
    elif suffix == ".npz":
        arrays = {name: as_numpy(t) for name, t in tensors.items()}
        with path.open("wb") as file:
            np.savez(file, __metadata__=np.array(json.dumps(metadata)), **arrays)
    else:
        document = {
            "metadata": metadata,
            "tensors": {
                name: {
                    "dtype": CODE_OF[t.dtype],
                    "shape": list(t.shape),
                    "data": t.flatten().tolist()
                    if t.dtype != torch.bfloat16
                    else t.float().flatten().tolist(),
                }
                for name, t in tensors.items()
            },
        }
        path.write_text(json.dumps(document))
    return path


def checked_suffix(path: Path) -> str:
    if path.suffix not in SUFFIXES:
        raise ValueError(f"{path}: the file name must end in one of {SUFFIXES}")
    return path.suffix


def as_numpy(t: torch.Tensor) -> np.ndarray:
    return t.view(torch.int16).numpy().view(np.uint16) if t.dtype == torch.bfloat16 else t.numpy()


def safetensors_bytes(tensors: Mapping[str, torch.Tensor], metadata: dict) -> bytes:
    # The format: an 8-byte little-endian header length, a JSON header naming each tensor's
    # dtype, shape and byte range, then the bytes (https://github.com/huggingface/safetensors).
    header: dict = {"__metadata__": {"posenc_ref": json.dumps(metadata)}}
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
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)  # the data starts 8-byte aligned
    return struct.pack("<Q", len(text)) + text + b"".join(chunks)


def read_vectors(path: str | Path) -> tuple[dict[str, torch.Tensor], dict]:
    """Read a vectors (or outputs) file of any of the three formats.

    Parameters
    ----------
    path
        A ``.safetensors``, ``.npz`` or ``.json`` file.

    Returns
    -------
    tuple
        ``(tensors, metadata)``; metadata is ``{}`` for a file without any.
    """
    path = Path(path)
    suffix = checked_suffix(path)
    if not path.is_file():
        raise FileNotFoundError(f"{path}: no such file")
    if suffix == ".safetensors":
        return read_safetensors(path.read_bytes(), path)
    if suffix == ".npz":
        with np.load(path, allow_pickle=False) as archive:
            metadata = json.loads(str(archive["__metadata__"])) if "__metadata__" in archive else {}
            kinds = metadata.get("tensors", {})
            tensors = {}
            for name in archive.files:
                if name == "__metadata__":
                    continue
                array = archive[name]
                if kinds.get(name, {}).get("dtype") == "BF16":
                    tensors[name] = torch.from_numpy(array.view(np.int16)).view(torch.bfloat16)
                else:
                    tensors[name] = torch.from_numpy(array.copy())
        return tensors, metadata
    try:
        document = json.loads(path.read_text())
        entries = document.get("tensors", {}).items()
        tensors = {name: tensor_from_list(entry, name) for name, entry in entries}
    except (json.JSONDecodeError, AttributeError, KeyError, TypeError) as error:
        raise ValueError(f"{path} is not a vectors file in JSON form ({error})") from error
    return tensors, document.get("metadata", {})


def tensor_from_list(entry: Mapping, name: str) -> torch.Tensor:
    code = entry["dtype"]
    if code not in DTYPE_CODES:
        raise ValueError(f"tensor {name}: dtype {code!r} is not one of {tuple(DTYPE_CODES)}")
    dtype = DTYPE_CODES[code][0]
    values = torch.tensor(entry["data"], dtype=torch.float64 if code != "I64" else torch.int64)
    return values.to(dtype).reshape(entry["shape"])


def read_safetensors(data: bytes, path: Path) -> tuple[dict[str, torch.Tensor], dict]:
    try:
        (length,) = struct.unpack("<Q", data[:8])
        header = json.loads(data[8 : 8 + length])
    except (struct.error, ValueError) as error:
        raise ValueError(f"{path} is not a safetensors file ({error})") from error
    start = 8 + length
    metadata = json.loads(header.pop("__metadata__", {}).get("posenc_ref", "{}"))
    tensors = {}
    for name, entry in header.items():
        torch_dtype, numpy_dtype = DTYPE_CODES[entry["dtype"]]
        first, last = entry["data_offsets"]
        array = np.frombuffer(data[start + first : start + last], dtype=numpy_dtype)
        array = array.astype(np.dtype(numpy_dtype).newbyteorder("="), copy=True)
        t = torch.from_numpy(array)
        if torch_dtype == torch.bfloat16:
            t = t.view(torch.int16).view(torch.bfloat16)
        tensors[name] = t.reshape(entry["shape"])
    return tensors, metadata


# --------------------------------------------------------------------------- verify


def check_vectors(metadata: dict, tensors: Mapping[str, torch.Tensor], path: str) -> None:
    if metadata.get("format") != FORMAT:
        raise ValueError(f"{path} is not a posenc_ref vectors file (no format {FORMAT!r})")
    if metadata.get("version") != VERSION:
        raise ValueError(
            f"{path} has format version {metadata.get('version')!r}; this posenc_ref reads "
            f"version {VERSION}"
        )
    if metadata.get("sha256") != content_hash(tensors):
        raise ValueError(f"{path}: the contents do not match their sha256 (the file was changed)")


def verify_outputs(vectors: str | Path, outputs: str | Path) -> tuple[bool, str]:
    """Compare someone's outputs with a vectors file, and diagnose them as the kit would.

    ``outputs`` holds, for some or all cases of ``vectors``, tensors named
    ``GROUP/WINDOW/DTYPE/q_rot`` and ``.../k_rot`` (any float dtype, the shapes of ``q`` and
    ``k``), in any of the three formats. Each element must be within ``tol_q`` / ``tol_k`` of
    the expected value. On disagreement the report is the one
    :func:`~posenc_ref.testing.assert_rope_equal` writes for the same calls: the first
    disagreement, the largest error, per case, what was observed, and the diagnosis from the
    same bug models (run on the cases with one position row).

    Parameters
    ----------
    vectors
        A file written by ``python -m posenc_ref vectors``.
    outputs
        Your outputs.

    Returns
    -------
    tuple
        ``(agrees, report)``.
    """
    from ._report import rope_report

    tensors, metadata = read_vectors(vectors)
    check_vectors(metadata, tensors, str(vectors))
    theirs, _ = read_vectors(outputs)
    present = [c for c in metadata["cases"] if f"{c['name']}/q_rot" in theirs]
    if not present:
        raise ValueError(
            f"{outputs} holds none of the cases of {vectors}: name your tensors like "
            f"{metadata['cases'][0]['name']}/q_rot and .../k_rot"
        )
    lines, agrees, by_group = [], True, {}
    for case in present:
        call = call_of_case(case, tensors, theirs)
        worst = max(float(excess_ratio(*t).max()) for t in compared(call))
        ok = worst <= 1
        agrees &= ok
        lines.append(
            f"{case['name']:<32} positions {case['first']}..{case['last']}"
            + (f" ({case['position_rows']} rows)" if case["position_rows"] > 1 else "")
            + f": largest error/tolerance {worst:.3g}"
            + (" (agrees)" if ok else " DISAGREES")
        )
        if case["position_rows"] == 1:
            by_group.setdefault(case["group"], []).append((case, call, ok))
    missing = len(metadata["cases"]) - len(present)
    header = [
        f"{len(present)} of {len(metadata['cases'])} cases compared"
        + (f" ({missing} not in {Path(outputs).name})" if missing else "")
        + "; each element within its tolerance (tol_q, tol_k) agrees."
    ]
    if agrees:
        return True, "\n".join(header + lines + ["All cases agree."])
    for group, entries in by_group.items():
        if all(ok for *_, ok in entries):
            continue
        reference = rebuild_reference(metadata, group)
        calls = [call for _, call, _ in entries]
        options = {
            "rtol": None,
            "atol": 0.0,
            "float32_angles": True,
            "attention_factor": float(reference.attention_factor),
        }
        title = "" if group == "rope" else f" (layer type {group!r})"
        lines += ["", f"Report{title}, as assert_rope_equal gives it:"]
        lines.append(rope_report(reference, calls, options))
    return False, "\n".join(header + lines)


def call_of_case(case: dict, tensors: Mapping, theirs: Mapping) -> Call:
    name = case["name"]
    q, k = tensors[f"{name}/q"], tensors[f"{name}/k"]
    outputs = []
    for which, x in (("q_rot", q), ("k_rot", k)):
        got = theirs.get(f"{name}/{which}")
        if got is None or tuple(got.shape) != tuple(x.shape) or not got.is_floating_point():
            shape = None if got is None else tuple(got.shape)
            raise ValueError(
                f"{name}/{which} must be a float tensor of shape {tuple(x.shape)}, got {shape}"
            )
        outputs.append(got.to(torch.float64))
    positions = tensors[f"{name}/positions"]
    row = positions if positions.dim() == 1 else positions[0]
    window = Window(case["first"], case["last"] + 1, q.shape[0], q.shape[1])
    call = Call(
        window,
        DTYPES[case["dtype"]],
        row,
        (q.to(torch.float64), k.to(torch.float64)),
        (outputs[0], outputs[1]),
    )
    call.expected = (tensors[f"{name}/q_rot"], tensors[f"{name}/k_rot"])
    call.allowed = (tensors[f"{name}/tol_q"], tensors[f"{name}/tol_k"])
    return call


def compared(call: Call):
    return zip(call.outputs, call.expected, call.allowed, strict=True)


def rebuild_reference(metadata: dict, group: str) -> RotaryEmbedding:
    layout = metadata.get("layout_argument")
    kwargs = {} if layout is None else {"layout": layout}
    layer_type = metadata["groups"][group]["layer_type"]
    module = RotaryEmbedding.from_hf_config(metadata["config"], layer_type=layer_type, **kwargs)
    described = describe_module(module, layer_type)
    if any(described[k] != v for k, v in metadata["groups"][group].items() if k != "base") or (
        not math.isclose(described["base"], metadata["groups"][group]["base"], rel_tol=1e-12)
    ):
        raise ValueError(
            "this posenc_ref reads the file's config differently from the one that wrote it "
            f"({metadata.get('package_version')}): compare the two versions' changelogs"
        )
    return module
