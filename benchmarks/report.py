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
    "clone_floor": "clone floor (`q.clone()`, `k.clone()`)",
    "compiled_clone": "compiled clone (`torch.compile(torch.clone)`)",
    "apply_rope_interleaved_out": "`apply_rope`, interleaved, `out=`",
    "apply_rope_half_out": "`apply_rope`, half, `out=`",
    "apply_rope_interleaved": "`apply_rope`, interleaved",
    "apply_rope_half": "`apply_rope`, half",
    "hf_rotate_half": "HF `apply_rotary_pos_emb` (rotate_half)",
    "meta_complex": "Meta's complex formulation",
    "torchtune": "torchtune `RotaryPositionalEmbeddings`",
    "rotary_embedding_torch": "rotary-embedding-torch `apply_rotary_emb`",
    "liger_rope": "liger-kernel `liger_rotary_pos_emb` (half)",
    "flash_attn_rotary_interleaved": "flash-attn `apply_rotary_emb`, interleaved",
    "flash_attn_rotary_half": "flash-attn `apply_rotary_emb`, half",
    "compiled_apply_rope_interleaved": "`torch.compile(apply_rope)`, interleaved",
    "compiled_apply_rope_half": "`torch.compile(apply_rope)`, half",
}
FLOOR_NAMES = {
    "copy_floor": "copy floor",
    "clone_floor": "clone floor",
    "compiled_clone": "compiled clone",
}


def floor_of(name: str) -> str:
    """The floor a RoPE variant is compared with: what the same call costs without rotating.

    ``out=`` calls write preallocated buffers (the copy floor); compiled calls return new tensors
    from a compiled graph (the compiled clone); every other call returns new tensors (the clone
    floor, which pays for faulting in fresh memory).
    """
    if name.endswith("_out"):
        return "copy_floor"
    if name.startswith("compiled_"):
        return "compiled_clone"
    return "clone_floor"


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
        ["clock", s.get("clock", "wall time (time.perf_counter)")],
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


# RoPE target kinds in display order: (results kind, label with its limit).
ROPE_TARGET_KINDS = {
    "out_over_copy": "`out=` / copy floor (limit 1.5× float32, 3× bfloat16)",
    "new_over_clone": "new tensor / clone floor (limit 1.2×)",
    "new_vs_rivals": (
        "new tensor: the faster of HF rotate_half and Meta complex, its time / ours (limit > 1)"
    ),
    "compiled_over_compiled_clone": "`torch.compile` / compiled clone (limit 1.3×)",
    "gpu_bandwidth": "`out=`: fraction of the GPU's copy bandwidth (limit ≥ 0.8, bfloat16)",
}


def _rope_cases(results: dict, device: str) -> list[dict]:
    return [c for c in results["benchmarks"]["rope"]["cases"] if c["device"] == device]


def _case_label(case: dict) -> str:
    return f"{case['dtype']} {tuple(case['shape'])}"


def rope_targets(results: dict, device: str = "cpu") -> str:
    """Issue 11's RoPE targets as a matrix: one row per target and layout, one column per case.

    Each cell is the measured median (against the floor from the same rounds) and the verdict.
    """
    cases = _rope_cases(results, device)
    found = [t for t in results["benchmarks"]["rope"]["targets"] if t["device"] == device]
    if not cases or not found:
        return f"No {device} targets in these results."
    rows = []
    for kind, label in ROPE_TARGET_KINDS.items():
        for layout in ("interleaved", "half"):
            cells = []
            for case in cases:
                hit = [
                    t
                    for t in found
                    if t["kind"] == kind
                    and t["layout"] == layout
                    and t["dtype"] == case["dtype"]
                    and t["shape"] == case["shape"]
                ]
                if not hit:
                    cells.append("–")
                    continue
                t = hit[0]
                unit = "" if kind == "gpu_bandwidth" else "×"
                # near 1 the verdict turns on the third digit: show it
                shown = (
                    f"{t['measured']:.4g}" if kind == "new_vs_rivals" else f"{t['measured']:.3g}"
                )
                cells.append(f"{shown}{unit} {_verdict(t['met'])}")
            if any(cell != "–" for cell in cells):
                rows.append([f"{label}, {layout}", *cells])
    header = ["target", *(_case_label(c) for c in cases)]
    return _table(header, rows)


