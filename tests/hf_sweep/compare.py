"""posenc_ref's rotation of the family's pre-rotation states, against the family's own output.

``RotaryEmbedding.from_hf_config(config)`` is built from the same tiny transformers config the
family's model was built from, and rotates the states the family had before its RoPE. The
difference to the family's rotated states must stay within HF's float32-angle error bound (the
bound of tests/test_peers.py and tests/test_models_hf.py: HF forms ``position * inv_freq`` in
float32, an absolute angle error up to ``2**-24 * (position + 1) * (ln(base) + 10)``), position by
position. The same module with the other pair layout must fail it: that is what proves the
layout.

The spec says where its rotary part sits in the attention head: the whole head
(``head_dim`` equals the head width), or, for the MLA families, the last ``head_dim``
coordinates after ``nope_dim`` pass-through ones. It says which layers have no RoPE
(``nope_layers``) and any query scaling (``query_scale``: applied by the module;
``nope_query_scale``: in the layers without RoPE, applied by the caller, here).
"""

from __future__ import annotations

import copy
import inspect
import math
from dataclasses import dataclass

import torch

ULP = 2.0**-24
OTHER = {"half": "interleaved", "interleaved": "half"}


def angle_atol(max_position: int | torch.Tensor, base: float) -> float | torch.Tensor:
    """HF's float32 angle error at a position (tests/test_models_hf.py's bound).

    ``max_position`` is an int, or a float64 tensor of positions (the same expression in the
    same order, element by element: the bound of each, to the bit).
    """
    return ULP * (max_position + 1) * (math.log(base) + 10) + 8 * ULP


@dataclass
class Gap:
    """max |ours - theirs| over q and k, and the same over the bound (<= 1 agrees)."""

    gap: float
    ratio: float

    @property
    def agrees(self) -> bool:
        return self.ratio <= 1.0


def reads_layer() -> bool:
    """Whether ``from_hf_config`` takes the layer (else its module depends on the type only)."""
    from posenc_ref import RotaryEmbedding

    return "layer" in inspect.signature(RotaryEmbedding.from_hf_config).parameters


def ours_for(config, layer: int, layer_type: str | None, **reader):
    """``from_hf_config`` for one layer of the config: (module or None, error text or None).

    ``reader``: the reader's keyword arguments for what the weights hold (``lerope_alpha``).
    """
    from posenc_ref import RotaryEmbedding

    kwargs = dict(reader)
    if layer_type is not None:
        kwargs["layer_type"] = layer_type
    if reads_layer():
        kwargs["layer"] = layer
    try:
        # a one-row table to start with (a cache, grown on demand): the comparisons reach 4 L,
        # mostly past a default table, where the module computes their rows directly; the
        # default 4096-row table was built in float32, rebuilt in float64 for the float64
        # states and copied for the other layout, for nothing (a twentieth of the sweep's CPU)
        return RotaryEmbedding.from_hf_config(config, max_len=1, **kwargs), None
    except (ValueError, NotImplementedError, TypeError, KeyError) as exc:
        return None, f"{type(exc).__name__}: {exc}"


def layer_plan(config, **reader) -> list | str | None:
    """posenc_ref's RoPE per layer: ``layer_specs`` (a spec or ``None`` per layer).

    Its refusal as text; ``None`` where posenc_ref has no ``layer_specs`` (every layer then has
    RoPE).
    """
    try:
        from posenc_ref.models import layer_specs
    except ImportError:
        return None
    try:
        return layer_specs(config, **reader)
    except (ValueError, NotImplementedError, TypeError, KeyError) as exc:
        return f"{type(exc).__name__}: {exc}"


def is_nope(plan: list | None, layer: int) -> bool:
    return isinstance(plan, list) and 0 <= layer < len(plan) and plan[layer] is None


def unrotated(
    plan: list, q: torch.Tensor, k: torch.Tensor, positions: torch.Tensor, by_index: bool = False
):
    """A layer without RoPE: q and k as they are.

    The query is multiplied by the spec's ``nope_query_scale`` (Llama 4's attention-temperature
    tuning) where it has one, at each token's position, or at its index in the call where the
    family's code counts tokens instead of reading position_ids (``by_index``).
    """
    scale = next((getattr(s, "nope_query_scale", None) for s in plan if s is not None), None)
    if scale is not None:
        largest = positions.max(0).values if positions.dim() == 2 else positions
        if by_index:
            largest = torch.arange(largest.shape[-1])
        # the states before RoPE come from a run at position 0, where a smooth scaling (Beam's)
        # is already slightly above 1: divide it out
        at_zero = scale(torch.zeros(1, dtype=torch.long)).to(q.dtype)
        q = q * (scale(largest).to(q.dtype) / at_zero)[:, None]
    return q, k


def unrotated_bound(q: torch.Tensor, k: torch.Tensor, positions: torch.Tensor) -> torch.Tensor:
    """(seq, 1): float32 rounding of a scaled query (HF scales in float32)."""
    x = max(float(q.abs().max()), float(k.abs().max()))
    return torch.full((positions.shape[-1], 1), 16 * ULP * 2 * x, dtype=torch.float64)


