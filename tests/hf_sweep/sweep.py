"""One family end to end: its runs, what its code did (truth), and posenc_ref's agreement.

``sweep_family(name)`` returns two JSON-ready dicts:

- ``truth``: what the family's code does, read from its own states only (``truth.py``): per
  layer the rotary width and where it sits, the pair layout in and out, the attention factor,
  any position-dependent query scaling, the frequencies at position 1 and the base they imply;
  the defaults its config class fills in; which ``rope_parameters`` variants it accepts and
  whether they change its frequencies.
- ``result``: ``RotaryEmbedding.from_hf_config`` on the same configs, rotating the same states:
  the largest difference over HF's float32-angle bound per case and position set, the same for
  the other pair layout (it must fail: the layout is proven), and the reason when it does not
  agree (the refusal message, or the part of the comparison that fails).
"""

from __future__ import annotations

import json
import math
import re
import time
import warnings
from typing import Any

import torch

from . import compare, harness, runs, special, truth
from .families import Family, class_sources, classify

# The family's own RoPE (its default config), and three scaled ones: linear and YaRN change the
# frequencies everywhere, dynamic NTK only in calls that reach past the original context.
# (Every HF rope type, LongRoPE and Llama 3 included, is compared on Llama and GPT-NeoX in
# tests/test_models_hf.py; here the question is whether each family's code reads the type.)
CASES = ("default", "linear", "dynamic", "yarn")
# Tried only where the config class takes none of the above (Phi-3 takes LongRoPE only).
FALLBACK_CASES = ("longrope", "llama3")
LAYOUT_PROOF = 10.0  # the other layout must miss the bound by at least this factor


def _json(value: Any) -> Any:
    """Config values as JSON (floats kept, tensors and tuples as lists)."""
    return json.loads(
        json.dumps(value, default=lambda v: v.tolist() if hasattr(v, "tolist") else str(v))
    )


def _rope_of(config) -> dict:
    rope = getattr(config, "rope_parameters", None)
    return _json(dict(rope)) if rope else {}


def _types(rope: dict) -> list[str]:
    dicts = runs._rope_dicts(rope) if rope else []
    return sorted({d.get("rope_type", "default") for d in dicts})


def position_rows(model) -> int:
    """How many position rows the family's text rotary module takes (M-RoPE: 3; else 1).

    Read from the module: the length of its ``mrope_section``, else the row count its forward
    expands the positions to.
    """
    for module in model.modules():
        if type(module).__name__.endswith("RotaryEmbedding"):
            section = getattr(module, "mrope_section", None)
            if isinstance(section, dict) and section:  # one per layer type
                section = next(iter(section.values()))
            if isinstance(section, (list, tuple)) and section:
                if all(isinstance(v, (list, tuple)) for v in section):  # one per layer type
                    section = section[0]
                return len(section)
            source = class_sources(type(module).__module__).get(type(module).__name__, "")
            found = re.search(r"position_ids\.expand\((\d+),", source)
            if found:
                return int(found.group(1))
            if "mrope" in source:
                return 3
    return 1


def analysed(pre: harness.Call, post: harness.Call) -> truth.LayerTruth:
    """``truth.analyse`` of one call's states before and after, computed once per call.

    The inside pass is read for the layer facts, the query scaling and the angles: the same
    states, the same reading (kept on the call after RoPE, with the call it was read against).
    """
    if post.analysis is None or post.analysis[0] is not pre:
        post.analysis = (pre, truth.analyse(pre.q, post.q, pre.k, post.k))
    return post.analysis[1]


def _layer(call: harness.Call, index: int) -> int:
    return call.layer if call.layer is not None else index


