"""Which positional encoding a config uses: ``posenc_ref.encodings.positional_encoding``.

The first half needs nothing but posenc_ref: each kind read from released configs, each
implementation against an independent loop or closed form, the delegation to ``rope_spec``, and
bad input. The second half (marked ``peers``, skipped without transformers) runs every family's
own code in transformers: the row each token reads from a learned table, the sinusoidal tables
of Marian and FSMT and how a stated permutation and base map ours onto theirs, ALiBi slopes and
biases of BLOOM, MPT and Falcon, T5's buckets from each T5 family's attention, and that NoPE
families give attention no position at all.
"""

import math

import pytest
import torch
from hypothesis import example, given
from hypothesis import strategies as st

from posenc_ref import alibi_slopes, relative_positions, sinusoidal, t5_relative_bucket
from posenc_ref.encodings import (
    ENCODING_FAMILIES,
    Alibi,
    LearnedAbsolute,
    NoPE,
    RelativeKey,
    Rope,
    Sinusoidal,
    T5Buckets,
    positional_encoding,
    released_encoding_configs,
)
from posenc_ref.models import rope_spec
from tests.configs import LLAMA31

RELEASED = {entry["name"]: entry["config"] for entry in released_encoding_configs()}
GEMMA3 = {
    "model_type": "gemma3_text",
    "hidden_size": 2560,
    "num_attention_heads": 8,
    "head_dim": 256,
    "max_position_embeddings": 131072,
    "rope_parameters": {
        "sliding_attention": {"rope_type": "default", "rope_theta": 10000.0},
        "full_attention": {"rope_type": "linear", "factor": 8.0, "rope_theta": 1000000.0},
    },
}


# --------------------------------------------------------------------------- released configs


def test_every_released_config_is_read_and_says_its_source():
    kinds = {
        "BERT base": LearnedAbsolute,
        "RoBERTa base": LearnedAbsolute,
        "GPT-2": LearnedAbsolute,
        "OPT 125M": LearnedAbsolute,
        "Marian en-de": Sinusoidal,
        "FSMT en-de": Sinusoidal,
        "BLOOM 560M": Alibi,
        "BLOOM 176B": Alibi,
        "MPT 7B": Alibi,
        "Flan-T5 base": T5Buckets,
        "Nemotron-H 8B": NoPE,
    }
    assert set(RELEASED) == set(kinds)
    for entry in released_encoding_configs():
        assert entry["source"].startswith("config.json of https://huggingface.co/" + entry["model"])
        encoding = positional_encoding(entry["config"])
        assert isinstance(encoding, kinds[entry["name"]]), entry["name"]
        assert encoding.source.startswith("transformers/models/")


def test_learned_tables_and_their_offsets():
    bert = positional_encoding(RELEASED["BERT base"])
    assert (bert.num_positions, bert.offset, bert.rows, bert.dim) == (512, 0, 512, 768)
    # RoBERTa's 514 rows hold 512 positions: fairseq counts positions on from padding_idx 1
    roberta = positional_encoding(RELEASED["RoBERTa base"])
    assert (roberta.num_positions, roberta.offset, roberta.rows, roberta.padding_idx) == (
        512,
        2,
        514,
        1,
    )
    # OPT's 2048 positions need 2050 rows: two reserved rows in front
    opt = positional_encoding(RELEASED["OPT 125M"])
    assert (opt.num_positions, opt.offset, opt.rows, opt.padding_idx) == (2048, 2, 2050, None)
    gpt2 = positional_encoding(RELEASED["GPT-2"])
    assert (gpt2.num_positions, gpt2.offset, gpt2.dim) == (1024, 0, 768)
    assert roberta.rows_for(torch.tensor([0, 511])).tolist() == [2, 513]
    with pytest.raises(ValueError, match=r"positions must be in \[0, 512\)"):
        roberta.rows_for(torch.tensor([512]))


def test_a_key_the_config_class_also_accepts_under_another_name():
    # GPT2Config's attribute_map: hidden_size is n_embd, max_position_embeddings is n_positions
    gpt2 = positional_encoding(
        {"model_type": "gpt2", "hidden_size": 64, "max_position_embeddings": 9}
    )
    assert (gpt2.dim, gpt2.num_positions) == (64, 9)
    with pytest.raises(ValueError, match="inconsistent n_embd: n_embd is 32 but hidden_size"):
        positional_encoding({"model_type": "gpt2", "n_embd": 32, "hidden_size": 64})
    assert positional_encoding({"model_type": "bloom", "num_attention_heads": 12}).num_heads == 12


# --------------------------------------------------------------------------- sinusoidal


def loop_table(variant, num_positions, dim, offset, base=10000.0):
    """The families' tables written as loops from their own formulas (the oracle here)."""
    half = dim // 2
    table = torch.zeros(num_positions, dim, dtype=torch.float64)
    for t in range(num_positions):
        for i in range(half):
            if variant == "fairseq":
                angle = (t + offset) * math.exp(-i * math.log(base) / (half - 1))
            else:
                angle = (t + offset) / base ** (2 * i / dim)
            sin_col, cos_col = (2 * i, 2 * i + 1) if variant == "interleaved" else (i, half + i)
            table[t, sin_col], table[t, cos_col] = math.sin(angle), math.cos(angle)
    return table


