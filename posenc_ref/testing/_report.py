r"""The report of a failed check: where it disagrees, what was observed, and the diagnosis.

:func:`rope_report` writes the ``AssertionError`` message: the first disagreeing position and
pair, the largest error, which pairs and positions are wrong (:func:`wrong_ranges`), the error
per call, facts measured on the output (:func:`observations`), and the diagnosis
(:func:`diagnosis`): the bug models that reproduce the output within the tolerance, or, if none
does, one that accounts for most of the error, if any; the facts (``_facts.py``) otherwise.

A report is about a :class:`Subject`: the reference as a model, with the function that lists
the bug models to test (``_bugs.py`` for a :class:`~posenc_ref.RotaryEmbedding`, ``_axial.py``
for a patch grid).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import torch

from ._calls import Call
from ._common import UNIT_ROUNDOFF, dtype_name, fmt
from ._facts import Facts, band, find_facts, only_some_heads, token_grid
from ._model import Model, other_layout, pair_index, pair_parts
from ._setting import Hypothesis, evaluate, with_layout

# Angle errors up to this fraction of the angle are what a quantity held in bfloat16 gives
# (8 significant bits: 2^-8 relative, with room for a product of two such roundings).
LOW_PRECISION_ANGLE = 2.0**-6


@dataclass
class Subject:
    """What a report is about.

    Attributes
    ----------
    model : Model
        The reference as a model.
    head_dim : int
        Width of ``q`` and ``k``.
    description : str
        The reference in words (``RotaryEmbedding(head_dim=128, ...)``).
    attention_factor : float
        The reference's attention factor inside its original context.
    written : str
        The layout the reference writes its rotated pairs in.
    candidates : callable
        ``calls -> list of Hypothesis``: the bug models to test.
    """

    model: Model
    head_dim: int
    description: str
    attention_factor: float
    written: str
    candidates: Callable[[list[Call]], list[Hypothesis]]


# --------------------------------------------------------------------------- locations


def position_words(call: Call, b: int, t: int) -> str:
    """The position of token ``t`` of row ``b`` of ``call``, in words."""
    p = call.positions
    if call.rows:
        rows = tuple(int(v) if float(v).is_integer() else round(float(v), 6) for v in p[:, t])
        names = "(row, column)" if call.kind == "grid" else "(time, height, width)"
        return f"position {names} = {rows}"
    if p.dim() > 1:
        return f"position {int(p[b, 0, t])}"
    return f"position {int(p[t])}"


def token_position(call: Call, b: int, t: int) -> int:
    p = call.positions
    if call.rows:
        return int(p[:, t].max())
    return int(p[b, 0, t]) if p.dim() > 1 else int(p[t])


def locate(call: Call, which: int, flat: int, layout: str, rotary_dim: int) -> dict:
    shape = call.inputs[which].shape
    b, h, t, j = _unravel(flat, tuple(shape))
    if j < rotary_dim:
        pair = int(pair_index(layout, rotary_dim)[j])
        half = rotary_dim // 2
        coords = (2 * pair, 2 * pair + 1) if layout == "interleaved" else (pair, pair + half)
    else:
        pair, coords = None, (j,)
    return {"tensor": "qk"[which], "b": b, "h": h, "t": t, "j": j, "pair": pair, "coords": coords,
            "where": position_words(call, b, t)}  # fmt: skip


def _unravel(flat: int, shape: tuple[int, ...]) -> list[int]:
    """The index of element ``flat`` of a row-major tensor of ``shape``.

    torch.unravel_index imports its symbolic-shape machinery on first use: seconds, in a
    failing check.
    """
    index = []
    for size in reversed(shape):
        flat, i = divmod(flat, size)
        index.append(i)
    return index[::-1]


def where_words(loc: dict, rotary_dim: int) -> str:
    tensor = f"{loc['tensor']}[{loc['b']}, {loc['h']}]"
    if loc["pair"] is None:
        return (
            f"{loc['where']}, coordinate {loc['j']} of {tensor} (past rotary_dim = "
            f"{rotary_dim}: it should be copied unchanged)"
        )
    a, b = loc["coords"]
    return f"{loc['where']}, pair {loc['pair']} (coordinates {a} and {b}) of {tensor}"


def values_at(call: Call, loc: dict, source: str) -> str:
    tensor = call.outputs if source == "got" else call.expected
    x = tensor["qk".index(loc["tensor"])][loc["b"], loc["h"], loc["t"]]
    return "(" + ", ".join(f"{float(x[c]):.6g}" for c in loc["coords"]) + ")"


def ranges(values: list[int], limit: int = 4) -> str:
    """``[1, 2, 3, 7, 9, 10]`` as ``"1..3, 7, 9..10"`` (at most ``limit`` ranges, then a count)."""
    values = sorted(set(values))
    spans: list[list[int]] = []
    for v in values:
        if spans and v == spans[-1][1] + 1:
            spans[-1][1] = v
        else:
            spans.append([v, v])
    words = [f"{a}" if a == b else f"{a}..{b}" for a, b in spans[:limit]]
    if len(spans) > limit:
        rest = sum(b - a + 1 for a, b in spans[limit:])
        words.append(f"and {rest} more")
    return ", ".join(words)


# --------------------------------------------------------------------------- the report


def rope_report(
    subject: Subject, calls: list[Call], options: dict, made: list[str] | None = None
) -> str:
    """The message of a failed check (``options``: rtol, atol, float32_angles, factor).

    ``made``: what the plan says of the patterns it made (and of those it could not), listed
    after the calls.
    """
    layout, r = subject.model.layout, subject.model.rotary_dim
    head_dim = subject.head_dim
    facts = find_facts(calls, layout, r)
    # Sort key of each coordinate: position first, then pair (coordinates past rotary_dim after
    # every pair), so the smallest bad key is the first disagreement.
    order = torch.cat([pair_index(layout, r), torch.arange(r // 2, r // 2 + head_dim - r)])
    first = largest = None  # (key, call index, which, flat index)
    per_call = []
    for c, call in enumerate(calls):
        call_error, call_excess = 0.0, 0.0
        for which in (0, 1):
            excess = call.excess()[which]
            error = (call.outputs[which] - call.expected[which]).abs().nan_to_num(nan=math.inf)
            bad = excess > 1
            if bool(bad.any()):
                key = token_grid(call, excess.shape) * head_dim + order  # (b, h, n, d)
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

    lines = [f"fn disagrees with the reference {subject.description}."]
    if first is not None:
        _, c, which, flat = first
        call = calls[c]
        loc = locate(call, which, flat, layout, r)
        error = float((call.outputs[which] - call.expected[which]).abs().flatten()[flat])
        lines += [
            f"First disagreement: {where_words(loc, r)}, in the call with {call.describe()}:",
            f"    got {values_at(call, loc, 'got')}, expected {values_at(call, loc, 'expected')}; "
            f"error {fmt(error)}, allowed {fmt(float(call.allowed[which].flatten()[flat]))}.",
        ]
    if largest is not None:
        value, c, which, flat = largest
        loc = locate(calls[c], which, flat, layout, r)
        lines.append(
            f"Largest error: {fmt(value)} at {where_words(loc, r)} ({calls[c].describe()}); "
            f"allowed there {fmt(float(calls[c].allowed[which].flatten()[flat]))}."
        )
    lines.append(wrong_ranges(facts, r))
    lines.append("Per call, the largest error and the largest error / allowance:")
    for call, (error, excess) in zip(calls, per_call, strict=True):
        lines.append(
            f"    {call.where()} ({dtype_name(call.dtype)}): {fmt(error)}, {fmt(excess)}"
            + ("" if excess > 1 else " (agrees)")
        )
    lines += made or []
    lines += observations(subject, calls, facts)
    lines += diagnosis(subject, calls, options, facts)
    lines.append(
        "Tolerance per coordinate: a |pair| (8 u + the float32 angle error of any common "
        "kernel), the second term only with float32_angles=True; see "
        "help(posenc_ref.testing.assert_rope_equal) and "
        "posenc_ref.testing.float32_angle_allowance."
    )
    return "\n".join(lines)


def wrong_ranges(facts: Facts, rotary_dim: int) -> str:
    """Which pairs and which positions disagree, as ranges."""
    pairs = facts.pairs
    words = f"pairs {ranges(list(pairs))} of 0..{rotary_dim // 2 - 1}" if pairs else "no pair"
    if facts.tail:
        words += f", and coordinates past rotary_dim = {rotary_dim}"
    return f"Wrong: {words}, at positions {ranges(list(facts.positions))}."


# --------------------------------------------------------------------------- observations


def observations(subject: Subject, calls: list[Call], facts: Facts) -> list[str]:
    """Facts measured on the output, independent of any hypothesis, in words to act on."""
    layout, r = subject.model.layout, subject.model.rotary_dim
    notes = []
    if facts.tensors["q"] != facts.tensors["k"]:
        right, bad_one = ("q", "k") if facts.tensors["k"] else ("k", "q")
        notes.append(
            f"Observed: {right} agrees with the reference everywhere; only {bad_one} does not."
        )
    heads = only_some_heads(facts)
    if heads:
        notes.append(
            "Observed: only some heads are wrong (" + "; ".join(heads) + "): look where heads "
            "are split or indexed (a head count, a view of the flattened heads, a loop over "
            "the key's heads)."
        )
    if facts.at_zero:
        notes.append(
            "Observed: already wrong at position 0, where every angle is 0 and a rotation is "
            "the identity (times the attention factor): something other than the angle is "
            "wrong there (cos and sin exchanged, a shifted position, a scale, pairs mixed up)."
        )
    if facts.wrong_kinds and facts.wrong_kinds != facts.kinds:
        right = ", ".join(sorted(facts.kinds - facts.wrong_kinds))
        notes.append(
            f"Observed: only the {', '.join(sorted(facts.wrong_kinds))} calls are wrong; the "
            f"{right} calls agree: the code path of that call pattern differs."
        )
    stripe = band(facts.pairs, r // 2)
    if stripe is not None:
        notes.append(
            f"Observed: only pairs {stripe[0]}..{stripe[1]} of 0..{r // 2 - 1} are wrong, one "
            "band with right pairs on both sides: the frequencies of that band (where YaRN's "
            "ramp and Llama 3's smoothing blend two frequencies) are what differs."
        )
    if facts.tail:
        notes.append(
            f"Observed: coordinates past rotary_dim = {r} were changed; they should be copied."
        )
    nonfinite = []
    for call in calls:
        for which, name in ((0, "q"), (1, "k")):
            bad = ~torch.isfinite(call.outputs[which])
            if bool(bad.any()):
                flat = int(torch.nonzero(bad.flatten())[0])
                loc = locate(call, which, flat, layout, r)
                nonfinite.append(f"{int(bad.sum())} in {name} ({where_words(loc, r)} first)")
    if nonfinite:
        notes.append("Observed: your output holds NaN or infinity: " + "; ".join(nonfinite) + ".")
    notes += norm_notes(subject, calls)
    return notes


def norm_notes(subject: Subject, calls: list[Call]) -> list[str]:
    """A rotation keeps each pair's norm, times the attention factor: say when it did not.

    From the calls of the most precise dtype only: bfloat16 outputs move norms by ~2^-8.
    """
    layout, r = subject.model.layout, subject.model.rotary_dim
    ratios = []
    finest = min(UNIT_ROUNDOFF[call.dtype] for call in calls)
    for call in (c for c in calls if UNIT_ROUNDOFF[c.dtype] == finest):
        u, v = pair_parts(call.inputs[0], layout, r)
        u2, v2 = pair_parts(call.outputs[0], subject.written, r)
        ratios.append((torch.sqrt(u2 * u2 + v2 * v2) / torch.sqrt(u * u + v * v)).flatten())
    ratio = torch.cat(ratios)
    ratio = ratio[torch.isfinite(ratio)]
    if not ratio.numel():
        return []
    lo, mid, hi = (float(torch.quantile(ratio, p)) for p in (0.01, 0.5, 0.99))
    a = subject.attention_factor
    if hi - lo > 1e-3 * a:
        return [
            f"Observed: pair norms (in the reference's layout) change by factors from "
            f"{fmt(lo)} to {fmt(hi)}: your fn does not rotate these pairs"
            + (f" (a rotation scales them by the attention factor {fmt(a)})" if a != 1 else "")
            + "."
        ]
    if abs(mid - a) > 1e-3 * a:
        return [
            f"Observed: your fn scales every pair's norm by {fmt(mid)}; the reference by "
            f"its attention factor {fmt(a)}."
        ]
    return []


# --------------------------------------------------------------------------- the diagnosis


def run_models(
    hypotheses: list[Hypothesis], calls: list[Call], options: dict, facts: Facts
) -> list[Hypothesis]:
    """The hypotheses that reproduce the output: each run on the evidence first, then on all.

    Every ``h.worst`` is set: exact when <= 1, else a lower bound.
    """
    explained = []
    for h in hypotheses:
        h.worst = evaluate(h, calls, options, stop_above=1.0, evidence=facts.evidence)
        if h.worst <= 1:
            h.worst = evaluate(h, calls, options, stop_above=1.0)
            if h.worst <= 1:
                explained.append(h)
    return explained


def diagnosis(subject: Subject, calls: list[Call], options: dict, facts: Facts) -> list[str]:
    """The bug models that reproduce the output; if none does, one that explains most of it."""
    ref = Hypothesis("reference", "", "", subject.model)
    if not options["float32_angles"] and evaluate(ref, calls, options) <= 1:
        return [
            "Diagnosis (tested): float32 angles. Your output matches the reference within the "
            "float32-angle allowance: the angles are formed in float32 (as in HF transformers), "
            "and you asked for float64-accurate angles (float32_angles=False). Form "
            "position * inv_freq in float64 and cast cos/sin, or accept float32 angles."
        ]
    hypotheses = subject.candidates(calls)
    explained = first_per_title(run_models(hypotheses, calls, options, facts))
    tested = len(hypotheses)
    if not explained:
        combos = [
            with_layout(h, other_layout(subject.model.layout))
            for h in hypotheses
            if h.model.layout == subject.model.layout and h.model.table_layout is None
        ]
        tested += len(combos)
        explained = first_per_title(run_models(combos, calls, options, facts))
        hypotheses += combos
    if explained:
        lines = [
            f"Diagnosis (tested: {tested} models of common bugs were run on the same inputs; "
            + ("this one reproduces" if len(explained) == 1 else "these reproduce")
            + " your output within the tolerance everywhere):"
        ]
        lines += [f"    - {h.title}: {h.detail}." for h in explained]
        return lines
    lines = [
        f"Diagnosis: none of the {tested} models of common bugs tested reproduces your output."
    ]
    part = most_of_it(ref, hypotheses, calls, options, facts)
    if part is not None:
        nearest, reference_worst = part
        lines.append(
            f"    Part of it: {nearest.title} ({nearest.detail}); with it the largest error / "
            f"allowance falls from {fmt(reference_worst)} to {fmt(nearest.worst)}, so it "
            "accounts for most of the error but not all of it."
        )
    else:
        lines.append(
            "    No model accounts for most of the error either (none brings the largest error "
            "/ allowance below a tenth of the reference's): what was observed, and the pairs "
            "and positions that are wrong (above), are where to look."
        )
    note = growth_note(subject, calls)
    if note:
        lines.append("    " + note)
    return lines


def most_of_it(
    ref: Hypothesis, hypotheses: list[Hypothesis], calls: list[Call], options: dict, facts: Facts
) -> tuple[Hypothesis, float] | None:
    """The model that brings the largest error / allowance below a tenth of the reference's.

    A model that explains less is not named: pointing at an unrelated "closest" model sends a
    reader the wrong way. Each model is cut off as soon as it is past that tenth.
    """
    reference_worst = evaluate(ref, calls, options)
    limit = reference_worst / 10
    if not math.isfinite(limit):
        return None
    best = None
    for h in hypotheses:
        bound = evaluate(h, calls, options, stop_above=limit, evidence=facts.evidence)
        if bound > limit:
            continue
        h.worst = evaluate(h, calls, options, stop_above=limit if best is None else best.worst)
        if h.worst <= limit and (best is None or h.worst < best.worst):
            best = h
    return None if best is None else (best, reference_worst)


def first_per_title(hypotheses: list[Hypothesis]) -> list[Hypothesis]:
    # Several candidates of one kind can match (base 500000 and its fitted 500000.998): the
    # first one listed is the plainest.
    seen, kept = set(), []
    for h in hypotheses:
        if h.title not in seen:
            seen.add(h.title)
            kept.append(h)
    return kept


def growth_note(subject: Subject, calls: list[Call]) -> str | None:
    """Say so when the error is within tolerance at small positions and grows after.

    It is called low precision only when the angles are off by at most a few bfloat16
    roundings of themselves; an offset applied twice also grows with the position, by far more.
    """
    if any(not bool(torch.isfinite(o).all()) for call in calls for o in call.outputs):
        return None
    by_position = []
    relative = []
    layout, r = subject.model.layout, subject.model.rotary_dim
    for call in calls:
        token = call.token_positions()
        omega = subject.model.freqs(call).inv_freq.to(torch.float64)
        for which in (0, 1):
            excess = call.excess()[which]
            per_position = excess.flatten(0, 1).amax(dim=(0, 2))  # (n,)
            err_pos = (call.outputs[which] - call.expected[which]).abs().flatten(0, 1)
            err_pos = err_pos.amax(dim=(0, 2))
            for t in range(per_position.numel()):
                by_position.append((int(token[t]), float(per_position[t]), float(err_pos[t])))
            u, v = pair_parts(call.expected[which], layout, r)
            u2, v2 = pair_parts(call.outputs[which], subject.written, r)
            turned = torch.atan2(u * v2 - v * u2, u * u2 + v * v2).abs()  # (b, h, n, pairs)
            angle = (token.to(torch.float64)[:, None] * omega).clamp(min=1e-30)
            first, second = pair_parts(excess > 1, subject.written, r)
            relative.append((turned / angle)[first | second])
    by_position.sort()
    first_bad = next((p for p, e, _ in by_position if e > 1), None)
    if first_bad is None or first_bad < 2:
        return None
    early = max(err for p, _, err in by_position if p < max(first_bad // 2, 1))
    late = max(err for p, _, err in by_position if p >= first_bad)
    last = by_position[-1]
    words = (
        f"The error stays within tolerance up to position {first_bad - 1} and grows after it "
        f"(largest {fmt(early)} below position {max(first_bad // 2, 1)}, {fmt(late)} from "
        f"{first_bad} to {last[0]})"
    )
    values = torch.cat(relative) if relative else torch.empty(0)
    if values.numel() and float(values.median()) <= LOW_PRECISION_ANGLE:
        return (
            words + f": the angles are off by about {fmt(float(values.median()))} of themselves, "
            "the signature of positions, frequencies or angles held in low precision."
        )
    if values.numel():
        words += (
            f"; the angles are off by about {fmt(float(values.median()))} of themselves, more "
            "than low precision gives"
        )
    return words + "."
