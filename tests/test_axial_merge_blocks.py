"""The patch order of vision towers that merge 2 x 2 blocks: merge_block_order, grid_positions.

Qwen2-VL, Qwen2.5-VL and Qwen3-VL hold their patches block by block (``spatial_merge_size`` 2 in
their released vision configs). posenc_ref.axial gives that order as an option of the position
builder; it must be transformers' ``get_vision_position_ids`` and what Qwen2-VL's and Qwen3-VL's
own vision towers make and rotate by, and the kit's axial check must tell the two orders apart.
"""

import pytest
import torch

from posenc_ref.axial import apply_axial_rope, grid_positions, merge_block_order
from posenc_ref.testing import assert_axial_rope_equal

GRIDS = [(2, 2), (4, 6), (6, 4), (8, 10)]


@pytest.mark.parametrize("height, width", GRIDS)
def test_merge_block_order_is_a_permutation_of_whole_blocks(height, width):
    order = merge_block_order(height, width, 2)
    assert sorted(order.tolist()) == list(range(height * width))
    rows, cols = order // width, order % width
    for start in range(0, height * width, 4):  # each group of four: one 2 x 2 block
        block_rows, block_cols = rows[start : start + 4], cols[start : start + 4]
        assert set(block_rows.tolist()) == {int(block_rows[0])} | {int(block_rows[0]) + 1}
        assert int(block_cols.max()) - int(block_cols.min()) == 1
    assert torch.equal(merge_block_order(height, width, 1), torch.arange(height * width))


def test_merge_block_order_refuses_partial_blocks():
    with pytest.raises(ValueError, match="multiples of merge_size=2"):
        merge_block_order(3, 4, 2)
    with pytest.raises(ValueError, match="merge_size"):
        grid_positions(4, 4, "qwen2_vl", merge_size=0)


@pytest.mark.peers
@pytest.mark.parametrize("height, width", GRIDS)
def test_grid_positions_in_merge_blocks_are_transformers_vision_position_ids(height, width):
    vision_utils = pytest.importorskip("transformers.vision_utils")
    theirs = vision_utils.get_vision_position_ids(torch.tensor([[1, height, width]]), 2)
    ours = grid_positions(height, width, "qwen2_vl", merge_size=2)
    assert torch.equal(theirs.double(), ours)


@pytest.fixture(scope="module", params=["qwen2_vl", "qwen3_vl"])
def vl_tower(request):
    """Qwen2-VL's or Qwen3-VL's vision tower, spatial_merge_size 2 (tiny, random weights)."""
    transformers = pytest.importorskip("transformers")
    common = {"depth": 1, "num_heads": 4, "patch_size": 2, "temporal_patch_size": 1,
              "spatial_merge_size": 2}  # fmt: skip
    if request.param == "qwen2_vl":
        from transformers.models.qwen2_vl import modeling_qwen2_vl as m

        config = transformers.Qwen2VLVisionConfig(embed_dim=64, hidden_size=32, **common)
        return m, m.Qwen2VisionTransformerPretrainedModel(config).eval()
    from transformers.models.qwen3_vl import modeling_qwen3_vl as m

    config = transformers.Qwen3VLVisionConfig(
        hidden_size=64, out_hidden_size=32, intermediate_size=64, num_position_embeddings=64,
        deepstack_visual_indexes=[], **common,
    )  # fmt: skip
    return m, m.Qwen3VLVisionModel(config).eval()


def tower_rotation(vl_tower, height: int, width: int):
    """The tower's own positions and (cos, sin), captured from a forward pass."""
    m, model = vl_tower
    calls = []
    hook = model.rotary_pos_emb.register_forward_hook(lambda _m, a, out: calls.append((a, out)))
    with torch.no_grad():
        model(torch.randn(height * width, 3 * 2 * 2), grid_thw=torch.tensor([[1, height, width]]))
    hook.remove()
    (_, position_ids), (cos, sin) = calls[0]
    return m, position_ids, cos, sin


