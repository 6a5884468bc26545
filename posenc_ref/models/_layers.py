r"""Which layers a RoPE applies to: layer types, per-layer overrides, layers without RoPE."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ._values import _length, _show
from .family import Family


def _layer_overrides(config: Mapping[str, Any], layer_type: str | None) -> dict[str, Any]:
    """The per_layer_config of transformers (layer index -> keys it overrides), for a type."""
    per_layer = config.get("per_layer_config")
    if not per_layer:
        return {}
    if not isinstance(per_layer, Mapping):
        raise TypeError(
            f"per_layer_config must be a dict of layer index -> keys, got {_show(per_layer)}"
        )
    types = config.get("layer_types")
    found: list[dict[str, Any]] = []
    for index, overrides in per_layer.items():
        try:
            layer = int(index)
        except (TypeError, ValueError):
            raise ValueError(
                f"per_layer_config keys must be layer indices, got {_show(index)}"
            ) from None
        if not isinstance(overrides, Mapping):
            raise TypeError(f"per_layer_config[{index!r}] must be a dict, got {_show(overrides)}")
        if types is None or not 0 <= layer < len(types):
            raise ValueError(
                f"per_layer_config names layer {layer}, which layer_types does not have"
            )
        if types[layer] == layer_type:
            found.append(dict(overrides))
    if not found:
        return {}
    if any(f != found[0] for f in found) or len(found) != list(types).count(layer_type):
        raise ValueError(
            f"per_layer_config gives the {layer_type!r} layers different values; posenc_ref reads "
            "one RoPE per layer type"
        )
    return found[0]


# --------------------------------------------------------------------------- layers


def _layer_count(config: Mapping[str, Any]) -> int | None:
    value = config.get("num_hidden_layers")
    return None if value is None else _length("num_hidden_layers", value)


def _layers_of(
    config: Mapping[str, Any], family: Family, layer_type: str | None, null_types=frozenset()
):
    """``(layers using this RoPE or None, layers without RoPE)``.

    ``null_types``: layer types whose RoPE dict is null (Beam's global layers): no RoPE there.
    """
    count = _layer_count(config)
    rotating = None
    types = config.get("layer_types")
    if null_types and types is not None:
        rotating = [t not in null_types for t in types]
    said = ("layer_types", "num_hidden_layers", "no_rope_layers", "layer_rope_theta")
    if family.rope_layers is not None and all(config.get(key) is None for key in said):
        return None, None  # the config does not say which layers there are
    if family.rope_layers is not None:
        by_rule = family.rope_layers(config, count)
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
