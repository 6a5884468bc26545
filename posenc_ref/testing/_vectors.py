r"""Reference vectors for any language: a model's RoPE as inputs, expected outputs and tolerances.

Explained on the site: [reference vectors](frameworks.md#frameworks-vectors).

:func:`build_vectors` computes, for a model's config, random queries and keys at windows of
positions (the start, the end of the original context, across the point where a scaling method
switches, far past it), in float32 and bfloat16, for every layer type (and for M-RoPE with
three distinct position rows, and with the kit's text, image and video positions), with the
expected outputs in float64, the per-pair cos/sin rows and the allowed error of every element.
:func:`~posenc_ref.testing.write_vectors` writes them as ``.safetensors``, ``.npz`` or
``.json`` (``_vector_files.py``: the formats, and the checks every file read goes through).
:func:`verify_outputs` reads someone's outputs for those inputs and returns the report the kit's
:func:`~posenc_ref.testing.assert_rope_equal` would give.

The format, version 2 (version 1 files are read too; a new version only adds keys):

- one tensor per name ``GROUP/WINDOW/DTYPE/WHAT``; ``GROUP`` is ``rope`` or the layer type,
  ``WINDOW`` one of ``start``, ``inside``, ``boundary``, ``far`` (``..._3rows`` for M-RoPE
  cases with three position rows, ``..._2rows`` with NeoMME's two; ``image`` for the kit's text,
  image and video sequence), ``DTYPE`` ``float32`` or ``bfloat16``; ``WHAT``: ``positions``
  (int64, ``(n,)``, or ``(rows, n)``: time, height, width, or height, width), ``q`` and ``k``
  (``(batch, heads, n, head_dim)`` in ``DTYPE``), ``q_rot`` and ``k_rot`` (the expected outputs,
  float64), ``tol_q`` and ``tol_k`` (the allowed absolute error per element, float64), ``cos``
  and ``sin`` (float64 ``(n, rotary_dim // 2)``: the angle of pair ``i`` at each position,
  attention factor included), and per group ``GROUP/inv_freq`` (float64, inside the original
  context);
- metadata (JSON): ``format``, ``version``, ``package_version``, the ``config`` it came from,
  per group the RoPE it describes (widths, layout, base, ``rope_type``, original context,
  M-RoPE sections), per case its window, dtype, call length and attention factor, the
  ``tolerance`` model with its numbers, every tensor's ``dtype`` and ``shape``, and ``sha256``,
  the hash of the contents (:func:`~._vector_files.content_hash`); in ``.safetensors`` also
  flat string entries for readers without JSON (:func:`~._vector_files.flat_metadata`).
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from pathlib import Path

import torch

from ..rope import RotaryEmbedding
from . import _tolerance as tolerance
from ._calls import Call, CallPlan
from ._common import UNIT_ROUNDOFF, check_seed
from ._model import reference_model
from ._plan import DEFAULT_CONTEXT, DEFAULT_FAR, image_call, mrope_segments
from ._tolerance import excess_ratio, rope_allowance
from ._vector_files import VectorsFileError, content_hash, read_vectors, tensor_list

__all__ = ["build_vectors", "verify_outputs", "VERSION", "FORMAT"]

FORMAT = "posenc_ref.rope_vectors"
VERSION = 2
READABLE_VERSIONS = (1, 2)
WINDOW = 16
BATCH, HEADS = 1, 1
DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16}
IMAGE_START = 5  # the kit's M-RoPE image sequence starts here (posenc_ref.testing._plan)


# --------------------------------------------------------------------------- the layer types


def modules_of(config: Mapping, layer_type: str | None, layout: str | None) -> dict:
    """``{group name: RotaryEmbedding}``: the one RoPE of the config, or one per layer type."""
    kwargs = {} if layout is None else {"layout": layout}
    if layer_type is not None:
        return {layer_type: RotaryEmbedding.from_hf_config(config, layer_type=layer_type, **kwargs)}
    try:
        return {"rope": RotaryEmbedding.from_hf_config(config, **kwargs)}
    except ValueError as error:
        # The reader refuses a config with one RoPE per layer type unless told which type: the
        # decision is whether it reads one per layer type, never what its message says. A
        # config the reader refuses for another reason reads no layer type either, and the
        # first refusal is the one shown.
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
    # The tolerance of the kit, each pair at the position of its own row.
    call = Call(
        CallPlan("prefill", positions, BATCH, HEADS, HEADS, rows=positions.dim() > 1),
        dtype,
        (q64, k64),
        (q64, k64),
    )
    model = reference_model(module)
    tol = [
        rope_allowance(model, x, call, float32_angles=True, rtol=None, atol=0.0) for x in (q64, k64)
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
            if module.mrope_section is not None and window == "start":
                rows.append(("image", image_call(module, IMAGE_START).positions))
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


def tolerance_metadata() -> dict:
    return {
        "formula": (
            "tol = a * |pair| * (rtol + angle) for the two coordinates of a rotated pair, with "
            f"angle = {tolerance.describe()} (float32 angles accepted); coordinates past "
            "rotary_dim: u(dtype) * |x|"
        ),
        "per_element": "GROUP/WINDOW/DTYPE/tol_q and tol_k hold it for every element",
        "rtol": {name: tolerance.OUTPUT_ROUNDINGS * UNIT_ROUNDOFF[d] for name, d in DTYPES.items()},
        "unit_roundoff": {name: UNIT_ROUNDOFF[d] for name, d in DTYPES.items()},
        "u32": UNIT_ROUNDOFF[torch.float32],
        "margin": tolerance.ANGLE_MARGIN,
        "exponent_roundings": tolerance.EXPONENT_ROUNDINGS,
        "loop_roundings": tolerance.LOOP_ROUNDINGS,
        "fixed_roundings": tolerance.FIXED_ROUNDINGS,
        "blend_roundings": tolerance.BLEND_ROUNDINGS,
        "float32_angles": True,
        "compare": "|yours - expected| <= tol, element by element",
    }


def rebuild_reference(metadata: dict, group: str, path: str = "vectors") -> RotaryEmbedding:
    """The group's RotaryEmbedding from the file's config, checked against its description."""
    layout = metadata.get("layout_argument")
    kwargs = {} if layout is None else {"layout": layout}
    described = metadata["groups"][group]
    try:
        module = RotaryEmbedding.from_hf_config(
            metadata["config"], layer_type=described["layer_type"], **kwargs
        )
    except (ValueError, TypeError, KeyError, NotImplementedError, OverflowError) as error:
        raise VectorsFileError(
            f"{path}: config: posenc_ref's reader refuses it ({error})"
        ) from None
    ours = describe_module(module, described["layer_type"])
    same = all(ours.get(k) == v for k, v in described.items() if k != "base")
    if not same or not math.isclose(ours["base"], described["base"], rel_tol=1e-12):
        raise VectorsFileError(
            f"{path}: groups.{group}: this posenc_ref reads the file's config differently from "
            f"the one that wrote it ({metadata.get('package_version')}): compare the two "
            "versions' changelogs, or the file was edited"
        )
    return module


# --------------------------------------------------------------------------- verify


def _need(condition: bool, path: str, field: str, problem: str) -> None:
    if not condition:
        raise VectorsFileError(f"{path}: {field}: {problem}")


def check_vectors(metadata: dict, tensors: Mapping[str, torch.Tensor], path: str) -> None:
    """Every field :func:`verify_outputs` reads, against the format; a clear error otherwise."""
    _need(
        metadata.get("format") == FORMAT,
        path,
        "format",
        f"not a posenc_ref vectors file (no format {FORMAT!r})",
    )
    _need(
        metadata.get("version") in READABLE_VERSIONS,
        path,
        "version",
        f"{metadata.get('version')!r:.40}; this posenc_ref reads versions {READABLE_VERSIONS}",
    )
    _need(
        metadata.get("sha256") == content_hash(tensors),
        path,
        "sha256",
        "the contents do not match their sha256 (the file was changed)",
    )
    groups, cases = metadata.get("groups"), metadata.get("cases")
    _need(
        isinstance(groups, dict) and groups and all(isinstance(g, dict) for g in groups.values()),
        path,
        "groups",
        "must be an object of group descriptions",
    )
    _need(isinstance(metadata.get("config"), dict), path, "config", "must be a JSON object")
    for group, described in groups.items():
        _need(
            isinstance(described.get("layer_type"), (str, type(None)))
            and isinstance(described.get("base"), (int, float))
            and not isinstance(described.get("base"), bool)
            and all(isinstance(described.get(k), int) for k in ("head_dim", "rotary_dim"))
            and described.get("layout") in ("half", "interleaved"),
            path,
            f"groups.{group}",
            "needs layer_type, base, head_dim, rotary_dim and layout",
        )
    _need(isinstance(cases, list) and cases, path, "cases", "must be a non-empty list")
    for i, case in enumerate(cases):
        _check_case(i, case, groups, tensors, path)
    if metadata["version"] >= 2:
        check_version_2(metadata, path)


# What version 2 added to version 1: the kit's image sequence for each M-RoPE group, and the
# float32 angle allowance counted kernel by kernel.
VERSION_2_TOLERANCE = ("exponent_roundings", "loop_roundings", "fixed_roundings", "blend_roundings")


def check_version_2(metadata: dict, path: str) -> None:
    """A file that says version 2 holds what version 2 added (else it is a version 1 file)."""
    tolerance_keys = metadata.get("tolerance")
    missing = [
        k
        for k in VERSION_2_TOLERANCE
        if not isinstance(tolerance_keys, dict) or k not in tolerance_keys
    ]
    windows = {(c.get("group"), c.get("window")) for c in metadata["cases"]}
    for group, described in metadata["groups"].items():
        if described.get("mrope_section") is not None and (group, "image") not in windows:
            missing.append(f"the image case of group {group!r}")
    _need(
        not missing,
        path,
        "version",
        f"2, but the file lacks what version 2 added ({', '.join(missing)}): a version 1 file "
        "whose version was changed, or one another program wrote; write it again with "
        "python -m posenc_ref vectors",
    )


def _check_case(i: int, case: object, groups: dict, tensors: Mapping, path: str) -> None:
    """One entry of ``cases`` and its tensors, against the format."""
    field = f"cases[{i}]"
    _need(isinstance(case, dict), path, field, "must be an object")
    name = case.get("name")
    _need(
        isinstance(name, str) and case.get("group") in groups,
        path,
        f"{field}.name",
        "needs a name and a group of the file's groups",
    )
    _need(case.get("dtype") in DTYPES, path, f"{name}.dtype", f"must be one of {tuple(DTYPES)}")
    rows = case.get("position_rows")
    _need(rows in (1, 2, 3), path, f"{name}.position_rows", "must be 1, 2 or 3")
    for key in ("first", "last"):
        _need(isinstance(case.get(key), int), path, f"{name}.{key}", "must be an integer")
    for what in ("positions", "q", "k", "q_rot", "k_rot", "tol_q", "tol_k"):
        _need(f"{name}/{what}" in tensors, path, f"{name}/{what}", "is missing")
    q, k, positions = (tensors[f"{name}/{w}"] for w in ("q", "k", "positions"))
    _need(
        q.dim() == 4
        and k.dim() == 4
        and q.shape[2] == k.shape[2] == positions.shape[-1]
        and q.dtype == k.dtype == DTYPES[case["dtype"]],
        path,
        f"{name}/q and k",
        f"must be (batch, heads, n, head_dim) {case['dtype']} tensors of the positions' n",
    )
    _need(
        positions.dtype == torch.int64
        and positions.dim() == (1 if rows == 1 else 2)
        and (rows == 1 or positions.shape[0] == rows),
        path,
        f"{name}/positions",
        f"must be int64 ({'n,' if rows == 1 else f'{rows}, n'})",
    )
    for got, like in (("q_rot", q), ("tol_q", q), ("k_rot", k), ("tol_k", k)):
        t = tensors[f"{name}/{got}"]
        _need(
            t.shape == like.shape and t.dtype == torch.float64,
            path,
            f"{name}/{got}",
            f"must be float64 of shape {tuple(like.shape)}",
        )


def call_of_case(case: dict, tensors: Mapping, theirs: Mapping, outputs: str) -> Call:
    name = case["name"]
    q, k = tensors[f"{name}/q"], tensors[f"{name}/k"]
    got = []
    for which, x in (("q_rot", q), ("k_rot", k)):
        t = theirs.get(f"{name}/{which}")
        if t is None or tuple(t.shape) != tuple(x.shape) or not t.is_floating_point():
            what = "missing" if t is None else f"{str(t.dtype)[6:]} of shape {tuple(t.shape)}"
            raise VectorsFileError(
                f"{outputs}: {name}/{which} must be a floating tensor (float64, float32, float16 "
                f"or bfloat16) of shape {tuple(x.shape)}, got {what}"
            )
        got.append(t.to(torch.float64))
    positions = tensors[f"{name}/positions"]
    rows = positions.dim() > 1
    plan = CallPlan(
        "image" if rows else "prefill", positions, q.shape[0], q.shape[1], k.shape[1], rows=rows
    )
    if case.get("window") == "image" and torch.equal(
        mrope_segments(IMAGE_START)[0][3 - positions.shape[0] :], positions
    ):
        plan.variants = _image_variants(positions.shape[0])
    call = Call(plan, DTYPES[case["dtype"]], (q.double(), k.double()), (got[0], got[1]))
    call.expected = (tensors[f"{name}/q_rot"], tensors[f"{name}/k_rot"])
    call.allowed = (tensors[f"{name}/tol_q"], tensors[f"{name}/tol_k"])
    return call


def _image_variants(rows: int) -> dict:
    class _Rows:  # image_call only reads how many sections the module has
        mrope_section = (0,) * rows

    return image_call(_Rows(), IMAGE_START).variants


def _case_line(case: dict, worst: float | None, width: int) -> str:
    rows = f" ({case['position_rows']} rows)" if case["position_rows"] > 1 else ""
    where = f"{case['first']}..{case['last']}{rows}"
    head = f"  {case['name']:<{width}}  positions {where:<18}"
    if worst is None:
        return f"{head}  MISSING"
    verdict = "agrees" if worst <= 1 else "DISAGREES"
    return f"{head}  error/tolerance {worst:<8.3g}  {verdict}"


def verify_outputs(
    vectors: str | Path, outputs: str | Path, *, allow_missing: bool = False
) -> tuple[bool, str]:
    """Compare someone's outputs with a vectors file, and diagnose them as the kit would.

    Explained on the site: [verify](frameworks.md#frameworks-verify).

    ``outputs`` holds, for the cases of ``vectors``, tensors named ``GROUP/WINDOW/DTYPE/q_rot``
    and ``.../k_rot`` (any float dtype, the shapes of ``q`` and ``k``), in any of the three
    formats. Each element must be within ``tol_q`` / ``tol_k`` of the expected value. The report
    opens with the verdict, then one line per case, then, on disagreement, the report
    :func:`~posenc_ref.testing.assert_rope_equal` writes for the same calls.

    Parameters
    ----------
    vectors
        A file written by ``python -m posenc_ref vectors``.
    outputs
        Your outputs.
    allow_missing
        Accept outputs for only some cases (default ``False``: a missing case is a failure).

    Returns
    -------
    tuple
        ``(agrees, report)``.

    Raises
    ------
    FileNotFoundError, VectorsFileError
        A file that is missing, or breaks the format (the message names file and field).
    """
    agrees, report, _ = verify_details(vectors, outputs, allow_missing=allow_missing)
    return agrees, report


def verify_details(
    vectors: str | Path, outputs: str | Path, *, allow_missing: bool = False
) -> tuple[bool, str, list[dict]]:
    """:func:`verify_outputs`, and one entry per case for ``verify --json``.

    Each entry holds the case's ``name``, ``group``, first and last ``positions``, its largest
    ``error_over_tolerance`` (``None`` when missing) and its ``status`` (``"agrees"``,
    ``"disagrees"`` or ``"missing"``).
    """
    from ._report import rope_report
    from ._rope import rope_subject

    tensors, metadata = read_vectors(vectors)
    check_vectors(metadata, tensors, str(vectors))
    # the file's config must still say what its groups describe (and be readable at all)
    references = {g: rebuild_reference(metadata, g, str(vectors)) for g in metadata["groups"]}
    theirs, _ = read_vectors(outputs)
    cases = metadata["cases"]
    present = [c for c in cases if f"{c['name']}/q_rot" in theirs or f"{c['name']}/k_rot" in theirs]
    if not present:
        raise VectorsFileError(
            f"{outputs} holds none of the cases of {vectors}: name your tensors like "
            f"{cases[0]['name']}/q_rot and .../k_rot"
        )
    worst, by_group = {}, {}
    for case in present:
        call = call_of_case(case, tensors, theirs, str(outputs))
        worst[case["name"]] = max(
            float(excess_ratio(*t).max())
            for t in zip(call.outputs, call.expected, call.allowed, strict=True)
        )
        by_group.setdefault(case["group"], []).append((call, worst[case["name"]] <= 1))
    missing = [c["name"] for c in cases if c["name"] not in worst]
    wrong = [name for name, value in worst.items() if value > 1]
    agrees = not wrong and (allow_missing or not missing)
    name = Path(outputs).name
    if wrong:
        verdict = f"DISAGREES: {len(wrong)} of {len(present)} cases compared are outside tolerance"
    elif missing and not allow_missing:
        verdict = f"INCOMPLETE: the {len(present)} cases compared agree, but cases are missing"
    else:
        verdict = f"AGREES: all {len(present)} cases compared are within tolerance"
    if missing:
        verdict += f"; {len(missing)} of the {len(cases)} cases are missing from {name}" + (
            " (allowed by --allow-missing)" if allow_missing else ""
        )
    lines = [verdict + ".", "(each element must be within its tolerance, tol_q or tol_k)"]
    width = max(len(c["name"]) for c in cases)
    lines += [_case_line(c, worst.get(c["name"]), width) for c in cases]
    for group, entries in by_group.items():
        if all(ok for _, ok in entries):
            continue
        reference = references[group]
        options = {
            "rtol": None,
            "atol": 0.0,
            "float32_angles": True,
            "attention_factor": float(reference.attention_factor),
        }
        title = "" if group == "rope" else f" (layer type {group!r})"
        lines += ["", f"Report{title}, as assert_rope_equal gives it:"]
        lines.append(rope_report(rope_subject(reference), [c for c, _ in entries], options))
    results = [
        {
            "name": c["name"],
            "group": c["group"],
            "positions": [c["first"], c["last"]],
            "error_over_tolerance": worst.get(c["name"]),
            "status": "missing"
            if c["name"] not in worst
            else ("agrees" if worst[c["name"]] <= 1 else "disagrees"),
        }
        for c in cases
    ]
    return agrees, "\n".join(lines), results
