"""RoPE application on q and k with precomputed tables, against floors measured in the same rounds.

Each variant rotates a query and a key tensor of the same shape ``(batch, heads, seq_len,
head_dim)`` (torchtune and flash-attn get the same data in their native ``(batch, seq_len,
heads, head_dim)`` layout), with its cos/sin (or complex, or angle) table computed once outside
the timing. Three floors, each compared only with the calls it bounds:

- ``copy_floor``: copy q and k into preallocated buffers, the least any rotation that reads and
  writes every element can cost: the floor of the ``out=`` variants;
- ``clone_floor``: ``q.clone()`` and ``k.clone()``, the least a call returning new tensors can
  cost (fresh memory is faulted in on first write): the floor of the new-tensor variants;
- ``compiled_clone``: ``torch.compile``'d clone: the floor of the compiled variants.

Ours: :func:`posenc_ref.rope.apply_rope` in both layouts returning a new tensor
(``apply_rope_<layout>``), writing into ``out=`` buffers (``..._out``), and compiled with
``torch.compile(apply_rope, fullgraph=True)`` (``compiled_apply_rope_<layout>``). Peers:

- ``hf_rotate_half``: HF transformers' ``apply_rotary_pos_emb`` (tables and rotation in the
  activation dtype, as HF does);
- ``meta_complex``: Meta's complex-number formulation (:func:`benchmarks.baselines.complex_rope`);
- ``torchtune``: ``RotaryPositionalEmbeddings`` forward;
- ``rotary_embedding_torch``: ``apply_rotary_emb`` with precomputed angles;
- on a GPU, when they import: ``liger_rope`` (liger-kernel's Triton RoPE, half layout) and
  ``flash_attn_rotary`` (flash-attn's rotary kernel, both layouts).

Every variant's output is checked against ``apply_rope`` in the matching layout before timing.
On the CPU the same run records where the time goes (:func:`_profile`) and what the compiler
generated (:func:`_compiled_variant`); on a GPU, bandwidth as a fraction of its copy's.
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import time
from unittest import mock

import torch

from posenc_ref import inv_freq

from .baselines import complex_rope, complex_rope_table
from .harness import _sig, cpu_clock, paired_ratio, time_interleaved
from .peers import (
    flash_attn_rotary,
    hf_apply_rotary_pos_emb,
    hf_rotary_cos_sin,
    liger_rope,
    lucidrains_rope,
    torchtune_rope,
)

SHAPES = [(1, 32, 4096, 128), (1, 8, 16384, 64)]
# --quick (the tests' run) times nothing worth keeping, so its shape is free: it is the shape of
# tests/test_rope_compile.py's inputs, whose compiled apply_rope graphs (both layouts, both
# dtypes) inductor's on-disk FX graph cache then serves to this run, or the reverse, instead of
# compiling them twice in one test session (~2.5 CPU seconds a graph).
QUICK_SHAPES = [(2, 3, 12, 16)]
DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16}
BASE = 10000.0
LAYOUTS = ("interleaved", "half")
FLOORS = ("copy_floor", "clone_floor", "compiled_clone")
PEERS = (
    "hf_rotate_half",
    "meta_complex",
    "torchtune",
    "rotary_embedding_torch",
    "liger_rope",
    "flash_attn_rotary",
)
# A new tensor from apply_rope must beat these two formulations (issue 11).
NEW_TENSOR_RIVALS = ("hf_rotate_half", "meta_complex")
# Limits: out= over the copy floor (per dtype), a new tensor over the clone floor, compiled over
# the compiled clone, and on a GPU the fraction of its copy bandwidth reached in bfloat16.
OUT_OVER_COPY = {"float32": 1.5, "bfloat16": 3.0}
NEW_OVER_CLONE = 1.2
COMPILED_OVER_COMPILED_CLONE = 1.3
GPU_BANDWIDTH_FRACTION = {"bfloat16": 0.8}


def _rope_module():
    try:
        from posenc_ref import rope
    except ImportError:
        return None
    return rope


def _compiled_variant(function, args: tuple, kwargs: dict) -> tuple:
    """Compile ``function`` (fullgraph), call it once, and describe what inductor generated.

    Returns
    -------
    tuple
        ``(compiled, evidence)``: the compiled function (``None`` when compiling fails) and
        ``{"kernels": generated kernels, "vectorized": whether a CPU kernel uses SIMD vectors
        (None on a GPU), "compile_s": seconds}`` or ``{"error": ...}``.
    """
    from torch._inductor.graph import GraphLowering

    compiled = torch.compile(function, fullgraph=True)
    sources = []
    start = time.perf_counter()
    # What torch._inductor.utils.run_and_get_code does, less its torch._dynamo.reset(): that
    # reset threw away the graphs compiled just before in this case (the compiled clone, the
    # other layout), which were then traced again at their next call. run() resets once per
    # case, so each call here compiles (inductor reports the code on an FX graph cache hit too).
    try:
        with mock.patch.object(GraphLowering, "save_output_code", sources.append):
            compiled(*args, **kwargs)
    except Exception as exc:  # noqa: BLE001 (no compiler here: recorded, not fatal)
        return None, {"error": f"{type(exc).__name__}: {str(exc)[:300]}"}
    code = "\n".join(sources)
    cpu = "cpp_pybinding(" in code
    evidence = {
        "kernels": code.count("cpp_pybinding(") + code.count("async_compile.triton("),
        "vectorized": ("at::vec::" in code) if cpu else None,
        "compile_s": round(time.perf_counter() - start, 1),
    }
    return compiled, evidence


def _variants(shape, dtype, device):
    """Build inputs and the variants.

    Returns
    -------
    tuple
        ``(calls, checks, compiled, failed)``: name -> no-argument call; name -> relative
        difference from ``apply_rope`` in the matching layout; compiled variant name ->
        evidence; name -> why a peer that failed its first call was left out.
    """
    rope = _rope_module()
    batch, heads, seq_len, head_dim = shape
    generator = torch.Generator(device="cpu").manual_seed(0)
    q = torch.randn(shape, generator=generator).to(device=device, dtype=dtype)
    k = torch.randn(shape, generator=generator).to(device=device, dtype=dtype)
    positions = torch.arange(seq_len, device=device)
    frequencies = inv_freq(head_dim, BASE)
    q_buf, k_buf = torch.empty_like(q), torch.empty_like(k)
    q_out, k_out = torch.empty_like(q), torch.empty_like(k)

    calls = {
        "copy_floor": lambda: (q_buf.copy_(q), k_buf.copy_(k)),
        # The least a function returning new tensors can cost: fresh memory is faulted in page
        # by page on first write, which on a CPU can cost more than the copy itself.
        "clone_floor": lambda: (q.clone(), k.clone()),
    }
    as_bhsd = {}
    layouts = {"hf_rotate_half": "half", "liger_rope": "half"}
    references, compiled = {}, {}
    clone, compiled["compiled_clone"] = _compiled_variant(torch.clone, (q,), {})
    if clone is not None:
        calls["compiled_clone"] = lambda: (clone(q), clone(k))
    if rope is not None:
        cos, sin = rope.rope_cos_sin(positions, frequencies)  # (L, d/2) float32, both layouts
        for layout in LAYOUTS:

            def fresh(cos=cos, sin=sin, layout=layout):
                return (
                    rope.apply_rope(q, cos, sin, layout=layout),
                    rope.apply_rope(k, cos, sin, layout=layout),
                )

            def into(cos=cos, sin=sin, layout=layout):
                return (
                    rope.apply_rope(q, cos, sin, layout=layout, out=q_out),
                    rope.apply_rope(k, cos, sin, layout=layout, out=k_out),
                )

            calls[f"apply_rope_{layout}"] = fresh
            calls[f"apply_rope_{layout}_out"] = into
            references[layout] = fresh()
            if clone is not None:  # only where a compiled clone gives the floor
                name = f"compiled_apply_rope_{layout}"
                function, compiled[name] = _compiled_variant(
                    rope.apply_rope, (q, cos, sin), {"layout": layout}
                )
                if function is not None:
                    calls[name] = lambda f=function, c=cos, s=sin, lay=layout: (
                        f(q, c, s, layout=lay),
                        f(k, c, s, layout=lay),
                    )
                    layouts[name] = layout
                    # Diagnostic, not a rotation to compare: a second graph compiled for a
                    # one-position table (broadcast, so it stays cached). The difference from the
                    # full table is what re-reading the table for every head costs.
                    one_row = (cos[:1].clone(), sin[:1].clone())
                    calls[f"{name}_one_row"] = lambda f=function, t=one_row, lay=layout: (
                        f(q, *t, layout=lay),
                        f(k, *t, layout=lay),
                    )
    hf_apply = hf_apply_rotary_pos_emb()
    if hf_apply is not None:
        cos_h, sin_h = hf_rotary_cos_sin(positions, head_dim, BASE, dtype=dtype)  # (L, d)
        calls["hf_rotate_half"] = lambda: hf_apply(q, k, cos_h[None], sin_h[None])
    rotations = complex_rope_table(seq_len, head_dim, BASE).to(device)
    calls["meta_complex"] = lambda: (complex_rope(q, rotations), complex_rope(k, rotations))
    q_bshd, k_bshd = q.transpose(1, 2).contiguous(), k.transpose(1, 2).contiguous()
    module = torchtune_rope(head_dim, seq_len, BASE, device)
    if module is not None:
        calls["torchtune"] = lambda: (module(q_bshd), module(k_bshd))
        as_bhsd["torchtune"] = lambda result: tuple(t.transpose(1, 2) for t in result)
    lucidrains = lucidrains_rope(head_dim, seq_len, BASE, device)
    if lucidrains is not None:
        apply_emb, angles = lucidrains
        calls["rotary_embedding_torch"] = lambda: (apply_emb(angles, q), apply_emb(angles, k))
    if device.type == "cuda":
        liger = liger_rope()
        if liger is not None:
            cos_h, sin_h = hf_rotary_cos_sin(positions, head_dim, BASE, dtype=dtype)
            calls["liger_rope"] = lambda: liger(q, k, cos_h[None], sin_h[None])
        flash = flash_attn_rotary()
        if flash is not None and rope is not None:
            cos_f, sin_f = (t.to(dtype) for t in rope.rope_cos_sin(positions, frequencies))
            for layout in LAYOUTS:
                name = f"flash_attn_rotary_{layout}"
                interleaved = layout == "interleaved"
                calls[name] = lambda i=interleaved: (
                    flash(q_bshd, cos_f, sin_f, interleaved=i),
                    flash(k_bshd, cos_f, sin_f, interleaved=i),
                )
                as_bhsd[name] = lambda result: tuple(t.transpose(1, 2) for t in result)
                layouts[name] = layout
    checks, failed = {}, {}
    for name, call in list(calls.items()):
        if name in FLOORS or name.endswith("_one_row"):
            continue
        layout = layouts.get(name, "half" if "_half" in name else "interleaved")
        if layout not in references:
            continue
        try:
            got = as_bhsd.get(name, lambda result: result)(call())
        except Exception as exc:  # noqa: BLE001 (a peer that fails here is left out, with why)
            del calls[name]
            failed[name] = f"{type(exc).__name__}: {str(exc)[:200]}"
            continue
        want = references[layout]
        scale = max(float(w.float().abs().max()) for w in want)
        diff = max(
            float((g.float() - w.float()).abs().max()) for g, w in zip(got, want, strict=True)
        )
        checks[name] = diff / scale
    return calls, checks, compiled, failed


def _profile(calls: dict, names: list[str], calls_per_name: int = 3) -> dict:
    """Where the time of each named variant goes, on the CPU: evidence for the page.

    Two measurements per variant, over ``calls_per_name`` calls after one warm-up call:

    - ``minor_faults``: page faults per call (``getrusage``). A freshly allocated large tensor
      is mapped page by page on first touch, so this counts the fresh memory a call writes;
    - ``ops``: every operator with its self CPU time per call (``torch.profiler``), and
      ``total_ms``, their sum. Dividing by the copy floor's total in the same profile gives each
      operator's cost in copies of q and k: the passes over memory the variant pays for.

    Returns
    -------
    dict
        ``{name: {"minor_faults", "total_ms", "ops": [{"op", "self_ms", "calls"}]}}``.
    """
    from torch.profiler import ProfilerActivity, profile

    found = {}
    for name in names:
        call = calls[name]
        call()
        before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
        for _ in range(calls_per_name):
            call()
        faults = (resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before) / calls_per_name
        with profile(activities=[ProfilerActivity.CPU]) as prof:
            for _ in range(calls_per_name):
                call()
        ops = sorted(prof.key_averages(), key=lambda e: e.self_cpu_time_total, reverse=True)
        total = sum(e.self_cpu_time_total for e in ops) / 1e3 / calls_per_name
        found[name] = {
            "minor_faults": round(faults),
            "total_ms": _sig(total, 3),
            "ops": [
                {
                    "op": e.key,
                    "self_ms": _sig(e.self_cpu_time_total / 1e3 / calls_per_name, 3),
                    "calls": e.count // calls_per_name,
                }
                for e in ops[:6]
                if e.self_cpu_time_total / 1e3 / calls_per_name >= 0.01 * total
            ],
        }
    return found


def pass_costs(repeats: int = 15) -> dict:
    """The cost of one operator pass over a cache-resident block, in copies from memory.

    A roofline for the eager kernels: each operator the CPU path runs on a block of
    ``posenc_ref._rotate.BLOCK_ELEMENTS`` elements of x (shaped like the first benchmark shape's
    block: all heads, a few positions), timed on the same block over and over so that it stays
    in the cache, per element; divided by the per-element time of copying all of x
    (64 MiB, from memory), in the same interleaved rounds.

    Returns
    -------
    dict
        ``{"block_elements", "shape", "per_element_ns": {name: ns}, "in_copies": {name: ratio}}``
        where ``in_copies`` divides by ``copy_from_memory``.
    """
    from posenc_ref import _rotate

    batch, heads, seq_len, head_dim = SHAPES[0]
    h = head_dim // 2
    rows = max(1, _rotate.BLOCK_ELEMENTS // (batch * heads * head_dim))
    x = torch.randn(SHAPES[0])
    big_out = torch.empty_like(x)
    block, out = x[..., :rows, :], torch.empty_like(big_out[..., :rows, :])
    table = torch.randn(rows, head_dim)
    half_table = table[:, :h]
    rotation = torch.complex(half_table, half_table)
    x_bf16, out_bf16 = block.bfloat16(), out.bfloat16()

    def as_complex(t):
        return torch.view_as_complex(t.unflatten(-1, (-1, 2)))

    ops = {
        "copy_from_memory": (lambda: big_out.copy_(x), x.numel()),
        "copy": (lambda: out.copy_(block), block.numel()),
        "mul (full width)": (lambda: torch.mul(block, table, out=out), block.numel()),
        "addcmul_ (half width)": (
            lambda: out[..., :h].addcmul_(block[..., h:], half_table),
            block.numel() // 2,
        ),
        "complex mul": (
            lambda: torch.mul(as_complex(block), rotation, out=as_complex(out)),
            block.numel(),
        ),
        "bfloat16 -> float32": (lambda: out.copy_(x_bf16), block.numel()),
        "float32 -> bfloat16": (lambda: out_bf16.copy_(block), block.numel()),
    }
    timings = time_interleaved(
        {name: call for name, (call, _) in ops.items()}, repeats=repeats, clock=cpu_clock()
    )
    per_element = {name: timings[name].median / n for name, (_, n) in ops.items()}
    memory = per_element["copy_from_memory"]
    return {
        "block_elements": block.numel(),
        "shape": list(block.shape),
        "per_element_ns": {name: _sig(t * 1e9, 3) for name, t in per_element.items()},
        "in_copies": {name: _sig(t / memory, 3) for name, t in per_element.items()},
    }


# Child process for huge_pages_experiment: PyTorch reads THP_MEM_ALLOC_ENABLE once, at its first
# large CPU allocation, so each setting needs its own interpreter.
_HUGE_PAGES_CHILD = """
import json, resource, statistics, sys, time  # thread_time: see benchmarks.harness.CPU_CLOCK
import torch
from posenc_ref import inv_freq
from posenc_ref.rope import apply_rope, rope_cos_sin
torch.set_num_threads(1)
shape, repeats = json.loads(sys.argv[1]), int(sys.argv[2])
q = torch.randn(shape)
buffer = torch.empty_like(q)
cos, sin = rope_cos_sin(torch.arange(shape[-2]), inv_freq(shape[-1]))
calls = {
    "copy": lambda: buffer.copy_(q),
    "clone": lambda: q.clone(),
    "apply_rope": lambda: apply_rope(q, cos, sin),
    "apply_rope_out": lambda: apply_rope(q, cos, sin, out=buffer),
}
found = {name: {"samples_s": [], "faults": 0} for name in calls}
with torch.inference_mode():
    for call in calls.values():
        call()
    for _ in range(repeats):
        for name, call in calls.items():
            before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
            start = time.thread_time()
            call()
            found[name]["samples_s"].append(time.thread_time() - start)
            found[name]["faults"] += resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before
