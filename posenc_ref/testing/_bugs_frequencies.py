r"""Rows of the bug table: the frequencies (base, index, widths) and the scaling methods.

Each row is a :class:`~._setting.BugModel` with its example (see ``_bugs_rotation.py``).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator

import torch

from ..absolute import inv_freq as plain_inv_freq
from ..rope import RotaryEmbedding
from ..rope_scaling import ScaledFrequencies
from ._common import fmt, nice_number
from ._plan import original_context
from ._setting import BugModel, Example, Hypothesis, Setting, fixed
from ._wrong import float32_rope

# Bases people use (GPT-NeoX/Llama 2, Llama 3, Qwen2, Mistral's 1e6, gpt-oss's 150000, ...) and
# 100 = sqrt(10000), the base an exponent of -i/d instead of -2i/d amounts to. Each one is tried
# as a hypothesis, together with the base fitted from the user's own output.
COMMON_BASES = (100.0, 10000.0, 50000.0, 100000.0, 150000.0, 500000.0, 1e6, 5e6, 1e7)
YARN = {"method": "yarn", "factor": 8.0, "original_max_len": 4096}
LLAMA3 = {"method": "llama3", "factor": 8.0, "original_max_len": 8192}


def _half(head_dim: int = 64, **kwargs) -> RotaryEmbedding:
    return RotaryEmbedding(head_dim, layout="half", **kwargs)


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


def example_base() -> Example:
    # Llama 3's base where the reference has Llama 2's
    return Example(_half(base=500000.0), _half(), "a different base")


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


def example_from_one() -> Example:
    i = torch.arange(1, 33, dtype=torch.float64)  # pair index from 1
    return Example(float32_rope(10000.0 ** (-2 * i / 64)), _half(), "frequencies indexed from 1")


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


def example_all_divided() -> Example:
    # position interpolation by 3 where the reference interpolates nothing
    reference = _half()
    return Example(float32_rope(reference.inv_freq / 3), reference,
                   "every frequency divided by one constant")  # fmt: skip


# --------------------------------------------------------------------------- scaling


def with_factor(s: Setting, factor: float) -> Callable[[int], ScaledFrequencies]:
    frequencies = s.frequencies
    return lambda n: ScaledFrequencies(frequencies(n).inv_freq, factor)


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


def example_factor_missing() -> Example:
    reference = _half(scaling=YARN)
    fn = float32_rope(reference.frequencies(0).inv_freq)  # YaRN's frequencies, no factor
    return Example(fn, reference, "the attention factor missing")


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


def example_factor_doubled() -> Example:
    reference = _half(scaling=YARN)
    freqs = reference.frequencies(0)  # the table holds a, and q and k are scaled by a again
    fn = float32_rope(freqs.inv_freq, attention_factor=freqs.attention_factor**2)
    return Example(fn, reference, "the attention factor applied twice")


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


def example_scaling_missing() -> Example:
    return Example(_half(), _half(scaling={"method": "linear", "factor": 4.0}),
                   "the scaling method not applied")  # fmt: skip


def _blend(s: Setting) -> tuple[torch.Tensor, torch.Tensor, float] | None:
    """``(plain, share, factor)`` of a method that blends w/s and w per pair (YaRN, Llama 3).

    Pair i's frequency is ``plain_i (share_i + (1 - share_i) / factor)``: share 1 keeps the
    plain frequency, share 0 divides it by the factor, and the blend band is in between.
    """
    if s.method not in ("yarn", "llama3"):
        return None
    factor = float(s.reference.scaling_params.get("factor", 1.0))
    if factor <= 1.0:
        return None
    plain = plain_inv_freq(s.rotary_dim, s.base)
    omega = s.frequencies(0).inv_freq.to(torch.float64)
    share = ((omega / plain - 1 / factor) / (1 - 1 / factor)).clamp(0.0, 1.0)
    return plain, share, factor


def scaling_wrong_pairs(s: Setting) -> Iterator[Hypothesis]:
    """The factor applied to the pairs the method leaves alone, and the reverse."""
    blend = _blend(s)
    if blend is None:
        return
    plain, share, factor = blend
    flipped = plain * ((1 - share) + share / factor)
    yield s.hypothesis(
        "wrong_pairs",
        "the scaling factor on the wrong pairs",
        f"your fn divides the fast pairs' frequencies by the factor {factor:g} and keeps the "
        f"slow pairs' ({method_name(s)!r} does the reverse: the slow pairs, whose wavelength "
        "exceeds the original context, are the ones interpolated): a comparison or a "
        "torch.where with its branches exchanged",
        frequencies=fixed(ScaledFrequencies(flipped, s.attention_factor)),
    )


def example_wrong_pairs() -> Example:
    reference = _half(128, base=500000.0, scaling=LLAMA3)
    plain = plain_inv_freq(128, 500000.0)
    wavelength = 2 * math.pi / plain
    low, high = 8192 / 1.0, 8192 / 4.0  # the low- and high-frequency wavelength limits
    smooth = (8192 / wavelength - 1.0) / (4.0 - 1.0)
    flipped = torch.where(  # the two outer branches exchanged
        wavelength < high,
        plain / 8,
        torch.where(wavelength > low, plain, smooth * plain / 8 + (1 - smooth) * plain),
    )
    return Example(float32_rope(flipped), reference, "the scaling factor on the wrong pairs")


def short_and_long(s: Setting):
    """The frequencies inside the original context and past it, if the method switches."""
    if s.method is None:
        return None
    context = original_context(s.reference)
    if context is None:
        return None
    factor = s.reference.scaling_params.get("factor")
    longer = max(int(math.ceil(factor * context)) if factor else context + 1, context + 1)
    short, long_ = s.frequencies(0), s.frequencies(longer)
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


def example_length_never() -> Example:
    # LongRoPE's short factors at every length (a switch fixed at load time, short side)
    from ..models import released_config

    reference = RotaryEmbedding.from_hf_config(released_config("Phi-3.5-mini (LongRoPE)"))
    short = reference.frequencies(0)
    fn = float32_rope(short.inv_freq, attention_factor=short.attention_factor)
    also = ("the length switch made on the chunk's length",)  # the same on calls this short
    return Example(fn, reference, "the LongRoPE switch fixed at load time (short factors)",
                   also=also)  # fmt: skip


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


def example_length_always() -> Example:
    # vLLM's dynamic NTK: one cache at max_position x factor
    reference = _half(scaling={"method": "dynamic_ntk", "factor": 4.0, "original_max_len": 2048})
    fn = float32_rope(reference.frequencies(4 * 2048).inv_freq)
    return Example(fn, reference, "dynamic NTK frozen at the maximum length")


FREQUENCY_BUG_MODELS: dict[str, BugModel] = {
    "base": BugModel("a different base", other_base, example_base, "frequencies"),
    "from_one": BugModel("frequencies indexed from 1", indexed_from_one, example_from_one,
                         "frequencies"),
    "all_divided": BugModel("every frequency divided by one constant", all_divided,
                            example_all_divided, "frequencies"),
    "factor_missing": BugModel("the attention factor missing", factor_missing,
                               example_factor_missing, "scaling"),
    "factor_doubled": BugModel("the attention factor applied twice", factor_doubled,
                               example_factor_doubled, "scaling"),
    "scaling_missing": BugModel("the scaling method not applied", scaling_missing,
                                example_scaling_missing, "scaling"),
    "wrong_pairs": BugModel("the scaling factor on the wrong pairs", scaling_wrong_pairs,
                            example_wrong_pairs, "scaling"),
    "length_never": BugModel("the length-dependent switch never made", length_never,
                             example_length_never, "scaling"),
    "length_always": BugModel("the extended frequencies at every length", length_always,
                              example_length_always, "scaling"),
}  # fmt: skip
"""The rows of frequencies and scaling methods, in report order."""
