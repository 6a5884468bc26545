r"""The bug models and their search: each common mistake as a model that predicts the output.

:func:`_hypotheses` builds, for one reference, a :class:`_Hypothesis` per common bug (the other
pair layout, shifted positions, another base, a missing attention factor, low-precision
positions or frequencies, ...), each a :class:`~._model._Model`. :func:`_evaluate` runs one on
the inputs the user's function received and returns its largest error / allowance: at most 1
means the model reproduces the user's output, and the bug is named. Nothing is inferred from the
size of an error alone.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from dataclasses import dataclass

import torch

from ..absolute import inv_freq as _inv_freq
from ..rope import RotaryEmbedding
from ..rope_scaling import METHODS, ScaledFrequencies
from ._common import fmt, nice_number
from ._model import (
    _dtype_name,
    _Model,
    _other,
    _output_layout,
    _pairs,
    _predict,
    _reference_model,
)
from ._plan import _allowance, _Call, _excess, _original_context

# Bases people use (GPT-NeoX/Llama 2, Llama 3, Qwen2, Mistral's 1e6, gpt-oss's 150000, ...) and
# 100 = sqrt(10000), the base an exponent of -i/d instead of -2i/d amounts to. Each one is tried
# as a hypothesis, together with the base fitted from the user's own output.
COMMON_BASES = (100.0, 10000.0, 50000.0, 100000.0, 150000.0, 500000.0, 1e6, 5e6, 1e7)


@dataclass
class _Hypothesis:
    key: str
    title: str
    detail: str
    model: _Model
    worst: float = math.inf  # largest error / allowance over every call


def _layout_words(layout: str, rotary_dim: int) -> str:
    if layout == "interleaved":
        return "pairs (2i, 2i+1), the interleaved layout (RoFormer, Meta's Llama, torchtune)"
    return (
        f"pairs (i, i + {rotary_dim // 2}), the half layout (HF transformers' rotate_half, "
        "GPT-NeoX)"
    )


def _fixed(freqs: ScaledFrequencies) -> Callable[[int], ScaledFrequencies]:
    return lambda seq_len: freqs


def _method_frequencies(
    reference: RotaryEmbedding, dim: int, base: float
) -> Callable[[int], ScaledFrequencies] | None:
    """The reference's scaling method, recomputed for another width or base (None if unknown)."""
    method = getattr(reference, "method", None)
    if method is None:
        return _fixed(ScaledFrequencies(_inv_freq(dim, base), 1.0))
    if method not in METHODS:
        return None  # a ScaledFrequencies given directly: no formula to recompute
    function = METHODS[method].function
    params = dict(reference.scaling_params)
    try:
        if METHODS[method].length_dependent:
            return lambda seq_len: function(dim, base, seq_len=seq_len, **params)
        freqs = function(dim, base, **params)
    except (TypeError, ValueError):
        return None
    return _fixed(freqs)


def _fit_frequencies(
    call: _Call, layout: str, rotary_dim: int, output_layout: str | None = None
) -> torch.Tensor | None:
    """Per-pair frequencies read off the user's output at positions 1, 2, 4, ... (float64).

    The angle a pair turned by is ``atan2(u v' - v u', u u' + v v')``; its median over the batch
    and heads at position 1 gives the frequency up to 2 pi, refined at positions 2, 4, 8, ...
    with the turn count unwrapped. Meaningful only if the output rotates pairs of this layout.
    """
    if call.window.start != 0 or call.window.stop < 3:
        return None
    u, v = _pairs(call.inputs[0], layout, rotary_dim)
    u2, v2 = _pairs(call.outputs[0], output_layout or layout, rotary_dim)
    phi = torch.atan2(u * v2 - v * u2, u * u2 + v * v2)  # (batch, heads, n, pairs)
    phi = phi.flatten(0, -3).median(dim=0).values  # (n, pairs)
    omega = phi[1].clone()
    m = 2
    while m < phi.shape[0]:
        turns = torch.round((m * omega - phi[m]) / (2 * math.pi))
        omega = (phi[m] + 2 * math.pi * turns) / m
        m *= 2
    return omega


