"""Sparse attention's RoPE: DeepSeek-V4's compressed keys, and the lightning indexers' second spec.

The positions rule is checked by hypothesis properties (a query and a compressed key score as a
function of their distance only; a visible block ends at or before the query); the reading of
DeepSeek-V4's configs (both forms, the two tables per layer type) by its config class's own
objects; and every indexer's spec against transformers' own indexer, whose rotated queries and
keys are recorded inside its forward pass (tiny sizes, random weights, nothing downloaded).
The compressed keys of the attention itself are compared by the sweep and the corpus
(tests/hf_sweep/compare.py: ``compressed_keys``).
"""

from __future__ import annotations

import contextlib
import copy
import dataclasses
import json
import math
import warnings

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from posenc_ref import RotaryEmbedding
from posenc_ref.models import (
    compressed_key_positions,
    layer_specs,
    rope_spec,
    rotate_back,
    rotate_compressed_keys,
    visible_blocks,
)

F64 = torch.float64
ULP = 2.0**-24
CSA, HCA, SWA = "compressed_sparse_attention", "heavily_compressed_attention", "sliding_attention"

# DeepSeek-V4-Flash's config.json (deepseek-ai/DeepSeek-V4-Flash; the corpus copy is
# ai-dynamo/aiconfigurator aic-core/src/aiconfigurator_core/model_configs/
# deepseek-ai--DeepSeek-V4-Flash_config.json @ 095f58a51c4c), its RoPE keys and four layers
V4_FLASH = {
    "model_type": "deepseek_v4", "head_dim": 512, "qk_rope_head_dim": 64, "hidden_size": 4096,
    "num_attention_heads": 64, "num_hidden_layers": 4, "max_position_embeddings": 1048576,
    "rope_theta": 10000, "compress_rope_theta": 160000, "compress_ratios": [0, 0, 4, 128, 0],
    "rope_scaling": {"beta_fast": 32, "beta_slow": 1, "factor": 16,
                     "original_max_position_embeddings": 65536, "type": "yarn"},
    "index_head_dim": 128, "index_n_heads": 64, "index_topk": 512, "sliding_window": 128,
}  # fmt: skip
# DeepSeek-V3.2's (deepseek-ai/DeepSeek-V3.2; corpus: the same repository's
# deepseek-ai--DeepSeek-V3.2_config.json @ 095f58a51c4c)
V32 = {
    "model_type": "deepseek_v32", "qk_rope_head_dim": 64, "qk_nope_head_dim": 128,
    "index_head_dim": 128, "index_n_heads": 64, "max_position_embeddings": 163840,
    "rope_theta": 10000, "rope_scaling": {"beta_fast": 32, "beta_slow": 1, "factor": 40,
    "mscale": 1.0, "mscale_all_dim": 1.0, "original_max_position_embeddings": 4096,
    "type": "yarn"},
}  # fmt: skip
# GLM-5's (zai-org/GLM-5; corpus: zai-org--GLM-5_config.json @ 095f58a51c4c)
GLM5 = {
    "model_type": "glm_moe_dsa", "qk_rope_head_dim": 64, "qk_nope_head_dim": 192,
    "index_head_dim": 128, "index_n_heads": 32, "max_position_embeddings": 202752,
    "rope_interleave": True, "indexer_rope_interleave": True,
    "rope_parameters": {"rope_theta": 1000000, "rope_type": "default"},
}  # fmt: skip


# --------------------------------------------------------------------------- the positions rule


