r"""What every bug model is built from and judged by.

:class:`Setting` holds the reference, its model and the calls the user's function received, and
what was read off the output (frequencies, a fitted base); :class:`Hypothesis` is one candidate
model of a mistake; :class:`BugModel` a row of the table of mistakes (``_bugs.py``), carrying
its own :class:`Example`; :func:`evaluate` runs a candidate on the user's inputs and returns its
largest error / allowance, first at a few coordinates (the evidence: where the output is wrong
and where it is right), then everywhere.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from functools import cached_property, lru_cache

import torch

from ..absolute import inv_freq as plain_inv_freq
from ..rope import RotaryEmbedding
from ..rope_scaling import ScaledFrequencies
from ._calls import Call
from ._model import Model, other_layout, pair_parts, predict, reference_model, written_layout
from ._tolerance import excess_ratio, relative_allowance, rope_allowance


@dataclass
class Hypothesis:
    key: str
    title: str
    detail: str
    model: Model
    worst: float = math.inf  # largest error / allowance over every call


@dataclass(frozen=True)
class Example:
    """A wrong function that a bug model must name: what a row of the table proves itself on.

    Attributes
    ----------
    fn : callable
        The wrong implementation, ``fn(q, k, positions)`` (or the call form of ``check``).
    reference : object
        What it is checked against (a :class:`~posenc_ref.RotaryEmbedding` for
        :func:`~posenc_ref.testing.assert_rope_equal`).
    names : str
        The title the check's diagnosis must give.
    options : dict
        Keyword arguments of the check (``patterns``, ``max_position``, ``dtypes``, ...).
    also : tuple of str
        Titles that reproduce the same output on the check's calls and are named with it (a
        switch made on a chunk's token count and one never made agree on calls shorter than
        the original context).
    """

    fn: Callable
    reference: object
    names: str
    options: Mapping = field(default_factory=dict)
    also: tuple[str, ...] = ()


@dataclass(frozen=True)
class BugModel:
    """One row of :data:`~._bugs.BUG_MODELS`: a kind of mistake, how to model it, an example.

    Attributes
    ----------
    title : str
        What the report calls it ("the other pair layout").
    candidates : callable
        ``Setting -> iterator of Hypothesis``: the models of this mistake for one reference
        (none when it cannot apply to it).
    example : callable
        ``() -> Example``: a wrong function written the way the mistake is made, and its
        reference; one test runs every row's example and checks that the check names it.
    group : str
        The kind of mistake, for the list on the check page ("layouts", "positions", ...).
    """

    title: str
    candidates: Callable[[Setting], Iterator[Hypothesis]]
    example: Callable[[], Example]
    group: str


class Setting:
    """What the bug models are built from: the reference, its model and the user's calls."""

    def __init__(self, reference: RotaryEmbedding, calls: list[Call]) -> None:
        self.reference = reference
        self.calls = calls
        # The reference's frequencies, computed once per call length for every model built
        # from it (each is run on every call, q and k, on the evidence first).
        self.frequencies = lru_cache(maxsize=64)(reference.frequencies)
        self.ref = dataclasses.replace(reference_model(reference), frequencies=self.frequencies)
        self.rotary_dim = reference.rotary_dim
        self.head_dim = reference.head_dim
        self.base = reference.base
        self.layout = self.ref.layout
        self.other = other_layout(self.ref.layout)
        self.attention_factor = float(reference.attention_factor)
        self.method = getattr(reference, "method", None)

    def hypothesis(self, key: str, title: str, detail: str, **changes) -> Hypothesis:
        """A candidate: the reference's model with ``changes``."""
        return Hypothesis(key, title, detail, dataclasses.replace(self.ref, **changes))

    @cached_property
    def fitted(self) -> tuple[torch.Tensor | None, tuple[float, float] | None]:
        """Frequencies read off the output of the call from 0, and the base fitted to them."""
        calls = [c for c in self.calls if c.kind == "prefill" and c.start == 0]
        if not calls:
            return None, None
        omega = fit_frequencies(
            calls[0], self.layout, self.rotary_dim, written_layout(self.reference)
        )
        fit = None if omega is None else fitted_base(omega, self.rotary_dim)
        if fit is not None and not (math.isfinite(fit[0]) and 1.0 < fit[0] < 1e12):
            fit = None
        return omega, fit

    def frequencies_for(self, dim: int, base: float) -> Callable[[int], ScaledFrequencies] | None:
        """The reference's scaling recomputed for another width or base."""
        return method_frequencies(self.reference, dim, base)


