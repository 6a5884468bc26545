r"""Bug models of engines: their call patterns, M-RoPE with images, their conventions.

Rows of the kit's table of mistakes (:data:`~._bugs.BUG_MODELS` takes them in this order):

- call patterns: a decode step off by one, a length switch made on a chunk's length, one offset
  for a whole batch or packed row, positions running on across packed sequences, only as many
  query heads rotated as there are key heads, an in-place update that reads its own output;
- M-RoPE with image and video positions: sections in the wrong order, consecutive instead of
  interleaved sections (or the reverse), the 1-D fallback, text that does not resume after the
  image;
- conventions engines follow, each named with the engines known to follow it, from their code:
  YaRN's band edges truncated or not, YaRN's attention factor curves, dynamic NTK read as
  NTK-alpha.

Each is a small function of the :class:`~._setting.Setting` that yields the candidate models.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterator

import torch

from ..absolute import inv_freq as plain_inv_freq
from ..mrope import MROPE_ASSIGNMENTS, mrope_pair_rows
from ..rope_scaling import ScaledFrequencies, yarn, yarn_mscale
from ._calls import Call, position_runs
from ._common import fmt
from ._setting import BugModel, Hypothesis, Setting, fixed

# --------------------------------------------------------------------------- call patterns


def _kinds(s: Setting) -> set[str]:
    return {call.kind for call in s.calls}


def decode_step(s: Setting) -> Iterator[Hypothesis]:
    """A single-token call (the KV-cache decode branch) at the wrong position."""
    if "decode" not in _kinds(s):
        return
    for shift, words in ((1, "m + 1"), (-1, "m - 1")):
        yield s.hypothesis(
            f"decode_{shift:+d}",
            "the decode step off by one",
            f"your fn rotates a single-token call at position m by the angles of {words}, and "
            "longer calls right: the branch for one new token (the KV-cache decode step) "
            "counts its offset differently from prefill",
            positions=lambda call, d=shift: call.positions + (d if call.n == 1 else 0),
        )
    yield s.hypothesis(
        "decode_zero",
        "the decode step at position 0",
        "your fn rotates a single-token call as position 0 (the decode branch ignores the "
        "offset, or the cache length is never passed), and longer calls right",
        positions=lambda call: call.positions * (0 if call.n == 1 else 1),
    )


def chunk_length(s: Setting) -> Iterator[Hypothesis]:
    """A length-dependent method switched on the number of tokens in the call."""
    if "chunk" not in _kinds(s) or s.method is None:
        return
    short = s.reference.frequencies(0).inv_freq
    if all(torch.equal(s.reference.frequencies(c.seq_len).inv_freq, short) for c in s.calls):
        return
    yield s.hypothesis(
        "chunk_length",
        "the length switch made on the chunk's length",
        "your fn chooses the frequencies of a length-dependent method from the number of "
        "tokens in the call, not from its last position + 1: a chunk of a long prompt, or a "
        "decode step, gets the original-context frequencies",
        length=lambda call: call.n,
    )


def _runs(call: Call) -> list[tuple[int, int, int]]:
    """``(first index, first position, count)`` of each run of a 1-D call's positions."""
    out, index = [], 0
    for first, count in position_runs(call.positions):
        out.append((index, first, count))
        index += count
    return out


def _per_run(call: Call, starts) -> torch.Tensor:
    """Each run of a packed call restarted at ``starts(run)``."""
    pieces = [
        torch.arange(count) + starts(i, first) for i, (_, first, count) in enumerate(_runs(call))
    ]
    return torch.cat(pieces)


def _one_row(call: Call) -> bool:
    return call.positions.dim() == 1 and not call.rows


def batch_offsets(s: Setting) -> Iterator[Hypothesis]:
    """Rows or packed sequences that should start at their own offsets."""
    kinds = _kinds(s)
    if "rows" in kinds:
        yield s.hypothesis(
            "rows_one_offset",
            "one offset for every row",
            "your fn rotates every row of the batch from the first row's offset "
            "(seqlen_offsets taken as one integer, or left padding not counted per row)",
            positions=lambda c: (
                c.positions[:1].expand_as(c.positions) if c.kind == "rows" else c.positions
            ),
        )
        yield s.hypothesis(
            "rows_from_zero",
            "row offsets ignored",
            "your fn rotates every row of the batch from position 0 (the per-row offsets, "
            "seqlen_offsets or the cache lengths, are not applied)",
            positions=lambda c: (
                c.positions - c.positions[..., :1] if c.kind == "rows" else c.positions
            ),
        )
    if "packed" in kinds:
        yield s.hypothesis(
            "packed_run_on",
            "positions running on across packed sequences",
            "your fn numbers the tokens of a packed row straight through (cu_seqlens not used "
            "to restart the positions of each sequence)",
            positions=lambda c: (
                c.positions[0] + torch.arange(c.n) if c.kind == "packed" else c.positions
            ),
        )
        yield s.hypothesis(
            "packed_from_zero",
            "sequence offsets ignored in a packed row",
            "your fn restarts every packed sequence at position 0: the per-sequence offsets "
            "(flash-attn's seqlen_offsets with cu_seqlens, TransformerEngine's start_positions) "
            "are not applied",
            positions=lambda c: (  # every 1-D call restarts: its offset too
                _per_run(c, lambda i, first: 0) if _one_row(c) else c.positions
            ),
        )
        yield s.hypothesis(
            "packed_one_offset",
            "one offset for every packed sequence",
            "your fn restarts every packed sequence at the first sequence's offset",
            positions=lambda c: (
                _per_run(c, lambda i, first: int(c.positions[0])) if _one_row(c) else c.positions
            ),
        )


