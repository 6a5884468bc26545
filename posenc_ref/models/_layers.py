r"""Step 7 of reading a RoPE: which layers use it, and what the model does around the rotation.

Layers without RoPE (a rule of the family, or a layer type whose RoPE dict is null), the query
scalings of the layers with and without RoPE, the softmax scale of the MLA families, and a norm
right after the rotation (which cancels an attention factor).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..query_scale import QueryScale
from ..rope_scaling import ScaledValues, Scaling, yarn_mscale
from ._config import is_set, layer_count, real, shown
from ._rope_dict import ChosenRope
from .family import Family
from .rope_types import ROPE_TYPES, TypeResult
from .traits import Clockwise, Mla, NormAfter, QueryScaling, RopeLayers

# Keys that say which layers a config has (without one, a family with layers without RoPE
# cannot say which they are).
LAYER_KEYS = ("layer_types", "num_hidden_layers", "no_rope_layers", "layer_rope_theta")


@dataclass(frozen=True)
class Around:
    """What this step found: the layers, and the model's factors around the rotation."""

    layers: tuple[int, ...] | None
    nope_layers: tuple[int, ...] | None
    query_scale: QueryScale | None
    nope_query_scale: QueryScale | None
    softmax_scale_factor: float
    normalized_after: bool
    clockwise: bool
    frequencies: ScaledValues  # the type's, with attention factor 1 under a norm after
    scaling: Scaling | None  # the type's method, likewise


def around_of(chosen: ChosenRope, family: Family, read: TypeResult, rotary_dim: int) -> Around:
    """The layers this RoPE applies to, and the scalings and norms around it."""
    config, rope = chosen.config, chosen.rope
    norm = family.trait(NormAfter)
    normalized = norm is not None and norm.applies(config)
    freqs, scaling_method = read.freqs, read.scaling
    if normalized and freqs.attention_factor != 1.0:
        # q and k are L2-normalized right after the rotation (Llama 4's qk_norm): the norm
        # commutes with the rotation and cancels any factor on cos and sin.
        freqs, scaling_method = without_attention_factor(read, rotary_dim, chosen.base)
    softmax_scale = 1.0
    kind = ROPE_TYPES[rope["rope_type"]]  # the type's entry: which key implies a softmax scale
    key = kind.softmax_key
    if family.trait(Mla) and key is not None and is_set(rope, key, kind.unset_when_zero):
        # The MLA families multiply their softmax scale by g(s, mscale_all_dim)^2 (outside RoPE).
        softmax_scale = yarn_mscale(read.factor, real(key, rope[key])) ** 2
    layers, nope_layers = layers_of(config, family, chosen.layer_type, chosen.null_types)
    scaling = family.trait(QueryScaling)
    query_scale = scaling.rotating(config, rope) if scaling and scaling.rotating else None
    nope_scale = scaling.nope(config) if scaling and scaling.nope else None
    if not (nope_layers or nope_layers is None):
        nope_scale = None  # no layer without RoPE to scale
    return Around(layers, nope_layers, query_scale, nope_scale, softmax_scale, normalized,
                  family.trait(Clockwise) is not None, freqs, scaling_method)  # fmt: skip


def without_attention_factor(
    read: TypeResult, rotary_dim: int, base: float
) -> tuple[ScaledValues, Scaling | None]:
    """The same frequencies with attention factor 1 (what a following L2 norm leaves of it)."""
    if read.scaling is None:
        return ScaledValues(read.freqs.inv_freq, 1.0), None
    scaling = read.scaling.replace(attention_factor=1.0)  # yarn and longrope: the final value
    return scaling.values(rotary_dim, base), scaling


def layers_of(
    config: Mapping[str, Any], family: Family, layer_type: str | None, null_types=frozenset()
) -> tuple[tuple[int, ...] | None, tuple[int, ...] | None]:
    """``(layers using this RoPE or None, layers without RoPE)``.

    ``null_types``: layer types whose RoPE dict is null (Beam's global layers): no RoPE there.
    """
    count = layer_count(config)
    rotating = None
    types = config.get("layer_types")
    if types is not None and (
        not isinstance(types, (list, tuple)) or not all(isinstance(t, str) for t in types)
    ):
        raise TypeError(f"layer_types must be a list of strings, got {shown(types)}")
    if null_types and types is not None:
        rotating = [t not in null_types for t in types]
    rule = family.trait(RopeLayers)
    if rule is not None and all(config.get(key) is None for key in LAYER_KEYS):
        return None, None  # the config does not say which layers there are
    if rule is not None:
        by_rule = rule.rule(config, count)
        if rotating is not None and len(by_rule) == len(rotating):
            by_rule = [a and b for a, b in zip(by_rule, rotating, strict=True)]
        rotating = by_rule
        if count is not None and len(rotating) != count:
            raise ValueError(
                f"the config lists {len(rotating)} layers with or without RoPE but has "
                f"num_hidden_layers={count}"
            )
    if layer_type is None and rotating is None:
        return None, ()
    n = len(rotating) if rotating is not None else len(types or [])
    layers = tuple(
        i for i in range(n)
        if (rotating is None or rotating[i])
        and (layer_type is None or types is None or types[i] == layer_type)
    )  # fmt: skip
    nope = tuple(i for i in range(n) if rotating is not None and not rotating[i])
    return layers, nope
