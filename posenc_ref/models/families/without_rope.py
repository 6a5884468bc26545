r"""The families whose code uses no RoPE: learned or sinusoidal tables, ALiBi, T5 buckets, none.

One row per ``model_type``, with the encoding its code uses and a trait holding the keys it reads
(with the config class's defaults) and how a token's position maps to a row:
:class:`~posenc_ref.models.traits.Table`, :class:`~posenc_ref.models.traits.AlibiBias`,
:class:`~posenc_ref.models.traits.T5Bias`. :func:`~posenc_ref.encodings.positional_encoding`
builds the encoding from them; :func:`~posenc_ref.models.rope_spec` raises
:class:`~posenc_ref.models.NoRopeError`. ``tests/test_encodings.py`` runs every family's own code
to prove its row. (Falcon and GraniteMoE-Hybrid, whose code uses RoPE or not by a config key, are
rows with traits in :mod:`~posenc_ref.models.families.exceptions`.)
"""

from __future__ import annotations

from .. import _rules as rules
from ..family import Family
from ..traits import (
    Aliases,
    AlibiBias,
    AttentionLayers,
    FixedByCode,
    Notes,
    SwitchedBy,
    T5Bias,
    Table,
)

__all__ = ["WITHOUT_ROPE"]

# BERT's descendants: transformers 4.x read position_embedding_type (relative_key); 5 does not.
_BERT_SWITCH = SwitchedBy(
    "position_embedding_type",
    {"absolute": "learned", "relative_key": "relative_key", "relative_key_query": "relative_key"},
    default="absolute",
    refused_elsewhere=False,
)
_GPT = Aliases({"max_position_embeddings": "n_positions", "hidden_size": "n_embd"})
_D_MODEL = Aliases({"hidden_size": "d_model"})
_T5 = Aliases({"hidden_size": "d_model", "num_attention_heads": "num_heads"})


def bert(name: str, width=("hidden_size", 768), positions=512) -> Family:
    source = f"modeling_bert.py: BertEmbeddings ({name} copies it)"
    if name == "bert":
        source = "modeling_bert.py: BertEmbeddings adds position_embeddings(position_ids)"
    table = Table(("max_position_embeddings", positions), width)
    return Family(encoding="learned", traits=(_BERT_SWITCH, table), source=source)


def roberta(folder: str, width=768, positions=512, file: str = "") -> Family:
    source = (
        f"modeling_{file or folder}.py: position ids count from padding_idx + 1 "
        "(create_position_ids_from_input_ids); max_position_embeddings counts those rows"
    )
    table = Table(("max_position_embeddings", positions), ("hidden_size", width), offset=None,
                  pad=1, rows_hold_offset=True)  # fmt: skip
    return Family(encoding="learned", traits=(_BERT_SWITCH, table), source=source, folder=folder)


def learned(source: str, positions, width, *traits, offset: int = 0) -> Family:
    table = Table(positions, width, offset=offset)
    return Family(encoding="learned", traits=(table, *traits), source=source)


def plus_two(name: str, klass: str, width, *traits) -> Family:
    """Fairseq's two reserved rows: position t reads row t + 2."""
    table = Table(("max_position_embeddings", width[2]), width[:2], offset=2)
    return Family(encoding="learned", traits=(table, *traits),
                  source=f"modeling_{name}.py: {klass} reads row position + 2")  # fmt: skip


def sinusoid(folder: str, klass: str, variant: str, offset=0, positions=1024) -> Family:
    table = Table(("max_position_embeddings", positions), ("d_model", 1024), offset=offset,
                  pad=1 if offset is None else None, variant=variant)  # fmt: skip
    return Family(encoding="sinusoidal", traits=(table, _D_MODEL),
                  source=f"modeling_{folder}.py: {klass}")  # fmt: skip


def t5(name: str, width: int, heads: int, per_layer: bool = False) -> Family:
    return Family(
        encoding="t5",
        instead="T5 relative position buckets",
        traits=(T5Bias(("num_heads", heads), ("d_model", width), per_layer), _T5),
        source=f"modeling_{name}.py: compute_bias with _relative_position_bucket",
    )


