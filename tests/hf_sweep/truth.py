"""What a family's code did to its queries and keys, read from the states alone.

Nothing here looks at posenc_ref or at the family's config: given the states before and after
the family's rotation (``harness``), it finds

- which coordinates moved (the rotary part: its width, and whether it is the first or the last
  coordinates of the head);
- which coordinates form a pair, on the way in and on the way out: a rotation of a pair
  ``(u, v)`` by an angle is a 2 x 2 matrix ``[[c, -s], [s, c]]`` shared by every head and every
  batch row at one position, so for the right pairing one ``(c, s)`` per (position, pair)
  reproduces the output of all heads, and for a wrong one it cannot (the residual is large);
- the angle and the scale of each (position, pair): ``atan2(s, c)`` and ``hypot(c, s)``. The
  angle at position 1 is the pair's frequency; the scale is the attention factor; a query scale
  that differs from the key scale at some position is a position-dependent query scaling.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import torch

LAYOUTS = ("half", "interleaved")
EXACT = 1e-5  # a residual below this is a float32 rounding: the pairing fits exactly


def pairs(width: int, layout: str) -> tuple[torch.Tensor, torch.Tensor]:
    """Indices (first, second) of the ``width // 2`` pairs of a rotary part of ``width``."""
    half = width // 2
    i = torch.arange(half)
    if layout == "half":
        return i, i + half
    return 2 * i, 2 * i + 1


@dataclass
class PairFit:
    """One (input layout, output layout) candidate fitted on one set of states."""

    layout_in: str
    layout_out: str
    residual: float  # ||fit - output|| / ||output|| over the rotary part
    angle: torch.Tensor  # (seq, pairs)
    scale: torch.Tensor  # (seq, pairs)


def fit_pairs(pre: torch.Tensor, post: torch.Tensor, layout_in: str, layout_out: str) -> PairFit:
    """Least-squares rotation per (position, pair) over heads and batch rows.

    ``pre``, ``post``: ``(batch, heads, seq, width)`` of the rotary part.
    """
    width = pre.shape[-1]
    a, b = pairs(width, layout_in)
    a2, b2 = pairs(width, layout_out)
    u, v = pre[..., a], pre[..., b]  # (batch, heads, seq, pairs)
    y1, y2 = post[..., a2], post[..., b2]
    dims = (0, 1)
    norm = (u * u + v * v).sum(dims).clamp_min(1e-300)
    c = (y1 * u + y2 * v).sum(dims) / norm
    s = (y2 * u - y1 * v).sum(dims) / norm
    r1 = y1 - (c * u - s * v)
    r2 = y2 - (s * u + c * v)
    residual = float(torch.sqrt((r1**2 + r2**2).sum() / (y1**2 + y2**2).sum().clamp_min(1e-300)))
    return PairFit(layout_in, layout_out, residual, torch.atan2(s, c), torch.hypot(c, s))


def fit_layouts(pre: torch.Tensor, post: torch.Tensor) -> list[PairFit]:
    """``fit_pairs`` for every (input, output) layout, in ``LAYOUTS`` order, input outermost.

    The same arithmetic, with what one input or output layout shares computed once (the
    sweep reads thousands of attention calls; this is its commonest step).
    """
    width = pre.shape[-1]
    dims = (0, 1)
    outputs = {}
    for layout_out in LAYOUTS:
        a2, b2 = pairs(width, layout_out)
        y1, y2 = post[..., a2], post[..., b2]
        outputs[layout_out] = (y1, y2, (y1**2 + y2**2).sum().clamp_min(1e-300))
    fits = []
    for layout_in in LAYOUTS:
        a, b = pairs(width, layout_in)
        u, v = pre[..., a], pre[..., b]  # (batch, heads, seq, pairs)
        norm = (u * u + v * v).sum(dims).clamp_min(1e-300)
        for layout_out in LAYOUTS:
            y1, y2, total = outputs[layout_out]
            c = (y1 * u + y2 * v).sum(dims) / norm
            s = (y2 * u - y1 * v).sum(dims) / norm
            r1 = y1 - (c * u - s * v)
            r2 = y2 - (s * u + c * v)
            residual = float(torch.sqrt((r1**2 + r2**2).sum() / total))
            fits.append(
                PairFit(layout_in, layout_out, residual, torch.atan2(s, c), torch.hypot(c, s))
            )
    return fits


@dataclass
class LayerTruth:
    """What one layer's code did, for one forward pass."""

    width: int  # the head width handed to attention
    rotary: list[int]  # coordinates that moved (keys)
    block: tuple[int, int] | None = None  # [start, stop) of the rotary part
    fits: list[PairFit] = field(default_factory=list)  # best first
    key_scale: torch.Tensor | None = None  # (seq,) median over pairs
    query_scale: torch.Tensor | None = None  # (seq,) query scale / key scale
    query_angle: torch.Tensor | None = None  # (seq, pairs)
    key_angle: torch.Tensor | None = None

    @property
    def nope(self) -> bool:
        return not self.rotary

    @property
    def best(self) -> PairFit | None:
        return self.fits[0] if self.fits else None

    @property
    def location(self) -> str | None:
        if self.block is None:
            return None
        start, stop = self.block
        if start == 0 and stop == self.width:
            return "whole"
        if start == 0:
            return "first"
        if stop == self.width:
            return "last"
        return f"{start}:{stop}"


