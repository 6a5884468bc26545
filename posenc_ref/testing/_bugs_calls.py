r"""Rows of the bug table: engines' call patterns, and M-RoPE with images and videos.

Call patterns: a decode step off by one, a length switch made on a chunk's length, one offset
for a whole batch or packed row, positions running on across packed sequences, an in-place
update that reads its own output. M-RoPE: sections in the wrong order, consecutive instead of
interleaved sections (and the reverse, Qwen3-VL's rule on a Qwen2.5-VL model), the 1-D
fallback, text that does not resume after the image. Each row carries its example (see
``_bugs_rotation.py``).
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator

import torch

from ..mrope import MROPE_ASSIGNMENTS, mrope_pair_rows
from ..rope import RotaryEmbedding
from ..rope_scaling import ScaledFrequencies
from ._adapters import inplace_fn, offset_fn, offsets_fn
from ._calls import Call, position_runs
from ._plan import mrope_segments
from ._setting import BugModel, Example, Hypothesis, Setting
from ._wrong import rotate


def _half() -> RotaryEmbedding:
    return RotaryEmbedding(64, layout="half")


def _released(name: str) -> RotaryEmbedding:
    from ..models import released_config

    return RotaryEmbedding.from_hf_config(released_config(name))


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


def example_decode() -> Example:
    reference = _half()

    def fn(q, k, positions):  # right for prefill, one off in the single-token branch
        return reference(q, k, positions + 1 if positions.numel() == 1 else positions)

    return Example(fn, reference, "the decode step off by one")


def chunk_length(s: Setting) -> Iterator[Hypothesis]:
    """A length-dependent method switched on the number of tokens in the call."""
    if "chunk" not in _kinds(s) or s.method is None:
        return
    short = s.frequencies(0).inv_freq
    if all(torch.equal(s.frequencies(c.seq_len).inv_freq, short) for c in s.calls):
        return
    yield s.hypothesis(
        "chunk_length",
        "the length switch made on the chunk's length",
        "your fn chooses the frequencies of a length-dependent method from the number of "
        "tokens in the call, not from its last position + 1: a chunk of a long prompt, or a "
        "decode step, gets the original-context frequencies",
        length=lambda call: call.n,
    )


def example_chunk_length() -> Example:
    reference = _released("Phi-3.5-mini (LongRoPE)")

    def fn(q, k, positions):  # the switch on the call's token count
        freqs = reference.frequencies(positions.numel())
        twin = RotaryEmbedding(
            reference.head_dim,
            layout=reference.layout,
            scaling=ScaledFrequencies(freqs.inv_freq, freqs.attention_factor),
        )
        return twin(q, k, positions)  # fmt: skip

    # on calls shorter than the original context, the token count never reaches the switch
    also = ("the LongRoPE switch fixed at load time (short factors)",)
    return Example(fn, reference, "the length switch made on the chunk's length", also=also)


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


def example_batch_offsets() -> Example:
    reference = _half()  # seqlen_offsets read as one integer
    fn = offsets_fn(lambda x, offsets: reference(x, x, offset=int(offsets[0]))[0])
    return Example(fn, reference, "one offset for every row")


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


def example_aliased() -> Example:
    reference = _half()

    def fn(q, k, positions):  # overwrites u, then reads it for v
        cos, sin = reference.cos_sin(positions)
        for x in (q, k):
            u, v = x[..., :32], x[..., 32:]
            u.copy_(u * cos - v * sin)
            v.copy_(u * sin + v * cos)

    return Example(inplace_fn(fn), reference, "an in-place update that reads its own output")


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


def example_mrope_order() -> Example:
    reference = _released("Qwen2-VL (M-RoPE)")

    def fn(q, k, positions):  # the height and width rows exchanged
        return reference(q, k, positions[[0, 2, 1]] if positions.dim() == 2 else positions)

    return Example(fn, reference, "M-RoPE sections in the wrong order")


def qwen3_interleave(section: tuple[int, ...], pairs: int) -> torch.Tensor:
    """The row of each pair by Qwen3-VL's rule, for any section.

    Pair i takes row j = 1 or 2 where i = j mod 3 and i < 3 section[j], the time row elsewhere:
    transformers' Qwen3-VL slices ``offset:3 * section[j]:3`` of the pairs, so a section larger
    than the time row's share is cut at the last pair, not refused.
    """
    rows = torch.zeros(pairs, dtype=torch.long)
    for row in (1, 2):
        rows[row : min(3 * section[row], pairs) : 3] = row
    return rows


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
            if name != "interleaved":
                continue
            other = qwen3_interleave(section, s.rotary_dim // 2)
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


def example_mrope_assignment() -> Example:
    # Qwen3-VL's interleaved sections where Qwen2.5-VL takes them consecutively
    reference = _released("Qwen2.5-VL (M-RoPE)")
    rows = qwen3_interleave(tuple(reference.mrope_section), reference.rotary_dim // 2)
    inv_freq = reference.inv_freq.double()

    def fn(q, k, positions):
        if positions.dim() == 1:
            positions = positions.expand(3, -1)
        angles = (positions.double()[rows].T * inv_freq).float()  # (n, pairs): own row each
        cos, sin = angles.cos(), angles.sin()
        return rotate(q, cos, sin, "half"), rotate(k, cos, sin, "half")

    return Example(fn, reference, "interleaved sections instead of consecutive ones")


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


def example_mrope_fallback() -> Example:
    reference = _released("Qwen2-VL (M-RoPE)")  # an offset-only kernel: the token's index
    fn = offset_fn(lambda x, offset: reference(x, x, offset=offset)[0])
    return Example(fn, reference, "the 1-D fallback")


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


def example_mrope_resume() -> Example:
    reference = _released("Qwen2-VL (M-RoPE)")

    def fn(q, k, positions):  # text after a grid numbered from the grid's token count
        if positions.dim() == 2:
            positions = mrope_segments(int(positions[0, 0]), resume=False)[0]
        return reference(q, k, positions)

    return Example(fn, reference, "text positions that do not resume after the image")


CALL_BUG_MODELS: dict[str, BugModel] = {
    "decode": BugModel("the decode step off by one or at position 0", decode_step,
                       example_decode, "call patterns"),
    "chunk_length": BugModel("the length switch made on the chunk's length", chunk_length,
                             example_chunk_length, "call patterns"),
    "batch_offsets": BugModel("per-row or per-sequence offsets", batch_offsets,
                              example_batch_offsets, "call patterns"),
    "aliased": BugModel("an in-place update that reads its own output", aliased_update,
                        example_aliased, "call patterns"),
    "mrope_order": BugModel("M-RoPE sections in the wrong order", mrope_order,
                            example_mrope_order, "M-RoPE"),
    "mrope_assignment": BugModel("consecutive vs interleaved sections", mrope_assignment,
                                 example_mrope_assignment, "M-RoPE"),
    "mrope_fallback": BugModel("the 1-D fallback", mrope_fallback, example_mrope_fallback,
                               "M-RoPE"),
    "mrope_resume": BugModel("text positions that do not resume after the image", mrope_resume,
                             example_mrope_resume, "M-RoPE"),
}  # fmt: skip
"""The rows of engines' call patterns and of M-RoPE, in report order."""
