"""Bad input to the kit gets the kit's message, never a crash deep in torch (issue 25, item 6)."""

import numpy as np
import pytest
import torch

from posenc_ref import RotaryEmbedding
from posenc_ref.mrope import MAX_TOKENS, mrope_positions
from posenc_ref.testing import (
    assert_rope_equal,
    offset_fn,
    offsets_fn,
    positions_fn,
    rope_error,
    table_fn,
)

REFERENCE = RotaryEmbedding(16, layout="half")


def numpy_rope(x: np.ndarray, offset: int) -> np.ndarray:
    out = REFERENCE(torch.from_numpy(x.copy()), torch.from_numpy(x.copy()), offset=offset)[0]
    return out.numpy()


def test_a_numpy_view_with_negative_strides_is_checked_like_any_array():
    """x[..., ::-1] twice is x again; DLPack cannot carry negative strides (torch aborted)."""

    def reversed_twice(x, offset):
        flipped = numpy_rope(x, offset)[..., ::-1]
        return flipped[..., ::-1]

    assert_rope_equal(offset_fn(reversed_twice, arrays="numpy"), REFERENCE)

    def reversed_once(x, offset):
        return numpy_rope(x, offset)[..., ::-1]  # a real bug, and still no abort

    with pytest.raises(AssertionError, match="fn disagrees"):
        assert_rope_equal(offset_fn(reversed_once, arrays="numpy"), REFERENCE)


def test_a_sparse_output_gets_the_kits_message():
    with pytest.raises(AssertionError, match="sparse_coo tensor; return a dense"):
        assert_rope_equal(lambda q, k, p: (q.to_sparse(), k), REFERENCE)


def test_an_offset_fn_that_changes_width_gets_the_kits_message():
    def narrower_far_out(x, offset):
        out = numpy_rope(x, offset)
        return out[..., :8] if offset > 1000 else out

    with pytest.raises(AssertionError, match=r"returned x_rot of shape .* for x of shape"):
        assert_rope_equal(offset_fn(narrower_far_out, arrays="numpy"), REFERENCE)


def test_a_one_row_table_is_refused_with_what_a_table_needs():
    with pytest.raises(ValueError, match="one row .* positions 0 and 1"):
        table_fn(torch.ones(1, 8), torch.zeros(1, 8), layout="half")


def test_positions_float64_cannot_tell_apart_are_refused():
    with pytest.raises(ValueError, match="at most 2\\*\\*53"):
        assert_rope_equal(REFERENCE, REFERENCE, max_position=2**60)
    with pytest.raises(ValueError, match="at most 2\\*\\*53"):
        rope_error(REFERENCE, REFERENCE, torch.tensor([2**54]))


@pytest.mark.parametrize("device", ["nonsense", "gpu"])
def test_a_device_string_torch_does_not_know_is_named(device):
    with pytest.raises(ValueError, match="device="):
        assert_rope_equal(REFERENCE, REFERENCE, device=device)


def test_mrope_positions_refuses_huge_grids_and_int64_overflow():
    with pytest.raises(ValueError, match="tokens; mrope_positions builds at most"):
        mrope_positions(0, (1, 100_000, 100_000), 0)
    with pytest.raises(ValueError, match="largest int64 position"):
        mrope_positions(2, (1, 2, 3), 1, start=2**63 - 3)
    assert MAX_TOKENS >= 10_000_000  # Llama 4 Scout's context fits


def test_positions_fn_with_a_list_output_is_named():
    with pytest.raises(AssertionError, match="list for x_rot|not an array"):
        assert_rope_equal(positions_fn(lambda x, p: x.tolist()), REFERENCE)


# --- issue 39, item 7: the kit's own bad input ------------------------------------------------


def test_an_empty_patterns_tuple_is_refused_not_a_pass():
    with pytest.raises(ValueError, match="at least one call pattern"):
        assert_rope_equal(REFERENCE, REFERENCE, patterns=())


def test_a_pattern_that_cannot_be_made_is_refused_with_why():
    with pytest.raises(ValueError, match="has no mrope_section"):
        assert_rope_equal(REFERENCE, REFERENCE, patterns=("prefill", "image"))
    with pytest.raises(ValueError, match="needs max_position >= 4"):
        assert_rope_equal(REFERENCE, REFERENCE, patterns=("packed",), max_position=3)
    assert_rope_equal(REFERENCE, REFERENCE, patterns=("packed", "rows", "chunk"), max_position=4)
    table = table_fn(REFERENCE.cos_sin(torch.arange(64))[0], REFERENCE.cos_sin(
        torch.arange(64))[1], layout="half")  # fmt: skip
    mrope = RotaryEmbedding(16, layout="half", mrope_section=[2, 3, 3])
    with pytest.raises(ValueError, match="has no image call"):
        assert_rope_equal(table, mrope, patterns=("prefill", "image"))


@pytest.mark.parametrize("max_position", [10, 63, 4095])
def test_an_offsets_fn_using_the_first_rows_offset_is_caught_below_short_tables(max_position):
    """Before, the rows call was dropped below context + 20 and this passed."""
    one = offsets_fn(lambda x, offsets: REFERENCE(x, x, offset=int(offsets[0]))[0])
    with pytest.raises(AssertionError, match="one offset for every row"):
        assert_rope_equal(one, REFERENCE, max_position=max_position)


def test_a_meta_tensor_output_is_named():
    with pytest.raises(AssertionError, match="on the meta device, which holds shapes"):
        assert_rope_equal(positions_fn(lambda x, p: torch.empty_like(x, device="meta")), REFERENCE)


def test_an_exception_inside_fn_is_reported_as_the_users():
    def broken(q, k, positions):
        raise KeyError("rope_scaling")

    with pytest.raises(
        AssertionError, match=r"fn raised KeyError in the call with .*'rope_scaling'"
    ):
        assert_rope_equal(broken, REFERENCE)
