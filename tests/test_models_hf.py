"""Agreement of posenc_ref.models with HF transformers, family by family (skipped without it).

Every released config of the model zoo (posenc_ref/released_rope_configs.json) is built with
its transformers config class (nothing downloaded, no weights) and read by ``rope_spec``; the
family's own rotary module must produce the same frequencies and attention factor, inside and far
past the original context. The q/k rotation and logits comparisons are below.

Tolerances are those of tests/test_peers.py: HF forms frequencies in float32 (relative error
``2**-24 * (ln(base) + 8)``) and angles ``position * inv_freq`` in float32 (absolute error
``2**-24 * (max_position + 1) * (ln(base) + 10)``).
"""

import copy
import importlib
import math

import pytest
import torch

from posenc_ref.models import released_configs, rope_spec
from tests.hf_sweep.compare import ULP, angle_atol  # the sweep's bound, the same expression

pytestmark = pytest.mark.peers


def freq_rtol(base: float) -> float:
    return ULP * (math.log(base) + 8)


# model_type of the language model -> (modeling module, rotary class)
ROTARY = {
    "llama": ("llama", "LlamaRotaryEmbedding"),
    "mistral": ("mistral", "MistralRotaryEmbedding"),
    "qwen2": ("qwen2", "Qwen2RotaryEmbedding"),
    "gemma3_text": ("gemma3", "Gemma3RotaryEmbedding"),
    "gpt_neox": ("gpt_neox", "GPTNeoXRotaryEmbedding"),
    "phi": ("phi", "PhiRotaryEmbedding"),
    "stablelm": ("stablelm", "StableLmRotaryEmbedding"),
    "glm4": ("glm4", "Glm4RotaryEmbedding"),
    "phi3": ("phi3", "Phi3RotaryEmbedding"),
    "qwen2_vl": ("qwen2_vl", "Qwen2VLRotaryEmbedding"),
    "qwen2_5_vl": ("qwen2_5_vl", "Qwen2_5_VLRotaryEmbedding"),
    "qwen3_vl": ("qwen3_vl", "Qwen3VLTextRotaryEmbedding"),
    "qwen3_5_moe": ("qwen3_5_moe", "Qwen3_5MoeTextRotaryEmbedding"),
    "deepseek_v3": ("deepseek_v3", "DeepseekV3RotaryEmbedding"),
    "gpt_oss": ("gpt_oss", "GptOssRotaryEmbedding"),
    "qwen3": ("qwen3", "Qwen3RotaryEmbedding"),
    "qwen3_moe": ("qwen3_moe", "Qwen3MoeRotaryEmbedding"),
    "smollm3": ("smollm3", "SmolLM3RotaryEmbedding"),
    "llama4_text": ("llama4", "Llama4TextRotaryEmbedding"),
    "deepseek_v2": ("deepseek_v2", "DeepseekV2RotaryEmbedding"),
    "ministral3": ("ministral3", "Ministral3RotaryEmbedding"),
    "gemma4_text": ("gemma4", "Gemma4TextRotaryEmbedding"),
}

TEXT_TO_FAMILY = {
    "qwen2_vl_text": "qwen2_vl",
    "qwen2_5_vl_text": "qwen2_5_vl",
    "qwen3_vl_text": "qwen3_vl",
    "qwen3_5_moe_text": "qwen3_5_moe",
}

ENTRIES = [
    pytest.param(
        entry, layer_type, id=f"{entry['name']}" + (f"-{layer_type}" if layer_type else "")
    )
    for entry in released_configs()
    for layer_type in entry.get("layer_types", [None])
]


@pytest.fixture(scope="module")
def transformers():
    return pytest.importorskip("transformers")


def hf_text_config(transformers, config: dict):
    """The transformers config object of the language model, from the released dict."""
    config = copy.deepcopy(config)  # transformers standardizes the dicts it is given in place
    built = transformers.AutoConfig.for_model(config.pop("model_type"), **config)
    return built.get_text_config()


def hf_rotary(transformers, text_config):
    model_type = text_config.model_type
    key = TEXT_TO_FAMILY.get(model_type, model_type)
    module, name = ROTARY[key]
    modeling = importlib.import_module(f"transformers.models.{module}.modeling_{module}")
    return getattr(modeling, name)(text_config), modeling


def hf_frequencies(rotary, layer_type):
    prefix = f"{layer_type}_" if layer_type else ""
    inv_freq = getattr(rotary, f"{prefix}inv_freq")
    scale = getattr(rotary, f"{prefix}attention_scaling", None)
    if scale is None:
        scale = rotary.attention_scaling
    return inv_freq.double(), float(scale)


def test_every_family_of_the_issue_is_in_the_zoo():
    """Issue 8's table plus DeepSeek-V3: at least 15 released families, each rope_type covered."""
    names = [e["name"] for e in released_configs()]
    assert len(names) >= 15 and len(set(names)) == len(names)
    types = {e["config"].get("model_type") for e in released_configs()}
    for needed in ("llama", "mistral", "qwen2", "gemma3", "gpt_neox", "phi", "stablelm", "glm4",
                   "phi3", "qwen2_vl", "qwen2_5_vl", "qwen3_vl", "deepseek_v3"):  # fmt: skip
        assert needed in types, needed


@pytest.mark.parametrize("entry, layer_type", ENTRIES)
def test_released_frequencies_agree_with_hf(transformers, entry, layer_type):
    """Frequencies and attention factor at init (inside the original context)."""
    text_config = hf_text_config(transformers, entry["config"])
    rotary, _ = hf_rotary(transformers, text_config)
    theirs, scale = hf_frequencies(rotary, layer_type)
    spec = rope_spec(entry["config"], layer_type=layer_type)
    torch.testing.assert_close(theirs, spec.inv_freq, rtol=freq_rtol(spec.base), atol=0)
    assert scale == pytest.approx(spec.attention_factor, rel=1e-12)


@pytest.mark.parametrize("entry, layer_type", ENTRIES)
def test_transformers_config_object_reads_the_same(transformers, entry, layer_type):
    """A transformers config object (standardized to rope_parameters) gives the same spec."""
    from_dict = rope_spec(entry["config"], layer_type=layer_type)
    text_config = hf_text_config(transformers, entry["config"])
    from_object = rope_spec(text_config, layer_type=layer_type)
    for name in ("head_dim", "rotary_dim", "layout", "output_layout", "base", "rope_type",
                 "original_max_len", "max_len", "mrope_section", "mrope_interleaved"):  # fmt: skip
        assert getattr(from_object, name) == getattr(from_dict, name), name
    assert torch.equal(from_object.inv_freq, from_dict.inv_freq)
    assert from_object.attention_factor == from_dict.attention_factor


# --- q and k rotated by the family's own code and by from_hf_config ---------------------------


def randn(seed, *shape):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed))


