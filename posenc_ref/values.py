r"""The encodings' numbers as plain Python values: the one definition each tensor is built from.

Python floats are IEEE float64, the precision the numerical policy asks of every frequency, so
the formulas here are the definitions: the tensor functions (:func:`posenc_ref.absolute.inv_freq`,
:func:`posenc_ref.relative.alibi_slopes`, :func:`posenc_ref.mrope.mrope_pair_rows`, the axial
frequencies of :mod:`posenc_ref.axial`) build their tensors from these lists, and the config
reader (:mod:`posenc_ref.models`, :mod:`posenc_ref.encodings`, the command line) uses them as
they are, without importing torch or NumPy. The context-extension methods are written the same
way, in :mod:`posenc_ref.rope_scaling_functions`.

Standard library only: this module, ``posenc_ref._checks`` and the two scaling modules are
the part of the maths the reader stands on.
"""

from __future__ import annotations

import math
import struct
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import NamedTuple

from ._checks import check_base, check_bool, check_int

__all__ = [
    "MAX_POSITION",
    "inv_freq_values",
    "alibi_slope_values",
    "ScaledValues",
    "MROPE_ROWS",
    "MRopeAssignment",
    "MROPE_ASSIGNMENTS",
    "mrope_assignment",
    "mrope_counts",
    "AxialRule",
    "AXIAL_RULES",
    "axial_inv_freq_values",
    "axial_pair_axes_values",
]

# Positions and offsets beyond 2**53 are not exactly representable in float64, the dtype every
# angle here is formed in: the table or closed form would silently belong to another position.
MAX_POSITION = 2**53


# --------------------------------------------------------------------------- frequencies


def inv_freq_values(width: int, base: float) -> list[float]:
    r"""The per-pair frequencies :math:`\omega_i = \text{base}^{-2i/\text{width}}`, as floats.

    The definition behind :func:`posenc_ref.absolute.inv_freq` (which checks that ``width`` is
    even and returns it as a tensor). An odd ``width`` gives its :math:`\lceil w/2 \rceil` pairs
    with the same exponents (HF transformers rounds an odd rotary width up this way).

    Parameters
    ----------
    width
        The encoded width, ``>= 1``.
    base
        The constant :math:`n`; finite and > 1.

    Returns
    -------
    list of float
        ``ceil(width / 2)`` values, from 1 down.

    Examples
    --------
    >>> inv_freq_values(4, 100.0)
    [1.0, 0.1]
    """
    width = check_int("width", width, minimum=1)
    base = check_base("base", base)
    # base ** -x rather than exp(-x ln base): one rounding fewer, and it matches the formula.
    return [base ** -(k / width) for k in range(0, width, 2)]


def alibi_slope_values(num_heads: int) -> list[float]:
    r"""ALiBi's per-head slopes :math:`\mu_h` as floats (:func:`posenc_ref.relative.alibi_slopes`).

    :math:`2^{-8(h+1)/H}` for a power of two :math:`H`; otherwise the slopes of the largest power
    of two :math:`c < H`, then every other slope of the :math:`2c`-head set.

    >>> alibi_slope_values(2)
    [0.0625, 0.00390625]
    """
    num_heads = check_int("num_heads", num_heads, minimum=1)
    closest = 2 ** int(math.floor(math.log2(num_heads)))
    slopes = _power_of_two_slopes(closest)
    if closest < num_heads:
        slopes += _power_of_two_slopes(2 * closest)[0::2][: num_heads - closest]
    return slopes


def _power_of_two_slopes(n: int) -> list[float]:
    # 2^(-8h/n) = (2^(-8/n))^h: a geometric sequence starting at, and with ratio, 2^(-8/n).
    return [2.0 ** (-8.0 * h / n) for h in range(1, n + 1)]


