"""Axial (2-D) RoPE against each vision family's own code in transformers (skipped without it).

For every family of posenc_ref.axial.FAMILIES: a tiny vision config with random weights (nothing
downloaded), the family's own rotary module fed the positions its own code makes for a grid
(captured from a forward pass of the vision model where the positions are made inside it), and
the family's own apply function on random q and k. posenc_ref's apply_axial_rope on the same
q and k, with the scheme's own grid positions, must agree to HF's float32-angle bound; every
other scheme must not (negative control).

The bound is tests/test_models_hf.py's: HF forms frequencies and angles in float32, an angle
``m * w`` off by at most ``2**-24 * (m + 1) * (ln(base) + 10)``; here ``m`` is the largest
``|coordinate| * w / w_0`` of the grid (2 pi for DINOv3's coordinates in [-1, 1]).
"""

import math

import pytest
import torch

from posenc_ref.axial import FAMILIES, SCHEMES, apply_axial_rope, grid_positions

pytestmark = pytest.mark.peers

ULP = 2.0**-24
HEIGHT, WIDTH = 3, 5  # a small non-square grid: rows and columns cannot be swapped unnoticed
HEADS = 2


@pytest.fixture(scope="module")
def transformers():
    return pytest.importorskip("transformers")


def angle_atol(max_angle_position: float, base: float) -> float:
    return ULP * (max_angle_position + 1) * (math.log(base) + 10) + 8 * ULP


def _capture(module):
    """Record the positional arguments and the output of module's forward calls."""
    calls = []
    module.register_forward_hook(lambda _m, args, out: calls.append((args, out)))
    return calls


