r"""The report of a failed check: where it disagrees, what was observed, and the diagnosis.

:func:`rope_report` writes the ``AssertionError`` message: the first disagreeing position and pair,
the largest error, the error per call, facts measured on the output (:func:`observations`),
and the diagnosis (:func:`diagnosis`): the bug models of ``_bugs.py`` that reproduce the
output within the tolerance, or, if none does, the closest one and how the error grows.
"""

from __future__ import annotations

import math

import torch

from ..rope import RotaryEmbedding
from ._bugs import Hypothesis, candidate_models, evaluate, with_layout
from ._common import UNIT_ROUNDOFF, fmt
from ._model import (
    dtype_name,
    other_layout,
    pair_index,
    pair_parts,
    reference_model,
    written_layout,
)
from ._plan import Call, excess_ratio


def locate(call: Call, which: int, flat: int, layout: str, rotary_dim: int) -> dict:
    shape = call.inputs[which].shape
    index = list(torch.unravel_index(torch.tensor(flat), shape))
    b, h, t, j = (int(i) for i in index)
    position = int(call.positions[t])
    if j < rotary_dim:
        pair = int(pair_index(layout, rotary_dim)[j])
        coords = (
            (2 * pair, 2 * pair + 1) if layout == "interleaved" else (pair, pair + rotary_dim // 2)
        )
    else:
        pair, coords = None, (j,)
    return {
        "tensor": "qk"[which],
        "b": b,
        "h": h,
        "t": t,
        "j": j,
        "position": position,
        "pair": pair,
        "coords": coords,
    }


def where_words(loc: dict, rotary_dim: int) -> str:
    tensor = f"{loc['tensor']}[{loc['b']}, {loc['h']}]"
    if loc["pair"] is None:
        return (
            f"position {loc['position']}, coordinate {loc['j']} of {tensor} (past rotary_dim = "
            f"{rotary_dim}: it should be copied unchanged)"
        )
    a, b = loc["coords"]
    return f"position {loc['position']}, pair {loc['pair']} (coordinates {a} and {b}) of {tensor}"


def values_at(call: Call, loc: dict, source: str) -> str:
    tensor = call.outputs if source == "got" else call.expected
    x = tensor["qk".index(loc["tensor"])][loc["b"], loc["h"], loc["t"]]
    return "(" + ", ".join(f"{float(x[c]):.6g}" for c in loc["coords"]) + ")"


def rope_report(
    reference: RotaryEmbedding,
    calls: list[Call],
    options: dict,
) -> str:
    layout, r = reference.layout, reference.rotary_dim
    head_dim = reference.head_dim
    # Sort key of each coordinate: position first, then pair (coordinates past rotary_dim after
    # every pair), so the smallest bad key is the first disagreement.
    order = torch.cat([pair_index(layout, r), torch.arange(r // 2, r // 2 + head_dim - r)])
    first = None  # (key, call, which, flat index)
    largest = None  # (error, call, which, flat index)
    per_call = []
    for c, call in enumerate(calls):
        call_error, call_excess = 0.0, 0.0
        for which in (0, 1):
            excess = excess_ratio(call.outputs[which], call.expected[which], call.allowed[which])
            error = (call.outputs[which] - call.expected[which]).abs()
            error = torch.where(torch.isfinite(error), error, torch.full_like(error, math.inf))
            bad = excess > 1
            if bool(bad.any()):
                key = call.positions[None, None, :, None] * head_dim + order  # (b, h, n, d)
                key = torch.where(bad, key, torch.full_like(key, torch.iinfo(torch.int64).max))
                flat = int(key.flatten().argmin())
                rank = (int(key.flatten()[flat]), c)
                if first is None or rank < first[0]:
                    first = (rank, c, which, flat)
            flat = int(error.flatten().argmax())
            if largest is None or float(error.flatten()[flat]) > largest[0]:
                largest = (float(error.flatten()[flat]), c, which, flat)
            call_error = max(call_error, float(error.max()))
            call_excess = max(call_excess, float(excess.max()))
        per_call.append((call_error, call_excess))

    lines = [f"fn disagrees with the reference {describe_reference(reference)}."]
    if first is not None:
        _, c, which, flat = first
        call = calls[c]
        loc = locate(call, which, flat, layout, r)
        lines += [
            f"First disagreement: {where_words(loc, r)}, in the call with {call.describe()}:",
            f"    got {values_at(call, loc, 'got')}, expected {values_at(call, loc, 'expected')}; "
            f"error {fmt(error_at(call.outputs, call.expected, which, flat))}, allowed "
            f"{fmt(float(call.allowed[which].flatten()[flat]))}.",
        ]
    if largest is not None:
        value, c, which, flat = largest
        loc = locate(calls[c], which, flat, layout, r)
        lines.append(
            f"Largest error: {fmt(value)} at {where_words(loc, r)} ({calls[c].describe()}); "
            f"allowed there {fmt(float(calls[c].allowed[which].flatten()[flat]))}."
        )
    lines.append("Per call, the largest error and the largest error / allowance:")
    for call, (error, excess) in zip(calls, per_call, strict=True):
        lines.append(
            f"    {call.window.describe()} ({dtype_name(call.dtype)}): {fmt(error)}, "
            f"{fmt(excess)}" + ("" if excess > 1 else " (agrees)")
        )
    lines += observations(reference, calls)
    lines += diagnosis(reference, calls, options)
    lines.append(
        "Tolerance per coordinate: a |pair| (8 u + 2 u32 m w (ln(1/w) + 4)), the second term only "
        "with float32_angles=True; see help(posenc_ref.testing.assert_rope_equal)."
    )
    return "\n".join(lines)


def error_at(got: tuple, expected: tuple, which: int, flat: int) -> float:
    value = float((got[which] - expected[which]).abs().flatten()[flat])
    return value if math.isfinite(value) else math.inf


def describe_reference(reference: RotaryEmbedding) -> str:
    parts = [f"head_dim={reference.head_dim}"]
    if reference.rotary_dim != reference.head_dim:
        parts.append(f"rotary_dim={reference.rotary_dim}")
    parts += [f"base={reference.base:.10g}", f"layout={reference.layout!r}"]
    method = getattr(reference, "method", None)
    spec = getattr(reference, "spec", None)
    if spec is not None and getattr(spec, "rope_type", "default") != "default":
        parts.append(f"rope_type={spec.rope_type!r} from its config")
    elif method == "static":
        parts.append("scaling=ScaledFrequencies(...)")
    elif method is not None:
        params = ", ".join(
            f"{k}={v!r}"
            for k, v in reference.scaling_params.items()
            if not isinstance(v, (list, tuple, torch.Tensor))
        )
        parts.append(f"scaling={method!r} ({params})")
    if float(reference.attention_factor) != 1.0:
        parts.append(f"attention factor {fmt(float(reference.attention_factor))}")
    return "RotaryEmbedding(" + ", ".join(parts) + ")"


def flat_index(call: Call, which: int, loc: dict) -> int:
    shape = call.inputs[which].shape
    return ((loc["b"] * shape[1] + loc["h"]) * shape[2] + loc["t"]) * shape[3] + loc["j"]


def observations(reference: RotaryEmbedding, calls: list[Call]) -> list[str]:
    """Facts measured on the output, independent of any hypothesis."""
    layout, r = reference.layout, reference.rotary_dim
    notes = []
    wrong = {"q": False, "k": False}
    tail_changed = False
    bad_values = False
    for call in calls:
        for which, name in ((0, "q"), (1, "k")):
            excess = excess_ratio(call.outputs[which], call.expected[which], call.allowed[which])
            wrong[name] |= bool((excess > 1).any())
            if r < reference.head_dim:
                tail = excess[..., r:]
                tail_changed |= bool((tail > 1).any())
            bad_values |= not bool(torch.isfinite(call.outputs[which]).all())
    if wrong["q"] != wrong["k"]:
        right, bad = ("q", "k") if wrong["k"] else ("k", "q")
        notes.append(
            f"Observed: {right} agrees with the reference everywhere; only {bad} does not."
        )
    if tail_changed:
        notes.append(
            f"Observed: coordinates past rotary_dim = {r} were changed; they should be copied."
        )
    if bad_values:
        notes.append("Observed: your output holds NaN or infinity.")
    # Norms: a rotation keeps each pair's norm, times the attention factor.
    ratios = []
    # From the calls of the most precise dtype only: bfloat16 outputs move norms by ~2^-8.
    finest = min(UNIT_ROUNDOFF[call.dtype] for call in calls)
    for call in (c for c in calls if UNIT_ROUNDOFF[c.dtype] == finest):
        u, v = pair_parts(call.inputs[0], layout, r)
        u2, v2 = pair_parts(call.outputs[0], written_layout(reference), r)
        ratios.append((torch.sqrt(u2 * u2 + v2 * v2) / torch.sqrt(u * u + v * v)).flatten())
    ratio = torch.cat(ratios)
    ratio = ratio[torch.isfinite(ratio)]
    if ratio.numel():
        lo, mid, hi = (float(torch.quantile(ratio, p)) for p in (0.01, 0.5, 0.99))
        a = float(reference.attention_factor)
        if hi - lo > 1e-3 * a:
            notes.append(
                f"Observed: pair norms (in the reference's layout) change by factors from "
                f"{fmt(lo)} to {fmt(hi)}: your fn does not rotate these pairs"
                + (f" (a rotation scales them by the attention factor {fmt(a)})" if a != 1 else "")
                + "."
            )
        elif abs(mid - a) > 1e-3 * a:
            notes.append(
                f"Observed: your fn scales every pair's norm by {fmt(mid)}; the reference by "
                f"its attention factor {fmt(a)}."
            )
    return notes


def diagnosis(reference: RotaryEmbedding, calls: list[Call], options: dict) -> list[str]:
    # With float32 angles refused, first ask whether accepting them would have passed.
    ref = Hypothesis("reference", "", "", reference_model(reference))
    if not options["float32_angles"] and evaluate(ref, calls, options) <= 1:
        return [
            "Diagnosis (tested): float32 angles. Your output matches the reference within the "
            "float32-angle allowance: the angles are formed in float32 (as in HF transformers), "
            "and you asked for float64-accurate angles (float32_angles=False). Form "
            "position * inv_freq in float64 and cast cos/sin, or accept float32 angles."
        ]
    hypotheses = candidate_models(reference, calls)
    for h in hypotheses:
        h.worst = evaluate(h, calls, options)
    explained = first_per_title([h for h in hypotheses if h.worst <= 1])
    tested = len(hypotheses)
    if not explained:
        combos = [
            with_layout(h, other_layout(reference.layout))
            for h in hypotheses
            if h.model.layout == reference.layout and h.model.table_layout is None
        ]
        for h in combos:
            h.worst = evaluate(h, calls, options)
        tested += len(combos)
        explained = first_per_title([h for h in combos if h.worst <= 1])
        hypotheses += combos
    if explained:
        lines = [
            f"Diagnosis (tested: {tested} models of common bugs were run on the same inputs; "
            + ("this one reproduces" if len(explained) == 1 else "these reproduce")
            + " your output within the tolerance everywhere):"
        ]
        for h in explained:
            lines.append(f"    - {h.title}: {h.detail}.")
        return lines
    lines = [
        f"Diagnosis: none of the {tested} models of common bugs tested reproduces your output."
    ]
    reference_worst = evaluate(ref, calls, options)
    closest = min(hypotheses, key=lambda h: h.worst)
    if math.isfinite(closest.worst) and closest.worst * 10 < reference_worst:
        lines.append(
            f"    Closest: {closest.title} ({closest.detail}); it brings the largest "
            f"error/allowance from {fmt(reference_worst)} down to {fmt(closest.worst)}, so it is "
            "part of the story but not all of it."
        )
    growth = growth_note(calls)
    if growth:
        lines.append("    " + growth)
    return lines


def first_per_title(hypotheses: list[Hypothesis]) -> list[Hypothesis]:
    # Several candidates of one kind can match (base 500000 and its fitted 500000.998): the
    # first one listed is the plainest.
    seen, kept = set(), []
    for h in hypotheses:
        if h.title not in seen:
            seen.add(h.title)
            kept.append(h)
    return kept


def growth_note(calls: list[Call]) -> str | None:
    """Say so when the error is within tolerance at small positions and grows after."""
    by_position = []
    for call in calls:
        for which in (0, 1):
            excess = excess_ratio(call.outputs[which], call.expected[which], call.allowed[which])
            per_position = excess.flatten(0, 1).amax(dim=(0, 2))  # (n,)
            error = (call.outputs[which] - call.expected[which]).abs().flatten(0, 1)
            err_pos = error.amax(dim=(0, 2))
            for t in range(per_position.numel()):
                by_position.append(
                    (int(call.positions[t]), float(per_position[t]), float(err_pos[t]))
                )
    by_position.sort()
    first_bad = next((p for p, e, _ in by_position if e > 1), None)
    if first_bad is None or first_bad < 2:
        return None
    early = max(err for p, _, err in by_position if p < max(first_bad // 2, 1))
    late = max(err for p, _, err in by_position if p >= first_bad)
    last = by_position[-1]
    return (
        f"The error stays within tolerance up to position {first_bad - 1} and grows after it "
        f"(largest {fmt(early)} below position {max(first_bad // 2, 1)}, {fmt(late)} from "
        f"{first_bad} to {last[0]}): the signature of positions, frequencies or angles held in "
        "low precision."
    )