class ScaledValues(NamedTuple):
    r"""A context-extension method's result on Python floats: ScaledFrequencies without torch.

    What each method's formula returns (``method.values``, see
    :func:`posenc_ref.rope_scaling_functions.tensor_method`); the method itself returns the same
    as a :class:`~posenc_ref.rope_scaling.ScaledFrequencies`.

    Attributes
    ----------
    inv_freq : list of float
        The new per-pair frequencies :math:`\omega'_i`, ``dim // 2`` of them (float64).
    attention_factor : float
        The scalar multiplied into cos and sin (1.0 for methods that have none).
    """

    inv_freq: list[float]
    attention_factor: float


# --------------------------------------------------------------------------- M-RoPE's rows

MROPE_ROWS = ("time", "height", "width")
"""The meaning of the three position rows, in order (every assignment but ``alternating_2d``)."""


def _consecutive(counts: tuple[int, ...]) -> list[int]:
    return [row for row, count in enumerate(counts) for _ in range(count)]


def _round_robin(counts: tuple[int, ...]) -> list[int]:
    pairs = sum(counts)
    rows = [0] * pairs
    for row in (1, 2):
        for i in range(min(pairs, 3 * counts[row])):
            if i % 3 == row:
                rows[i] = row
    got = tuple(rows.count(row) for row in range(3))
    if got != counts:
        raise ValueError(
            f"mrope_section={list(counts)} cannot be dealt round-robin (pair i to row i mod 3 "
            f"while the height and width rows have pairs left, the rest to time): that gives "
            f"{list(got)} pairs per row; use interleaved=False or a section with "
            "height, width <= time"
        )
    return rows


def _equal_spatial(counts: tuple[int, ...], name: str) -> None:
    height, width = counts[-2:]
    if height != width:
        raise ValueError(
            f"mrope_section={list(counts)}: the {name!r} assignment alternates height and width "
            f"pair by pair, so they need equal counts (got height {height}, width {width})"
        )


def _alternating(counts: tuple[int, ...]) -> list[int]:
    _equal_spatial(counts, "alternating")
    time, height, width = counts
    return [i % 2 + 1 for i in range(height + width)] + [0] * time  # 1, 2, 1, 2: height first


def _alternating_2d(counts: tuple[int, ...]) -> list[int]:
    _equal_spatial(counts, "alternating_2d")
    return [i % 2 for i in range(sum(counts))]  # 0, 1, 0, 1, ...: height first


@dataclass(frozen=True)
class MRopeAssignment:
    """One rule giving each rotary pair a position row.

    Attributes
    ----------
    rows : tuple of str
        The position rows, in the order ``positions`` carries them and ``mrope_section`` counts
        them.
    pair_rows : callable
        ``(counts per row) -> list`` of the row of each pair; raises ``ValueError`` for counts
        the rule cannot give.
    rule : str
        The rule, in words.
    models : str
        The families whose code assigns this way.
    """

    rows: tuple[str, ...]
    pair_rows: Callable[[tuple[int, ...]], list[int]]
    rule: str
    models: str


MROPE_ASSIGNMENTS: dict[str, MRopeAssignment] = {
    "consecutive": MRopeAssignment(
        MROPE_ROWS, _consecutive,
        "the first mrope_section[0] pairs take time, the next mrope_section[1] height, the "
        "last mrope_section[2] width",
        "Qwen2-VL, Qwen2.5-VL, Qwen2.5-Omni, GLM-4V, PaddleOCR-VL",
    ),
    "interleaved": MRopeAssignment(
        MROPE_ROWS, _round_robin,
        "pair i takes row i mod 3 while the height and width rows have pairs left; the rest "
        "take time",
        "Qwen3-VL, Qwen3.5, Qwen3-Omni, Cosmos 3, Cohere Compass, Qwen4-Exp",
    ),
    "alternating": MRopeAssignment(
        MROPE_ROWS, _alternating,
        "height and width take turns over the first mrope_section[1] + mrope_section[2] pairs "
        "(height first, equal counts); the last mrope_section[0] pairs take time",
        "ERNIE 4.5 VL",
    ),
    "alternating_2d": MRopeAssignment(
        ("height", "width"), _alternating_2d,
        "two rows; pair i takes row i mod 2 (height first, equal counts)",
        "NeoMME",
    ),
}  # fmt: skip
"""Assignment name -> :class:`MRopeAssignment`: which position row each pair follows."""


