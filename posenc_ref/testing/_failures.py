r"""When the user's function raises: the exception reported as theirs, its table's length learned.

Explained on the site: [what is compared](check.md#check-rope).

A function with a fixed table (vLLM's cos/sin cache of ``max_position_embeddings`` rows, a
precomputed ``freqs_cis``) fails past its last row, inside its own code: an ``IndexError``, or
its own ``assert``. The check does not guess the table's length; when a call raises, it asks the
function for single positions between the last call that worked and the one that failed, and
finds the first position that fails (a bisection: some fifty one-token calls at most). The
message then says what the function raised, where it works and where it stops, and the
``max_position`` to pass. An exception that a single position does not reproduce is reported as
the user's, with its type and message, and nothing is guessed.
"""

from __future__ import annotations

import torch

from ._arrays import FnRaised, RopeFn
from ._calls import CallPlan
from ._plan import run_call


def _works(fn: RopeFn, position: int, dtype, head_dim: int, device) -> bool:
    """Whether ``fn`` takes a one-token call at ``position`` without raising."""
    plan = CallPlan("decode", torch.tensor([position], dtype=torch.int64), 1, 1, 1)
    try:
        run_call(fn, plan, dtype, head_dim, torch.Generator().manual_seed(0), device)
    except FnRaised:
        return False
    except AssertionError:  # it ran and returned something the check refuses: it took the call
        return True
    return True


def last_working_position(
    fn: RopeFn, raised: FnRaised, worked: int | None, dtype, head_dim: int, device
) -> int | None:
    """The largest position ``fn`` takes, if the failure is one of length; else ``None``.

    ``worked`` is the largest position of the calls that went through before (``None``: the
    first call failed). The failure is one of length when a single token at the failing call's
    largest position fails too and one at ``worked`` (or 0) does not.
    """
    if raised.positions is None:
        return None
    failing = int(raised.positions.max())
    low = 0 if worked is None else worked
    if low >= failing or _works(fn, failing, dtype, head_dim, device):
        return None
    if not _works(fn, low, dtype, head_dim, device):
        return None
    high = failing  # works at low, fails at high
    while high - low > 1:
        middle = (low + high) // 2
        if _works(fn, middle, dtype, head_dim, device):
            low = middle
        else:
            high = middle
    return low


def raised_message(raised: FnRaised, last: int | None, max_position: int | None) -> str:
    """What the check says when ``fn`` raised, with the table's length when it was learned."""
    lines = [f"{raised.words()}."]
    if last is None:
        lines.append(
            "The exception is your function's (its traceback is above); the check stopped at it."
        )
        return "\n".join(lines)
    asked = (
        f"the check went to max_position={max_position}, as you asked"
        if max_position is not None
        else "by default the check goes to max(8 x the original context, 2**17)"
    )
    lines.append(
        f"It takes every position up to {last} and raises from position {last + 1} on (single "
        f"tokens, asked one at a time): its table has {last + 1} rows, positions 0..{last}, and "
        f"{asked}. Pass max_position={last} to check the positions it has (an engine whose "
        "cos/sin cache has max_position_embeddings rows serves positions up to "
        "max_position_embeddings - 1)."
    )
    return "\n".join(lines)
