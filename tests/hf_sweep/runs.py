"""The forward passes of one family: default and scaled RoPE, positions inside and far past.

For each *case* (a ``rope_parameters`` variant) the family's tiny model is built once and run on
each position set twice (rotary tables as the code computes them, and the identity; see
``harness``). Positions are given as ``position_ids``; M-RoPE families get three different rows.
"""

from __future__ import annotations

import copy
import warnings
from dataclasses import dataclass, field
from typing import Any

import torch

from . import harness

FACTOR = 4.0


@dataclass
class PositionSet:
    name: str
    positions: torch.Tensor  # (seq,) or (3, seq) for M-RoPE


@dataclass
class Pass:
    """One position set run with real and identity tables: a list of (pre, post) per call."""

    positions: PositionSet
    pre: list[harness.Call]
    post: list[harness.Call]


@dataclass
class Case:
    name: str
    config: Any  # the tiny transformers config the model was built from
    requested: dict | None  # the rope_parameters asked for (None: the family's default)
    passes: list[Pass] = field(default_factory=list)
    error: str | None = None


def original_context(config) -> int:
    """The pre-training context the config states: original_max_position_embeddings, else max."""
    rope = getattr(config, "rope_parameters", None) or {}
    if rope and all(isinstance(v, dict) or v is None for v in rope.values()):
        rope = next((v for v in rope.values() if v), {})
    value = rope.get("original_max_position_embeddings") if isinstance(rope, dict) else None
    value = value or getattr(config, "original_max_position_embeddings", None)
    return int(value or getattr(config, "max_position_embeddings", None) or 4096)


def position_sets(config, mrope: bool) -> list[PositionSet]:
    """Inside the original context L, and far past it (crossing L, up to 4L)."""
    L = original_context(config)
    inside = sorted({p for p in (0, 1, 2, 3, 7, 31, 100, L // 2, L - 2, L - 1) if 0 <= p < L})
    far = sorted({0, 1, L, L + 1, L + 100, 2 * L + 3, 4 * L - 1})
    sets = [PositionSet("inside", torch.tensor(inside)), PositionSet("far", torch.tensor(far))]
    if not mrope:
        return sets
    out = []
    for s in sets:
        t = s.positions
        rows = torch.stack([t, (2 * t) // 3 + 1, t // 2 + 3])  # three different rows
        out.append(PositionSet(s.name, rows))
    # Probe for the row of each pair: rows (p, p, p) and (p, 2p, 3p) at a few scales.
    probe = [(0, 0, 0)]
    for p in (1, 30, 1000, 30000):
        probe += [(p, p, p), (p, 2 * p, 3 * p)]
    out.append(PositionSet("probe", torch.tensor(probe).T.contiguous()))
    return out


def _rope_dicts(rope: dict) -> list[dict]:
    """The RoPE dicts of a config: one, or one per layer type."""
    if rope and all(isinstance(v, dict) or v is None for v in rope.values()):
        return [v for v in rope.values() if v]
    return [rope]


KEEP = ("rope_theta", "partial_rotary_factor", "mrope_section", "mrope_interleaved")


def scaled(rope: dict, kind: str, max_len: int, rotary_pairs: int | None) -> dict | None:
    """The family's rope_parameters with each RoPE dict switched to ``kind``.

    Where a type reads an original context it is ``max_len / factor`` (``max_len`` =
    ``max_position_embeddings``), so that the factor and the two lengths agree.
    """
    rope = copy.deepcopy(dict(rope))
    L = max(int(max_len // FACTOR), 2)
    extra = {
        "linear": {"factor": FACTOR},
        "dynamic": {"factor": FACTOR},
        "yarn": {"factor": FACTOR, "original_max_position_embeddings": L},
        "llama3": {
            "factor": 8.0,
            "low_freq_factor": 1.0,
            "high_freq_factor": 4.0,
            "original_max_position_embeddings": max(int(max_len // 8), 2),
        },
    }.get(kind)
    if kind == "longrope":
        if not rotary_pairs:
            return None
        extra = {
            "short_factor": [1.0 + 0.05 * i for i in range(rotary_pairs)],
            "long_factor": [1.0 + 2.0 * i / rotary_pairs for i in range(rotary_pairs)],
            "original_max_position_embeddings": L,
        }
    for d in _rope_dicts(rope):
        kept = {k: d[k] for k in KEEP if k in d}
        d.clear()
        d.update(kept, rope_type=kind, **extra)
    return rope


def run_pass(model, family: str, positions: PositionSet, batch: int = 2) -> Pass:
    """Run one position set with real tables, then with the identity at position 0."""
    seq = positions.positions.shape[-1]
    gen = torch.Generator().manual_seed(seq)
    ids = torch.randint(3, 120, (batch, seq), generator=gen)
    pos = positions.positions
    pos = pos[:, None, :].expand(3, batch, seq) if pos.dim() == 2 else pos[None].expand(batch, -1)
    calls = []
    for identity in (False, True):
        with harness.Recorder() as rec, harness.call_context(model, family, identity):
            harness.forward(model, family, ids, torch.zeros_like(pos) if identity else pos)
        calls.append(rec.calls)
    return Pass(positions, calls[1], calls[0])


def run_case(
    model_class, family: str, config, name: str, requested, mrope: bool, weights=None
) -> Case:
    case = Case(name, config, requested)
    try:
        model = harness.build(model_class, config, weights)
        for ps in position_sets(config, mrope):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                with torch.no_grad():
                    case.passes.append(run_pass(model, family, ps))
    except Exception as exc:  # noqa: BLE001 (the family's own error is the result)
        case.error = f"{type(exc).__name__}: {exc}"
    return case
