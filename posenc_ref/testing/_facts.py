r"""What a failed check measured on the output, before any bug model is run.

:func:`find_facts` reads the error / allowance of every coordinate of every call once and keeps
what a reader can act on and what narrows the search: which pairs and positions are wrong,
whether position 0 already is, which heads of ``q`` and ``k``, which call patterns, whether the
coordinates past ``rotary_dim`` were touched, where the output is not finite. It also picks the
*evidence*: a few wrong tokens and a few right ones per call, at which every bug model is run
first; a model that misses there is dropped without being run on the whole call.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch

from ._calls import Call
from ._model import pair_index

# Tokens per call the models are run on first: wrong ones (the first, one in the middle, the
# last) and right ones (the first and the last), enough to drop almost every wrong model.
WRONG_TOKENS = 3
RIGHT_TOKENS = 2


@dataclass
class Facts:
    """What was measured on a failed check's output.

    Attributes
    ----------
    pairs, positions : set of int
        The wrong pairs, and the token positions (an M-RoPE token: its largest row) where
        something is wrong.
    tail : bool
        A coordinate past ``rotary_dim`` was changed.
    tensors : dict
        ``{"q": bool, "k": bool}``: which of the two is wrong somewhere.
    heads : dict
        ``{"q": (wrong heads, heads seen), "k": ...}``, sets of head indices.
    at_zero : bool
        A token at position 0 is wrong (where every angle is 0 and nothing should turn).
    kinds, wrong_kinds : set of str
        The call patterns made, and those of the calls that are wrong.
    evidence : dict
        Call index to the token indices every model is run on first.
    """

    pairs: set[int] = field(default_factory=set)
    positions: set[int] = field(default_factory=set)
    tail: bool = False
    tensors: dict[str, bool] = field(default_factory=lambda: {"q": False, "k": False})
    heads: dict[str, tuple[set[int], set[int]]] = field(default_factory=dict)
    at_zero: bool = False
    kinds: set[str] = field(default_factory=set)
    wrong_kinds: set[str] = field(default_factory=set)
    evidence: dict[int, torch.Tensor] = field(default_factory=dict)


def token_grid(call: Call, shape: torch.Size) -> torch.Tensor:
    """The token position of every coordinate, ``shape`` (b, h, n, d) int64."""
    p = call.positions
    if call.rows:
        token = p.amax(dim=0)[None, None, :, None]
    elif p.dim() > 1:
        token = p.reshape(p.shape[0], 1, -1)[..., None]
    else:
        token = p[None, None, :, None]
    return token.expand(shape)


def _spread(indices: torch.Tensor, count: int) -> list[int]:
    """Up to ``count`` of ``indices``: the first, the last and evenly between."""
    n = indices.numel()
    if n <= count:
        return indices.tolist()
    picks = torch.linspace(0, n - 1, count).round().long()
    return indices[picks].tolist()


def find_facts(calls: list[Call], layout: str, rotary_dim: int) -> Facts:
    """The facts of a failed check (each call's ``expected`` and ``allowed`` set)."""
    facts = Facts()
    index = pair_index(layout, rotary_dim)
    for c, call in enumerate(calls):
        facts.kinds.add(call.kind)
        bad_tokens = torch.zeros(call.n, dtype=torch.bool)
        for which, name in ((0, "q"), (1, "k")):
            bad = call.excess()[which] > 1  # (b, h, n, d)
            wrong, seen = facts.heads.setdefault(name, (set(), set()))
            seen.update(range(bad.shape[1]))
            if not bool(bad.any()):
                continue
            facts.tensors[name] = True
            facts.wrong_kinds.add(call.kind)
            wrong.update(int(h) for h in torch.nonzero(bad.any(dim=(0, 2, 3))).flatten())
            columns = bad.flatten(0, -2).any(dim=0)  # (head_dim,)
            facts.pairs.update(int(index[j]) for j in torch.nonzero(columns[:rotary_dim]).flatten())
            facts.tail |= bool(columns[rotary_dim:].any())
            tokens = token_grid(call, bad.shape)[bad]
            facts.positions.update(int(t) for t in tokens.unique())
            bad_tokens |= bad.any(dim=(0, 1, 3))
        at_zero = (call.positions == 0).reshape(-1, call.n).all(dim=0)  # every row at 0
        facts.at_zero |= bool((bad_tokens & at_zero).any())
        wrong = _spread(torch.nonzero(bad_tokens).flatten(), WRONG_TOKENS)
        right = _spread(torch.nonzero(~bad_tokens).flatten(), RIGHT_TOKENS)
        facts.evidence[c] = torch.tensor(sorted(set(wrong + right)), dtype=torch.long)
    return facts


def band(pairs: set[int], count: int) -> tuple[int, int] | None:
    """``(first, last)`` when the wrong pairs are one run that leaves pairs right on both sides."""
    if not pairs:
        return None
    first, last = min(pairs), max(pairs)
    if len(pairs) != last - first + 1 or first == 0 or last == count - 1:
        return None
    return first, last


def only_some_heads(facts: Facts) -> list[str]:
    """For each of q and k with some heads wrong and others right: which, in words."""

    def heads(indices: list[int]) -> str:
        return ("head " if len(indices) == 1 else "heads ") + ", ".join(map(str, indices))

    words = []
    for name in ("q", "k"):
        wrong, seen = facts.heads.get(name, (set(), set()))
        if wrong and wrong != seen:
            words.append(
                f"{name} {heads(sorted(wrong))} wrong, {name} {heads(sorted(seen - wrong))} right"
            )
    return words
