r"""A family's row: what its code decides and its config does not say (the :class:`Family` type).

The rows themselves are in :mod:`posenc_ref.models.families`; the kinds of exception a row can
carry in :mod:`posenc_ref.models.traits`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

from ._config import layer_count, length, lookup
from .classes import with_class_defaults
from .traits import (
    Aliases,
    ConfigClass,
    Defaults,
    Ignored,
    LayerHeadDims,
    LayerTypes,
    LegacyKeys,
    Mla,
    Trait,
)

__all__ = ["Family", "ENCODINGS"]

# What a family's code can use for positions (the kinds posenc_ref.encodings returns).
ENCODINGS = ("rope", "learned", "sinusoidal", "alibi", "t5", "relative_key", "nope")

T = TypeVar("T", bound=Trait)

# Standard keys whose values are integers: a family's other name for one is checked as given.
WIDTHS_AND_COUNTS = frozenset({"head_dim", "hidden_size", "num_attention_heads",
                               "num_key_value_heads", "num_hidden_layers",
                               "max_position_embeddings"})  # fmt: skip


# Keys every family's reader reads that a config class may fill: widths and the layer count.
# (max_position_embeddings stays as the file gives it: the RoPE types compare it with the
# lengths of their own dict, and a class default is no statement of the file's.)
CLASS_FILLED = frozenset({"hidden_size", "num_attention_heads", "num_hidden_layers",
                          "head_dim"})  # fmt: skip


@dataclass(frozen=True)
class Family:
    r"""One family's row: its config class's defaults and its exceptions to the conventions.

    A family that follows transformers' conventions (``rotate_half``, or interleaved pairs, on the
    first ``int(head_dim * partial_rotary_factor)`` coordinates of every layer) has a row of
    defaults only. Every other kind of exception is a trait
    (:mod:`posenc_ref.models.traits`), at most one of each kind per row.

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
    encoding : str
        What the code uses for positions by default: ``"rope"``, or one of ``"learned"``,
        ``"sinusoidal"``, ``"alibi"``, ``"t5"``, ``"nope"`` (a key may switch it:
        :class:`~posenc_ref.models.traits.SwitchedBy`).
    instead : str
        What the code uses instead of RoPE, in words, where the encoding alone does not say it
        (the reason :class:`~posenc_ref.models.NoRopeError` gives).
    source : str
        Where in the family's code this is decided (``modeling_<name>.py: ...``).
    folder : str or None
        The folder of ``transformers/models/`` holding that file, where it is not the
        ``model_type``.
    traits : tuple of Trait
        The family's exceptions to the conventions.
    """

    layout: str = "half"
    theta: float | Mapping[str, float] = 10000.0
    head_dim: int | None = None
    partial: float | Mapping[str, float] = 1.0
    rope: Mapping[str, Any] | None = None
    encoding: str = "rope"
    instead: str = ""
    source: str = ""
    folder: str | None = None
    traits: tuple[Trait, ...] = ()

    def __post_init__(self) -> None:
        if self.encoding not in ENCODINGS:
            raise ValueError(f"encoding must be one of {ENCODINGS}, got {self.encoding!r}")
        kinds = [type(trait) for trait in self.traits]
        if len(set(kinds)) != len(kinds) or not all(issubclass(k, Trait) for k in kinds):
            raise ValueError(f"a row holds traits, at most one of each kind, got {kinds}")

    # -- what the readers ask a row

    def trait(self, kind: type[T]) -> T | None:
        """The row's trait of this kind, or None."""
        return next((t for t in self.traits if type(t) is kind), None)

    @property
    def aliases(self) -> Mapping[str, str]:
        """The config class's ``attribute_map``: standard key -> the family's name for it."""
        aliases = self.trait(Aliases)
        return aliases.names if aliases else {}

    def other_names(self, key: str) -> tuple[str, ...]:
        """Other names the config class accepts for ``key`` (its ``attribute_map``)."""
        aliases = self.trait(Aliases)
        return aliases.other_names(key) if aliases else ()

    @property
    def head_dim_key(self) -> str:
        """The key of the width handed to RoPE (MLA: the rope part's)."""
        mla = self.trait(Mla)
        return mla.rope_width if mla else "head_dim"

    def partial_default(self, layer_type: str | None) -> float:
        """``partial_rotary_factor`` when the config gives none (for one layer type)."""
        if isinstance(self.partial, Mapping):
            return self.partial.get(layer_type, 1.0)
        return self.partial

    def theta_default(self, layer_type: str | None) -> float:
        """``rope_theta`` when the config gives none (for one layer type)."""
        if isinstance(self.theta, Mapping):
            if layer_type in self.theta:
                return self.theta[layer_type]
            return self.theta.get("full_attention", 10000.0)
        return self.theta

    def keys(self) -> dict[str, str]:
        """Top-level keys this family's code reads beyond the conventions -> what they mean."""
        out: dict[str, str] = {}
        for trait in self.traits:
            for key, meaning in trait.keys().items():
                out.setdefault(key, meaning)
        return out

    def rope_keys(self) -> frozenset[str]:
        """Keys of the RoPE dict this family's code reads besides its type's."""
        return frozenset().union(*(trait.rope_keys for trait in self.traits))

    def class_reads(self) -> frozenset[str]:
        """The keys this family's reader reads that its config class fills when absent."""
        keys = set(CLASS_FILLED) | set(self.keys())
        if self.trait(Mla) is not None:
            keys.discard("head_dim")  # MLA's rope width is qk_rope_head_dim
        legacy = self.trait(LegacyKeys)  # another name for a quantity the config may give:
        keys -= set(legacy.by_key if legacy else ())  # its default would contradict it
        for trait in self.traits:
            if isinstance(trait, Aliases):  # the lengths stay as given, under any name
                keys |= {own for std, own in trait.names.items() if std in CLASS_FILLED}
            elif isinstance(trait, Defaults):
                keys |= set(trait.values)
            elif isinstance(trait, LayerHeadDims):
                keys |= {key for key, _ in trait.widths.values()}
        return frozenset(keys)

    def resolve(self, config: Mapping[str, Any], model_type: str | None = None) -> dict[str, Any]:
        """The config with the family's names mapped to the standard ones and defaults filled.

        ``model_type``: the config class whose defaults fill the keys the config leaves out
        (:mod:`posenc_ref.models.classes`); the row's own defaults follow.
        """
        if model_type is not None:
            reads = self.class_reads()
            if isinstance(config.get("layer_types"), (list, tuple)):
                reads -= {"num_hidden_layers"}  # the layer count is the list's
            reads -= {std for std, own in self.aliases.items() if lookup(config, own) is not None}
            config, _ = with_class_defaults(config, model_type, reads)
        rewrite = self.trait(ConfigClass)
        out = rewrite.rule(config) if rewrite is not None else dict(config)
        ignored = self.trait(Ignored)
        for key in ignored.why if ignored else ():
            out.pop(key, None)  # the config class never reads it (a note says so)
        defaults = self.trait(Defaults)
        for key, value in (defaults.values if defaults else {}).items():
            if callable(value):  # a default the config class computes from other keys
                value = value(out)
            if value is not None:
                out.setdefault(key, value)
        for standard, own in self.aliases.items():
            value = lookup(out, own)
            if value is not None and standard in WIDTHS_AND_COUNTS:
                length(f"{own} (the family's name for {standard})", value)  # named as given
            if value is not None:
                given = out.get(standard)
                if given is not None and given != value:
                    raise ValueError(
                        f"inconsistent {standard}: the config gives {given!r} and {own} gives "
                        f"{value!r} (the family's name for it)"
                    )
                out[standard] = value
        pattern = self.trait(LayerTypes)
        if out.get("layer_types") is None and pattern is not None:
            count = out.get("num_hidden_layers")
            if isinstance(count, (int, float)) and not isinstance(count, bool) and count >= 1:
                out["layer_types"] = pattern.rule(out, layer_count(out))
        if "head_dim" not in config and self.head_dim is not None and not self.trait(Mla):
            out["head_dim"] = self.head_dim
        # after the class's rewrite: a RoPE dict it built from the file's own keys (ModernBERT's
        # global_rope_theta, Step 3.5's per-layer rope_theta) is the file's, not the default
        given = out.get("rope_parameters"), out.get("rope_scaling")
        if self.rope is not None and given == (None, None):
            out["rope_parameters"] = {
                k: (dict(v) if isinstance(v, Mapping) else v) for k, v in self.rope.items()
            }
        return out
