r"""Properties every RoPE implementation must have, checked on the user's ``fn`` directly.

No reference is needed: each check compares ``fn`` with itself. The four properties are the
ones the site derives: attention scores depend only on the offset :math:`p - m`, rotations keep
norms (times the attention factor), :math:`R(k)R(m) = R(m + k)`, and the two pair layouts are
one function up to a permutation. They hold for every frequency vector, so they catch bugs a
reference comparison attributes to other causes (a table that is not a rotation, a cache that
drifts) and need no knowledge of the base or the scaling method.

Tolerances follow the same error model as :func:`assert_rope_equal`, with the frequency unknown:
an angle formed in float32 at position :math:`m` may be off by :math:`8\,u_{32}\,m` radians
(the largest of :math:`2u_{32}\,m\,\omega(\ln(1/\omega) + 4)` over :math:`0 < \omega \le 1`).
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

from .._checks import check_bool, check_dim, check_positive_float
from ..rope import to_half_layout
from ._arrays import RopeFn, call_qk
from ._common import (
    ANGLE_MARGIN,
    ANGLE_ULPS,
    OUTPUT_ROUNDINGS,
    UNIT_ROUNDOFF,
    check_dtypes,
    check_nonnegative_float,
    check_optional_tolerance,
    check_seed,
    fmt,
)
from ._rope import _check_fn

__all__ = [
    "assert_relative_property",
    "assert_norm_preserved",
    "assert_composition",
    "assert_layout_permutation",
]

# Starts of short runs of positions: the start, a long context and far beyond, so that the same
# offsets occur at small and large absolute positions.
DEFAULT_STARTS = (0, 4096, 100_000)
RUN = 16
# w (ln(1/w) + 4) grows on 0 < w <= 1 (its derivative is 3 + ln(1/w)), so its largest value is
# 4, at w = 1: the float32 angle allowance per unit of position for an unknown frequency.
ANGLE_PER_POSITION = ANGLE_MARGIN * UNIT_ROUNDOFF[torch.float32] * ANGLE_ULPS


def _positions(positions: object) -> torch.Tensor:
    if positions is None:
        return torch.cat([torch.arange(s, s + RUN) for s in DEFAULT_STARTS])
    if isinstance(positions, Sequence) and not isinstance(positions, (str, bytes)):
        positions = torch.tensor(list(positions))
    if not isinstance(positions, torch.Tensor) or positions.dim() != 1 or not positions.numel():
        raise TypeError("positions must be a non-empty 1-D integer tensor or sequence")
    if positions.is_floating_point() or bool((positions < 0).any()):
        raise ValueError("positions must be integers >= 0")
    return positions.to(torch.int64)


def _call(fn: RopeFn, x: torch.Tensor, positions: torch.Tensor) -> torch.Tensor:
    """Rotate ``x`` (1, 1, n, d) at ``positions`` with ``fn`` (as q; k is a copy), float64."""
    where = f"(positions {positions.tolist()[:4]}..., q and k of shape {tuple(x.shape)})"
    return call_qk(fn, x, x, positions, where)[0]


def _common(head_dim, seed, dtype, float32_angles, rtol, atol):
    head_dim = check_dim("head_dim", head_dim)
    seed = check_seed(seed)
    dtype = check_dtypes(dtype)[0]
    float32_angles = check_bool("float32_angles", float32_angles)
    rtol = check_optional_tolerance("rtol", rtol)
    atol = check_nonnegative_float("atol", atol)
    relative = rtol if rtol is not None else OUTPUT_ROUNDINGS * UNIT_ROUNDOFF[dtype]
    angle = ANGLE_PER_POSITION if float32_angles else 0.0
    return head_dim, torch.Generator().manual_seed(seed), dtype, relative, angle, atol


def _vectors(generator, n, head_dim, dtype):
    return torch.randn((1, 1, n, head_dim), generator=generator).to(dtype)


def assert_relative_property(
    fn: RopeFn,
    head_dim: int,
    *,
    positions: Sequence[int] | torch.Tensor | None = None,
    attention_factor: float = 1.0,
    dtype: torch.dtype = torch.float32,
    float32_angles: bool = True,
    rtol: float | None = None,
    atol: float = 0.0,
    seed: int = 0,
) -> None:
    r"""Check that scores :math:`\langle R(m)q, R(p)k\rangle` depend only on :math:`p - m`.

    Explained on the site: [properties](check.md#check-properties).

    One query vector and one key vector are rotated at every position of ``positions`` (default
    16 consecutive positions from each of 0, 4096 and 100000) in one call each; every pair of
    positions with the same offset must give the same score, within
    :math:`a^2\lVert q\rVert\lVert k\rVert(2r + 8u_{32}(m + p))` (:math:`r` = ``rtol``, by
    default 8 unit roundoffs of ``dtype``; the second term, float32 angles, dropped with
    ``float32_angles=False``) plus ``atol``.

    Parameters
    ----------
    fn
        ``fn(q, k, positions) -> (q_rot, k_rot)``.
    head_dim
        Width of ``q`` and ``k`` (positive, even).
    positions
        1-D integer positions (need not be contiguous); use several runs so offsets repeat.
    attention_factor
        The factor your cos and sin carry (YaRN, LongRoPE); scores scale by its square.
    dtype, float32_angles, rtol, atol, seed
        As for :func:`assert_rope_equal`.

    Raises
    ------
    AssertionError
        Naming two position pairs with the same offset and different scores.
    """
    fn = _check_fn(fn)
    head_dim, generator, dtype, relative, angle, atol = _common(
        head_dim, seed, dtype, float32_angles, rtol, atol
    )
    a = check_positive_float("attention_factor", attention_factor)
    positions = _positions(positions)
    q, k = _vectors(generator, 1, head_dim, dtype), _vectors(generator, 1, head_dim, dtype)
    n = positions.numel()
    q_rot = _call(fn, q.expand(1, 1, n, head_dim).contiguous(), positions)[0, 0]  # (n, d)
    k_rot = _call(fn, k.expand(1, 1, n, head_dim).contiguous(), positions)[0, 0]
    scores = q_rot @ k_rot.T  # (n, n): query at positions[a], key at positions[b]
    scale = a * a * float(q.double().norm() * k.double().norm())
    m = positions.to(torch.float64)
    offsets = m[:, None] - m[None, :]
    allowed = scale * (2 * relative + angle * (m[:, None] + m[None, :])) + atol
    seen: dict[float, tuple[int, int]] = {}
    worst = None
    for i in range(n):
        for j in range(n):
            offset = float(offsets[i, j])
            if offset not in seen:
                seen[offset] = (i, j)
                continue
            i0, j0 = seen[offset]
            diff = abs(float(scores[i, j] - scores[i0, j0]))
            limit = float(max(allowed[i, j], allowed[i0, j0]))
            if diff > limit and (worst is None or diff / limit > worst[0]):
                worst = (diff / limit, i, j, i0, j0, diff, limit)
    if worst is None:
        return None
    _, i, j, i0, j0, diff, limit = worst
    p = [int(v) for v in positions]
    raise AssertionError(
        f"scores depend on more than the offset: <R({p[i]})q, R({p[j]})k> = "
        f"{float(scores[i, j]):.6g} but <R({p[i0]})q, R({p[j0]})k> = {float(scores[i0, j0]):.6g} "
        f"(offset {p[i] - p[j]} in both); difference {fmt(diff)}, allowed {fmt(limit)}. A "
        "rotation by position * frequency has this property for any frequencies: look for a "
        "table that is not a rotation (layouts mixed), positions rounded in low precision, or "
        "frequencies that change between calls."
    )


def assert_norm_preserved(
    fn: RopeFn,
    head_dim: int,
    *,
    positions: Sequence[int] | torch.Tensor | None = None,
    attention_factor: float = 1.0,
    dtype: torch.dtype = torch.float32,
    rtol: float | None = None,
    atol: float = 0.0,
    seed: int = 0,
) -> None:
    r"""Check that :math:`\lVert R(m)x\rVert = a\lVert x\rVert` for every vector and position.

    Explained on the site: [properties](check.md#check-properties).

    A rotation keeps the norm of every pair, so of every vector; cos and sin that carry an
    attention factor :math:`a` scale it by :math:`a` (pass it, or the check fails by exactly
    that factor, the YaRN gotcha). Allowed: :math:`a\lVert x\rVert\,2r + \text{atol}`; angle
    errors do not change norms.

    Parameters
    ----------
    fn
        ``fn(q, k, positions) -> (q_rot, k_rot)``.
    head_dim
        Width of ``q`` and ``k``.
    positions, dtype, rtol, atol, seed
        As for :func:`assert_relative_property`.
    attention_factor
        :math:`a > 0`.

    Raises
    ------
    AssertionError
        Naming the position and the measured ratio of norms.
    """
    fn = _check_fn(fn)
    head_dim, generator, dtype, relative, _, atol = _common(head_dim, seed, dtype, True, rtol, atol)
    a = check_positive_float("attention_factor", attention_factor)
    positions = _positions(positions)
    x = _vectors(generator, positions.numel(), head_dim, dtype)
    out = _call(fn, x, positions)[0, 0]
    before = x.double()[0, 0].norm(dim=-1)
    after = out.norm(dim=-1)
    error = (after - a * before).abs()
    allowed = a * before * 2 * relative + atol
    bad = torch.nonzero(error > allowed).flatten()
    if not bad.numel():
        return None
    t = int(bad[0])
    ratios = after / before
    raise AssertionError(
        f"fn changes norms: at position {int(positions[t])} |R(m)x| / |x| = "
        f"{float(ratios[t]):.7g}, expected {a:.7g} (attention_factor); ratios over all positions "
        f"range from {float(ratios.min()):.7g} to {float(ratios.max()):.7g}. A constant ratio is "
        "an attention factor you did not pass (or applied twice); a varying one means your fn "
        "does not rotate pairs (e.g. a table laid out for the other layout)."
    )


def assert_composition(
    fn: RopeFn,
    head_dim: int,
    *,
    positions: Sequence[int] | torch.Tensor | None = None,
    shift: int = 1000,
    attention_factor: float = 1.0,
    dtype: torch.dtype = torch.float32,
    float32_angles: bool = True,
    rtol: float | None = None,
    atol: float = 0.0,
    seed: int = 0,
) -> None:
    r"""Check :math:`R(k)\,R(m)\,x = R(m + k)\,x` (and :math:`R(0)x = x` with ``shift=0``).

    Explained on the site: [properties](check.md#check-properties).

    Vectors are rotated at ``positions``, the results rotated again at ``shift`` (the same for
    every vector), and compared with one rotation at ``positions + shift``; divided by
    :math:`a` once, since two rotations carry :math:`a^2`. Holds when the frequencies do not
    depend on the call (for dynamic NTK and LongRoPE, keep every position inside the original
    context). Allowed per coordinate: :math:`a\lVert x\rVert(3r + 8u_{32}(2m + 2k))` plus
    ``atol``.

    Parameters
    ----------
    fn
        ``fn(q, k, positions) -> (q_rot, k_rot)``.
    head_dim
        Width of ``q`` and ``k``.
    positions
        1-D integer positions :math:`m`.
    shift
        The offset :math:`k \ge 0`.
    attention_factor, dtype, float32_angles, rtol, atol, seed
        As for :func:`assert_relative_property`.

    Raises
    ------
    AssertionError
        Naming the position where the two disagree.
    """
    fn = _check_fn(fn)
    head_dim, generator, dtype, relative, angle, atol = _common(
        head_dim, seed, dtype, float32_angles, rtol, atol
    )
    a = check_positive_float("attention_factor", attention_factor)
    if isinstance(shift, bool) or not isinstance(shift, int) or shift < 0:
        raise TypeError(f"shift must be an integer >= 0, got {shift!r}")
    positions = _positions(positions)
    n = positions.numel()
    x = _vectors(generator, n, head_dim, dtype)
    once = _call(fn, x, positions)
    twice = _call(fn, once.to(dtype), torch.full_like(positions, shift)) / a
    direct = _call(fn, x, positions + shift)
    norm = x.double().norm(dim=-1, keepdim=True)
    m = positions.to(torch.float64)[None, None, :, None]
    # The intermediate result is rounded to dtype once more: 3 roundings of the relative term.
    allowed = a * norm * (3 * relative + angle * 2 * (m + shift)) + atol
    bad = (twice - direct).abs() > allowed
    if not bool(bad.any()):
        return None
    t = int(torch.nonzero(bad)[0][2])
    raise AssertionError(
        f"R({shift}) R({int(positions[t])}) x differs from R({int(positions[t]) + shift}) x: "
        f"largest difference {fmt(float((twice - direct).abs()[0, 0, t].max()))} at that "
        f"position, allowed {fmt(float(allowed[0, 0, t].max()))}"
        + (
            " (with shift=0: fn does not leave position 0 unrotated)."
            if shift == 0
            else ". Rotations compose only if the angle is position * frequency exactly: look "
            "for positions shifted or rounded, or frequencies that depend on the call's length."
        )
    )


def assert_layout_permutation(
    fn_interleaved: RopeFn,
    fn_half: RopeFn,
    head_dim: int,
    *,
    rotary_dim: int | None = None,
    positions: Sequence[int] | torch.Tensor | None = None,
    dtype: torch.dtype = torch.float32,
    float32_angles: bool = True,
    rtol: float | None = None,
    atol: float = 0.0,
    seed: int = 0,
) -> None:
    r"""Check that two implementations are one RoPE in the two pair layouts.

    Explained on the site: [properties](check.md#check-properties).

    ``fn_half(P x) = P fn_interleaved(x)`` where :math:`P` (:func:`posenc_ref.to_half_layout`,
    applied to the first ``rotary_dim`` coordinates) moves pair :math:`(2i, 2i+1)` to
    :math:`(i, i + \text{rotary\_dim}/2)`: what converting a checkpoint between Meta's and HF's
    code relies on. Allowed per coordinate as for :func:`assert_composition` with one rotation
    on each side.

    Parameters
    ----------
    fn_interleaved, fn_half
        ``fn(q, k, positions) -> (q_rot, k_rot)`` each, rotating pairs ``(2i, 2i+1)`` and
        ``(i, i + rotary_dim/2)``.
    head_dim
        Width of ``q`` and ``k``.
    rotary_dim
        How many leading coordinates are rotated (default ``head_dim``).
    positions, dtype, float32_angles, rtol, atol, seed
        As for :func:`assert_relative_property`.

    Raises
    ------
    AssertionError
        Naming the position and coordinate where they disagree.
    """
    fn_interleaved, fn_half = _check_fn(fn_interleaved), _check_fn(fn_half)
    head_dim, generator, dtype, relative, angle, atol = _common(
        head_dim, seed, dtype, float32_angles, rtol, atol
    )
    r = head_dim if rotary_dim is None else check_dim("rotary_dim", rotary_dim)
    if r > head_dim:
        raise ValueError(f"rotary_dim must be <= head_dim={head_dim}, got {r}")
    positions = _positions(positions)
    x = _vectors(generator, positions.numel(), head_dim, dtype)

    def permute(t: torch.Tensor) -> torch.Tensor:
        return torch.cat([to_half_layout(t[..., :r]), t[..., r:]], dim=-1)

    left = _call(fn_half, permute(x), positions)
    right = permute(_call(fn_interleaved, x, positions))
    norm = x.double().norm(dim=-1, keepdim=True)
    m = positions.to(torch.float64)[None, None, :, None]
    allowed = norm * (2 * relative + 2 * angle * m) + atol
    bad = (left - right).abs() > allowed
    if not bool(bad.any()):
        return None
    _, _, t, j = (int(v) for v in torch.nonzero(bad)[0])
    raise AssertionError(
        f"fn_half(P x) != P fn_interleaved(x) at position {int(positions[t])}, coordinate {j} "
        f"(half layout): {float(left[0, 0, t, j]):.6g} vs {float(right[0, 0, t, j]):.6g}. The "
        "two are not the same RoPE in the two layouts: compare each with assert_rope_equal to "
        "see which one differs."
    )
