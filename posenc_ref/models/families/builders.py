r"""The builders of rows that several families share: an MLA row, and GPT-J's rotate_every_two.

:func:`mla` makes the row of a family with multi-head latent attention (DeepSeek-V3 and its
descendants) from how it rotates the rope part of each head; :func:`rotate_every_two` the row of
GPT-J and CodeGen. Their rows are in :mod:`~posenc_ref.models.families.exceptions` and
:mod:`~posenc_ref.models.families.mla_variants`.
"""

from __future__ import annotations

from typing import Any

from .. import _rules as rules
from ..family import Family
from ..traits import Aliases, Defaults, FixedBase, LayoutFlag, Legacy, LegacyKeys, Mla, WrittenBack

__all__ = ["mla", "rotate_every_two"]

_MLA_SOURCE = (
    "modeling_{}.py: the attention splits each head into (qk_nope_head_dim, qk_rope_head_dim), "
    "rotates the rope part with {} and writes it last"
)
_MLA_ROTATION = {
    "flag": "apply_rotary_pos_emb_interleave when rope_interleave (else rotate_half)",
    "interleave": "apply_rotary_pos_emb_interleave (pairs 2i, 2i+1, written in half order)",
    "half": "rotate_half",
}


def mla(name: str, how: str, *traits: Any, widths: tuple[int, int] = (64, 128), **row: Any):
    """An MLA row: the rope part rotated ``how`` (``"flag"``, ``"interleave"``, ``"half"``).

    ``widths``: the config class's default ``qk_rope_head_dim`` and ``qk_nope_head_dim``.
    Every MLA family multiplies its softmax scale by ``g(s, mscale_all_dim)**2`` under YaRN.
    """
    rope, nope = widths
    defaults = {"qk_rope_head_dim": rope, "qk_nope_head_dim": nope}
    found = [t for t in traits if isinstance(t, Defaults)]
    own = [t for t in traits if not isinstance(t, (Defaults, Mla))]
    mla_trait = next((t for t in traits if isinstance(t, Mla)), Mla())
    layout = {"flag": (LayoutFlag("rope_interleave"),), "interleave": (WrittenBack("half"),),
              "half": ()}[how]  # fmt: skip
    return Family(
        layout="half" if how == "half" else "interleaved",
        traits=(
            mla_trait,
            Defaults({**defaults, **(found[0].values if found else {})}),
            *layout,
            *own,
        ),
        source=_MLA_SOURCE.format(name, _MLA_ROTATION[how]),
        **row,
    )


def rotate_every_two(name: str) -> Family:
    """GPT-J and CodeGen: rotate_every_two on the first rotary_dim coordinates, base fixed."""
    return Family(
        layout="interleaved",
        traits=(
            FixedBase(10000.0),
            Aliases({"max_position_embeddings": "n_positions", "hidden_size": "n_embd",
                     "num_attention_heads": "n_head", "num_hidden_layers": "n_layer"}),
            Defaults({"rotary_dim": 64}),
            LegacyKeys({"rotary_dim": Legacy("rotary_dim", rules.absolute,
                        "the rotary width (null: the whole head), rotate_every_two")}),
        ),
        source=f"modeling_{name}.py: rotate_every_two (pairs 2i, 2i+1) on the first rotary_dim "
        "coordinates, sin/cos from create_sinusoidal_positions(base 10000)",
    )  # fmt: skip