def layout_words(layout: str, rotary_dim: int) -> str:
    if layout == "interleaved":
        return "pairs (2i, 2i+1), the interleaved layout (RoFormer, Meta's Llama, torchtune)"
    return (
        f"pairs (i, i + {rotary_dim // 2}), the half layout (HF transformers' rotate_half, "
        "GPT-NeoX)"
    )


def fixed(freqs: ScaledFrequencies) -> Callable[[int], ScaledFrequencies]:
    return lambda seq_len: freqs


def method_frequencies(
    reference: RotaryEmbedding, dim: int, base: float
) -> Callable[[int], ScaledFrequencies] | None:
    """The reference's scaling method, recomputed for another width or base (None if unknown)."""
    method = getattr(reference, "method", None)
    spec = getattr(reference, "spec", None)
    plain = method == "static" and getattr(spec, "rope_type", None) in (None, "default")
    if (
        method is None
        or (plain and getattr(spec, "mrope_section", None) is None)
        or (
            plain
            and torch.allclose(
                reference.inv_freq, plain_inv_freq(reference.rotary_dim, reference.base)
            )
        )
    ):  # plain RoPE (from_hf_config keeps a config's default frequencies as static ones)
        return fixed(ScaledFrequencies(plain_inv_freq(dim, base), 1.0))
    scaling = getattr(reference, "scaling", None)
    if scaling is None:
        return None  # a ScaledFrequencies given directly: no formula to recompute
    try:
        freqs = scaling.frequencies(dim, base)  # validates the width and base now
    except (TypeError, ValueError):
        return None
    if scaling.length_dependent:  # declared by the METHODS table, never guessed
        return lru_cache(maxsize=64)(lambda seq_len: scaling.frequencies(dim, base, seq_len))
    return fixed(freqs)


def fit_frequencies(
    call: Call, layout: str, rotary_dim: int, output_layout: str | None = None
) -> torch.Tensor | None:
    """Per-pair frequencies read off the user's output at positions 1, 2, 4, ... (float64).

    The angle a pair turned by is ``atan2(u v' - v u', u u' + v v')``; its median over the batch
    and heads at position 1 gives the frequency up to 2 pi, refined at positions 2, 4, 8, ...
    with the turn count unwrapped. Meaningful only if the output rotates pairs of this layout.
    """
    if call.rows or call.positions.dim() != 1 or call.n < 3:
        return None
    if not torch.equal(call.positions, torch.arange(call.n)):
        return None
    u, v = pair_parts(call.inputs[0], layout, rotary_dim)
    u2, v2 = pair_parts(call.outputs[0], output_layout or layout, rotary_dim)
    phi = torch.atan2(u * v2 - v * u2, u * u2 + v * v2)  # (batch, heads, n, pairs)
    phi = phi.flatten(0, -3).median(dim=0).values  # (n, pairs)
    omega = phi[1].clone()
    m = 2
    while m < phi.shape[0]:
        turns = torch.round((m * omega - phi[m]) / (2 * math.pi))
        omega = (phi[m] + 2 * math.pi * turns) / m
        m *= 2
    return omega


def fitted_base(omega: torch.Tensor, rotary_dim: int) -> tuple[float, float] | None:
    """``(base, offset)`` from ``ln w_i = offset + slope * i`` over pairs ``i >= 1``.

    ``base = exp(-slope * rotary_dim / 2)``; ``offset`` is 0 for ``w_i = base^(-2i/d)`` and equal
    to the slope when the frequencies are indexed from 1.
    """
    pairs = omega.numel()
    if pairs < 3 or not bool((omega[1:] > 0).all()):
        return None
    i = torch.arange(1, pairs, dtype=torch.float64)
    y = torch.log(omega[1:])
    slope = float(((i - i.mean()) * (y - y.mean())).sum() / ((i - i.mean()) ** 2).sum())
    offset = float(y.mean() - slope * i.mean())
    if slope >= 0:
        return None
    return math.exp(-slope * rotary_dim / 2), offset