def rope_target_count(results: dict, device: str = "cpu") -> str:
    """One sentence: how many RoPE targets were met on this device."""
    found = [t for t in results["benchmarks"]["rope"]["targets"] if t["device"] == device]
    met = sum(t["met"] for t in found)
    where = "CPU" if device == "cpu" else "GPU" if device.startswith("cuda") else device
    return f"{met} of {len(found)} RoPE targets met on the {where}."


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
    """Every RoPE variant against its own floor, one column per (dtype, shape) case.

    ``out=`` calls are divided by the copy floor, calls returning new tensors by the clone
    floor, compiled calls by the compiled clone, each round by round within the same rounds
    (median, min–max). The floors' own ratios to the copy floor and the copy time close the table.
    """
    cases = _rope_cases(results, device)
    if not cases:
        return f"No results on {device}."
    header = ["variant", "compared with", *(_case_label(c) for c in cases)]
    rows = []
    for name, label in ROPE_VARIANTS.items():
        if name in FLOOR_NAMES or not any(name in c["variants"] for c in cases):
            continue
        floor = floor_of(name)
        row = [label, FLOOR_NAMES[floor]]
        for c in cases:
            ratios = {
                "copy_floor": c["over_floor"],
                "clone_floor": c.get("over_clone", {}),
                "compiled_clone": c.get("over_compiled_clone", {}),
            }[floor]
            row.append(_ratio(ratios[name]) if name in ratios else "–")
        rows.append(row)
    for floor in ("clone_floor", "compiled_clone"):
        if any(floor in c["over_floor"] for c in cases):
            row = [f"{FLOOR_NAMES[floor]} itself", "copy floor"]
            row += [
                _ratio(c["over_floor"][floor]) if floor in c["over_floor"] else "–" for c in cases
            ]
            rows.append(row)
    rows.append(
        ["copy floor time, q and k", ""]
        + [_seconds(c["variants"]["copy_floor"]["median_s"]) for c in cases]
    )
    if all("load_average_1min" in c for c in cases):
        rows.append(
            ["1-min load average at the end of the case", ""]
            + [f"{c['load_average_1min']:.2f}" for c in cases]
        )
    return _table(header, rows, "ll" + "r" * len(cases))


def compiled(results: dict, device: str = "cpu") -> str:
    """What ``torch.compile`` generated for each case, beside its time over the compiled clone."""
    rows = []
    for case in _rope_cases(results, device):
        for name, evidence in case.get("compiled", {}).items():
            if name == "compiled_clone":
                continue
            if "error" in evidence:
                rows.append(
                    [
                        _case_label(case),
                        name.rsplit("_", 1)[-1],
                        "did not compile",
                        "",
                        "",
                        "",
                        evidence["error"],
                    ]
                )
                continue
            over = case.get("over_compiled_clone", {})
            simd = {True: "yes", False: "**no** (scalar loop)", None: "–"}[evidence["vectorized"]]
            one_row = over.get(f"{name}_one_row")
            rows.append(
                [
                    _case_label(case),
                    name.rsplit("_", 1)[-1],  # the layout
                    _ratio(over[name]) if name in over else "–",
                    _ratio(one_row) if one_row else "–",
                    str(evidence["kernels"]),
                    simd,
                    f"{evidence['compile_s']:.3g} s",
                ]
            )
    if not rows:
        return f"No compiled variants on {device} in these results."
    header = [
        "case",
        "`torch.compile(apply_rope)`, layout",
        "/ compiled clone",
        "with a one-position table",
        "kernels",
        "SIMD vectors",
        "first call (compiling or cached)",
    ]
    return _table(header, rows, "llrrrll")


def import_cost(results: dict) -> str:
    """Import times in a fresh interpreter and the heavy modules the import pulled in."""
    imp = results["benchmarks"]["import"]
    labels = {
        "torch": "`import torch`",
        "posenc_ref": "`import posenc_ref` (neither torch nor NumPy)",
        "posenc_ref_after_torch": "`import posenc_ref.rope` after `import torch`: the tensor "
        "modules' own cost",
    }
    rows = [[labels.get(name, name), _timing(t)] for name, t in imp["variants"].items()]
    heavy = ", ".join(imp["heavy_modules_imported"]) or "none"
    rows.append(["heavy modules imported by `import posenc_ref`", heavy])
    table = _table(["", "time (median, min–max)"], rows, "lr")
    measured = imp.get("measured")
    if not measured:
        return table
    load = measured["load_average_1_5_15"] or ["?"]
    after = measured["load_average_after"] or ["?"]
    return (
        f"{table}\n\nMeasured {measured['date_utc']}, "
        f"{imp['variants']['torch']['repeats']} interleaved rounds at niceness "
        f"{measured['nice']}; the 1-min load average was {load[0]} before and {after[0]} after."
    )


