"""The lightning indexers of Mistral Large 4, HY-V4, AXK2 and MiniMax-M3-VL (issue 40).

transformers 5.23 runs each with a rotated indexer beside the attention: its own query and key
heads (``index_head_dim`` wide) with a part rotated by the layer's cos and sin. The spec of a
layer with one holds the indexer's RoPE as ``spec.indexer``; here each family's tiny model runs
(random weights, nothing downloaded), the indexer's rotation function is recorded inside its
forward pass, and the spec must rotate the same inputs to the same outputs within the
float32-angle bound (the other pair layout must not), its rotated part where the code splits it.
Mistral Large 4's indexer turns by the LeRoPE-scaled frequencies of its layer.
"""

from __future__ import annotations

import dataclasses

import pytest
import torch

from posenc_ref.models import rope_spec
from tests.corpus.check import RUN_ATTRS
from tests.hf_sweep.harness import module_attrs
from tests.test_sparse_attention import F64, flipped, indexer_calls, ours, run, tiny_model, within

pytestmark = pytest.mark.peers

ALPHA = torch.linspace(-0.3, 0.4, 32)
FAMILIES = {
    # family: (its config's RoPE keys, (config class, model class), the indexer class, its
    # rotation function, the module whose output is the query head, the key head's, the layer
    # type, where the rotated part is, lerope_alpha)
    "mistral_large4": (
        {"model_type": "mistral_large4_text", "num_hidden_layers": 2, "no_rope_layers": [1, 1],
         "index_head_dim": 128, "qk_rope_head_dim": 64},
        ("MistralLarge4TextConfig", "MistralLarge4TextModel"), "MistralLarge4TextIndexer",
        "apply_rotary_pos_emb_interleave", "softmax_scaling", "k_norm", None, "first", ALPHA,
    ),
    "hy_v4": (
        {"model_type": "hy_v4", "num_hidden_layers": 2, "index_head_dim": 128,
         "qk_rope_head_dim": 64, "rope_theta": 10000.0},
        ("HYV4Config", "HYV4ForCausalLM"), "HYV4Indexer", "apply_rotary_pos_emb", "wq_b",
        "k_norm", None, "last", None,
    ),
    "axk2": (
        {"model_type": "axk2", "num_hidden_layers": 2, "index_head_dim": 128,
         "qk_rope_head_dim": 32},
        ("AXK2Config", "AXK2ForCausalLM"), "AXK2Indexer", "apply_rotary_pos_emb", "wq_b",
        "k_norm", None, "first", None,
    ),
    "minimax_m3_vl": (
        {"model_type": "minimax_m3_vl_text", "num_hidden_layers": 2, "head_dim": 128,
         "partial_rotary_factor": 0.5, "rope_theta": 5000000.0,
         "sparse_attention_config": {"sparse_attention_freq": [1, 1], "sparse_index_dim": 96},
         "layer_types": ["minimax_m3_sparse"] * 2},
        ("MiniMaxM3VLTextConfig", "MiniMaxM3VLTextModel"), "MiniMaxM3VLIndexer",
        "apply_rotary_pos_emb", "q_norm", "k_norm", "minimax_m3_sparse", "first", None,
    ),
}  # fmt: skip

OVERRIDES = {"index_n_heads": 2, "index_topk": 4, "index_topk_blocks": 2, "index_block_size": 4}


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_the_indexer_spec_is_the_family_indexers_rotation(family):
    raw, classes, indexer_class, function, q_module, k_module, layer_type, place, alpha = FAMILIES[
        family
    ]
    lists = {"layer_types": raw["layer_types"], "_layers": 2} if "layer_types" in raw else {}
    model, config = tiny_model(raw, classes, {**OVERRIDES, **lists}, family)
    if alpha is not None:  # the checkpoint's LeRoPE values, in the model
        for module in model.modules():
            if hasattr(module, "alpha") and isinstance(module.alpha, torch.Tensor):
                module.alpha.copy_(alpha)
    spec = rope_spec(raw, layer_type=layer_type, lerope_alpha=alpha).indexer
    assert spec is not None
    rope = spec.rotary_dim
    heads: dict[str, torch.Tensor] = {}
    indexer = next(m for m in model.modules() if type(m).__name__ == indexer_class)
    getattr(indexer, q_module).register_forward_hook(lambda m, a, out: heads.setdefault("q", out))
    getattr(indexer, k_module).register_forward_hook(lambda m, a, out: heads.setdefault("k", out))
    positions = torch.tensor([0, 1, 2, 7, 100, 511, 4096, 9000, 70000])
    # MiniMax's indexer keeps the query's own key block, found from its position among the
    # call's blocks: at positions past the call's length it indexes out of range, so the run
    # keeps none by force, as the corpus check does (it only selects keys)
    attrs = RUN_ATTRS.get(family, ({}, ""))[0]
    with indexer_calls(family, indexer_class, function) as calls, module_attrs(model, attrs):
        run(model, family, positions[None])
    (q_in, k_in, *_), (q_out, k_out) = calls[0]
    width = spec.head_dim + spec.nope_dim
    q_head = heads["q"].reshape(1, len(positions), -1, width)  # (batch, seq, heads, width)
    k_head = heads["k"].reshape(1, len(positions), -1, width)
    if family == "minimax_m3_vl":  # the whole heads, (batch, heads, seq, width): split inside
        assert torch.equal(q_in, q_head.transpose(1, 2)) and torch.equal(
            k_in, k_head.transpose(1, 2)
        )
        assert (spec.head_dim, spec.rotary_dim, spec.nope_dim) == (96, 64, 0)
        pairs = [(q_in, q_out), (k_in, k_out)]
    else:  # the rotated part the code splits off, (batch, seq, heads, rope)
        part = slice(None, rope) if place == "first" else slice(width - rope, None)
        assert torch.equal(q_in, q_head[..., part]) and torch.equal(k_in, k_head[..., part])
        assert spec.nope_dim == (width - rope if place == "last" else 0)
        pairs = [(q_in.transpose(1, 2), q_out.transpose(1, 2)),
                 (k_in.transpose(1, 2), k_out.transpose(1, 2))]  # fmt: skip
    # the part the function rotates (MiniMax: the whole head, its first rope coordinates)
    whole = family == "minimax_m3_vl"
    turned = spec if whole else dataclasses.replace(spec, head_dim=rope, nope_dim=0)
    for spec_used, agrees in ((turned, True), (flipped(turned), False)):
        ratios = [within(ours(spec_used, x, positions), out.to(F64), positions, spec)
                  for x, out in pairs]  # fmt: skip
        assert (max(ratios) <= 1) if agrees else (min(ratios) > 100), (spec_used.layout, ratios)


def test_mistral_large4_indexer_turns_by_the_lerope_frequencies():
    """``rope_spec(..., lerope_alpha=...).indexer`` carries the layer's exp(alpha) scales."""
    raw = FAMILIES["mistral_large4"][0]
    plain = rope_spec(raw, lerope_alpha=torch.zeros(32))
    scaled = rope_spec(raw, lerope_alpha=ALPHA)
    assert torch.allclose(scaled.indexer.inv_freq, plain.indexer.inv_freq * ALPHA.double().exp())
    assert torch.equal(scaled.indexer.inv_freq, scaled.inv_freq)
    assert (scaled.indexer.layout, scaled.indexer.output_layout) == ("interleaved", "half")