def mrope_assignment(interleaved: object, assignment: object) -> str:
    """The assignment's name: ``assignment``, else ``interleaved``'s shorthand."""
    interleaved = check_bool("interleaved", interleaved)
    if assignment is None:
        return "interleaved" if interleaved else "consecutive"
    if not isinstance(assignment, str) or assignment not in MROPE_ASSIGNMENTS:
        raise ValueError(
            f"assignment must be one of {', '.join(map(repr, MROPE_ASSIGNMENTS))}, "
            f"got {assignment!r}"
        )
    if interleaved and assignment != "interleaved":
        raise ValueError(
            f"interleaved=True is the 'interleaved' assignment; it contradicts "
            f"assignment={assignment!r}"
        )
    return assignment


def mrope_counts(mrope_section: object, rows: tuple[str, ...]) -> tuple[int, ...]:
    """``mrope_section`` checked as one non-negative pair count per row, not all zero."""
    names = ", ".join(rows)
    if isinstance(mrope_section, (str, bytes)) or not isinstance(mrope_section, Sequence):
        raise TypeError(
            f"mrope_section must be {len(rows)} non-negative integers ({names} pair counts), "
            f"got {mrope_section!r}"
        )
    if len(mrope_section) != len(rows):
        word = {2: "two", 3: "three"}.get(len(rows), str(len(rows)))
        raise ValueError(f"mrope_section must have {word} entries ({names}), got {mrope_section!r}")
    counts = tuple(check_int(f"mrope_section[{j}]", n) for j, n in enumerate(mrope_section))
    if sum(counts) == 0:
        raise ValueError(f"mrope_section must give at least one pair, got {mrope_section!r}")
    return counts


# --------------------------------------------------------------------------- axial RoPE


# Head widths past this are no vision tower's; refusing them keeps 2**40 from asking the
# allocator for its table (the largest towers rotate heads of a few hundred coordinates).
MAX_AXIAL_DIM = 2**20


def _check_axial_dim(dim: object) -> int:
    dim = check_int("dim", dim, minimum=1)
    if dim > MAX_AXIAL_DIM:
        raise ValueError(f"dim must be at most 2**20 (a vision tower's head width), got {dim!r}")
    if dim % 4:
        raise ValueError(
            f"dim must be a positive multiple of 4 (d/4 rotary pairs per axis), got {dim!r}"
        )
    return dim