@pytest.mark.peers
def test_vl_tower_positions_and_rotation_are_the_merge_block_ones(vl_tower):
    m, position_ids, cos, sin = tower_rotation(vl_tower, 4, 6)
    ours = grid_positions(4, 6, "qwen2_vl", merge_size=2)
    assert torch.equal(position_ids.double(), ours)
    g = torch.Generator().manual_seed(0)
    q, k = (torch.randn(1, 4, 24, 16, generator=g) for _ in range(2))
    q_hf, _ = m.apply_rotary_pos_emb_vision(q[0].transpose(0, 1), k[0].transpose(0, 1), cos, sin)
    mine = apply_axial_rope(q, ours, base=10000.0, scheme="qwen2_vl")
    torch.testing.assert_close(mine, q_hf.transpose(0, 1)[None], atol=1e-5, rtol=0)


@pytest.mark.peers
def test_axial_spec_of_the_tower_config_gives_its_merge_block_positions(vl_tower):
    """axial_spec reads the tower's config: merge size 2, and the positions its forward made."""
    from posenc_ref.models import axial_spec

    _, model = vl_tower
    spec = axial_spec(model.config)
    assert (spec.scheme, spec.merge_size, spec.head_dim) == ("qwen2_vl", 2, 16)
    m, position_ids, cos, sin = tower_rotation(vl_tower, 4, 6)
    assert torch.equal(position_ids.double(), spec.positions(4, 6))
    q = torch.randn(1, 4, 24, 16, generator=torch.Generator().manual_seed(1))
    q_hf, _ = m.apply_rotary_pos_emb_vision(q[0].transpose(0, 1), q[0].transpose(0, 1), cos, sin)
    torch.testing.assert_close(
        spec.apply(q, spec.positions(4, 6)), q_hf.transpose(0, 1)[None], atol=1e-5, rtol=0
    )


@pytest.mark.peers
def test_the_kit_passes_the_tower_in_merge_blocks_and_names_the_row_major_order(vl_tower):
    def tower(q, k, grid):
        m, _, cos, sin = tower_rotation(vl_tower, *grid)
        qs, ks = (t[0].transpose(0, 1) for t in (q, k))  # (patches, heads, head_dim)
        q_rot, k_rot = m.apply_rotary_pos_emb_vision(qs, ks, cos, sin)
        return q_rot.transpose(0, 1)[None], k_rot.transpose(0, 1)[None]

    assert_axial_rope_equal(tower, scheme="qwen2_vl", head_dim=16, base=10000.0, merge_size=2)
    with pytest.raises(AssertionError) as info:
        assert_axial_rope_equal(tower, scheme="qwen2_vl", head_dim=16, base=10000.0)
    assert "- patches in 2 x 2 merge blocks instead of row-major order:" in str(info.value)


def test_which_towers_hold_merge_blocks():
    """In transformers 5.23 the merge-block order is not Qwen's alone, and PaddleOCR-VL's is not it.

    The towers that call transformers' ``get_vision_position_ids`` with their
    ``spatial_merge_size`` (block-major positions) include GLM-4V, MiniMax-M3-VL and ERNIE-4.5-VL
    beside Qwen's; PaddleOCR-VL's passes 1 (row-major), whatever its config's merge size.
    """
    import re
    from pathlib import Path

    transformers = pytest.importorskip("transformers")
    call = re.compile(r"get_vision_position_ids\(\s*grid_thw,\s*([^,)]+)")
    merge_size = {}
    for path in (Path(transformers.__file__).parent / "models").glob("*/modeling_*.py"):
        for match in call.finditer(path.read_text(encoding="utf-8")):
            merge_size[path.parent.name] = match.group(1).strip()
    blocks = {family for family, size in merge_size.items() if size == "self.spatial_merge_size"}
    assert {
        "qwen2_vl",
        "qwen2_5_vl",
        "qwen3_vl",
        "glm4v",
        "minimax_m3_vl",
        "ernie4_5_vl_moe",
    } <= blocks
    assert merge_size["paddleocr_vl"] == "1"
