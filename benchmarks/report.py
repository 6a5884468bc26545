"""Markdown tables from a results file, for the site's benchmark page (run at build time).

Every function takes the parsed results (``load()``) and returns a Markdown string; the page
prints them from ``markdown-exec`` blocks, so the tables always match the committed file.
"""

from __future__ import annotations

import json
from pathlib import Path

RESULTS = Path(__file__).with_name("results.json")

# Display names, in display order.
SINUSOIDAL_VARIANTS = {
    "sinusoidal_loop": "`sinusoidal_loop` (Python loop)",
    "sinusoidal": "`sinusoidal`",
    "float32_formula": "float32 formula",
    "numpy_float64": "NumPy float64",
}
ACCURACY_VARIANTS = {
    "sinusoidal": "`sinusoidal`",
    "rope_cos_sin": "`rope_cos_sin`",
    "float32_formula": "float32 formula",
    "hf_llama_rotary": "HF `LlamaRotaryEmbedding`",
}
ROPE_VARIANTS = {
    "copy_floor": "copy floor (q, k into buffers)",
    "clone_floor": "clone floor (q.clone(), k.clone())",
    "apply_rope_interleaved": "`apply_rope`, interleaved",
    "apply_rope_half": "`apply_rope`, half",
    "apply_rope_interleaved_out": "`apply_rope`, interleaved, `out=`",
    "apply_rope_half_out": "`apply_rope`, half, `out=`",
    "hf_rotate_half": "HF `apply_rotary_pos_emb` (rotate_half)",
    "meta_complex": "Meta's complex formulation",
    "torchtune": "torchtune `RotaryPositionalEmbeddings`",
    "rotary_embedding_torch": "rotary-embedding-torch `apply_rotary_emb`",
}


def load(path: Path | str | None = None) -> dict:
    """Read a results file (default: the committed ``benchmarks/results.json``)."""
    return json.loads(Path(path or RESULTS).read_text(encoding="utf-8"))


def _seconds(x: float) -> str:
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("µs", 1e-6)):
        if x >= scale:
            return f"{x / scale:.3g} {unit}"
    return f"{x / 1e-9:.3g} ns"


def _timing(t: dict) -> str:
    return f"{_seconds(t['median_s'])} ({_seconds(t['min_s'])}–{_seconds(t['max_s'])})"


def _ratio(r: dict, suffix: str = "×") -> str:
    return f"{r['median']:.3g}{suffix} ({r['min']:.3g}–{r['max']:.3g})"


def _table(header: list[str], rows: list[list[str]], align: str | None = None) -> str:
    align = align or "l" + "r" * (len(header) - 1)
    marks = {"l": ":--", "r": "--:", "c": ":-:"}
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join(marks[a] for a in align) + "|"]
    lines += ["| " + " | ".join(cell.replace("|", "\\|") for cell in row) + " |" for row in rows]
    return "\n".join(lines)


def was_shared(results: dict) -> bool:
    """Whether other jobs were running when the benchmark started (1-min load above 0.5)."""
    load = results["machine"].get("load_average_1_5_15") or [0.0]
    return load[0] > 0.5


def machine(results: dict) -> str:
    """Where, when and how the results were measured."""
    m, s, v = results["machine"], results["settings"], results["versions"]
    load = m.get("load_average_1_5_15") or ["?"]
    after = m.get("load_average_after") or ["?"]
    shared = (
        f"yes: other jobs were running (1-min load average {load[0]} at the start, "
        f"{after[0]} at the end, including this run's own process)"
        if was_shared(results)
        else f"no (1-min load average {load[0]} at the start)"
    )
    libraries = ", ".join(f"{name} {version}" for name, version in v.items() if version)
    rows = [
        ["date (UTC)", m["date_utc"]],
        ["command", f"`{results['command']}`"],
        ["code", _code_state(results.get("git") or {})],
        ["CPU", f"{m['cpu']}, {m['logical_cores']} logical cores, {m['memory_gib']} GiB"],
        ["GPU", results["gpu"]],
        ["OS, Python", f"{m['os']}, Python {m['python']}"],
        ["torch threads", str(s["torch_threads"])],
        ["transparent huge pages", str(m.get("transparent_hugepage"))],
        ["repeats", f"{s['repeats']} interleaved rounds after {s['warmup_calls']} warm-up calls"],
        ["machine shared", shared],
        ["libraries", libraries],
        ["total time", f"{results.get('elapsed_s', '?')} s"],
    ]
    return _table(["measured on", ""], rows, "ll")


