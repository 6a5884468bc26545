r"""RoPE families whose attention also attends to compressed keys: DeepSeek-V4.

Besides the keys of its own tokens, a layer attends to summaries of blocks of tokens, each
rotated at its block's first token position, with a RoPE table of its own
(:mod:`posenc_ref.models.sparse`). The row says which table each layer type uses, how the
config class builds the tables from the released flat form, the compression rates, and the
indexer's RoPE.
"""

from __future__ import annotations

from .. import _rewrites as rewrites
from .. import _rules as rules
from ..family import Family
from ..sparse_traits import Compressor, Indexer, NamedTables, RotaryLast, ValuesAreKeys
from ..traits import LayerTypes, Legacy, LegacyKeys

__all__ = ["COMPRESSED"]

_CSA, _HCA = "compressed_sparse_attention", "heavily_compressed_attention"

COMPRESSED: dict[str, Family] = {
    "deepseek_v4": Family(
        layout="interleaved",
        head_dim=512,
        partial=0.125,
        traits=(
            RotaryLast(),
            NamedTables(
                {"sliding_attention": "main"},
                "compress",
                rewrites.deepseek_v4_tables,
                frozenset({"compress_rope_theta"}),
            ),
            LayerTypes(rules.deepseek_v4_types, frozenset({"compress_ratios"})),
            Compressor(
                {_CSA: 4, _HCA: 128},
                frozenset({_CSA}),
                {"compress_rate_csa": _CSA, "compress_rate_hca": _HCA},
            ),
            ValuesAreKeys(),
            LegacyKeys(
                {
                    "qk_rope_head_dim": Legacy(
                        "partial_rotary_factor",
                        rules.fraction_of_head,
                        "the rotated width (partial_rotary_factor = qk_rope_head_dim / head_dim)",
                    )
                }
            ),
            Indexer("interleaved", place="last", layer_types=frozenset({_CSA})),
        ),
        source="modeling_deepseek_v4.py: apply_rotary_pos_emb rotates the last "
        "int(head_dim * partial_rotary_factor) coordinates, pairs (2i, 2i+1) in and out; the "
        "sliding-window layers use the 'main' table, the CSA and HCA layers (and their "
        "compressors and indexer) the 'compress' one; compressed keys at arange(n_windows) * "
        "compress_rate + first_window_position; the output turned back with (cos, -sin)",
    ),
}
"""``model_type`` -> the row of a family with compressed keys."""