print(json.dumps({name: {"median_s": statistics.median(f["samples_s"]),
                         "faults_per_call": f["faults"] / repeats} for name, f in found.items()}))
"""


def huge_pages_experiment(shape=(1, 32, 4096, 128), repeats: int = 15) -> dict:
    """Fresh-output cost with 4 KiB pages vs PyTorch's huge-page allocations (CPU, float32).

    Runs one query tensor through copy, clone, ``apply_rope`` and ``apply_rope(out=)`` in two
    child interpreters: one with the environment as it is, one with
    ``THP_MEM_ALLOC_ENABLE=1``, which makes PyTorch ask the kernel for transparent huge pages
    for large CPU allocations (2 MiB pages: 512 times fewer first-touch faults).

    Returns
    -------
    dict
        ``{"shape", "repeats", "settings": {"default" | "THP_MEM_ALLOC_ENABLE=1":
        {variant: {"median_s", "faults_per_call", "over_copy"}}}}``.
    """
    settings = {}
    for label, extra in (
        ("default", {}),
        ("THP_MEM_ALLOC_ENABLE=1", {"THP_MEM_ALLOC_ENABLE": "1"}),
    ):
        env = {k: v for k, v in os.environ.items() if k != "THP_MEM_ALLOC_ENABLE"} | extra
        done = subprocess.run(
            [sys.executable, "-c", _HUGE_PAGES_CHILD, json.dumps(list(shape)), str(repeats)],
            capture_output=True,
            text=True,
            check=True,
            env=env,
            timeout=300,
        )
        found = json.loads(done.stdout.strip().splitlines()[-1])
        copy = found["copy"]["median_s"]
        settings[label] = {
            name: {
                "median_s": _sig(v["median_s"]),
                "faults_per_call": round(v["faults_per_call"]),
                "over_copy": _sig(v["median_s"] / copy, 3),
            }
            for name, v in found.items()
        }
    return {"shape": list(shape), "repeats": repeats, "settings": settings}


def _target(kind, name, case, measured, limit, met, layout=None) -> dict:
    shape = tuple(case["shape"])
    return {
        "name": f"{name}, {case['device']} {case['dtype']} {shape}",
        "kind": kind,
        "device": case["device"],
        "dtype": case["dtype"],
        "shape": list(shape),
        "layout": layout,
        "measured": measured,
        "limit": limit,
        "met": met,
    }


def _targets(case: dict) -> list[dict]:
    """Issue 11's targets for one case, each against its own floor from the same rounds."""
    found = []
    over = case["over_floor"]
    dtype = case["dtype"]
    for layout in LAYOUTS:
        new, out = f"apply_rope_{layout}", f"apply_rope_{layout}_out"
        compiled = f"compiled_apply_rope_{layout}"
        if case["device"] == "cpu" and out in over:
            limit = OUT_OVER_COPY[dtype]
            measured = over[out]["median"]
            found.append(
                _target(
                    "out_over_copy",
                    f"{out} / copy floor",
                    case,
                    measured,
                    limit,
                    measured <= limit,
                    layout,
                )
            )
        if case["device"] == "cpu" and new in case["over_clone"]:
            measured = case["over_clone"][new]["median"]
            found.append(
                _target(
                    "new_over_clone",
                    f"{new} / clone floor",
                    case,
                    measured,
                    NEW_OVER_CLONE,
                    measured <= NEW_OVER_CLONE,
                    layout,
                )
            )
            rivals = [r for r in NEW_TENSOR_RIVALS if r in case["peer_over_ours"].get(new, {})]
            if rivals:
                margin = min(case["peer_over_ours"][new][r]["median"] for r in rivals)
                found.append(
                    _target(
                        "new_vs_rivals",
                        f"{new} faster than HF rotate_half and Meta complex "
                        "(the faster rival's time / ours)",
                        case,
                        margin,
                        "> 1",
                        margin > 1,
                        layout,
                    )
                )
        if compiled in case["over_compiled_clone"]:
            measured = case["over_compiled_clone"][compiled]["median"]
            found.append(
                _target(
                    "compiled_over_compiled_clone",
                    f"{compiled} / compiled clone",
                    case,
                    measured,
                    COMPILED_OVER_COMPILED_CLONE,
                    measured <= COMPILED_OVER_COMPILED_CLONE,
                    layout,
                )
            )
        if case["device"] != "cpu" and dtype in GPU_BANDWIDTH_FRACTION and out in over:
            fraction = _sig(1 / over[out]["median"], 3)
            limit = GPU_BANDWIDTH_FRACTION[dtype]
            found.append(
                _target(
                    "gpu_bandwidth",
                    f"{out}: fraction of the copy bandwidth",
                    case,
                    fraction,
                    f">= {limit}",
                    fraction >= limit,
                    layout,
                )
            )
    return found