def query_heads(s: Setting) -> Iterator[Hypothesis]:
    """GQA/MQA: only as many query heads rotated as there are key heads."""
    if any(c.inputs[0].shape[1] > c.inputs[1].shape[1] for c in s.calls):
        yield s.hypothesis(
            "q_heads",
            "only as many query heads rotated as key heads",
            "your fn rotates the first num_kv_heads query heads and leaves the rest unrotated "
            "(a kernel whose head loop runs over the key's heads, with grouped-query or "
            "multi-query attention)",
            q_heads="k",
        )


def aliased_update(s: Setting) -> Iterator[Hypothesis]:
    """An in-place update that writes the first coordinate of a pair before reading it again."""
    yield s.hypothesis(
        "aliased",
        "an in-place update that reads its own output",
        "your fn computes u' = u cos - v sin, stores it over u, and then computes "
        "v' = u' sin + v cos from the new value (an in-place kernel needs both inputs of a pair "
        "read before either is written)",
        aliased=True,
    )


def offset_twice(s: Setting) -> Iterator[Hypothesis]:
    """The offset added to positions that already hold it."""
    if any(c.start > 0 for c in s.calls):
        yield s.hypothesis(
            "offset_twice",
            "the offset applied twice",
            "your fn rotates position m by the angles of m + start, where start is the first "
            "position of the call (positions that already hold the KV-cache offset get it "
            "added again)",
            positions=lambda c: (
                c.positions + (c.positions.min() if c.rows else c.positions[..., :1])
            ),
        )


# --------------------------------------------------------------------------- M-RoPE


def _mrope(s: Setting):
    section = getattr(s.reference, "mrope_section", None)
    if section is None or not any(c.rows for c in s.calls):
        return None
    return tuple(section), s.reference.mrope_assignment


def mrope_order(s: Setting) -> Iterator[Hypothesis]:
    """The position rows, or the section counts, in another order."""
    found = _mrope(s)
    if found is None:
        return
    section, assignment = found
    names = MROPE_ASSIGNMENTS[assignment].rows
    rows = s.ref.pair_rows
    seen = {tuple(rows.tolist())}
    for order in itertools.permutations(range(len(section))):
        if order == tuple(range(len(section))):
            continue
        swapped = torch.tensor(order)[rows]
        if tuple(swapped.tolist()) in seen:
            continue
        seen.add(tuple(swapped.tolist()))
        words = ", ".join(f"{names[j]} -> {names[order[j]]}" for j in range(len(order)))
        yield s.hypothesis(
            f"mrope_rows_{order}",
            "M-RoPE sections in the wrong order",
            f"your fn gives each section another position row ({words}): the rows of "
            "positions (time, height, width) are in another order than the sections expect",
            pair_rows=swapped,
        )
    for permuted in sorted(set(itertools.permutations(section))):
        try:
            other = mrope_pair_rows(list(permuted), assignment=assignment)
        except ValueError:
            continue
        if tuple(other.tolist()) in seen:
            continue
        seen.add(tuple(other.tolist()))
        yield s.hypothesis(
            f"mrope_section_{permuted}",
            "M-RoPE sections in the wrong order",
            f"your fn uses mrope_section {list(permuted)} where the reference has {list(section)}",
            pair_rows=other,
        )


def mrope_assignment(s: Setting) -> Iterator[Hypothesis]:
    """Another rule for which pairs a row gets (consecutive vs interleaved sections)."""
    found = _mrope(s)
    if found is None:
        return
    section, assignment = found
    rows = MROPE_ASSIGNMENTS[assignment].rows
    for name, entry in MROPE_ASSIGNMENTS.items():
        if name == assignment or entry.rows != rows:
            continue
        try:
            other = mrope_pair_rows(list(section), assignment=name)
        except ValueError:
            continue
        if torch.equal(other, s.ref.pair_rows):
            continue
        yield s.hypothesis(
            f"mrope_{name}",
            f"{name} sections instead of {assignment} ones",
            f"your fn assigns the pairs to the position rows the {name} way ({entry.rule}; "
            f"{entry.models}); the reference is {assignment} "
            f"({MROPE_ASSIGNMENTS[assignment].models})",
            pair_rows=other,
        )


