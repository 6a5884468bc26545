r"""The kinds of exception a family row can carry: one small typed class each.

A :class:`~posenc_ref.models.Family` row holds a few core fields (pair layout, base, widths, the
encoding, where its code decides them) and a tuple of traits. A trait is one kind of exception to
transformers' conventions, with the config keys it reads. Each step of the readers asks a row for
the traits it handles (``family.trait(Mla)``), so a family with a known kind of exception is one
row, and a new kind of exception is one class here and the one step that asks for it.

``keys()`` lists the top-level keys a trait makes its family's code read, with what they mean
there: the RoPE reader refuses such a key in the config of a family without that trait (some
family's code reads it, this one's does not), instead of ignoring it. ``rope_keys`` are the keys
of the RoPE dict it reads, besides its type's.

The rules some traits name (which layers rotate, a query scaling as a function of the config) are
small functions in ``posenc_ref/models/_rules.py``, each saying which family's code it is read
from.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ..query_scale import QueryScale
from ._trait import LayerRule, Trait
from .sparse_traits import Compressor, Indexer, NamedTables, RotaryLast, ValuesAreKeys

__all__ = [
    "Trait",
    "Aliases",
    "Defaults",
    "ReadAs",
    "Mla",
    "LayoutFlag",
    "WrittenBack",
    "LayerHeadDims",
    "Legacy",
    "LegacyKeys",
    "LegacyTypes",
    "AlphaType",
    "LocalBase",
    "FixedBase",
    "BaseRatio",
    "Conflicts",
    "Ignored",
    "ReadElsewhere",
    "ScaledType",
    "MRope",
    "RopeLayers",
    "LayerTypes",
    "QueryScaling",
    "NormAfter",
    "Clockwise",
    "OnlyDefault",
    "SwitchedBy",
    "RopeNotImplemented",
    "NeedsFeature",
    "LearnedScales",
    "ConfigClass",
    "Table",
    "AlibiBias",
    "T5Bias",
    "AttentionLayers",
    "FixedByCode",
    "Notes",
    # the traits of sparse attention, defined in sparse_traits.py
    "RotaryLast",
    "NamedTables",
    "Compressor",
    "ValuesAreKeys",
    "Indexer",
]


# --------------------------------------------------------------------------- names and defaults


@dataclass(frozen=True)
class Aliases(Trait):
    """The config class's ``attribute_map``: a standard key -> the family's name for it.

    DBRX's ``hidden_size`` is ``d_model``; GPT-2's ``max_position_embeddings`` is ``n_positions``.
    Either name may be given; both must agree. A dotted name reaches into a sub-dict.
    """

    names: Mapping[str, str]

    def other_names(self, key: str) -> tuple[str, ...]:
        """The names the config class also accepts for ``key`` (either direction)."""
        return tuple(
            [own for standard, own in self.names.items() if standard == key]
            + [standard for standard, own in self.names.items() if own == key]
        )


@dataclass(frozen=True)
class Defaults(Trait):
    """Keys the config class fills in when absent, other than the core ones.

    MLA's ``qk_rope_head_dim`` and ``qk_nope_head_dim``, GPT-J's ``rotary_dim``. A callable
    computes the value from the config as the class does (``None``: it cannot).
    """

    values: Mapping[str, Any]


@dataclass(frozen=True)
class ReadAs(Trait):
    """A wrapper's config without a ``text_config``: read as its language model's row.

    Gemma 3's ``gemma3`` config holds the text model's keys at its top level; Qwen2-VL's text
    config says ``qwen2_vl_text``, a name whose code is ``qwen2_vl``'s.
    """

    model_type: str


# --------------------------------------------------------------------------- widths and layout


@dataclass(frozen=True)
class Mla(Trait):
    """Multi-head latent attention (DeepSeek-V2 and its descendants): RoPE on part of a head.

    Each query/key head is ``cat(nope part, rope part)``; only the rope part (``rope_width``
    wide, last) is rotated, and under YaRN the attention multiplies its softmax scale by
    ``g(s, mscale_all_dim)**2``. The family's rotary module computes its width as
    ``int(sum(partial_of) * partial_rotary_factor)``, which must be the rope part's.
    """

    rope_width: str = "qk_rope_head_dim"
    nope_width: str = "qk_nope_head_dim"
    partial_of: tuple[str, ...] = ("qk_rope_head_dim",)

    def keys(self) -> dict[str, str]:
        """The keys it reads -> what they mean."""
        return {
            self.rope_width: "the width of the rotated part of each head",
            self.nope_width: "the width of the head part without position",
        }


@dataclass(frozen=True)
class LayoutFlag(Trait):
    """A config flag that switches the layout (the MLA families' ``rope_interleave``).

    True (the default) reads interleaved pairs and writes them back in half order; false is
    plain ``rotate_half``.
    """

    key: str = "rope_interleave"

    def keys(self) -> dict[str, str]:
        """The keys it reads -> what they mean."""
        return {
            self.key: "true: the rope part's pairs (2i, 2i+1) are rotated and written back in half "
            "order"
        }


@dataclass(frozen=True)
class WrittenBack(Trait):
    """The rotated pairs are written back in another order than they are read (DeepSeek-V3)."""

    layout: str = "half"


@dataclass(frozen=True)
class LayerHeadDims(Trait):
    """Layer type -> (the key of its head width, the default): Gemma 4's global layers.

    Transformers 5.23 writes the width as a ``per_layer_config`` override of ``head_dim``.
    """

    widths: Mapping[str, tuple[str, int]]

    def keys(self) -> dict[str, str]:
        """The keys it reads -> what they mean."""
        return {key: "the head width of one layer type" for key, _ in self.widths.values()}


@dataclass(frozen=True)
class Legacy:
    """A top-level key only one family reads, and the quantity it gives."""

    quantity: str  # "rope_theta", "partial_rotary_factor" or "rotary_dim" (an absolute width)
    convert: Callable[[float, int], float] | None = None  # (value, head_dim) -> quantity
    meaning: str = ""


@dataclass(frozen=True)
class LegacyKeys(Trait):
    """Top-level keys only this family reads (GPT-NeoX's ``rotary_pct``, GPT-J's ``rotary_dim``)."""

    by_key: Mapping[str, Legacy]

    def keys(self) -> dict[str, str]:
        """The keys it reads -> what they mean."""
        return {key: legacy.meaning or legacy.quantity for key, legacy in self.by_key.items()}


@dataclass(frozen=True)
class LegacyTypes(Trait):
    """Old ``rope_type`` names the config class maps to current ones (Phi-3's ``"su"``)."""

    names: Mapping[str, str]


@dataclass(frozen=True)
class AlphaType(Trait):
    """HunYuan: a ``dynamic`` RoPE dict with a truthy ``alpha`` is the static ``ntk_alpha`` type.

    (modeling_hunyuan_v1_dense.py: ``rope_type = "ntk_alpha"`` when ``rope_scaling`` has an alpha.)
    """

    rope_keys: frozenset[str] = frozenset({"alpha"})


# --------------------------------------------------------------------------- the base


@dataclass(frozen=True)
class LocalBase(Trait):
    """Gemma 3's older form: the top-level key of the sliding-window layers' base.

    The row's base is then one per layer type.
    """

    key: str = "rope_local_base_freq"

    def keys(self) -> dict[str, str]:
        """The keys it reads -> what they mean."""
        return {self.key: "the base of the sliding-window layers"}


@dataclass(frozen=True)
class FixedBase(Trait):
    """The base the code fixes (GPT-J, CodeGen): ``rope_theta`` is then refused."""

    base: float


@dataclass(frozen=True)
class BaseRatio(Trait):
    """A key the code multiplies its fixed base by (GLM-4's ``rope_ratio``).

    ``rule(config) -> the factor``: 1 where the key is absent; it raises where the config does
    not say which code it runs and the codes read the key differently.
    """

    key: str
    rule: Callable[[Mapping[str, Any]], float]

    def keys(self) -> dict[str, str]:
        """The keys it reads -> what they mean."""
        return {self.key: "a factor on the base fixed by its code"}


@dataclass(frozen=True)
class Conflicts(Trait):
    """A (dotted) key the code never reads but a released config uses -> (quantity, why).

    Refused where it differs from what the code does use (DBRX's ``attn_config.rope_theta``).
    """

    paths: Mapping[str, tuple[str, str]]


@dataclass(frozen=True)
class Ignored(Trait):
    """Keys the config class carries but the code never reads -> why that is harmless.

    They are dropped before reading (MiMo-V2-Flash's class ignores its top-level ``rope_theta``)
    and listed in the result's notes. ``compare``: key -> ``(layer type or None, quantity)`` of
    the spec (``"base"``, ``"rotary_dim"``, ``"partial"``) its value is checked against, so that
    the note says whether the ignored value agrees with what the code computes.
    """

    why: Mapping[str, str]
    compare: Mapping[str, tuple[str | None, str]] = field(default_factory=dict)


@dataclass(frozen=True)
class ReadElsewhere(Trait):
    """Keys the family's code reads for something other than its RoPE -> what, in words.

    GLM-4.5's ``use_qk_norm`` (norms before the rotation); Gemma 3's ``sliding_window_pattern``
    where ``layer_types`` is given. Neither noted nor refused.
    """

    why: Mapping[str, str]


@dataclass(frozen=True)
class ScaledType(Trait):
    """The older flat ``rope_scaling`` applies to one layer type only (OLMo 3: full attention).

    The config class builds one RoPE dict per layer type, updates ``layer_type``'s with the
    legacy ``rope_scaling`` and gives the others the default RoPE with base ``others_base`` (the
    class's ``default_theta``; OLMo 3's pops ``rope_theta`` for the full-attention layers first).
    """

    layer_type: str
    others_base: float


# --------------------------------------------------------------------------- layers and positions


@dataclass(frozen=True)
class MRope(Trait):
    """Multimodal RoPE: which pairs each position row gets, and the default sections.

    ``assignment`` is a key of :data:`posenc_ref.mrope.MROPE_ASSIGNMENTS`; ``section`` the
    config class's ``mrope_section``; ``order`` the position row each entry of the config's
    ``mrope_section`` counts, where the config does not write them in row order (ERNIE 4.5 VL:
    height, width, time is ``(1, 2, 0)``).
    """

    assignment: str
    section: tuple[int, ...] | None = None
    order: tuple[int, ...] | None = None
    rope_keys: frozenset[str] = frozenset({"mrope_section", "mrope_interleaved"})


@dataclass(frozen=True)
class RopeLayers(Trait):
    """Which layers rotate; the others take no RoPE (SmolLM3, Llama 4, hybrids' linear layers).

    ``rule(config, num_hidden_layers) -> list of bool``; ``reads``: the keys it reads.
    """

    rule: LayerRule
    reads: frozenset[str] = frozenset()


@dataclass(frozen=True)
class LayerTypes(Trait):
    """The config class's ``layer_types`` when the config has none, from a pattern.

    ``rule(config, num_hidden_layers) -> list of str``; ``reads``: the keys of the pattern.
    """

    rule: LayerRule
    reads: frozenset[str] = frozenset()


@dataclass(frozen=True)
class QueryScaling(Trait):
    """A position-dependent factor on the queries (a :class:`~posenc_ref.query_scale.QueryScale`).

    ``rotating(config, rope dict)``: on the queries of the layers with RoPE (Ministral 3,
    Mistral 4); ``nope(config)``: on those of the layers without (Llama 4, Beam). ``reads`` and
    ``rope_keys``: the keys they read.
    """

    rotating: Callable[[Mapping[str, Any], Mapping[str, Any]], QueryScale | None] | None = None
    nope: Callable[[Mapping[str, Any]], QueryScale | None] | None = None
    reads: frozenset[str] = frozenset()
    rope_keys: frozenset[str] = frozenset()


@dataclass(frozen=True)
class NormAfter(Trait):
    """Each query and key head is normalized right after the rotation (Llama 4, HunYuan).

    A norm commutes with the rotation and cancels a factor on cos and sin: the spec's attention
    factor is 1, and the caller applies the norm. ``key``: the config flag that switches it (its
    default ``default``); ``None``: always.
    """

    key: str | None = None
    default: bool = True

    def applies(self, config: Mapping[str, Any]) -> bool:
        """Whether the code normalizes, for this config."""
        return True if self.key is None else bool(config.get(self.key, self.default))

    def keys(self) -> dict[str, str]:
        """The keys it reads -> what they mean."""
        return {} if self.key is None else {self.key: "read by its code"}


@dataclass(frozen=True)
class Clockwise(Trait):
    r"""The code rotates by :math:`-t\,\omega_i` (NanoChat's ``rotate_half``: ``cat(x2, -x1)``).

    The transpose of each rotation: scores depend on :math:`m - p` instead of :math:`p - m`.
    """


@dataclass(frozen=True)
class OnlyDefault(Trait):
    """The code computes only the default frequencies (ESM, Recurrent Gemma): why.

    Another ``rope_type`` is refused, since the model would not compute it.
    """

    why: str


# --------------------------------------------------------------------------- the encoding


@dataclass(frozen=True)
class SwitchedBy(Trait):
    """A config key picks the encoding the family's code uses (Falcon's ``alibi``).

    ``encodings`` maps each value the code acts on to an encoding (``"rope"``, ``"alibi"``,
    ``"learned"``, ``"sinusoidal"``, ``"relative_key"``, ``"nope"``); ``default`` is the config
    class's value. ``refused_elsewhere``: whether a config of another family may not carry the
    key unread (false for ``position_embedding_type``, which many config classes write).
    """

    key: str
    encodings: Mapping[Any, str]
    default: Any = None
    refused_elsewhere: bool = True

    def choice(self, config: Mapping[str, Any]) -> tuple[Any, str | None]:
        """``(the value, the encoding it picks or None)``."""
        value = config.get(self.key, self.default)
        try:
            return value, self.encodings.get(value)
        except TypeError:  # an unhashable value picks nothing
            return value, None

    def can_pick_rope(self) -> bool:
        """Whether some value picks RoPE."""
        return "rope" in self.encodings.values()

    def rope_value(self) -> Any:
        """The value that picks RoPE (the first, where several do)."""
        return next(value for value, kind in self.encodings.items() if kind == "rope")

    def keys(self) -> dict[str, str]:
        """The keys it reads -> what they mean."""
        return {self.key: "read by its code"} if self.refused_elsewhere else {}


@dataclass(frozen=True)
class RopeNotImplemented(Trait):
    """The family's RoPE needs a feature posenc_ref does not implement: which."""

    feature: str


@dataclass(frozen=True)
class NeedsFeature(Trait):
    """Where ``key`` is true, the family's code needs a feature posenc_ref lacks: which.

    ChatGLM-6B's ``position_encoding_2d``: two position rows on the two halves of each head.
    """

    key: str
    feature: str

    def keys(self) -> dict[str, str]:
        """The keys it reads -> what they mean."""
        return {self.key: "read by its code"}


@dataclass(frozen=True)
class LearnedScales(Trait):
    """The inverse frequencies times ``exp(alpha)``, ``alpha`` a tensor of the checkpoint.

    Mistral Large 4's LeRoPE: the config does not hold the values, so the reader takes them as
    the keyword ``argument`` and refuses the config alone, naming the tensor: ``tensor`` in
    transformers' state dict, ``checkpoint`` in the released checkpoint, ``text_only`` in a
    text-only model's.
    """

    argument: str
    tensor: str
    checkpoint: str
    text_only: str


@dataclass(frozen=True)
class ConfigClass(Trait):
    """The config class rewrites the file before the code reads it: ``rule(config) -> config``.

    dots3_note's class turns its ``swa_*`` keys into a ``per_layer_config`` of the
    sliding-window layers and computes each layer type's ``partial_rotary_factor``. ``reads``:
    the keys only it reads.
    """

    rule: Callable[[Mapping[str, Any]], dict[str, Any]]
    reads: frozenset[str] = frozenset()


@dataclass(frozen=True)
class Table(Trait):
    r"""A table of positions added to the embeddings (learned, or sinusoidal by a flag).

    ``positions`` and ``width``: ``(key, the config class's default)``. Token :math:`t` reads
    row :math:`t + \text{offset}`; ``offset=None`` means ``padding_idx + 1``, with ``pad`` the
    default ``pad_token_id``; ``rows_hold_offset``: ``max_position_embeddings`` counts the offset
    rows (RoBERTa). ``variant``: the sinusoidal table's column order.
    """

    positions: tuple[str, int]
    width: tuple[str, int]
    offset: int | None = 0
    pad: int | None = None
    rows_hold_offset: bool = False
    variant: str = ""


@dataclass(frozen=True)
class AlibiBias(Trait):
    """ALiBi: the heads (``(key, default)``); ``width``: the key whose head width scales the bias.

    Falcon adds the bias before the model's ``1/sqrt(head_dim)`` (``width`` given); BLOOM and
    MPT after it.
    """

    heads: tuple[str, int]
    width: tuple[str, int] | None = None


@dataclass(frozen=True)
class T5Bias(Trait):
    """T5's relative buckets: heads and width (``(key, default)``); one table per layer or not."""

    heads: tuple[str, int]
    width: tuple[str, int]
    per_layer: bool = False


@dataclass(frozen=True)
class AttentionLayers(Trait):
    """How many layers (and of them, attention layers) a model without positions has.

    ``rule(config) -> (layers or None, attention layers or None)``, read as the family's code
    lays out its layers.
    """

    rule: Callable[[Mapping[str, Any]], tuple[int | None, int | None]]


@dataclass(frozen=True)
class FixedByCode(Trait):
    """Dotted keys whose value the code fixes whatever the config says -> that value: why.

    A config giving another value describes a model the code does not run as it was trained, and
    is refused (MPT's ``attn_config.alibi_bias_max``).
    """

    values: Mapping[str, Any]
    why: str


@dataclass(frozen=True)
class Notes(Trait):
    """Notes the encodings reader adds for this family; ``when_given``: only with that key."""

    notes: tuple[str, ...]
    when_given: str | None = None
