r"""MLA families whose rope part needs more than the conventions: rows.

Mistral Large 4 scales its frequencies by a tensor of the checkpoint (LeRoPE:
:class:`~posenc_ref.models.traits.LearnedScales`); dots3_note gives each layer type its own MLA
widths, which its config class writes as a ``per_layer_config``
(:class:`~posenc_ref.models.traits.ConfigClass`). Each row cites the code it was read from and
is proven against it (tests/test_mla_variants.py, and the sweep).
"""

from __future__ import annotations

from .. import _rewrites as rewrites
from .. import _rules as rules
from ..family import Family
from ..sparse_traits import Indexer
from ..traits import ConfigClass, Defaults, LearnedScales, Mla, RopeLayers
from .builders import mla

__all__ = ["MLA_VARIANTS"]

LEROPE = LearnedScales(
    argument="lerope_alpha",
    tensor="model.language_model.rotary_emb.alpha",
    checkpoint="lerope.alpha",
    text_only="model.rotary_emb.alpha",
)

MLA_VARIANTS: dict[str, Family] = {
    # modeling_mistral_large4.py: apply_rotary_pos_emb_interleave on the rope part (last) in the
    # layers where no_rope_layers[i] is 1; MistralLarge4TextRotaryEmbedding.forward multiplies
    # inv_freq by alpha.exp(); conversion_mapping.py renames lerope.alpha to the state-dict name
    # its lightning indexer (MistralLarge4TextIndexer, on every layer whose indexer_types entry
    # is "full"): apply_rotary_pos_emb_interleave on the first qk_rope_head_dim coordinates of its
    # index_head_dim heads, with the layer's (LeRoPE-scaled) cos and sin; none where the layer
    # takes no RoPE
    "mistral_large4_text": mla(
        "mistral_large4_text", "interleave",
        RopeLayers(rules.no_rope_layers, frozenset({"no_rope_layers", "no_rope_layer_interval"})),
        LEROPE,
        Indexer("interleaved", "half"),
        Defaults({"max_position_embeddings": 1_048_576}),
        widths=(64, 64),
        rope={"rope_type": "yarn", "rope_theta": 10000.0, "factor": 2048.0,
              "original_max_position_embeddings": 512, "beta_fast": 32.0, "beta_slow": 1.0,
              "attention_factor": 1.0},
    ),
    # modeling_dots3_note.py: Dots3NoteTextAttention reads its widths from
    # config.per_layer_config[layer_idx] and rotates the rope part (last) with
    # apply_rotary_pos_emb_interleave; Dots3NoteTextRotaryEmbedding builds one table per layer
    # type from int(head_dim * partial_rotary_factor) of that type's config
    "dots3_note_text": mla(
        "dots3_note_text", "interleave",
        Mla(partial_of=("head_dim",)),
        ConfigClass(rewrites.dots3_note_config, rewrites.DOTS3_KEYS),
        Defaults({"head_dim": 256, "max_position_embeddings": 524_288}),
        # its DSA layers' lightning indexer: the rope part first, as GLM-5's
        Indexer("interleaved", "half", layer_types=frozenset({"indexed_attention"})),
        widths=(64, 128),
    ),
}  # fmt: skip
"""``model_type`` -> the row of an MLA family whose rope part needs more than the conventions."""