def _fitted_base(omega: torch.Tensor, rotary_dim: int) -> tuple[float, float] | None:
    """``(base, offset)`` from ``ln w_i = offset + slope * i`` over pairs ``i >= 1``.

    ``base = exp(-slope * rotary_dim / 2)``; ``offset`` is 0 for ``w_i = base^(-2i/d)`` and equal
    to the slope when the frequencies are indexed from 1.
    """
    pairs = omega.numel()
    if pairs < 3 or not bool((omega[1:] > 0).all()):
        return None
    i = torch.arange(1, pairs, dtype=torch.float64)
    y = torch.log(omega[1:])
    slope = float(((i - i.mean()) * (y - y.mean())).sum() / ((i - i.mean()) ** 2).sum())
    offset = float(y.mean() - slope * i.mean())
    if slope >= 0:
        return None
    return math.exp(-slope * rotary_dim / 2), offset


def _hypotheses(reference: RotaryEmbedding, calls: list[_Call]) -> list[_Hypothesis]:
    ref = _reference_model(reference)
    r, head_dim, base = reference.rotary_dim, reference.head_dim, reference.base
    layout, other = ref.layout, _other(ref.layout)
    a = float(reference.attention_factor)
    out: list[_Hypothesis] = []

    def add(key: str, title: str, detail: str, **changes) -> None:
        out.append(_Hypothesis(key, title, detail, dataclasses.replace(ref, **changes)))

    add(
        "layout",
        "the other pair layout",
        f"your fn rotates {_layout_words(other, r)}; the reference rotates "
        f"{_layout_words(layout, r)}. If your checkpoint was converted for that layout, build "
        f"the reference with layout={other!r}; otherwise permute the query/key projection rows "
        "(posenc_ref.permute_qk_weight) or switch the rotation",
        layout=other,
    )
    for rotation in (layout, other):
        table = _other(rotation)
        add(
            f"table_layout_{rotation}",
            "a cos/sin table laid out for the other layout",
            f"your fn rotates {_layout_words(rotation, r)} but reads cos/sin from a table laid "
            f"out for {table} pairs (each frequency "
            + ("repeated twice in a row" if table == "interleaved" else "vector repeated twice")
            + "): coordinates of one pair get different angles, which is not a rotation",
            layout=rotation,
            table_layout=table,
        )
    written = _output_layout(reference)
    if r > 2:
        add(
            "output_order",
            "results written back in the other order",
            f"your fn rotates the right pairs but writes the result in {_other(written)} order; "
            f"the reference writes it in {written} order"
            + (
                " (DeepSeek-V3 reads interleaved pairs and writes them in half order)"
                if written != layout or layout == "interleaved"
                else ""
            ),
            output_layout=_other(written),
        )
    add(
        "shift_plus",
        "positions off by one",
        "your fn rotates position m by the angles of position m + 1 (positions counted from 1, "
        "or an extra token before the first)",
        positions=lambda p: p.to(torch.float64) + 1,
    )
    add(
        "shift_minus",
        "positions off by one",
        "your fn rotates position m by the angles of position m - 1",
        positions=lambda p: p.to(torch.float64) - 1,
    )
    if any(call.window.start > 0 for call in calls):
        add(
            "restart",
            "positions ignored",
            "your fn rotates every call as if its positions started at 0 (it ignores the "
            "positions it is given: a KV-cache offset that is never applied)",
            positions=lambda p: p.to(torch.float64) - p[0].to(torch.float64),
        )
    add(
        "identity",
        "no rotation at all",
        "your fn returns q and k unrotated",
        positions=lambda p: torch.zeros_like(p, dtype=torch.float64),
        frequencies=lambda n: ScaledFrequencies(reference.frequencies(n).inv_freq, 1.0),
    )
    add(
        "direction",
        "the rotation in the other direction",
        "your fn rotates by -m w_i: u' = u cos + v sin, v' = v cos - u sin (a conjugated "
        "complex table, a minus sign on the wrong sin term, or rotate_half's halves swapped)",
        sign=-1.0,
    )

    if r < head_dim:
        whole = _method_frequencies(reference, head_dim, base)
        if whole is not None:
            add(
                "rotary_dim_ignored",
                "rotary_dim ignored",
                f"your fn rotates all {head_dim} coordinates with frequencies for width "
                f"{head_dim}; the reference rotates the first rotary_dim = {r} and copies the rest",
                rotary_dim=head_dim,
                frequencies=whole,
            )

            def truncated(n: int) -> ScaledFrequencies:
                freqs = whole(n)
                return ScaledFrequencies(freqs.inv_freq[: r // 2], freqs.attention_factor)

            add(
                "rotary_width",
                "frequencies computed over head_dim",
                f"your fn rotates the first {r} coordinates but with w_i = base^(-2i/{head_dim}) "
                f"(the head width) instead of base^(-2i/{r}) (the rotary width)",
                frequencies=truncated,
            )

    copied = _copied_tail(calls, head_dim)
    if 2 <= head_dim - copied < r and (head_dim - copied) % 2 == 0:
        narrow = head_dim - copied
        frequencies = _method_frequencies(reference, narrow, base)
        if frequencies is not None:
            add(
                "partial",
                "partial rotary",
                f"your fn rotates only the first {narrow} coordinates (rotary_dim = {narrow}, "
                f"frequencies for that width) and copies the last {copied}; the reference "
                f"rotates {r}. Check partial_rotary_factor / rotary_pct in your config (GPT-NeoX's "
                "config defaults it to 0.25)",
                rotary_dim=narrow,
                frequencies=frequencies,
            )
    # Frequencies: another base (the common ones and the one fitted from the output), indexed
    # from 1, computed over the whole head instead of the rotary part.
    bases = list(COMMON_BASES)
    fit, omega = None, None
    if calls:
        omega = _fit_frequencies(calls[0], layout, r, _output_layout(reference))
        fit = None if omega is None else _fitted_base(omega, r)
        if fit is not None and math.isfinite(fit[0]) and 1.0 < fit[0] < 1e12:
            # The fewest significant digits first: 500000 rather than 500012.7.
            bases = [nice_number(fit[0], d) for d in (1, 2, 3, 4, 5, 6)] + [fit[0], *bases]
    seen = {base}
    for candidate in bases:
        if candidate in seen or any(abs(candidate / s - 1) < 1e-9 for s in seen):
            continue
        seen.add(candidate)
        frequencies = _method_frequencies(reference, r, candidate)
        if frequencies is None:
            break
        note = ""
        if abs(candidate - math.sqrt(base)) < 1e-6 * base:
            note = (
                f" ({candidate:.10g} = sqrt({base:.10g}): the exponent -i/d instead of -2i/d, "
                "or twice the width in the exponent)"
            )
        elif abs(candidate - base * base) < 1e-6 * base * base:
            note = f" ({candidate:.10g} = {base:.10g}^2: half the width in the exponent)"
        add(
            f"base_{candidate:g}",
            "a different base",
            f"your fn uses base {candidate:.10g} where the reference has {base:.10g}{note}",
            frequencies=frequencies,
        )
    if getattr(reference, "method", None) is None:
        from_one = {base}
        if fit is not None and math.isfinite(fit[0]) and 1.0 < fit[0] < 1e12:
            from_one.update(nice_number(fit[0], d) for d in (1, 2, 3, 4))
        for candidate in sorted(from_one):
            # Indexed from 1 keeps the width: w_i = base^(-2(i+1)/r), i = 0 .. r/2 - 1.
            omega = candidate ** (-2.0 * torch.arange(1, r // 2 + 1, dtype=torch.float64) / r)
            words = "" if candidate == base else f" and base {candidate:.10g}"
            add(
                f"from_one_{candidate:g}",
                "frequencies indexed from 1",
                f"your fn uses w_i = base^(-2(i+1)/d){words}: pair 0 turns at base^(-2/d) = "
                f"{fmt(float(omega[0]))} rad per position instead of 1 (an index starting at 1, "
                "e.g. w_n = base^(-2n/d) for n = 1..d/2)",
                frequencies=_fixed(ScaledFrequencies(omega, a)),
            )

    # Every plain frequency divided by one constant c (position interpolation by c), c read off
    # the output: what a "scaling" that forgets which pairs to leave alone does.
    if omega is not None and bool((omega > 0).all()):
        plain_omega = _inv_freq(r, base)
        c = float((plain_omega / omega).median())
        # c = base^(2/d) is frequencies indexed from 1, named above
        from_one_c = abs(c / base ** (2 / r) - 1) < 1e-3
        if math.isfinite(c) and c > 0 and abs(c - 1) > 1e-6 and not from_one_c:
            factor = getattr(reference, "scaling_params", {}).get("factor")
            note = ""
            if factor and abs(c / factor ** (r / (r - 2)) - 1) < 1e-3:
                note = (
                    f" = factor^(d/(d-2)) = {factor:g}^({r}/{r - 2}): NTK-aware's exponent applied "
                    "to every frequency instead of to the base, so even pair 0 is interpolated"
                )
            add(
                "all_divided",
                "every frequency divided by one constant",
                f"your fn divides every plain frequency base^(-2i/d) by {nice_number(c, 4):g}"
                f"{note} (position interpolation by that factor)",
                frequencies=_fixed(ScaledFrequencies(plain_omega / c, a)),
            )
    if a != 1.0:
        reference_freqs = reference.frequencies

        def with_factor(factor: float) -> Callable[[int], ScaledFrequencies]:
            return lambda n: ScaledFrequencies(reference_freqs(n).inv_freq, factor)

        add(
            "factor_missing",
            "the attention factor missing",
            f"your fn does not multiply cos and sin by the attention factor {fmt(a)} (its pair "
            "norms are unchanged by the rotation)",
            frequencies=with_factor(1.0),
        )
        add(
            "factor_doubled",
            "the attention factor applied twice",
            f"your fn scales by {fmt(a)}^2 = {fmt(a * a)} instead of {fmt(a)} (the factor "
            "applied to the table and again to q and k, or a value that already held it)",
            frequencies=with_factor(a * a),
        )
    method = getattr(reference, "method", None)
    if method is not None:
        plain = _fixed(ScaledFrequencies(_inv_freq(r, base), 1.0))
        if method == "static" and getattr(reference, "spec", None) is not None:
            method = reference.spec.rope_type  # from_hf_config: the config's name for it
        add(
            "scaling_missing",
            "the scaling method not applied",
            f"your fn uses plain RoPE frequencies (base {base:.10g}, attention factor 1): the "
            f"reference's {method!r} scaling is missing",
            frequencies=plain,
        )
        short, long_ = reference.frequencies(0), None
        context = _original_context(reference)
        if context is not None:
            factor = reference.scaling_params.get("factor")
            longer = int(math.ceil(factor * context)) if factor else context + 1
            long_ = reference.frequencies(max(longer, context + 1))
        if long_ is not None and not torch.equal(short.inv_freq, long_.inv_freq):
            add(
                "length_never",
                "the length-dependent switch never made",
                f"your fn keeps the original-context frequencies of {method!r} past "
                f"{context} positions, where the reference switches per call",
                frequencies=_fixed(short),
            )
            add(
                "length_always",
                "the extended frequencies at every length",
                f"your fn uses the extended frequencies of {method!r} (length {longer}) for every "
                "call, also inside the original context (vLLM's static 'dynamic' NTK does this)",
                frequencies=_fixed(long_),
            )
    f32, bf16, f16 = torch.float32, torch.bfloat16, torch.float16
    why = {
        "positions": {
            bf16: "bfloat16 keeps 8 significant bits: above 256 positions step by 2 (257 "
            "becomes 256), and the step doubles with every power of two",
            f16: "float16 keeps 11 significant bits (positions above 2048 step by 2) and "
            "overflows to infinity past 65504",
        },
        "inv_freq": {
            bf16: "each frequency is off by up to 2^-8 of itself, so the angle error grows "
            "with the position (a module cast with .to(torch.bfloat16) does this)",
            f16: "each frequency is off by up to 2^-11 of itself, so the angle error grows "
            "with the position (a module cast with .half() does this)",
        },
        "angles": {
            bf16: "each angle keeps 8 significant bits, so the error grows with the position "
            "(autocast around the angle product does this)",
            f16: "each angle keeps 11 significant bits and overflows past 65504, so the error "
            "grows with the position (autocast around the angle product does this)",
        },
        "cos/sin tables": {
            bf16: "every cos and sin is rounded to 8 significant bits: an error of about 4e-3 "
            "at every position",
            f16: "every cos and sin is rounded to 11 significant bits: an error of about 5e-4 "
            "at every position",
        },
    }
    for what, slot in (("positions", 0), ("inv_freq", 1), ("angles", 2), ("cos/sin tables", 3)):
        for low in (bf16, f16):
            precision = [f32, f32, f32, f32]
            precision[slot] = low
            add(
                f"precision_{what}_{_dtype_name(low)}",
                f"{what} in {_dtype_name(low)}",
                f"your fn holds the {what} in {_dtype_name(low)}: {why[what][low]}. Keep "
                "positions and frequencies in float32 or better, and form the angles in float64 "
                "where you can",
                precision=tuple(precision),
            )
    return out


def _copied_tail(calls: list[_Call], head_dim: int) -> int:
    """How many trailing coordinates the user's fn returned unchanged, in every call."""
    copied = head_dim
    for call in calls:
        for x, got in zip(call.inputs, call.outputs, strict=True):
            same = (x == got).flatten(0, -2).all(dim=0)  # (head_dim,)
            changed = torch.nonzero(~same).flatten()
            if changed.numel():
                copied = min(copied, head_dim - 1 - int(changed.max()))
    return copied


def _with_layout(h: _Hypothesis, layout: str) -> _Hypothesis:
    model = dataclasses.replace(h.model, layout=layout)
    return _Hypothesis(f"layout+{h.key}", f"the other pair layout and {h.title}", h.detail, model)


def _evaluate(h: _Hypothesis, calls: list[_Call], options: dict) -> float:
    """Largest error / allowance of the model's prediction over every call (<= 1: explained).

    A low-precision model is exact only up to where the user's float32 value and ours round
    apart; for those, 99% of the coordinates must meet the plain allowance and every one the
    allowance plus one rounding step, else the plain worst is returned.
    """
    worst, worst_step, inside, total = 0.0, 0.0, 0, 0
    for call in calls:
        for x, got in zip(call.inputs, call.outputs, strict=True):
            predicted = _predict(h.model, x, call.positions, call.seq_len)
            factor = max(
                float(h.model.frequencies(call.seq_len).attention_factor),
                float(options["attention_factor"]),
            )
            common = dict(
                float32_angles=True,
                rtol=options["rtol"],
                atol=options["atol"],
                attention_factor=factor,
            )
            allowed = _allowance(h.model, x, call.positions, call.seq_len, call.dtype, **common)
            excess = _excess(got, predicted, allowed)
            worst = max(worst, float(excess.max()))
            if h.model.precision is not None:
                stepped = _allowance(
                    h.model,
                    x,
                    call.positions,
                    call.seq_len,
                    call.dtype,
                    rounding_step=True,
                    **common,
                )
                worst_step = max(worst_step, float(_excess(got, predicted, stepped).max()))
                inside += int((excess <= 1).sum())
                total += excess.numel()
            if worst > 1e6 and h.model.precision is None:
                return worst  # clearly not this one: skip the remaining calls
    if worst > 1 and h.model.precision is not None and worst_step <= 1 and inside >= 0.99 * total:
        return worst_step
    return worst