@given(st.integers(0, 5000), st.integers(1, 300), st.integers(0, 40))
def test_one_compressed_key_per_complete_block_at_its_first_token(tokens, rate, blocks_before):
    """p_b = s + b r: one key per complete block, each at its block's first token."""
    start = blocks_before * rate
    p = compressed_key_positions(tokens, rate, start=start)
    assert p.shape == (tokens // rate,) and p.dtype == torch.int64
    assert torch.equal(p, start + rate * torch.arange(tokens // rate))
    # every key's block lies inside the tokens compressed in this call
    assert all(start <= int(q) and int(q) + rate <= start + tokens for q in p)


@given(st.integers(0, 10**6), st.integers(1, 512))
def test_a_query_sees_the_blocks_that_end_at_or_before_it(m, rate):
    """A query at m sees block b exactly when b < floor((m + 1) / r): the block has ended."""
    seen = int(visible_blocks(torch.tensor(m), rate))
    assert seen * rate - 1 <= m < (seen + 1) * rate - 1
    if seen:  # the nearest visible key is at least r - 1 positions back
        assert m - int(compressed_key_positions(seen * rate, rate)[-1]) >= rate - 1


def _v4_module(layer_type: str) -> RotaryEmbedding:
    spec = rope_spec(V4_FLASH, layer_type=layer_type)
    return RotaryEmbedding.from_spec(spec)


@settings(max_examples=40, deadline=None)
@given(
    st.sampled_from([CSA, HCA]), st.integers(0, 200), st.integers(0, 200),
    st.integers(1, 3000), st.integers(0, 2**31),
)  # fmt: skip
def test_a_query_and_a_compressed_key_score_by_their_distance(layer_type, m, b, shift, seed):
    """q(m) . k_b(s + b r) depends on m - (s + b r) only: shifting both by t r changes nothing."""
    module = _v4_module(layer_type)
    rate = module.spec.compressed_keys.rate
    gen = torch.Generator().manual_seed(seed)
    q = torch.randn(1, 1, 64, dtype=F64, generator=gen)
    k = torch.randn(1, 1, 64, dtype=F64, generator=gen)

    def score(query_at: int, start: int) -> float:
        keys = k.expand(1, b + 1, 64)  # blocks 0..b; block b is the one scored
        rotated = rotate_compressed_keys(module, keys, start=start)[:, -1:]
        q_rot = module(q, q, torch.tensor([query_at]))[0]
        return float((q_rot * rotated).sum())

    before = score(m + b * rate, 0)
    after = score(m + b * rate + shift * rate, shift * rate)
    assert math.isclose(before, after, rel_tol=1e-9, abs_tol=1e-9)


@settings(max_examples=30, deadline=None)
@given(st.sampled_from([SWA, CSA, HCA]), st.integers(0, 2**31), st.integers(0, 10**6))
def test_rotating_back_undoes_the_rotation(layer_type, seed, position):
    """K = V: the output's rotated part turned back at the query position is the value as it was."""
    module = _v4_module(layer_type)
    x = torch.randn(3, 64, dtype=F64, generator=torch.Generator().manual_seed(seed))
    positions = torch.tensor([position, position + 1, 7])
    rotated = module(x, x, positions)[0]
    assert torch.allclose(rotate_back(module, rotated, positions), x, atol=1e-12)


def test_bad_input_to_the_positions_rule_is_named():
    with pytest.raises(ValueError, match="rate"):
        compressed_key_positions(8, 0)
    with pytest.raises(TypeError, match="num_tokens"):
        compressed_key_positions(8.0, 4)
    with pytest.raises(TypeError, match="integers"):
        visible_blocks(torch.tensor([1.5]), 4)
    with pytest.raises(ValueError, match=">= 0"):
        visible_blocks(torch.tensor([-1]), 4)
    sliding = _v4_module(SWA)
    with pytest.raises(ValueError, match="no compressed keys"):
        rotate_compressed_keys(sliding, torch.zeros(2, 64))


# --------------------------------------------------------------------------- DeepSeek-V4's reading


def _v4_object(raw: dict):
    transformers = pytest.importorskip("transformers")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return transformers.DeepseekV4Config.from_dict(copy.deepcopy(raw))


@pytest.mark.parametrize("form", ["dict", "object"])
def test_deepseek_v4_layer_types_use_two_tables(form):
    """Sliding layers: 'main' (default, base 1e4); CSA and HCA: 'compress' (YaRN, base 1.6e5)."""
    config = V4_FLASH if form == "dict" else _v4_object(V4_FLASH)
    specs = layer_specs(config)
    assert [s.layer_type for s in specs] == [SWA, SWA, CSA, HCA]
    main, csa, hca = specs[0], specs[2], specs[3]
    assert (main.table, main.rope_type, main.base, main.compressed_keys) == (
        "main", "default", 10000.0, None)  # fmt: skip
    for spec, rate, window in ((csa, 4, 8), (hca, 128, 128)):
        assert (spec.table, spec.rope_type, spec.base, spec.factor) == (
            "compress", "yarn", 160000.0, 16.0)  # fmt: skip
        assert spec.attention_factor == 1.0  # forced by the config class, not 0.1 ln 16 + 1
        assert (spec.compressed_keys.rate, spec.compressed_keys.window) == (rate, window)
    for spec in (main, csa, hca):  # the last 64 of a 512 head, pairs (2i, 2i+1) in and out
        assert (spec.head_dim, spec.nope_dim, spec.layout, spec.output_layout) == (
            64, 448, "interleaved", "interleaved")  # fmt: skip
        assert spec.values_rotated
    assert csa.indexer is not None and main.indexer is None and hca.indexer is None


def test_deepseek_v4_frequencies_are_its_rotary_modules():
    """The tables' frequencies are DeepseekV4RotaryEmbedding's, per table."""
    pytest.importorskip("transformers")
    from transformers.models.deepseek_v4.modeling_deepseek_v4 import DeepseekV4RotaryEmbedding

    hf = DeepseekV4RotaryEmbedding(_v4_object(V4_FLASH))
    for layer_type, table in ((SWA, "main"), (CSA, "compress")):
        spec = rope_spec(V4_FLASH, layer_type=layer_type)
        theirs = getattr(hf, f"{table}_inv_freq").to(F64)
        assert torch.allclose(spec.inv_freq, theirs, rtol=ULP * (math.log(spec.base) + 8))
        assert spec.attention_factor == getattr(hf, f"{table}_attention_scaling")


def test_deepseek_v4_legacy_rates_and_refusals():
    legacy = {**V4_FLASH, "compress_rate_csa": 8}
    assert rope_spec(legacy, layer_type=CSA).compressed_keys.rate == 8
    given_rates = {**V4_FLASH, "compress_rates": {CSA: 16, HCA: 64}}
    assert rope_spec(given_rates, layer_type=HCA).compressed_keys.rate == 64
    with pytest.raises(ValueError, match="sliding_attention: 'main'.*pass layer_type="):
        rope_spec(V4_FLASH)
    with pytest.raises(ValueError, match="compress_ratios must list"):
        rope_spec({**V4_FLASH, "compress_ratios": [0, 3, 4, 128]}, layer_type=CSA)
    with pytest.raises(ValueError, match="full_attention"):
        rope_spec(V4_FLASH, layer_type="full_attention")


# --------------------------------------------------------------------------- the indexers


@contextlib.contextmanager
def indexer_calls(family: str, indexer_class: str, function: str):
    """Record ``function``'s arguments and results while the family's indexer runs."""
    from tests.hf_sweep import harness

    mod = harness.modeling(family)
    original, cls = getattr(mod, function), getattr(mod, indexer_class)
    forward = cls.forward
    calls: list[tuple[tuple, object]] = []

    def recorded(*args, **kwargs):
        out = original(*args, **kwargs)
        calls.append((args, out))
        return out

    def indexer_forward(self, *args, **kwargs):
        setattr(mod, function, recorded)
        try:
            return forward(self, *args, **kwargs)
        finally:
            setattr(mod, function, original)

    cls.forward = indexer_forward
    try:
        yield calls
    finally:
        cls.forward = forward


def tiny_model(raw: dict, class_names: tuple[str, str], overrides: dict, family: str = ""):
    """The family's tiny model (seed 0) from the released RoPE keys, and its config."""
    transformers = pytest.importorskip("transformers")
    from tests.hf_sweep import harness

    config_class, model_class = (getattr(transformers, n) for n in class_names)
    family = family or raw["model_type"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        default = config_class.from_dict(copy.deepcopy(raw))
        _, config, _, _ = harness.tiny_config(config_class, family, overrides, default=default)
    return harness.build(model_class, config), config


def run(model, family: str, positions: torch.Tensor) -> None:
    from tests.hf_sweep import harness

    ids = torch.randint(3, 100, positions.shape, generator=torch.Generator().manual_seed(1))
    with torch.no_grad(), harness.Recorder(model):
        harness.forward(model, family, ids, positions)


def ours(spec, x: torch.Tensor, positions: torch.Tensor) -> torch.Tensor:
    """``x`` ``(..., seq, width)`` rotated by the spec, its ``nope_dim`` part first and kept."""
    module = RotaryEmbedding.from_spec(spec)
    x = x.to(F64)
    nope = spec.nope_dim
    return torch.cat([x[..., :nope], module(x[..., nope:], x[..., nope:], positions)[0]], -1)


def within(mine: torch.Tensor, theirs: torch.Tensor, positions, spec) -> float:
    """The max over positions of |ours - theirs| / the float32-angle bound at that position.

    ``(..., seq, width)`` both; the bound is tests/test_models_hf.py's.
    """
    scale = float(theirs.abs().max()) * max(1.0, spec.attention_factor)
    per = ULP * (positions.to(F64) + 1) * (math.log(spec.base) + 10) * 2 * scale + 16 * ULP * scale
    diff = (mine - theirs.to(F64)).abs().flatten(0, -3).amax(dim=(0, 2))  # (seq,)
    return float((diff / per).max())


def flipped(spec):
    """The spec with the other pair layout, in and out."""
    other = {"half": "interleaved", "interleaved": "half"}
    return dataclasses.replace(
        spec, layout=other[spec.layout], output_layout=other[spec.output_layout]
    )


# dots3_note's config class defaults (configuration_dots3_note.py: DSA layers rope_theta 8e7,
# qk_rope_head_dim 64 of head_dim 256, index_head_dim 128), its text part read alone
DOTS3 = {
    "model_type": "dots3_note_text",
    "num_hidden_layers": 2,
    "layer_types": ["indexed_attention", "sliding_attention"],
}
MLA_INDEXERS = {
    # family: (config, (config class, model class), indexer class, its rotation function,
    # the layer type with the indexer)
    "deepseek_v32": (V32, ("DeepseekV32Config", "DeepseekV32ForCausalLM"),
                     "DeepseekV32Indexer", "apply_rotary_pos_emb", None),
    "glm_moe_dsa": (GLM5, ("GlmMoeDsaConfig", "GlmMoeDsaForCausalLM"),
                    "GlmMoeDsaIndexer", "apply_rotary_pos_emb_interleave", None),
    "dots3_note": (DOTS3, ("Dots3NoteTextConfig", "Dots3NoteTextModel"),
                   "Dots3NoteTextIndexer", "apply_rotary_pos_emb_interleave",
                   "indexed_attention"),
}  # fmt: skip


@pytest.mark.peers
@pytest.mark.parametrize("family", sorted(MLA_INDEXERS))
def test_the_indexer_spec_is_the_family_indexers_rotation(family):
    """DeepSeek-V3.2 (half), GLM-5 and dots3_note (interleaved in, half out): rope part first.

    The indexer's query head (``wq_b``'s output) and key head (``k_norm``'s) are recorded, and
    the rotation function's arguments must be their first 64 coordinates (the placement); the
    spec's rotation of the whole heads must give the function's results there and leave the
    rest as it was, within the float32-angle bound, and the other layout must not.
    """
    raw, classes, indexer_class, function, layer_type = MLA_INDEXERS[family]
    overrides = {"index_n_heads": 2, "index_topk": 4}
    model, config = tiny_model(raw, classes, overrides, family)
    spec = rope_spec(raw, layer_type=layer_type).indexer
    rope, head = raw.get("qk_rope_head_dim", 64), raw.get("index_head_dim", 128)
    assert (spec.head_dim, spec.rotary_dim, spec.nope_dim) == (head, rope, 0)
    heads: dict[str, torch.Tensor] = {}
    indexers = [m for m in model.modules() if type(m).__name__ == indexer_class]
    indexer = indexers[0]  # the first layer's: the first call recorded
    indexer.wq_b.register_forward_hook(lambda m, a, out: heads.__setitem__("q", out))
    indexer.k_norm.register_forward_hook(lambda m, a, out: heads.__setitem__("k", out))
    original = raw.get("rope_scaling", {}).get("original_max_position_embeddings", 4096)
    longest = raw.get("max_position_embeddings", 524_288)
    positions = torch.tensor([0, 1, 2, 7, 100, original - 1, original, 2 * original + 3,
                              longest - 1])  # fmt: skip
    with indexer_calls(family, indexer_class, function) as calls:
        run(model, family, positions[None])
    assert len(calls) == len(indexers)
    (q_in, k_in, *_), (q_out, k_out) = calls[0]
    q_head = heads["q"].view(1, len(positions), -1, head)  # (batch, seq, heads, head)
    k_head = heads["k"][:, :, None]
    assert torch.equal(q_in, q_head[..., :rope]) and torch.equal(k_in, k_head[..., :rope])
    for spec_used, agrees in ((spec, True), (flipped(spec), False)):
        for whole, out in ((q_head, q_out), (k_head, k_out)):  # (batch, seq, heads, width)
            whole, out = whole.transpose(1, 2), out.transpose(1, 2)
            mine = ours(spec_used, whole, positions)
            assert torch.equal(mine[..., rope:], whole[..., rope:].to(F64))
            ratio = within(mine[..., :rope], out, positions, spec)
            assert (ratio <= 1) if agrees else (ratio > 100), (spec_used.layout, ratio)


@pytest.mark.peers
def test_deepseek_v4s_indexer_spec_is_its_indexers_rotation():
    """DeepSeek-V4's CSA indexer: the 'compress' table on the last 64 of 128, interleaved.

    Its compressed keys at their blocks' first token positions (``rotate_compressed_keys``),
    its queries at the tokens' positions; the other layout must not agree.
    """
    raw = {**V4_FLASH, "compress_ratios": [4, 128], "num_hidden_layers": 2}
    overrides = {"index_n_heads": 2, "index_topk": 4, "q_lora_rank": 16, "o_groups": 2,
                 "o_lora_rank": 16, "layer_types": [CSA, HCA], "_layers": 2}  # fmt: skip
    model, config = tiny_model(raw, ("DeepseekV4Config", "DeepseekV4ForCausalLM"), overrides)
    assert config.layer_types[0] == CSA
    layer = rope_spec(raw, layer_type=CSA)
    spec, rate = layer.indexer, layer.compressed_keys.rate
    assert (spec.head_dim, spec.rotary_dim, spec.nope_dim, spec.layout) == (
        64, 64, 64, "interleaved")  # fmt: skip
    seq = 40
    positions = torch.arange(seq)
    with indexer_calls("deepseek_v4", "DeepseekV4Indexer", "apply_rotary_pos_emb") as calls:
        run(model, "deepseek_v4", positions[None])
    (keys_in, *_), keys_out = calls[0]  # (batch, 1, blocks, 128)
    (q_in, *_), q_out = calls[1]  # (batch, heads, seq, 128)
    assert keys_in.shape[-2] == seq // rate
    block_positions = compressed_key_positions(seq, rate)
    for spec_used, agrees in ((spec, True), (flipped(spec), False)):
        # the indexer's keys follow its layer's rule: the spec with the layer's compressed keys
        with_rule = dataclasses.replace(spec_used, compressed_keys=layer.compressed_keys)
        module = RotaryEmbedding.from_spec(with_rule)
        nope = spec.nope_dim
        keys = keys_in.to(F64)
        mine_k = torch.cat([keys[..., :nope], rotate_compressed_keys(module, keys[..., nope:])], -1)
        mine_q = ours(spec_used, q_in, positions)
        ratios = (within(mine_k, keys_out, block_positions, spec),
                  within(mine_q, q_out, positions, spec))  # fmt: skip
        assert (max(ratios) <= 1) if agrees else (min(ratios) > 100), (spec_used.layout, ratios)


@pytest.mark.peers
def test_rotate_back_is_deepseek_v4s_turn_of_the_output():
    """``rotate_back`` equals DeepSeek-V4's ``apply_rotary_pos_emb(out, cos, -sin)``."""
    pytest.importorskip("transformers")
    from transformers.models.deepseek_v4 import modeling_deepseek_v4 as v4

    hf = v4.DeepseekV4RotaryEmbedding(_v4_object(V4_FLASH))
    positions = torch.tensor([0, 1, 100, 65535, 70000, 262143])
    x = torch.randn(1, 2, len(positions), 512, generator=torch.Generator().manual_seed(3))
    for layer_type, table in ((SWA, "main"), (HCA, "compress")):
        cos, sin = hf(x, positions[None], layer_type=table)
        theirs = v4.apply_rotary_pos_emb(x, cos, -sin)  # (batch, heads, seq, width), as there
        spec = rope_spec(V4_FLASH, layer_type=layer_type)
        module = RotaryEmbedding.from_spec(spec)
        mine = torch.cat([x[..., :448].to(F64), rotate_back(module, x[..., 448:], positions)], -1)
        assert within(mine, theirs, positions, spec) <= 1


# --------------------------------------------------------------------------- inspect


def test_inspect_names_each_layer_types_table_compressed_keys_and_indexer(tmp_path, capsys):
    """The text: per layer type its table, the compressed keys' rule, K = V, the indexer."""
    from posenc_ref.__main__ import main

    path = tmp_path / "config.json"
    path.write_text(json.dumps(V4_FLASH))
    assert main(["inspect", str(path)]) == 0
    text = capsys.readouterr().out
    blocks = text.split("-" * 76)
    assert len(blocks) == 3  # sliding, CSA, HCA: one RoPE each
    kinds = zip(blocks, ("main", "compress", "compress"), (None, 4, 128), strict=True)
    for block, table, rate in kinds:
        assert f"table:      rope_parameters['{table}']" in block
        assert ("compressed:" in block) is (rate is not None)
        if rate is not None:
            assert f"block of {rate} tokens" in block and f"s + {rate} b" in " ".join(block.split())
        assert "values:" in block
    assert [("indexer:" in b) for b in blocks] == [False, True, False]
    assert "128 coordinates, 64 without position, then the 64 rotated ones" in " ".join(
        blocks[1].split()
    )


@pytest.mark.parametrize(
    "config, layer, indexer",
    [
        (V4_FLASH, 1, {"head_dim": 64, "nope_dim": 64, "layout": "interleaved"}),
        (V32, 0, {"head_dim": 128, "rotary_dim": 64, "nope_dim": 0, "layout": "half"}),
        (GLM5, 0, {"head_dim": 128, "rotary_dim": 64, "layout": "interleaved",
                   "output_layout": "half"}),
    ],
)  # fmt: skip
def test_inspect_json_writes_the_indexer_as_a_second_spec(tmp_path, capsys, config, layer, indexer):
    """``--json``: ``indexer`` is a ropeSpec of its own; the output validates against the schema."""
    jsonschema = pytest.importorskip("jsonschema")
    from posenc_ref.__main__ import main
    from posenc_ref.cli import json_schema

    path = tmp_path / "config.json"
    path.write_text(json.dumps(config))
    assert main(["inspect", str(path), "--json"]) == 0
    document = json.loads(capsys.readouterr().out)
    jsonschema.Draft202012Validator(json_schema()).validate(document)
    spec = document["encoding"]["rope"][layer]
    assert {k: spec["indexer"][k] for k in indexer} == indexer
    assert len(spec["indexer"]["pairs"]) == 32 and spec["indexer"]["indexer"] is None
    if config is V4_FLASH:
        assert spec["table"] == "compress" and spec["values_rotated"]
        assert spec["compressed_keys"]["rate"] == 4 and spec["compressed_keys"]["window"] == 8


@pytest.mark.parametrize(
    "given",
    [
        {"rope_parameters": {"rope_type": "yarn", "rope_theta": 20000.0, "factor": 16.0,
                             "original_max_position_embeddings": 65536},
         "compress_ratios": [0, 128, 4]},
        {"rope_theta": 30000.0, "compress_rope_theta": 50000.0, "partial_rotary_factor": 0.25},
        {"compress_ratios": [0, 4, 128], "rope_scaling": {"rope_type": "linear", "factor": 2.0}},
    ],
)  # fmt: skip
def test_deepseek_v4_tables_are_built_as_its_config_class_builds_them(given):
    """Each layer type's spec has the base, type and width of the class's table for it."""
    raw = {"model_type": "deepseek_v4", "num_hidden_layers": 3, **given}
    hf = _v4_object(raw)
    for layer_type in dict.fromkeys(hf.layer_types):
        table = "main" if layer_type == SWA else "compress"
        expected = hf.rope_parameters[table]
        for config in (raw, hf):
            spec = rope_spec(config, layer_type=layer_type)
            assert (spec.table, spec.base, spec.rope_type) == (
                table, expected["rope_theta"], expected["rope_type"])  # fmt: skip
            assert spec.rotary_dim == int(512 * expected["partial_rotary_factor"])
            assert spec.attention_factor == expected.get("attention_factor", 1.0)
