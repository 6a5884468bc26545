r"""The RoPE dict of a config: both forms, one dict per layer type, M-RoPE sections."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ._values import _copy, _length, _name, _same, _show
from .family import Family
from .rope_types import COMMON_KEYS, ROPE_TYPES

MROPE_KEYS = frozenset({"mrope_section", "mrope_interleaved"})


# --------------------------------------------------------------------------- the RoPE dict


def _is_nested(rope: Mapping[str, Any], config: Mapping[str, Any]) -> bool:
    """One RoPE dict per layer type (transformers' rule: keys that are the config's layer types)."""
    if not rope:
        return False
    known = COMMON_KEYS | MROPE_KEYS | frozenset().union(*(t.keys for t in ROPE_TYPES.values()))
    return all(
        key not in known and (value is None or isinstance(value, Mapping))
        for key, value in rope.items()
    )


def _meaning(rope: Mapping[str, Any], family: Family, where: str) -> dict[str, Any]:
    """A RoPE dict compared by what it means: one spelling of the type, legacy names mapped."""
    out = dict(rope)
    names = [out.pop("rope_type", None), out.pop("type", None)]
    given = []
    for label, name in zip((f"{where}['rope_type']", f"{where}['type']"), names, strict=True):
        if name is not None:
            given.append(family.legacy_types.get(_name(label, name), name))
    if len(given) == 2 and given[0] != given[1]:
        raise ValueError(
            f"inconsistent rope_type {names[0]!r} and type {names[1]!r} in {where} (they mean "
            f"{given[0]!r} and {given[1]!r})"
        )
    out["rope_type"] = given[0] if given else "default"
    return out


def _rope_dicts(config: dict[str, Any], family: Family) -> tuple[dict[str, Any], object]:
    """The RoPE dict (or the dict of per-layer-type dicts) and the top-level base."""
    parameters = config.get("rope_parameters")
    scaling = config.get("rope_scaling")
    for name, value in (("rope_parameters", parameters), ("rope_scaling", scaling)):
        if value is not None and not isinstance(value, Mapping):
            raise TypeError(f"{name} must be a dict or null, got {_show(value)}")
    parameters = _copy(parameters, "rope_parameters") or {}
    scaling = _copy(scaling, "rope_scaling") or {}
    if parameters and scaling:
        # The same RoPE may be written both ways (a transformers object keeps the old
        # rope_scaling next to rope_parameters): compare what they mean, not how they are spelled.
        if _is_nested(parameters, config) or _is_nested(scaling, config):
            same = parameters == scaling
        else:
            a = _meaning(parameters, family, "rope_parameters")
            b = _meaning(scaling, family, "rope_scaling")
            theta = _same("rope_theta", a.pop("rope_theta", None), b.pop("rope_theta", None),
                          ("rope_parameters", "rope_scaling"))  # fmt: skip
            same = a == b
            if same and theta is not None:
                parameters = {**parameters, "rope_theta": theta}
        if not same:
            raise ValueError(
                f"inconsistent rope_parameters {_show(parameters)} and rope_scaling "
                f"{_show(scaling)}: they mean different RoPEs; give one (transformers >= 5 "
                "writes rope_parameters)"
            )
    rope = parameters or scaling
    top_theta = config.get("rope_theta")
    for legacy, spec in family.legacy_keys.items():
        if spec.quantity == "rope_theta" and config.get(legacy) is not None:
            top_theta = _same("rope_theta", top_theta, config[legacy], ("rope_theta", legacy))
    return rope, top_theta


def _choose_layer_type(
    rope: dict[str, Any], top_theta: object, config: dict[str, Any], family: Family,
    layer_type: str | None,
) -> tuple[dict[str, Any], str | None]:  # fmt: skip
    """The one RoPE dict that applies (with rope_theta filled in), and the layer type."""
    if layer_type is not None:
        _name("layer_type", layer_type)
    if family.per_layer_theta is not None and not _is_nested(rope, config):
        # Gemma 3's older form: rope_theta and rope_scaling for full attention,
        # rope_local_base_freq for the sliding-window layers.
        full = dict(rope) if rope else {"rope_type": "default"}
        full.setdefault("rope_theta", top_theta)
        rope = {
            "full_attention": full,
            "sliding_attention": {
                "rope_type": "default",
                "rope_theta": config.get(family.local_base_key),
            },
        }
        top_theta = None

    if _is_nested(rope, config):
        if layer_type is None:
            raise ValueError(
                f"this config has one RoPE per layer type ({', '.join(rope)}): pass layer_type="
            )
        if layer_type not in rope:
            raise ValueError(
                f"layer_type {layer_type!r} is not in the config's per-layer RoPE "
                f"({', '.join(rope)})"
            )
        chosen = rope[layer_type]
        if chosen is None:
            raise ValueError(f"layer type {layer_type!r} has no RoPE (its rope_parameters is null)")
        chosen = dict(chosen)
        if chosen.get("rope_theta") is None:
            default = family.theta_default(layer_type)
            chosen["rope_theta"] = top_theta if top_theta is not None else default
        elif top_theta is not None and family.per_layer_theta is None:
            _same(
                "rope_theta", chosen["rope_theta"], top_theta, ("rope_parameters", "the top level")
            )
        return chosen, layer_type

    if layer_type is not None:
        types = config.get("layer_types")
        if types is None:
            raise ValueError(
                f"layer_type={layer_type!r}, but this config has one RoPE for every layer and no "
                "layer_types: leave layer_type out"
            )
        if not isinstance(types, (list, tuple)) or not all(isinstance(t, str) for t in types):
            raise TypeError(f"layer_types must be a list of strings, got {_show(types)}")
        if layer_type not in types:
            raise ValueError(
                f"layer_type {layer_type!r} is not one of the config's layer_types "
                f"({', '.join(sorted(set(types)))})"
            )
    rope = dict(rope)
    theta = _same(
        "rope_theta", rope.get("rope_theta"), top_theta, ("the RoPE dict", "the top level")
    )
    rope["rope_theta"] = family.theta_default(layer_type) if theta is None else theta
    return rope, layer_type


def _counts_as_given(counts: tuple[int, ...], pairs: int, family: Family) -> tuple[int, ...]:
    """The code splits its table by the counts: they must cover the rotary pairs exactly."""
    if sum(counts) != pairs:
        raise ValueError(
            f"mrope_section {_as_written(counts, family)} sums to {sum(counts)} pairs but the "
            f"rotary part has rotary_dim // 2 = {pairs}"
        )
    return counts


def _time_takes_the_rest(counts: tuple[int, ...], pairs: int, family: Family) -> tuple[int, ...]:
    """The code reads the height and width counts only; every pair they do not take is time's.

    (Qwen3-VL's code overwrites the time row's table at the height and width pairs, so
    ``mrope_section[0]`` is never read: Qwen4-Exp's default [11, 11, 10] on 128 pairs gives time
    107 pairs.)
    """
    _, height, width = counts
    if height + width > pairs:
        raise ValueError(
            f"mrope_section {list(counts)} gives height and width {height + width} pairs but the "
            f"rotary part has rotary_dim // 2 = {pairs}"
        )
    return (pairs - height - width, height, width)


def _halves(counts: tuple[int, ...] | None, pairs: int, family: Family) -> tuple[int, ...]:
    """No mrope_section: the code gives the even pairs to one row and the odd ones to the other."""
    halves = (pairs - pairs // 2, pairs // 2)
    if counts is not None and tuple(counts) != halves:
        raise ValueError(
            f"mrope_section {list(counts)}: the family's code reads none; its two rows take "
            f"{list(halves)} of the {pairs} pairs"
        )
    return halves


# How a family's code reads mrope_section, by assignment: (counts in row order, rotary pairs,
# family) -> the counts its code gives each row.
_SECTION_READ = {
    "consecutive": _counts_as_given,
    "interleaved": _time_takes_the_rest,
    "alternating": _counts_as_given,
    "alternating_2d": _halves,
}


def _as_written(counts: tuple[int, ...], family: Family) -> list[int]:
    """Counts in row order, back in the config's order."""
    if family.mrope_order is None:
        return list(counts)
    return [counts[row] for row in family.mrope_order]