def mrope_fallback(s: Setting) -> Iterator[Hypothesis]:
    """One position per token for every pair: the 1-D RoPE an M-RoPE model falls back to."""
    if _mrope(s) is None:
        return
    yield s.hypothesis(
        "mrope_token_index",
        "the 1-D fallback",
        "your fn rotates every pair of a token by its index in the sequence (the first "
        "position plus the token's place), as a plain 1-D RoPE does: image and video tokens "
        "lose their height and width positions, and the text after them is shifted (mlx-lm's "
        "initialize_rope maps 'mrope' to a plain RoPE; an offset-only kernel can do no more)",
        positions=lambda c: c.plan.variants.get("token_index", c.positions),
    )
    yield s.hypothesis(
        "mrope_time_row",
        "the 1-D fallback",
        "your fn rotates every pair by the time row alone (the text position): the height and "
        "width rows of image and video tokens are ignored",
        positions=lambda c: c.plan.variants.get("time_row", c.positions),
    )


def mrope_resume(s: Setting) -> Iterator[Hypothesis]:
    """Text after an image or video continuing from the token count."""
    if _mrope(s) is None:
        return
    yield s.hypothesis(
        "mrope_no_resume",
        "text positions that do not resume after the image",
        "your fn continues the text after an image or video from the number of tokens the "
        "grid has; M-RoPE resumes at the grid's largest position + 1 (start + max(t, h, w))",
        positions=lambda c: c.plan.variants.get("no_resume", c.positions),
    )


# --------------------------------------------------------------------------- conventions


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
    if torch.equal(freqs.inv_freq, s.reference.frequencies(0).inv_freq):
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
            frequencies=lambda n, v=value: ScaledFrequencies(
                s.reference.frequencies(n).inv_freq, v
            ),
        )


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


def llama3_swapped(s: Setting) -> Iterator[Hypothesis]:
    """Llama 3's low and high frequency factors exchanged (the smoothing band mislaid)."""
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
    # transformers' formula with the two factors exchanged (posenc_ref.llama3 refuses them)
    omega = plain_inv_freq(s.rotary_dim, s.base)
    wavelength = 2 * math.pi / omega
    kept = torch.where(wavelength > length / low, omega / factor, omega)
    smooth = (length / wavelength - low) / (high - low)
    middle = ~(wavelength < length / high) & ~(wavelength > length / low)
    swapped = torch.where(middle, (1 - smooth) * kept / factor + smooth * kept, kept)
    yield s.hypothesis(
        "llama3_swapped",
        "Llama 3's low and high frequency factors swapped",
        f"your fn uses low_freq_factor={low:g} and high_freq_factor={high:g} where the config "
        f"has {params.get('low_freq_factor', 1.0):g} and {params.get('high_freq_factor', 4.0):g}: "
        "the smoothed band of pairs between the two wavelengths is placed and sloped wrong",
        frequencies=fixed(ScaledFrequencies(swapped, s.attention_factor)),
    )


ENGINE_BUG_MODELS: dict[str, BugModel] = {
    "decode": BugModel("the decode step off by one or at position 0", decode_step),
    "chunk_length": BugModel("the length switch made on the chunk's length", chunk_length),
    "batch_offsets": BugModel("per-row or per-sequence offsets", batch_offsets),
    "query_heads": BugModel("only as many query heads rotated as key heads", query_heads),
    "aliased": BugModel("an in-place update that reads its own output", aliased_update),
    "offset_twice": BugModel("the offset applied twice", offset_twice),
    "mrope_order": BugModel("M-RoPE sections in the wrong order", mrope_order),
    "mrope_assignment": BugModel("consecutive vs interleaved sections", mrope_assignment),
    "mrope_fallback": BugModel("the 1-D fallback", mrope_fallback),
    "mrope_resume": BugModel("text positions that do not resume after the image", mrope_resume),
    "yarn_truncate": BugModel("YaRN's band edges truncated or not", yarn_truncate),
    "yarn_attention": BugModel("YaRN's attention factor curves", yarn_attention),
    "ntk_alpha": BugModel("dynamic NTK read as NTK-alpha", ntk_alpha),
    "llama3_swapped": BugModel("Llama 3's frequency factors swapped", llama3_swapped),
}
"""The engines' rows of the bug table, in report order."""