def layer_type_of(config, layer: int) -> str | None:
    """The layer's type where the config gives one RoPE per layer type."""
    rope = getattr(config, "rope_parameters", None) or {}
    types = getattr(config, "layer_types", None)
    nested = bool(rope) and all(isinstance(v, dict) or v is None for v in rope.values())
    if types is not None and layer < len(types) and (nested or types[layer] in rope):
        return types[layer]
    return None


def rotate(module, q: torch.Tensor, k: torch.Tensor, positions: torch.Tensor, layer: int):
    """posenc_ref's states for one layer: (q, k) of the family's attention-head width."""
    spec = module.spec
    width = q.shape[-1]
    nope_dim = int(getattr(spec, "nope_dim", 0) or 0)
    if spec.head_dim + nope_dim != width:
        raise ValueError(
            f"the spec's head (head_dim {spec.head_dim} + nope_dim {nope_dim}) is not the "
            f"{width} coordinates the family hands attention"
        )
    if q.shape[2] != k.shape[2]:
        raise ValueError(f"keys of another length ({k.shape[2]}) than the queries ({q.shape[2]})")
    qr, kr = module(q[..., nope_dim:], k[..., nope_dim:], positions)
    q_nope = q[..., :nope_dim]
    scale = getattr(spec, "query_scale", None)
    if nope_dim and scale is not None:  # the whole query is scaled: the caller's part too
        largest = positions.max(0).values if positions.dim() == 2 else positions
        q_nope = q_nope * scale(largest).to(q.dtype)[:, None]
    return torch.cat([q_nope, qr], -1), torch.cat([k[..., :nope_dim], kr], -1)


def token_keys(q: torch.Tensor, k: torch.Tensor) -> torch.Tensor:
    """The keys of the queries' tokens.

    DeepSeek-V4 appends compressed keys (block summaries rotated at their own positions):
    :func:`compressed_keys` compares those.
    """
    return k[:, :, : q.shape[2]] if k.shape[2] > q.shape[2] else k


def compressed_keys(module, q: torch.Tensor, k_pre: torch.Tensor, k_post: torch.Tensor):
    """The keys after the tokens' (DeepSeek-V4's compressed keys), or ``None`` where none.

    ``(ours, theirs, bound, positions)``: ours rotated by ``rotate_compressed_keys`` at the
    positions ``spec.compressed_keys`` gives for the call's tokens (the family's compressors
    count the call's tokens from 0 without a cache, whatever ``position_ids`` say).
    """
    from posenc_ref.models import rotate_compressed_keys

    seq = q.shape[2]
    if k_pre.shape[2] <= seq:
        return None
    before, after = k_pre[:, :, seq:], k_post[:, :, seq:]
    rule = getattr(module.spec, "compressed_keys", None)
    if rule is None:
        raise ValueError(
            f"the family appends {before.shape[2]} keys after the tokens' and the spec has no "
            "compressed keys"
        )
    positions = rule.positions(seq)
    if len(positions) != before.shape[2]:
        raise ValueError(
            f"the spec gives {len(positions)} compressed keys for {seq} tokens, the family "
            f"appends {before.shape[2]}"
        )
    nope = int(module.spec.nope_dim)
    ours = torch.cat([before[..., :nope], rotate_compressed_keys(module, before[..., nope:])], -1)
    return ours, after, bound(module, before, before, positions), positions


def bound(module, q, k, positions) -> torch.Tensor:
    """(seq, 1) the float32-angle bound per position, for states of these magnitudes."""
    spec = module.spec
    largest = positions.max(0).values if positions.dim() == 2 else positions
    a = max(1.0, float(spec.attention_factor))
    scale = getattr(spec, "query_scale", None)
    if scale is not None:
        a *= float(scale(largest).max())
    x = max(float(q.abs().max()), float(k.abs().max()))
    per = angle_atol(largest.to(torch.float64), spec.base)  # (seq,), float64
    return (per * 2 * a * x + 16 * ULP * a * x)[:, None]


def gap(ours: tuple, theirs: tuple, limit: torch.Tensor) -> Gap:
    worst, ratio = 0.0, 0.0
    for a, b in zip(ours, theirs, strict=True):
        diff = (a - b).abs()  # (batch, heads, seq, width)
        worst = max(worst, float(diff.max()))
        ratio = max(ratio, float((diff.amax(dim=(0, 1)) / limit).max()))
    return Gap(worst, ratio)


def detail(ours: tuple, theirs: tuple, limit: torch.Tensor, positions: torch.Tensor) -> dict:
    """Where the difference is worst: q and k ratios, max |ours - HF|, its bound, the position."""
    largest = positions.max(0).values if positions.dim() == 2 else positions
    out: dict = {}
    worst = -1.0
    for name, a, b in zip(("q", "k"), ours, theirs, strict=True):
        per = (a - b).abs().amax(dim=(0, 1, 3)) / limit[:, 0]  # (seq,)
        i = int(per.argmax())
        out[f"{name}_ratio"] = float(per[i])
        if float(per[i]) > worst:
            worst = float(per[i])
            diff = float((a - b).abs()[:, :, i].max())
            out.update(gap=diff, bound=float(limit[i, 0]), position=int(largest[i]))
    return out


def other_layout(module):
    """The same module with the other pair layout (input and output)."""
    flipped = copy.deepcopy(module)
    flipped.layout = OTHER[module.layout]
    flipped.output_layout = OTHER[module.output_layout]
    return flipped
