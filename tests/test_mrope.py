"""Multimodal RoPE (posenc_ref/mrope.py).

The pair-to-row assignments (consecutive, interleaved, ERNIE's and NeoMME's alternating) from
their definitions, the tables from the formula, text positions reduce to plain RoPE, the relative
property per section (a score depends only on the difference of the positions, row by row), the
position helper's layout, and bad input.
"""

import math

import pytest
import torch
from hypothesis import example, given
from hypothesis import strategies as st

from posenc_ref import apply_rope, inv_freq, rope_cos_sin
from posenc_ref.mrope import mrope_cos_sin, mrope_pair_rows, mrope_positions
from tests.strategies import bases, layouts, seeds

F64 = torch.float64

# (time, height, width) pair counts; the released ones first.
released_sections = st.sampled_from([(16, 24, 24), (24, 20, 20), (11, 11, 10), (2, 1, 1)])
consecutive_sections = released_sections | st.tuples(
    st.integers(0, 12), st.integers(0, 12), st.integers(0, 12)
).filter(lambda c: sum(c) > 0)
# (section, assignment) as released: Qwen2/2.5-VL consecutive, Qwen3-VL and Qwen3.5 interleaved,
# ERNIE 4.5 VL alternating (its [22, 22, 20] is height, width, time), NeoMME two rows.
released_modes = st.sampled_from(
    [((16, 24, 24), "consecutive"), ((24, 20, 20), "interleaved"), ((11, 11, 10), "interleaved"),
     ((2, 1, 1), "consecutive"), ((2, 1, 1), "interleaved"), ((20, 22, 22), "alternating"),
     ((2, 1, 1), "alternating"), ((16, 16), "alternating_2d"), ((1, 1), "alternating_2d")]
)  # fmt: skip
grids = st.tuples(st.integers(1, 4), st.integers(1, 6), st.integers(1, 6))
mrope_rows = st.integers(0, 1 << 16)


def interleaved_rows_by_rule(section):
    """Qwen3-VL's rule, pair by pair: row r in (1, 2) if i % 3 == r and i < 3 * section[r]."""
    rows = []
    for i in range(sum(section)):
        r = i % 3
        rows.append(r if r in (1, 2) and i < 3 * section[r] else 0)
    return rows


@given(consecutive_sections)
@example((16, 24, 24))
def test_consecutive_rows(section):
    rows = mrope_pair_rows(section).tolist()
    assert rows == [0] * section[0] + [1] * section[1] + [2] * section[2]


@given(consecutive_sections)
@example((24, 20, 20))
@example((11, 11, 10))
@example((4, 3, 1))
@example((1, 2, 2))
def test_interleaved_rows(section):
    """Pair i takes row i mod 3 while that row has pairs left; the rest is time (else refused)."""
    expected = interleaved_rows_by_rule(section)
    if [expected.count(r) for r in range(3)] != list(section):
        with pytest.raises(ValueError, match="round-robin"):
            mrope_pair_rows(section, interleaved=True)
        return
    rows = mrope_pair_rows(section, interleaved=True).tolist()
    assert rows == expected
    dealt = 3 * min(section[1], section[2])  # full rounds of time, height, width
    assert rows[:dealt] == [i % 3 for i in range(dealt)]


@given(st.integers(0, 12), st.integers(0, 12), st.integers(0, 12))
@example(20, 22, 22)
def test_alternating_rows(time, height, width):
    """ERNIE 4.5 VL: height, width, height, ... over the first 2h pairs, then time (h = w)."""
    if height != width or time + height + width == 0:
        with pytest.raises(ValueError):
            mrope_pair_rows([time, height, width], assignment="alternating")
        return
    rows = mrope_pair_rows([time, height, width], assignment="alternating").tolist()
    assert rows == [1, 2] * height + [0] * time


@given(st.integers(0, 12), st.integers(0, 12))
@example(16, 16)
def test_alternating_2d_rows(height, width):
    """NeoMME: two rows; pair i takes row i mod 2 (h = w)."""
    if height != width or height + width == 0:
        with pytest.raises(ValueError):
            mrope_pair_rows([height, width], assignment="alternating_2d")
        return
    assert mrope_pair_rows([height, width], assignment="alternating_2d").tolist() == [0, 1] * height


