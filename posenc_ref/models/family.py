r"""A family's row: what its code decides and its config does not say (the :class:`Family` type).

The rows themselves are in :mod:`posenc_ref.models.families`; the rules rows use for their layers
and query scalings in :mod:`posenc_ref.models.rules`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ..query_scale import QueryScale

__all__ = ["Family", "Legacy", "family_keys"]


def _absolute(value: float, head_dim: int) -> float:  # noqa: ARG001 (the legacy-key signature)
    return value


def _fraction_of_head(value: float, head_dim: int) -> float:
    return value / head_dim


@dataclass(frozen=True)
class Legacy:
    """A top-level key only this family reads, and the quantity it gives."""

    quantity: str  # "rope_theta", "partial_rotary_factor" or "rotary_dim" (an absolute width)
    convert: Callable[[float, int], float] | None = None  # (value, head_dim) -> quantity
    meaning: str = ""

    def __iter__(self):  # unpacks as (quantity, convert, meaning)
        return iter((self.quantity, self.convert, self.meaning))


@dataclass(frozen=True)
class Family:
    r"""One family's row: its config class's defaults and its exceptions to the conventions.

    Attributes
    ----------
    layout : str
        Which coordinates pair: ``"half"`` (``rotate_half``: i and i + d/2) or
        ``"interleaved"`` (2i and 2i + 1).
    theta : float or dict
        ``rope_theta`` when the config has none (the config class's ``default_theta``); a dict
        by layer type where the class has one per type.
    head_dim : int or None
        The config class's ``head_dim`` when the key is absent (``None``: hidden / heads).
    partial : float or dict
        ``partial_rotary_factor`` when the config has none; a dict by layer type where the
        class has one per type (NeoMME).
    rope : dict or None
        The RoPE dict (or one per layer type) the config class fills in when the config has
        neither ``rope_parameters`` nor ``rope_scaling`` (``rope_theta`` apart).
    defaults : dict
        Other keys the config class fills in when absent (MLA: ``qk_rope_head_dim``, ...); a
        callable computes the value from the config, as the class does (``None``: cannot).
    aliases : dict
        The config class's ``attribute_map``: a standard key -> the family's name for it
        (DBRX: ``hidden_size`` is ``d_model``); a dotted name reaches into a sub-dict.
    output_layout : str or None
        The order the rotated pairs are written back in, when it is not ``layout``.
    layout_key : str or None
        A config flag that switches the layout: true reads interleaved pairs and writes them in
        half order, false is plain ``rotate_half`` (the MLA families' ``rope_interleave``; its
        default true).
    head_dim_key : str
        The key of the width handed to RoPE (MLA: ``qk_rope_head_dim``).
    layer_head_dims : dict
        Layer type -> (the key of that type's head width, its default): Gemma 4's full-attention
        layers read ``global_head_dim`` (default 512), written by transformers 5.23 as a
        ``per_layer_config`` override of ``head_dim``.
    nope_dim_key : str or None
        MLA: the key of the width of the head part without position (``qk_nope_head_dim``).
    legacy_keys : dict
        Top-level keys only this family reads -> :class:`Legacy`.
    legacy_types : dict
        Old ``rope_type`` names the config class maps to current ones.
    rope_keys : frozenset
        Keys of the RoPE dict the family reads besides its type's (``llama_4_scaling_beta``).
    fixed_theta : float or None
        The base the code fixes (GPT-J, CodeGen); ``rope_theta`` is then refused.
    mrope : str or None
        M-RoPE: the assignment of pairs to position rows, a key of
        :data:`posenc_ref.mrope.MROPE_ASSIGNMENTS` (``"consecutive"``, ``"interleaved"``,
        ``"alternating"``, ``"alternating_2d"``); ``mrope_section`` its default sections, as
        the config writes them.
    mrope_order : tuple of int or None
        The position row each entry of the config's ``mrope_section`` counts, where the config
        does not write them in row order: ERNIE 4.5 VL writes (height, width, time), ``(1, 2,
        0)``. ``None``: in row order.
    local_base_key : str or None
        Gemma 3's older form: the top-level key of the sliding layers' base.
    rope_layers : callable or None
        ``(config, num_hidden_layers) -> list of bool``: which layers rotate (the others have no
        RoPE); ``None``: every layer of a RoPE layer type.
    layer_types : callable or None
        ``(config, num_hidden_layers) -> list of str``: the config class's ``layer_types`` when
        the config has none (a pattern of sliding and full layers).
    partial_of : tuple of str or None
        MLA: the keys whose sum the partial factor multiplies in the family's rotary module
        (``qk_rope_head_dim``; Mistral 4: ``qk_nope_head_dim`` + ``qk_rope_head_dim``); the
        product must be the rope part's width.
    ignored : dict
        Keys the config class carries but the code never reads -> why that is harmless.
    conflicts : dict
        A (dotted) key the code never reads but a released config uses -> (the quantity it
        looks like, why): refused where it differs from what the code does use.
    normalized_after : callable or None
        ``config -> bool``: the code L2-normalizes each query and key head right after the
        rotation (Llama 4's ``use_qk_norm``). The norm commutes with the rotation and cancels a
        factor on cos and sin, so the spec's attention factor is 1; the caller applies the norm.
    clockwise : bool
        The code rotates by :math:`-t\,\omega_i` (NanoChat's ``rotate_half`` returns
        ``cat(x2, -x1)``): the transpose of the usual rotation.
    no_rope_when : callable or None
        ``config -> reason or None``: a config under which the family's model uses no RoPE at
        all (Falcon with ``alibi``).
    only_default : str
        Non-empty where the code computes only the default frequencies (ESM ignores
        ``rope_type``, Recurrent Gemma raises for any other): why. Another type is refused, since
        the model would not compute it.
    query_scale, nope_query_scale : callable or None
        ``(config[, rope dict]) -> QueryScale``: the query scaling of the rotating layers, of
        the layers without RoPE.
    softmax_mscale : bool
        The attention multiplies its softmax scale by ``g(s, mscale_all_dim)**2`` (MLA).
    reads : frozenset
        Other top-level keys the family's code reads (for the refusal of keys it does not).
    source : str
        Where in the family's code this is decided.
    """

    layout: str = "half"
    theta: float | Mapping[str, float] = 10000.0
    head_dim: int | None = None
    partial: float | Mapping[str, float] = 1.0
    rope: Mapping[str, Any] | None = None
    aliases: Mapping[str, str] = field(default_factory=dict)
    defaults: Mapping[str, Any] = field(default_factory=dict)
    output_layout: str | None = None
    layout_key: str | None = None
    head_dim_key: str = "head_dim"
    layer_head_dims: Mapping[str, tuple[str, int]] = field(default_factory=dict)
    nope_dim_key: str | None = None
    legacy_keys: Mapping[str, Legacy] = field(default_factory=dict)
    legacy_types: Mapping[str, str] = field(default_factory=dict)
    rope_keys: frozenset[str] = frozenset()
    fixed_theta: float | None = None
    mrope: str | None = None
    mrope_section: tuple[int, ...] | None = None
    mrope_order: tuple[int, ...] | None = None
    local_base_key: str | None = None
    rope_layers: Callable[[Mapping[str, Any], int | None], list[bool]] | None = None
    layer_types: Callable[[Mapping[str, Any], int | None], list[str]] | None = None
    partial_of: tuple[str, ...] | None = None
    ignored: Mapping[str, str] = field(default_factory=dict)
    conflicts: Mapping[str, tuple[str, str]] = field(default_factory=dict)
    no_rope_when: Callable[[Mapping[str, Any]], str | None] | None = None
    only_default: str = ""
    normalized_after: Callable[[Mapping[str, Any]], bool] | None = None
    clockwise: bool = False
    query_scale: Callable[[Mapping[str, Any], Mapping[str, Any]], QueryScale | None] | None = None
    nope_query_scale: Callable[[Mapping[str, Any]], QueryScale | None] | None = None
    softmax_mscale: bool = False
    reads: frozenset[str] = frozenset()
    source: str = ""

    # -- what the reader asks a row

    @property
    def default_partial(self) -> float:
        """``partial_rotary_factor`` when the config gives none (of a family with one)."""
        return self.partial_default(None)

    def partial_default(self, layer_type: str | None) -> float:
        """``partial_rotary_factor`` when the config gives none (for one layer type)."""
        if isinstance(self.partial, Mapping):
            return self.partial.get(layer_type, 1.0)
        return self.partial

    @property
    def default_mrope_section(self) -> tuple[int, ...] | None:
        """``mrope_section`` when the config gives none."""
        return self.mrope_section

    @property
    def per_layer_theta(self) -> Mapping[str, float] | None:
        """Gemma 3's older form (a top-level base per layer type), else None."""
        return self.theta if self.local_base_key and isinstance(self.theta, Mapping) else None

    def theta_default(self, layer_type: str | None) -> float:
        """``rope_theta`` when the config gives none (for one layer type)."""
        if isinstance(self.theta, Mapping):
            if layer_type in self.theta:
                return self.theta[layer_type]
            return self.theta.get("full_attention", 10000.0)
        return self.theta

    def resolve(self, config: Mapping[str, Any]) -> dict[str, Any]:
        """The config with the family's names mapped to the standard ones and defaults filled."""
        out = dict(config)
        for key, value in self.defaults.items():
            if callable(value):  # a default the config class computes from other keys
                value = value(out)
            if value is not None:
                out.setdefault(key, value)
        for standard, own in self.aliases.items():
            value = _lookup(out, own)
            if value is not None:
                given = out.get(standard)
                if given is not None and given != value:
                    raise ValueError(
                        f"inconsistent {standard}: the config gives {given!r} and {own} gives "
                        f"{value!r} (the family's name for it)"
                    )
                out[standard] = value
        if out.get("layer_types") is None and self.layer_types is not None:
            count = out.get("num_hidden_layers")
            if isinstance(count, int) and not isinstance(count, bool) and count >= 1:
                out["layer_types"] = self.layer_types(out, count)
        if (
            "head_dim" not in config
            and self.head_dim is not None
            and self.head_dim_key == "head_dim"
        ):
            out["head_dim"] = self.head_dim
        if self.rope is not None and config.get("rope_parameters") is None and config.get(
            "rope_scaling"
        ) is None:  # fmt: skip
            out["rope_parameters"] = {k: (dict(v) if isinstance(v, Mapping) else v)
                                      for k, v in self.rope.items()}  # fmt: skip
        return out


def _lookup(config: Mapping[str, Any], path: str) -> Any:
    value: Any = config
    for part in path.split("."):
        if not isinstance(value, Mapping):
            return None
        value = value.get(part)
    return value


def _keys_of(family: Family) -> dict[str, str]:
    """Top-level keys this family's row reads beyond the conventions -> what they mean."""
    out: dict[str, str] = {}
    if family.layout_key:
        out[family.layout_key] = (
            "true: the rope part's pairs (2i, 2i+1) are rotated and written back in half order"
        )
    if family.head_dim_key != "head_dim":
        out[family.head_dim_key] = "the width of the rotated part of each head"
    if family.nope_dim_key:
        out[family.nope_dim_key] = "the width of the head part without position"
    for key, _default in family.layer_head_dims.values():
        out[key] = "the head width of one layer type"
    for key, legacy in family.legacy_keys.items():
        out[key] = legacy.meaning or legacy.quantity
    if family.local_base_key:
        out[family.local_base_key] = "the base of the sliding-window layers"
    for key in family.reads:
        out.setdefault(key, "read by its code")
    return out


def family_keys(family: Family) -> frozenset[str]:
    """The family-specific top-level keys a row reads."""
    return frozenset(_keys_of(family))