def _code_state(git: dict) -> str:
    state = f"commit {git.get('commit') or '?'}"
    if git.get("uncommitted"):
        state += " plus uncommitted changes to " + ", ".join(f"`{f}`" for f in git["uncommitted"])
    return state


def targets(results: dict) -> str:
    """The sinusoidal, accuracy and import targets with the measured value and the verdict."""
    rows = []
    for t in results["targets"]:
        if t["family"] == "rope":
            continue  # shown as a matrix by rope_targets()
        measured = t["measured"]
        shown = f"{measured:.3g}" if isinstance(measured, float) else str(measured)
        rows.append([t["name"], shown, str(t["limit"]), _verdict(t["met"])])
    return _table(["target", "measured", "limit", ""], rows, "lrrl")


def _verdict(met: bool) -> str:
    return "met" if met else "**missed**"


def rope_targets(results: dict, device: str = "cpu") -> str:
    """RoPE targets: each ``apply_rope`` variant against the floor limit and the fastest peer.

    One column per (dtype, shape) case; a cell shows the multiple of the floor (limit 3x in
    float32, 5x in bfloat16) and, in float32, how many times faster than the fastest peer.
    """
    cases = [c for c in results["benchmarks"]["rope"]["cases"] if c["device"] == device]
    header = ["`apply_rope` variant"]
    header += [f"{c['dtype']} {tuple(c['shape'])}, limit {_LIMITS[c['dtype']]:g}×" for c in cases]
    rows = []
    for name in ROPE_VARIANTS:
        if not name.startswith("apply_rope") or not any(name in c["over_floor"] for c in cases):
            continue
        row = [ROPE_VARIANTS[name]]
        for c in cases:
            over = c["over_floor"][name]["median"]
            cell = f"{over:.3g}× floor, {_verdict(over <= _LIMITS[c['dtype']])}"
            peers = c["peer_over_ours"].get(name, {})
            if c["dtype"] == "float32" and peers:
                margin = min(r["median"] for r in peers.values())
                faster = "faster" if margin > 1 else "slower"
                cell += f"; {faster} than the fastest peer ({margin:.3g}×)"
            row.append(cell)
        rows.append(row)
    return _table(header, rows)


_LIMITS = {"float32": 3.0, "bfloat16": 5.0}


def sinusoidal(results: dict) -> str:
    """Table build times per size: median (min–max) of every variant."""
    rows = []
    for case in results["benchmarks"]["sinusoidal"]["cases"]:
        v = case["variants"]
        rows.append(
            [f"({case['num_positions']}, {case['dim']})"]
            + [_timing(v[name]) for name in SINUSOIDAL_VARIANTS]
        )
    return _table(["(positions, dim)", *SINUSOIDAL_VARIANTS.values()], rows)


def sinusoidal_ratios(results: dict) -> str:
    """The speedup over the loop and the cost relative to the float32 formula, per size."""
    rows = []
    for case in results["benchmarks"]["sinusoidal"]["cases"]:
        r = case["ratios"]
        rows.append(
            [
                f"({case['num_positions']}, {case['dim']})",
                _ratio(r["loop_over_sinusoidal"]),
                _ratio(r["sinusoidal_over_float32"]),
                _ratio(r["numpy_over_float32"]),
            ]
        )
    header = [
        "(positions, dim)",
        "speedup of `sinusoidal` over the loop",
        "`sinusoidal` / float32 formula (target ≤ 2× at the two larger sizes)",
        "NumPy float64 / float32 formula",
    ]
    return _table(header, rows)


def accuracy(results: dict) -> str:
    """Max |error| per octave of position for every implementation measured."""
    acc = results["benchmarks"]["accuracy"]
    names = [n for n in ACCURACY_VARIANTS if n in acc["max_abs_error"]]
    rows = []
    for j, octave in enumerate(acc["octaves"]):
        label = f"[{octave['start']:,}, {octave['stop']:,})"
        rows.append([label] + [f"{acc['max_abs_error'][n][j]:.2g}" for n in names])
    return _table(["positions", *(ACCURACY_VARIANTS[n] for n in names)], rows)


