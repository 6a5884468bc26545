"""RoPE application on q and k with precomputed tables, as multiples of the memory floor.

Each variant rotates a query and a key tensor of the same shape ``(batch, heads, seq_len,
head_dim)`` (torchtune gets the same data in its native ``(batch, seq_len, heads, head_dim)``
layout), with its cos/sin (or complex, or angle) table computed once outside the timing:

- ``copy_floor``: copy q and k into preallocated buffers, the least any rotation that reads
  and writes every element can cost; everything is reported as a multiple of it;
- ``clone_floor``: ``q.clone()`` and ``k.clone()``, the least a call returning new tensors can
  cost (fresh memory is faulted in on first write);
- ``apply_rope_interleaved`` / ``apply_rope_half``: :func:`posenc_ref.rope.apply_rope`, new output;
- ``apply_rope_interleaved_out`` / ``apply_rope_half_out``: the same with ``out=`` buffers;
- ``hf_rotate_half``: HF transformers' ``apply_rotary_pos_emb`` (tables in the activation dtype,
  rotation in the activation dtype, as HF does);
- ``meta_complex``: Meta's complex-number formulation (:func:`benchmarks.baselines.complex_rope`);
- ``torchtune``: ``RotaryPositionalEmbeddings`` forward;
- ``rotary_embedding_torch``: ``apply_rotary_emb`` with precomputed angles.

Every variant's output is checked against ``apply_rope`` in the matching layout before timing.
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys

import torch

from posenc_ref import inv_freq

from .baselines import complex_rope, complex_rope_table
from .harness import _sig, paired_ratio, time_interleaved
from .peers import hf_apply_rotary_pos_emb, hf_rotary_cos_sin, lucidrains_rope, torchtune_rope

SHAPES = [(1, 32, 4096, 128), (1, 8, 16384, 64)]
QUICK_SHAPES = [(1, 2, 64, 16)]
DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16}
BASE = 10000.0
# Targets as multiples of the floor, per dtype.
FLOOR_TARGETS = {"float32": 3.0, "bfloat16": 5.0}
OURS = (
    "apply_rope_interleaved",
    "apply_rope_half",
    "apply_rope_interleaved_out",
    "apply_rope_half_out",
)
PEERS = ("hf_rotate_half", "meta_complex", "torchtune", "rotary_embedding_torch")


def _rope_module():
    try:
        from posenc_ref import rope
    except ImportError:
        return None
    return rope


def _variants(shape, dtype, device):
    """Build inputs and the variants: name -> (no-argument call, output as (q, k) in bhsd)."""
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
        # by page on first write, which on a CPU costs more than the copy itself.
        "clone_floor": lambda: (q.clone(), k.clone()),
    }
    as_bhsd = {"copy_floor": lambda result: result}
    references = {}
    if rope is not None:
        cos, sin = rope.rope_cos_sin(positions, frequencies)  # (L, d/2) float32, both layouts
        for layout in ("interleaved", "half"):

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
    hf_apply = hf_apply_rotary_pos_emb()
    if hf_apply is not None:
        cos_h, sin_h = hf_rotary_cos_sin(positions, head_dim, BASE, dtype=dtype)  # (L, d)
        calls["hf_rotate_half"] = lambda: hf_apply(q, k, cos_h[None], sin_h[None])
    rotations = complex_rope_table(seq_len, head_dim, BASE).to(device)
    calls["meta_complex"] = lambda: (complex_rope(q, rotations), complex_rope(k, rotations))
    module = torchtune_rope(head_dim, seq_len, BASE, device)
    if module is not None:
        q_bshd, k_bshd = q.transpose(1, 2).contiguous(), k.transpose(1, 2).contiguous()
        calls["torchtune"] = lambda: (module(q_bshd), module(k_bshd))
        as_bhsd["torchtune"] = lambda result: tuple(t.transpose(1, 2) for t in result)
    lucidrains = lucidrains_rope(head_dim, seq_len, BASE, device)
    if lucidrains is not None:
        apply_emb, angles = lucidrains
        calls["rotary_embedding_torch"] = lambda: (apply_emb(angles, q), apply_emb(angles, k))
    layouts = {"hf_rotate_half": "half"}
    checks = {}
    for name, call in calls.items():
        layout = "half" if name.startswith("apply_rope_half") else layouts.get(name, "interleaved")
        if name in {"copy_floor", "clone_floor"} or layout not in references:
            continue
        got = as_bhsd.get(name, lambda result: result)(call())
        want = references[layout]
        scale = max(float(w.float().abs().max()) for w in want)
        diff = max(
            float((g.float() - w.float()).abs().max()) for g, w in zip(got, want, strict=True)
        )
        checks[name] = diff / scale
    return calls, checks


def _profile(calls: dict, names: list[str], calls_per_name: int = 3) -> dict:
    """Where the time of each named variant goes, on the CPU: evidence for the page.

    Two measurements per variant, over ``calls_per_name`` calls after one warm-up call:

    - ``minor_faults``: page faults per call (``getrusage``). A freshly allocated large tensor
      is mapped page by page on first touch, so this counts the fresh memory a call writes;
    - ``top_ops``: the operators with the most self CPU time per call (``torch.profiler``).

    Returns
    -------
    dict
        ``{name: {"minor_faults": float, "top_ops": [{"op", "self_ms", "calls"}]}}``.
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
        found[name] = {
            "minor_faults": round(faults),
            "top_ops": [
                {
                    "op": e.key,
                    "self_ms": _sig(e.self_cpu_time_total / 1e3 / calls_per_name, 3),
                    "calls": e.count // calls_per_name,
                }
                for e in ops[:4]
                if e.self_cpu_time_total > 0
            ],
        }
    return found