def hf_rotate(modeling, model_type, q, k, cos, sin):
    """The family's own rotation of (batch, heads, seq, head_dim) q and k, as its attention does."""
    if model_type == "llama4_text":  # complex numbers, (batch, seq, heads, head_dim)
        pair = modeling.apply_rotary_emb(
            q.transpose(1, 2), k.transpose(1, 2), torch.complex(cos, sin)
        )
        return tuple(t.transpose(1, 2) for t in pair)
    if model_type == "deepseek_v2":  # complex numbers
        return modeling.apply_rotary_emb(q, k, torch.complex(cos, sin))
    if model_type == "gemma4_text":  # one tensor at a time, (batch, seq, heads, head_dim)
        rotate = modeling.apply_rotary_pos_emb
        return tuple(
            rotate(x.transpose(1, 2), cos, sin, unsqueeze_dim=2).transpose(1, 2) for x in (q, k)
        )
    if model_type == "deepseek_v3":  # rope_interleave: read (2i, 2i+1), write half order
        return modeling.apply_rotary_pos_emb_interleave(q, k, cos, sin)
    if model_type in ("phi", "stablelm"):  # the attention splits off the rotary part itself
        r = cos.shape[-1]
        q_rot, k_rot = modeling.apply_rotary_pos_emb(q[..., :r], k[..., :r], cos, sin)
        return torch.cat([q_rot, q[..., r:]], -1), torch.cat([k_rot, k[..., r:]], -1)
    return modeling.apply_rotary_pos_emb(q, k, cos, sin)


