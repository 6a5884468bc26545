"""The table checks: sinusoidal tables, ALiBi slopes and biases, T5 buckets.

Each check must pass our own functions and tables written the way tutorials write them, and name
the classic mistake (PEERS.md sections 1, 6 and 7) when given a table that makes it.
"""

import math
import re

import numpy as np
import pytest
import torch

from posenc_ref import alibi_bias, alibi_slopes, sinusoidal, t5_relative_bucket
from posenc_ref.testing import (
    assert_alibi_bias_equal,
    assert_alibi_slopes_equal,
    assert_sinusoidal_equal,
    assert_t5_buckets_equal,
)
from posenc_ref.testing._relative import t5_model


def diagnosis(message: str) -> list[str]:
    if "Diagnosis (tested" not in message:
        return []
    block = message.split("Diagnosis (tested", 1)[1].split("Tolerance per", 1)[0]
    return re.findall(r"^    - ([^:]+):", block, flags=re.M)


def failure(check, *args, **kwargs) -> str:
    with pytest.raises(AssertionError) as info:
        check(*args, **kwargs)
    return str(info.value)


# --- sinusoidal --------------------------------------------------------------------------------


def tutorial_table(
    num_positions,
    dim=64,
    *,
    base=10000.0,
    layout="interleaved",
    shift=0,
    positions_dtype=torch.float32,
    column_exponent=None,
    fairseq=False,
):
    """The PyTorch-tutorial construction in float32, with one switch per circulated mistake."""
    position = (torch.arange(num_positions) + shift).to(positions_dtype).float()[:, None]
    if column_exponent is not None:  # base ** (c * j / d) with the column index j
        j = torch.arange(dim, dtype=torch.float32)
        angles = position * base ** (-column_exponent * j / dim)
        table = torch.where(j.long() % 2 == 0, torch.sin(angles), torch.cos(angles))
        return table
    if fairseq:
        div = torch.exp(torch.arange(dim // 2).float() * -(math.log(base) / (dim // 2 - 1)))
    else:
        div = torch.exp(torch.arange(0, dim, 2).float() * (-math.log(base) / dim))
    angles = position * div
    if layout == "concatenated":
        return torch.cat([torch.sin(angles), torch.cos(angles)], dim=-1)
    table = torch.zeros(num_positions, dim)
    table[:, 0::2] = torch.sin(angles)
    table[:, 1::2] = torch.cos(angles)
    return table


def test_sinusoidal_passes_ours_and_the_tutorial_construction():
    assert_sinusoidal_equal(sinusoidal(4096, 64))
    assert_sinusoidal_equal(tutorial_table)  # a function of num_positions
    assert_sinusoidal_equal(tutorial_table(5000)[:, None, :])  # the tutorial's (max_len, 1, d)
    assert_sinusoidal_equal(tutorial_table(100).numpy())  # a NumPy array
    assert_sinusoidal_equal(sinusoidal(300, 16, base=100.0, dtype=torch.float64), base=100.0)


def test_sinusoidal_strict_mode_separates_float32_and_float64_angles():
    assert_sinusoidal_equal(sinusoidal(8192, 64, dtype=torch.float64), float32_angles=False)
    message = failure(assert_sinusoidal_equal, tutorial_table, float32_angles=False)
    assert "Diagnosis (tested): float32 angles" in message


def test_sinusoidal_first_position():
    """A table whose rows start at position 2 (fairseq's padding_idx + 1) passes when told so."""
    table = tutorial_table(300, shift=2)
    assert_sinusoidal_equal(table, first_position=2)
    assert diagnosis(failure(assert_sinusoidal_equal, table)) == []  # shift 2: no model


SINUSOIDAL_WRONG = [
    ({"layout": "concatenated"}, "the concatenated layout"),
    ({"base": 100.0}, "a different base"),
    ({"base": 500000.0}, "a different base"),
    ({"shift": 1}, "positions off by one"),
    ({"column_exponent": 1.0}, "the column index in the exponent"),
    ({"column_exponent": 2.0}, "the column index in the exponent"),
    ({"positions_dtype": torch.bfloat16}, "positions in bfloat16"),
    ({"positions_dtype": torch.float16}, "positions in float16"),
    ({"fairseq": True}, "fairseq's frequencies"),
    ({"layout": "concatenated", "base": 500000.0}, "the concatenated layout and a different base"),
    ({"layout": "concatenated", "fairseq": True},
     "the concatenated layout and fairseq's frequencies"),
]  # fmt: skip


@pytest.mark.parametrize(
    "mistake, title", SINUSOIDAL_WRONG, ids=[str(w[0]) for w in SINUSOIDAL_WRONG]
)
def test_sinusoidal_mistakes_get_their_diagnosis(mistake, title):
    message = failure(assert_sinusoidal_equal, lambda n: tutorial_table(n, **mistake))
    assert diagnosis(message)[:1] == [title], message


def test_sinusoidal_message_names_row_column_and_base():
    message = failure(assert_sinusoidal_equal, tutorial_table(64, base=500000.0))
    assert "First disagreement: position 1, column 2 (sin of pair 1)" in message
    assert "your table uses base 500000 where the reference has 10000" in message


def test_sinusoidal_shape_problems():
    with pytest.raises(AssertionError, match="looks transposed"):
        assert_sinusoidal_equal(tutorial_table(100).T, dim=64)
    with pytest.raises(AssertionError, match="odd width"):
        assert_sinusoidal_equal(torch.zeros(10, 7))
    with pytest.raises(AssertionError, match="fewer than num_positions"):
        assert_sinusoidal_equal(tutorial_table(10), num_positions=20)
    with pytest.raises(TypeError):
        assert_sinusoidal_equal("table")
    with pytest.raises(ValueError):
        assert_sinusoidal_equal(tutorial_table(10), base=1.0)


# --- ALiBi -------------------------------------------------------------------------------------


def geometric(n):
    return 2.0 ** (-8.0 * torch.arange(1, n + 1) / n)


def test_alibi_slopes_pass_ours_as_function_and_tensor():
    assert_alibi_slopes_equal(alibi_slopes)
    assert_alibi_slopes_equal(alibi_slopes(12))
    assert_alibi_slopes_equal(np.array(alibi_slopes(12).tolist()), 12)


def test_alibi_slopes_hf_mpt_construction_is_the_same_set_in_the_same_order():
    """MPT: 2^(-8k/n') for the next power of two, odd positions first, cut to n: equal."""

    def mpt(n):
        n_pow2 = 2 ** math.ceil(math.log2(n))
        slopes = 1.0 / torch.pow(2, torch.arange(1, n_pow2 + 1).float() * (8 / n_pow2))
        if n_pow2 != n:
            slopes = torch.cat([slopes[1::2], slopes[::2]])[:n]
        return slopes

    assert_alibi_slopes_equal(mpt)


ALIBI_WRONG = [
    (geometric, "2^(-8h/n) for every head count"),
    (lambda n: alibi_slopes(n).sort(descending=True).values, "slopes sorted"),
    (lambda n: alibi_slopes(n).flip(0), "slopes reversed"),
    (lambda n: 2.0 ** (-8.0 * torch.arange(0, n) / n), "the head index from 0"),
]


@pytest.mark.parametrize("fn, title", ALIBI_WRONG, ids=[w[1] for w in ALIBI_WRONG])
def test_alibi_slope_mistakes_get_their_diagnosis(fn, title):
    heads = (8, 16) if title == "the head index from 0" else None  # power-of-two only
    message = failure(assert_alibi_slopes_equal, fn, heads)
    assert diagnosis(message)[:1] == [title], message


def test_alibi_slopes_mlx_bug_on_twelve_heads():
    """The 12-head case (ofirpress #17, MLX PR #3071): 2^(-8h/12) is a different set."""
    message = failure(assert_alibi_slopes_equal, geometric(12))
    assert "num_heads=12: head 0 has slope 0.62996" in message
    assert diagnosis(message) == ["2^(-8h/n) for every head count"]


def test_alibi_bias_passes_ours_and_row_shifted_forms():
    assert_alibi_bias_equal(alibi_bias, 12, 16, 20)
    # fairseq: +m j (a constant per row away from -m (i - j)), no mask in the bias.
    assert_alibi_bias_equal(
        lambda h, q, k: alibi_slopes(h)[:, None, None] * torch.arange(k).float().expand(h, q, k),
        8,
        16,
    )
    assert_alibi_bias_equal(alibi_bias(6, 10, 10, causal=False), 6, 10, causal=False)


def test_alibi_bias_sign_and_slopes_are_diagnosed():
    flipped = -alibi_bias(8, 16, 16).nan_to_num(neginf=0.0)
    message = failure(assert_alibi_bias_equal, flipped, 8, 16)
    assert "your bias grows with the distance" in message

    def geometric_bias(h, q, k):
        distance = (torch.arange(q)[:, None] - torch.arange(k)[None]).abs().float()
        return -geometric(h)[:, None, None] * distance

    message = failure(assert_alibi_bias_equal, geometric_bias, 12, 16)
    assert diagnosis(message) == ["2^(-8h/n) for every head count"]


def test_alibi_bias_wrong_shape():
    with pytest.raises(AssertionError, match="must have shape"):
        assert_alibi_bias_equal(torch.zeros(8, 16, 15), 8, 16)


# --- T5 ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("bidirectional", [True, False])
@pytest.mark.parametrize("num_buckets, max_distance", [(32, 128), (64, 256), (8, 20)])
def test_t5_passes_ours(bidirectional, num_buckets, max_distance):
    params = {"bidirectional": bidirectional, "num_buckets": num_buckets}
    params["max_distance"] = max_distance
    assert_t5_buckets_equal(lambda r: t5_relative_bucket(r, **params), **params)


@pytest.mark.peers
@pytest.mark.parametrize("bidirectional", [True, False])
def test_t5_passes_hf_transformers(bidirectional):
    transformers = pytest.importorskip("transformers")
    attention = transformers.models.t5.modeling_t5.T5Attention

    def hf(relative_position):
        return attention._relative_position_bucket(
            relative_position, bidirectional=bidirectional, num_buckets=32, max_distance=128
        )

    assert_t5_buckets_equal(hf, bidirectional=bidirectional)


T5_WRONG = [
    (True, lambda r: t5_relative_bucket(-r), "the query - key sign"),
    (False, lambda r: t5_relative_bucket(-r.abs(), bidirectional=False),
     "future keys outside bucket 0"),
    (True, lambda r: t5_relative_bucket(r, bidirectional=False), "the bidirectional flag inverted"),
    (True, lambda r: t5_model(r, bidirectional=True, num_buckets=32, max_distance=128,
                               halve=False), "buckets not halved per direction"),
    (True, lambda r: t5_model(r, bidirectional=True, num_buckets=32, max_distance=128,
                               rounding="round"), "rounding instead of truncation"),
    (True, lambda r: t5_model(r, bidirectional=True, num_buckets=32, max_distance=128,
                               cap=False), "no saturation"),
]  # fmt: skip


@pytest.mark.parametrize("bidirectional, fn, title", T5_WRONG, ids=[w[2] for w in T5_WRONG])
def test_t5_mistakes_get_their_diagnosis(bidirectional, fn, title):
    message = failure(assert_t5_buckets_equal, fn, bidirectional=bidirectional)
    assert diagnosis(message)[:1] == [title], message


def test_t5_models_are_the_reference_with_every_switch_off():
    rel = torch.arange(-2000, 2001)
    for bidirectional in (True, False):
        params = {"bidirectional": bidirectional, "num_buckets": 32, "max_distance": 128}
        assert torch.equal(t5_model(rel, **params), t5_relative_bucket(rel, **params))


def test_t5_message_shows_the_first_distances():
    message = failure(assert_t5_buckets_equal, lambda r: t5_relative_bucket(-r))
    assert "First disagreement (smallest |key - query|): relative position -1" in message
    assert "expected:" in message


def test_t5_bad_output():
    with pytest.raises(AssertionError, match="same shape"):
        assert_t5_buckets_equal(lambda r: r[:3])
    with pytest.raises(AssertionError, match="must be integers"):
        assert_t5_buckets_equal(lambda r: r.float())
