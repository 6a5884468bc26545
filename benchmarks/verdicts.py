"""Verdict times of the conformance kit: each check on the bug table and on engine-style RoPE.

A failing check's message carries its diagnosis, found by running bug models on the user's
output; how long that takes is what a user waits for in CI. This times one verdict per case:

- every row of the bug table (``posenc_ref.testing._bugs.BUG_MODELS``), on its own example;
- every mistake of position builders, on its example;
- the engine-style implementations of tests/engine_implementations.py, passing and with each
  planted bug;
- failures no model explains (a 1 % error on Llama 3.1's blended band, a scale on one pair).

Each case is run once, after one untimed check (imports, first-call costs), and timed on the
CPU clock of its thread (one torch thread) and on the wall clock. The targets: every failing
verdict within 10 s, every passing check within 2 s, on the project's 2-core machine at rest;
the load average is recorded before and after, since a loaded machine stretches the wall times.
"""

from __future__ import annotations

import os
import re
import time
from collections.abc import Callable

import torch

FAIL_LIMIT_S, PASS_LIMIT_S = 10.0, 2.0


def _named(message: str) -> str:
    if "Diagnosis (tested" not in message:
        return "(none named)" if message.startswith("fn disagrees") else message.split("\n")[0]
    block = message.split("Diagnosis (tested", 1)[1].split("Tolerance per coordinate", 1)[0]
    return "; ".join(re.findall(r"^    - ([^:]+):", block, flags=re.M))


def _verdict(check: Callable[[], None]) -> str:
    try:
        check()
    except AssertionError as error:
        return _named(str(error))
    return "passes"


def table_cases() -> list[tuple[str, str, Callable[[], None]]]:
    """Each bug table row's example, and each builder mistake's."""
    from posenc_ref.testing import assert_mrope_positions_equal, assert_rope_equal
    from posenc_ref.testing._bugs import BUG_MODELS
    from posenc_ref.testing._builders import BUILDER_BUG_MODELS

    cases = []
    for key, row in BUG_MODELS.items():
        example = row.example()
        check = lambda e=example: assert_rope_equal(e.fn, e.reference, **e.options)  # noqa: E731
        cases.append((f"table: {key}", "fail", check))
    for key, row in BUILDER_BUG_MODELS.items():
        example = row.example()
        check = lambda e=example: assert_mrope_positions_equal(e.fn, family=e.reference)  # noqa: E731
        cases.append((f"builders: {key}", "fail", check))
    return cases


