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
    """One position set run with real and identity tables: a list of (pre, post) per call.

    ``identity_positions`` says which positions the identity run used: ``"zero"`` (so that a
    position-dependent query scaling is 1), or ``"real"`` where the positions feed more than
    RoPE (Recurrent Gemma's recurrent blocks restart at position 0) and zeros would change the
    layers' inputs.
    """

    positions: PositionSet
    pre: list[harness.Call]
    post: list[harness.Call]
    identity_positions: str = "zero"


def same_inputs(pre: list[harness.Call], post: list[harness.Call]) -> bool:
    """Whether both runs fed every attention the same values (hence the same layer input).

    Where the values are the keys (DeepSeek-V4: K = V, rotated), the keys' unrotated part
    stands in: the values carry RoPE by design there.
    """
    if len(pre) != len(post):
        return False
    for a, b in zip(pre, post, strict=True):
        if a.v.shape != b.v.shape:
            return False
        if b.v.shape == b.k.shape and torch.equal(b.v, b.k):
            continue
        if not torch.equal(a.v, b.v):
            return False
    return True


@dataclass
class Case:
    family: str
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


# rope types whose frequencies depend on the call's largest position
LENGTH_DEPENDENT = {"dynamic", "longrope"}


def length_dependent(config) -> bool:
    rope = getattr(config, "rope_parameters", None) or {}
    return any(d.get("rope_type") in LENGTH_DEPENDENT for d in _rope_dicts(rope) if d)


def position_sets(config, rows: int = 1) -> list[PositionSet]:
    """Inside the original context L, and far past it (crossing L, up to 4L).

    Where the frequencies depend on the call's largest position (``dynamic``, ``longrope``)
    the two are separate calls ("inside" ends at L - 1, "far" crosses L); otherwise one call
    holds both ("both"). For a rotary module with several position rows (M-RoPE: ``rows`` 3,
    or 2 or 4 in a few families) every row differs, and a probe set tells which row each pair
    follows.
    """
    L = original_context(config)
    inside = sorted({p for p in (0, 1, 2, 3, 7, 31, 100, L // 2, L - 2, L - 1) if 0 <= p < L})
    far = sorted({L, L + 1, L + 100, 2 * L + 3, 4 * L - 1})
    if length_dependent(config):
        sets = [
            PositionSet("inside", torch.tensor(inside)),
            PositionSet("far", torch.tensor([0, 1, *far])),
        ]
    else:
        sets = [PositionSet("both", torch.tensor(inside + far))]
    if rows == 1:
        return sets
    out = []
    for s in sets:
        t = s.positions
        variants = [t, (2 * t) // 3 + 1, t // 2 + 3, (3 * t) // 4 + 2]  # every row different
        out.append(PositionSet(s.name, torch.stack(variants[:rows])))
    # Probe for the row of each pair: rows (p, p, ...) and (p, 2p, 3p, ...) at a few scales.
    probe = [(0,) * rows]
    for p in (1, 30, 1000, 30000):
        probe += [(p,) * rows, tuple(p * (r + 1) for r in range(rows))]
    out.append(PositionSet("probe", torch.tensor(probe).T.contiguous()))
    return out


def _rope_dicts(rope: dict) -> list[dict]:
    """The RoPE dicts of a config: one, or one per layer type."""
    if rope and all(isinstance(v, dict) or v is None for v in rope.values()):
        return [v for v in rope.values() if v]
    return [rope]


# Keys of HF's scaling types: dropped when the type changes (every other key of the family's
# RoPE dict, such as its base, partial factor, M-RoPE sections or llama_4_scaling_beta, stays).
TYPE_KEYS = {
    "rope_type",
    "type",
    "factor",
    "beta_fast",
    "beta_slow",
    "mscale",
    "mscale_all_dim",
    "attention_factor",
    "truncate",
    "short_factor",
    "long_factor",
    "low_freq_factor",
    "high_freq_factor",
}


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
        # the factor is max_len / L exactly (4 when max_len is a multiple of 4): transformers
        # reads both, and a config whose factor and lengths disagree is refused by posenc_ref
        "yarn": {"factor": max_len / L, "original_max_position_embeddings": L},
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
        if d.get("rope_type") == "proportional":
            # Gemma 4's global layers: the attention rotates the whole head with the table of
            # its own type (zero frequencies past the partial factor); it is scaled by its factor
            d["factor"] = FACTOR
            continue
        kept = {k: v for k, v in d.items() if k not in TYPE_KEYS}
        if "llama_4_scaling_beta" not in d:  # which also reads the original length
            kept.pop("original_max_position_embeddings", None)
        d.clear()
        d.update(kept, rope_type=kind, **extra)
    return rope


def run_pass(
    model, family: str, positions: PositionSet, identity: str = "auto", batch: int | None = None
) -> Pass:
    """Run one position set with real tables, then with the identity tables.

    ``identity`` is where the identity run puts its tokens: ``"zero"`` (every position 0, so
    that a position-dependent query scaling is 1), ``"real"`` (the same positions), or
    ``"auto"``: both, and ``"zero"`` unless the positions change more than the queries there
    (keys or values differ: the positions feed the layers' inputs, as Recurrent Gemma's
    recurrent blocks and ZAYA's convolution over the sequence do).
    """
    seq = positions.positions.shape[-1]
    if batch is None:
        batch = 2 if seq <= 64 else 1  # a long run needs no second row, and its masks are big
    gen = torch.Generator().manual_seed(seq)
    ids = torch.randint(3, 120, (batch, seq), generator=gen)
    pos = positions.positions
    if pos.dim() == 2:
        pos = pos[:, None, :].expand(pos.shape[0], batch, seq)
    else:
        pos = pos[None].expand(batch, -1)

    def record(identity: bool, at):
        with harness.Recorder(model) as rec, harness.call_context(model, family, identity):
            harness.forward(model, family, ids, at)
        return rec.calls

    post = record(False, pos)
    if identity == "real":
        return Pass(positions, record(True, pos), post, "real")
    pre = record(True, torch.zeros_like(pos))
    if identity == "zero":
        return Pass(positions, pre, post)
    real = record(True, pos)
    keys_equal = len(pre) == len(real) and all(
        torch.equal(a.k, b.k) for a, b in zip(pre, real, strict=True)
    )
    if keys_equal and same_inputs(pre, post):
        return Pass(positions, pre, post)
    return Pass(positions, real, post, "real")


def run_case(
    model_class,
    family: str,
    config,
    name: str,
    requested,
    rows: int,
    weights=None,
    identity: str = "auto",
    model=None,
) -> Case:
    """Run every position set of ``config`` (see ``run_pass``) on the family's tiny model.

    ``model``: the model built from ``config`` already, with ``weights`` (else it is built
    here, from them).
    """
    case = Case(family, name, config, requested)
    try:
        if model is None:
            model = harness.build(model_class, config, weights)
        from .special import SPECIAL

        sets = position_sets(config, rows)
        long = SPECIAL.get(family, {}).get("long_positions")
        if long and requested is None:  # a contiguous run from 0: scalings by token index
            sets.append(PositionSet("long", torch.arange(long)))
        for ps in sets:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                with torch.no_grad():
                    case.passes.append(run_pass(model, family, ps, identity))
    except Exception as exc:  # noqa: BLE001 (the family's own error is the result)
        case.error = f"{type(exc).__name__}: {exc}"
    return case
