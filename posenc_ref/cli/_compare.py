r"""``compare A B``: what differs between two configs' RoPE, and by how much the angles move.

For each pair of layer types (one RoPE per model, or per layer type) three answers:

- **what differs**: every field of the two :class:`~posenc_ref.models.RopeSpec` (widths, layout,
  base, scaling method and each of its parameters, factors, contexts, ...) whose values differ;
- **the angle difference** :math:`|\theta_A(m) - \theta_B(m)|` in radians (unwrapped:
  :math:`\theta(m) = m\,\omega(m)`, the frequencies of a call whose last position is :math:`m`),
  largest per band of pairs that a scaling treats alike: Llama 3's or YaRN's fast pairs (kept),
  middle pairs (blended) and slow pairs (divided by the factor), from the package's own band
  edges (``rope_scaling_functions._llama3_bands`` and ``_yarn_ramp``); deciles of the pairs for
  methods without bands. It is given over every position inside the original context
  :math:`L_0` and at chosen positions past it;
- **agreement**: the last position up to which every angle of the two agrees within the float32
  bound the conformance kit allows an angle (:mod:`posenc_ref.testing`:
  :math:`2u\,m\,\omega\,(\ln(1/\omega) + 4)`, :math:`u = 2^{-24}`, the larger of the two
  frequencies' bounds).

The bound grows with :math:`m` like the difference itself, so where both frequency sets are
constant the angles agree at every position or from position 1 on no longer; the answer is
richer for the length-dependent methods (dynamic NTK, LongRoPE), whose frequencies change past a
length: there it is the last position before they part.
"""

from __future__ import annotations

import inspect
import math
from dataclasses import dataclass
from typing import Any

import torch

from ..absolute import inv_freq as plain_inv_freq
from ..testing import float32_angle_allowance
from ._schema import plain, spec_json

_NOT_COMPARED = {"pairs", "model_type", "layer_type"}
DECILES = 10


@dataclass(frozen=True)
class Band:
    """Pairs a scaling treats alike: a name, what the scaling does to them, their indices."""

    name: str
    meaning: str
    pairs: tuple[int, ...]


# --------------------------------------------------------------------------- what differs


def flat(value: Any, prefix: str = "") -> dict[str, Any]:
    """A spec's JSON with nested objects spelled ``scaling.params.factor``."""
    if isinstance(value, dict):
        out: dict[str, Any] = {}
        for key, item in value.items():
            out.update(flat(item, f"{prefix}.{key}" if prefix else key))
        return out
    return {prefix: value}


def differences(a: Any, b: Any) -> list[tuple[str, Any, Any]]:
    """``(field, value in A, value in B)`` for every field of two specs that differs."""
    left = flat({k: v for k, v in spec_json(a).items() if k not in _NOT_COMPARED})
    right = flat({k: v for k, v in spec_json(b).items() if k not in _NOT_COMPARED})
    keys = list(dict.fromkeys([*left, *right]))
    return [(k, left.get(k), right.get(k)) for k in keys if left.get(k) != right.get(k)]


# --------------------------------------------------------------------------- bands


def defaults(function) -> dict[str, Any]:
    return {
        name: p.default
        for name, p in inspect.signature(function).parameters.items()
        if p.default is not inspect.Parameter.empty
    }


def scaling_bands(spec: Any) -> list[Band] | None:
    """Llama 3's or YaRN's bands of a spec's pairs, from the package's band edges; else None."""
    from .. import rope_scaling_functions as methods

    scaling = spec.scaling
    if scaling is None or scaling.method not in ("llama3", "yarn"):
        return None
    function = methods.llama3 if scaling.method == "llama3" else methods.yarn
    params = {**defaults(function), **scaling.params}
    dim, base, length = spec.rotary_dim, spec.base, params["original_max_len"]
    if scaling.method == "llama3":
        low, high = float(params["low_freq_factor"]), float(params["high_freq_factor"])
        turns = length * plain_inv_freq(dim, base) / (2 * math.pi)
        slow, middle = methods._llama3_bands(turns, low, high)
        if high <= low:  # no middle band (Llama 4 Scout): llama3() keeps those pairs
            middle = torch.zeros_like(middle)
    else:
        ramp = methods._yarn_ramp(
            dim, base, length, params["beta_fast"], params["beta_slow"], params["truncate"]
        )
        gamma = torch.tensor(ramp, dtype=torch.float64)
        slow, middle = gamma == 1, (gamma > 0) & (gamma < 1)
    fast = ~slow & ~middle
    s = f"{float(params['factor']):g}"
    named = [
        ("fast", "kept", fast),
        ("middle", "blended", middle),
        ("slow", f"divided by {s}", slow),
    ]
    return [
        Band(name, meaning, tuple(int(i) for i in torch.nonzero(mask).flatten()))
        for name, meaning, mask in named
        if bool(mask.any())
    ]