def test_interleaved_released_qwen3_vl_layout():
    """Qwen3-VL [24, 20, 20]: pairs 0..59 round-robin, 60..63 time (HF's slice rule)."""
    rows = mrope_pair_rows([24, 20, 20], interleaved=True).tolist()
    assert rows[:60] == [0, 1, 2] * 20 and rows[60:] == [0, 0, 0, 0]


@given(consecutive_sections, st.booleans(), bases, seeds, st.integers(1, 5))
def test_tables_from_formula(section, interleaved, base, seed, seq_len):
    """cos/sin of pair i at token m is cos/sin(p_{r(i)}(m) * omega_i), with math.cos."""
    rule = interleaved_rows_by_rule(section)
    if interleaved and [rule.count(r) for r in range(3)] != list(section):
        interleaved = False  # a section the interleaved rule refuses
    rows = rule if interleaved else [0] * section[0] + [1] * section[1] + [2] * section[2]
    pairs = sum(section)
    gen = torch.Generator().manual_seed(seed)
    positions = torch.randint(0, 1 << 16, (3, seq_len), generator=gen)
    omega = inv_freq(2 * pairs, base)
    cos, sin = mrope_cos_sin(positions, omega, section, interleaved=interleaved, dtype=F64)
    assert cos.shape == sin.shape == (seq_len, pairs)
    for m in range(seq_len):
        for i, row in enumerate(rows):
            angle = int(positions[row, m]) * float(omega[i])
            assert float(cos[m, i]) == pytest.approx(math.cos(angle), abs=1e-12)
            assert float(sin[m, i]) == pytest.approx(math.sin(angle), abs=1e-12)


@given(released_modes, bases, st.lists(mrope_rows, min_size=1, max_size=8))
def test_text_tokens_are_plain_rope(mode, base, positions):
    """Equal rows (text): the M-RoPE table is the plain RoPE table, bit for bit."""
    section, assignment = mode
    pos = torch.tensor(positions)
    omega = inv_freq(2 * sum(section), base)
    rows = len(section)
    got = mrope_cos_sin(pos.expand(rows, -1), omega, section, assignment=assignment, dtype=F64)
    angles = pos.to(F64)[:, None] * omega
    assert torch.equal(got[0], torch.cos(angles)) and torch.equal(got[1], torch.sin(angles))


@given(
    released_modes,
    layouts,
    seeds,
    st.tuples(mrope_rows, mrope_rows, mrope_rows),
    st.tuples(mrope_rows, mrope_rows, mrope_rows),
    st.tuples(mrope_rows, mrope_rows, mrope_rows),
)
@example(((16, 24, 24), "consecutive"), "half", 0, (5, 9, 2), (5, 3, 3), (1000, 0, 7))
@example(((20, 22, 22), "alternating"), "interleaved", 0, (5, 9, 2), (5, 3, 3), (1000, 0, 7))
@example(((16, 16), "alternating_2d"), "half", 0, (5, 9, 2), (5, 3, 3), (1000, 0, 7))
def test_score_depends_only_on_position_difference(mode, layout, seed, p_query, p_key, shift):
    """Shift query and key by the same vector (any shift per row): the score is unchanged."""
    section, assignment = mode
    rows = len(section)  # the last rows of the 3-tuples (NeoMME: height, width)
    p_query, p_key, shift = p_query[3 - rows :], p_key[3 - rows :], shift[3 - rows :]
    pairs = sum(section)
    gen = torch.Generator().manual_seed(seed)
    q, k = torch.randn(2, 2 * pairs, generator=gen, dtype=F64)
    omega = inv_freq(2 * pairs)

    def rotated(x, position):
        cos, sin = mrope_cos_sin(
            torch.tensor(position)[:, None], omega, section, assignment=assignment, dtype=F64
        )
        return _rotate(x[None], cos, sin, layout)[0]

    moved_q = tuple(a + b for a, b in zip(p_query, shift, strict=True))
    moved_k = tuple(a + b for a, b in zip(p_key, shift, strict=True))
    before = float(rotated(q, p_query) @ rotated(k, p_key))
    after = float(rotated(q, moved_q) @ rotated(k, moved_k))
    assert after == pytest.approx(before, abs=1e-9 * (1 + float(q.norm() * k.norm())))


def _rotate(x, cos, sin, layout):
    """apply_rope with per-pair tables."""
    return apply_rope(x, cos, sin, layout=layout)