def moved(pre: torch.Tensor, post: torch.Tensor) -> list[int]:
    """Coordinates of the head that differ anywhere (any batch row, head, position)."""
    scale = float(pre.abs().max()) or 1.0
    diff = (post - pre).abs().amax(dim=(0, 1, 2))
    return [int(i) for i in torch.nonzero(diff > 1e-6 * scale).flatten()]


def _norm_ratio(pre: torch.Tensor, post: torch.Tensor) -> torch.Tensor:
    """(seq,) ||post|| / ||pre|| per position, over batch rows, heads and coordinates."""
    return torch.sqrt((post**2).sum((0, 1, 3)) / (pre**2).sum((0, 1, 3)).clamp_min(1e-300))


def analyse(q_pre, q_post, k_pre, k_post) -> LayerTruth:
    """Read one layer: ``(batch, heads, seq, width)`` states before and after the family's code.

    Keys whose sequence differs from the queries' (compressed keys, DeepSeek-V4) are left out:
    the queries alone decide.
    """
    width = q_pre.shape[-1]
    seq = q_pre.shape[2]
    if k_pre.shape[2] > seq:  # keys of the tokens, then appended compressed keys (DeepSeek-V4)
        k_pre, k_post = k_pre[:, :, :seq], k_post[:, :, :seq]
    # keys that are all zero (ZAYA's tiny random model) cannot show a rotation: queries decide
    use_k = k_pre.shape[2] == seq and k_pre.shape[-1] == width and bool(k_pre.abs().max() > 0)
    rotary = moved(k_pre, k_post) if use_k else moved(q_pre, q_post)
    truth = LayerTruth(width, rotary)
    if not rotary:
        ratio = _norm_ratio(q_pre, q_post)
        truth.query_scale = ratio / _norm_ratio(k_pre, k_post) if use_k else ratio
        return truth
    lo, hi = min(rotary), max(rotary) + 1
    # The rotary part is a block at the start or the end of the head (zero-frequency pairs may
    # leave coordinates inside it unmoved): try both spans that contain every moved coordinate.
    blocks = {(0, hi + (hi % 2)), (lo - ((width - lo) % 2), width)}
    blocks = {(a, b) for a, b in blocks if 0 <= a < b <= width and (b - a) % 2 == 0}
    candidates = []
    for start, stop in sorted(blocks):
        q_fits = fit_layouts(q_pre[..., start:stop], q_post[..., start:stop])
        k_fits = fit_layouts(k_pre[..., start:stop], k_post[..., start:stop]) if use_k else q_fits
        for qf, kf in zip(q_fits, k_fits, strict=True):
            # heads of a shared key (MLA) cannot tell pairings apart; queries can
            residual = max(qf.residual, kf.residual)
            candidates.append((residual, stop - start, (start, stop), qf, kf))
    # An exact fit is a float32 rounding away from 0; among exact fits the narrowest block wins
    # (a wider one only adds unmoved pairs).
    candidates.sort(key=lambda c: (c[0] > EXACT, c[0] if c[0] > EXACT else 0.0, c[1]))
    _, _, block, qf, kf = candidates[0]
    truth.block = block
    truth.fits = [
        PairFit(q.layout_in, q.layout_out, r, k.angle, k.scale)
        for r, _, b, q, k in candidates
        if b == block
    ]
    truth.key_angle, truth.query_angle = kf.angle, qf.angle
    truth.key_scale = kf.scale.median(-1).values
    truth.query_scale = (qf.scale / kf.scale).median(-1).values
    return truth


def frequencies(truth: LayerTruth, positions: torch.Tensor) -> torch.Tensor | None:
    """Angles per pair at the position-1 token (one position row): the frequencies."""
    if truth.key_angle is None:
        return None
    where = torch.nonzero(positions == 1).flatten()
    if not len(where):
        return None
    return truth.key_angle[int(where[0])].abs()


def direction_and_positions(truth: LayerTruth, positions: torch.Tensor) -> dict:
    """Which way pairs turn, and whether the angles follow the positions given.

    ``direction`` is ``"counterclockwise"`` where the pair ``(u, v)`` turns to
    ``(u cos - v sin, u sin + v cos)`` with a positive angle at position 1 (the RoFormer
    convention), ``"clockwise"`` where the angle is negative. ``follows_positions`` is false
    where the fastest pair's angle at small positions ``p`` is not ``p`` times its angle at 1
    (the model numbered its tokens itself).
    """
    angle = truth.key_angle[:, 0]  # the fastest pair, per token
    where = {int(p): i for i, p in enumerate(positions.tolist())}
    if 1 not in where:
        return {}
    first = float(angle[where[1]])
    follows = True
    for p in (2, 3, 7, 31):
        if p in where:
            delta = float(angle[where[p]]) - p * first
            delta = (delta + math.pi) % (2 * math.pi) - math.pi
            follows &= abs(delta) < 1e-3
    return {
        "direction": "clockwise" if first < 0 else "counterclockwise",
        "follows_positions": follows,
    }


def base_from(omega: torch.Tensor) -> float | None:
    """The base that gives these frequencies as base**(-2i/d) (fitted on pairs 0 and 1)."""
    if omega is None or len(omega) < 2 or float(omega[1]) <= 0 or float(omega[0]) <= 0:
        return None
    d = 2 * len(omega)
    return math.exp(-math.log(float(omega[1] / omega[0])) * d / 2)
