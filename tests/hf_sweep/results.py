"""The sweep over every family, its two data files, and the table they make.

``tests/data/hf_sweep_truth.json`` holds what each family's code does (for the reader of
configs: layouts, widths, NoPE layers, query scaling, defaults, accepted scalings), with the
measured numbers. ``tests/data/hf_sweep_results.json`` holds one row per family for the site's
model zoo table: encoding, rope type, layout, widths, base, contexts, and whether
``from_hf_config`` agrees (or the feature it still needs). Only fields that do not depend on
float rounding go into the results file, so that the test can require the committed file to
equal a fresh run on any machine.
"""

from __future__ import annotations

import json
import os
import warnings
from dataclasses import dataclass, field
from typing import Any

import torch

from . import families as fam
from .sweep import sweep_family

DATA = os.path.join(os.path.dirname(os.path.dirname(__file__)), "data")
TRUTH_FILE = os.path.join(DATA, "hf_sweep_truth.json")
RESULTS_FILE = os.path.join(DATA, "hf_sweep_results.json")


@dataclass
class Sweep:
    truth: dict[str, Any]
    results: dict[str, Any]
    rows: dict[str, dict] = field(default_factory=dict)


def dumps(value: Any) -> str:
    return json.dumps(value, indent=1, sort_keys=False, ensure_ascii=False)


def enumeration() -> tuple[list[fam.Family], list[fam.Family]]:
    everything = fam.all_families()
    return [f for f in everything if f.text], [f for f in everything if not f.text]


def run(names: list[str] | None = None) -> Sweep:
    """Sweep the given families (default: every text rotary family).

    With ``names`` the files' lists and counts cover those families only (a part of the
    sweep: ``tests/test_models_sweep.py`` runs it in ``parts``).
    """
    import transformers

    transformers.logging.set_verbosity_error()
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # tiny matrices: threads only add overhead (40x on 2 busy cores)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            text, other = enumeration() if names is None else ([fam.classify(n) for n in names], [])
            truths, rows = {}, {}
            for family in text:
                out = sweep_family(family.name)
                truths[family.name] = out["truth"]
                rows[family.name] = row(out["truth"], out["result"])
    finally:
        torch.set_num_threads(threads)
    return assemble(truths, rows, text, other)


def assemble(
    truths: dict[str, dict], rows: dict[str, dict], text: list[fam.Family], other: list[fam.Family]
) -> Sweep:
    """Both files from the families' truths and rows, and the enumeration (text and other)."""
    import transformers

    truth = {
        "transformers": transformers.__version__,
        "about": "What each transformers family's own code does to queries and keys, read from "
        "its states by tests/hf_sweep (python -m tests.hf_sweep --write).",
        "text_rotary_families": sorted(f.name for f in text),
        "vision_audio_only": [
            {
                "family": f.name,
                "rotary_classes": {r.name: r.holders for r in f.rotary},
                "why": f.why,
            }
            for f in other
        ],
        "families": truths,
    }
    results = {
        "transformers": transformers.__version__,
        "counts": counts(rows, len(text) + len(other), len(text)),
        "vision_audio_only": sorted(f.name for f in other),
        "families": rows,
    }
    return Sweep(truth, results, rows)


PARTS = 4


def parts(truth: dict | None = None, count: int = PARTS) -> list[list[str]]:
    """The text families in ``count`` parts of about equal cost, the same on every machine.

    The cost is the truth file's CPU ``seconds`` per family (0 where it has none); the
    costliest family goes first, into the part with the least so far (ties: by name, then the
    first part). Each part lists its families by name.
    """
    if truth is None:
        with open(TRUTH_FILE, encoding="utf-8") as f:
            truth = json.load(f)
    cost = {
        n: float(truth["families"].get(n, {}).get("seconds") or 0.0)
        for n in truth["text_rotary_families"]
    }
    out: list[list[str]] = [[] for _ in range(count)]
    load = [0.0] * count
    for name in sorted(cost, key=lambda n: (-cost[n], n)):
        i = min(range(count), key=lambda j: (round(load[j], 6), j))
        out[i].append(name)
        load[i] += cost[name]
    return [sorted(p) for p in out]


def counts(rows: dict[str, dict], rotary: int, text: int) -> dict[str, int]:
    agree = sum(1 for r in rows.values() if r["agrees"])
    return {
        "model_types_with_a_rotary_class": rotary,
        "text_rotary_families": text,
        "agree": agree,
        "do_not_agree": len(rows) - agree,
    }


def _summary_of_layers(truth: dict) -> dict[str, Any]:
    layers = truth.get("layers") or []
    rope = [g for g in layers if g.get("rope")]
    nope = sorted(i for g in layers if not g.get("rope") for i in g["layers"])
    layouts = sorted(
        {
            g["layout"] + ("" if g["output_layout"] == g["layout"] else f"->{g['output_layout']}")
            for g in rope
        }
    )
    widths = sorted({(g["width"], g["rotary_width"], g["location"]) for g in rope})
    scaled = sorted({i for g in layers if "query_scale" in g for i in g["layers"]})
    return {
        "layout": "/".join(layouts) or None,
        "head_dim": sorted({w for w, _, _ in widths}) or None,
        "rotary_dim": sorted({r for _, r, _ in widths}) or None,
        "rotary_part": sorted({loc for _, _, loc in widths}) or None,
        "nope_layers": nope,
        "query_scaled_layers": scaled,
        "attention_factor": sorted({g["attention_factor"] for g in rope}) or None,
    }


