"""Properties of axial (2-D) RoPE on a patch grid (posenc_ref.axial), and its bad-input errors."""

import math
import re

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from posenc_ref import apply_rope_loop, inv_freq
from posenc_ref.axial import (
    SCHEMES,
    alternating_frequencies,
    apply_axial_rope,
    axial_angles,
    axial_angles_loop,
    axial_cos_sin,
    axial_inv_freq,
    axial_pair_axes,
    grid_centres,
    grid_positions,
    merge_block_order,
    shared_frequencies,
)
from tests.strategies import bases, seeds

schemes = st.sampled_from(sorted(SCHEMES))
axial_dims = st.integers(min_value=1, max_value=8).map(lambda quarter: 4 * quarter)
sides = st.integers(min_value=1, max_value=6)
coordinates = st.floats(min_value=-1e4, max_value=1e4, allow_nan=False, allow_infinity=False)


def _randn(seed: int, *shape: int) -> torch.Tensor:
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed), dtype=torch.float64)


@given(scheme=schemes, dim=axial_dims, base=bases, height=sides, width=sides)
def test_angle_table_equals_loop_oracle(scheme, dim, base, height, width):
    """The vectorized angle table equals the loop written pair by pair, patch by patch."""
    positions = grid_positions(height, width, scheme)
    args = (positions, axial_inv_freq(dim, base, scheme), axial_pair_axes(dim, scheme))
    assert torch.equal(axial_angles(*args), axial_angles_loop(*args))


