"""M-RoPE position ids of multimodal sequences: the reference equals transformers' own builders.

``posenc_ref.mrope_positions.mrope_position_ids`` is the rule of each family written as maths;
transformers 5.23's ``get_rope_index`` of a tiny model of each family (built from its config
classes, nothing downloaded) must give the same positions on the kit's sequences, at every
merge size, with Qwen2.5-VL's time scaling at several ``tokens_per_second``.
"""

import pytest
import torch

from posenc_ref.mrope_positions import (
    IMAGE,
    POSITION_RULES,
    TEXT,
    VIDEO,
    MultimodalSequence,
    grid_positions_3d,
    mrope_position_ids,
)
from posenc_ref.testing._builders import builder_sequences


@pytest.mark.peers
@pytest.mark.parametrize("family", list(POSITION_RULES))
def test_the_reference_is_transformers_get_rope_index(family):
    pytest.importorskip("transformers")
    from tests.hf_position_builders import hf_builder

    builder = hf_builder(family)
    for merge in (1, 2, 4):
        for tokens_per_second in (1.0, 2.0, 4.0) if family == "qwen2_5_vl" else (2.0,):
            for name, sequence in builder_sequences(family, merge, tokens_per_second).items():
                ours = mrope_position_ids(sequence, family)
                assert torch.equal(ours, builder(sequence)), (family, merge, name)


def test_text_resumes_after_the_grids_largest_height_and_width_index():
    """An 8 x 4 patch image merged 2 x 2 is 4 x 2 tokens: text resumes 4 positions on."""
    types = torch.tensor([TEXT] * 2 + [IMAGE] * 8 + [TEXT] * 2)
    sequence = MultimodalSequence(types, image_grids=torch.tensor([[1, 8, 4]]))
    positions = mrope_position_ids(sequence, "qwen2_vl")
    assert positions[:, -2:].tolist() == [[6, 7]] * 3
    assert positions[1, 2:10].tolist() == [2, 2, 3, 3, 4, 4, 5, 5]  # rows
    assert positions[2, 2:10].tolist() == [2, 3] * 4  # columns


def test_qwen2_5_vl_scales_a_videos_time_and_not_an_images():
    types = torch.tensor([VIDEO] * 12 + [TEXT] + [IMAGE] * 4)
    sequence = MultimodalSequence(
        types, image_grids=torch.tensor([[1, 4, 4]]), video_grids=torch.tensor([[3, 4, 4]]),
        second_per_grid=torch.tensor([1.5]), tokens_per_second=2.0,
    )  # fmt: skip
    scaled = mrope_position_ids(sequence, "qwen2_5_vl")
    assert scaled[0, :12].tolist() == [0] * 4 + [3] * 4 + [6] * 4  # 2 x 1.5 = 3 per patch
    assert scaled[0, 13:].tolist() == [3] * 4  # the image: time step 1, from the text position
    plain = mrope_position_ids(sequence, "qwen2_vl")
    assert plain[0, :12].tolist() == [0] * 4 + [1] * 4 + [2] * 4


def test_timestamp_families_place_each_frame_by_its_own_text():
    sequence = builder_sequences("qwen3_vl", 2)["a video"]
    positions = mrope_position_ids(sequence, "qwen3_vl")
    frames = positions[0][sequence.token_types == VIDEO].reshape(3, -1)  # 3 frames of 2 x 4
    assert all(len(set(frame.tolist())) == 1 for frame in frames)  # one time per frame
    assert frames[1, 0] > frames[0, 0] + 3  # after the first frame and its timestamp
    assert torch.equal(positions, mrope_position_ids(sequence, "glm4v"))


def test_grid_positions_3d_is_time_major_then_row_major():
    p = grid_positions_3d((2, 2, 6), 5, 2, time_step=2.5)
    assert p.tolist() == [[5, 5, 5, 7, 7, 7], [5, 5, 5, 5, 5, 5], [5, 6, 7, 5, 6, 7]]


def test_bad_sequences_are_refused_with_the_run_named():
    types = torch.tensor([TEXT, IMAGE, IMAGE, IMAGE])
    with pytest.raises(ValueError, match="run of 3 tokens from token 1 has a grid"):
        mrope_position_ids(MultimodalSequence(types, image_grids=torch.tensor([[1, 4, 4]])),
                           "qwen2_vl")  # fmt: skip
    with pytest.raises(ValueError, match="no grid left"):
        mrope_position_ids(MultimodalSequence(types), "qwen2_vl")
    with pytest.raises(ValueError, match="family must be one of"):
        mrope_position_ids(MultimodalSequence(types), "llava")