def load_cli(path: Path | str | None = None) -> dict:
    """The command line's results (``python -m benchmarks.cli``: ``results_cli.json``)."""
    path = Path(path) if path else Path(__file__).with_name("results_cli.json")
    return json.loads(path.read_text(encoding="utf-8"))


def cli(results: dict) -> str:
    """Each command against the bare interpreter of the same run, its target, what it imported."""
    limits = {t["name"].split(":")[0]: t for t in results["targets"]}
    rows = []
    for name, v in results["variants"].items():
        target = limits.get(name)
        verdict = (
            f"≤ {target['limit']:g} s: {_verdict(target['met'])}" if target else "the baseline"
        )
        rows.append([
            f"`{name}`", f"{v['median_s']:.3f} ({v['min_s']:.3f}–{v['max_s']:.3f})",
            f"{v['over_bare_s']:+.3f}", f"{v['ratio']:.2f}×", verdict,
            ", ".join(v["imports"]) or "neither",
        ])  # fmt: skip
    header = ["command", "s (median, min–max)", "s over bare", "ratio", "target", "torch, NumPy"]
    return _table(header, rows, "lrrrll")


def cli_machine(results: dict) -> str:
    """Where and when the command line was measured, with the load around the run."""
    m = results["machine"]
    return (
        f"Measured {m['date_utc']} on {m['cpu']} ({m['logical_cores']} logical cores, "
        f"{m['memory_gib']} GiB), Python {m['python']}, with `{results['command']}`: "
        f"{results['variants']['python -c pass']['repeats']} interleaved rounds. The 1-min load "
        f"average was {m['load_average_1_5_15'][0]} at the start and "
        f"{m['load_average_after'][0]} at the end (the machine is shared: other jobs ran)."
    )


def verdicts(results: dict) -> str:
    """The conformance kit's verdict times (CPU and wall), slowest first, or why there are none."""
    family = results["benchmarks"].get("verdicts")
    if family is None:
        return (
            "*Not in the committed results yet: `python -m benchmarks.run --only verdicts` "
            "prints them.*"
        )
    rows = [
        [case["name"], case["verdict"], f"{case['cpu_s']:.2f}", f"{case['wall_s']:.2f}"]
        for case in sorted(family["cases"], key=lambda c: -c["cpu_s"])
    ]
    load = ", ".join(str(x) for x in family["load_average_before"])
    table = _table(["case", "verdict", "CPU s", "wall s"], rows, "llrr")
    text = f"{table}\n\nLoad average (1, 5, 15 min) when the run started: {load}."
    run = family.get("run")
    if run is not None:  # measured apart from the other families (benchmarks.run --merge)
        text += (
            f" Measured on its own on {run['date']} (`{run['command']}`, commit "
            f"{run['git']['commit']}), on the machine named above."
        )
    return text


_ITEMSIZE = {"float32": 4, "bfloat16": 2, "float16": 2, "float64": 8}