# Child process for huge_pages_experiment: PyTorch reads THP_MEM_ALLOC_ENABLE once, at its first
# large CPU allocation, so each setting needs its own interpreter.
_HUGE_PAGES_CHILD = """
import json, resource, statistics, sys, time
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
            start = time.perf_counter()
            call()
            found[name]["samples_s"].append(time.perf_counter() - start)
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


def run(*, quick: bool = False, repeats: int = 15, devices: list[str] | None = None) -> dict:
    """Time every variant for each device, shape and dtype.

    Parameters
    ----------
    devices
        Defaults to ``["cpu"]`` plus ``"cuda"`` when torch sees a GPU.

    Returns
    -------
    dict
        ``{"description", "devices", "cases": [{"device", "shape", "dtype", "variants",
        "over_floor", "peer_over_ours", "check_rel_diff", "profile"}], "targets"}``;
        ``profile`` (CPU only) is :func:`_profile` of the floor and of ``apply_rope``.
    """
    if devices is None:
        devices = ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])
    cases, targets = [], []
    for device in devices:
        sync = torch.cuda.synchronize if device.startswith("cuda") else None
        for shape in QUICK_SHAPES if quick else SHAPES:
            for dtype_name, dtype in DTYPES.items():
                calls, checks = _variants(shape, dtype, torch.device(device))
                timings = time_interleaved(calls, repeats=repeats, sync=sync)
                floor = timings["copy_floor"]
                over_floor = {name: paired_ratio(t, floor) for name, t in timings.items()}
                ours = [name for name in OURS if name in timings]
                peers = [name for name in PEERS if name in timings]
                # speed of each peer relative to the default apply_rope call (> 1: ours faster)
                peer_over_ours = {
                    mine: {peer: paired_ratio(timings[peer], timings[mine]) for peer in peers}
                    for mine in ours
                }
                profiled = ["copy_floor", "clone_floor", *(n for n in OURS if n in calls)]
                cases.append(
                    {
                        "profile": _profile(calls, profiled) if device == "cpu" else None,
                        "device": device,
                        "shape": list(shape),
                        "dtype": dtype_name,
                        "variants": {name: t.to_json() for name, t in timings.items()},
                        "over_floor": over_floor,
                        "peer_over_ours": peer_over_ours,
                        "check_rel_diff": {name: float(f"{d:.3g}") for name, d in checks.items()},
                    }
                )
                if quick:  # tiny shapes time the Python overhead, not the rotation
                    continue
                label = f"{device} {dtype_name} {tuple(shape)}"
                limit = FLOOR_TARGETS[dtype_name]
                for mine in ours:
                    measured = over_floor[mine]["median"]
                    targets.append(
                        {
                            "name": f"{mine} / copy floor, {label}",
                            "measured": measured,
                            "limit": limit,
                            "met": measured <= limit,
                        }
                    )
                    if dtype_name == "float32" and peers:
                        slowest_margin = min(peer_over_ours[mine][peer]["median"] for peer in peers)
                        targets.append(
                            {
                                "name": f"{mine} faster than every peer, {label} "
                                "(fastest peer's time / ours)",
                                "measured": slowest_margin,
                                "limit": "> 1",
                                "met": slowest_margin > 1,
                            }
                        )
    huge_pages = None if quick else huge_pages_experiment()
    return {
        "huge_pages": huge_pages,
        "description": (
            "Rotating q and k (both of the given shape) with precomputed tables. Times are "
            "per (q, k) pair; over_floor divides by copying q and k into preallocated buffers "
            "in the same rounds. check_rel_diff: max |output - apply_rope| / max |apply_rope| "
            "in the matching layout (HF rotates bfloat16 in bfloat16, the others in float32)."
        ),
        "devices": devices,
        "gpu": (torch.cuda.get_device_name(0) if torch.cuda.is_available() else "no GPU"),
        "cases": cases,
        "targets": targets,
    }
