r"""Rows of the bug table: pairs and layouts, positions, the rotation, widths and heads.

Each row is a :class:`~._setting.BugModel`: a title, a function of the
:class:`~._setting.Setting` that yields the candidate models (none where the mistake cannot
apply to the reference), and an example, a wrong function written the way the mistake is made,
which the check must name (``tests/test_testing_bugs.py`` runs every row's example).
"""

from __future__ import annotations

from collections.abc import Iterator

import torch

from ..rope import RotaryEmbedding
from ..rope_scaling import ScaledFrequencies
from ._model import other_layout, written_layout
from ._setting import BugModel, Example, Hypothesis, Setting, copied_tail, layout_words
from ._wrong import rotate

HALF = "half"


def _half(head_dim: int = 64, **kwargs) -> RotaryEmbedding:
    """The examples' reference: HF's layout, base 10000 unless told otherwise."""
    return RotaryEmbedding(head_dim, layout=HALF, **kwargs)


# --------------------------------------------------------------------------- pairs and layouts


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


def example_layout() -> Example:
    # Meta's interleaved pairs run on a checkpoint converted for HF's half layout
    return Example(RotaryEmbedding(64, layout="interleaved"), _half(), "the other pair layout")


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


def example_table_layout() -> Example:
    reference = _half()

    def fn(q, k, positions):  # rotate_half, but each frequency repeated twice in a row
        angles = positions.float()[:, None] * reference.inv_freq.float()
        cos, sin = angles.repeat_interleave(2, dim=-1).cos(), angles.repeat_interleave(2, -1).sin()

        def rotate_half(x):
            return torch.cat([-x[..., 32:], x[..., :32]], dim=-1)

        return q * cos + rotate_half(q) * sin, k * cos + rotate_half(k) * sin

    return Example(fn, reference, "a cos/sin table laid out for the other layout")


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


def example_output_order() -> Example:
    # DeepSeek-V3 reads interleaved pairs and writes them in half order; this writes them back
    # where it read them
    reference = RotaryEmbedding(64, layout="interleaved", output_layout="half")
    return Example(RotaryEmbedding(64, layout="interleaved"), reference,
                   "results written back in the other order")  # fmt: skip


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


def example_shift() -> Example:
    reference = _half()
    return Example(lambda q, k, p: reference(q, k, p + 1), reference, "positions off by one")


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


def example_ignored() -> Example:
    reference = _half()  # every call rotated from 0: the KV-cache offset never applied
    fn = lambda q, k, p: reference(q, k, torch.arange(p.shape[-1]))  # noqa: E731
    return Example(fn, reference, "positions ignored")


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


def example_offset_twice() -> Example:
    reference = _half()
    return Example(lambda q, k, p: reference(q, k, p + p[0]), reference, "the offset applied twice")


# --------------------------------------------------------------------------- the rotation


def no_rotation(s: Setting) -> Iterator[Hypothesis]:
    """The queries and keys returned unrotated."""
    frequencies = s.frequencies
    yield s.hypothesis(
        "identity",
        "no rotation at all",
        "your fn returns q and k unrotated",
        positions=lambda call: torch.zeros_like(call.positions),
        frequencies=lambda n: ScaledFrequencies(frequencies(n).inv_freq, 1.0),
    )


def example_no_rotation() -> Example:
    return Example(lambda q, k, p: (q.clone(), k.clone()), _half(), "no rotation at all")


def other_direction(s: Setting) -> Iterator[Hypothesis]:
    """The rotation by minus the angle."""
    yield s.hypothesis(
        "direction",
        "the rotation in the other direction",
        "your fn rotates by -m w_i: u' = u cos + v sin, v' = v cos - u sin (a conjugated "
        "complex table, a minus sign on the wrong sin term, or rotate_half's halves swapped)",
        sign=-1.0,
    )


def example_direction() -> Example:
    reference = _half()

    def fn(q, k, positions):  # a conjugated table: e^{-i m w}
        cos, sin = reference.cos_sin(positions)
        return rotate(q, cos, -sin, HALF), rotate(k, cos, -sin, HALF)

    return Example(fn, reference, "the rotation in the other direction")


def cos_sin_swapped(s: Setting) -> Iterator[Hypothesis]:
    """Sine read where cosine belongs and the reverse: a quarter turn at position 0."""
    yield s.hypothesis(
        "cos_sin_swapped",
        "cos and sin swapped",
        "your fn multiplies by sin where the rotation takes cos and the reverse (the two "
        "halves of a cos/sin cache read in the wrong order, or cos, sin = cache.chunk(2) on a "
        "cache laid out sin first): at position 0 every pair turns a quarter turn, where "
        "nothing should turn",
        swapped=True,
    )


def example_cos_sin_swapped() -> Example:
    reference = _half()

    def fn(q, k, positions):
        cos, sin = reference.cos_sin(positions)
        return rotate(q, sin, cos, HALF), rotate(k, sin, cos, HALF)

    return Example(fn, reference, "cos and sin swapped")


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


def example_rotary_dim_ignored() -> Example:
    return Example(_half(), _half(rotary_dim=16), "rotary_dim ignored")


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


def example_head_width() -> Example:
    reference = _half(rotary_dim=16)
    wide = _half().inv_freq[:8]  # base^(-2i/64) where base^(-2i/16) belongs

    def fn(q, k, positions):
        angles = positions.float()[:, None] * wide.float()
        cos, sin = angles.cos(), angles.sin()
        return tuple(
            torch.cat([rotate(x[..., :16], cos, sin, HALF), x[..., 16:]], -1) for x in (q, k)
        )

    # base^(-2i/64) for i < 8 is (base^(1/4))^(-2i/16): the same frequencies as base 10
    return Example(fn, reference, "frequencies computed over head_dim", also=("a different base",))


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


