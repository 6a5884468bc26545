"""The families whose transformers code uses no RoPE, or picks its encoding by a config key.

One row per ``model_type``: the kind the code uses, where in transformers 5.23 it is decided,
the keys it reads with the config class's default, and how a token's position maps to a row.
``tests/test_encodings.py`` runs every family's own code to prove its row.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace


@dataclass(frozen=True)
class Family:
    """What a family's code does with positions, and the keys it reads (transformers 5.23)."""

    kind: str  # learned, sinusoidal, alibi, t5, nope: what the code does by default
    source: str  # file (under transformers/models/) and what in it decides
    positions: tuple[str, int] | None = None  # (key, the config class's default)
    width: tuple[str, int] | None = None
    heads: tuple[str, int] | None = None
    # row = position + offset; None: padding_idx + 1, with pad_token_id's default here
    offset: int | None = 0
    pad: int | None = None
    rows_hold_offset: bool = False  # RoBERTa: max_position_embeddings counts the offset rows
    variant: str = ""  # sinusoidal: interleaved, halves, fairseq
    bert_like: bool = False  # transformers 4.x read position_embedding_type (relative_key)
    # other names the config class accepts for a key it reads (its attribute_map): key -> names
    aliases: dict[str, tuple[str, ...]] = field(default_factory=dict)


def _learned(source, positions, width, offset=0, **kw) -> Family:
    return Family("learned", source, positions, width, offset=offset, **kw)


def _bert(name: str, width=("hidden_size", 768), positions=512) -> Family:
    source = f"bert/modeling_bert.py: BertEmbeddings ({name} copies it)"
    if name == "bert":
        source = "bert/modeling_bert.py: BertEmbeddings adds position_embeddings(position_ids)"
    return _learned(source, ("max_position_embeddings", positions), width, bert_like=True)


def _roberta(name: str, width=768, positions=512, file: str = "") -> Family:
    source = (
        f"{name}/modeling_{file or name}.py: position ids count from padding_idx + 1 "
        "(create_position_ids_from_input_ids); max_position_embeddings counts those rows"
    )
    return _learned(
        source,
        ("max_position_embeddings", positions),
        ("hidden_size", width),
        offset=None,
        pad=1,
        rows_hold_offset=True,
        bert_like=True,
    )


def _plus_two(name: str, klass: str, width) -> Family:
    source = f"{name}/modeling_{name}.py: {klass} reads row position + 2"
    return _learned(source, ("max_position_embeddings", width[2]), width[:2], offset=2)


def _sinusoid(name: str, klass: str, variant: str, offset=0, positions=1024) -> Family:
    source = f"{name}/modeling_{name}.py: {klass}"
    return Family(
        "sinusoidal",
        source,
        ("max_position_embeddings", positions),
        ("d_model", 1024),
        offset=offset,
        pad=1 if offset is None else None,
        variant=variant,
    )


def _t5(name: str, width: int, heads: int) -> Family:
    source = f"{name}/modeling_{name}.py: compute_bias with _relative_position_bucket"
    return Family("t5", source, None, ("d_model", width), ("num_heads", heads))


def _nope(name: str, why: str) -> Family:
    return Family("nope", f"{name}/modeling_{name}.py: {why}")


_HALVES = "sin | cos halves, the paper's frequencies"
_FAIRSEQ = "fairseq's sin | cos table, positions from padding_idx + 1"
_NO_ATTENTION = "state-space layers only, no attention"