def _qk(n: int, head_dim: int, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    return tuple(torch.randn(1, HEADS, n, head_dim, generator=g) for _ in range(2))


# Each case: build the family, rotate q and k (batch, heads, patches, head_dim) with its own code.
# Returns (q_rotated, k_rotated, base, head_dim, hf_positions or None, our positions).


def _pixtral(transformers, q, k):
    from transformers.models.pixtral import modeling_pixtral as m

    config = transformers.PixtralVisionConfig(
        hidden_size=64, num_attention_heads=4, num_hidden_layers=1, intermediate_size=32,
        patch_size=4, image_size=32,
    )  # fmt: skip
    model = m.PixtralVisionModel(config).eval()
    calls = _capture(model.patch_positional_embedding)
    with torch.no_grad():
        model(torch.randn(1, 3, 4 * HEIGHT, 4 * WIDTH))
    (_, position_ids), (cos, sin) = calls[0]
    return (*m.apply_rotary_pos_emb(q, k, cos, sin, unsqueeze_dim=0), config, position_ids)


def _qwen_vl(module_name, vision_class, **width):
    def case(transformers, q, k):
        import importlib

        m = importlib.import_module(f"transformers.models.{module_name}.modeling_{module_name}")
        config_class = getattr(transformers, vision_class)
        config = config_class(
            depth=1, num_heads=4, patch_size=2, temporal_patch_size=1, spatial_merge_size=1,
            **width,
        )  # fmt: skip
        model = m.__dict__[_VISION_MODELS[module_name]](config).eval()
        calls = _capture(model.rotary_pos_emb)
        with torch.no_grad():
            model(
                torch.randn(HEIGHT * WIDTH, 3 * 2 * 2), grid_thw=torch.tensor([[1, HEIGHT, WIDTH]])
            )
        (_, position_ids), (cos, sin) = calls[0]
        # The vision attention holds q and k as (patches, heads, head_dim).
        qs, ks = (t[0].transpose(0, 1) for t in (q, k))
        qr, kr = m.apply_rotary_pos_emb_vision(qs, ks, cos, sin)
        return qr.transpose(0, 1)[None], kr.transpose(0, 1)[None], config, position_ids

    return case


_VISION_MODELS = {
    "qwen2_vl": "Qwen2VisionTransformerPretrainedModel",
    "qwen2_5_vl": "Qwen2_5_VisionTransformerPretrainedModel",
    "qwen3_vl": "Qwen3VLVisionModel",
    "qwen3_vl_moe": "Qwen3VLMoeVisionModel",
    "qwen3_5": "Qwen3_5VisionModel",
    "qwen3_5_moe": "Qwen3_5MoeVisionModel",
}


def _mlcd(transformers, q, k):
    from transformers.models.mlcd import modeling_mlcd as m

    config = transformers.MLCDVisionConfig(
        hidden_size=64, num_attention_heads=4, num_hidden_layers=1, intermediate_size=32,
        patch_size=4, image_size=4 * WIDTH,
    )  # fmt: skip
    model = m.MLCDVisionModel(config).eval()
    calls = _capture(model.vision_rotary_embedding)
    with torch.no_grad():
        model(torch.randn(1, 3, 4 * HEIGHT, 4 * WIDTH))
    (_, position_ids), (cos, sin) = calls[0]  # the patches' tables (the class token's is learned)
    qs, ks = (t.transpose(1, 2) for t in (q, k))  # MLCD holds (batch, patches, heads, head_dim)
    qr, kr = m.apply_rotary_pos_emb_vision(qs, ks, cos[None], sin[None])
    return qr.transpose(1, 2), kr.transpose(1, 2), config, position_ids


def _llama4(transformers, q, k):
    from transformers.models.llama4 import modeling_llama4 as m

    # Llama 4's table is built for the square grid of its config, plus the class token (last).
    side = HEIGHT
    config = transformers.Llama4VisionConfig(
        hidden_size=64, num_attention_heads=4, image_size=4 * side, patch_size=4
    )
    freqs_ci = m.Llama4VisionRotaryEmbedding(config)(q)  # (side**2 + 1, 1, head_dim / 2)
    n = side * side
    qs, ks = (t[:, :, :n].transpose(1, 2) for t in (q, k))  # (batch, patches, heads, head_dim)
    qr, kr = m.vision_apply_rotary_emb(qs, ks, freqs_ci[:n])
    return qr.transpose(1, 2), kr.transpose(1, 2), config, None


def _sam2_video(transformers, q, k):
    from transformers.models.sam2_video import modeling_sam2_video as m

    config = transformers.Sam2VideoConfig(
        memory_attention_hidden_size=16, memory_attention_rope_feat_sizes=[WIDTH, HEIGHT]
    )
    position_ids = m.Sam2VideoMemoryAttention.precompute_positions(config)  # (x, y) per patch
    cos, sin = m.Sam2VideoVisionRotaryEmbedding(config)(q, position_ids)
    qr, kr = m.apply_rotary_pos_emb_2d(q, k, cos, sin)
    return qr, kr, config, position_ids.flip(-1)  # as (row, column)


def _dinov3(transformers, q, k):
    from transformers.models.dinov3_vit import modeling_dinov3_vit as m

    config = transformers.DINOv3ViTConfig(hidden_size=64, num_attention_heads=4, patch_size=4)
    cos, sin = m.DINOv3ViTRopePositionEmbedding(config).eval()(
        torch.randn(1, 3, 4 * HEIGHT, 4 * WIDTH)
    )
    qr, kr = m.apply_rotary_pos_emb(q, k, cos, sin)  # no prefix tokens: every token a patch
    return qr, kr, config, None


CASES = {
    "pixtral": _pixtral,
    # Qwen2-VL's attention width is embed_dim; the later ones call it hidden_size.
    "qwen2_vl": _qwen_vl("qwen2_vl", "Qwen2VLVisionConfig", embed_dim=64, hidden_size=32),
    "qwen2_5_vl": _qwen_vl(
        "qwen2_5_vl",
        "Qwen2_5_VLVisionConfig",
        hidden_size=64,
        intermediate_size=32,
        out_hidden_size=32,
    ),  # fmt: skip
    "qwen3_vl": _qwen_vl(
        "qwen3_vl",
        "Qwen3VLVisionConfig",
        hidden_size=64,
        intermediate_size=32,
        out_hidden_size=32,
        num_position_embeddings=16,
    ),  # fmt: skip
    **{
        name: _qwen_vl(
            name,
            vision_class,
            hidden_size=64,
            intermediate_size=32,
            out_hidden_size=32,
            num_position_embeddings=16,
        )
        for name, vision_class in (
            ("qwen3_vl_moe", "Qwen3VLMoeVisionConfig"),
            ("qwen3_5", "Qwen3_5VisionConfig"),
            ("qwen3_5_moe", "Qwen3_5MoeVisionConfig"),
        )
    },  # fmt: skip
    "mlcd": _mlcd,
    "llama4": _llama4,
    "sam2_video": _sam2_video,
    "dinov3_vit": _dinov3,
}


def _grid(family: str) -> tuple[int, int]:
    return (HEIGHT, HEIGHT) if family == "llama4" else (HEIGHT, WIDTH)


def _positions(family: str, scheme: str, config) -> torch.Tensor:
    positions = grid_positions(*_grid(family), scheme)
    return positions


def _base(config) -> float:
    params = getattr(config, "rope_parameters", None)
    return float(params["rope_theta"] if params else config.rope_theta)


def rotation_gap(transformers, family: str, scheme: str) -> tuple[float, float]:
    """(max |ours - HF|, that over the float32-angle bound) for q and k of a small grid."""
    head_dim = 16
    n = _grid(family)[0] * _grid(family)[1]
    q, k = _qk(n, head_dim, seed=sum(map(ord, family)))
    q_hf, k_hf, config, _ = CASES[family](transformers, q, k)
    base = _base(config)
    positions = _positions(family, scheme, config)
    freqs = SCHEMES[scheme].frequencies(head_dim, base)
    reach = float((positions.abs().max() * freqs.max()).ceil())  # the largest angle coefficient
    scale = 2 * max(float(q.abs().max()), float(k.abs().max()))
    bound = angle_atol(reach, base) * scale + 16 * ULP * scale
    gap = 0.0
    for x, theirs in ((q, q_hf), (k, k_hf)):
        ours = apply_axial_rope(x, positions, base=base, scheme=scheme)
        gap = max(gap, float((ours.double() - theirs.double()).abs().max()))
    return gap, gap / bound


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_axial_rope_agrees_with_family_code(transformers, family):
    """Rotated q and k of a 3 x 5 grid (3 x 3 for Llama 4) agree with the family's own code.

    Its rotary module, fed the positions its own code makes, and its own apply function;
    within HF's float32-angle bound.
    """
    gap, ratio = rotation_gap(transformers, family, FAMILIES[family])
    assert ratio <= 1.0, f"{family}: max |ours - HF| {gap:.3g} is {ratio:.3g} x the bound"


@pytest.mark.parametrize("family", sorted(set(FAMILIES) - {"sam2_video"}))
def test_axial_spec_of_the_config_rotates_as_the_family_code(transformers, family):
    """The config the family's code ran with, read by axial_spec, rotates as that code.

    Its scheme, head width, base and grid; the object and its dict read alike.
    """
    from posenc_ref.models import axial_spec

    n = _grid(family)[0] * _grid(family)[1]
    q, k = _qk(n, 16, seed=sum(map(ord, family)))
    q_hf, k_hf, config, _ = CASES[family](transformers, q, k)
    spec = axial_spec(config)
    assert spec == axial_spec(config.to_dict())
    assert (spec.scheme, spec.head_dim, spec.merge_size) == (FAMILIES[family], 16, 1)
    positions = spec.positions(*_grid(family))
    reach = float((positions.abs().max() * spec.inv_freq.max()).ceil())
    scale = 2 * max(float(q.abs().max()), float(k.abs().max()))
    bound = angle_atol(reach, spec.base) * scale + 16 * ULP * scale
    for x, theirs in ((q, q_hf), (k, k_hf)):
        assert float((spec.apply(x, positions).double() - theirs.double()).abs().max()) <= bound


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_other_schemes_disagree_with_family_code(transformers, family):
    """Negative control: every other scheme misses the family's rotation by far."""
    for scheme in SCHEMES:
        if scheme != FAMILIES[family]:
            gap, ratio = rotation_gap(transformers, family, scheme)
            assert ratio > 100, f"{family} also matches scheme {scheme!r} ({ratio:.3g} x bound)"


@pytest.mark.parametrize(
    "family",
    ["pixtral", "qwen2_vl", "qwen2_5_vl", "qwen3_vl", "qwen3_vl_moe", "qwen3_5", "qwen3_5_moe",
     "mlcd"],
)  # fmt: skip
def test_grid_positions_are_the_family_positions(transformers, family):
    """The (row, column) positions the family's vision model makes are grid_positions'."""
    q, k = _qk(HEIGHT * WIDTH, 16, seed=0)
    *_, position_ids = CASES[family](transformers, q, k)
    expected = grid_positions(HEIGHT, WIDTH, FAMILIES[family])
    torch.testing.assert_close(position_ids.double(), expected, rtol=0, atol=0)


def test_sam2_positions_are_column_first(transformers):
    """SAM 2 writes (column, row) per patch; flipped, they are the grid's (row, column)."""
    q, k = _qk(HEIGHT * WIDTH, 16, seed=0)
    *_, position_ids = CASES["sam2_video"](transformers, q, k)
    expected = grid_positions(HEIGHT, WIDTH, FAMILIES["sam2_video"])
    torch.testing.assert_close(position_ids.double(), expected, rtol=0, atol=0)


def _flips(scheme):
    """The scheme with one choice changed: the other half to the rows, the other layout."""
    from posenc_ref.axial import columns_first, rows_first

    other_axes = columns_first if scheme.pair_axes is rows_first else rows_first
    other_layout = "interleaved" if scheme.layout == "half" else "half"
    return {
        "axes": scheme._replace(pair_axes=other_axes),
        "layout": scheme._replace(layout=other_layout),
    }


@pytest.mark.parametrize("family", sorted(FAMILIES))
@pytest.mark.parametrize("choice", ["axes", "layout"])
def test_one_wrong_choice_is_caught(transformers, monkeypatch, family, choice):
    """Negative control: the family's scheme with one choice changed misses by far.

    Only its axes, or only its layout, changed: so each choice is proven, not assumed.
    """
    variant = _flips(SCHEMES[FAMILIES[family]])[choice]
    monkeypatch.setitem(SCHEMES, "variant", variant)
    gap, ratio = rotation_gap(transformers, family, "variant")
    assert ratio > 100, f"{family} with its {choice} changed still matches ({ratio:.3g} x bound)"