def layer_truth(case: runs.Case) -> list[dict]:
    """Per attention call of the inside pass: what the code did."""
    inside = case.passes[0]  # "inside", or "both" (inside and far in one call)
    probe = next((p for p in case.passes if p.positions.name == "probe"), None)
    out = []
    for index, (pre, post) in enumerate(zip(inside.pre, inside.post, strict=True)):
        t = analysed(pre, post)
        positions = inside.positions.positions
        row = {
            "layer": _layer(pre, index),
            "module": pre.module,
            "width": t.width,
            "values_equal": runs.same_inputs([pre], [post]),
            "identity_positions": inside.identity_positions,
            "softmax_scale_x_sqrt_width": None
            if post.scaling is None
            else round(post.scaling * math.sqrt(t.width), 9),
        }
        if t.nope:
            row["rope"] = False
        else:
            best = t.best
            others = [
                f
                for f in t.fits
                if (f.layout_in, f.layout_out) != (best.layout_in, best.layout_out)
            ]
            if best.residual > truth.EXACT:
                # no pairing reproduces the output: not a rotation of coordinate pairs
                row["no_exact_pairing"] = True
            row.update(
                rope=True,
                rotary=list(t.block),
                rotary_width=t.block[1] - t.block[0],
                location=t.location,
                moved=len(t.rotary),
                layout=best.layout_in,
                output_layout=best.layout_out,
                residual=float(f"{best.residual:.2e}"),
                other_layout_residual=float(f"{min(f.residual for f in others):.2e}")
                if others
                else None,
                attention_factor=round(float(t.key_scale.median()), 5),
            )
            one_row = positions if positions.dim() == 1 else None
            if one_row is not None:
                omega = truth.frequencies(t, one_row)
                if omega is not None:
                    row["omega_first"] = [round(float(w), 7) for w in omega[:3]]
                    row["omega_last"] = round(float(omega[-1]), 10)
                    base = truth.base_from(omega)
                    row["base_fit"] = None if base is None else float(f"{base:.6g}")
                    row.update(truth.direction_and_positions(t, one_row))
            if probe is not None:
                row["mrope_rows"] = mrope_rows(probe, index)
        scaled = query_scaling(case, index)
        if scaled:
            row["query_scale"] = scaled
        out.append(row)
    return out