def engine_cases() -> list[tuple[str, str, Callable[[], None]]]:
    """The engine-style implementations, passing and with their planted bugs."""
    from posenc_ref import RotaryEmbedding
    from posenc_ref.models import released_config
    from posenc_ref.testing import (
        assert_axial_rope_equal,
        assert_rope_equal,
        offset_fn,
        per_dtype_fn,
        tokens_fn,
    )
    from tests import engine_implementations as engines

    def config(name):
        return RotaryEmbedding.from_hf_config(released_config(name))

    llama2, llama31 = RotaryEmbedding(128, layout="half"), config("Llama 3.1")
    yarn, phi, vl = config("Qwen2.5 (YaRN)"), config("Phi-3.5-mini (LongRoPE)"), config(
        "Qwen2.5-VL (M-RoPE)")  # fmt: skip
    meta = RotaryEmbedding(128, layout="interleaved", base=500000.0)
    tiny = RotaryEmbedding(128, layout="interleaved")
    neox = RotaryEmbedding(64, layout="half")
    a = float(yarn.attention_factor)
    F32 = torch.float32

    def base(bug=None):
        return per_dtype_fn(lambda dt: tokens_fn(engines.VllmRotary(128, 128, 4096, 1e4, True, dt,
                                                                    bug=bug)))  # fmt: skip

    def llama3(bug=None):
        return tokens_fn(engines.VllmLlama3(128, 128, 131072, 5e5, True, F32, bug=bug))

    def yarn_fn(bug=None):
        return tokens_fn(engines.VllmYarn(128, 128, 32768, 1e6, True, F32, factor=4.0,
                                          attention_factor=a, bug=bug))  # fmt: skip

    def longrope(max_model_len):
        p = phi.scaling_params
        return tokens_fn(engines.VllmLongRope(96, 96, 131072, 4096, 1e4, p["short_factor"],
                                              p["long_factor"], float(phi.attention_factor),
                                              max_model_len))  # fmt: skip

    def mrope(bug=None):
        return tokens_fn(engines.VllmMRope(128, 128, 128000, 1e6, True, F32,
                                           mrope_section=vl.mrope_section, bug=bug))  # fmt: skip

    def rope(fn, ref, **kw):
        return lambda: assert_rope_equal(fn, ref, **kw)

    pixtral = {"scheme": "pixtral", "head_dim": 64, "base": 1e4, "layout": "interleaved"}
    return [
        ("vLLM base", "pass", rope(base(), llama2, max_position=4095)),
        ("vLLM base: first head only", "fail", rope(base("first_head"), llama2, max_position=4095)),
        ("vLLM base: past its table", "fail", rope(base(), llama2)),
        ("vLLM Llama 3", "pass", rope(llama3(), llama31, max_position=131071)),
        ("vLLM Llama 3: factors swapped", "fail", rope(llama3("swapped"), llama31,
                                                      max_position=131071)),  # fmt: skip
        ("vLLM Llama 3: wrong pairs", "fail", rope(llama3("pairs"), llama31, max_position=131071)),
        ("vLLM YaRN", "pass", rope(yarn_fn(), yarn, max_position=131071)),
        ("vLLM YaRN: float16 cache", "fail", rope(yarn_fn("float16"), yarn, max_position=131071)),
        ("vLLM LongRoPE", "pass", rope(longrope(4096), phi, max_position=4095)),
        ("vLLM LongRoPE: long at load", "fail", rope(longrope(131072), phi, max_position=131071)),
        ("vLLM M-RoPE", "pass", rope(mrope(), vl, max_position=127999)),
        ("vLLM M-RoPE: interleaved", "fail", rope(mrope("interleaved"), vl, max_position=127999)),
        ("Meta", "pass", rope(offset_fn(engines.meta_rope(128, 5e5, 4096)), meta,
                              max_position=8191)),  # fmt: skip
        ("Meta: head axis", "fail", rope(offset_fn(engines.meta_rope(128, 5e5, 4096, "head_axis")),
                                         meta, max_position=8191)),  # fmt: skip
        ("tinygrad (float32 table)", "pass", rope(offset_fn(engines.tinygrad_rope(
            128, 1e4, 1024, F32)), tiny, max_position=2047)),  # fmt: skip
        ("tinygrad: float16 table", "fail", rope(offset_fn(engines.tinygrad_rope(128, 1e4, 1024)),
                                                 tiny, max_position=2047)),  # fmt: skip
        ("tinygrad: cos/sin swapped", "fail", rope(offset_fn(engines.tinygrad_rope(
            128, 1e4, 1024, F32, "swapped")), tiny, max_position=2047)),  # fmt: skip
        ("rotary-embedding-torch", "pass", rope(offset_fn(engines.lucidrains_rope(128, 1e4)),
                                                tiny)),  # fmt: skip
        ("GPT-NeoX", "pass", rope(offset_fn(engines.neox_rope(64, 1e4)), neox, max_position=8191)),
        ("GPT-NeoX: fp16 arithmetic", "fail", rope(offset_fn(engines.neox_rope(64, 1e4, "fp16")),
                                                   neox, max_position=8191)),  # fmt: skip
        ("Pixtral (mistral-inference)", "pass",
         lambda: assert_axial_rope_equal(engines.pixtral_mistral_rope(64, 1e4), **pixtral)),
        ("Pixtral: grid transposed", "fail", lambda: assert_axial_rope_equal(
            engines.pixtral_mistral_rope(64, 1e4, bug="transposed"), **pixtral)),
    ]  # fmt: skip


