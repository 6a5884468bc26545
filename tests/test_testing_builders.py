"""The kit's check of M-RoPE position builders: right builders pass, each mistake is named.

For each of the four families (Qwen2-VL, Qwen2.5-VL, Qwen3-VL, GLM-4V), transformers' own
``get_rope_index`` passes ``assert_mrope_positions_equal``, and a builder written with each of
the four mistakes (text not resuming after the image, a grid transposed, the temporal index on
the wrong scale, the merge size ignored) is caught and named.
"""

import re

import pytest
import torch

from posenc_ref.mrope_positions import POSITION_RULES, mrope_position_ids
from posenc_ref.testing import assert_mrope_positions_equal
from posenc_ref.testing._builders import (
    BUILDER_BUG_MODELS,
    Mistake,
    builder_sequences,
    mistaken_positions,
)

FAMILIES = list(POSITION_RULES)


def named(message: str) -> list[str]:
    if "Diagnosis (tested" not in message:
        return []
    return re.findall(r"^    - ([^:]+):", message.split("Diagnosis (tested", 1)[1], flags=re.M)


def failure(builder, family) -> str:
    with pytest.raises(AssertionError) as info:
        assert_mrope_positions_equal(builder, family=family)
    return str(info.value)


# Builders written with each mistake, as ports make it (the positions of one family's rule,
# changed the one way).
def resume_by_tokens(family):
    def builder(sequence):  # text after a grid moves on by the grid's token count
        return mistaken_positions(sequence, family, Mistake(advance="tokens"))

    return builder


def transposed_grid(family):
    def builder(sequence):  # image_grid_thw read as (t, w, h)
        swapped = sequence.image_grids[:, [0, 2, 1]]
        videos = sequence.video_grids[:, [0, 2, 1]]
        from dataclasses import replace

        return mrope_position_ids(replace(sequence, image_grids=swapped, video_grids=videos),
                                  family)  # fmt: skip

    return builder


def temporal(family):
    def builder(sequence):
        return mistaken_positions(sequence, family, next(BUILDER_BUG_MODELS["time"]
                                                         .candidates(family)).mistake)  # fmt: skip

    return builder


def merge_forgotten(family):
    def builder(sequence):  # text moves on by max(h, w) patches, not merged tokens
        return mistaken_positions(sequence, family, Mistake(advance="patches"))

    return builder


MISTAKES = [
    (resume_by_tokens, "text that does not resume after the image"),
    (transposed_grid, "the grid transposed"),
    (temporal, "the temporal index on the wrong scale"),
    (merge_forgotten, "the merge size ignored"),
]


@pytest.mark.parametrize("family", FAMILIES)
@pytest.mark.parametrize("make, title", MISTAKES, ids=[t for _, t in MISTAKES])
def test_each_mistake_is_named_for_each_family(make, title, family):
    message = failure(make(family), family)
    assert named(message) == [title], message
    assert "First difference: token" in message


@pytest.mark.parametrize("family", FAMILIES)
def test_the_reference_passes_and_another_familys_rule_is_caught(family):
    assert_mrope_positions_equal(lambda s: mrope_position_ids(s, family), family=family)
    other = "qwen2_5_vl" if family != "qwen2_5_vl" else "qwen3_vl"
    failure(lambda s: mrope_position_ids(s, other), family)


@pytest.mark.peers
@pytest.mark.parametrize("family", FAMILIES)
def test_transformers_builders_pass(family):
    pytest.importorskip("transformers")
    from tests.hf_position_builders import hf_builder

    assert_mrope_positions_equal(hf_builder(family), family=family, merge_sizes=(1, 2, 4))


def test_the_rows_examples_are_named():
    for row in BUILDER_BUG_MODELS.values():
        example = row.example()
        assert named(failure(example.fn, example.reference))[:1] == [example.names]


def test_sequences_hold_text_only_image_only_and_several_grids():
    sequences = builder_sequences("qwen2_5_vl", 2)
    assert set(sequences["text only"].token_types.tolist()) == {0}
    assert set(sequences["an image only"].token_types.tolist()) == {1}
    mixed = sequences["images and videos"]
    assert len(mixed.image_grids) == 2 and len(mixed.video_grids) == 2


def test_malformed_builders_and_arguments_are_refused():
    with pytest.raises(AssertionError, match=r"must be \(3, 7\) integers"):
        assert_mrope_positions_equal(lambda s: torch.zeros(7), family="qwen2_vl")
    with pytest.raises(AssertionError, match="the builder raised KeyError on the sequence"):
        assert_mrope_positions_equal(lambda s: {}["x"], family="qwen2_vl")
    with pytest.raises(ValueError, match="family must be one of"):
        assert_mrope_positions_equal(lambda s: None, family="llava")
    with pytest.raises(ValueError, match="merge_sizes must hold 1, 2 or 4"):
        assert_mrope_positions_equal(lambda s: None, family="qwen2_vl", merge_sizes=(3,))
