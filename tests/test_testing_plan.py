"""The kit's plan: every pattern asked for is made below max_position, or refused with why.

Before, a packed row, the rows, the chunks and the window around the original context were
dropped without a word below ``original context + 20`` (issue 39): a function whose table has
exactly ``max_position_embeddings`` rows was never called with them.
"""

import pytest
import torch

from posenc_ref import RotaryEmbedding
from posenc_ref.testing._calls import position_runs
from posenc_ref.testing._plan import PATTERNS, PatternError, plan_calls

ALL = ("prefill", "decode", "chunk", "rows", "packed")
PLAIN = RotaryEmbedding(16, layout="half")  # original context: the default 4096
SCALED = RotaryEmbedding(16, layout="half", scaling={"method": "yarn", "factor": 4.0,
                                                      "original_max_len": 2048})  # fmt: skip


@pytest.mark.parametrize("reference", [PLAIN, SCALED], ids=["plain", "yarn 2048"])
@pytest.mark.parametrize("max_position", [4, 5, 63, 300, 2047, 2048, 4095, 4096, 4200, None])
def test_every_pattern_is_made_below_max_position(reference, max_position):
    plan = plan_calls(reference, max_position, ALL)
    kinds = {c.kind for c in plan.calls}
    assert kinds == set(ALL)
    if max_position is not None:
        assert max(int(c.positions.max()) for c in plan.calls) == max_position
    rows = next(c for c in plan.calls if c.kind == "rows").positions[:, 0, 0]
    assert len(set(rows.tolist())) >= 2 and int(rows.max()) > 0  # offsets a row bug shows
    packed = next(c for c in plan.calls if c.kind == "packed").positions
    assert len(position_runs(packed)) == 4  # four sequences, each restarting
    chunks = [c.positions for c in plan.calls if c.kind == "chunk"]
    assert int(chunks[1][0]) == int(chunks[0][-1]) + 1  # the second starts where the first ended
    assert plan.calls == sorted(plan.calls, key=lambda c: int(c.positions.max()))


def test_a_short_table_is_said_in_the_report_lines():
    made = plan_calls(PLAIN, 4095, ALL).made()
    assert made[0].startswith("Patterns made: prefill")
    assert any("past max_position 4095" in line for line in made)
    assert any("The chunked prefill meets at position" in line for line in made)


def test_patterns_that_cannot_be_made_are_refused():
    with pytest.raises(PatternError, match="'rows' needs max_position >= 2"):
        plan_calls(PLAIN, 1, ("prefill", "rows"))
    with pytest.raises(PatternError, match="'packed' needs max_position >= 4"):
        plan_calls(PLAIN, 3, ("prefill", "packed"))
    with pytest.raises(PatternError, match="has no mrope_section"):
        plan_calls(PLAIN, None, ("prefill", "image"))
    assert "image" in PATTERNS
    assert {c.kind for c in plan_calls(PLAIN, None, ("prefill", "image"), ("image",)).calls} == {
        "prefill"
    }  # asked for by default only: left out for a reference without M-RoPE


def test_the_image_call_fits_a_short_mrope_table():
    mrope = RotaryEmbedding(16, layout="half", mrope_section=[2, 3, 3])
    plan = plan_calls(mrope, 30, ("prefill", "image"))
    image = next(c for c in plan.calls if c.kind == "image")
    assert int(image.positions.max()) <= 30 and image.positions.shape[0] == 3
    with pytest.raises(PatternError, match="'image' needs max_position >= 20"):
        plan_calls(mrope, 10, ("prefill", "image"))
    assert torch.equal(image.positions[0, :4], image.positions[1, :4])  # text: equal rows