@given(dim=axial_dims, base=bases, coords=st.lists(coordinates, min_size=2, max_size=8))
def test_angle_table_of_explicit_positions_equals_loop(dim, base, coords):
    """Explicit, fractional and negative (row, column) coordinates, batched: loop = table."""
    positions = torch.tensor(coords[: len(coords) // 2 * 2], dtype=torch.float64).reshape(1, -1, 2)
    for scheme in SCHEMES:
        args = (positions, axial_inv_freq(dim, base, scheme), axial_pair_axes(dim, scheme))
        assert torch.equal(axial_angles(*args), axial_angles_loop(*args))


@given(
    scheme=schemes,
    dim=axial_dims,
    base=bases,
    seed=seeds,
    query=st.tuples(sides, sides),
    key=st.tuples(sides, sides),
    shift=st.tuples(st.integers(-50, 50), st.integers(-50, 50)),
)
def test_score_depends_only_on_row_and_column_offsets(scheme, dim, base, seed, query, key, shift):
    r"""<R(y_m, x_m) q, R(y_p, x_p) k> is unchanged when both patches move by the same (a, b).

    The relative property in two dimensions: the score sees y_p - y_m and x_p - x_m only.
    """
    q, k = _randn(seed, 2, dim)

    def score(at_q, at_k):
        positions = torch.tensor([at_q, at_k], dtype=torch.float64)
        rq = apply_axial_rope(q[None], positions[:1], base=base, scheme=scheme)
        rk = apply_axial_rope(k[None], positions[1:], base=base, scheme=scheme)
        return float((rq * rk).sum())

    moved_q = (query[0] + shift[0], query[1] + shift[1])
    moved_k = (key[0] + shift[0], key[1] + shift[1])
    scale = float(q.norm() * k.norm())
    reach = (max(map(abs, (*query, *key, *moved_q, *moved_k))) + 1) * 2 * math.pi
    assert score(moved_q, moved_k) == pytest.approx(score(query, key), abs=1e-13 * scale * reach)


@given(scheme=schemes, dim=axial_dims, base=bases, seed=seeds, height=sides)
def test_one_column_grid_is_rope_with_the_column_pairs_frozen(scheme, dim, base, seed, height):
    """A single column (x = 0): ordinary RoPE over the row positions, column pairs untouched.

    Each row pair turns by y * w_i exactly as 1-D RoPE (the loop oracle apply_rope_loop) turns
    it; each column pair has frequency 0 there. For the shared frequencies, the row pairs' w_i
    are those of a head of width d / 2.
    """
    rows = torch.arange(height, dtype=torch.float64)
    positions = torch.stack([rows, torch.zeros(height, dtype=torch.float64)], dim=-1)
    x = _randn(seed, height, dim)
    omegas = axial_inv_freq(dim, base, scheme)
    row_pairs = axial_pair_axes(dim, scheme) == 0
    expected = apply_rope_loop(
        x, rows, omegas * row_pairs, layout=SCHEMES[scheme].layout
    )  # column pairs: frequency 0, the identity
    got = apply_axial_rope(x, positions, base=base, scheme=scheme)
    torch.testing.assert_close(got, expected, rtol=0, atol=1e-12 * (height + 1) * 2 * math.pi)
    if SCHEMES[scheme].frequencies is shared_frequencies:
        assert torch.equal(omegas[row_pairs], inv_freq(dim // 2, base))


@given(dim=axial_dims, base=bases)
def test_pixtral_rows_take_the_shared_frequencies(dim, base):
    """Pixtral's row pairs have the shared n^(-4i/d); its column pairs n^(-2/d) times those."""
    pixtral, shared = alternating_frequencies(dim, base), shared_frequencies(dim, base)
    quarter = dim // 4
    torch.testing.assert_close(pixtral[:quarter], shared[:quarter], rtol=1e-15, atol=0)
    torch.testing.assert_close(
        pixtral[quarter:], shared[quarter:] * base ** (-2 / dim), rtol=1e-14, atol=0
    )


@given(height=sides, width=sides)
def test_grid_centres_are_symmetric_in_minus_one_one(height, width):
    """DINOv3's centres: inside (-1, 1), evenly spaced by 2/H and 2/W, symmetric about 0."""
    centres = grid_centres(height, width).reshape(height, width, 2)
    assert bool((centres.abs() < 1).all())
    torch.testing.assert_close(centres, -centres.flip(0, 1), rtol=0, atol=1e-15)
    if height > 1:
        torch.testing.assert_close(
            centres[1:, :, 0] - centres[:-1, :, 0],
            torch.full((height - 1, width), 2 / height, dtype=torch.float64),
            rtol=0,
            atol=1e-15,
        )


def test_tables_have_one_value_per_pair_and_cast_once():
    """cos/sin are (num_patches, dim // 2), float32 by default, cos of the float64 angles."""
    positions = grid_positions(3, 5, "pixtral")
    cos, sin = axial_cos_sin(positions, 16, 100.0, "pixtral")
    angles = axial_angles(
        positions, axial_inv_freq(16, 100.0, "pixtral"), axial_pair_axes(16, "pixtral")
    )
    assert cos.shape == (15, 8) and cos.dtype == torch.float32
    assert torch.equal(cos, angles.cos().float()) and torch.equal(sin, angles.sin().float())


@pytest.mark.parametrize(
    "call, error, words",
    [
        (lambda: axial_inv_freq(16, 100.0, "vit"), ValueError, "scheme must be one of"),
        (lambda: axial_inv_freq(14, 100.0, "pixtral"), ValueError, "multiple of 4"),
        (lambda: axial_inv_freq(16, 1.0, "pixtral"), ValueError, "base must be"),
        (lambda: axial_pair_axes(16, None), ValueError, "scheme must be one of"),
        (lambda: grid_positions(0, 5, "sam2"), ValueError, "height must be an integer >= 1"),
        (lambda: grid_positions(3, 2.5, "sam2"), TypeError, "width must be an integer"),
        (
            lambda: axial_cos_sin(torch.zeros(15), 16, 100.0, "sam2"),
            ValueError,
            "positions must have shape (..., num_patches, 2)",
        ),
        (
            lambda: axial_cos_sin(torch.full((2, 2), math.nan), 16, 100.0, "sam2"),
            ValueError,
            "positions must be finite",
        ),
        (
            lambda: axial_cos_sin(torch.zeros(2, 2, dtype=torch.bfloat16), 16, 100.0, "sam2"),
            TypeError,
            "positions must not be torch.bfloat16",
        ),
        (
            lambda: axial_angles(torch.zeros(2, 2), torch.ones(4), torch.tensor([0, 1, 2, 0])),
            ValueError,
            "pair_axes must have inv_freq's shape",
        ),
        (
            lambda: axial_cos_sin(torch.zeros(2, 2), 16, 100.0, "sam2", dtype=torch.float16),
            TypeError,
            "dtype must be torch.float32 or torch.float64",
        ),
        (
            lambda: apply_axial_rope(torch.zeros(4), torch.zeros(4, 2), base=100.0, scheme="sam2"),
            ValueError,
            "x must have shape (..., num_patches, dim)",
        ),
        (
            lambda: axial_cos_sin(torch.tensor([[1e308, 0.0]], dtype=torch.float64), 16, 100.0,
                                  "dinov3"),
            ValueError,
            "positions must keep every angle finite in float64: |coordinate| * max(inv_freq)",
        ),
        (
            lambda: grid_positions(10**6, 10**6, "qwen2_vl"),
            ValueError,
            "height * width must be at most 2**24 = 16777216 patches",
        ),
        (
            lambda: merge_block_order(2**13, 2**13, 2),
            ValueError,
            "got height=8192, width=8192 (67108864 patches)",
        ),
        (
            lambda: apply_axial_rope(torch.zeros(1, 6, 16), grid_positions(2, 4, "qwen2_vl"),
                                     base=1e4, scheme="qwen2_vl"),
            ValueError,
            "positions give 8 patches (shape (8, 2)) but x has 6 (shape (1, 6, 16)",
        ),
    ],
    ids=[
        "unknown-scheme", "dim-not-multiple-of-4", "base-1", "scheme-none", "empty-grid",
        "fractional-width", "positions-1d", "positions-nan", "positions-bfloat16",
        "pair-axes-values", "half-table", "x-1d", "angle-overflow", "huge-grid",
        "huge-merge-grid", "patch-count",
    ],
)  # fmt: skip
def test_bad_input_names_the_argument(call, error, words):
    """Each bad argument raises an error that names it and what is accepted."""
    with pytest.raises(error, match=re.escape(words)):
        call()