@given(st.integers(0, 20), grids, st.integers(0, 20), st.integers(0, 1 << 20))
@example(2, (1, 2, 3), 1, 0)
def test_positions_layout(text_before, grid, text_after, start):
    t, h, w = grid
    pos = mrope_positions(text_before, grid, text_after, start=start)
    n_image = t * h * w
    assert pos.shape == (3, text_before + n_image + text_after) and pos.dtype == torch.long
    text = pos[:, :text_before]
    assert torch.equal(text, torch.arange(start, start + text_before).expand(3, -1))
    s = start + text_before
    image = pos[:, text_before : text_before + n_image]
    k = 0
    for tau in range(t):
        for y in range(h):
            for x in range(w):
                assert image[:, k].tolist() == [s + tau, s + y, s + x]
                k += 1
    after = pos[:, text_before + n_image :]
    resume = int(image.max()) + 1 if n_image else s
    assert resume == s + max(t, h, w)
    assert torch.equal(after, torch.arange(resume, resume + text_after).expand(3, -1))


@pytest.mark.parametrize(
    "call, error, match",
    [
        (lambda: mrope_pair_rows([1, 2]), ValueError, "three"),
        (lambda: mrope_pair_rows("123"), TypeError, "mrope_section"),
        (lambda: mrope_pair_rows([1, -1, 2]), ValueError, r"mrope_section\[1\]"),
        (lambda: mrope_pair_rows([0, 0, 0]), ValueError, "at least one"),
        (lambda: mrope_pair_rows([1, 2, 2], interleaved=True), ValueError, "round-robin"),
        (lambda: mrope_pair_rows([1, 1, 1], interleaved=1), TypeError, "interleaved"),
        (lambda: mrope_pair_rows([1, 1, 1], assignment="ernie"), ValueError, "alternating_2d"),
        (
            lambda: mrope_pair_rows([2, 1, 1], interleaved=True, assignment="alternating"),
            ValueError,
            "contradicts",
        ),
        (lambda: mrope_pair_rows([2, 1, 2], assignment="alternating"), ValueError, "equal"),
        (lambda: mrope_pair_rows([2, 1, 1], assignment="alternating_2d"), ValueError, "two"),
        (
            lambda: mrope_cos_sin(
                torch.zeros(3, 4, dtype=torch.long),
                inv_freq(8),
                [2, 2],
                assignment="alternating_2d",
            ),
            ValueError,
            r"\(2, \.\.\., seq_len\) \(rows: height, width\)",
        ),
        (
            lambda: mrope_cos_sin(torch.zeros(2, 4, dtype=torch.long), inv_freq(8), [2, 1, 1]),
            ValueError,
            r"\(3, \.\.\., seq_len\)",
        ),
        (
            lambda: mrope_cos_sin(torch.zeros(3, 4, dtype=torch.long), inv_freq(6), [2, 1, 1]),
            ValueError,
            "inv_freq has 3",
        ),
        (
            lambda: mrope_cos_sin(-torch.ones(3, 4, dtype=torch.long), inv_freq(8), [2, 1, 1]),
            ValueError,
            ">= 0",
        ),
        (
            lambda: mrope_cos_sin(torch.zeros(3, 4, dtype=torch.bfloat16), inv_freq(8), [2, 1, 1]),
            TypeError,
            "positions",
        ),
        (
            lambda: mrope_cos_sin(
                torch.zeros(3, 4, dtype=torch.long), inv_freq(8), [2, 1, 1], dtype=torch.float16
            ),
            TypeError,
            "dtype",
        ),
        (
            lambda: mrope_cos_sin(
                torch.zeros(3, 4, dtype=torch.long), inv_freq(8).half(), [2, 1, 1]
            ),
            TypeError,
            "inv_freq",
        ),
        (lambda: mrope_positions(-1, (1, 1, 1), 0), ValueError, "text_before"),
        (lambda: mrope_positions(0, (1, 0, 1), 0), ValueError, r"grid\[1\]"),
        (lambda: mrope_positions(0, (1, 1), 0), TypeError, "grid"),
        (lambda: mrope_positions(0, (1, 1, 1), 2.0), TypeError, "text_after"),
    ],
)
def test_bad_input(call, error, match):
    with pytest.raises(error, match=match):
        call()