def example_partial() -> Example:
    # GPT-NeoX's config defaults rotary_pct to 0.25: a reference built without it
    return Example(_half(rotary_dim=16), _half(), "partial rotary")


# --------------------------------------------------------------------------- heads


def query_heads(s: Setting) -> Iterator[Hypothesis]:
    """GQA/MQA: only as many query heads rotated as there are key heads."""
    if any(c.inputs[0].shape[1] > c.inputs[1].shape[1] for c in s.calls):
        yield s.hypothesis(
            "q_heads",
            "only as many query heads rotated as key heads",
            "your fn rotates the first num_kv_heads query heads and leaves the rest unrotated "
            "(a kernel whose head loop runs over the key's heads, with grouped-query or "
            "multi-query attention)",
            heads="k",
        )


def example_query_heads() -> Example:
    reference = _half()

    def fn(q, k, positions):
        q_rot, k_rot = reference(q, k, positions)
        kept = k.shape[1]  # the loop runs over the key's heads
        return torch.cat([q_rot[:, :kept], q[:, kept:]], dim=1), k_rot

    return Example(fn, reference, "only as many query heads rotated as key heads")


def first_head(s: Setting) -> Iterator[Hypothesis]:
    """Only head 0 of q and of k rotated: a flattened row of heads taken as one head."""
    if any(x.shape[1] > 1 for c in s.calls for x in c.inputs):
        yield s.hypothesis(
            "first_head",
            "only the first head rotated",
            "your fn rotates head 0 of q and of k and returns the other heads unrotated: with "
            "flattened tokens (query of shape (num_tokens, heads * head_dim)), the rotary part "
            "was cut as query[..., :rotary_dim] before the heads were split off with "
            "query.view(num_tokens, -1, head_dim)",
            heads="first",
        )


def example_first_head() -> Example:
    reference = _half()

    def fn(q, k, positions):  # what query[..., :rotary_dim] does to a (tokens, heads*dim) row
        q_rot, k_rot = reference(q[:, :1], k[:, :1], positions)
        return torch.cat([q_rot, q[:, 1:]], dim=1), torch.cat([k_rot, k[:, 1:]], dim=1)

    return Example(fn, reference, "only the first head rotated")


def head_axis(s: Setting) -> Iterator[Hypothesis]:
    """The sequence axis read from the head axis: head h turned by the call's start + h."""
    if any(x.shape[1] > 1 for c in s.calls for x in c.inputs):
        yield s.hypothesis(
            "head_axis",
            "positions taken along the head axis",
            "your fn rotates every token of head h by the position start + h (start is the "
            "call's first position): code written for (batch, seq_len, heads, head_dim) given "
            "(batch, heads, seq_len, head_dim), so that the table it slices for seq_len "
            "positions is sliced for the heads (Meta's reshape_for_broadcast, "
            "rotary-embedding-torch's seq_dim); in a decode step head 0 is right and the "
            "others are not",
            head_axis=True,
        )


def example_head_axis() -> Example:
    reference = _half()

    def fn(q, k, positions):  # x.shape[1] read as the sequence length, from the first position
        def one(x):
            p = positions[:1] + torch.arange(x.shape[1])  # (heads,)
            cos, sin = reference.cos_sin(p)
            return rotate(x, cos[:, None, :], sin[:, None, :], HALF)  # broadcast over tokens

        return one(q), one(k)

    return Example(fn, reference, "positions taken along the head axis")


ROTATION_BUG_MODELS: dict[str, BugModel] = {
    "layout": BugModel("the other pair layout", layout_swapped, example_layout, "pairs"),
    "table_layout": BugModel("a cos/sin table laid out for the other layout", table_layout,
                             example_table_layout, "pairs"),
    "output_order": BugModel("results written back in the other order", output_order,
                             example_output_order, "pairs"),
    "shifted_positions": BugModel("positions off by one", shifted_positions, example_shift,
                                  "positions"),
    "ignored_positions": BugModel("positions ignored", ignored_positions, example_ignored,
                                  "positions"),
    "offset_twice": BugModel("the offset applied twice", offset_twice, example_offset_twice,
                             "positions"),
    "no_rotation": BugModel("no rotation at all", no_rotation, example_no_rotation, "rotation"),
    "direction": BugModel("the rotation in the other direction", other_direction,
                          example_direction, "rotation"),
    "cos_sin_swapped": BugModel("cos and sin swapped", cos_sin_swapped, example_cos_sin_swapped,
                                "rotation"),
    "rotary_dim_ignored": BugModel("rotary_dim ignored", rotary_dim_ignored,
                                   example_rotary_dim_ignored, "widths"),
    "head_width": BugModel("frequencies computed over head_dim", head_width_frequencies,
                           example_head_width, "widths"),
    "partial": BugModel("partial rotary", partial_rotary, example_partial, "widths"),
    "query_heads": BugModel("only as many query heads rotated as key heads", query_heads,
                            example_query_heads, "heads"),
    "first_head": BugModel("only the first head rotated", first_head, example_first_head,
                           "heads"),
    "head_axis": BugModel("positions taken along the head axis", head_axis, example_head_axis,
                          "heads"),
}  # fmt: skip
"""The rows of layouts, positions, the rotation, widths and heads, in report order."""