def _bandwidth(case: dict, shape, dtype) -> dict:
    """Bytes read and written per second for every variant, and as a fraction of the copy's."""
    elements = 1
    for n in shape:
        elements *= n
    moved = 2 * 2 * elements * torch.empty(0, dtype=dtype).element_size()  # q, k; read + write
    return {
        name: {
            "gb_per_s": _sig(moved / timing["median_s"] / 1e9, 3),
            "fraction_of_copy": _sig(1 / case["over_floor"][name]["median"], 3),
        }
        for name, timing in case["variants"].items()
    }


def run(*, quick: bool = False, repeats: int = 15, devices: list[str] | None = None) -> dict:
    """Time every variant for each device, shape and dtype.

    Parameters
    ----------
    devices
        Defaults to ``["cpu"]`` plus ``"cuda"`` when torch sees a GPU.

    Returns
    -------
    dict
        ``{"description", "devices", "gpu", "cases", "targets", "huge_pages"}``. Each case:
        ``{"device", "shape", "dtype", "variants", "over_floor" (every variant / copy floor),
        "over_clone" (new-tensor variants / clone floor), "over_compiled_clone" (compiled
        variants / compiled clone), "peer_over_ours", "check_rel_diff", "compiled" (what
        inductor generated), "profile" (CPU), "bandwidth" (GPU)}``.
    """
    if devices is None:
        devices = ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])
    cases, targets = [], []
    for device in devices:
        sync = torch.cuda.synchronize if device.startswith("cuda") else None
        clock = time.perf_counter if sync else cpu_clock()  # GPU work: wall time
        for shape in QUICK_SHAPES if quick else SHAPES:
            for dtype_name, dtype in DTYPES.items():
                torch._dynamo.reset()  # each case compiles afresh (no cache-size fallbacks)
                calls, checks, compiled, failed = _variants(shape, dtype, torch.device(device))
                timings = time_interleaved(calls, repeats=repeats, sync=sync, clock=clock)
                over_floor = {n: paired_ratio(t, timings["copy_floor"]) for n, t in timings.items()}
                new = [f"apply_rope_{layout}" for layout in LAYOUTS]
                over_clone = {
                    n: paired_ratio(timings[n], timings["clone_floor"])
                    for n in timings
                    if n in new or n.startswith(PEERS)
                }
                over_compiled_clone = {
                    n: paired_ratio(t, timings["compiled_clone"])
                    for n, t in timings.items()
                    if n.startswith("compiled_apply_rope") and "compiled_clone" in timings
                }  # (the *_one_row diagnostics included)
                ours = [n for n in timings if n.startswith("apply_rope")]
                peers = [n for n in timings if n.startswith(PEERS)]
                # speed of each peer relative to each of ours (> 1: ours faster)
                peer_over_ours = {
                    mine: {peer: paired_ratio(timings[peer], timings[mine]) for peer in peers}
                    for mine in ours
                }
                profiled = ["copy_floor", "clone_floor", *ours]
                case = {
                    "device": device,
                    "shape": list(shape),
                    "dtype": dtype_name,
                    "variants": {name: t.to_json() for name, t in timings.items()},
                    "over_floor": over_floor,
                    "over_clone": over_clone,
                    "over_compiled_clone": over_compiled_clone,
                    "peer_over_ours": peer_over_ours,
                    "check_rel_diff": {n: float(f"{d:.3g}") for n, d in checks.items()},
                    "failed": failed,
                    "compiled": compiled,
                    "profile": _profile(calls, profiled) if device == "cpu" else None,
                    "load_average_1min": round(os.getloadavg()[0], 2),
                    "clock": "thread CPU time" if clock is not time.perf_counter else "wall",
                }
                if device != "cpu":
                    case["bandwidth"] = _bandwidth(case, shape, dtype)
                cases.append(case)
                if not quick:  # tiny shapes time the Python overhead, not the rotation
                    targets += _targets(case)
    huge_pages = None if quick else huge_pages_experiment()
    return {
        "huge_pages": huge_pages,
        "pass_costs": None if quick else pass_costs(repeats),
        "description": (
            "Rotating q and k (both of the given shape) with precomputed tables. Times are "
            "per (q, k) pair; over_floor divides by copying q and k into preallocated buffers, "
            "over_clone by cloning them, over_compiled_clone by a compiled clone, all in the "
            "same rounds. check_rel_diff: max |output - apply_rope| / max |apply_rope| in the "
            "matching layout (HF rotates bfloat16 in bfloat16, the others in float32)."
        ),
        "devices": devices,
        "gpu": (torch.cuda.get_device_name(0) if torch.cuda.is_available() else "no GPU"),
        "cases": cases,
        "targets": targets,
    }