def nope(name: str, why: str, instead: str, *traits) -> Family:
    return Family(encoding="nope", instead=instead, traits=traits,
                  source=f"modeling_{name}.py: {why}")  # fmt: skip


_HALVES = "sin | cos halves, the paper's frequencies"
_FAIRSEQ = "fairseq's sin | cos table, positions from padding_idx + 1"
_STATE_SPACE = "no attention and no positional encoding (a state-space model)"
_SSM_LAYERS = AttentionLayers(rules.state_space_layers)

WITHOUT_ROPE: dict[str, Family] = {
    # learned absolute: BERT's embeddings and their copies
    "bert": Family(
        encoding="learned",
        instead="learned absolute position embeddings (position_embedding_type 'absolute')",
        traits=(_BERT_SWITCH, Table(("max_position_embeddings", 512), ("hidden_size", 768))),
        source="modeling_bert.py: BertEmbeddings adds position_embeddings(position_ids)",
    ),
    "megatron-bert": bert("megatron-bert", ("hidden_size", 1024)),
    "ernie": bert("ernie"),
    "electra": bert("electra", ("embedding_size", 128)),
    "albert": bert("albert", ("embedding_size", 128)),
    "roberta": roberta("roberta"),
    "xlm-roberta": roberta("xlm_roberta"),
    "camembert": roberta("camembert"),
    "data2vec-text": roberta("data2vec", file="data2vec_text"),
    "xmod": roberta("xmod"),
    "roberta-prelayernorm": roberta("roberta_prelayernorm"),
    "xlm-roberta-xl": roberta("xlm_roberta_xl", 2560, 514),
    # learned absolute: GPT-style
    "gpt2": learned("modeling_gpt2.py: wpe", ("n_positions", 1024), ("n_embd", 768), _GPT),
    "openai-gpt": learned(
        "modeling_openai.py: positions_embed", ("n_positions", 512), ("n_embd", 768), _GPT
    ),
    "gpt_bigcode": learned(
        "modeling_gpt_bigcode.py: wpe", ("n_positions", 1024), ("n_embd", 768), _GPT
    ),
    "gpt_neo": learned(
        "modeling_gpt_neo.py: wpe", ("max_position_embeddings", 2048), ("hidden_size", 2048)
    ),
    # learned absolute: fairseq's two reserved rows
    "opt": plus_two("opt", "OPTLearnedPositionalEmbedding", ("hidden_size", 768, 2048)),
    "biogpt": plus_two("biogpt", "BioGptLearnedPositionalEmbedding", ("hidden_size", 1024, 1024)),
    "bart": plus_two("bart", "BartLearnedPositionalEmbedding", ("d_model", 1024, 1024), _D_MODEL),
    "mbart": plus_two(
        "mbart", "MBartLearnedPositionalEmbedding", ("d_model", 1024, 1024), _D_MODEL
    ),
    "plbart": plus_two(
        "plbart", "PLBartLearnedPositionalEmbedding", ("d_model", 768, 1024), _D_MODEL
    ),
    "mvp": plus_two("mvp", "MvpLearnedPositionalEmbedding", ("d_model", 1024, 1024), _D_MODEL),
    # learned, or the paper's sinusoidal table when a flag asks for it
    "distilbert": Family(
        encoding="learned",
        traits=(
            Table(("max_position_embeddings", 512), ("dim", 768), variant="interleaved"),
            SwitchedBy("sinusoidal_pos_embds", {False: "learned", True: "sinusoidal"}, False,
                       refused_elsewhere=False),
            Aliases({"hidden_size": "dim"}),
        ),
        source="modeling_distilbert.py: position_embeddings; create_sinusoidal_embeddings when "
        "sinusoidal_pos_embds",
    ),
    "xlm": Family(
        encoding="learned",
        traits=(
            Table(("max_position_embeddings", 512), ("emb_dim", 2048), variant="interleaved"),
            SwitchedBy("sinusoidal_embeddings", {False: "learned", True: "sinusoidal"}, False,
                       refused_elsewhere=False),
            Aliases({"hidden_size": "emb_dim"}),
        ),
        source="modeling_xlm.py: position_embeddings; create_sinusoidal_embeddings when "
        "sinusoidal_embeddings",
    ),
    # sinusoidal
    "marian": sinusoid("marian", f"MarianSinusoidalPositionalEmbedding, {_HALVES}", "halves"),
    "pegasus": sinusoid("pegasus", f"PegasusSinusoidalPositionalEmbedding, {_HALVES}", "halves"),
    "fsmt": sinusoid("fsmt", f"SinusoidalPositionalEmbedding, {_FAIRSEQ}", "fairseq", None),
    "m2m_100": sinusoid(
        "m2m_100", f"M2M100SinusoidalPositionalEmbedding, {_FAIRSEQ}", "fairseq", None
    ),
    "nllb-moe": sinusoid(
        "nllb_moe", f"NllbMoeSinusoidalPositionalEmbedding, {_FAIRSEQ}", "fairseq", None
    ),
    "xglm": sinusoid(
        "xglm", "XGLMSinusoidalPositionalEmbedding: fairseq's table, row position + 2", "fairseq",
        2, 2048,
    ),
    # ALiBi
    "bloom": Family(
        encoding="alibi",
        instead="ALiBi attention biases",
        traits=(
            AlibiBias(("n_head", 8)),
            Aliases({"num_attention_heads": "n_head", "hidden_size": "n_embed"}),
        ),
        source="modeling_bloom.py: build_alibi_tensor, added by baddbmm to the scaled logits",
    ),
    "mpt": Family(
        encoding="alibi",
        instead="ALiBi attention biases",
        traits=(
            AlibiBias(("n_heads", 16)),
            Aliases({"num_attention_heads": "n_heads", "hidden_size": "d_model"}),
            FixedByCode(
                {"attn_config.alibi": True, "attn_config.alibi_bias_max": 8},
                "transformers' MPT code applies ALiBi with alibi_bias_max 8 whatever the config "
                "says (modeling_mpt.py)",
            ),
            Notes(("learned_pos_emb is not read by transformers' MPT code: it has no position "
                   "table",), when_given="learned_pos_emb"),
        ),
        source="modeling_mpt.py: build_mpt_alibi_tensor(n_heads, max_seq_len): alibi_bias_max 8",
    ),  # fmt: skip
    # T5's relative buckets
    "t5": t5("t5", 512, 8),
    "mt5": t5("mt5", 512, 6),
    "umt5": t5("umt5", 512, 6, per_layer=True),
    "longt5": t5("longt5", 512, 8),
    "switch_transformers": t5("switch_transformers", 768, 12),
    # no positional encoding
    "nemotron_h": nope(
        "nemotron_h", "NemotronHAttention takes no position embeddings",
        "Nemotron-H's attention layers (between Mamba-2 layers) take no positional encoding; "
        "the Mamba-2 layers carry order",
        AttentionLayers(rules.nemotron_h_layers),
    ),
    "jamba": nope(
        "jamba", "JambaAttention takes no position embeddings",
        "its attention layers take no positional encoding; the Mamba layers carry order",
        AttentionLayers(rules.jamba_layers),
    ),
    "vit": Family(
        encoding="learned",
        instead="a learned table of (image_size / patch_size)**2 + 1 patch positions (the class "
        "token's first), added to the patch embeddings and interpolated for other resolutions: "
        "learned 2-D patch positions",
        source="modeling_vit.py: ViTEmbeddings.position_embeddings",
    ),
    "kimi_linear": nope(
        "kimi_linear", "KimiMLAAttention splits off a qk_rope_head_dim part (k_rot) but applies no "
        "rotation to it; the KDA layers are linear attention",
        "Kimi Linear's MLA layers take no positional encoding (NoPE, the rope part unrotated); "
        "its KDA (linear attention) layers carry order",
    ),
    "mamba": nope("mamba", "state-space layers only, no attention", _STATE_SPACE, _SSM_LAYERS),
    "mamba2": nope("mamba2", "state-space layers only, no attention", _STATE_SPACE, _SSM_LAYERS),
    "falcon_mamba": nope(
        "falcon_mamba", "state-space layers only, no attention", _STATE_SPACE, _SSM_LAYERS
    ),
}  # fmt: skip
"""``model_type`` -> the row of a family whose code uses no RoPE."""