def unexplained_cases() -> list[tuple[str, str, Callable[[], None]]]:
    """Failures no bug model explains: the diagnosis tries them all and says what it saw."""
    from posenc_ref import RotaryEmbedding
    from posenc_ref.models import released_config
    from posenc_ref.rope_scaling import ScaledFrequencies
    from posenc_ref.testing import assert_rope_equal

    llama31 = RotaryEmbedding.from_hf_config(released_config("Llama 3.1"))
    plain = 500000.0 ** (-torch.arange(0, 128, 2, dtype=torch.float64) / 128)
    band = (llama31.inv_freq != plain) & (llama31.inv_freq != plain / 8)
    off = llama31.inv_freq * torch.where(band, 1.01, 1.0)
    moved = RotaryEmbedding(128, layout="half", scaling=ScaledFrequencies(off, 1.0))
    reference = RotaryEmbedding(64, layout="half")

    def one_pair_scaled(q, k, positions):
        q_rot, k_rot = reference(q, k, positions)
        q_rot[..., 5] *= 1.5
        return q_rot, k_rot

    return [
        ("unexplained: 1 % on Llama 3.1's band", "fail",
         lambda: assert_rope_equal(moved, llama31)),
        ("unexplained: one coordinate scaled", "fail",
         lambda: assert_rope_equal(one_pair_scaled, reference)),
    ]  # fmt: skip


def run(quick: bool = False) -> dict:
    """Time one verdict per case; ``quick`` runs a handful (for the test of the harness).

    The torch thread count is the caller's (``benchmarks.run`` sets one thread): the CPU clock
    of this thread then counts all the work.
    """
    cases = table_cases() + engine_cases() + unexplained_cases()
    if quick:
        cases = cases[:2] + [c for c in cases if c[1] == "pass"][:1]
    from posenc_ref import RotaryEmbedding
    from posenc_ref.testing import assert_rope_equal

    warm = RotaryEmbedding(16, layout="half")
    _verdict(lambda: assert_rope_equal(lambda q, k, p: warm(q, k, p + 1), warm))  # untimed
    load_before = os.getloadavg()
    rows = []
    for name, expect, check in cases:
        cpu, wall = time.thread_time(), time.perf_counter()
        verdict = _verdict(check)
        cpu, wall = time.thread_time() - cpu, time.perf_counter() - wall
        rows.append({"name": name, "expect": expect, "verdict": verdict,
                     "cpu_s": round(cpu, 3), "wall_s": round(wall, 3)})  # fmt: skip
        print(f"  {cpu:6.2f} s cpu {wall:6.2f} s wall  {name}: {verdict}", flush=True)
    fails = [r["cpu_s"] for r in rows if r["expect"] == "fail"]
    passes = [r["cpu_s"] for r in rows if r["expect"] == "pass"]
    targets = [
        {"name": "every failing verdict (CPU s)", "measured": max(fails, default=0.0),
         "limit": FAIL_LIMIT_S, "met": max(fails, default=0.0) <= FAIL_LIMIT_S},
        {"name": "every passing check (CPU s)", "measured": max(passes, default=0.0),
         "limit": PASS_LIMIT_S, "met": max(passes, default=0.0) <= PASS_LIMIT_S},
    ]  # fmt: skip
    return {
        "cases": rows,
        "load_average_before": [round(x, 2) for x in load_before],
        "load_average_after": [round(x, 2) for x in os.getloadavg()],
        "targets": targets,
    }


if __name__ == "__main__":
    torch.set_num_threads(1)
    result = run()
    for target in result["targets"]:
        print(f"{'met ' if target['met'] else 'MISS'} {target['name']}: {target['measured']} s "
              f"(limit {target['limit']} s)")  # fmt: skip
    print(f"load average before {result['load_average_before']}, after "
          f"{result['load_average_after']}")  # fmt: skip