def _mrope(rope: Mapping[str, Any], family: Family, rotary_dim: int, model_type):
    """M-RoPE: (counts per row, assignment), checked once, here, for the spec and the module."""
    if family.mrope is None:
        return None, None
    from ..mrope import MROPE_ASSIGNMENTS, mrope_pair_rows

    rows = MROPE_ASSIGNMENTS[family.mrope].rows
    raw = rope.get("mrope_section", family.default_mrope_section)
    counts = None
    if raw is not None:
        if isinstance(raw, (str, bytes)) or not isinstance(raw, (list, tuple)):
            raise ValueError(f"mrope_section must be {len(rows)} pair counts, got {_show(raw)}")
        if len(raw) != len(rows):
            raise ValueError(
                f"mrope_section must be {len(rows)} pair counts ({model_type}'s code reads "
                f"{', '.join(_as_written(rows, family))}), got {_show(raw)}"
            )
        given = tuple(_length(f"mrope_section[{j}]", n, 0) for j, n in enumerate(raw))
        order = family.mrope_order or tuple(range(len(rows)))
        counts = tuple(given[order.index(row)] for row in range(len(rows)))
    elif family.mrope != "alternating_2d":
        raise ValueError(f"{model_type}'s code needs an mrope_section ({', '.join(rows)})")
    section = _SECTION_READ[family.mrope](counts, rotary_dim // 2, family)
    flag = rope.get("mrope_interleaved")
    if flag is not None and bool(flag) != (family.mrope == "interleaved"):
        raise ValueError(
            f"mrope_interleaved={flag!r} contradicts {model_type}'s code, which assigns "
            f"sections {family.mrope!r}"
        )
    mrope_pair_rows(section, assignment=family.mrope)  # the one check that the rule can give them
    return section, family.mrope
