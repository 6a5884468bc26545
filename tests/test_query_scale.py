"""Logit temperatures that grow with the number of keys (posenc_ref/query_scale.py).

The weight a leading key keeps among more keys, the multiplier that restores it, and the
log-length query scale that follows from it; each claim of the page's derivation as a property.
"""

import math

import pytest
import torch
from hypothesis import example, given
from hypothesis import strategies as st

from posenc_ref.query_scale import focus_keeping_scale, log_length_scale, target_weight

keys = st.integers(2, 10**6)
margins = st.floats(0.05, 20.0)


@given(n=keys, margin=margins, scale=st.floats(0.1, 10.0))
@example(n=32, margin=math.log(31), scale=1.0)
def test_target_weight_is_the_softmax_of_one_leading_logit(n, margin, scale):
    logits = torch.zeros(min(n, 4096), dtype=torch.float64)
    logits[0] = scale * margin
    if n <= 4096:
        weight = float(torch.softmax(logits, 0)[0])
        assert math.isclose(target_weight(n, margin, scale), weight, rel_tol=1e-12)
    more, fewer = target_weight(n + 1, margin, scale), target_weight(n, margin, scale)
    assert more <= fewer  # distraction: strictly less, once float64 can tell them apart
    step = math.exp(-scale * margin)  # what one more key adds to the denominator
    assert more < fewer or 1.0 + n * step == 1.0 + (n - 1) * step


@given(n=keys, n0=keys, margin=margins)
@example(n=256, n0=32, margin=math.log(31))
def test_focus_keeping_scale_keeps_the_weight(n, n0, margin):
    """With the multiplier, the leading key among n keys gets what it had among n0 at 1."""
    scale = focus_keeping_scale(n, n0, margin)
    if scale <= 0:  # far fewer keys than n0 and a small margin: no positive multiplier does it
        return
    assert math.isclose(target_weight(n, margin, scale), target_weight(n0, margin), rel_tol=1e-9)


@given(n=keys, n0=keys)
def test_with_half_the_attention_it_is_the_log_ratio(n, n0):
    """Delta = ln(n0 - 1) means half the attention at n0; then lambda = ln(n - 1) / ln(n0 - 1)."""
    if n0 < 3:
        return
    margin = math.log(n0 - 1)
    assert math.isclose(target_weight(n0, margin), 0.5, rel_tol=1e-12)
    if n > 2:
        ratio = math.log(n - 1) / math.log(n0 - 1)
        assert math.isclose(focus_keeping_scale(n, n0, margin), ratio, rel_tol=1e-12)


@given(length=st.integers(3, 4096), positions=st.lists(st.integers(0, 10**6), min_size=1))
def test_log_length_scale_is_one_inside_and_the_log_ratio_past(length, positions):
    scale = log_length_scale(torch.tensor(positions), length)
    for m, got in zip(positions, scale.tolist(), strict=True):
        if m <= length - 1:
            assert got == 1.0
        else:
            assert math.isclose(got, math.log(m) / math.log(length - 1), rel_tol=1e-12)


def test_page_numbers():
    """L0 = 32 keys, a key with half the attention: among 256 keys it keeps 0.11; lambda 1.61."""
    margin = math.log(31)
    assert f"{target_weight(256, margin):.2f}" == "0.11"
    assert f"{focus_keeping_scale(256, 32, margin):.2f}" == "1.61"
    assert f"{target_weight(256, margin, focus_keeping_scale(256, 32, margin)):.2f}" == "0.50"


def test_bad_input():
    with pytest.raises(ValueError, match="keys"):
        target_weight(0, 1.0)
    with pytest.raises(ValueError, match="margin"):
        focus_keeping_scale(10, 5, 0.0)
    with pytest.raises(ValueError, match="original_max_len"):
        log_length_scale(torch.arange(4), 2)
