r"""Rows of the bug table: conventions engines follow, each named with who follows it.

YaRN's band edges truncated or not, YaRN's attention factor curves, dynamic NTK read as
NTK-alpha, Llama 3's frequency factors exchanged (in transformers' branch order and in
vLLM's). Each row carries its example (see ``_bugs_rotation.py``).
"""

from __future__ import annotations

import math
from collections.abc import Iterator

import torch

from ..absolute import inv_freq as plain_inv_freq
from ..rope import RotaryEmbedding
from ..rope_scaling import ScaledFrequencies, yarn, yarn_mscale
from ._common import fmt
from ._setting import BugModel, Example, Hypothesis, Setting, fixed
from ._wrong import float32_rope


def _released(name: str) -> RotaryEmbedding:
    from ..models import released_config

    return RotaryEmbedding.from_hf_config(released_config(name))


def _yarn_params(s: Setting) -> dict | None:
    if s.method != "yarn":
        return None
    return dict(s.reference.scaling_params)


def yarn_truncate(s: Setting) -> Iterator[Hypothesis]:
    """YaRN's band edges floored and ceiled, or not: the other ``truncate``."""
    params = _yarn_params(s)
    if params is None:
        return
    truncate = bool(params.get("truncate", True))
    flipped = {**params, "truncate": not truncate}
    freqs = yarn(s.rotary_dim, s.base, **flipped)
    if torch.equal(freqs.inv_freq, s.frequencies(0).inv_freq):
        return
    if truncate:
        title, words = "YaRN's band edges not truncated", "keeps the fractional band edges"
        engines = "truncate: false, as gpt-oss's config asks"
    else:
        title, words = "YaRN's band edges truncated", "floors and ceils the band edges"
        engines = (
            "llama.cpp (ggml_rope_yarn_corr_dims), TensorRT-LLM and mlx-lm always do; vLLM "
            "did until PR #28244 (issue #27722); the config says truncate: false (gpt-oss)"
        )
    yield s.hypothesis(
        "yarn_truncate",
        title,
        f"your fn {words} of YaRN's ramp where the reference does not ({engines})",
        frequencies=fixed(ScaledFrequencies(freqs.inv_freq, s.attention_factor)),
    )


def example_yarn_truncate() -> Example:
    # llama.cpp, TensorRT-LLM and mlx-lm truncate; gpt-oss's config says truncate: false
    reference = _released("gpt-oss (YaRN, truncate false)")
    params = {**reference.scaling_params, "truncate": True}
    truncated = yarn(reference.rotary_dim, reference.base, **params)
    fn = float32_rope(truncated.inv_freq, attention_factor=reference.attention_factor)
    return Example(fn, reference, "YaRN's band edges truncated")


def yarn_attention(s: Setting) -> Iterator[Hypothesis]:
    """YaRN's attention factor from another curve or reading of the config."""
    params = _yarn_params(s)
    if params is None:
        return
    factor, a = float(params["factor"]), s.attention_factor
    candidates = [
        (
            "yarn_default_factor",
            "YaRN's 0.1 ln s + 1 instead of the config's attention factor",
            yarn_mscale(factor),
            "the config's attention_factor (or mscale / mscale_all_dim, whose ratio HF uses) "
            "is ignored and the default curve used (mlx-lm ignores attention_factor; vLLM's "
            "and SGLang's generic YaRN paths compute it themselves)",
        ),
        (
            "yarn_007",
            "YaRN's attention factor 0.07 ln s + 1",
            0.07 * math.log(factor) + 1 if factor > 1 else 1.0,
            "TeleChat3's curve (vLLM telechat3_scaling_rope.py), not YaRN's 0.1 ln s + 1",
        ),
        (
            "yarn_multiplier",
            "the attention factor read as a multiplier",
            a * yarn_mscale(factor),
            "HF's final attention_factor multiplied by 0.1 ln s + 1 again, as engines that "
            "read it as attn_factor do (vLLM, SGLang; PRs vllm #46280, sglang #33558)",
        ),
    ]
    seen = {round(a, 12), 1.0, round(a * a, 12)}  # the reference, factor_missing, factor_doubled
    for key, title, value, why in candidates:
        if round(value, 12) in seen:
            continue
        seen.add(round(value, 12))
        yield s.hypothesis(
            key,
            title,
            f"your fn multiplies cos and sin by {fmt(value)} where the reference has "
            f"{fmt(a)}: {why}",
            frequencies=lambda n, v=value: ScaledFrequencies(s.frequencies(n).inv_freq, v),
        )


def example_yarn_attention() -> Example:
    reference = _released("Qwen2.5 (YaRN)")  # TeleChat3's curve on a YaRN model
    fn = float32_rope(reference.inv_freq, attention_factor=0.07 * math.log(4.0) + 1)
    return Example(fn, reference, "YaRN's attention factor 0.07 ln s + 1")