FAMILIES: dict[str, Family] = {
    # learned absolute: BERT's embeddings and their copies
    "bert": _bert("bert"),
    "megatron-bert": _bert("megatron-bert", ("hidden_size", 1024)),
    "ernie": _bert("ernie"),
    "electra": _bert("electra", ("embedding_size", 128)),
    "albert": _bert("albert", ("embedding_size", 128)),
    "roberta": _roberta("roberta"),
    "xlm-roberta": _roberta("xlm_roberta"),
    "camembert": _roberta("camembert"),
    "data2vec-text": _roberta("data2vec", file="data2vec_text"),
    "xmod": _roberta("xmod"),
    "roberta-prelayernorm": _roberta("roberta_prelayernorm"),
    "xlm-roberta-xl": _roberta("xlm_roberta_xl", 2560, 514),
    # learned absolute: GPT-style
    "gpt2": _learned("gpt2/modeling_gpt2.py: wpe", ("n_positions", 1024), ("n_embd", 768)),
    "openai-gpt": _learned(
        "openai/modeling_openai.py: positions_embed", ("n_positions", 512), ("n_embd", 768)
    ),
    "gpt_bigcode": _learned(
        "gpt_bigcode/modeling_gpt_bigcode.py: wpe", ("n_positions", 1024), ("n_embd", 768)
    ),
    "gpt_neo": _learned(
        "gpt_neo/modeling_gpt_neo.py: wpe",
        ("max_position_embeddings", 2048),
        ("hidden_size", 2048),
    ),
    # learned absolute: fairseq's two reserved rows
    "opt": _plus_two("opt", "OPTLearnedPositionalEmbedding", ("hidden_size", 768, 2048)),
    "biogpt": _plus_two("biogpt", "BioGptLearnedPositionalEmbedding", ("hidden_size", 1024, 1024)),
    "bart": _plus_two("bart", "BartLearnedPositionalEmbedding", ("d_model", 1024, 1024)),
    "mbart": _plus_two("mbart", "MBartLearnedPositionalEmbedding", ("d_model", 1024, 1024)),
    "plbart": _plus_two("plbart", "PLBartLearnedPositionalEmbedding", ("d_model", 768, 1024)),
    "mvp": _plus_two("mvp", "MvpLearnedPositionalEmbedding", ("d_model", 1024, 1024)),
    # learned, or the paper's sinusoidal table when a flag asks for it
    "distilbert": _learned(
        "distilbert/modeling_distilbert.py: position_embeddings; create_sinusoidal_embeddings "
        "when sinusoidal_pos_embds",
        ("max_position_embeddings", 512),
        ("dim", 768),
        variant="interleaved",
    ),
    "xlm": _learned(
        "xlm/modeling_xlm.py: position_embeddings; create_sinusoidal_embeddings when "
        "sinusoidal_embeddings",
        ("max_position_embeddings", 512),
        ("emb_dim", 2048),
        variant="interleaved",
    ),
    # sinusoidal
    "marian": _sinusoid("marian", f"MarianSinusoidalPositionalEmbedding, {_HALVES}", "halves"),
    "pegasus": _sinusoid("pegasus", f"PegasusSinusoidalPositionalEmbedding, {_HALVES}", "halves"),
    "fsmt": _sinusoid("fsmt", f"SinusoidalPositionalEmbedding, {_FAIRSEQ}", "fairseq", None),
    "m2m_100": _sinusoid(
        "m2m_100", f"M2M100SinusoidalPositionalEmbedding, {_FAIRSEQ}", "fairseq", None
    ),
    "nllb-moe": _sinusoid(
        "nllb_moe", f"NllbMoeSinusoidalPositionalEmbedding, {_FAIRSEQ}", "fairseq", None
    ),
    "xglm": _sinusoid(
        "xglm",
        "XGLMSinusoidalPositionalEmbedding: fairseq's table, row position + 2",
        "fairseq",
        2,
        2048,
    ),
    # ALiBi
    "bloom": Family(
        "alibi",
        "bloom/modeling_bloom.py: build_alibi_tensor, added by baddbmm to the scaled logits",
        heads=("n_head", 8),
    ),
    "mpt": Family(
        "alibi",
        "mpt/modeling_mpt.py: build_mpt_alibi_tensor(n_heads, max_seq_len): alibi_bias_max 8",
        heads=("n_heads", 16),
    ),
    "falcon": Family(
        "alibi",
        "falcon/modeling_falcon.py: build_alibi_tensor when alibi (divided by sqrt(head_dim)), "
        "a rotary embedding otherwise",
        width=("hidden_size", 4544),
        heads=("num_attention_heads", 71),
    ),
    # T5's relative buckets
    "t5": _t5("t5", 512, 8),
    "mt5": _t5("mt5", 512, 6),
    "umt5": _t5("umt5", 512, 6),
    "longt5": _t5("longt5", 512, 8),
    "switch_transformers": _t5("switch_transformers", 768, 12),
    # no positional encoding
    "nemotron_h": _nope("nemotron_h", "NemotronHAttention takes no position embeddings"),
    "jamba": _nope("jamba", "JambaAttention takes no position embeddings"),
    "mamba": _nope("mamba", _NO_ATTENTION),
    "mamba2": _nope("mamba2", _NO_ATTENTION),
    "falcon_mamba": _nope("falcon_mamba", _NO_ATTENTION),
    "granitemoehybrid": _nope(
        "granitemoehybrid",
        "a rotary embedding only when position_embedding_type is 'rope'",
    ),
}
"""``model_type`` to its row, for the families whose code uses no RoPE or decides by a key."""

# The config classes' attribute_map (and BLOOM's and Falcon's n_embed), for the keys read here:
# a config.json may give "hidden_size" for GPT-2's n_embd, and transformers takes it.
_GPT = {"n_positions": ("max_position_embeddings",), "n_embd": ("hidden_size",)}
_D_MODEL = {"d_model": ("hidden_size",)}
_T5 = {"d_model": ("hidden_size",), "num_heads": ("num_attention_heads",)}
_ALIASES = {
    "gpt2": _GPT,
    "openai-gpt": _GPT,
    "gpt_bigcode": _GPT,
    "distilbert": {"dim": ("hidden_size",)},
    "xlm": {"emb_dim": ("hidden_size",)},
    **dict.fromkeys(
        ("marian", "pegasus", "fsmt", "m2m_100", "nllb-moe", "xglm", "bart", "mbart"), _D_MODEL
    ),
    **dict.fromkeys(("plbart", "mvp"), _D_MODEL),
    "bloom": {"n_head": ("num_attention_heads",), "hidden_size": ("n_embed",)},
    "mpt": {"n_heads": ("num_attention_heads",), "d_model": ("hidden_size",)},
    "falcon": {"hidden_size": ("n_embed",)},
    **dict.fromkeys(("t5", "mt5", "umt5", "longt5", "switch_transformers"), _T5),
}
FAMILIES = {name: replace(row, aliases=_ALIASES.get(name, {})) for name, row in FAMILIES.items()}