@given(
    variant=st.sampled_from(["interleaved", "halves", "fairseq"]),
    half=st.integers(2, 12),
    offset=st.integers(0, 3),
    num_positions=st.integers(0, 40),
)
@example(variant="fairseq", half=2, offset=2, num_positions=3)  # the narrowest fairseq table
def test_sinusoidal_table_is_each_familys_formula(variant, half, offset, num_positions):
    encoding = Sinusoidal("test", "test", variant, 2 * half, 10000.0, offset, 64)
    ours = encoding.table(num_positions, dtype=torch.float64)
    expected = loop_table(variant, num_positions, 2 * half, offset)
    torch.testing.assert_close(ours, expected, rtol=0, atol=1e-12)


def test_fairseq_frequencies_are_the_papers_with_another_base():
    # omega_i = 10000^(-i/(d/2-1)) = base'^(-2i/d) with base' = 10000^(d/(d-2))
    fsmt = positional_encoding(RELEASED["FSMT en-de"])
    i = torch.arange(fsmt.dim // 2, dtype=torch.float64)
    direct = 10000.0 ** (-i / (fsmt.dim // 2 - 1))
    torch.testing.assert_close(fsmt.inv_freq(), direct, rtol=1e-14, atol=0)
    assert float(fsmt.inv_freq()[-1]) == pytest.approx(1e-4, rel=1e-13)  # the slowest: 1/10000
    assert fsmt.table_base == pytest.approx(10000 ** (1024 / 1022))
    marian = positional_encoding(RELEASED["Marian en-de"])
    assert marian.table_base == 10000.0 and marian.offset == 0
    assert fsmt.offset == 2 and fsmt.padding_idx == 1  # the first token sits at angle 2 omega


def test_odd_or_tiny_sinusoidal_widths_are_refused():
    with pytest.raises(ValueError, match="even width"):
        positional_encoding({"model_type": "marian", "d_model": 511})
    with pytest.raises(ValueError, match=">= 4 for fairseq's formula"):
        positional_encoding({"model_type": "fsmt", "d_model": 2})


def test_the_flags_that_switch_xlm_and_distilbert_to_the_papers_table():
    assert positional_encoding({"model_type": "distilbert"}).kind == "learned"
    table = positional_encoding({"model_type": "distilbert", "sinusoidal_pos_embds": True})
    assert table.variant == "interleaved"
    torch.testing.assert_close(table.table(5), sinusoidal(5, 768), rtol=0, atol=0)
    assert positional_encoding({"model_type": "xlm", "sinusoidal_embeddings": True}).dim == 2048


# --------------------------------------------------------------------------- ALiBi and T5


def test_alibi_slopes_and_falcons_scale():
    bloom = positional_encoding(RELEASED["BLOOM 176B"])
    slopes = bloom.slopes()
    torch.testing.assert_close(slopes, alibi_slopes(112, dtype=torch.float64))
    # 112 heads: the 64-head set, then 48 of the 128-head set (every other one)
    torch.testing.assert_close(slopes[:64], alibi_slopes(64, dtype=torch.float64))
    torch.testing.assert_close(slopes[64:], alibi_slopes(128, dtype=torch.float64)[0::2][:48])
    assert positional_encoding(RELEASED["MPT 7B"]).num_heads == 32
    falcon = positional_encoding(
        {"model_type": "falcon", "alibi": True, "hidden_size": 2048, "num_attention_heads": 32}
    )
    assert falcon.logit_scale == 1 / math.sqrt(64)
    assert any("bfloat16" in note for note in falcon.notes)
    assert any("adds the bias twice" in note for note in falcon.notes)
    bias = falcon.bias(3, 5)
    assert bias.shape == (32, 3, 5)
    # queries are the last 3 of 5 positions: query 2 sits at position 4, three after key 1
    torch.testing.assert_close(bias[:, 2, 1], -falcon.slopes() * 3, rtol=1e-15, atol=0)


def test_falcon_without_alibi_has_a_rope():
    config = {"model_type": "falcon", "hidden_size": 64, "num_attention_heads": 4}
    try:
        encoding = positional_encoding(config)
    except ValueError as error:  # until the RoPE reader knows Falcon, it says so itself
        with pytest.raises(ValueError) as direct:
            rope_spec(config)
        assert str(error) == str(direct.value)
    else:
        assert encoding.kind == "rope"


def test_mpt_configs_transformers_would_not_run_as_trained_are_refused():
    for attn in ({"alibi": False}, {"alibi_bias_max": 16}, {"alibi": 1}):
        with pytest.raises(ValueError, match="transformers' MPT code applies ALiBi"):
            positional_encoding({"model_type": "mpt", "attn_config": attn})
    notes = positional_encoding(RELEASED["MPT 7B"]).notes
    assert any("learned_pos_emb is not read" in note for note in notes)


def brute_saturation(encoding, bidirectional):
    distances = torch.arange(encoding.max_distance + 1)
    buckets = t5_relative_bucket(
        -distances,
        bidirectional=bidirectional,
        num_buckets=encoding.num_buckets,
        max_distance=encoding.max_distance,
    )
    return int(distances[buckets == buckets.max()].min())


@given(half=st.integers(2, 40), extra=st.integers(1, 300), bidirectional=st.booleans())
@example(half=16, extra=120, bidirectional=True)  # T5's 32 buckets and 128: 91
@example(half=16, extra=112, bidirectional=False)  # the decoder: 113
def test_t5_saturation_is_the_first_distance_in_the_last_bucket(half, extra, bidirectional):
    buckets = 2 * half
    exact = (half if bidirectional else buckets) // 2
    encoding = T5Buckets("t5", "test", buckets, exact + extra, 1)
    assert encoding.saturation(bidirectional=bidirectional) == brute_saturation(
        encoding, bidirectional
    )


def test_t5_released_numbers():
    t5 = positional_encoding(RELEASED["Flan-T5 base"])
    assert (t5.num_buckets, t5.max_distance, t5.num_heads, t5.per_layer) == (32, 128, 12, False)
    assert t5.saturation(bidirectional=True) == 91 < t5.max_distance
    assert t5.saturation(bidirectional=False) == 113
    assert positional_encoding({"model_type": "umt5"}).per_layer
    with pytest.raises(ValueError, match="max_distance must be > 8"):
        positional_encoding({"model_type": "t5", "relative_attention_max_distance": 8})


# --------------------------------------------------------------------------- NoPE, relative_key


def test_nope_counts_the_attention_layers():
    nemotron = positional_encoding(RELEASED["Nemotron-H 8B"])
    assert (nemotron.attention_layers, nemotron.layers) == (4, 52)
    listed = {"model_type": "nemotron_h", "layers_block_type": ["linear_attention"] * 3}
    assert positional_encoding(listed).attention_layers == 0
    jamba = positional_encoding({"model_type": "jamba"})  # JambaConfig: one in 8, from layer 4
    assert (jamba.attention_layers, jamba.layers) == (4, 32)
    assert positional_encoding({"model_type": "mamba"}).attention_layers == 0
    assert positional_encoding({"model_type": "granitemoehybrid"}).kind == "nope"


def test_relative_key_is_named_and_marked_as_gone_from_transformers_5():
    for variant in ("relative_key", "relative_key_query"):
        encoding = positional_encoding({"model_type": "bert", "position_embedding_type": variant})
        assert isinstance(encoding, RelativeKey) and encoding.variant == variant
        assert "41170" in encoding.source
    with pytest.raises(ValueError, match="'absolute', 'relative_key' or 'relative_key_query'"):
        positional_encoding({"model_type": "bert", "position_embedding_type": "rotary"})
    with pytest.raises(ValueError, match="position_embedding_type is not read by gpt2"):
        positional_encoding({"model_type": "gpt2", "position_embedding_type": "absolute"})


# --------------------------------------------------------------------------- RoPE


def test_rope_is_rope_spec():
    encoding = positional_encoding(LLAMA31)
    assert isinstance(encoding, Rope) and list(encoding.specs) == [None]
    assert repr(encoding.specs[None]) == repr(rope_spec(LLAMA31))


def test_one_rope_per_layer_type():
    encoding = positional_encoding(GEMMA3)
    assert list(encoding.specs) == ["sliding_attention", "full_attention"]
    for layer_type, spec in encoding.specs.items():
        assert repr(spec) == repr(rope_spec(GEMMA3, layer_type=layer_type))
    narrowed = positional_encoding(GEMMA3, layer_type="full_attention")
    assert list(narrowed.specs) == ["full_attention"]


def test_gemma3_older_form_has_a_rope_per_layer_type_too():
    older = {  # rope_local_base_freq for the sliding layers, rope_theta + rope_scaling for full
        **{k: v for k, v in GEMMA3.items() if k != "rope_parameters"},
        "rope_theta": 1000000.0,
        "rope_local_base_freq": 10000.0,
        "rope_scaling": {"rope_type": "linear", "factor": 8.0},
    }
    encoding = positional_encoding(older)
    newer = positional_encoding(GEMMA3)
    assert list(encoding.specs) == list(newer.specs)
    for layer_type, spec in encoding.specs.items():
        assert torch.equal(spec.inv_freq, newer.specs[layer_type].inv_freq)


@pytest.mark.parametrize(
    "config, types, nope",
    [
        ({"model_type": "gemma3n_text", "hidden_size": 2048, "num_attention_heads": 8},
         ["sliding_attention", "full_attention"], None),
        ({"model_type": "beam", "hidden_size": 1024, "num_attention_heads": 8,
          "num_hidden_layers": 4, "layer_types": ["sliding_attention"] * 3 + ["full_attention"]},
         ["sliding_attention"], (3,)),
    ],
    ids=["gemma3n", "beam"],
)  # fmt: skip
def test_a_config_without_a_rope_dict_has_its_classs_rope_per_layer_type(config, types, nope):
    """No rope_parameters: the config class's per-type dict; a null type has no RoPE at all."""
    encoding = positional_encoding(config)
    assert list(encoding.specs) == types
    for layer_type, spec in encoding.specs.items():
        assert repr(spec) == repr(rope_spec(config, layer_type=layer_type))
        if nope is not None:
            assert spec.nope_layers == nope


def test_layout_and_layer_type_on_a_model_without_rope():
    bert = positional_encoding(RELEASED["BERT base"], layout="half")
    assert bert.kind == "learned"
    assert any("layout='half' does not apply" in note for note in bert.notes)
    with pytest.raises(ValueError, match="layer_type='full_attention' does not apply"):
        positional_encoding(RELEASED["BERT base"], layer_type="full_attention")
    stray = positional_encoding({**RELEASED["GPT-2"], "rope_theta": 10000.0})
    assert any("rope_theta in the config: not read by gpt2" in note for note in stray.notes)


def test_text_config_is_read():
    wrapped = {"model_type": "blip-2", "text_config": RELEASED["OPT 125M"]}
    assert positional_encoding(wrapped).rows == 2050
    with pytest.raises(TypeError, match="text_config must be a dict or null, got a list"):
        positional_encoding({"model_type": "llava", "text_config": [LLAMA31]})


# --------------------------------------------------------------------------- bad input


def test_a_config_nothing_reads_names_what_was_looked_for():
    for config, who in (
        ({"model_type": "frobnicator"}, "model_type 'frobnicator'"),
        ({}, "a config without model_type"),
    ):
        with pytest.raises(ValueError) as error:
            positional_encoding(config)
        message = str(error.value)
        assert f"cannot tell which positional encoding {who} uses" in message
        assert "ENCODING_FAMILIES" in message and "RoPE reader" in message


@pytest.mark.parametrize(
    "config, error, message",
    [
        ({"model_type": ["llama"]}, TypeError, r"model_type must be a string .* got \['llama'\]"),
        ({"model_type": {"a": 1}}, TypeError, "model_type must be a string"),
        ({"model_type": "bert", "max_position_embeddings": 10**20}, ValueError, r"\[1, 2\*\*53\]"),
        (
            {"model_type": "bert", "max_position_embeddings": 10**5000},
            ValueError,
            "about 5001 digits",
        ),
        (
            {"model_type": "bert", "max_position_embeddings": [[[1]]]},
            TypeError,
            "must be an integer",
        ),
        ({"model_type": "bert", "hidden_size": 0}, ValueError, "hidden_size must be an integer in"),
        ({"model_type": "bert", "hidden_size": 2**40}, ValueError, r"\[1, 2\*\*20\]"),
        ({"model_type": "bloom", "n_head": 1.5}, TypeError, "n_head must be an integer"),
        ({"model_type": "bloom", "n_head": True}, TypeError, "n_head must be an integer"),
        ({"model_type": "falcon", "alibi": "yes"}, TypeError, "alibi must be true or false"),
        ({"model_type": "mpt", "attn_config": [1]}, TypeError, "attn_config must be a dict"),
        ({"model_type": "roberta", "max_position_embeddings": 2}, ValueError, "leaves no position"),
        ({"model_type": "roberta", "pad_token_id": -1}, ValueError, "pad_token_id must be"),
        ([1, 2], TypeError, "config must be a dict"),
    ],
)
def test_bad_input(config, error, message):
    with pytest.raises(error, match=message):
        positional_encoding(config)


def test_deeply_nested_values_give_a_short_message():
    deep = 1
    for _ in range(5000):
        deep = [deep]
    with pytest.raises(TypeError, match="must be an integer >= 1 .*got \\[\\[\\[\\[\\[\\["):
        positional_encoding({"model_type": "bert", "hidden_size": deep})


# =========================================================================== transformers' own code


@pytest.fixture(scope="module")
def hf():
    """The transformers package, quiet; skipped when it is missing."""
    pytest.importorskip("transformers")
    import transformers as tf

    tf.utils.logging.set_verbosity_error()
    return tf


TINY = {
    "hidden_size": 32,
    "n_embd": 32,
    "d_model": 32,
    "dim": 32,
    "emb_dim": 32,
    "embedding_size": 16,
    "num_attention_heads": 4,
    "n_head": 4,
    "n_heads": 4,
    "num_heads": 4,
    "encoder_attention_heads": 4,
    "decoder_attention_heads": 4,
    "attention_heads": 4,
    "num_hidden_layers": 1,
    "n_layer": 1,
    "n_layers": 1,
    "num_layers": 1,
    "num_decoder_layers": 1,
    "encoder_layers": 1,
    "decoder_layers": 1,
    "intermediate_size": 64,
    "encoder_ffn_dim": 64,
    "decoder_ffn_dim": 64,
    "ffn_dim": 64,
    "hidden_dim": 64,
    "d_ff": 64,
    "d_kv": 8,
    "vocab_size": 99,
    "src_vocab_size": 99,
    "tgt_vocab_size": 99,
    "max_position_embeddings": 40,
    "n_positions": 40,
}


def tiny_config(hf, model_type, **extra):
    """The family's config class with small sizes: only keys it knows, so nothing is invented."""
    cls = hf.AutoConfig.for_model(model_type).__class__
    aliases = getattr(cls, "attribute_map", {})
    known = set(cls().to_dict()) | set(aliases)
    given = {aliases.get(k, k) for k in extra}
    sizes = {k: v for k, v in TINY.items() if k in known and aliases.get(k, k) not in given}
    if model_type == "gpt_neo":
        sizes["attention_types"] = [[["global"], 1]]  # one layer, as num_layers says
    if model_type == "marian":
        sizes["pad_token_id"] = 98  # Marian's default pad id 58100 needs its 58101-token vocab
    return cls(**sizes, **extra)


def build(hf, config):
    torch.manual_seed(0)
    model = hf.AutoModel.from_config(config).eval()
    if config.model_type == "xmod":
        model.set_default_language("en_XX")
    return model


def position_rows_read(hf, model_type, length=12, **extra):
    """Run the family's model and return what its position module added, per token."""
    config = tiny_config(hf, model_type, **extra)
    model = build(hf, config)
    names = ("position_embeddings", "wpe", "embed_positions", "positions_embed")
    name, module = next((n, m) for n, m in model.named_modules() if n.rsplit(".", 1)[-1] in names)
    captured = []
    hook = module.register_forward_hook(lambda m, i, out: captured.append(out))
    pad = config.pad_token_id
    ids = torch.tensor([[t for t in range(3, 90) if t != pad][:length]])
    extra_inputs = {"decoder_input_ids": ids} if config.is_encoder_decoder else {}
    with torch.no_grad():
        model(input_ids=ids, **extra_inputs)
    hook.remove()
    out = captured[0]
    return config, module, out.reshape(-1, out.shape[-1])[:length]


LEARNED = [t for t, f in ENCODING_FAMILIES.items() if f.encoding == "learned"]
SINUSOIDAL = [t for t, f in ENCODING_FAMILIES.items() if f.encoding == "sinusoidal"]


@pytest.mark.peers
@pytest.mark.parametrize("model_type", LEARNED)
def test_learned_rows_are_the_ones_the_family_reads(hf, model_type):
    # EsmConfig has no pad_token_id by default (its embeddings need one): ESM-1b's released 1
    extra = {"pad_token_id": 1} if model_type == "esm" else {}
    config, module, added = position_rows_read(hf, model_type, **extra)
    encoding = positional_encoding(config.to_dict())
    weight = module.weight.detach()
    assert tuple(weight.shape) == (encoding.rows, encoding.dim)
    read = [int((weight - row).abs().sum(-1).argmin()) for row in added]
    expected = encoding.rows_for(torch.arange(len(read))).tolist()
    assert read == expected
    assert all(bool((weight[r] == row).all()) for r, row in zip(read, added, strict=True))


@pytest.mark.peers
@pytest.mark.parametrize(
    "model_type, flag",
    [(t, None) for t in SINUSOIDAL]
    + [("distilbert", "sinusoidal_pos_embds"), ("xlm", "sinusoidal_embeddings")],
)
def test_sinusoidal_rows_are_the_familys(hf, model_type, flag):
    extra = {flag: True} if flag else {}
    config, _, added = position_rows_read(hf, model_type, length=30, **extra)
    encoding = positional_encoding(config.to_dict())
    assert encoding.kind == "sinusoidal"
    ours = encoding.table(added.shape[0])
    # fairseq's families form float32 angles: (position) * 2**-24 rad, plus a rounding of sin
    torch.testing.assert_close(added, ours, rtol=0, atol=(30 + 3) * 2**-24 + 2**-24)


@pytest.mark.peers
def test_marian_is_ours_with_its_columns_reordered(hf):
    from transformers.models.marian.modeling_marian import MarianSinusoidalPositionalEmbedding

    module = MarianSinusoidalPositionalEmbedding(512, 512)
    theirs = module.create_weight()  # (512, 512): the released Marian en-de's table
    ours = sinusoidal(512, 512)
    order = torch.cat([torch.arange(0, 512, 2), torch.arange(1, 512, 2)])
    # The stated permutation, written out: even (sin) columns first, then odd (cos) ones.
    torch.testing.assert_close(theirs, ours[:, order], rtol=0, atol=2**-24)
    marian = positional_encoding(RELEASED["Marian en-de"])
    torch.testing.assert_close(theirs, marian.table(512), rtol=0, atol=2**-24)
    # and interleaving theirs back gives ours
    back = torch.empty_like(theirs)
    back[:, 0::2], back[:, 1::2] = theirs[:, :256], theirs[:, 256:]
    torch.testing.assert_close(back, ours, rtol=0, atol=2**-24)


@pytest.mark.peers
def test_fsmt_is_ours_with_another_base_an_offset_and_reordered_columns(hf):
    from transformers.models.fsmt.modeling_fsmt import SinusoidalPositionalEmbedding

    d, positions, pad = 1024, 1024, 1  # the released FSMT en-de
    theirs = SinusoidalPositionalEmbedding.get_embedding(positions + pad + 1, d, pad)
    assert bool((theirs[pad] == 0).all())  # the padding row
    base = 10000.0 ** (d / (d - 2))
    ours = sinusoidal(positions, d, base, offset=pad + 1)  # tokens 0.. at angles (t + 2) omega
    order = torch.cat([torch.arange(0, d, 2), torch.arange(1, d, 2)])
    # FSMT forms the angles in float32: (position + 1) * 2**-24 rad of rounding, and the
    # float32 frequencies add about (position) * omega * 2**-24 * ln(10000)
    bound = (positions + pad + 2) * 2**-24 * (1 + math.log(10000)) + 2**-24
    error = (theirs[pad + 1 :] - ours[:, order]).abs().max().item()
    assert error <= bound
    fsmt = positional_encoding(RELEASED["FSMT en-de"])
    torch.testing.assert_close(fsmt.table(positions), ours[:, order], rtol=0, atol=0)


@pytest.mark.peers
def test_defaults_and_aliases_are_the_config_classes(hf):
    from posenc_ref.models.families import REMOTE, SERVED
    from posenc_ref.models.traits import AlibiBias, T5Bias, Table

    for model_type, family in ENCODING_FAMILIES.items():
        if model_type in SERVED or model_type in REMOTE:  # no transformers class: checked in
            continue  # test_served_families.py and test_remote_families.py
        cls = hf.AutoConfig.for_model(model_type).__class__
        defaults = cls().to_dict()
        table, alibi, t5 = (family.trait(kind) for kind in (Table, AlibiBias, T5Bias))
        specs = [
            *((table.positions, table.width) if table else ()),
            *((alibi.heads, alibi.width) if alibi else ()),
            *((t5.width, t5.heads) if t5 else ()),
        ]
        for spec in specs:
            if spec is not None:
                assert defaults[spec[0]] == spec[1], (model_type, spec)
        if table is not None and table.pad is not None:
            assert defaults["pad_token_id"] == table.pad, model_type
        mapped = {}
        for alias, target in getattr(cls, "attribute_map", {}).items():
            mapped.setdefault(target, set()).add(alias)
        read = {s[0] for s in specs if s}
        for key in read:
            aliases = set(family.other_names(key)) - {"n_embed"}  # n_embed: __post_init__
            assert aliases == mapped.get(key, set()), (model_type, key)


# --------------------------------------------------------------------------- ALiBi


def powers(n):
    """The exponent k of each slope (2^(-8/c))^k as BLOOM forms it: pow amplifies base rounding."""
    c = 2 ** int(math.floor(math.log2(n)))
    return torch.tensor(list(range(1, c + 1)) + list(range(1, 2 * (n - c), 2)), dtype=torch.float64)


@pytest.mark.peers
def test_alibi_slopes_of_bloom_mpt_and_falcon(hf):
    from transformers.models.bloom.modeling_bloom import _get_alibi_slopes
    from transformers.models.falcon.modeling_falcon import build_alibi_tensor as falcon_alibi
    from transformers.models.mpt.modeling_mpt import build_mpt_alibi_tensor

    for n in range(1, 130):
        ours = alibi_slopes(n, dtype=torch.float64)
        # BLOOM: float32 pow of a rounded float32 base; error grows with the power k
        bloom = _get_alibi_slopes(n, "cpu").double()
        assert (((bloom - ours) / ours).abs() <= (powers(n) + 1) * 2**-24).all(), n
        # MPT: 1 / 2^(h * 8/n') for the next power of two n', odd-indexed heads first: the same
        # slopes head by head, within three float32 roundings (exponent, power, reciprocal)
        mpt = -build_mpt_alibi_tensor(n, 2)[:, 0, 0].double()  # m * (0 - 1) at key 0 of 2
        assert (((mpt - ours) / ours).abs() <= 3 * 2**-24).all(), n
        # Falcon: BLOOM's float32 slopes rounded to bfloat16 (8 significant bits)
        falcon = falcon_alibi(torch.ones(1, 2, dtype=torch.long), n, torch.float32)[:, 0, 1]
        torch.testing.assert_close(falcon, bloom.float().bfloat16().float(), rtol=0, atol=0)
        assert (((falcon.double() - ours) / ours).abs() <= 2**-8).all(), n


def zero_query_and_key(fused: torch.nn.Linear, heads: int, per_head: bool) -> None:
    """Zero the query and key rows of a fused q/k/v projection, so that every q.k is 0."""
    with torch.no_grad():
        for tensor in (fused.weight, fused.bias):
            if tensor is None:
                continue
            if per_head:  # BLOOM, Falcon: (head, q/k/v, head_dim) blocks of rows
                tensor.view(heads, 3, -1, *tensor.shape[1:])[:, :2].zero_()
            else:  # MPT: all queries, then all keys, then all values
                tensor[: 2 * tensor.shape[0] // 3].zero_()


def alibi_probabilities(hf, model_type, heads, length, **extra):
    """Eager attention probabilities of a one-layer model whose q.k is 0: softmax(bias + mask)."""
    config = tiny_config(hf, model_type, **extra)
    config._attn_implementation = "eager"
    model = build(hf, config)
    fused = {"bloom": "query_key_value", "mpt": "Wqkv", "falcon": "query_key_value"}[model_type]
    layer = next(m for n, m in model.named_modules() if n.endswith(fused))
    zero_query_and_key(layer, heads, per_head=model_type != "mpt")
    ids = torch.randint(3, 90, (1, length), generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        out = model(input_ids=ids, output_attentions=True)
    return config, out.attentions[0][0].double()  # (heads, length, length)


@pytest.mark.peers
@pytest.mark.parametrize(
    "model_type, heads", [("bloom", 4), ("bloom", 12), ("mpt", 4), ("mpt", 12)]
)
def test_alibi_bias_after_softmax_is_ours(hf, model_type, heads):
    # BLOOM adds m * key_position, MPT m * (key - last key): ours plus a constant per query row,
    # which softmax removes. With q.k = 0 the probabilities are softmax(bias) alone.
    width = 8 * heads
    config, probabilities = alibi_probabilities(
        hf, model_type, heads, 9, hidden_size=width, n_head=heads, n_heads=heads
    )
    encoding = positional_encoding(config.to_dict())
    assert encoding.num_heads == heads and encoding.logit_scale == 1.0
    expected = torch.softmax(encoding.bias(9, 9), dim=-1)
    torch.testing.assert_close(probabilities, expected, rtol=0, atol=1e-6)


FALCON_RW = {"new_decoder_architecture": False, "multi_query": False, "parallel_attn": False}


@pytest.mark.peers
def test_falcon_bias_is_ours_over_sqrt_head_dim_in_bfloat16(hf, monkeypatch):
    """Falcon's SDPA path: the mask it passes holds alibi / sqrt(head_dim), built in bfloat16."""
    import torch.nn.functional as F

    config = tiny_config(
        hf, "falcon", alibi=True, hidden_size=64, num_attention_heads=4, **FALCON_RW
    )
    config._attn_implementation = "sdpa"
    model = build(hf, config)
    masks = []
    original = F.scaled_dot_product_attention

    def spy(q, k, v, attn_mask=None, **kwargs):
        masks.append(attn_mask)
        return original(q, k, v, attn_mask=attn_mask, **kwargs)

    monkeypatch.setattr(F, "scaled_dot_product_attention", spy)
    length = 300
    with torch.no_grad():
        model(input_ids=torch.randint(3, 90, (1, length)))
    mask = masks[0][0].double()  # (heads, length, length), -inf-like above the diagonal
    encoding = positional_encoding(config.to_dict())
    assert encoding.logit_scale == 1 / 4
    ours = encoding.bias(length, length)
    keep = torch.ones(length, length, dtype=torch.bool).tril()
    # theirs = ours + a constant per row: m * key / sqrt(d) = -m (i - j) / sqrt(d) + m i / sqrt(d)
    rows = encoding.slopes()[:, None] * torch.arange(length, dtype=torch.float64)[None, :]
    shifted = torch.where(keep, ours + rows[:, :, None], torch.zeros(()))
    theirs = torch.where(keep, mask, torch.zeros(()))
    # bfloat16 (8 significant bits, rounding 2**-8): the slope, the key position, the product
    close = (theirs - shifted).abs() <= 3 * 2**-8 * shifted.abs() + 1e-6
    assert bool(close.all())
    # exactly: Falcon's bias is bf16(bf16(slope) * bf16(key)), so keys past 256 share values
    slopes = encoding.slopes() / encoding.logit_scale  # 2^-2, 2^-4, 2^-6, 2^-8: exact in bf16
    key = torch.tensor([256.0, 257.0, 258.0, 259.0])
    exact = (slopes.float().bfloat16()[:, None] * key.bfloat16()[None, :]).float()
    torch.testing.assert_close(mask[:, -1, 256:260].float() * 4, exact, rtol=0, atol=1e-5)
    assert exact[0, 0] == exact[0, 1]  # key 257 is 256 in bfloat16


@pytest.mark.peers
def test_falcon_eager_path_adds_the_bias_twice(hf):
    """A transformers 5.23 defect, pinned: eager Falcon adds its ALiBi bias twice.

    Once to the logits and once with the mask, so its probabilities are softmax(2 * bias), where
    the SDPA path's are softmax(bias).
    """
    config, probabilities = alibi_probabilities(
        hf,
        "falcon",
        4,
        7,
        alibi=True,
        hidden_size=32,
        num_attention_heads=4,
        bias=True,
        **FALCON_RW,
    )
    bias = positional_encoding(config.to_dict()).bias(7, 7)
    torch.testing.assert_close(probabilities, torch.softmax(2 * bias, -1), rtol=0, atol=1e-6)
    assert not torch.allclose(probabilities, torch.softmax(bias, -1), atol=1e-3)


# --------------------------------------------------------------------------- T5


T5_FAMILIES = [t for t, f in ENCODING_FAMILIES.items() if f.encoding == "t5"]


@pytest.mark.peers
@pytest.mark.parametrize("model_type", T5_FAMILIES)
def test_t5_buckets_are_each_familys(hf, model_type):
    config = tiny_config(
        hf, model_type, num_layers=2, num_decoder_layers=2, relative_attention_max_distance=100
    )
    model = build(hf, config)
    encoding = positional_encoding(config.to_dict())
    with_bias = [
        (n, m) for n, m in model.named_modules() if getattr(m, "has_relative_attention_bias", False)
    ]
    per_stack = {n.split(".")[0] for n, _ in with_bias}
    assert per_stack == {"encoder", "decoder"}
    assert (len(with_bias) == 4) == encoding.per_layer  # one per layer, or one per stack
    for name, module in with_bias:
        local = "Local" in type(module).__name__ or "Global" in type(module).__name__
        if not local:  # T5 does not scale its logits by 1/sqrt(d)
            assert module.scaling == 1.0
        weight = module.relative_attention_bias.weight
        with torch.no_grad():  # bias value = bucket index, for every head
            weight.copy_(
                torch.arange(weight.shape[0], dtype=weight.dtype)[:, None].expand_as(weight)
            )
        if local:
            block = 7  # LongT5's encoder: keys in the blocks around the query's
            theirs = module.compute_bias(block)[0, 0, 0].long()
            memory = torch.arange(3 * block)
            relative = memory[None, :] - memory[block:-block][:, None]
        else:
            theirs = module.compute_bias(260, 260)[0, 0].long()
            relative = relative_positions(260, 260)
        ours = encoding.buckets(relative, bidirectional=not module.is_decoder)
        assert torch.equal(theirs, ours), (model_type, name)


@pytest.mark.peers
def test_t5_bucket_function_over_its_arguments(hf):
    from transformers.models.t5.modeling_t5 import T5Attention

    relative = torch.arange(-600, 601)
    for buckets, distance in [(32, 128), (32, 64), (64, 256), (8, 20), (4, 3)]:
        for bidirectional in (True, False):
            theirs = T5Attention._relative_position_bucket(
                relative, bidirectional=bidirectional, num_buckets=buckets, max_distance=distance
            )
            ours = T5Buckets("t5", "", buckets, distance, 1).buckets(
                relative, bidirectional=bidirectional
            )
            assert torch.equal(theirs, ours), (buckets, distance, bidirectional)


# --------------------------------------------------------------------------- NoPE, relative_key


NOPE_MODELS = {
    "nemotron_h": {
        "layers_block_type": ["linear_attention", "full_attention"],
        "mamba_num_heads": 4,
        "mamba_head_dim": 8,
        "n_groups": 1,
        "ssm_state_size": 8,
        "num_key_value_heads": 2,
        "head_dim": 8,
    },
    "jamba": {
        "num_hidden_layers": 2,
        "attn_layer_period": 2,
        "attn_layer_offset": 1,
        "num_key_value_heads": 2,
        "num_experts": 1,
        "mamba_d_state": 8,
        "mamba_dt_rank": 4,
        "use_mamba_kernels": False,
    },
}
GRANITE = {
    "num_hidden_layers": 2,
    "layer_types": ["linear_attention", "full_attention"],
    "num_key_value_heads": 2,
    "mamba_n_heads": 4,
    "mamba_d_head": 16,
    "mamba_d_state": 8,
    "num_local_experts": 2,
    "num_experts_per_tok": 1,
    "shared_intermediate_size": 32,
}


def attention_layers(model):
    return [
        m
        for m in model.modules()
        if type(m).__name__.endswith("Attention") and hasattr(m, "q_proj")
    ]


@pytest.mark.peers
@pytest.mark.parametrize("model_type", list(NOPE_MODELS))
def test_nope_attention_ignores_any_position_it_is_offered(hf, model_type):
    config = tiny_config(hf, model_type, **NOPE_MODELS[model_type])
    assert positional_encoding(config.to_dict()).kind == "nope"
    model = build(hf, config)
    layers = attention_layers(model)
    assert len(layers) == 1
    hidden = 10 * torch.randn(1, 5, config.hidden_size, generator=torch.Generator().manual_seed(1))
    outputs = []
    for positions in (torch.arange(5)[None], 7 * torch.arange(5)[None] + 3):
        angles = positions[..., None].double() * 0.5 ** torch.arange(8.0)  # (1, 5, head_dim)
        offered = (angles.cos().float(), angles.sin().float())
        with torch.no_grad():
            out = layers[0](
                hidden, attention_mask=None, position_ids=positions, position_embeddings=offered
            )
        outputs.append(out[0])
    assert torch.equal(outputs[0], outputs[1])
    names = [n for n, _ in [*model.named_parameters(), *model.named_buffers()]]
    assert not [n for n in names if "rotary" in n or "inv_freq" in n or "position" in n]


@pytest.mark.peers
@pytest.mark.parametrize("kind, given", [("nope", None), ("rope", "rope")])
def test_granite_hybrid_passes_positions_only_with_rope(hf, kind, given):
    config = tiny_config(hf, "granitemoehybrid", position_embedding_type=given, **GRANITE)
    model = build(hf, config)
    received = []
    for layer in attention_layers(model):
        layer.register_forward_pre_hook(
            lambda m, args, kwargs: received.append(kwargs.get("position_embeddings")),
            with_kwargs=True,
        )
    with torch.no_grad():
        model(input_ids=torch.randint(3, 90, (1, 6)), use_cache=False)
    assert len(received) == 1
    assert (received[0] is None) == (kind == "nope")
    if kind == "nope":
        assert positional_encoding(config.to_dict()).kind == "nope"


@pytest.mark.peers
@pytest.mark.parametrize("model_type", ["mamba", "mamba2", "falcon_mamba"])
def test_state_space_models_have_no_attention_and_no_positions(hf, model_type):
    import inspect

    config = tiny_config(hf, model_type, state_size=8, num_heads=8, head_dim=8, n_groups=1)
    model = build(hf, config)
    assert not [m for m in model.modules() if "Attention" in type(m).__name__]
    assert "position_ids" not in inspect.signature(model.forward).parameters
    names = [n for n, _ in [*model.named_parameters(), *model.named_buffers()]]
    assert not [n for n in names if "rotary" in n or "inv_freq" in n or "position" in n]
    assert positional_encoding(config.to_dict()).attention_layers == 0


@pytest.mark.peers
def test_transformers_5_runs_relative_key_configs_with_absolute_embeddings(hf):
    absolute = build(hf, tiny_config(hf, "bert"))
    relative = build(hf, tiny_config(hf, "bert", position_embedding_type="relative_key_query"))
    names = lambda model: sorted(n for n, _ in model.named_parameters())  # noqa: E731
    assert names(relative) == names(absolute)  # no distance table: the key is not read
    assert any("position_embeddings" in n for n in names(relative))
    assert positional_encoding(relative.config.to_dict()).kind == "relative_key"
