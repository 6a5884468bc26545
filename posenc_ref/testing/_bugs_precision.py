r"""Rows of the bug table: quantities held in bfloat16 or float16.

Emulated the way common code computes them (``Model.precision``): positions and frequencies as
float32 or lower, a float32 product, possibly rounded, cos/sin possibly rounded; one quantity,
two, all four (fp16 training arithmetic), or the table rounded with the attention factor in it
(vLLM's YaRN cache). Each row carries its example (see ``_bugs_rotation.py``).
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator

import torch

from ..rope import RotaryEmbedding
from ._common import dtype_name, fmt
from ._setting import BugModel, Example, Hypothesis, Setting
from ._wrong import float32_rope

YARN = {"method": "yarn", "factor": 8.0, "original_max_len": 4096}


def _half() -> RotaryEmbedding:
    return RotaryEmbedding(64, layout="half")


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


def example_low_precision() -> Example:
    # positions made with arange(dtype=torch.bfloat16): 257 becomes 256
    return Example(float32_rope(_half().inv_freq, positions=BF16), _half(),
                   "positions in bfloat16")  # fmt: skip


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


def example_two_precisions() -> Example:
    # GPT-NeoX's published bug: positions built with arange(dtype=inv_freq.dtype) after the
    # module was cast to bfloat16
    fn = float32_rope(_half().inv_freq, positions=BF16, frequencies=BF16)
    return Example(fn, _half(), "positions and inv_freq in bfloat16")


def all_low_precision(s: Setting) -> Iterator[Hypothesis]:
    """Every quantity in one low-precision dtype: fp16 (or bf16) training arithmetic."""
    for low in (BF16, F16):
        yield s.hypothesis(
            f"precision_all_{dtype_name(low)}",
            f"positions, inv_freq, angles and tables all in {dtype_name(low)}",
            f"your fn computes the whole table in {dtype_name(low)}: positions, frequencies, "
            "their product and cos/sin (GPT-NeoX's Megatron rotary under fp16 training: "
            "inv_freq a buffer cast with the model, positions made in its dtype, the product "
            "and the cache in it too). Build the table in float32 or better and cast it once",
            precision=(low, low, low, low),
        )


def example_all_low_precision() -> Example:
    fn = float32_rope(_half().inv_freq, positions=F16, frequencies=F16, angles=F16, tables=F16)
    return Example(fn, _half(), "positions, inv_freq, angles and tables all in float16")


def table_after_factor(s: Setting) -> Iterator[Hypothesis]:
    """The table rounded to low precision with the attention factor already in it."""
    if s.attention_factor == 1.0:
        return
    for low in (BF16, F16):
        yield s.hypothesis(
            f"table_after_factor_{dtype_name(low)}",
            f"the cos/sin table rounded to {dtype_name(low)} after the attention factor",
            f"your fn multiplies cos and sin by the attention factor {fmt(s.attention_factor)} "
            f"in float32 and then stores the table in {dtype_name(low)} (vLLM's YaRN cache: "
            "cos * mscale, sin * mscale, then cache.to(dtype) for the model's dtype; "
            "_match_cos_sin_cache_dtype casts it again to the activations'): each value is off "
            "by up to half a step of that dtype. Keep the cache in float32 for float32 "
            "activations",
            precision=(F32, F32, F32, low),
            factor_in_table=True,
        )


def example_table_after_factor() -> Example:
    reference = RotaryEmbedding(64, layout="half", scaling=YARN)
    freqs = reference.frequencies(0)
    fn = float32_rope(freqs.inv_freq, attention_factor=freqs.attention_factor, tables=F16,
                      factor_in_table=True)  # fmt: skip
    return Example(fn, reference, "the cos/sin table rounded to float16 after the attention factor")


PRECISION_BUG_MODELS: dict[str, BugModel] = {
    "table_after_factor": BugModel("the table rounded after the attention factor",
                                   table_after_factor, example_table_after_factor, "precision"),
    "precision": BugModel("a quantity held in bfloat16 or float16", low_precision,
                          example_low_precision, "precision"),
    "two_precisions": BugModel("two quantities in low precision", two_low_precisions,
                               example_two_precisions, "precision"),
    "all_precision": BugModel("every quantity in low precision", all_low_precision,
                              example_all_low_precision, "precision"),
}  # fmt: skip
"""The rows of low precision, in report order."""