def copied_tail(calls: list[Call], head_dim: int) -> int:
    """How many trailing coordinates the user's fn returned unchanged, in every call."""
    copied = head_dim
    for call in calls:
        for x, got in zip(call.inputs, call.outputs, strict=True):
            same = (x == got).flatten(0, -2).all(dim=0)  # (head_dim,)
            changed = torch.nonzero(~same).flatten()
            if changed.numel():
                copied = min(copied, head_dim - 1 - int(changed.max()))
    return copied


def with_layout(h: Hypothesis, layout: str) -> Hypothesis:
    model = dataclasses.replace(h.model, layout=layout)
    return Hypothesis(f"layout+{h.key}", f"the other pair layout and {h.title}", h.detail, model)


def evaluate(
    h: Hypothesis,
    calls: list[Call],
    options: dict,
    stop_above: float = math.inf,
    evidence: Mapping[int, torch.Tensor] | None = None,
) -> float:
    """Largest error / allowance of the model's prediction over every call (<= 1: explained).

    A low-precision model is exact only up to where the user's float32 value and ours round
    apart; for those, 99% of the coordinates must meet the plain allowance and every one the
    allowance plus one rounding step, else the plain worst is returned. Once the value is
    certain to exceed ``stop_above`` the remaining calls are skipped and a lower bound (above
    ``stop_above``) is returned: a model that fails on the first call costs one call. An
    infinite bound is returned at once (it is exact).

    ``evidence`` (call index to token indices) compares those tokens of those calls only: a
    lower bound, the necessary condition a few coordinates decide (for a low-precision model,
    with the rounding step allowed everywhere).
    """
    worst, worst_step, inside, total = 0.0, 0.0, 0, 0
    low = h.model.precision is not None
    # The farthest call first: where a wrong low-precision model misses by the most (the kit's
    # calls near position 0 cannot tell it from the reference), so it is dropped soonest.
    order = sorted(range(len(calls)), key=lambda c: -calls[c].seq_len)
    if evidence is not None:
        order = [c for c in order if c in evidence]
    for c in order:
        call = calls[c]
        tokens = None if evidence is None else evidence[c]
        factor = max(float(h.model.freqs(call).attention_factor), options["attention_factor"])
        common = dict(
            float32_angles=True, rtol=options["rtol"], atol=options["atol"], attention_factor=factor
        )
        # The relative terms depend on the model and the call only: once for q and k.
        relative = relative_allowance(
            h.model, call, float32_angles=True, rtol=options["rtol"], tokens=tokens
        )
        if low:
            relative_step = relative_allowance(
                h.model, call, float32_angles=True, rtol=options["rtol"], rounding_step=True,
                tokens=tokens,
            )  # fmt: skip
        for which, (x, got) in enumerate(zip(call.inputs, call.outputs, strict=True)):
            if tokens is not None:
                x, got = x[..., tokens, :], got[..., tokens, :]
            predicted = predict(h.model, x, call, which, tokens)
            allowed = rope_allowance(h.model, x, call, relative=relative, **common)
            excess = excess_ratio(got, predicted, allowed)
            worst = max(worst, float(excess.max()))
            if low:
                stepped = rope_allowance(h.model, x, call, relative=relative_step, **common)
                worst_step = max(worst_step, float(excess_ratio(got, predicted, stepped).max()))
                inside += int((excess <= 1).sum())
                total += excess.numel()
            # The result is at least worst (worst_step for a low-precision model); once that
            # is infinite (a NaN the model does not predict) it is the result, whatever follows.
            bound = worst_step if low else worst
            if bound > stop_above or bound == math.inf:
                return bound
    if low and (evidence is not None or (worst > 1 and worst_step <= 1 and inside >= 0.99 * total)):
        return worst_step
    return worst


def closest(hypotheses: list[Hypothesis], calls: list[Call], options: dict) -> Hypothesis | None:
    """The model with the smallest error / allowance, its ``worst`` exact (branch and bound).

    Each ``h.worst`` must already be a lower bound (from a first pass that stopped early).
    """
    best = None
    for h in sorted(hypotheses, key=lambda h: h.worst):
        if best is not None and h.worst >= best.worst:
            break
        h.worst = evaluate(h, calls, options, stop_above=math.inf if best is None else best.worst)
        if best is None or h.worst < best.worst:
            best = h
    return best
