"""Three synthetic tasks that need position: copy, reverse, passkey retrieval.

Each task draws a batch of token sequences of exactly ``length + 1`` tokens; the model reads the
first ``length`` (``inputs``) and is scored on predicting the next token (``targets``) only where
``mask`` is set. Every sequence starts with ``BOS``. One vocabulary serves all tasks:

- ``copy``: ``BOS x_1 .. x_n SEP x_1 .. x_n EOS`` with :math:`n = L/2 - 1` symbols from 32;
  scored on the second copy. Needs: find where the first copy's next symbol is.
- ``reverse``: ``BOS x_1 .. x_n SEP x_n .. x_1 EOS``, likewise; scored on the reversed copy.
  Needs: read backwards, at a distance that shrinks by two with every answer.
- ``passkey``: ``BOS f .. f KEY d_1 .. d_4 f .. f QRY d_1 .. d_4``: four **distinct** digits
  (of 10, drawn without replacement) hidden at a uniformly random place in :math:`L - 10` filler
  tokens (of 16), asked for at the end. Scored on the four digits. Needs: find ``KEY`` at any
  distance, then copy. The digits are distinct so that a model copying by content (the token
  after the current digit's earlier copy) cannot be misled by a repeated digit: with
  replacement, 49.6 % of keys repeat one.

A sequence counts as solved when every scored token is predicted (``exact``). Under teacher
forcing that is the same event as greedy generation writing the whole answer (see
:func:`greedy_answer`): at each step the generated prefix equals the true one, so the next
prediction is the teacher-forced one. The sequences are drawn from a ``torch.Generator``, so a
seed fixes them.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

import torch

BOS, SEP, EOS, KEY, QRY = 0, 1, 2, 3, 4
FIRST = 5  # content symbols start here
COPY_SYMBOLS = range(FIRST, FIRST + 32)
FILLER = range(FIRST, FIRST + 16)
DIGITS = range(FIRST + 64, FIRST + 74)
VOCAB = FIRST + 80
PASSKEY_DIGITS = 4


class Batch(NamedTuple):
    """A batch of one task: ``(batch, length)`` each; ``mask`` marks the scored targets.

    ``distance`` (passkey only, else ``None``): ``(batch,)``, how many positions before the
    query (the ``QRY`` token, where the first digit is predicted) the first digit of the needle
    sits.
    """

    inputs: torch.Tensor
    targets: torch.Tensor
    mask: torch.Tensor
    distance: torch.Tensor | None = None


def _split(seq: torch.Tensor, scored_from: int, scored: int) -> Batch:
    """Inputs/targets of a ``(B, L + 1)`` sequence; targets ``scored_from ..`` are scored."""
    inputs, targets = seq[:, :-1], seq[:, 1:]
    index = torch.arange(targets.shape[1])  # (L,)
    mask = (index >= scored_from) & (index < scored_from + scored)
    return Batch(inputs.contiguous(), targets.contiguous(), mask.expand_as(targets).contiguous())


def _symbols(choices: range, shape: tuple[int, ...], g: torch.Generator) -> torch.Tensor:
    return torch.randint(choices.start, choices.stop, shape, generator=g)


def _copy_like(batch: int, length: int, g: torch.Generator, *, reverse: bool) -> Batch:
    n = length // 2 - 1
    x = _symbols(COPY_SYMBOLS, (batch, n), g)
    answer = x.flip(1) if reverse else x
    bos = torch.full((batch, 1), BOS)
    seq = torch.cat([bos, x, torch.full_like(bos, SEP), answer, torch.full_like(bos, EOS)], dim=1)
    return _split(seq, scored_from=n + 1, scored=n)  # target n + 1 is the answer's first symbol


def copy_batch(batch: int, length: int, g: torch.Generator) -> Batch:
    """``BOS x SEP x EOS``; the second ``x`` is scored (predicted from ``SEP`` on)."""
    return _copy_like(batch, length, g, reverse=False)


def reverse_batch(batch: int, length: int, g: torch.Generator) -> Batch:
    """``BOS x SEP reversed(x) EOS``; the reversed ``x`` is scored."""
    return _copy_like(batch, length, g, reverse=True)


def passkey_batch(batch: int, length: int, g: torch.Generator) -> Batch:
    """Four distinct digits after ``KEY`` somewhere in the filler, asked for after ``QRY``."""
    fill = length - 2 * (PASSKEY_DIGITS + 1)
    order = torch.argsort(torch.rand(batch, len(DIGITS), generator=g), dim=1)
    digits = order[:, :PASSKEY_DIGITS] + DIGITS.start  # (B, 4), without replacement
    filler = _symbols(FILLER, (batch, fill), g)
    before = torch.randint(0, fill + 1, (batch,), generator=g)  # filler tokens before KEY
    rows = []
    for b in range(batch):
        cut = int(before[b])
        parts = [[BOS], filler[b, :cut], [KEY], digits[b], filler[b, cut:], [QRY], digits[b]]
        rows.append(torch.cat([torch.as_tensor(p, dtype=torch.long) for p in parts]))
    seq = torch.stack(rows)  # (B, length + 1)
    query = length - PASSKEY_DIGITS  # input index of QRY, where the first digit is predicted
    distance = query - (before + 2)  # the first digit sits at input index cut + 2
    return _split(seq, scored_from=query, scored=PASSKEY_DIGITS)._replace(distance=distance)


_BATCHES: dict[str, Callable[[int, int, torch.Generator], Batch]] = {
    "copy": copy_batch,
    "reverse": reverse_batch,
    "passkey": passkey_batch,
}
MIN_LENGTH = {"copy": 4, "reverse": 4, "passkey": 12}
"""The shortest length of each task (one symbol to copy, two filler tokens)."""


def make_batch(task: str, batch: int, length: int, g: torch.Generator) -> Batch:
    """A batch of ``task`` with inputs of exactly ``length`` tokens (a multiple of 4)."""
    if task not in _BATCHES:
        raise ValueError(f"task must be one of {tuple(_BATCHES)}, got {task!r}")
    if length % 4 or length < MIN_LENGTH[task]:
        raise ValueError(
            f"length must be a multiple of 4 and >= {MIN_LENGTH[task]} for {task}, got {length}"
        )
    return _BATCHES[task](batch, length, g)


@torch.no_grad()
def greedy_answer(model: Callable[[torch.Tensor], torch.Tensor], batch: Batch) -> torch.Tensor:
    """The answer the model writes itself, token by token, from the inputs before the answer.

    ``model`` maps ``(B, n)`` tokens to ``(B, n, vocab)`` logits. Returns ``(B, scored)``. Slow
    (one forward per answer token): kept to show that teacher-forced exact match equals it.
    """
    first = int(batch.mask[0].nonzero()[0])  # every row of a batch is scored from one index
    scored = int(batch.mask[0].sum())
    tokens = batch.inputs[:, : first + 1]
    for _ in range(scored):
        step = model(tokens)[:, -1].argmax(-1, keepdim=True)  # (B, 1)
        tokens = torch.cat([tokens, step], dim=1)
    return tokens[:, first + 1 :]


TASKS = tuple(_BATCHES)
"""The task names."""
