"""Three synthetic tasks that need position: copy, associative recall, passkey retrieval.

Each task draws a batch of token sequences of exactly ``length + 1`` tokens; the model reads the
first ``length`` (``inputs``) and is scored on predicting the next token (``targets``) only where
``mask`` is set. Every sequence starts with ``BOS``. One vocabulary serves all tasks:

- ``copy``: ``BOS x_1 .. x_n SEP x_1 .. x_n EOS`` with :math:`n = L/2 - 1` symbols from 32;
  scored on the second copy. Needs: find where the first copy's next symbol is.
- ``recall``: ``BOS k_1 v_1 .. k_n v_n q_1 a_1 .. q_n a_n`` with :math:`n = L/4` distinct keys
  (of 64) and values (of 16); every key is asked once, in random order, and the answer
  :math:`a` is its value. Scored on the answers. Needs: find the key, read the token after it.
- ``passkey``: ``BOS f .. f KEY d_1 .. d_4 f .. f QRY d_1 .. d_4``: four digits hidden at a
  uniformly random place in :math:`L - 10` filler tokens (of 16), asked for at the end. Scored on
  the four digits. Needs: find ``KEY`` at any distance, then copy.

The sequences are drawn from a ``torch.Generator``, so a seed fixes them.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

import torch

BOS, SEP, EOS, KEY, QRY = 0, 1, 2, 3, 4
FIRST = 5  # content symbols start here
COPY_SYMBOLS = range(FIRST, FIRST + 32)
RECALL_KEYS = range(FIRST, FIRST + 64)
RECALL_VALUES = range(FIRST + 64, FIRST + 80)
FILLER = range(FIRST, FIRST + 16)
DIGITS = range(FIRST + 64, FIRST + 74)
VOCAB = FIRST + 80
PASSKEY_DIGITS = 4


class Batch(NamedTuple):
    """A batch of one task: ``(batch, length)`` each; ``mask`` marks the scored targets."""

    inputs: torch.Tensor
    targets: torch.Tensor
    mask: torch.Tensor


def _split(seq: torch.Tensor, scored_from: torch.Tensor | int, scored: int) -> Batch:
    """Inputs/targets of a ``(B, L + 1)`` sequence; targets ``scored_from ..`` are scored."""
    inputs, targets = seq[:, :-1], seq[:, 1:]
    index = torch.arange(targets.shape[1])  # (L,)
    start = torch.as_tensor(scored_from).reshape(-1, 1)  # (B or 1, 1)
    mask = (index >= start) & (index < start + scored)
    return Batch(inputs.contiguous(), targets.contiguous(), mask.expand_as(targets).contiguous())


def _symbols(choices: range, shape: tuple[int, ...], g: torch.Generator) -> torch.Tensor:
    return torch.randint(choices.start, choices.stop, shape, generator=g)


def copy_batch(batch: int, length: int, g: torch.Generator) -> Batch:
    """``BOS x SEP x EOS``; the second ``x`` is scored (predicted from ``SEP`` on)."""
    n = length // 2 - 1
    x = _symbols(COPY_SYMBOLS, (batch, n), g)
    bos = torch.full((batch, 1), BOS)
    seq = torch.cat([bos, x, torch.full_like(bos, SEP), x, torch.full_like(bos, EOS)], dim=1)
    return _split(seq, scored_from=n + 1, scored=n)  # target n + 1 is x_1 of the copy


def recall_batch(batch: int, length: int, g: torch.Generator) -> Batch:
    """``BOS (k v)*n (q a)*n``; the answers ``a`` are scored."""
    n = length // 4
    keys = torch.argsort(torch.rand(batch, len(RECALL_KEYS), generator=g), dim=1)[:, :n]
    keys = keys + RECALL_KEYS.start  # n distinct keys per sequence
    values = _symbols(RECALL_VALUES, (batch, n), g)
    order = torch.argsort(torch.rand(batch, n, generator=g), dim=1)  # ask every key once
    asked, answers = keys.gather(1, order), values.gather(1, order)
    pairs = torch.stack([keys, values], dim=2).reshape(batch, 2 * n)
    queries = torch.stack([asked, answers], dim=2).reshape(batch, 2 * n)
    seq = torch.cat([torch.full((batch, 1), BOS), pairs, queries], dim=1)
    mask = torch.zeros(batch, length, dtype=torch.bool)
    mask[:, 2 * n + 1 :: 2] = True  # target j is seq[j + 1]; the answers sit at 2n + 2, 2n + 4, ..
    return Batch(seq[:, :-1].contiguous(), seq[:, 1:].contiguous(), mask)


def passkey_batch(batch: int, length: int, g: torch.Generator) -> Batch:
    """Four digits after ``KEY`` somewhere in the filler, asked for after ``QRY`` at the end."""
    fill = length - 2 * (PASSKEY_DIGITS + 1)
    digits = _symbols(DIGITS, (batch, PASSKEY_DIGITS), g)
    filler = _symbols(FILLER, (batch, fill), g)
    before = torch.randint(0, fill + 1, (batch,), generator=g)  # filler tokens before KEY
    rows = []
    for b in range(batch):
        cut = int(before[b])
        rows.append(
            torch.cat(
                [
                    torch.tensor([BOS]),
                    filler[b, :cut],
                    torch.tensor([KEY]),
                    digits[b],
                    filler[b, cut:],
                    torch.tensor([QRY]),
                    digits[b],
                ]
            )
        )
    seq = torch.stack(rows)  # (B, length + 1)
    return _split(seq, scored_from=length - PASSKEY_DIGITS, scored=PASSKEY_DIGITS)


_BATCHES: dict[str, Callable[[int, int, torch.Generator], Batch]] = {
    "copy": copy_batch,
    "recall": recall_batch,
    "passkey": passkey_batch,
}
MIN_LENGTH = {"copy": 4, "recall": 4, "passkey": 12}
"""The shortest length of each task (one symbol to copy, one pair, two filler tokens)."""


def make_batch(task: str, batch: int, length: int, g: torch.Generator) -> Batch:
    """A batch of ``task`` with inputs of exactly ``length`` tokens (a multiple of 4)."""
    if task not in _BATCHES:
        raise ValueError(f"task must be one of {tuple(_BATCHES)}, got {task!r}")
    if length % 4 or length < MIN_LENGTH[task]:
        raise ValueError(
            f"length must be a multiple of 4 and >= {MIN_LENGTH[task]} for {task}, got {length}"
        )
    if task == "recall" and length // 4 > len(RECALL_KEYS):
        raise ValueError(f"recall needs length <= {4 * len(RECALL_KEYS)} (distinct keys)")
    return _BATCHES[task](batch, length, g)


TASKS = tuple(_BATCHES)
"""The task names."""
