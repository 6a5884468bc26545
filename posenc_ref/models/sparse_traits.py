r"""The traits of sparse attention: compressed keys, an indexer, named tables (DeepSeek-V4, V3.2).

Traits as in :mod:`posenc_ref.models.traits` (one small typed class per kind of exception a
family row can carry), for the families whose attention also reads compressed keys or runs a
lightning indexer with its own RoPE; :mod:`posenc_ref.models.sparse` is the step that asks for
them.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ._trait import Trait

__all__ = ["RotaryLast", "NamedTables", "Compressor", "ValuesAreKeys", "Indexer"]


@dataclass(frozen=True)
class RotaryLast(Trait):
    """The rotated part is the *last* ``int(head_dim * partial_rotary_factor)`` (DeepSeek-V4).

    The spec is written as MLA's: ``head_dim`` the rotated part, ``nope_dim`` the rest, first.
    """


@dataclass(frozen=True)
class NamedTables(Trait):
    """``rope_parameters`` keyed by table names, not layer types (DeepSeek-V4: main, compress).

    ``table_of``: layer type -> the table its layers use (other types: ``default``);
    ``build(config, RoPE dict, top-level rope_theta) -> {name: RoPE dict}``: the config class's
    rule for the flat form (in ``_rules.py``); ``reads``: the keys it reads.
    """

    table_of: Mapping[str, str]
    default: str
    build: Callable[[Mapping[str, Any], Mapping[str, Any], Any], dict[str, dict[str, Any]]]
    reads: frozenset[str] = frozenset()


@dataclass(frozen=True)
class Compressor(Trait):
    """Layer types whose keys are followed by compressed keys, one per block of ``rate`` tokens.

    DeepSeek-V4's CSA and HCA layers. ``rates``: layer type -> the config class's default rate
    (the config's ``compress_rates`` dict overrides it); ``overlapping``: the types whose block
    summaries also read the previous block (CSA's windows of ``2 * rate`` tokens); ``legacy``:
    older top-level keys of one type's rate -> that type. Each compressed key is rotated at its
    block's first token position (:func:`posenc_ref.models.compressed_key_positions`).
    """

    rates: Mapping[str, int]
    overlapping: frozenset[str] = frozenset()
    legacy: Mapping[str, str] = field(default_factory=dict)
    key: str = "compress_rates"

    def keys(self) -> dict[str, str]:
        """The keys it reads -> what they mean."""
        return {
            self.key: "the compression rate (tokens per compressed key) of each layer type",
            **{k: f"the compression rate of the {t} layers" for k, t in self.legacy.items()},
        }


@dataclass(frozen=True)
class ValuesAreKeys(Trait):
    """The values are the rotated keys (K = V); the output's rotated part is turned back.

    DeepSeek-V4: ``apply_rotary_pos_emb(out, cos, -sin)`` at the query position.
    """


@dataclass(frozen=True)
class Indexer(Trait):
    """A lightning indexer (DeepSeek Sparse Attention) beside the attention, with its own RoPE.

    Its query and key heads are ``width`` wide (``(key, the class's default)``); their rotated
    part is as wide as the attention's, placed ``place`` (``"first"`` or ``"last"``) and paired
    ``layout`` in, ``output_layout`` out, with the attention's frequencies. ``layer_types``: the
    types that have one (``None``: every layer). ``flag``: a key released configs carry for the
    indexer's layout that the code never reads (GLM-5's ``indexer_rope_interleave``): noted,
    with whether its value agrees.
    """

    layout: str
    output_layout: str | None = None
    place: str = "first"
    width: tuple[str, int] = ("index_head_dim", 128)
    layer_types: frozenset[str] | None = None
    flag: str | None = None

    def keys(self) -> dict[str, str]:
        """The keys it reads -> what they mean."""
        return {self.width[0]: "the head width of the lightning indexer"}