def test_mrope_tables_match_rope_cos_sin_for_text():
    """Same float64 table as rope_cos_sin when every row holds the text position."""
    pos = torch.arange(0, 70000, 997)
    omega = inv_freq(16, 1e6)
    ours = mrope_cos_sin(pos.expand(3, -1), omega, [4, 2, 2])
    plain = rope_cos_sin(pos, omega)
    assert torch.equal(ours[0], plain[0]) and torch.equal(ours[1], plain[1])


def test_qwen4_exp_counts():
    """Qwen4-Exp's defaults: 107 time pairs (11 below pair 32, all 96 from 32 on), 11 and 10.

    The numbers the RoPE page states. Qwen3-VL's code, which Qwen4-Exp runs, starts from the
    time row and overwrites pairs i = 1 (mod 3), i < 3 * 11 with height and i = 2 (mod 3),
    i < 3 * 10 with width; the reader records the counts the code gives.
    """
    transformers = pytest.importorskip("transformers")
    from posenc_ref.models import rope_spec

    config = transformers.AutoConfig.for_model("qwen4_exp_text")
    assert config.head_dim == 256
    spec = rope_spec(config.to_dict())
    assert tuple(spec.mrope_section) == (107, 11, 10)
    rows = mrope_pair_rows(spec.mrope_section, assignment="interleaved")
    code = torch.zeros(128, dtype=torch.long)  # the code's rule, for the config's (11, 11, 10)
    i = torch.arange(128)
    code[(i % 3 == 1) & (i < 33)] = 1
    code[(i % 3 == 2) & (i < 30)] = 2
    assert torch.equal(rows, code)
    assert [int((rows == j).sum()) for j in range(3)] == [107, 11, 10]
    assert [int((rows[:32] == j).sum()) for j in range(3)] == [11, 11, 10]
    assert bool((rows[32:] == 0).all()) and rows[32:].numel() == 96
    # And the code itself: time, height and width at positions 0, 1, 2 turn pair i by 0, w_i or
    # 2 w_i (all below pi), so each pair's angle names the row transformers gave it.
    modeling = pytest.importorskip("transformers.models.qwen4_exp.modeling_qwen4_exp")
    rotary = modeling.Qwen4ExpTextRotaryEmbedding(config)
    cos, sin = rotary(torch.zeros(1), torch.tensor([0, 1, 2]).view(3, 1, 1))
    angle = torch.atan2(sin[0, 0, :128].double(), cos[0, 0, :128].double())
    omega = rotary.inv_freq.double()
    ran = (angle[:, None] - omega[:, None] * torch.arange(3)).abs().argmin(dim=1)
    assert torch.equal(ran, rows)


@given(
    alpha=st.floats(-20, 20, allow_nan=False),
    beta=st.floats(-20, 20, allow_nan=False),
    seed=seeds,
)
@example(alpha=1.0, beta=1.0, seed=0)  # equal rows (text): the rotation
@example(alpha=1.0, beta=1.0 + math.pi, seed=0)  # a multiple of pi apart: norms kept, a reflection
@example(alpha=0.3, beta=1.1, seed=0)
def test_hunyuan_map_is_a_rotation_only_for_equal_angles(alpha, beta, seed):
    """HunYuan-VL's map (u, v) -> (u cos a - v sin a, v cos b + u sin b) has det cos(a - b).

    It keeps every norm only when a - b is a multiple of pi, and is a rotation only when it is
    a multiple of 2 pi; otherwise a random (u, v) changes its norm.
    """
    matrix = torch.tensor(
        [[math.cos(alpha), -math.sin(alpha)], [math.sin(beta), math.cos(beta)]], dtype=F64
    )
    assert math.isclose(float(torch.linalg.det(matrix)), math.cos(alpha - beta), abs_tol=1e-12)
    gram = matrix.T @ matrix
    keeps_norms = bool(torch.allclose(gram, torch.eye(2, dtype=F64), atol=1e-9))
    off = math.remainder(alpha - beta, math.pi)  # distance to the nearest multiple of pi
    assert keeps_norms == (abs(off) < 1e-9)
    rotation = keeps_norms and math.cos(alpha - beta) > 0
    assert rotation == (abs(math.remainder(alpha - beta, 2 * math.pi)) < 1e-9)
    if abs(off) > 1e-6:
        u, v = torch.randn(2, generator=torch.Generator().manual_seed(seed), dtype=F64)
        before, after = u * u + v * v, (matrix @ torch.stack([u, v])).square().sum()
        assert not math.isclose(float(after), float(before), rel_tol=1e-12, abs_tol=0.0)
