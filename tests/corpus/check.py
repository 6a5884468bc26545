"""One released config against its family's own code: the record of ``check_file``.

The record (one row of ``tests/data/real_configs_status.json``):

- ``verdict``: ``"agrees"``; ``"refused"`` (posenc_ref refuses the file, its config object
  or ``inspect`` fails; ``reason`` says which and why); ``"wrong"`` (posenc_ref reads it and
  rotates differently from the family's code, or calls a RoPE model one without RoPE, or the
  reverse); ``"remote code, read from its public code"`` (transformers cannot build it, and
  posenc_ref reads it by a row written from the family's public code, proven by
  tests/test_remote_families.py); ``"refused"`` also where posenc_ref refuses such a file;
- ``failed``: which checks failed, of ``dict`` (``from_hf_config`` on the file's dict),
  ``object`` (on the transformers config object built from it), ``inspect`` (the command
  line exits 0), ``layer_types`` (its text names every layer type of a config with several);
  stable across rewordings of the messages, so the test compares it;
- ``ratio``: the largest ``|posenc_ref - family| / bound`` over both readings (<= 1 agrees);
  the keys of the tokens, and DeepSeek-V4's compressed keys at their blocks' positions (each
  reading's ``compressed_keys`` counts the ones compared);
- what was read: ``model_type``, how transformers' class was found, the text family, its
  layer types, posenc_ref's encoding for files without RoPE.
"""

from __future__ import annotations

import contextlib
import io
import time
import warnings
from pathlib import Path
from typing import Any

import torch

from tests.hf_sweep import harness, runs, special, sweep

from . import build

CHECKS = ("dict", "object", "inspect", "layer_types")

# The verdict of a remote-code file that posenc_ref reads by a row written from its public code
REMOTE = "remote code, read from its public code"

# Module attributes set for the whole run, where a family's code outside RoPE cannot take
# positions that are not the token indices 0, 1, 2, ... (the states it hands attention do not
# depend on them).
RUN_ATTRS = {
    "minimax_m3_vl": (
        {"local_blocks": 0},
        "the sparse-attention indexer always keeps the query's own key block, found as "
        "position // index_block_size among the blocks of the call's keys: past the call's "
        "length it indexes out of range; it only selects keys, so the run keeps none by force",
    ),
}


def run_model(resolved: build.Resolved) -> runs.Case:
    """The family's tiny text model at positions inside, at the edge of, and past the context."""
    config, cls = build.tiny(resolved)
    family = resolved.family
    case = runs.Case(family, "released", config, None)
    model = harness.build(cls, config)
    sets = runs.position_sets(config, sweep.position_rows(model))
    long = special.SPECIAL.get(family, {}).get("long_positions")
    if long:  # a contiguous run from 0: a query scaling counted by token index (Llama 4)
        sets.append(runs.PositionSet("long", torch.arange(long)))
    attrs = RUN_ATTRS.get(family, ({}, ""))[0]
    with warnings.catch_warnings(), torch.no_grad(), harness.module_attrs(model, attrs):
        warnings.simplefilter("ignore")
        for ps in sets:
            case.passes.append(runs.run_pass(model, family, ps, "auto"))
    return case


def inspect_file(path: Path) -> tuple[int, str]:
    """``python -m posenc_ref inspect FILE``, in this process: (exit status, stdout + stderr)."""
    from posenc_ref.__main__ import main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        status = main(["inspect", str(path)])
    return status, out.getvalue() + err.getvalue()


def encoding_kind(config: Any) -> str:
    """posenc_ref's encoding of a config (``"rope"``, ``"nope"``, ``"learned"``, ...)."""
    from posenc_ref.encodings import positional_encoding

    try:
        return positional_encoding(config).kind
    except (ValueError, NotImplementedError, TypeError, KeyError) as exc:
        return f"refused: {type(exc).__name__}: {exc}"


def _reading(result: dict) -> dict:
    """One source's outcome: its ratio, or its refusal."""
    if "error" in result:
        return {"refused": result["error"]}
    ratios = [r for r in result["ratio"].values()]
    out: dict[str, Any] = {"ratio": float(f"{max(ratios):.3g}") if ratios else None}
    others = list(result["other_layout_ratio"].values())
    out["layout_proven"] = bool(others) and min(others) > sweep.LAYOUT_PROOF
    if result.get("compressed_keys"):
        out["compressed_keys"] = result["compressed_keys"]
    if result.get("worst"):
        out["worst"] = result["worst"]
    return out


