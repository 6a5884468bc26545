r"""One call of a user's function, as the checks describe it: its plan, inputs and outputs.

The bottom of the kit: a :class:`CallPlan` is a call to make (its pattern, positions and shapes)
and a :class:`Call` the call made (the inputs passed, the outputs returned, and what was expected
and allowed). Every other module of the kit reads these; this one imports nothing of the kit but
``_common``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch

from ._common import dtype_name, excess_ratio

__all__ = ["CallPlan", "Call", "describe_positions", "position_runs"]


@dataclass
class CallPlan:
    """One call to make: its pattern, positions (as passed to fn) and shapes."""

    kind: str
    positions: torch.Tensor  # int64: (n,), (batch, 1, n) for "rows", (3, n) for "image"
    batch: int
    q_heads: int
    k_heads: int
    rows: bool = False  # positions carry M-RoPE rows
    variants: dict[str, torch.Tensor] = field(default_factory=dict)

    @property
    def n(self) -> int:
        return self.positions.shape[-1]


@dataclass
class Call:
    """One call of the user's fn: its inputs, outputs and the expected outputs (float64, CPU)."""

    plan: CallPlan
    dtype: torch.dtype
    inputs: tuple[torch.Tensor, torch.Tensor]  # q, k as float64 (exactly the values passed)
    outputs: tuple[torch.Tensor, torch.Tensor]  # the user's q_rot, k_rot as float64
    expected: tuple[torch.Tensor, ...] = ()
    allowed: tuple[torch.Tensor, ...] = ()
    _excess: tuple[torch.Tensor, ...] = field(default=(), repr=False)

    def excess(self) -> tuple[torch.Tensor, torch.Tensor]:
        """Error / allowance of q_rot and k_rot against the expected outputs (> 1: wrong)."""
        if not self._excess:
            triples = zip(self.outputs, self.expected, self.allowed, strict=True)
            self._excess = tuple(excess_ratio(*t) for t in triples)
        return self._excess  # type: ignore[return-value]

    @property
    def positions(self) -> torch.Tensor:
        return self.plan.positions

    @property
    def kind(self) -> str:
        return self.plan.kind

    @property
    def rows(self) -> bool:
        return self.plan.rows

    @property
    def n(self) -> int:
        return self.plan.n

    @property
    def seq_len(self) -> int:
        """The call's length as the reference sees it: its largest position + 1."""
        return int(self.positions.max()) + 1

    @property
    def start(self) -> int:
        return int(self.positions.min())

    def token_positions(self) -> torch.Tensor:
        """``(n,)``: each token's position (an M-RoPE call: the largest of its rows)."""
        p = self.positions
        if self.rows:
            return p.amax(dim=0)
        return p.reshape(-1, p.shape[-1]).amax(dim=0) if p.dim() > 1 else p

    def where(self) -> str:
        """The positions of the call, in words."""
        return describe_positions(self.plan)

    def describe(self) -> str:
        shapes = f"q {tuple(self.inputs[0].shape)}, k {tuple(self.inputs[1].shape)}"
        return f"{self.where()}, {dtype_name(self.dtype)}, {shapes}"


def describe_positions(plan: CallPlan) -> str:
    p = plan.positions
    first, last = int(p.min()), int(p.max())
    if plan.kind == "decode":
        return f"decode step at position {first}"
    if plan.kind == "rows":
        starts = ", ".join(str(int(s)) for s in p[:, 0, 0])
        return f"{p.shape[0]} rows from positions {starts} ({plan.n} each)"
    if plan.kind == "packed":
        runs = ", ".join(f"{a}..{a + n - 1}" for a, n in position_runs(p))
        return f"packed sequences at positions {runs}"
    if plan.kind == "grid":
        height, width = (int(v) for v in plan.variants["grid"])
        return f"a {height} x {width} grid of patches"
    if plan.kind == "image":
        return f"text, an image and a video (3 position rows, {first}..{last})"
    word = "chunk" if plan.kind == "chunk" else "positions"
    return f"{word} {first}..{last}"


def position_runs(positions: torch.Tensor) -> list[tuple[int, int]]:
    """``(first position, count)`` of each run of consecutive positions of a 1-D tensor."""
    p = positions.tolist()
    runs, start = [], 0
    for t in range(1, len(p) + 1):
        if t == len(p) or p[t] != p[t - 1] + 1:
            runs.append((p[start], t - start))
            start = t
    return runs