def ntk_alpha(s: Setting) -> Iterator[Hypothesis]:
    """Dynamic NTK read as Hunyuan's NTK-alpha: one raised base at every length."""
    if s.method != "dynamic_ntk":
        return
    factor = float(s.reference.scaling_params["factor"])
    r = s.rotary_dim
    raised = s.base * factor ** (r / (r - 2))
    yield s.hypothesis(
        "ntk_alpha",
        "dynamic NTK read as NTK-alpha",
        f"your fn uses one base {raised:.6g} = base x alpha^(d/(d-2)) with alpha = factor = "
        f"{factor:g} at every length: Hunyuan's NTK-alpha, which TensorRT-LLM applies for "
        "rope_scaling type 'dynamic' (tensorrt_llm/functional.py, RopeEmbeddingUtils), and vLLM "
        "and SGLang when the config has 'alpha'; transformers' dynamic NTK grows the base with "
        "the length only past the original context",
        frequencies=fixed(ScaledFrequencies(plain_inv_freq(r, raised), 1.0)),
        base=raised,
    )


def example_ntk_alpha() -> Example:
    reference = RotaryEmbedding(
        128, layout="half",
        scaling={"method": "dynamic_ntk", "factor": 4.0, "original_max_len": 2048},
    )  # fmt: skip
    fn = float32_rope(plain_inv_freq(128, 10000.0 * 4.0 ** (128 / 126)))  # TensorRT-LLM
    return Example(fn, reference, "dynamic NTK read as NTK-alpha")


def llama3_swapped(s: Setting) -> Iterator[Hypothesis]:
    """Llama 3's low and high frequency factors exchanged, in either engine's branch order.

    With the two exchanged the formula's branches no longer agree with each other, so the
    result depends on the order in which the code tests them: transformers tests "longer than
    the low-frequency wavelength" first, vLLM (llama3_rope.py) "shorter than the high-frequency
    wavelength" first.
    """
    if s.method != "llama3":
        return
    params = s.reference.scaling_params
    factor, length = float(params.get("factor", 8.0)), float(params.get("original_max_len", 8192))
    low, high = (
        float(params.get("high_freq_factor", 4.0)),
        float(params.get("low_freq_factor", 1.0)),
    )
    if low == high:
        return
    # the two formulas with the two factors exchanged (posenc_ref.llama3 refuses them)
    omega = plain_inv_freq(s.rotary_dim, s.base)
    wavelength = 2 * math.pi / omega
    smooth = (length / wavelength - low) / (high - low)
    blend = (1 - smooth) * omega / factor + smooth * omega
    kept = torch.where(wavelength > length / low, omega / factor, omega)
    middle = ~(wavelength < length / high) & ~(wavelength > length / low)
    transformers_order = torch.where(middle, blend, kept)
    vllm_order = torch.where(
        wavelength < length / high,
        omega,
        torch.where(wavelength > length / low, omega / factor, blend),
    )
    words = (
        f"your fn uses low_freq_factor={low:g} and high_freq_factor={high:g} where the config "
        f"has {params.get('low_freq_factor', 1.0):g} and {params.get('high_freq_factor', 4.0):g}: "
        "the pairs between the two wavelengths are scaled wrong"
    )
    orders = [("transformers", transformers_order), ("vllm", vllm_order)]
    if torch.equal(transformers_order, vllm_order):
        orders = orders[:1]
    for name, swapped in orders:
        where = (
            "transformers' branch order (the low-frequency test first)"
            if name == "transformers"
            else "vLLM's branch order (the high-frequency test first: llama3_rope.py)"
        )
        yield s.hypothesis(
            f"llama3_swapped_{name}",
            "Llama 3's low and high frequency factors swapped",
            f"{words}, in {where}",
            frequencies=fixed(ScaledFrequencies(swapped, s.attention_factor)),
        )


def example_llama3_swapped() -> Example:
    # vLLM's Llama3RotaryEmbedding._compute_inv_freq order, given the two factors exchanged
    reference = _released("Llama 3.1")
    omega = plain_inv_freq(128, 500000.0)
    wavelength = 2 * math.pi / omega
    low, high, length, factor = 4.0, 1.0, 8192.0, 8.0
    smooth = (length / wavelength - low) / (high - low)
    inv_freq = torch.where(
        wavelength < length / high,
        omega,
        torch.where(wavelength > length / low, omega / factor,
                    (1 - smooth) * omega / factor + smooth * omega),
    )  # fmt: skip
    return Example(float32_rope(inv_freq), reference,
                   "Llama 3's low and high frequency factors swapped")  # fmt: skip


CONVENTION_BUG_MODELS: dict[str, BugModel] = {
    "yarn_truncate": BugModel("YaRN's band edges truncated or not", yarn_truncate,
                              example_yarn_truncate, "conventions"),
    "yarn_attention": BugModel("YaRN's attention factor curves", yarn_attention,
                               example_yarn_attention, "conventions"),
    "ntk_alpha": BugModel("dynamic NTK read as NTK-alpha", ntk_alpha, example_ntk_alpha,
                          "conventions"),
    "llama3_swapped": BugModel("Llama 3's frequency factors swapped", llama3_swapped,
                               example_llama3_swapped, "conventions"),
}  # fmt: skip
"""The rows of engines' conventions, in report order."""