def check_file(path: Path) -> dict:
    """Check one file; never raises for the file's sake (a failure is the record's verdict)."""
    started = time.perf_counter()
    raw = build.load(path)
    record: dict[str, Any] = {
        "file": path.name,
        "family": build.manifest().get(path.name, {}).get("model family"),
        "model_type": raw.get("model_type"),
    }
    status, text = inspect_file(path)
    record["inspect_exit"] = status
    try:
        resolved = build.resolve(raw)
    except build.CannotBuild as exc:
        _remote(record, raw, status, text, str(exc))
        record["seconds"] = round(time.perf_counter() - started, 2)
        return record
    record.update(resolved_by=resolved.how, transformers_family=resolved.family)
    types = getattr(resolved.text, "layer_types", None)
    record["layer_types"] = sorted(set(types)) if isinstance(types, list) else None
    try:
        case = run_model(resolved)
    except build.NoRope:
        _without_rope(record, raw, resolved.config, status, text)
        record["seconds"] = round(time.perf_counter() - started, 2)
        return record
    except Exception as exc:  # noqa: BLE001 (the family's code failing is the record's verdict)
        reason = str(exc) if isinstance(exc, build.CannotBuild) else f"{type(exc).__name__}: {exc}"
        record.update(verdict="transformers cannot build it", failed=[], reason=f"run: {reason}")
        record["seconds"] = round(time.perf_counter() - started, 2)
        return record
    readings = {
        "dict": _reading(sweep.agreement(case, raw)),
        "object": _reading(sweep.agreement(case, resolved.config)),
    }
    record["readings"] = readings
    # a config with one layer type has nothing to name (Qwen3's layer_types: full_attention)
    types = record["layer_types"] or []
    missing = [t for t in types if t not in text] if len(types) > 1 else []
    record["inspect_missing_layer_types"] = missing
    _verdict(record, readings, status, text, missing)
    record["seconds"] = round(time.perf_counter() - started, 2)
    return record


def _remote(record: dict, raw: dict, status: int, text: str, why: str) -> None:
    """Remote code: read by a row written from the family's public code, or refused.

    transformers cannot build it, so nothing here compares the rotation: the row is proven by
    tests/test_remote_families.py against a rotation written from the same code.
    """
    kind = encoding_kind(raw)
    record["posenc_ref"] = kind
    if kind.startswith("refused") or status != 0:
        failed = (["dict"] if kind.startswith("refused") else []) + (["inspect"] if status else [])
        reason = kind if kind.startswith("refused") else f"inspect exits {status}: {text[:300]}"
        record.update(verdict="refused", failed=failed, reason=f"{why}; posenc_ref: {reason}")
        return
    from posenc_ref.models import rope_spec

    notes = rope_spec(raw).notes if kind == "rope" else ()
    record.update(verdict=REMOTE, failed=[], reason=f"{why}; posenc_ref reads it: {kind}"
                  + "".join(f"; {note}" for note in notes))  # fmt: skip


def _without_rope(record: dict, raw: dict, config: Any, status: int, text: str) -> None:
    """A family whose text model holds no rotary class: posenc_ref must not read a RoPE."""
    kinds = {"dict": encoding_kind(raw), "object": encoding_kind(config)}
    record["posenc_ref"] = kinds
    failed = [k for k, v in kinds.items() if v == "rope" or v.startswith("refused")]
    if status != 0:
        failed.append("inspect")
    record["failed"] = failed
    if not failed:
        record.update(verdict="agrees", reason=f"no RoPE in the family's code ({kinds['dict']})")
    elif any(kinds[k] == "rope" for k in ("dict", "object")):
        record.update(verdict="wrong", reason="posenc_ref reads a RoPE the family's code has not")
    else:
        record.update(verdict="refused", reason=_first_line(kinds, status, text))


def _first_line(kinds: dict, status: int, text: str) -> str:
    for name, kind in kinds.items():
        if kind.startswith("refused"):
            return f"{name}: {kind}"
    return f"inspect exits {status}: {text.strip()[:300]}"


def _verdict(record: dict, readings: dict, status: int, text: str, missing: list) -> None:
    """The reading's verdict (``dict``, ``object``, ``inspect``'s exit), and every failed check.

    ``inspect`` naming every layer type is its own check (``layer_types``): a file whose
    rotation agrees but whose ``inspect`` text leaves a layer type unnamed agrees, and still
    fails its test.
    """
    refused = {k: r["refused"] for k, r in readings.items() if "refused" in r}
    wrong = {k: r["ratio"] for k, r in readings.items() if (r.get("ratio") or 0) > 1}
    ratios = [r["ratio"] for r in readings.values() if r.get("ratio") is not None]
    record["ratio"] = max(ratios) if ratios else None
    failed = sorted(set(refused) | set(wrong))
    if status != 0:
        failed.append("inspect")
    if missing:
        failed.append("layer_types")
    record["failed"] = failed
    if wrong:
        record.update(verdict="wrong", reason=f"beyond the float32-angle bound: {wrong}")
    elif refused:
        name, reason = next(iter(refused.items()))
        record.update(verdict="refused", reason=f"{name}: {reason}")
    elif status != 0:
        record.update(verdict="refused", reason=f"inspect exits {status}: {text.strip()[:300]}")
    else:
        record.update(verdict="agrees", reason=None)
    if missing:
        note = f"inspect does not name the layer types {missing}"
        record["reason"] = note if record["reason"] is None else f"{record['reason']}; {note}"
