r"""The bug models and their search: each common mistake as a model that predicts the output.

:data:`BUG_MODELS` is the table of the mistakes the diagnosis knows, one row each, in the order
a report lists them: a title, and a small function of the :class:`Setting` (the reference, the
calls the user's function received, what was read off its output) that returns the candidate
models of that mistake (none when it cannot apply, several when it has a parameter: each common
base, each low-precision dtype). The rows of engines' call patterns, M-RoPE and conventions are
in ``_engine_bugs.py``. :func:`candidate_models` runs the table; :func:`~._setting.evaluate`
runs one candidate on the inputs the user's function received and returns its largest error /
allowance: at most 1 means the model reproduces the user's output, and the bug is named.
Nothing is inferred from the size of an error alone. Adding a bug is adding a row.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Iterator

import torch

from ..absolute import inv_freq as plain_inv_freq
from ..rope import RotaryEmbedding
from ..rope_scaling import ScaledFrequencies
from ._calls import Call
from ._common import dtype_name, fmt, nice_number
from ._engine_bugs import ENGINE_BUG_MODELS
from ._model import other_layout, written_layout
from ._plan import original_context
from ._setting import (
    BugModel,
    Hypothesis,
    Setting,
    copied_tail,
    fixed,
    layout_words,
)

# Bases people use (GPT-NeoX/Llama 2, Llama 3, Qwen2, Mistral's 1e6, gpt-oss's 150000, ...) and
# 100 = sqrt(10000), the base an exponent of -i/d instead of -2i/d amounts to. Each one is tried
# as a hypothesis, together with the base fitted from the user's own output.
COMMON_BASES = (100.0, 10000.0, 50000.0, 100000.0, 150000.0, 500000.0, 1e6, 5e6, 1e7)

# --------------------------------------------------------------------------- layouts


def layout_swapped(s: Setting) -> Iterator[Hypothesis]:
    """The pairs of the other layout rotated."""
    yield s.hypothesis(
        "layout",
        "the other pair layout",
        f"your fn rotates {layout_words(s.other, s.rotary_dim)}; the reference rotates "
        f"{layout_words(s.layout, s.rotary_dim)}. If your checkpoint was converted for that "
        f"layout, build the reference with layout={s.other!r}; otherwise permute the query/key "
        "projection rows (posenc_ref.permute_qk_weight) or switch the rotation. (flash-attn's "
        "flash_attn_with_kvcache rotates interleaved pairs unless rotary_interleaved=False, "
        "while its apply_rotary_emb defaults to interleaved=False; llama.cpp's "
        "GGML_ROPE_TYPE_NORMAL is interleaved, NEOX half)",
        layout=s.other,
    )


def table_layout(s: Setting) -> Iterator[Hypothesis]:
    """Either rotation reading a table laid out for the other layout."""
    for rotation in (s.layout, s.other):
        table = other_layout(rotation)
        yield s.hypothesis(
            f"table_layout_{rotation}",
            "a cos/sin table laid out for the other layout",
            f"your fn rotates {layout_words(rotation, s.rotary_dim)} but reads cos/sin from a "
            f"table laid out for {table} pairs (each frequency "
            + ("repeated twice in a row" if table == "interleaved" else "vector repeated twice")
            + "): coordinates of one pair get different angles, which is not a rotation",
            layout=rotation,
            table_layout=table,
        )


def output_order(s: Setting) -> Iterator[Hypothesis]:
    """The right pairs, written back in the other order (DeepSeek-V3's subtlety)."""
    if s.rotary_dim <= 2:
        return
    written = written_layout(s.reference)
    yield s.hypothesis(
        "output_order",
        "results written back in the other order",
        f"your fn rotates the right pairs but writes the result in {other_layout(written)} order; "
        f"the reference writes it in {written} order"
        + (
            " (DeepSeek-V3 reads interleaved pairs and writes them in half order)"
            if written != s.layout or s.layout == "interleaved"
            else ""
        ),
        output_layout=other_layout(written),
    )


# --------------------------------------------------------------------------- positions


def shifted_positions(s: Setting) -> Iterator[Hypothesis]:
    """Positions off by one, either way."""
    yield s.hypothesis(
        "shift_plus",
        "positions off by one",
        "your fn rotates position m by the angles of position m + 1 (positions counted from 1, "
        "or an extra token before the first)",
        positions=lambda call: call.positions + 1,
    )
    yield s.hypothesis(
        "shift_minus",
        "positions off by one",
        "your fn rotates position m by the angles of position m - 1",
        positions=lambda call: call.positions - 1,
    )


def ignored_positions(s: Setting) -> Iterator[Hypothesis]:
    """Every call rotated as if it started at 0 (only testable with a call that does not)."""
    if any(call.start > 0 for call in s.calls):
        yield s.hypothesis(
            "restart",
            "positions ignored",
            "your fn rotates every call as if its positions started at 0 (it ignores the "
            "positions it is given: a KV-cache offset that is never applied)",
            positions=lambda call: torch.arange(call.n).expand_as(call.positions),
        )


def no_rotation(s: Setting) -> Iterator[Hypothesis]:
    """The queries and keys returned unrotated."""
    reference = s.reference
    yield s.hypothesis(
        "identity",
        "no rotation at all",
        "your fn returns q and k unrotated",
        positions=lambda call: torch.zeros_like(call.positions),
        frequencies=lambda n: ScaledFrequencies(reference.frequencies(n).inv_freq, 1.0),
    )


def other_direction(s: Setting) -> Iterator[Hypothesis]:
    """The rotation by minus the angle."""
    yield s.hypothesis(
        "direction",
        "the rotation in the other direction",
        "your fn rotates by -m w_i: u' = u cos + v sin, v' = v cos - u sin (a conjugated "
        "complex table, a minus sign on the wrong sin term, or rotate_half's halves swapped)",
        sign=-1.0,
    )


# --------------------------------------------------------------------------- widths


def rotary_dim_ignored(s: Setting) -> Iterator[Hypothesis]:
    """A partial-rotary reference: the whole head rotated, with the head's frequencies."""
    if s.rotary_dim >= s.head_dim:
        return
    whole = s.frequencies_for(s.head_dim, s.base)
    if whole is not None:
        yield s.hypothesis(
            "rotary_dim_ignored",
            "rotary_dim ignored",
            f"your fn rotates all {s.head_dim} coordinates with frequencies for width "
            f"{s.head_dim}; the reference rotates the first rotary_dim = {s.rotary_dim} and "
            "copies the rest",
            rotary_dim=s.head_dim,
            frequencies=whole,
        )


def head_width_frequencies(s: Setting) -> Iterator[Hypothesis]:
    """A partial-rotary reference: the right coordinates, frequencies over the head width."""
    r = s.rotary_dim
    if r >= s.head_dim:
        return
    whole = s.frequencies_for(s.head_dim, s.base)
    if whole is None:
        return

    def truncated(n: int) -> ScaledFrequencies:
        freqs = whole(n)
        return ScaledFrequencies(freqs.inv_freq[: r // 2], freqs.attention_factor)

    yield s.hypothesis(
        "rotary_width",
        "frequencies computed over head_dim",
        f"your fn rotates the first {r} coordinates but with w_i = base^(-2i/{s.head_dim}) "
        f"(the head width) instead of base^(-2i/{r}) (the rotary width)",
        frequencies=truncated,
    )


def partial_rotary(s: Setting) -> Iterator[Hypothesis]:
    """Fewer coordinates rotated than the reference rotates (read off the output's copied tail)."""
    copied = copied_tail(s.calls, s.head_dim)
    narrow = s.head_dim - copied
    if not (2 <= narrow < s.rotary_dim and narrow % 2 == 0):
        return
    frequencies = s.frequencies_for(narrow, s.base)
    if frequencies is not None:
        yield s.hypothesis(
            "partial",
            "partial rotary",
            f"your fn rotates only the first {narrow} coordinates (rotary_dim = {narrow}, "
            f"frequencies for that width) and copies the last {copied}; the reference rotates "
            f"{s.rotary_dim}. Check partial_rotary_factor / rotary_pct in your config "
            "(GPT-NeoX's config defaults it to 0.25)",
            rotary_dim=narrow,
            frequencies=frequencies,
        )


# --------------------------------------------------------------------------- frequencies


def other_base(s: Setting) -> Iterator[Hypothesis]:
    """Another base: the common ones and the one fitted from the output (plainest first)."""
    base = s.base
    bases = list(COMMON_BASES)
    _, fit = s.fitted
    if fit is not None:
        # The fewest significant digits first: 500000 rather than 500012.7.
        bases = [nice_number(fit[0], d) for d in (1, 2, 3, 4, 5, 6)] + [fit[0], *bases]
    seen = {base}
    for candidate in bases:
        if candidate in seen or any(abs(candidate / b - 1) < 1e-9 for b in seen):
            continue
        seen.add(candidate)
        frequencies = s.frequencies_for(s.rotary_dim, candidate)
        if frequencies is None:
            return
        note = ""
        if abs(candidate - math.sqrt(base)) < 1e-6 * base:
            note = (
                f" ({candidate:.10g} = sqrt({base:.10g}): the exponent -i/d instead of -2i/d, "
                "or twice the width in the exponent)"
            )
        elif abs(candidate - base * base) < 1e-6 * base * base:
            note = f" ({candidate:.10g} = {base:.10g}^2: half the width in the exponent)"
        yield s.hypothesis(
            f"base_{candidate:g}",
            "a different base",
            f"your fn uses base {candidate:.10g} where the reference has {base:.10g}{note}",
            frequencies=frequencies,
            base=candidate,
        )


def indexed_from_one(s: Setting) -> Iterator[Hypothesis]:
    """Plain references: w_i = base^(-2(i+1)/d), with the reference's or the fitted base."""
    if s.method is not None:
        return
    r = s.rotary_dim
    from_one = {s.base}
    _, fit = s.fitted
    if fit is not None:
        from_one.update(nice_number(fit[0], d) for d in (1, 2, 3, 4))
    for candidate in sorted(from_one):
        # Indexed from 1 keeps the width: w_i = base^(-2(i+1)/r), i = 0 .. r/2 - 1.
        omega = candidate ** (-2.0 * torch.arange(1, r // 2 + 1, dtype=torch.float64) / r)
        words = "" if candidate == s.base else f" and base {candidate:.10g}"
        yield s.hypothesis(
            f"from_one_{candidate:g}",
            "frequencies indexed from 1",
            f"your fn uses w_i = base^(-2(i+1)/d){words}: pair 0 turns at base^(-2/d) = "
            f"{fmt(float(omega[0]))} rad per position instead of 1 (an index starting at 1, "
            "e.g. w_n = base^(-2n/d) for n = 1..d/2)",
            frequencies=fixed(ScaledFrequencies(omega, s.attention_factor)),
        )


def all_divided(s: Setting) -> Iterator[Hypothesis]:
    """Every plain frequency divided by one constant c read off the output.

    What a "scaling" that forgets which pairs to leave alone does (position interpolation by c).
    """
    omega, _ = s.fitted
    if omega is None or not bool((omega > 0).all()):
        return
    r = s.rotary_dim
    plain_omega = plain_inv_freq(r, s.base)
    c = float((plain_omega / omega).median())
    from_one_c = abs(c / s.base ** (2 / r) - 1) < 1e-3  # frequencies indexed from 1: its own row
    if not (math.isfinite(c) and c > 0 and abs(c - 1) > 1e-6) or from_one_c:
        return
    factor = getattr(s.reference, "scaling_params", {}).get("factor")
    note = ""
    if factor and abs(c / factor ** (r / (r - 2)) - 1) < 1e-3:
        note = (
            f" = factor^(d/(d-2)) = {factor:g}^({r}/{r - 2}): NTK-aware's exponent applied to "
            "every frequency instead of to the base, so even pair 0 is interpolated"
        )
    yield s.hypothesis(
        "all_divided",
        "every frequency divided by one constant",
        f"your fn divides every plain frequency base^(-2i/d) by {nice_number(c, 4):g}{note} "
        "(position interpolation by that factor)",
        frequencies=fixed(ScaledFrequencies(plain_omega / c, s.attention_factor)),
    )


# --------------------------------------------------------------------------- scaling


def with_factor(s: Setting, factor: float) -> Callable[[int], ScaledFrequencies]:
    reference_freqs = s.reference.frequencies
    return lambda n: ScaledFrequencies(reference_freqs(n).inv_freq, factor)


def factor_missing(s: Setting) -> Iterator[Hypothesis]:
    """The attention factor left out of cos and sin."""
    a = s.attention_factor
    if a != 1.0:
        yield s.hypothesis(
            "factor_missing",
            "the attention factor missing",
            f"your fn does not multiply cos and sin by the attention factor {fmt(a)} (its pair "
            "norms are unchanged by the rotation; engines that drop the config's YaRN "
            "attention_factor do this, e.g. SGLang's YaRN before PR #33558)",
            frequencies=with_factor(s, 1.0),
        )


def factor_doubled(s: Setting) -> Iterator[Hypothesis]:
    """The attention factor applied twice."""
    a = s.attention_factor
    if a != 1.0:
        yield s.hypothesis(
            "factor_doubled",
            "the attention factor applied twice",
            f"your fn scales by {fmt(a)}^2 = {fmt(a * a)} instead of {fmt(a)} (the factor "
            "applied to the table and again to q and k, or a value that already held it)",
            frequencies=with_factor(s, a * a),
        )


def method_name(s: Setting) -> str | None:
    if s.method == "static" and getattr(s.reference, "spec", None) is not None:
        return s.reference.spec.rope_type  # from_hf_config: the config's name for it
    return s.method


def scaling_missing(s: Setting) -> Iterator[Hypothesis]:
    """Plain RoPE frequencies where the reference scales them."""
    if s.method is None:
        return
    yield s.hypothesis(
        "scaling_missing",
        "the scaling method not applied",
        f"your fn uses plain RoPE frequencies (base {s.base:.10g}, attention factor 1): the "
        f"reference's {method_name(s)!r} scaling is missing",
        frequencies=fixed(ScaledFrequencies(plain_inv_freq(s.rotary_dim, s.base), 1.0)),
    )


def short_and_long(s: Setting):
    """The frequencies inside the original context and past it, if the method switches."""
    if s.method is None:
        return None
    context = original_context(s.reference)
    if context is None:
        return None
    factor = s.reference.scaling_params.get("factor")
    longer = max(int(math.ceil(factor * context)) if factor else context + 1, context + 1)
    short, long_ = s.reference.frequencies(0), s.reference.frequencies(longer)
    if torch.equal(short.inv_freq, long_.inv_freq):
        return None
    return context, longer, short, long_


# What each length-dependent method calls its switch made once, and who does so.
LOAD_TIME = {
    "longrope": (
        "the LongRoPE switch fixed at load time",
        "vLLM chooses once from max_model_len (long factors when it exceeds the original "
        "context; phi3_long_rope_scaled_rope.py), TensorRT-LLM from max_seq_len, llama.cpp from "
        "n_ctx, mlx-lm always takes the long factors; transformers switches per call",
    ),
    "dynamic_ntk": (
        "dynamic NTK frozen at the maximum length",
        "vLLM and SGLang build one cos/sin cache at max_position x factor "
        "(dynamic_ntk_scaling_rope.py); transformers grows the base with each call's length",
    ),
}


def length_never(s: Setting) -> Iterator[Hypothesis]:
    """A length-dependent method kept at its original-context frequencies."""
    switch = short_and_long(s)
    if switch is not None:
        context, _, short, _ = switch
        title, engines = LOAD_TIME.get(s.method, ("the length-dependent switch never made", ""))
        if s.method == "longrope":
            title += " (short factors)"
        elif s.method == "dynamic_ntk":
            title, engines = "the length-dependent switch never made", ""
        yield s.hypothesis(
            "length_never",
            title,
            f"your fn keeps the original-context frequencies of {method_name(s)!r} past "
            f"{context} positions, where the reference switches per call"
            + (f" ({engines}; with a maximum length at most the original context)" if engines
               else ""),
            frequencies=fixed(short),
        )  # fmt: skip


def length_always(s: Setting) -> Iterator[Hypothesis]:
    """A length-dependent method at its extended frequencies for every call."""
    switch = short_and_long(s)
    if switch is not None:
        _, longer, _, long_ = switch
        title, engines = LOAD_TIME.get(s.method, ("the extended frequencies at every length", ""))
        if s.method == "longrope":
            title += " (long factors)"
        yield s.hypothesis(
            "length_always",
            title,
            f"your fn uses the extended frequencies of {method_name(s)!r} (length {longer}) for "
            "every call, also inside the original context" + (f" ({engines})" if engines else ""),
            frequencies=fixed(long_),
        )


# --------------------------------------------------------------------------- precision

F32, BF16, F16 = torch.float32, torch.bfloat16, torch.float16
PRECISION_SLOTS = (
    "positions",
    "inv_freq",
    "angles",
    "cos/sin tables",
)  # the order of Model.precision
PRECISION_WHY = {
    "positions": {
        BF16: "bfloat16 keeps 8 significant bits: above 256 positions step by 2 (257 becomes "
        "256), and the step doubles with every power of two",
        F16: "float16 keeps 11 significant bits (positions above 2048 step by 2) and overflows "
        "to infinity past 65504",
    },
    "inv_freq": {
        BF16: "each frequency is off by up to 2^-8 of itself, so the angle error grows with "
        "the position (a module cast with .to(torch.bfloat16) does this)",
        F16: "each frequency is off by up to 2^-11 of itself, so the angle error grows with "
        "the position (a module cast with .half() does this)",
    },
    "angles": {
        BF16: "each angle keeps 8 significant bits, so the error grows with the position "
        "(autocast around the angle product does this)",
        F16: "each angle keeps 11 significant bits and overflows past 65504, so the error grows "
        "with the position (autocast around the angle product does this)",
    },
    "cos/sin tables": {
        BF16: "every cos and sin is rounded to 8 significant bits: an error of about 4e-3 at "
        "every position",
        F16: "every cos and sin is rounded to 11 significant bits: an error of about 5e-4 at "
        "every position",
    },
}


def low_precision(s: Setting) -> Iterator[Hypothesis]:
    """One quantity of the common float32 pipeline held in bfloat16 or float16."""
    for slot, what in enumerate(PRECISION_SLOTS):
        for low in (BF16, F16):
            precision = [F32] * 4
            precision[slot] = low
            yield s.hypothesis(
                f"precision_{what}_{dtype_name(low)}",
                f"{what} in {dtype_name(low)}",
                f"your fn holds the {what} in {dtype_name(low)}: {PRECISION_WHY[what][low]}. Keep "
                "positions and frequencies in float32 or better, and form the angles in float64 "
                "where you can",
                precision=tuple(precision),
            )


def two_low_precisions(s: Setting) -> Iterator[Hypothesis]:
    """Two quantities of the pipeline in the same low-precision dtype."""
    for (i, a), (j, b) in itertools.combinations(enumerate(PRECISION_SLOTS), 2):
        for low in (BF16, F16):
            precision = [F32] * 4
            precision[i] = precision[j] = low
            note = (
                " (positions built with arange(dtype=inv_freq.dtype) after the module was cast "
                "to bfloat16: GPT-NeoX's published bug)"
                if (a, b) == ("positions", "inv_freq") and low == BF16
                else ""
            )
            yield s.hypothesis(
                f"precision_{a}_{b}_{dtype_name(low)}",
                f"{a} and {b} in {dtype_name(low)}",
                f"your fn holds both the {a} and the {b} in {dtype_name(low)}{note}. Keep "
                "positions and frequencies in float32 or better",
                precision=tuple(precision),
            )


# --------------------------------------------------------------------------- the table

BUG_MODELS: dict[str, BugModel] = {
    "layout": BugModel("the other pair layout", layout_swapped),
    "table_layout": BugModel("a cos/sin table laid out for the other layout", table_layout),
    "output_order": BugModel("results written back in the other order", output_order),
    "shifted_positions": BugModel("positions off by one", shifted_positions),
    "ignored_positions": BugModel("positions ignored", ignored_positions),
    "no_rotation": BugModel("no rotation at all", no_rotation),
    "direction": BugModel("the rotation in the other direction", other_direction),
    "rotary_dim_ignored": BugModel("rotary_dim ignored", rotary_dim_ignored),
    "head_width": BugModel("frequencies computed over head_dim", head_width_frequencies),
    "partial": BugModel("partial rotary", partial_rotary),
    "base": BugModel("a different base", other_base),
    "from_one": BugModel("frequencies indexed from 1", indexed_from_one),
    "all_divided": BugModel("every frequency divided by one constant", all_divided),
    "factor_missing": BugModel("the attention factor missing", factor_missing),
    "factor_doubled": BugModel("the attention factor applied twice", factor_doubled),
    "scaling_missing": BugModel("the scaling method not applied", scaling_missing),
    "length_never": BugModel("the length-dependent switch never made", length_never),
    "length_always": BugModel("the extended frequencies at every length", length_always),
    **ENGINE_BUG_MODELS,
    "precision": BugModel("a quantity held in bfloat16 or float16", low_precision),
    "two_precisions": BugModel("two quantities in low precision", two_low_precisions),
}
"""Bug name to its row, in the order a report lists the matches."""


def candidate_models(reference: RotaryEmbedding, calls: list[Call]) -> list[Hypothesis]:
    """Every candidate model of every row, for ``reference`` and the calls made."""
    setting = Setting(reference, calls)
    return [h for row in BUG_MODELS.values() for h in row.candidates(setting)]