def _shared(dim: int, base: float) -> list[float]:
    # both axes take n^(-4i/d), i < d/4: the frequencies of a head of width d/2, twice
    per_axis = inv_freq_values(dim // 2, base)
    return per_axis + per_axis


def _alternating_axes(dim: int, base: float) -> list[float]:
    # Pixtral: the full head's n^(-2j/d), even j to the first d/4 pairs, odd j to the rest
    full = inv_freq_values(dim, base)
    return full[0::2] + full[1::2]


def _dinov3(dim: int, base: float) -> list[float]:
    # 2 pi n^(-4i/d) per axis, for coordinates in [-1, 1]
    return [2 * math.pi * w for w in _shared(dim, base)]


class AxialRule(NamedTuple):
    """What a scheme of :data:`posenc_ref.axial.SCHEMES` decides, as plain values."""

    frequencies: Callable[[int, float], list[float]]  # (dim, base) -> dim // 2 floats
    rows_first: bool  # the first half of the pairs follows the row, the second the column
    layout: str


AXIAL_RULES: dict[str, AxialRule] = {
    "qwen2_vl": AxialRule(_shared, True, "half"),
    "pixtral": AxialRule(_alternating_axes, True, "half"),
    "llama4": AxialRule(_shared, False, "interleaved"),
    "sam2": AxialRule(_shared, False, "interleaved"),
    "dinov3": AxialRule(_dinov3, True, "half"),
}
"""Scheme name -> :class:`AxialRule`; :data:`posenc_ref.axial.SCHEMES` adds the grids (tensors),
and tests/test_axial.py checks the two tables agree."""


def _rule(scheme: object) -> AxialRule:
    if scheme not in AXIAL_RULES:
        raise ValueError(f"scheme must be one of {tuple(AXIAL_RULES)}, got {scheme!r}")
    return AXIAL_RULES[scheme]  # type: ignore[index]


def axial_inv_freq_values(dim: int, base: float, scheme: str) -> list[float]:
    """The frequency of each pair under ``scheme``: ``dim // 2`` floats (``dim``: 4k)."""
    rule = _rule(scheme)
    return rule.frequencies(_check_axial_dim(dim), check_base("base", base))


def axial_pair_axes_values(dim: int, scheme: str) -> list[int]:
    """The axis of each pair under ``scheme``, 0 row and 1 column: ``dim // 2`` ints."""
    rule = _rule(scheme)
    pairs = _check_axial_dim(dim) // 2
    first, second = (0, 1) if rule.rows_first else (1, 0)
    return [first if i < pairs // 2 else second for i in range(pairs)]


# --------------------------------------------------------------------------- T5's buckets


def t5_bucket_sizes(bidirectional: object, num_buckets: object, max_distance: object):
    """``(per_direction, max_exact, max_distance)`` of T5's buckets, or an error naming the bad one.

    The checks of :func:`posenc_ref.relative.t5_relative_bucket`, shared with :func:`t5_bucket`.
    """
    bidirectional = check_bool("bidirectional", bidirectional)
    num_buckets = check_int("num_buckets", num_buckets, minimum=4 if bidirectional else 2)
    if bidirectional and num_buckets % 2:
        raise ValueError(f"num_buckets must be even when bidirectional, got {num_buckets}")
    per_direction = num_buckets // 2 if bidirectional else num_buckets
    max_exact = per_direction // 2
    max_distance = check_int("max_distance", max_distance, minimum=1)
    if max_distance <= max_exact:
        raise ValueError(
            f"max_distance must be > {max_exact} (the number of exact buckets), got {max_distance}"
        )
    return per_direction, max_exact, max_distance


def _f32(x: float) -> float:
    return struct.unpack("f", struct.pack("f", x))[0]


def t5_bucket(
    relative_position: int, *, bidirectional: bool = True, num_buckets: int = 32,
    max_distance: int = 128,
) -> int:  # fmt: skip
    """T5's bucket of one ``key - query`` distance, in Python numbers.

    The scalar form of :func:`posenc_ref.relative.t5_relative_bucket` (the definition, on
    tensors), step by step in float32 as T5's code computes the logarithmic buckets; the
    inspect command's description uses it, and tests/test_relative.py checks the two agree on
    every distance of a sweep of bucket counts and distances.
    """
    per_direction, max_exact, max_distance = t5_bucket_sizes(
        bidirectional, num_buckets, max_distance
    )
    relative_position = check_int("relative_position", relative_position, minimum=-(2**62))
    bucket = per_direction if bidirectional and relative_position > 0 else 0
    distance = abs(relative_position) if bidirectional else max(-relative_position, 0)
    if distance < max_exact:
        return bucket + distance
    ratio = _f32(math.log(_f32(_f32(float(distance)) / max_exact)))
    scaled = _f32(ratio / _f32(math.log(max_distance / max_exact)))
    large = max_exact + int(_f32(scaled * (per_direction - max_exact)))
    return bucket + min(large, per_direction - 1)