def rope(results: dict, device: str = "cpu") -> str:
    """RoPE time as multiples of the copy floor: one column per (dtype, shape) case."""
    cases = [c for c in results["benchmarks"]["rope"]["cases"] if c["device"] == device]
    if not cases:
        return f"No results on {device}."
    header = ["variant"] + [f"{c['dtype']} {tuple(c['shape'])}" for c in cases]
    rows = []
    for name, label in ROPE_VARIANTS.items():
        if any(name in c["over_floor"] for c in cases):
            rows.append(
                [label]
                + [_ratio(c["over_floor"][name]) if name in c["over_floor"] else "–" for c in cases]
            )
    rows.append(
        ["floor time, q and k"] + [_seconds(c["variants"]["copy_floor"]["median_s"]) for c in cases]
    )
    return _table(header, rows)


def import_cost(results: dict) -> str:
    """Import times in a fresh interpreter and the heavy modules the import pulled in."""
    imp = results["benchmarks"]["import"]
    labels = {
        "torch": "`import torch`",
        "posenc_ref": "`import posenc_ref` (includes torch)",
        "posenc_ref_after_torch": "`import posenc_ref` after `import torch`: its own cost",
    }
    rows = [[labels.get(name, name), _timing(t)] for name, t in imp["variants"].items()]
    heavy = ", ".join(imp["heavy_modules_imported"]) or "none"
    rows.append(["heavy optional modules imported by `import posenc_ref`", heavy])
    return _table(["", "time (median, min–max)"], rows, "lr")


_ITEMSIZE = {"float32": 4, "bfloat16": 2, "float16": 2, "float64": 8}


def limits(results: dict, device: str = "cpu") -> str:
    """Profile evidence per RoPE case: page faults and the costliest operators per call.

    For each case, the floor and every ``apply_rope`` variant with its multiple of the floor,
    the minor page faults of one (q, k) call, how many pages q and k occupy, and the operators
    with the most self CPU time (torch.profiler).
    """
    blocks = []
    for case in results["benchmarks"]["rope"]["cases"]:
        if case["device"] != device or not case.get("profile"):
            continue
        elements = 1
        for n in case["shape"]:
            elements *= n
        pages = 2 * elements * _ITEMSIZE[case["dtype"]] // 4096  # q and k, 4 KiB pages
        rows = []
        for name, evidence in case["profile"].items():
            ops = "; ".join(
                f"`{op['op']}` {op['self_ms']:.3g} ms × {op['calls']}"
                for op in evidence["top_ops"][:3]
            )
            rows.append(
                [
                    ROPE_VARIANTS.get(name, name),
                    f"{case['over_floor'][name]['median']:.3g}×",
                    f"{evidence['minor_faults']:,}",
                    ops,
                ]
            )
        title = f"**{case['dtype']} {tuple(case['shape'])}**: q and k together are {pages:,} pages"
        if "clone_floor" in case["over_floor"]:
            clone = case["over_floor"]["clone_floor"]["median"]
            title += f" of 4 KiB; returning fresh copies of them costs {clone:.3g}× the copy floor"
        header = ["variant", "× floor", "page faults per call", "top operators (self time, calls)"]
        blocks.append(title + ".\n\n" + _table(header, rows, "lrrl"))
    return "\n\n".join(blocks) if blocks else "No CPU profile in these results."


def huge_pages(results: dict) -> str:
    """The fresh-memory experiment: 4 KiB pages vs PyTorch's huge-page allocations."""
    experiment = results["benchmarks"]["rope"].get("huge_pages")
    if not experiment:
        return "The huge-page experiment did not run (quick run)."
    labels = {
        "copy": "copy into a buffer",
        "clone": "`clone()` (fresh memory)",
        "apply_rope": "`apply_rope` (fresh result)",
        "apply_rope_out": "`apply_rope(out=)`",
    }
    settings = experiment["settings"]
    names = {"default": "4 KiB pages (default)", "THP_MEM_ALLOC_ENABLE=1": "THP_MEM_ALLOC_ENABLE=1"}
    header = [f"float32 {tuple(experiment['shape'])}", *(names.get(n, n) for n in settings)]
    rows = []
    for variant, label in labels.items():
        row = [label]
        for found in settings.values():
            v = found[variant]
            row.append(f"{v['over_copy']:.3g}× copy, {v['faults_per_call']:,} faults")
        rows.append(row)
    return _table(header, rows)