def limits(results: dict, device: str = "cpu") -> str:
    """Profile evidence per RoPE case: where each ``apply_rope`` call's time goes.

    For each case and each of our variants: its multiple of its own floor, the same call's extra
    time over that floor (a new tensor's extra over a clone against ``out=``'s extra over a
    copy: equal when the allocation costs the rotation nothing more than it costs a clone), the
    minor page faults of one (q, k) call, and the operators with the most self time expressed in
    copies of q and k (the operator's self time over the copy floor's, both from the same
    ``torch.profiler`` session, whose overhead makes the absolute times larger than the timings).
    """
    blocks = []
    for case in _rope_cases(results, device):
        profile = case.get("profile")
        if not profile:
            continue
        copy_ms = profile["copy_floor"]["total_ms"]
        rows = []
        for name, evidence in profile.items():
            if name in FLOOR_NAMES:
                continue
            floor = floor_of(name)
            ratios = case["over_floor"] if floor == "copy_floor" else case.get("over_clone", {})
            extra = case["variants"][name]["median_s"] - case["variants"][floor]["median_s"]
            ops = "; ".join(
                f"`{op['op']}` {op['self_ms'] / copy_ms:.2g} × {op['calls']}"
                for op in evidence["ops"][:4]
            )
            rows.append(
                [
                    ROPE_VARIANTS.get(name, name),
                    f"{ratios[name]['median']:.3g}× {FLOOR_NAMES[floor]}",
                    _seconds(extra) if extra > 0 else f"−{_seconds(-extra)}",
                    f"{evidence['minor_faults']:,}",
                    f"{evidence['total_ms'] / copy_ms:.2g}",
                    ops,
                ]
            )
        elements = 1
        for n in case["shape"]:
            elements *= n
        pages = 2 * elements * _ITEMSIZE[case["dtype"]] // 4096  # q and k, 4 KiB pages
        clone = case["over_floor"]["clone_floor"]["median"]
        title = (
            f"**{_case_label(case)}**: q and k are {pages:,} pages of 4 KiB; a clone of them costs "
            f"{clone:.3g}× the copy floor and faults "
            f"{profile['clone_floor']['minor_faults']:,} pages"
        )
        header = [
            "variant",
            "× its floor",
            "extra over its floor",
            "page faults per call",
            "operators' self time, in copies",
            "top operators: copies × calls",
        ]
        blocks.append(title + ".\n\n" + _table(header, rows, "lrrrrl"))
    return "\n\n".join(blocks) if blocks else "No CPU profile in these results."


def gpu(results: dict) -> str:
    """The GPU rows: measured where the results hold CUDA cases, else empty with the reason."""
    cases = _rope_cases(results, "cuda")
    if cases:
        rows = []
        for case in cases:
            for name, bw in case["bandwidth"].items():
                if name in ("clone_floor", "compiled_clone"):
                    continue
                rows.append(
                    [
                        _case_label(case),
                        ROPE_VARIANTS.get(name, name),
                        f"{bw['gb_per_s']:.3g} GB/s",
                        f"{bw['fraction_of_copy']:.2f}",
                    ]
                )
        header = ["case", "variant", "bytes read + written per second", "fraction of the copy's"]
        return (
            f"Measured on {results['gpu']}.\n\n"
            + rope_targets(results, "cuda")
            + "\n\n"
            + _table(header, rows, "llrr")
        )
    header = ["target", *(_case_label(c) for c in _rope_cases(results, "cpu"))]
    rows = [
        [ROPE_TARGET_KINDS["gpu_bandwidth"] + f", {layout}", *["–"] * (len(header) - 1)]
        for layout in ("interleaved", "half")
    ] + [
        [
            ROPE_TARGET_KINDS["compiled_over_compiled_clone"] + f" on the GPU, {layout}",
            *["–"] * (len(header) - 1),
        ]
        for layout in ("interleaved", "half")
    ]
    return (
        f"**Not measured: {results['gpu']}.** The machine that produced these results has no "
        "GPU, so these rows stay empty. Where "
        "`torch.cuda.is_available()`, the same `make bench` also runs every variant on the GPU "
        "(synchronizing around each timed sample), adds liger-kernel's and flash-attn's rotary "
        "kernels when they import, and fills these rows from the GPU's own copy floor.\n\n"
        + _table(header, rows)
    )


def pass_costs(results: dict) -> str:
    """The cost of one operator pass over a cache-resident block, in copies from memory."""
    found = results["benchmarks"]["rope"].get("pass_costs")
    if not found:
        return "The pass-cost measurement did not run (quick run)."
    rows = [
        [
            f"`{name}`" if name != "copy_from_memory" else "copy of all of x, from memory",
            f"{found['per_element_ns'][name]:.3g} ns",
            f"{found['in_copies'][name]:.2g}",
        ]
        for name in found["in_copies"]
    ]
    header = [
        f"one pass over a block {tuple(found['shape'])} in the cache (float32)",
        "per element",
        "in copies from memory",
    ]
    return _table(header, rows, "lrr")


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