def query_scaling(case: runs.Case, index: int, keep: int = 8) -> dict[int, float]:
    """Positions where the query is scaled beyond the key (every pass), a few of them.

    Returns ``{position: factor}`` for up to ``keep`` positions where the factor differs from 1
    (the first and the last ones), empty where the query is never scaled.
    """
    found: dict[int, float] = {}
    for p in case.passes:
        if p.positions.name == "probe" or index >= len(p.pre):
            continue
        pre, post = p.pre[index], p.post[index]
        qs = analysed(pre, post).query_scale
        if qs is None:
            continue
        positions = p.positions.positions
        positions = positions if positions.dim() == 1 else positions.max(0).values
        for pos, factor in zip(positions.tolist(), qs.tolist(), strict=True):
            if abs(factor - 1) > 1e-4:
                found[int(pos)] = round(float(factor), 4)
    ordered = sorted(found)
    chosen = ordered[: keep // 2] + ordered[-(keep // 2) :] if len(ordered) > keep else ordered
    return {p: found[p] for p in sorted(set(chosen))}


def mrope_rows(probe: runs.Pass, index: int) -> list[int] | None:
    """The position row (0 time, 1 height, 2 width) each pair's angle follows."""
    pre, post = probe.pre[index], probe.post[index]
    t = analysed(pre, post)
    if t.key_angle is None:
        return None
    rows = probe.positions.positions  # (3, seq): (0,0,0), then (p,p,p), (p,2p,3p) per scale
    angle = t.key_angle.abs()
    found = []
    for i in range(angle.shape[1]):
        choice = None
        for j in range(1, rows.shape[1], 2):
            same, spread = angle[j, i], angle[j + 1, i]
            # the largest scale whose angles do not wrap, and are well above the rounding
            if float(same) * rows.shape[0] < math.pi and float(same) > 1e-3:
                choice = int(round(float(spread / same))) - 1
        found.append(choice)
    return found


NUMERIC = ("residual", "other_layout_residual", "omega_first", "omega_last", "base_fit")


def summarize_layers(rows: list[dict]) -> list[dict]:
    """Group identical layers (same structure).

    Measured numbers come from the group's first layer; the residual is the group's largest,
    the other layouts' residual its smallest.
    """
    groups: list[dict] = []
    for row in rows:
        key = {k: v for k, v in row.items() if k != "layer" and k not in NUMERIC}
        for g in groups:
            if g["key"] == key:
                g["layers"].append(row["layer"])
                g["rows"].append(row)
                break
        else:
            groups.append({"key": key, "layers": [row["layer"]], "rows": [row]})
    out = []
    for g in groups:
        first = g["rows"][0]
        entry = dict(layers=g["layers"], **g["key"])
        for k in ("omega_first", "omega_last", "base_fit"):
            if k in first:
                entry[k] = first[k]
        if "residual" in first:
            entry["residual"] = max(r["residual"] for r in g["rows"])
            others = [
                r["other_layout_residual"]
                for r in g["rows"]
                if r.get("other_layout_residual") is not None
            ]
            entry["other_layout_residual"] = min(others) if others else None
        out.append(entry)
    return out


def _short(requested: Any) -> Any:
    """A requested rope_parameters with long factor lists shortened for the file."""
    if isinstance(requested, dict):
        return {k: _short(v) for k, v in requested.items()}
    if isinstance(requested, list) and len(requested) > 4:
        return f"[{len(requested)} values]"
    return requested


def angles(case: runs.Case) -> dict[tuple, list[torch.Tensor]]:
    """Key angles per (call, position): what a scaling may change.

    A position may appear in several calls of a case (dynamic NTK: position 1 in a call that
    stays inside the original context, and in one that goes past it), hence a list.
    """
    out: dict[tuple, list[torch.Tensor]] = {}
    for p in case.passes:
        positions = p.positions.positions
        columns = positions.T.tolist() if positions.dim() == 2 else positions.tolist()
        for index, (pre, post) in enumerate(zip(p.pre, p.post, strict=True)):
            angle = analysed(pre, post).key_angle
            if angle is None:
                continue
            for column, row in zip(columns, angle, strict=True):
                key = (index, tuple(column) if isinstance(column, list) else column)
                out.setdefault(key, []).append(row)
    return out


def changes(got: dict, reference: dict) -> bool:
    """Whether some angle at a position both cases ran differs (beyond float32 noise)."""
    for key, rows in got.items():
        for a in rows:
            for b in reference.get(key, []):
                if a.shape == b.shape and not torch.allclose(a, b, rtol=1e-4, atol=1e-6):
                    return True
    return False


# --------------------------------------------------------------------------- ours


def case_family(case: runs.Case) -> str:
    return case.family


def agreement(case: runs.Case, source: Any = None, reader: dict | None = None) -> dict:
    """posenc_ref on one case: worst ratio per position set, the other layout's, the reason.

    Which layers have RoPE comes from posenc_ref's ``layer_specs`` (``None``: a layer without
    RoPE, whose states must come out as they went in, the query times ``nope_query_scale``).
    posenc_ref reads ``source`` (default: the config the model was built from; the corpus
    gives the released file, whose layer ``i`` is the tiny model's layer ``i``), with ``reader``:
    keyword arguments of the reader that carry what the model's weights hold beyond its config
    (Mistral Large 4's ``lerope_alpha``).
    """
    config = case.config
    source = config if source is None else source
    out: dict[str, Any] = {"ratio": {}, "other_layout_ratio": {}, "gap": {}}
    reader = reader or {}
    plan = compare.layer_plan(source, **reader)
    if isinstance(plan, str):
        out["error"] = plan
        return out
    modules: dict[Any, Any] = {}
    flipped: dict[int, Any] = {}  # each module with the other layout, copied once
    for p in case.passes:
        if p.positions.name == "probe":
            continue
        worst, other = 0.0, math.inf
        gap = 0.0
        for index, (pre, post) in enumerate(zip(p.pre, p.post, strict=True)):
            layer = _layer(pre, index)
            pos = p.positions.positions
            pre_k, post_k = compare.token_keys(pre.q, pre.k), compare.token_keys(post.q, post.k)
            nope = compare.is_nope(plan, layer)
            if nope:
                by_index = special.SPECIAL.get(case_family(case), {}).get("scale_by_index", False)
                mine = compare.unrotated(plan, pre.q, pre_k, pos, by_index)
                limit = compare.unrotated_bound(pre.q, pre_k, pos)
            else:
                lt = compare.layer_type_of(config, layer)
                # one module per layer type where the reader takes no layer (the same config
                # and type give the same module, whatever the layer)
                key = (layer if compare.reads_layer() else None, lt)
                if key not in modules:
                    modules[key] = compare.ours_for(source, layer, lt, **reader)
                module, error = modules[key]
                if module is None:
                    out["error"] = error
                    return out
                try:
                    mine = compare.rotate(module, pre.q, pre_k, pos, layer)
                except (ValueError, RuntimeError) as exc:
                    out["error"] = f"{type(exc).__name__}: {exc}"
                    return out
                limit = compare.bound(module, pre.q, pre_k, pos)
            g = compare.gap(mine, (post.q, post_k), limit)
            if not nope:  # DeepSeek-V4's compressed keys, at their blocks' positions
                try:
                    extra = compare.compressed_keys(module, pre.q, pre.k, post.k)
                except (ValueError, RuntimeError) as exc:
                    out["error"] = f"{type(exc).__name__}: {exc}"
                    return out
                if extra is not None:
                    c = compare.gap(extra[:1], extra[1:2], extra[2])
                    g = compare.Gap(max(g.gap, c.gap), max(g.ratio, c.ratio))
                    out["compressed_keys"] = out.get("compressed_keys", 0) + int(extra[0].shape[2])
            if g.ratio > 1 and (out.get("worst") is None or g.ratio > out["worst"]["ratio"]):
                out["worst"] = dict(
                    compare.detail(mine, (post.q, post_k), limit, pos),
                    ratio=g.ratio,
                    layer=layer,
                    nope=nope,
                    positions=p.positions.name,
                )
            worst, gap = max(worst, g.ratio), max(gap, g.gap)
            if not nope and p.positions.name in ("inside", "both") and module.rotary_dim > 2:
                if id(module) not in flipped:
                    flipped[id(module)] = compare.other_layout(module)
                o = compare.gap(
                    compare.rotate(flipped[id(module)], pre.q, pre_k, pos, layer),
                    (post.q, post_k),
                    limit,
                )
                other = min(other, o.ratio)
        out["ratio"][p.positions.name] = float(f"{worst:.3g}")
        out["gap"][p.positions.name] = float(f"{gap:.3g}")
        if other < math.inf:
            out["other_layout_ratio"][p.positions.name] = float(f"{other:.3g}")
    return out


def sweep_family(name: str) -> dict:
    """Run one family; return {"truth": ..., "result": ...} (JSON-ready).

    Any failure of the family's code or of the harness is the family's result (``error``),
    never an exception: one family cannot stop the sweep.
    """
    try:
        return _sweep_family(name)
    except Exception as exc:  # noqa: BLE001
        record = {"family": name, "error": f"harness: {type(exc).__name__}: {exc}"}
        return {"truth": dict(record), "result": dict(record)}


def _sweep_family(name: str) -> dict:
    # the family's own cost (CPU seconds of this process, one torch thread), not the machine's
    # load: the test file's parts are balanced by it
    started = time.process_time()
    family: Family = classify(name)
    mod = harness.modeling(name)
    rule = special.SPECIAL.get(name, {})
    model_class = getattr(mod, rule.get("model_class", family.model_class))
    config_class = model_class.config_class
    if "config_class" in rule:
        config_class = getattr(harness.configuration(name), rule["config_class"])
    record: dict[str, Any] = {"family": name, "model_class": model_class.__name__}
    truth_out: dict[str, Any] = dict(record)
    result: dict[str, Any] = dict(record)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            default, tiny, kwargs, lists = harness.tiny_config(
                config_class, name, rule.get("overrides")
            )
        except Exception as exc:  # noqa: BLE001
            truth_out["error"] = result["error"] = f"config: {type(exc).__name__}: {exc}"
            return {"truth": truth_out, "result": result}
    truth_out.update(
        config_class=type(default).__name__,
        model_type=getattr(default, "model_type", None),
        defaults={
            "head_dim": harness.head_width(default),
            "rope_parameters": _rope_of(default),
            # what the sweep ran: the defaults, or special.py's values where they cannot run
            "rope_parameters_used": _rope_of(tiny),
            "max_position_embeddings": default.to_dict().get("max_position_embeddings"),
            "layer_types": sorted(set(default.to_dict().get("layer_types") or [])) or None,
        },
        tiny={"num_hidden_layers": tiny.num_hidden_layers, "per_layer_lists": lists},
    )
    result["model_type"] = truth_out["model_type"]
    # the default case first: it tells whether the family is M-RoPE and its rotary width
    try:
        model = harness.build(model_class, tiny)
        rows = position_rows(model)
        weights = model.state_dict()
        for key, make in rule.get("weights", {}).items():  # what a checkpoint holds beyond
            weights[key] = make(weights[key])  # the config (Mistral Large 4's LeRoPE alpha)
        reader = rule["reader"](weights) if "reader" in rule else {}
    except Exception as exc:  # noqa: BLE001
        truth_out["error"] = result["error"] = f"build: {type(exc).__name__}: {exc}"
        return {"truth": truth_out, "result": result}
    # the default case runs the model just built (the same config and weights: a second build
    # would only load its own state dict), unless the rule changed weights the model lacks
    built = None if rule.get("weights") else model
    cases = {
        "default": runs.run_case(
            model_class, name, tiny, "default", None, rows, weights, model=built
        )
    }
    base_case = cases["default"]
    if base_case.error or not base_case.passes or not base_case.passes[0].post:
        truth_out["error"] = result["error"] = f"run: {base_case.error or 'no attention call'}"
        return {"truth": truth_out, "result": result}
    truth_out["position_rows"] = rows
    identity = base_case.passes[0].identity_positions  # the later cases use the same
    layers = layer_truth(base_case)
    truth_out["layers"] = summarize_layers(layers)
    rotary_pairs = next((r["rotary_width"] // 2 for r in layers if r.get("rope")), None)
    max_len = int(getattr(tiny, "max_position_embeddings", None) or 4096)
    truth_out["cases"] = {}
    reference = angles(base_case)
    kinds = list(CASES[1:])
    for kind in kinds:
        if (
            kind == kinds[-1]
            and kind in CASES
            and not any(c.get("accepted") and "error" not in c for c in truth_out["cases"].values())
        ):
            kinds += FALLBACK_CASES
        requested = runs.scaled(
            getattr(tiny, "rope_parameters", None) or {}, kind, max_len, rotary_pairs
        )
        info: dict[str, Any] = {"requested": _short(_json(requested))}
        try:
            config = config_class(**dict(kwargs, rope_parameters=requested))
        except Exception as exc:  # noqa: BLE001
            info["accepted"] = False
            info["error"] = f"{type(exc).__name__}: {str(exc)[:300]}"
            truth_out["cases"][kind] = info
            continue
        info["accepted"] = _types(_rope_of(config)) == _types(requested or {})
        case = runs.run_case(model_class, name, config, kind, requested, rows, weights, identity)
        cases[kind] = case
        if case.error:
            info["error"] = case.error[:300]
        else:
            got = angles(case)
            info["changes_frequencies"] = changes(got, reference)
        truth_out["cases"][kind] = info

    result["cases"] = {}
    for kind, case in cases.items():
        if case.error:
            continue
        result["cases"][kind] = agreement(case, reader=reader)
    result.update(verdict(truth_out, result))
    truth_out["seconds"] = result["seconds"] = round(time.process_time() - started, 2)
    return {"truth": truth_out, "result": result}


def verdict(truth_out: dict, result: dict) -> dict:
    """The verdict (agrees, layout_proven, reason) from the per-case comparisons."""
    cases = result["cases"]
    errors = {k: c["error"] for k, c in cases.items() if "error" in c}
    # a scaled RoPE the family's code ignores (its angles do not change): posenc_ref refusing it
    # with a message that says so is the right answer, not a disagreement
    ignored = {
        k
        for k in errors
        if k != "default"
        and truth_out.get("cases", {}).get(k, {}).get("changes_frequencies") is False
        and "code does not compute rope_type" in errors[k]
    }
    for k in ignored:
        cases[k]["refused_as_ignored"] = True
    errors = {k: e for k, e in errors.items() if k not in ignored}
    if "default" in errors:
        return {"agrees": False, "layout_proven": False, "reason": errors["default"]}
    bad = {
        k: c["ratio"]
        for k, c in cases.items()
        if "error" not in c and any(r > 1 for r in c["ratio"].values())
    }
    others = [
        r for c in cases.values() if "error" not in c for r in c["other_layout_ratio"].values()
    ]
    proven = bool(others) and min(others) > LAYOUT_PROOF
    if errors:
        kind, error = next(iter(errors.items()))
        return {"agrees": False, "layout_proven": proven, "reason": f"{kind}: {error}"}
    if bad:
        return {
            "agrees": False,
            "layout_proven": proven,
            "reason": f"differs beyond the bound: {bad}",
        }
    return {"agrees": True, "layout_proven": proven, "reason": None}