def decile_bands(pairs: int) -> list[Band]:
    """The pairs in ten groups of consecutive indices (fewer where there are fewer pairs)."""
    groups = torch.tensor_split(torch.arange(pairs), min(DECILES, pairs))
    return [
        Band(f"decile {k + 1}", "", tuple(int(i) for i in group))
        for k, group in enumerate(groups)
        if len(group)
    ]


def bands_of(a: Any, b: Any) -> tuple[list[Band], str]:
    """The bands to report, and where they come from (A's scaling, B's, or deciles)."""
    for name, spec in (("A", a), ("B", b)):
        found = scaling_bands(spec)
        if found is not None:
            return found, f"{spec.scaling.method} bands of {name}"
    return decile_bands(a.rotary_dim // 2), "deciles of the pairs"


# --------------------------------------------------------------------------- angles


def frequencies_at(spec: Any, position: int) -> torch.Tensor:
    """Signed frequencies of a call whose last position is ``position``, ``(pairs,)`` float64."""
    scaling = spec.scaling
    varies = scaling.varies_past if scaling is not None else None
    if varies is not None and position + 1 > varies:
        omega = spec.frequencies(position + 1).inv_freq
    else:
        omega = spec.inv_freq
    omega = omega.detach().to("cpu", torch.float64)
    return -omega if spec.clockwise else omega


def difference(a: Any, b: Any, position: int) -> torch.Tensor:
    """``|theta_A(m) - theta_B(m)|`` per pair at ``m = position``, ``(pairs,)`` float64."""
    return (position * (frequencies_at(a, position) - frequencies_at(b, position))).abs()


def bound(a: Any, b: Any, position: int) -> torch.Tensor:
    """The kit's float32 allowance of an angle at ``position``, per pair (the larger of the two).

    :func:`posenc_ref.testing.float32_angle_allowance`, evaluated for each side's frequencies.
    """
    at = torch.tensor([position])
    allowed = [
        float32_angle_allowance(at, frequencies_at(spec, position), base=spec.base)[0]
        for spec in (a, b)
    ]
    return torch.maximum(*allowed)


def agrees(a: Any, b: Any, position: int) -> bool:
    return bool((difference(a, b, position) <= bound(a, b, position)).all())


def switches(spec: Any) -> list[int]:
    scaling = spec.scaling
    varies = scaling.varies_past if scaling is not None else None
    return [] if varies is None else [varies - 1, varies, varies + 1]


def agreement(a: Any, b: Any, horizon: int) -> dict[str, Any]:
    """The last position up to which every angle agrees within the bound, up to ``horizon``.

    Checked at positions 0, 1, 2, where either side's frequencies switch, at powers of two and at
    ``horizon``; between the last agreeing and the first disagreeing checkpoint, by bisection
    (where the frequencies are constant, agreement does not change with the position, so a
    change lies at a switch).
    """
    points = {0, 1, 2, horizon, *switches(a), *switches(b)}
    points |= {1 << k for k in range(1, max(horizon, 2).bit_length())}
    checked = sorted(p for p in points if 0 <= p <= horizon)
    last = 0
    for point in checked:
        if not agrees(a, b, point):
            low, high = last, point  # agrees at low, not at high
            while high - low > 1:
                middle = (low + high) // 2
                low, high = (middle, high) if agrees(a, b, middle) else (low, middle)
            return {"until": low, "everywhere": False, "checked_up_to": horizon}
        last = point
    return {"until": horizon, "everywhere": True, "checked_up_to": horizon}


def largest_inside(a: Any, b: Any, context: int) -> tuple[torch.Tensor, list[int]]:
    """Per pair, the largest difference over positions ``0 .. context - 1``, and where taken.

    Where both sides' frequencies are constant up to ``context`` the difference grows with the
    position, so the last one is the largest (exact). Otherwise it is the largest over the
    switch points, powers of two and the last position.
    """
    last = context - 1
    points = {last} | {p for p in (*switches(a), *switches(b)) if 0 <= p <= last}
    if len(points) > 1:
        points |= {1 << k for k in range(max(last, 1).bit_length())}
    positions = sorted(p for p in points if p <= last)
    table = torch.stack([difference(a, b, p) for p in positions])  # (positions, pairs)
    best, where = table.max(dim=0)
    return best, [positions[int(i)] for i in where]


# --------------------------------------------------------------------------- one comparison


def context_of(a: Any, b: Any, given: int | None) -> int | None:
    """The original context compared inside: ``given``, else the smaller stated one."""
    if given is not None:
        return given
    stated = [s.original_max_len or s.max_len for s in (a, b)]
    stated = [int(n) for n in stated if n]
    return min(stated) if stated else None


def compare_specs(
    a: Any, b: Any, *, context: int | None = None, positions: list[int] | None = None
) -> dict[str, Any]:
    """The comparison of two specs as a JSON-ready dict (the text and the figure read it).

    Parameters
    ----------
    a, b
        :class:`~posenc_ref.models.RopeSpec` (anything else is a ``TypeError`` naming it).
    context
        :math:`L_0`; default the smaller ``original_max_len`` (else ``max_len``) of the two.
    positions
        Positions past :math:`L_0`; default ``2 L0`` and each side's ``max_len - 1`` beyond it.
    """
    from ..models import RopeSpec

    for name, spec in (("a", a), ("b", b)):
        if not isinstance(spec, RopeSpec):
            raise TypeError(
                f"{name} must be a RopeSpec (posenc_ref.models.rope_spec of a config), got "
                f"{type(spec).__name__}"
            )
    out: dict[str, Any] = {
        "layer_type_a": a.layer_type,
        "layer_type_b": b.layer_type,
        "differences": [{"field": f, "a": x, "b": y} for f, x, y in differences(a, b)],
        "comparable": a.rotary_dim == b.rotary_dim,
    }
    if not out["comparable"]:
        out["reason"] = (
            f"rotary widths differ ({a.rotary_dim} and {b.rotary_dim}): pair i turns at a "
            "different frequency of a different width, so their angles are not compared"
        )
        return out
    length = context_of(a, b, context)
    if length is None:
        out["comparable"] = False
        out["reason"] = "neither config states a context; give one with --context L0"
        return out
    if positions is None:
        ends = [s.max_len - 1 for s in (a, b) if s.max_len and s.max_len - 1 > 2 * length]
        positions = sorted({2 * length, *ends})
    positions = sorted({p for p in positions if p >= length})
    bands, source = bands_of(a, b)
    inside, at = largest_inside(a, b, length)
    past = [difference(a, b, p) for p in positions]
    out.update(
        context=length,
        positions=positions,
        bands_from=source,
        bands=[
            {
                "name": band.name,
                "meaning": band.meaning,
                "pairs": [band.pairs[0], band.pairs[-1]],
                "count": len(band.pairs),
                "inside": plain(float(inside[list(band.pairs)].max())),
                "past": [plain(float(d[list(band.pairs)].max())) for d in past],
            }
            for band in bands
        ],
        pairs=[
            {
                "pair": i,
                "inv_freq_a": plain(float(a.inv_freq[i])),
                "inv_freq_b": plain(float(b.inv_freq[i])),
                "inside": plain(float(inside[i])),
                "inside_at": at[i],
                "past": [plain(float(d[i])) for d in past],
            }
            for i in range(a.rotary_dim // 2)
        ],
        agreement=agreement(a, b, max([length - 1, *positions])),
    )
    return out


def pairs_of(a_specs: dict, b_specs: dict, layer_type: str | None) -> tuple[list, list[str]]:
    """Which of A's and B's specs are compared, and notes on the layer types left out."""
    if layer_type is not None:
        missing = [n for n, s in (("A", a_specs), ("B", b_specs)) if layer_type not in s]
        if missing:
            raise ValueError(
                f"--layer-type {layer_type}: not a layer type of {' and '.join(missing)} "
                f"(A has {list(a_specs)}, B has {list(b_specs)})"
            )
        return [(a_specs[layer_type], b_specs[layer_type])], []
    if list(a_specs) == [None]:
        return [(a_specs[None], spec) for spec in b_specs.values()], []
    if list(b_specs) == [None]:
        return [(spec, b_specs[None]) for spec in a_specs.values()], []
    common = [t for t in a_specs if t in b_specs]
    notes = [f"layer type {t!r} only in A" for t in a_specs if t not in b_specs]
    notes += [f"layer type {t!r} only in B" for t in b_specs if t not in a_specs]
    return [(a_specs[t], b_specs[t]) for t in common], notes