def position_sets(spec):
    """Positions inside the original context, and a set reaching far past it."""
    L = spec.original_max_len or spec.max_len
    inside = sorted({0, 1, 2, 3, 7, 31, 100, L // 2, L - 2, L - 1})
    far = {0, 1, L, L + 1, L + 100, 2 * L + 3, 4 * L - 1}
    if spec.max_len and spec.max_len > L:
        far.add(spec.max_len - 1)
    return {"inside": torch.tensor(inside), "far": torch.tensor(sorted(far))}


def mrope_position_sets(spec):
    """Text + one 6 x 8 image + text, starting at 0 and far past the original context."""
    from posenc_ref.mrope import mrope_positions

    L = spec.original_max_len or spec.max_len
    return {
        "inside": mrope_positions(5, (1, 6, 8), 5),
        "far": mrope_positions(5, (1, 6, 8), 5, start=4 * L),
    }


def rotate_both(transformers, entry, layer_type, which, *, ours=None, their_tables=False, seed=0):
    """Rotate random q and k with the family's code and with posenc_ref; return both and more.

    ``ours`` replaces the module from ``from_hf_config`` (negative controls); ``their_tables``
    feeds HF's own float32 cos/sin (one value per pair) to our module, isolating the rotation.
    """
    from posenc_ref import RotaryEmbedding

    text_config = hf_text_config(transformers, entry["config"])
    rotary, modeling = hf_rotary(transformers, text_config)
    spec = RotaryEmbedding.from_hf_config(entry["config"], layer_type=layer_type).spec
    if ours is None:
        ours = RotaryEmbedding.from_hf_config(entry["config"], layer_type=layer_type)
    mrope = spec.mrope_section is not None
    positions = (mrope_position_sets if mrope else position_sets)(spec)[which]
    seq = positions.shape[-1]
    q, k = randn(seed, 1, 4, seq, spec.head_dim), randn(seed + 1, 1, 2, seq, spec.head_dim)
    hf_positions = positions[:, None, :] if mrope else positions[None, :]  # (3, 1, seq) / (1, seq)
    args = (layer_type,) if layer_type else ()
    out = rotary(q, hf_positions, *args)  # (1, seq, 2 * pairs), or (1, seq, pairs)
    if isinstance(out, torch.Tensor):  # complex (Llama 4, DeepSeek-V2): one entry per pair
        cos, sin = out.real, out.imag
        theirs = hf_rotate(modeling, spec.model_type, q, k, cos, sin)
        cos, sin = torch.cat([cos, cos], -1), torch.cat([sin, sin], -1)
    else:
        cos, sin = out
        theirs = hf_rotate(modeling, spec.model_type, q, k, cos, sin)
    if spec.query_scale is not None:  # Ministral 3: the attention scales the rotated queries
        text = hf_text_config(transformers, entry["config"]).rope_parameters
        scale = modeling.get_llama_4_attn_scale(
            hf_positions, text["llama_4_scaling_beta"], text["original_max_position_embeddings"]
        )
        theirs = (theirs[0] * scale, theirs[1])
    if their_tables:
        pairs = spec.rotary_dim // 2
        tables = (cos[0, :, :pairs], sin[0, :, :pairs])  # the first half holds each pair once
        ours._rows = lambda *_: tables
        ours._mrope_table_rows = lambda *_: tables
    mine = ours(q, k, positions)
    largest = positions.max(0).values if mrope else positions  # the largest row for M-RoPE
    return spec, q, k, mine, theirs, largest


def rotation_gap(transformers, entry, layer_type, which, **kwargs):
    """(max |ours - HF|, the same divided by HF's float32-angle bound), over q and k.

    The bound is taken position by position: at position m, HF's cos/sin are off by up to
    angle_atol(m, base), times the attention factor, on vectors of at most max|x| per coordinate.
    """
    spec, q, k, mine, theirs, largest = rotate_both(
        transformers, entry, layer_type, which, **kwargs
    )
    bound = angle_atol(largest.to(torch.float64), spec.base)  # (seq,), float64
    scale = 2 * spec.attention_factor * max(float(q.abs().max()), float(k.abs().max()))
    if spec.query_scale is not None:
        scale *= float(spec.query_scale(largest).max())
    bound = bound[:, None] * scale + 16 * ULP * scale  # (seq, 1): plus the rotation's roundings
    gap, ratio = 0.0, 0.0
    for a, b in zip(mine, theirs, strict=True):
        diff = (a.double() - b.double()).abs()  # (1, heads, seq, head_dim)
        gap = max(gap, float(diff.max()))
        ratio = max(ratio, float((diff / bound).max()))
    return gap, ratio


@pytest.mark.parametrize("which", ["inside", "far"])
@pytest.mark.parametrize("entry, layer_type", ENTRIES)
def test_released_rotation_agrees_with_hf(transformers, entry, layer_type, which):
    """Rotated q and k from the family's code and from from_hf_config agree within a bound.

    Position by position, within HF's float32-angle error bound, inside the original context
    and far past it.
    """
    gap, ratio = rotation_gap(transformers, entry, layer_type, which)
    assert ratio <= 1.0, f"max |difference| {gap:.3g} is {ratio:.3g} x the float32-angle bound"


@pytest.mark.parametrize("which", ["inside", "far"])
@pytest.mark.parametrize("entry, layer_type", ENTRIES)
def test_released_rotation_with_hf_tables_is_exact(transformers, entry, layer_type, which):
    """Given HF's own cos/sin, our rotation matches to float32 rounding.

    The pass-through coordinates match bit for bit: every difference in the test above comes
    from HF's float32 angles, none from the layout, the widths or the sections.
    """
    spec, q, k, mine, theirs, _ = rotate_both(
        transformers, entry, layer_type, which, their_tables=True
    )
    atol = 4 * ULP * 2 * spec.attention_factor * max(float(q.abs().max()), float(k.abs().max()))
    r = spec.rotary_dim
    for a, b in zip(mine, theirs, strict=True):
        torch.testing.assert_close(a, b, rtol=0, atol=atol)
        assert torch.equal(a[..., r:], b[..., r:])


def test_wrong_layout_or_sections_would_be_caught(transformers):
    """Negative controls: the comparison fails for each mistake a port could make.

    A wrong pair layout, a missing output reorder (DeepSeek-V3), full instead of partial rotary,
    consecutive instead of interleaved M-RoPE sections.
    """
    from posenc_ref import RotaryEmbedding

    entries = {e["name"]: e for e in released_configs()}

    def variant(name, **change):
        spec = rope_spec(entries[name]["config"])
        kwargs = {
            "base": spec.base,
            "layout": spec.layout,
            "rotary_dim": spec.rotary_dim,
            "scaling": (
                dict(spec.scaling) if spec.scaling else (spec.inv_freq, spec.attention_factor)
            ),
            "mrope_section": spec.mrope_section,
            "mrope_interleaved": spec.mrope_interleaved,
            "output_layout": spec.output_layout,
        }
        kwargs.update(change)
        if isinstance(kwargs["scaling"], tuple):
            from posenc_ref import ScaledFrequencies

            kwargs["scaling"] = ScaledFrequencies(*kwargs["scaling"])
        return RotaryEmbedding(spec.head_dim, **kwargs)

    cases = [
        ("GLM-4", {"layout": "half", "output_layout": "half"}),
        ("DeepSeek-V3 (YaRN, mscale)", {"output_layout": "interleaved"}),
        ("Phi-2", {"rotary_dim": 80, "scaling": None}),
        ("Qwen3-VL (interleaved M-RoPE)", {"mrope_interleaved": False}),
    ]
    for name, change in cases:
        _, ratio = rotation_gap(transformers, entries[name], None, "inside", ours=variant(name))
        assert ratio <= 1.0, name  # the unchanged variant agrees ...
        _, ratio = rotation_gap(
            transformers, entries[name], None, "inside", ours=variant(name, **change)
        )
        assert ratio > 10, (name, change)  # ... and each change is far outside the bound


# --- every rope_type of HF's ROPE_INIT_FUNCTIONS, full and partial rotary ----------------------

SHORT = [1.0 + 0.05 * i for i in range(8)]  # 8 pairs: head_dim 16 (or rotary_dim 16)
LONG = [1.0 + 2.0 * i for i in range(8)]
ROPE_TYPE_CASES = {
    "default": {"rope_type": "default"},
    "linear": {"rope_type": "linear", "factor": 4.0},
    "dynamic": {"rope_type": "dynamic", "factor": 4.0},
    "yarn": {"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 512},
    "yarn-mscale": {
        "rope_type": "yarn",
        "factor": 40.0,
        "original_max_position_embeddings": 50,
        "mscale": 0.707,
        "mscale_all_dim": 1.0,
        "beta_fast": 16,
        "beta_slow": 2,
    },  # fmt: skip
    "longrope": {
        "rope_type": "longrope",
        "short_factor": SHORT,
        "long_factor": LONG,
        "original_max_position_embeddings": 512,
    },  # fmt: skip
    "llama3": {
        "rope_type": "llama3",
        "factor": 8.0,
        "low_freq_factor": 1.0,
        "high_freq_factor": 4.0,
        "original_max_position_embeddings": 512,
    },  # fmt: skip
    "proportional": {"rope_type": "proportional", "partial_rotary_factor": 0.5},
}


def rope_type_entry(case: str, partial: bool) -> dict:
    """A released-config-shaped dict: Llama (full rotary) or GPT-NeoX (partial rotary)."""
    rope = {"rope_theta": 10000.0, **copy.deepcopy(ROPE_TYPE_CASES[case])}
    if partial and case != "proportional":
        # GPT-NeoX rotates the first half of each 32-wide head: 16 coordinates, 8 pairs.
        config = {"model_type": "gpt_neox", "hidden_size": 64, "num_attention_heads": 2}
        rope["partial_rotary_factor"] = 0.5
    else:
        config = {"model_type": "llama", "hidden_size": 32, "num_attention_heads": 2}
    # 2000 = 40 x 50 for yarn-mscale (yarn's factor must match max / original, or be the only one)
    config.update(max_position_embeddings=2048 if case != "yarn-mscale" else 2000)
    config["rope_parameters"] = rope
    return {"name": case, "config": config}


def test_rope_type_cases_cover_hf(transformers):
    from transformers.modeling_rope_utils import ROPE_INIT_FUNCTIONS

    covered = {ROPE_TYPE_CASES[c]["rope_type"] for c in ROPE_TYPE_CASES}
    assert covered == set(ROPE_INIT_FUNCTIONS) | {"default"}


@pytest.mark.parametrize("which", ["inside", "far"])
@pytest.mark.parametrize("partial", [False, True], ids=["full", "partial"])
@pytest.mark.parametrize("case", list(ROPE_TYPE_CASES))
def test_rope_type_rotation_agrees_with_hf(transformers, case, partial, which):
    """Every rope_type, rotated by HF's module and by from_hf_config, in and past the context.

    Partial rotary goes through GPT-NeoX (every ROPE_INIT_FUNCTIONS entry reads
    partial_rotary_factor); proportional is partial by construction (zero frequencies).
    """
    entry = rope_type_entry(case, partial)
    gap, ratio = rotation_gap(transformers, entry, None, which)
    assert ratio <= 1.0, f"max |difference| {gap:.3g} is {ratio:.3g} x the float32-angle bound"
    spec, q, k, mine, theirs, _ = rotate_both(transformers, entry, None, which, their_tables=True)
    atol = 4 * ULP * 2 * spec.attention_factor * max(float(q.abs().max()), float(k.abs().max()))
    for a, b in zip(mine, theirs, strict=True):
        torch.testing.assert_close(a, b, rtol=0, atol=atol)


# --- the M-RoPE position helper against Qwen2-VL's own get_rope_index ---------------------------


def hf_rope_index(transformers, text_before, grid, text_after, spatial_merge_size=2):
    """Qwen2-VL's positions for text, one image (patch grid = LLM grid x merge size), text."""
    import functools
    from types import SimpleNamespace

    from transformers.models.qwen2_vl.modeling_qwen2_vl import Qwen2VLModel

    t, h, w = grid
    owner = SimpleNamespace(
        config=SimpleNamespace(
            vision_config=SimpleNamespace(spatial_merge_size=spatial_merge_size)
        ),
        get_vision_position_ids=functools.partial(Qwen2VLModel.get_vision_position_ids, None),
    )
    kinds = [0] * text_before + [1] * (t * h * w) + [0] * text_after
    ids = torch.zeros(1, len(kinds), dtype=torch.long)
    patch_grid = torch.tensor([[t, h * spatial_merge_size, w * spatial_merge_size]])
    positions, _ = Qwen2VLModel.get_rope_index(
        owner, ids, torch.tensor([kinds]), image_grid_thw=patch_grid
    )
    return positions[:, 0, :]  # (3, seq)


@pytest.mark.parametrize("grid", [(1, 1, 1), (1, 2, 3), (1, 6, 4), (2, 3, 3), (3, 2, 5)])
@pytest.mark.parametrize("before, after", [(0, 0), (3, 2), (7, 11)])
def test_mrope_positions_agree_with_qwen2_vl(transformers, grid, before, after):
    """Text, one grid, text: the same positions as Qwen2-VL whenever t <= max(h, w) (images)."""
    from posenc_ref.mrope import mrope_positions

    theirs = hf_rope_index(transformers, before, grid, after)
    assert torch.equal(mrope_positions(before, grid, after), theirs)


def test_mrope_positions_disagree_with_hf_for_long_grids(transformers):
    """Disagreement: with more frames than rows and columns, the text resumes elsewhere.

    transformers 5.23 resumes the text at start + max(h, w), inside the grid's time range;
    posenc_ref resumes after the grid's largest position, as the helper's definition (and Qwen's
    earlier code) says.
    """
    from posenc_ref.mrope import mrope_positions

    grid = (5, 2, 2)
    theirs = hf_rope_index(transformers, 1, grid, 2)
    ours = mrope_positions(1, grid, 2)
    assert theirs[:, -2].tolist() == [1 + 2] * 3  # start 1 + max(h, w)
    assert ours[:, -2].tolist() == [1 + 5] * 3  # start 1 + max(t, h, w)
    assert int(ours[:, 1:-2].max()) + 1 == 1 + 5


# --- the variants, by what each family's own attention hands to its attention function --------
#
# A tiny random-weight model of the family (built by its own transformers classes, nothing
# downloaded) runs one attention layer twice on the same hidden states: at positions all 0 (no
# rotation: the queries and keys before RoPE, times the attention factor on the rotary part) and
# at the test positions. A registered attention function records the q and k the layer hands to
# attention. posenc_ref must turn the first into the second: from_hf_config's module on the rope
# part (after MLA's pass-through part), its query scaling, and nothing at all in a layer whose
# spec is None. This checks what the model computes, not how its code is written.

CAPTURED: list = []


def _capture(module, query, key, value, attention_mask, **kwargs):
    CAPTURED.append((query.detach().double(), key.detach().double()))
    batch, heads, seq, _ = query.shape
    return torch.zeros(batch, seq, heads, value.shape[-1], dtype=query.dtype), None


@pytest.fixture(scope="module")
def capture(transformers):
    transformers.AttentionInterface.register("posenc_capture", _capture)
    return "posenc_capture"


def tiny_model(transformers, model_type: str, *, full_mask: bool = False, setup=None, **kwargs):
    """The family's model, tiny, random, on the CPU, recording what reaches attention.

    ``full_mask``: hand the layer an all-true boolean mask instead of None (Qwen4-Exp's attention
    combines its mask with its indexer's selection). ``setup(model)``: loads what the checkpoint
    would (Mistral Large 4's LeRoPE tensor) before any call.
    """
    import inspect as _inspect

    config = transformers.AutoConfig.for_model(model_type, **kwargs)
    torch.manual_seed(0)
    config._attn_implementation = "posenc_capture"
    from transformers.models.auto.modeling_auto import MODEL_MAPPING

    if type(config) not in MODEL_MAPPING:
        # a language model AutoModel does not map: its class, by its config (asked before
        # AutoModel, whose refusal names every class it maps, importing every configuration
        # module of transformers: seconds, for an error message)
        modeling = importlib.import_module(
            type(config).__module__.replace("configuration", "modeling")
        )
        model = next(
            cls(config) for name, cls in vars(modeling).items()
            if name.endswith("Model") and "PreTrained" not in name
            and getattr(cls, "config_class", None) is type(config)
        )  # fmt: skip
    else:
        try:
            model = transformers.AutoModel.from_config(config, attn_implementation="posenc_capture")
        except KeyError:  # GPT-J, CodeGen, Falcon: their own attention classes (recorded below)
            config._attn_implementation = "sdpa" if model_type == "falcon" else "eager"
            model = transformers.AutoModel.from_config(
                config, attn_implementation=config._attn_implementation
            )
    model.eval()
    if setup is not None:
        with torch.no_grad():
            setup(model)
    named = [(n, m) for n, m in model.named_modules() if "vision" not in n and "visual" not in n]
    if any("decoder" in n for n, _ in named):  # an encoder-decoder (Moonshine): the decoder
        named = [(n, m) for n, m in named if "encoder" not in n]
    layers = [m for _, m in named if type(m).__name__.endswith(("Attention", "MLA"))
              and hasattr(m, "layer_idx") and "Cross" not in type(m).__name__]  # fmt: skip
    rotary = next((m for _, m in named if type(m).__name__.endswith("RotaryEmbedding")), None)

    def handed(layer, hidden, positions):
        """(q, k) the layer hands to attention, at positions (seq,) or M-RoPE (rows, seq)."""
        CAPTURED.clear()
        ids = positions[:, None, :] if positions.dim() == 2 else positions[None, :]
        seq = positions.shape[-1]
        mask = torch.ones(1, 1, seq, seq, dtype=torch.bool) if full_mask else None
        kwargs = {"hidden_states": hidden, "attention_mask": mask}
        params = _inspect.signature(layer.forward).parameters
        if "position_embeddings" in params:
            args = (hidden, ids)
            if "layer_type" in _inspect.signature(rotary.forward).parameters:
                args += (config.get_text_config().layer_types[layer.layer_idx],)
            kwargs["position_embeddings"] = rotary(*args)
            thetas = getattr(config.get_text_config(), "layer_rope_theta", None)
            if thetas is not None and not thetas[layer.layer_idx]:
                kwargs["position_embeddings"] = None  # as their decoder passes it (NoPE layers)
        if "position_ids" in params:
            kwargs["position_ids"] = ids
        if "shared_kv_states" in params:  # Gemma 4
            kwargs["shared_kv_states"] = {}
        if "alibi" in params:  # Falcon
            kwargs["alibi"] = None
        if hasattr(layer, "_attn") and "position_embeddings" not in params:  # GPT-J, CodeGen
            original = layer._attn

            def record(query, key, value, *rest, **more):
                CAPTURED.append((query.detach().double(), key.detach().double()))
                return original(query, key, value, *rest, **more)

            layer._attn = record
        sdpa = torch.nn.functional.scaled_dot_product_attention

        def record_sdpa(query, key, *rest, **more):  # Falcon calls it in its attention
            CAPTURED.append((query.detach().double(), key.detach().double()))
            return sdpa(query, key, *rest, **more)

        torch.nn.functional.scaled_dot_product_attention = record_sdpa
        try:
            with torch.no_grad():
                layer(**kwargs)
        finally:
            torch.nn.functional.scaled_dot_product_attention = sdpa
        return CAPTURED[0]

    return config, layers, handed


def check_variant(
    transformers, model_type, positions, *, queries_only_scaled=None, full_mask=False,
    setup=None, reader=None, **kwargs,
):  # fmt: skip
    """Every layer of the tiny model: posenc_ref's layer spec reproduces what reaches attention.

    ``setup`` as for :func:`tiny_model`; ``reader``: keyword arguments of the config reader (the
    checkpoint's values it needs). Returns the layer specs (None for a layer without RoPE).
    """
    from posenc_ref import RotaryEmbedding
    from posenc_ref.models import layer_specs
    from posenc_ref.rope import to_interleaved_layout

    config, layers, handed = tiny_model(
        transformers, model_type, full_mask=full_mask, setup=setup, **kwargs
    )
    text = config.get_text_config().to_dict()
    reader = reader or {}
    specs = layer_specs(text, **reader)
    positions = torch.as_tensor(positions)
    assert layers, model_type
    if len(layers) != len(specs):  # LongCat-Flash: two attentions per layer, one RoPE for all
        assert all(s is specs[0] for s in specs), (model_type, len(layers), len(specs))
        specs = [specs[0]] * len(layers)
    for layer in layers:
        spec = specs[layer.layer_idx]
        seq = positions.shape[-1]
        hidden = randn(layer.layer_idx, 1, seq, config.get_text_config().hidden_size)
        q0, k0 = handed(layer, hidden, torch.zeros_like(positions))
        q, k = handed(layer, hidden, positions)
        if spec is None:  # no rotation (a query scaling is checked by the caller)
            assert torch.equal(k, k0), (model_type, layer.layer_idx)
            if queries_only_scaled is None:
                assert torch.equal(q, q0), (model_type, layer.layer_idx)
            continue
        module = RotaryEmbedding.from_hf_config(text, layer_type=spec.layer_type, **reader)
        start, width, r = spec.nope_dim, spec.head_dim, spec.rotary_dim
        bound = angle_atol(int(positions.max()), spec.base) * 2 * spec.attention_factor
        if positions.dim() == 2:
            assert spec.mrope_section is not None, (model_type, "several position rows")
        for before, after, name in ((q0, q, "q"), (k0, k, "k")):
            part = before[..., start : start + width].clone()
            if spec.output_layout != spec.layout:  # position 0 already wrote half order
                part[..., :r] = to_interleaved_layout(part[..., :r])
            part[..., :r] /= spec.attention_factor  # cos 0 = a, sin 0 = 0 on the rotary part
            ours = module(part, part, positions)[0 if name == "q" else 1]
            outside = before[..., :start]
            if name == "q" and spec.query_scale is not None:
                # the model scales the whole query; the module scales what it returns (for MLA
                # the caller scales the nope part, as the spec says)
                outside = outside * spec.query_scale(positions)[:, None]
            expected = torch.cat([outside, ours, before[..., start + width :]], -1)
            scale = float(before.abs().max()) * (
                1 if spec.query_scale is None or name == "k"
                else float(spec.query_scale(positions).max())
            )  # fmt: skip
            gap = float((expected - after).abs().max())
            assert gap <= bound * scale + 1e-5 * scale, (model_type, layer.layer_idx, name, gap)
            if spec.query_scale is None:
                assert torch.equal(after[..., :start], before[..., :start])  # MLA's nope part
    return specs, layers, handed


SMALL = dict(hidden_size=64, intermediate_size=64, num_attention_heads=4, num_key_value_heads=2,
             vocab_size=32, pad_token_id=0)  # fmt: skip
FAR = [0, 1, 2, 5, 17, 100, 1000, 5000]


def test_smollm3_layers_without_rope(transformers, capture):
    """SmolLM3: no_rope_layers (default: every 4th layer has none) from its own attention."""
    specs, _, _ = check_variant(transformers, "smollm3", FAR, num_hidden_layers=8, **SMALL)
    assert [s is None for s in specs] == [False, False, False, True] * 2
    specs, _, _ = check_variant(
        transformers, "smollm3", FAR, num_hidden_layers=3, no_rope_layers=[0, 1, 0], **SMALL
    )
    assert [s is None for s in specs] == [True, False, True]


def test_llama4_interleaved_rope_and_temperature_tuning(transformers, capture):
    """Llama 4: complex (interleaved) RoPE; NoPE layers scale q by 1 + b ln(1 + [(t + 1) / L])."""
    kwargs = dict(SMALL, head_dim=16, intermediate_size_mlp=64, num_local_experts=2,
                  num_hidden_layers=4, floor_scale=4, attn_scale=0.25,
                  rope_parameters={"rope_type": "default", "rope_theta": 5e5})  # fmt: skip
    specs, layers, handed = check_variant(
        transformers, "llama4_text", FAR, queries_only_scaled=True, **kwargs
    )
    assert [s is None for s in specs] == [False, False, False, True]
    assert specs[0].layout == "interleaved" and specs[0].nope_layers == (3,)
    scale = specs[0].nope_query_scale
    assert (scale.beta, scale.length, scale.shift) == (0.25, 4, 1)
    # The NoPE layer: q = q_proj(x) * sigma(t) at t = 0 .. seq - 1 (its code counts positions
    # itself, from the cache length), k untouched.
    layer = layers[3]
    seq = 9
    hidden = randn(5, 1, seq, 64)
    q, _ = handed(layer, hidden, torch.arange(seq))
    plain = layer.q_proj(hidden).view(1, seq, -1, 16).transpose(1, 2).double()
    sigma = scale(torch.arange(seq))
    torch.testing.assert_close(q, plain * sigma[:, None], rtol=1e-6, atol=1e-6)
    assert sigma[2] == 1 and sigma[3] > 1  # (3 + 1) // 4 = 1: the first step


def test_beam_power_query_scaling(transformers):
    """Beam: its NoPE (full-attention) layers scale q by (1 + (t + 1) / 2048) ** 0.1.

    Compared with the family's own compute_attention_scaling (float32) at positions from the
    first to far out; the sweep runs the whole model.
    """
    from transformers.models.beam.modeling_beam import compute_attention_scaling

    spec = rope_spec({"model_type": "beam", "hidden_size": 1024, "num_attention_heads": 8,
                      "num_hidden_layers": 4,
                      "layer_types": ["sliding_attention"] * 3 + ["full_attention"]},
                     layer_type="sliding_attention")  # fmt: skip
    assert spec.nope_layers == (3,) and spec.nope_query_scale.form == "power"
    positions = torch.tensor([0, 1, 2046, 2047, 8191, 131071, 10_000_000])
    theirs = compute_attention_scaling(positions[None])[0, 0, :, 0].double()
    ours = spec.nope_query_scale(positions)
    torch.testing.assert_close(ours, theirs, rtol=4 * 2.0**-24, atol=0)
    assert float(ours[0]) > 1  # no flat stretch: above 1 from the first position


def test_cohere2_rotates_its_sliding_layers_only(transformers, capture):
    specs, _, _ = check_variant(transformers, "cohere2", FAR, num_hidden_layers=4,
                                sliding_window=8, **SMALL)  # fmt: skip
    assert [s is None for s in specs] == [False, False, False, True]
    assert specs[0].layout == "interleaved"


def test_ministral3_query_scaling(transformers, capture):
    """Ministral 3: q *= 1 + beta ln(1 + floor(t / L)) after rotate_half; keys untouched."""
    rope = {"rope_type": "yarn", "rope_theta": 1e6, "factor": 16.0,
            "original_max_position_embeddings": 16, "max_position_embeddings": 256,
            "beta_fast": 32.0, "beta_slow": 1.0, "mscale": 1.0, "mscale_all_dim": 1.0,
            "llama_4_scaling_beta": 0.1}  # fmt: skip
    specs, _, _ = check_variant(
        transformers, "ministral3", [0, 1, 15, 16, 17, 40, 100, 255], num_hidden_layers=1,
        max_position_embeddings=256, head_dim=16, rope_parameters=rope, **SMALL,
    )  # fmt: skip
    scale = specs[0].query_scale
    assert (scale.beta, scale.length, scale.shift) == (0.1, 16, 0)


MLA_SMALL = dict(SMALL, num_key_value_heads=4, kv_lora_rank=16, q_lora_rank=None,
                 qk_rope_head_dim=8, qk_nope_head_dim=8, v_head_dim=8, num_hidden_layers=1,
                 n_routed_experts=2, num_experts_per_tok=1, moe_intermediate_size=16,
                 first_k_dense_replace=1)  # fmt: skip


@pytest.mark.parametrize(
    "model_type, extra",
    [
        ("deepseek_v2", {}),
        ("deepseek_v3", {"rope_interleave": True}),
        ("deepseek_v3", {"rope_interleave": False}),
        ("glm4_moe_lite", {"rope_interleave": True}),
        ("youtu", {}),
        ("minicpm3", {}),
        ("longcat_flash", {"q_lora_rank": 16, "num_hidden_layers": 2, "head_dim": 8}),
        ("mistral4", {"rope_parameters": {
            "rope_type": "yarn", "rope_theta": 1e4, "factor": 8.0,
            "original_max_position_embeddings": 32, "max_position_embeddings": 256,
            "beta_fast": 32.0, "beta_slow": 1.0, "mscale": 1.0, "mscale_all_dim": 1.0,
            "llama_4_scaling_beta": 0.1}, "max_position_embeddings": 256}),
    ],
    ids=lambda v: v if isinstance(v, str) else str(sorted(v)),
)  # fmt: skip
def test_mla_rope_part(transformers, capture, model_type, extra):
    """MLA: only the qk_rope_head_dim part (last) rotates, in the family's layout and order."""
    kwargs = {**MLA_SMALL, **extra}
    specs, _, _ = check_variant(transformers, model_type, [0, 1, 2, 7, 31, 33, 100, 255], **kwargs)
    spec = specs[0]
    assert (spec.head_dim, spec.rotary_dim, spec.nope_dim) == (8, 8, 8)


@pytest.mark.parametrize("rope_type", ["yarn", "default", "dynamic"])
def test_mistral_large4_lerope(transformers, capture, rope_type):
    """Mistral Large 4: frequencies times exp(alpha), alpha loaded into the model's buffer.

    The rope part (last, interleaved in, half out) of every layer with RoPE, and the layers
    without (every fourth); dynamic NTK past the context scales its grown frequencies too.
    """
    alpha = randn(11, 4) * 0.7  # qk_rope_head_dim 8: four pairs
    rope = {
        "rope_type": "yarn",
        "rope_theta": 1e4,
        "factor": 8.0,
        "beta_fast": 32.0,
        "beta_slow": 1.0,
        "original_max_position_embeddings": 64,
        "attention_factor": 1.0,
    }
    if rope_type == "default":
        rope = {"rope_type": "default", "rope_theta": 1e4}
    elif rope_type == "dynamic":  # grows its base past max_position_embeddings (512)
        rope = {"rope_type": "dynamic", "rope_theta": 1e4, "factor": 2.0}
    kwargs = {**MLA_SMALL, "num_hidden_layers": 4, "index_n_heads": 2, "index_head_dim": 16,
              "rope_parameters": rope, "max_position_embeddings": 512}  # fmt: skip
    kwargs.pop("q_lora_rank")

    def load(model):
        model.rotary_emb.load_state_dict({"alpha": alpha.float()})

    specs, _, _ = check_variant(
        transformers, "mistral_large4_text", [0, 1, 2, 7, 63, 64, 255, 511, 1023], setup=load,
        reader={"lerope_alpha": alpha.float()}, full_mask=True, **kwargs,
    )  # fmt: skip
    assert [s is None for s in specs] == [False, False, False, True]
    assert torch.equal(specs[0].freq_scales, alpha.float().double().exp())


def test_gptj_and_codegen_rotary_dim(transformers, capture):
    """GPT-J, CodeGen: rotate_every_two on the first rotary_dim coordinates, base 10000."""
    for model_type in ("gptj", "codegen"):
        specs, _, _ = check_variant(
            transformers, model_type, FAR, n_embd=64, n_head=4, n_layer=1, rotary_dim=8,
            n_positions=8192, vocab_size=32,
        )  # fmt: skip
        assert (specs[0].head_dim, specs[0].rotary_dim, specs[0].layout) == (16, 8, "interleaved")


@pytest.mark.parametrize(
    "model_type, kwargs, widths",
    [
        ("dbrx", dict(d_model=64, n_heads=4, n_layers=1, vocab_size=32, rope_theta=5e5,
                      attn_config={"kv_n_heads": 2, "rope_theta": 5e5, "clip_qkv": 8.0},
                      ffn_config={"ffn_hidden_size": 32, "moe_num_experts": 2, "moe_top_k": 1}),
         (16, 16, "half")),
        ("moonshine", dict(hidden_size=80, intermediate_size=64, encoder_num_attention_heads=4,
                           decoder_num_attention_heads=4, encoder_num_hidden_layers=1,
                           decoder_num_hidden_layers=1, vocab_size=32),
         (20, 18, "interleaved")),
        ("minimax_m2", dict(SMALL, head_dim=16, rotary_dim=8, num_hidden_layers=1,
                            num_local_experts=2, num_experts_per_tok=1),
         (16, 8, "half")),
        ("glm4_moe", dict(SMALL, head_dim=16, num_hidden_layers=1, n_routed_experts=2,
                          num_experts_per_tok=1, moe_intermediate_size=16,
                          first_k_dense_replace=1), (16, 8, "half")),
        ("glm4_moe", dict(SMALL, head_dim=42, num_hidden_layers=1, n_routed_experts=2,
                          num_experts_per_tok=1, moe_intermediate_size=16,
                          first_k_dense_replace=1), (42, 22, "half")),
    ],
    ids=["dbrx", "moonshine", "minimax_m2", "glm4_moe", "glm4_moe-odd-width"],
)  # fmt: skip
def test_widths_from_family_keys(transformers, capture, model_type, kwargs, widths):
    """DBRX d_model / n_heads, Moonshine's decoder heads, MiniMax-M2's rotary_dim, GLM-4 MoE."""
    specs, _, _ = check_variant(transformers, model_type, FAR, **kwargs)
    assert (specs[0].head_dim, specs[0].rotary_dim, specs[0].layout) == widths


def test_gemma4_per_layer_head_widths_and_proportional(transformers, capture):
    """Gemma 4: sliding layers 16 wide (default RoPE), global layers 32 wide ('proportional').

    The global layers rotate int(0.25 * 32 / 2) = 4 pairs at the frequencies of width 32 and
    leave the other 12 pairs as they are (frequency 0).
    """
    kwargs = dict(SMALL, head_dim=16, global_head_dim=32, num_hidden_layers=2,
                  layer_types=["sliding_attention", "full_attention"], sliding_window=8,
                  num_kv_shared_layers=0, hidden_size_per_layer_input=0,
                  vocab_size_per_layer_input=32)  # fmt: skip
    specs, _, _ = check_variant(transformers, "gemma4_text", FAR, **kwargs)
    local, full = specs
    assert (local.head_dim, local.rotary_dim, local.rope_type) == (16, 16, "default")
    assert (full.head_dim, full.rotary_dim, full.rope_type) == (32, 32, "proportional")
    assert int((full.inv_freq > 0).sum()) == 4
    # the legacy form (global_head_dim at the top, no per_layer_config) reads the same
    legacy = {"model_type": "gemma4_text", "hidden_size": 64, "num_attention_heads": 4,
              "head_dim": 16, "global_head_dim": 32, "num_hidden_layers": 2,
              "layer_types": ["sliding_attention", "full_attention"]}  # fmt: skip
    assert rope_spec(legacy, layer_type="full_attention").head_dim == 32
    assert rope_spec(legacy, layer_type="sliding_attention").head_dim == 16


MROPE = [
    ("qwen2_vl_text", {}, [2, 3, 3]),
    ("qwen2_5_vl_text", {}, [2, 3, 3]),
    ("qwen2_5_omni_text", {}, [2, 3, 3]),
    ("paddleocr_vl_text", {"head_dim": 16}, [2, 3, 3]),
    ("qwen3_vl_text", {"head_dim": 16}, [4, 2, 2]),
    ("qwen3_vl_moe_text", {"num_experts": 2, "num_experts_per_tok": 1,
                           "moe_intermediate_size": 16}, [4, 2, 2]),
    ("qwen3_omni_moe_text", {"num_experts": 2, "num_experts_per_tok": 1,
                             "moe_intermediate_size": 16}, [4, 2, 2]),
    ("cosmos3_edge_text", {"head_dim": 16}, [4, 2, 2]),
    ("qwen3_5_text", {"head_dim": 16, "partial_rotary_factor": 0.5,
                      "layer_types": ["full_attention"]}, [2, 1, 1]),
    ("glm4v_text", {"partial_rotary_factor": 0.5}, [2, 1, 1]),
    ("glm4v_moe_text", {"n_routed_experts": 2, "num_experts_per_tok": 1,
                        "moe_intermediate_size": 16, "first_k_dense_replace": 1}, [2, 1, 1]),
    ("glm_ocr_text", {"partial_rotary_factor": 0.5, "head_dim": 16}, [2, 1, 1]),
    ("glm_image_text", {"partial_rotary_factor": 0.5}, [2, 1, 1]),
]  # fmt: skip


@pytest.mark.parametrize("model_type, extra, section", MROPE, ids=[m[0] for m in MROPE])
def test_mrope_families_with_three_position_rows(transformers, capture, model_type, extra, section):
    """M-RoPE: text + a 2 x 3 x 4 grid + text, starting at 0 and far on, three distinct rows."""
    from posenc_ref.mrope import mrope_positions

    rope = {"rope_type": "default", "rope_theta": 1e4, "mrope_section": section}
    if "partial_rotary_factor" in extra:
        rope["partial_rotary_factor"] = extra.pop("partial_rotary_factor")
    kwargs = {**SMALL, "num_hidden_layers": 1, "rope_parameters": rope, **extra}
    for start in (0, 3000):
        positions = mrope_positions(3, (2, 3, 4), 2, start=start)
        assert len({tuple(row.tolist()) for row in positions}) == 3  # three different rows
        specs, _, _ = check_variant(transformers, model_type, positions, **kwargs)
        assert specs[0].mrope_section == tuple(section)


# The M-RoPE variants: other assignments of pairs to position rows (posenc_ref.mrope's table).
# (model_type, kwargs, rope dict of the tested layer type, counts per row as the spec reads them,
# assignment); a head of 16 coordinates, 8 pairs.
_ROPE = {"rope_type": "default", "rope_theta": 1e4}
MROPE_VARIANTS = [
    # Qwen3-VL's rule under a per-layer-type dict
    ("cohere_compass_text", {"rope_parameters": {"full_attention": {**_ROPE,
                             "mrope_section": [4, 2, 2]}}}, (4, 2, 2), "interleaved"),
    # its code reads mrope_section[1:] only: the time row takes the 4 pairs left, not the 1 given
    ("qwen4_exp_text", {"head_dim": 16, "layer_types": ["indexed_attention"],
                        "rope_parameters": {**_ROPE, "mrope_section": [1, 2, 2]},
                        "num_experts": 2, "num_experts_per_tok": 1, "moe_intermediate_size": 16,
                        "shared_expert_intermediate_size": 16, "linear_num_key_heads": 2,
                        "linear_num_value_heads": 2, "linear_key_head_dim": 8,
                        "linear_value_head_dim": 8, "hc_lowrank": 8, "indexer_n_heads": 2,
                        "indexer_kv_heads": 1, "indexer_head_dim": 16, "indexer_budget": 64,
                        "indexer_compress_ratio": 4}, (4, 2, 2), "interleaved"),
    # written (height, width, time): [3, 3, 2] is time 2, height 3, width 3
    ("ernie4_5_vl_moe_text", {"rope_parameters": {**_ROPE, "mrope_section": [3, 3, 2]},
                              "moe_num_experts": 2, "moe_k": 1, "moe_intermediate_size": [16, 16],
                              "moe_num_shared_experts": 1}, (2, 3, 3), "alternating"),
    # two rows; one table per layer type (full attention: 4 of 16 coordinates)
    ("neomme", {"head_dim": 16, "layer_types": ["sliding_attention", "full_attention"],
                "sliding_window": 8}, (4, 4), "alternating_2d"),
]  # fmt: skip


@pytest.mark.parametrize(
    "model_type, extra, counts, assignment", MROPE_VARIANTS, ids=[m[0] for m in MROPE_VARIANTS]
)
def test_mrope_variants_with_distinct_position_rows(
    transformers, capture, model_type, extra, counts, assignment
):
    """ERNIE 4.5 VL, NeoMME, Cohere Compass, Qwen4-Exp: every row distinct, starting at 0 and far.

    The family's own attention (its rotary module, its rotation) against from_hf_config, layer
    by layer; for NeoMME its two rows (height, width), the full-attention layers' quarter-width
    rotary part with a base of 1e6.
    """
    from posenc_ref.mrope import MROPE_ASSIGNMENTS, mrope_positions

    rows = len(MROPE_ASSIGNMENTS[assignment].rows)
    kwargs = {**SMALL, "num_hidden_layers": len(extra.get("layer_types", [None])), **extra}
    for start in (0, 3000):
        positions = mrope_positions(3, (2, 3, 4), 2, start=start)[3 - rows :]
        assert len({tuple(row.tolist()) for row in positions}) == rows  # every row different
        specs, _, _ = check_variant(
            transformers, model_type, positions, full_mask=model_type == "qwen4_exp_text",
            **copy.deepcopy(kwargs),
        )  # fmt: skip
        assert specs[0].mrope_section == counts and specs[0].mrope_assignment == assignment
    if model_type == "neomme":
        assert [(s.rotary_dim, s.base, s.mrope_section) for s in specs] == [
            (16, 1e4, (4, 4)), (4, 1e6, (1, 1))]  # fmt: skip


def test_ernie4_5_vl_runs_default_rope_only(transformers):
    """Its rotary module raises for any other rope_type, and so does the reader."""
    from transformers.models.ernie4_5_vl_moe import modeling_ernie4_5_vl_moe as modeling

    rope = {"rope_type": "linear", "rope_theta": 1e4, "factor": 2.0}
    config = transformers.AutoConfig.for_model("ernie4_5_vl_moe_text", rope_parameters=rope)
    with pytest.raises(ValueError, match="default"):
        modeling.Ernie4_5_VLMoeTextRotaryEmbedding(config)
    with pytest.raises(ValueError, match="does not compute rope_type 'linear'"):
        rope_spec(config)


def test_hunyuan_vl_mrope_is_not_a_rotation_and_is_refused(transformers):
    """HunYuan-VL: with distinct rows its code's map does not keep each pair's length.

    A rotation of pair (c, c + 64) keeps q_c^2 + q_{c+64}^2; its code turns c and c + 64 by the
    angles of two different rows, which changes it. With equal rows (text) it is plain RoPE. The
    reader refuses the family, naming why.
    """
    from transformers.models.hunyuan_vl import modeling_hunyuan_vl as modeling

    rope = {"rope_type": "default", "rope_theta": 1e4, "mrope_section": [16, 16, 16, 16]}
    config = transformers.AutoConfig.for_model(
        "hunyuan_vl_text", hidden_size=256, num_attention_heads=2, num_hidden_layers=1,
        rope_parameters=rope,
    )  # fmt: skip
    rotary = modeling.HunYuanVLRotaryEmbedding(config)
    q = randn(1, 1, 1, 3, 128)
    half = 64

    def pair_lengths(rows):
        positions = torch.tensor(rows)[:, None, :]  # (4, batch 1, seq 3)
        cos, sin = rotary(q, positions)
        turned, _ = modeling.apply_rotary_pos_emb(q, q, cos, sin)
        return turned[..., :half] ** 2 + turned[..., half:] ** 2

    before = q[..., :half] ** 2 + q[..., half:] ** 2
    same = [[5, 90, 3000]] * 4
    torch.testing.assert_close(pair_lengths(same), before, rtol=1e-5, atol=1e-5)
    distinct = [[5, 90, 3000], [7, 60, 3100], [11, 30, 2900], [13, 10, 3300]]
    assert float((pair_lengths(distinct) - before).abs().max()) > 0.1
    with pytest.raises(NotImplementedError, match="not a rotation of pairs"):
        rope_spec(config)


# --- every row's defaults are its config class's ----------------------------------------------

STRUCTURE = ("hidden_size", "num_attention_heads", "num_hidden_layers", "max_position_embeddings",
             "layer_types", "sliding_window")  # fmt: skip


def family_rows():
    from posenc_ref.models import FAMILIES

    return sorted(FAMILIES)


@pytest.mark.parametrize("model_type", family_rows())
def test_row_defaults_are_the_config_class_defaults(transformers, model_type):
    """A config with only its structure (sizes, layers) reads as the class's full default config.

    The class fills every RoPE key a config.json may leave out (base, partial factor, head width,
    the RoPE dict, sections, MLA widths): the row must fill the same values, for every layer.
    """
    from transformers.models.auto.configuration_auto import CONFIG_MAPPING

    from posenc_ref.models import FAMILIES, NoRopeError, layer_specs

    if model_type not in CONFIG_MAPPING:
        pytest.skip(f"{model_type} has no config class in this transformers")
    text = CONFIG_MAPPING[model_type]().get_text_config(decoder=True)
    full = text.to_dict()
    row = FAMILIES[model_type]
    minimal = {"model_type": full["model_type"]}
    for key in STRUCTURE:
        # the standard name where the class writes it (Falcon's to_dict says hidden_size, and its
        # row also accepts the legacy n_embed), else the family's own name for it
        own = key if full.get(key) is not None else row.aliases.get(key, key)
        if full.get(own) is not None:
            minimal[own] = full[own]
    if "per_layer_config" in full:  # transformers 5.23 writes per-layer widths this way
        minimal["per_layer_config"] = full["per_layer_config"]
    try:
        expected = layer_specs(full)
    except NoRopeError:  # RoPE is switched on by a flag (ESM, Zamba 2): off by default, both ways
        with pytest.raises(NoRopeError):
            layer_specs(minimal)
        return
    except (ValueError, NotImplementedError) as error:  # a default config that cannot run
        pytest.skip(f"the class's default config is refused: {error}"[:200])
    got = layer_specs(minimal)
    assert len(got) == len(expected)
    for ours, theirs in zip(got, expected, strict=True):
        assert (ours is None) == (theirs is None)
        if ours is None:
            continue
        for name in ("head_dim", "rotary_dim", "layout", "output_layout", "base", "rope_type",
                     "attention_factor", "mrope_section", "mrope_interleaved", "nope_dim",
                     "query_scale", "nope_layers"):  # fmt: skip
            assert getattr(ours, name) == getattr(theirs, name), name
        assert torch.equal(ours.inv_freq, theirs.inv_freq)


def test_falcon_rotary_or_alibi(transformers, capture):
    """Falcon: rotate_half on the whole head, or no RoPE at all with alibi (NoRopeError)."""
    from posenc_ref.models import NoRopeError

    kwargs = dict(hidden_size=64, num_attention_heads=4, num_hidden_layers=1, vocab_size=32,
                  new_decoder_architecture=True, num_kv_heads=2)  # fmt: skip
    specs, _, _ = check_variant(transformers, "falcon", FAR, alibi=False, **kwargs)
    assert (specs[0].head_dim, specs[0].rotary_dim, specs[0].layout) == (16, 16, "half")
    with pytest.raises(NoRopeError, match="ALiBi"):
        rope_spec({"model_type": "falcon", **kwargs, "alibi": True})


@pytest.mark.parametrize(
    "model_type, kwargs",
    [
        ("nanochat", dict(SMALL, num_hidden_layers=1)),
        (
            "hunyuan_v1_dense",
            dict(
                SMALL,
                num_hidden_layers=1,
                head_dim=16,
                rope_parameters={"rope_type": "default", "rope_theta": 1e4},
            ),
        ),
        ("granite_swa", dict(SMALL, num_hidden_layers=2, layer_rope_theta=[10000.0, 0])),
    ],
    ids=["nanochat", "hunyuan_v1_dense", "granite_swa"],
)
def test_direction_norms_and_per_layer_switches(transformers, capture, model_type, kwargs):
    """NanoChat's clockwise rotation, HunYuan's norm after it, GraniteSWA's per-layer switch.

    NanoChat rotates by -t w and normalizes after; HunYuan normalizes after the rotation (a
    norm commutes with it); GraniteSWA switches RoPE off where layer_rope_theta is 0.
    """
    specs, _, _ = check_variant(transformers, model_type, FAR, **kwargs)
    if model_type == "nanochat":
        assert specs[0].clockwise and specs[0].normalized_after
    if model_type == "granite_swa":
        assert specs[1] is None
