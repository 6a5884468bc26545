r"""Step 5 of reading a RoPE: its shape. Widths, lengths, the pair layout, M-RoPE sections.

The head width handed to RoPE (``head_dim``, else ``hidden_size / num_attention_heads``; MLA's rope
part; a layer type's own width), the rotary width by HF's rule ``int(head_dim *
partial_rotary_factor)`` (or a family's own key), the original and extended context, the pair
layout (a config flag may switch it), and which pairs each position row gets under M-RoPE.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..values import MROPE_ASSIGNMENTS, mrope_assignment, mrope_counts
from ._config import MAX_WIDTH, is_set, length, power_of_two, real, same, shown
from ._rope_dict import ChosenRope
from .family import Family
from .rope_types import ROPE_TYPES
from .sparse_traits import RotaryLast
from .traits import LayerHeadDims, LayoutFlag, LegacyKeys, Mla, MRope, WrittenBack

# Values of the RoPE dict read as numbers: checked here, so that a 5,000-digit number is a
# ValueError, never an OverflowError later.
NUMBERS = ("factor", "attention_factor", "mscale", "mscale_all_dim", "beta_fast", "beta_slow",
           "low_freq_factor", "high_freq_factor")  # fmt: skip


@dataclass(frozen=True)
class Shape:
    """What this step found (widths in coordinates, lengths in positions)."""

    head_dim: int
    rotary_dim: int  # the rotated part, rounded up to an even width as HF does
    freq_dim: int  # the width in the frequencies' exponents (odd where HF rounds the part up)
    partial: float
    nope_dim: int
    max_len: int | None
    original: int | None
    layout: str
    output_layout: str
    mrope_section: tuple[int, ...] | None
    mrope_assignment: str | None


def shape_of(chosen: ChosenRope, family: Family, model_type: str | None) -> Shape:
    """Widths, lengths, layout and M-RoPE sections of the chosen RoPE."""
    config, rope = chosen.config, chosen.rope
    head_dim = head_dim_of(config, family, model_type, chosen.layer_type, chosen.overrides)
    freq_dim, partial = rotary_dim_of(config, rope, family, head_dim, chosen)
    # HF's rule for an odd width: frequencies base^(-2i / width) for i < ceil(width / 2), one pair
    # each, so the rotated part is rounded up to the next even width (transformers' validate_rope)
    rotary_dim = freq_dim + freq_dim % 2
    if rotary_dim > head_dim:  # transformers' validation: an even rotary dimension
        key = family.head_dim_key
        given = f"{key} = {freq_dim}" if freq_dim == head_dim else (
            f"int({key} {head_dim} * partial_rotary_factor) = {freq_dim}")  # fmt: skip
        raise ValueError(
            f"{given}: the rotary width {freq_dim} is odd and fills the head ({head_dim} "
            "coordinates): RoPE rotates pairs, and transformers refuses it too"
        )
    max_len, original = lengths_of(config, rope)
    layout, output_layout = layout_of(config, family)
    section, assignment = mrope_of(rope, family, rotary_dim, model_type)
    mla = family.trait(Mla)
    nope_dim = 0
    if mla is not None and config.get(mla.nope_width) is not None:
        nope_dim = length(mla.nope_width, config[mla.nope_width], 0)
    if family.trait(RotaryLast) is not None:  # the rotated part last: written as MLA's
        head_dim, nope_dim = rotary_dim, head_dim - rotary_dim
    return Shape(head_dim, rotary_dim, freq_dim, partial, nope_dim, max_len, original, layout,
                 output_layout, section, assignment)  # fmt: skip


# --------------------------------------------------------------------------- widths


def width(key: str, value: object) -> int:
    """A head width: an integer in ``[1, 2**20]`` (past that, no model's; tables would not fit)."""
    out = length(key, value)
    if out > MAX_WIDTH:
        raise ValueError(f"{key} must be at most {power_of_two(MAX_WIDTH)}, got {shown(value)}")
    return out


def head_dim_of(
    config: Mapping[str, Any], family: Family, model_type: str | None, layer_type: str | None,
    overrides: Mapping[str, Any],
) -> int:  # fmt: skip
    """The width handed to RoPE: the family's key, else ``hidden_size / num_attention_heads``."""
    key = family.head_dim_key
    per_type = family.trait(LayerHeadDims)
    if per_type is not None and layer_type in per_type.widths:
        # a layer type with its own head width (Gemma 4's global layers). transformers 5.23's
        # Gemma4TextConfig.__post_init__ writes global_head_dim (default 512) as a
        # per_layer_config override of head_dim only where the config has no per_layer_config;
        # where it has one, a layer's head_dim is its override, else head_dim
        own, default = per_type.widths[layer_type]
        if "head_dim" in overrides:
            return width("head_dim", overrides["head_dim"])
        if "per_layer_config" in config:  # even an empty or null one: the class's kwargs hold it
            value = config.get(key)
            return width(key, value) if value is not None else default
        return width(own, config[own]) if config.get(own) is not None else default
    value = config.get(key)
    if value is not None:
        return width(key, value)
    hidden, heads = config.get("hidden_size"), config.get("num_attention_heads")
    if key == "head_dim" and hidden is not None and heads is not None:
        hidden = length("hidden_size", hidden)
        heads = length("num_attention_heads", heads)
        if hidden % heads:
            raise ValueError(
                f"hidden_size={hidden} is not a multiple of num_attention_heads={heads}; "
                "give head_dim"
            )
        return hidden // heads
    derive = (
        " and no hidden_size / num_attention_heads to derive it from" if key == "head_dim" else ""
    )
    raise ValueError(f"the config gives no {key!r}{derive} (model_type {model_type!r})")


def legacy_value(config: Mapping[str, Any], family: Family, quantity: str, head_dim: int):
    """The value of ``quantity`` given by the family's legacy keys (or None)."""
    value = None
    legacy = family.trait(LegacyKeys)
    for key, spec in (legacy.by_key if legacy else {}).items():
        if spec.quantity == quantity and config.get(key) is not None:
            given = config[key]
            real(key, given)  # a number, named by the key the config gives (rotary_pct)
            if spec.convert is not None:
                given = spec.convert(real(key, given), head_dim)
            value = same(quantity, value, given, (quantity, key))
    return value


def rotary_dim_of(
    config: Mapping[str, Any], rope: Mapping[str, Any], family: Family, head_dim: int,
    chosen: ChosenRope,
) -> tuple[int, float]:  # fmt: skip
    """``(rotary width, partial factor)`` by HF's rule ``int(head_dim * partial_rotary_factor)``."""
    partial = same(
        "partial_rotary_factor",
        rope.get("partial_rotary_factor"),
        config.get("partial_rotary_factor"),
        ("the RoPE dict", "the top level"),
    )
    partial = same("partial_rotary_factor", partial,
                   legacy_value(config, family, "partial_rotary_factor", head_dim),
                   ("partial_rotary_factor", "the family's legacy key"))  # fmt: skip
    absolute = legacy_value(config, family, "rotary_dim", head_dim)
    if absolute is not None:  # GPT-J, CodeGen: an absolute width (the whole head when null)
        if partial is not None:
            raise ValueError("give rotary_dim or partial_rotary_factor, not both")
        rotary = length("rotary_dim", absolute)
        if rotary > head_dim or rotary % 2:
            raise ValueError(f"rotary_dim={rotary} must be even and <= head_dim={head_dim}")
        return rotary, rotary / head_dim
    explicit = partial is not None
    if partial is None:
        partial = family.partial_default(chosen.layer_type)
    else:
        partial = real("partial_rotary_factor", partial)
    if partial > 1:
        raise ValueError(f"partial_rotary_factor must be in (0, 1], got {partial!r}")
    if chosen.kind.full_width:
        return head_dim, partial
    mla = family.trait(Mla)
    if mla is not None:
        return mla_rotary_dim(config, mla, family.head_dim_key, head_dim, partial, explicit)
    rotary = int(head_dim * partial)
    if rotary < 2 or (rotary % 2 and rotary + 1 > head_dim):
        raise ValueError(
            f"partial_rotary_factor={partial!r} gives rotary_dim=int({head_dim} * {partial}) "
            f"= {rotary}, which must be >= 2 (and, if odd, leave a coordinate for HF to round "
            "it up)"
        )
    return rotary, partial


def mla_rotary_dim(
    config: Mapping[str, Any], mla: Mla, key: str, head_dim: int, partial: float, explicit: bool
) -> tuple[int, float]:
    """MLA: the whole rope part rotates; the family's module must compute that width.

    Its rotary module computes the width as ``int(sum of partial_of * partial)``, which must be
    the rope part (else its code fails). A default partial factor of a row whose sum includes the
    rope part is the config class's own ratio (Mistral 4), and is not checked.
    """
    width = sum(length(part, config.get(part)) for part in mla.partial_of)
    if (explicit or key not in mla.partial_of) and int(width * partial) != head_dim:
        raise ValueError(
            f"partial_rotary_factor={partial!r} of {' + '.join(mla.partial_of)} = "
            f"{width} gives int({width} * {partial}) = {int(width * partial)} rotary "
            f"coordinates, but the rope part of each head ({key}) is "
            f"{head_dim} wide: the family's code cannot run it"
        )
    return head_dim, head_dim / width


# --------------------------------------------------------------------------- lengths and layout


def lengths_of(config: Mapping[str, Any], rope: Mapping[str, Any]) -> tuple[int | None, int | None]:
    """``(max_position_embeddings, original_max_position_embeddings)``, where given."""
    max_len = same(
        "max_position_embeddings",
        config.get("max_position_embeddings"),
        rope.get("max_position_embeddings"),
        ("the top level", "the RoPE dict"),
    )
    max_len = None if max_len is None else length("max_position_embeddings", max_len)
    original = same("original_max_position_embeddings",
                    rope.get("original_max_position_embeddings"),
                    config.get("original_max_position_embeddings"),
                    ("the RoPE dict", "the top level"))  # fmt: skip
    if original is not None:
        original = length("original_max_position_embeddings", original)
    unset = ROPE_TYPES[rope["rope_type"]].unset_when_zero  # the type's entry says which
    for key in NUMBERS:
        value = rope.get(key)
        if is_set(rope, key, unset):  # not set: absent, null, or a 0 that means "not set"
            real(key, value)
    return max_len, original


def layout_of(config: Mapping[str, Any], family: Family) -> tuple[str, str]:
    """``(layout, output layout)``: the family's, or as its config flag switches them."""
    flag = family.trait(LayoutFlag)
    if flag is not None:
        on = config.get(flag.key, True)
        if not isinstance(on, bool):
            raise TypeError(f"{flag.key} must be true or false, got {shown(on)}")
        return ("interleaved" if on else "half"), "half"
    written = family.trait(WrittenBack)
    return family.layout, written.layout if written else family.layout


# --------------------------------------------------------------------------- M-RoPE sections


def counts_as_given(counts: tuple[int, ...], pairs: int, mrope: MRope) -> tuple[int, ...]:
    """The code splits its table by the counts: they must cover the rotary pairs exactly."""
    if sum(counts) != pairs:
        raise ValueError(
            f"mrope_section {as_written(counts, mrope)} sums to {sum(counts)} pairs but the "
            f"rotary part has rotary_dim // 2 = {pairs}"
        )
    return counts


def time_takes_the_rest(counts: tuple[int, ...], pairs: int, mrope: MRope) -> tuple[int, ...]:
    """The code reads the height and width counts only; every pair they do not take is time's.

    (Qwen3-VL's code overwrites the time row's table at the height and width pairs, so
    ``mrope_section[0]`` is never read: Qwen4-Exp's default [11, 11, 10] on 128 pairs gives time
    107 pairs.)
    """
    _, height, width = counts
    if height + width > pairs:
        raise ValueError(
            f"mrope_section {list(counts)} gives height and width {height + width} pairs but the "
            f"rotary part has rotary_dim // 2 = {pairs}"
        )
    return (pairs - height - width, height, width)


def halves(counts: tuple[int, ...] | None, pairs: int, mrope: MRope) -> tuple[int, ...]:
    """No mrope_section: the code gives the even pairs to one row and the odd ones to the other."""
    both = (pairs - pairs // 2, pairs // 2)
    if counts is not None and tuple(counts) != both:
        raise ValueError(
            f"mrope_section {list(counts)}: the family's code reads none; its two rows take "
            f"{list(both)} of the {pairs} pairs"
        )
    return both


# How a family's code reads mrope_section, by assignment: (counts in row order, rotary pairs,
# the row's trait) -> the counts its code gives each row.
SECTION_READ = {
    "consecutive": counts_as_given,
    "interleaved": time_takes_the_rest,
    "alternating": counts_as_given,
    "alternating_2d": halves,
}


def as_written(counts: tuple[int, ...], mrope: MRope) -> list[int]:
    """Counts in row order, back in the config's order."""
    if mrope.order is None:
        return list(counts)
    return [counts[row] for row in mrope.order]


def mrope_of(
    rope: Mapping[str, Any], family: Family, rotary_dim: int, model_type: str | None
) -> tuple[tuple[int, ...] | None, str | None]:
    """M-RoPE: (counts per row, assignment), checked once, here, for the spec and the module."""
    mrope = family.trait(MRope)
    if mrope is None:
        return None, None
    rows = MROPE_ASSIGNMENTS[mrope.assignment].rows
    raw = rope.get("mrope_section", mrope.section)
    counts = None
    if raw is not None:
        if isinstance(raw, (str, bytes)) or not isinstance(raw, (list, tuple)):
            raise ValueError(f"mrope_section must be {len(rows)} pair counts, got {shown(raw)}")
        if len(raw) != len(rows):
            raise ValueError(
                f"mrope_section must be {len(rows)} pair counts ({model_type}'s code reads "
                f"{', '.join(as_written(rows, mrope))}), got {shown(raw)}"
            )
        given = tuple(length(f"mrope_section[{j}]", n, 0) for j, n in enumerate(raw))
        order = mrope.order or tuple(range(len(rows)))
        counts = tuple(given[order.index(row)] for row in range(len(rows)))
    elif mrope.assignment != "alternating_2d":
        raise ValueError(f"{model_type}'s code needs an mrope_section ({', '.join(rows)})")
    section = SECTION_READ[mrope.assignment](counts, rotary_dim // 2, mrope)
    flag = rope.get("mrope_interleaved")
    if flag is not None and bool(flag) != (mrope.assignment == "interleaved"):
        raise ValueError(
            f"mrope_interleaved={flag!r} contradicts {model_type}'s code, which assigns "
            f"sections {mrope.assignment!r}"
        )
    entry = MROPE_ASSIGNMENTS[mrope_assignment(False, mrope.assignment)]
    entry.pair_rows(mrope_counts(section, entry.rows))  # the one check the rule can give them
    return section, mrope.assignment