def row(truth: dict, result: dict) -> dict:
    """The family's row of the results file (fields that do not depend on float rounding)."""
    out: dict[str, Any] = {"family": truth["family"], "model_type": truth.get("model_type")}
    if "error" in truth:
        out.update(encoding=None, agrees=False, layout_proven=False, reason=truth["error"])
        return out
    rope = truth["defaults"].get("rope_parameters_used", truth["defaults"]["rope_parameters"])
    dicts = [
        d
        for d in (
            rope.values()
            if rope and all(isinstance(v, dict) or v is None for v in rope.values())
            else [rope]
        )
        if d
    ]
    layers = _summary_of_layers(truth)
    rows = truth.get("position_rows", 1)
    encoding = "RoPE" if rows == 1 else ("M-RoPE" if rows == 3 else f"M-RoPE ({rows} rows)")
    if layers["nope_layers"]:
        encoding += " + NoPE layers"
    out.update(
        encoding=encoding,
        rope_type=sorted({d.get("rope_type", "default") for d in dicts}) or None,
        base=sorted({d.get("rope_theta") for d in dicts if d.get("rope_theta") is not None})
        or None,
        layout=layers["layout"],
        head_dim=layers["head_dim"],
        rotary_dim=layers["rotary_dim"],
        rotary_part=layers["rotary_part"],
        nope_layers=layers["nope_layers"],
        query_scaled_layers=layers["query_scaled_layers"],
        original_context=sorted(
            {
                d["original_max_position_embeddings"]
                for d in dicts
                if d.get("original_max_position_embeddings")
            }
        )
        or None,
        max_context=truth["defaults"]["max_position_embeddings"],
        scalings_accepted=sorted(
            k
            for k, c in truth.get("cases", {}).items()
            if c.get("accepted") and c.get("changes_frequencies")
        ),
        agrees=bool(result.get("agrees")),
        layout_proven=bool(result.get("layout_proven")),
        reason=result.get("reason"),
    )
    return out


STRUCTURE = (
    "layers",
    "module",
    "width",
    "rope",
    "rotary",
    "location",
    "layout",
    "output_layout",
    "no_exact_pairing",
    "mrope_rows",
)


def digest(truth: dict) -> dict:
    """The structure of a truth file, without the measured numbers (stable across machines)."""
    out = {}
    for name, family in truth["families"].items():
        out[name] = {
            "model_class": family.get("model_class"),
            "error": (family.get("error") or "")[:60],
            "position_rows": family.get("position_rows"),
            "layers": [
                {k: g.get(k) for k in STRUCTURE} | {"query_scaled": "query_scale" in g}
                for g in family.get("layers", [])
            ],
            "cases": {
                k: (c.get("accepted"), c.get("changes_frequencies"), "error" in c)
                for k, c in family.get("cases", {}).items()
            },
        }
    return out


def write(sweep: Sweep) -> None:
    os.makedirs(DATA, exist_ok=True)
    with open(TRUTH_FILE, "w", encoding="utf-8") as f:
        f.write(dumps(sweep.truth) + "\n")
    with open(RESULTS_FILE, "w", encoding="utf-8") as f:
        f.write(dumps(sweep.results) + "\n")


def load_results() -> dict:
    with open(RESULTS_FILE, encoding="utf-8") as f:
        return json.load(f)


def report(results: dict) -> str:
    c = results["counts"]
    lines = [
        f"transformers {results['transformers']}: "
        f"{c['model_types_with_a_rotary_class']} model types with a rotary class, "
        f"{c['text_rotary_families']} rotate text, {c['agree']} agree, "
        f"{c['do_not_agree']} do not",
        "",
        f"{'family':24} {'encoding':20} {'type':12} {'layout':24} {'head':8} {'rotary':8} "
        f"{'part':8} {'base':12} ok",
    ]
    for r in results["families"].values():

        def show(v):
            if isinstance(v, list):
                return "/".join(map(lambda x: f"{x:g}" if isinstance(x, float) else str(x), v))
            return "-" if v is None else str(v)

        lines.append(
            f"{r['family']:24} {show(r.get('encoding')):20} {show(r.get('rope_type')):12} "
            f"{show(r.get('layout')):24} {show(r.get('head_dim')):8} {show(r.get('rotary_dim')):8} "
            f"{show(r.get('rotary_part')):8} {show(r.get('base')):12} "
            f"{'yes' if r['agrees'] else 'NO: ' + str(r.get('reason'))[:100]}"
        )
    return "\n".join(lines)
