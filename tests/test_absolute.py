"""Sinusoidal table, its closed forms, and the additive modules (posenc_ref/absolute.py)."""

import math

import numpy as np
import pytest
import torch
from hypothesis import example, given
from hypothesis import strategies as st

from posenc_ref import (
    LearnedPositionalEmbedding,
    SinusoidalPositionalEncoding,
    adjacent_distance,
    binary_encoding,
    inv_freq,
    offset_dot_product,
    relative_rotation,
    sinusoidal,
    sinusoidal_loop,
    wavelengths,
)
from tests.strategies import bases, dims, offsets, positions, table_lengths


def rows(first: int, count: int, dim: int, base: float) -> torch.Tensor:
    """Rows ``first .. first + count - 1`` of the float64 table."""
    return sinusoidal(count, dim, base, offset=first, dtype=torch.float64)


# --- frequencies -------------------------------------------------------------------------


@given(dims, bases)
@example(2, 10000.0)
def test_inv_freq_formula(dim, base):
    """omega_i = base^(-2i/dim), evaluated independently with math.pow."""
    expected = [math.pow(base, -2 * i / dim) for i in range(dim // 2)]
    np.testing.assert_allclose(inv_freq(dim, base).numpy(), expected, rtol=1e-14, atol=0)


@given(dims, bases)
@example(2, 10000.0)
def test_inv_freq_fastest_first(dim, base):
    """omega_0 = 1 is the fastest pair; frequencies fall strictly, and stay above 1/base."""
    omega = inv_freq(dim, base)
    assert omega[0] == 1.0
    assert torch.all(omega[1:] < omega[:-1])
    assert omega[-1] > 1 / base


@given(dims, bases)
def test_wavelengths_geometric(dim, base):
    """Wavelengths run from 2*pi with ratio base^(2/dim): a geometric progression."""
    lam = wavelengths(dim, base)
    assert lam[0] == pytest.approx(2 * math.pi, rel=1e-15)
    ratios = lam[1:] / lam[:-1]
    np.testing.assert_allclose(ratios.numpy(), base ** (2 / dim), rtol=1e-12)


# --- the table ---------------------------------------------------------------------------


@given(dims, bases, st.integers(0, 2**24 - 64))
@example(2, 10000.0, 0)
def test_values_bounded(dim, base, first):
    """Every entry lies in [-1, 1], also far out and after the cast to float32."""
    table = sinusoidal(64, dim, base, offset=first)
    assert table.dtype == torch.float32
    assert torch.all(table.abs() <= 1.0)


@given(st.integers(1, 32).map(lambda h: 2 * h), bases, st.integers(2, 2048))
@example(2, 10000.0, 2048)
def test_rows_distinct(dim, base, num_positions):
    """No two positions share a code (checked in float64 for up to 2048 positions).

    The proof on the Properties page needs only the first pair (frequency 1): equal codes would
    need two integers a whole number of 2*pi apart. Numerically the closest pair of positions
    below 2048 is 710 apart (710 ~ 113 * 2*pi), at a distance of about 6e-5 for dim = 2, far
    above float64 round-off; the bound below leaves a wide margin.
    """
    table = rows(0, num_positions, dim, base)
    dist = torch.cdist(table, table)
    dist.fill_diagonal_(float("inf"))
    assert dist.min() > 1e-6


@given(table_lengths, dims, bases)
@example(0, 2, 10000.0)
@example(4, 4, 100.0)
def test_vectorized_equals_loop(num_positions, dim, base):
    """The vectorized table equals the textbook double loop to float64 round-off."""
    loop = sinusoidal_loop(num_positions, dim, base)
    fast = sinusoidal(num_positions, dim, base, dtype=torch.float64).numpy()
    assert fast.shape == loop.shape == (num_positions, dim)
    # The two differ only in how the angle is rounded (k / base**x vs k * base**-x).
    np.testing.assert_allclose(fast, loop, rtol=0, atol=1e-13 * max(num_positions, 1))


@given(st.integers(0, 5000), st.integers(0, 32), dims, bases)
def test_offset_rows_equal_slice(first, count, dim, base):
    """``offset=t`` gives rows t.. of the full table (what a key/value cache needs)."""
    full = sinusoidal(first + count, dim, base)
    np.testing.assert_array_equal(sinusoidal(count, dim, base, offset=first), full[first:])


@given(dims, bases, positions, positions, offsets)
@example(2, 10000.0, 0, 7, 1)
@example(500, 10000.0, 0, 999, 1)
def test_distance_depends_only_on_offset(dim, base, t1, t2, k):
    """||PE(t+k) - PE(t)|| = sqrt(dim - 2 sum_i cos(k omega_i)), the same for every t."""
    expected = adjacent_distance(dim, base, k)
    for t in (t1, t2):
        if t + k < 0:
            continue
        a, b = rows(t, 1, dim, base)[0], rows(t + k, 1, dim, base)[0]
        squared = float(((b - a) ** 2).sum())
        assert squared == pytest.approx(expected**2, abs=1e-9 * dim)


@given(dims, bases, positions, positions, offsets)
@example(2, 10000.0, 3, 500, 0)
def test_dot_product_depends_only_on_offset(dim, base, t1, t2, k):
    """PE(t) . PE(t+k) = sum_i cos(k omega_i), the same for every t."""
    expected = offset_dot_product(dim, base, k)
    for t in (t1, t2):
        if t + k < 0:
            continue
        dot = float(rows(t, 1, dim, base)[0] @ rows(t + k, 1, dim, base)[0])
        assert dot == pytest.approx(expected, abs=1e-9 * dim)


@given(st.integers(1, 16).map(lambda h: 2 * h), bases, positions, offsets)
@example(2, 10000.0, 0, 1)
def test_relative_rotation(dim, base, t, k):
    """PE(t+k) = M_k PE(t) with M_k orthogonal and independent of t."""
    if t + k < 0:
        t = -k
    m = relative_rotation(k, dim, base)
    np.testing.assert_allclose(m @ m.T, torch.eye(dim, dtype=torch.float64), atol=1e-12)
    moved = m @ rows(t, 1, dim, base)[0]
    np.testing.assert_allclose(moved, rows(t + k, 1, dim, base)[0], rtol=0, atol=1e-9)


def test_worked_example_base_10000():
    """D = 4, n = 10000, positions 0..3: the second pair turns 100 times slower (angles k/100).

    Row 1 as published on the Sinusoidal page: 0.84147098, 0.54030231, 0.00999983, 0.99995000.
    """
    table = sinusoidal(4, 4, 10000.0, dtype=torch.float64).numpy()
    np.testing.assert_allclose(
        table[1], [0.84147098, 0.54030231, 0.00999983, 0.99995000], rtol=0, atol=5e-9
    )
    for k in range(4):  # the fourth row is position 3, not 4
        expected = [math.sin(k), math.cos(k), math.sin(k / 100), math.cos(k / 100)]
        np.testing.assert_allclose(table[k], expected, rtol=0, atol=1e-15)


def test_worked_example_base_100():
    """D = 4, n = 100, 10 positions: the second pair uses k/10; div terms are 1.0 and 0.1."""
    assert inv_freq(4, 100.0).tolist() == pytest.approx([1.0, 0.1], rel=1e-15)
    table = sinusoidal(10, 4, 100.0, dtype=torch.float64).numpy()
    np.testing.assert_allclose(table[1], [0.8415, 0.5403, 0.0998, 0.9950], rtol=0, atol=5e-5)
    for k in range(10):
        expected = [math.sin(k), math.cos(k), math.sin(k / 10), math.cos(k / 10)]
        np.testing.assert_allclose(table[k], expected, rtol=0, atol=1e-15)


@given(st.integers(0, 300), st.integers(1, 12))
@example(16, 4)
@example(17, 4)
def test_binary_counter(num_positions, bits):
    """Column j is bit j: it flips every 2^j steps, and the bits spell the position.

    A position that does not fit in ``bits`` bits is refused; with ``wrap=True`` the code is
    that of the position modulo 2^bits, as a counter overflows.
    """
    table = binary_encoding(num_positions, bits, wrap=True)
    assert table.shape == (num_positions, bits) and table.dtype == np.uint8
    assert set(np.unique(table)) <= {0, 1}
    weights = 2 ** np.arange(bits)
    np.testing.assert_array_equal(table @ weights, np.arange(num_positions) % 2**bits)
    for j in range(bits):
        flips = np.flatnonzero(np.diff(table[:, j].astype(int)) != 0) + 1
        assert np.all(flips % 2**j == 0)
    if num_positions <= 2**bits:  # every position fits: the same codes, no wrap needed
        np.testing.assert_array_equal(binary_encoding(num_positions, bits), table)
    else:
        needed = (num_positions - 1).bit_length()
        with pytest.raises(ValueError, match=rf"need {needed} bits, but bits={bits}"):
            binary_encoding(num_positions, bits)


def test_largest_exact_position_is_accepted():
    """2**53 is the last position float64 holds exactly: the table and closed forms accept it."""
    row = sinusoidal(1, 4, offset=2**53, dtype=torch.float64)
    assert row.shape == (1, 4) and torch.all(row.abs() <= 1)
    for k in (2**53, -(2**53)):
        assert 0.0 <= adjacent_distance(8, offset=k) <= math.sqrt(2 * 8)
        assert abs(offset_dot_product(8, offset=k)) <= 4
        assert relative_rotation(k, 4).shape == (4, 4)


def test_float32_table_precise_near_2_20():
    """float64 angles keep the float32 table within 1e-7 of the exact values near 2^20.

    The reference is built independently with NumPy in float64 (angles accurate to ~1e-10
    here); float32 angles would be off by up to ~6e-2 at these positions.
    """
    first, count, dim, base = 2**20 - 256, 512, 128, 10000.0
    table = sinusoidal(count, dim, base, offset=first).numpy().astype(np.float64)
    pos = np.arange(first, first + count, dtype=np.float64)[:, None]
    omega = base ** (-np.arange(0, dim, 2, dtype=np.float64) / dim)
    angles = pos * omega
    ref = np.empty((count, dim))
    ref[:, 0::2], ref[:, 1::2] = np.sin(angles), np.cos(angles)
    assert np.abs(table - ref).max() < 1e-7


# --- modules -----------------------------------------------------------------------------


@given(st.integers(1, 4), st.integers(1, 16), dims, st.integers(0, 8))
def test_module_adds_table_without_dropout(batch, seq_len, dim, offset):
    """dropout=0: the output is exactly x + table[offset : offset + seq_len]."""
    pe = SinusoidalPositionalEncoding(dim, max_len=32, dropout=0.0)
    x = torch.randn(batch, seq_len, dim)
    expected = x + sinusoidal(seq_len, dim, offset=offset)
    torch.testing.assert_close(pe(x, offset=offset), expected, rtol=0, atol=0)


def test_module_dropout_train_eval():
    """In training, dropout zeroes entries and scales the rest by 1/(1-p); eval is the identity."""
    torch.manual_seed(0)
    p = 0.5
    pe = SinusoidalPositionalEncoding(8, max_len=64, dropout=p)
    x = torch.randn(4, 64, 8)
    clean = x + sinusoidal(64, 8)
    out = pe.train()(x)
    kept = out != 0
    assert 0.3 < kept.float().mean() < 0.7
    torch.testing.assert_close(out[kept], clean[kept] / (1 - p))
    torch.testing.assert_close(pe.eval()(x), clean, rtol=0, atol=0)


def test_module_follows_to():
    """The table is a buffer: .to() moves and casts it along with the module."""
    pe = SinusoidalPositionalEncoding(16, max_len=10, dropout=0.0).to(torch.float64)
    assert pe.table.dtype == torch.float64
    x = torch.zeros(1, 10, 16, dtype=torch.float64)
    assert pe(x).dtype == torch.float64
    assert "table" in dict(pe.named_buffers())


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_module_follows_to_cuda():
    pe = SinusoidalPositionalEncoding(16, max_len=10, dropout=0.0).cuda()
    assert pe.table.is_cuda
    torch.testing.assert_close(pe.table.cpu(), sinusoidal(10, 16))


def test_module_state_dict_excludes_table():
    """Non-persistent: the table is rebuilt, not saved; checkpoints load across max_len."""
    short = SinusoidalPositionalEncoding(16, max_len=10)
    assert "table" not in short.state_dict()
    long = SinusoidalPositionalEncoding(16, max_len=100)
    long.load_state_dict(short.state_dict())  # strict: no missing or unexpected keys
    assert long.table.shape == (100, 16)


@given(st.integers(1, 4), st.integers(1, 12), dims)
def test_module_sequence_first(batch, seq_len, dim):
    """(seq, batch, dim) with batch_first=False equals the batch-first result transposed."""
    x = torch.randn(batch, seq_len, dim)
    bf = SinusoidalPositionalEncoding(dim, max_len=16, dropout=0.0)
    sf = SinusoidalPositionalEncoding(dim, max_len=16, dropout=0.0, batch_first=False)
    torch.testing.assert_close(sf(x.transpose(0, 1)).transpose(0, 1), bf(x), rtol=0, atol=0)
    # The silent bug the page warns about: a batch-first tensor fed to a sequence-first
    # module gets one position per *sample* (row b receives PE(b) at every step).
    if batch <= 16:
        mixed = sf(x)
        torch.testing.assert_close(mixed, x + sinusoidal(batch, dim)[:, None, :])


def test_learned_embedding_contract():
    """Same forward contract as the sinusoidal module, with a trainable table."""
    emb = LearnedPositionalEmbedding(12, 8, dropout=0.0)
    assert emb.weight.requires_grad and emb.weight.shape == (12, 8)
    x = torch.randn(2, 5, 8)
    torch.testing.assert_close(emb(x, offset=3), x + emb.weight[3:8], rtol=0, atol=0)
    emb(x).sum().backward()
    assert emb.weight.grad is not None and emb.weight.grad[5:].abs().sum() == 0
    with pytest.raises(ValueError, match="max_len=12"):
        emb(torch.randn(1, 13, 8))


# --- bad input ---------------------------------------------------------------------------

BAD_CALLS = [
    (inv_freq, (3,), {}, ValueError, "dim must be a positive even integer"),
    (inv_freq, (0,), {}, ValueError, "dim must be a positive even integer"),
    (inv_freq, (4.0,), {}, TypeError, "dim must be a positive even integer"),
    (inv_freq, (4, 0.0), {}, ValueError, "base must be"),
    (inv_freq, (4, -10.0), {}, ValueError, "base must be"),
    (inv_freq, (4, float("inf")), {}, ValueError, "base must be finite"),
    (inv_freq, (4, float("nan")), {}, ValueError, "base must be finite"),
    (inv_freq, (4, 1.0), {}, ValueError, "base must be a finite number > 1"),
    (inv_freq, (4,), {"dtype": torch.int64}, TypeError, "dtype must be a floating-point"),
    (sinusoidal_loop, (-1, 4), {}, ValueError, "num_positions must be an integer >= 0"),
    (sinusoidal_loop, (2.5, 4), {}, TypeError, "num_positions must be an integer"),
    (sinusoidal_loop, (4, 5), {}, ValueError, "dim must be a positive even integer"),
    (sinusoidal, (-1, 4), {}, ValueError, "num_positions must be an integer >= 0"),
    (sinusoidal, (4, 7), {}, ValueError, "dim must be a positive even integer"),
    (sinusoidal, (4, 4, "10000"), {}, TypeError, "base must be a finite real number"),
    (sinusoidal, (4, 4), {"offset": -1}, ValueError, "offset must be an integer >= 0"),
    (sinusoidal, (4, 4), {"dtype": torch.int32}, TypeError, "dtype must be a floating-point"),
    # Positions past 2**53 are not exact in float64: refused, not silently another position.
    (
        sinusoidal,
        (2, 4),
        {"offset": 2**53},
        ValueError,
        r"positions 9007199254740992\.\.9007199254740993 go past 2\*\*53",
    ),
    (adjacent_distance, (5,), {}, ValueError, "dim must be a positive even integer"),
    (adjacent_distance, (4, 100.0, 1.5), {}, TypeError, "offset must be an integer"),
    # A huge offset was an OverflowError from deep inside torch ("int too big to convert").
    (adjacent_distance, (8, 10000.0, 10**400), {}, ValueError, r"\|offset\| <= 2\*\*53"),
    (adjacent_distance, (8, 10000.0, -(2**53) - 1), {}, ValueError, r"\|offset\| <= 2\*\*53"),
    # ... and offsets between 2**63 and 2**53 silently gave the value of a rounded offset.
    (offset_dot_product, (8, 10000.0, 2**63), {}, ValueError, r"\|offset\| <= 2\*\*53"),
    (offset_dot_product, (4, 0.5), {}, ValueError, "base must be"),
    (relative_rotation, (2**70, 4), {}, ValueError, r"\|offset\| <= 2\*\*53"),
    (relative_rotation, (1, 3), {}, ValueError, "dim must be a positive even integer"),
    (relative_rotation, (1, 4), {"dtype": torch.int32}, TypeError, "dtype must be a floating"),
    (wavelengths, (4,), {"dtype": torch.int64}, TypeError, "dtype must be a floating-point"),
    (binary_encoding, (4, 0), {}, ValueError, "bits must be an integer >= 1"),
    (binary_encoding, (-4, 3), {}, ValueError, "num_positions must be an integer >= 0"),
    # Position 256 used to get the code of position 0 (all zeros) without a word.
    (
        binary_encoding,
        (300, 8),
        {},
        ValueError,
        r"positions 0\.\.299 need 9 bits, but bits=8 holds only 0\.\.255; use bits >= 9, or "
        r"wrap=True",
    ),
    (binary_encoding, (4, 2), {"wrap": 1}, TypeError, "wrap must be True or False"),
    (SinusoidalPositionalEncoding, (5,), {}, ValueError, "dim must be a positive even integer"),
    (SinusoidalPositionalEncoding, (4, 0), {}, ValueError, "max_len must be an integer >= 1"),
    (
        SinusoidalPositionalEncoding,
        (4,),
        {"dropout": 1.0},
        ValueError,
        r"dropout must be in \[0, 1\)",
    ),
    (SinusoidalPositionalEncoding, (4,), {"batch_first": 1}, TypeError, "batch_first must be True"),
    (LearnedPositionalEmbedding, (0, 4), {}, ValueError, "max_len must be an integer >= 1"),
    (LearnedPositionalEmbedding, (4, 3), {}, ValueError, "dim must be a positive even integer"),
]


@pytest.mark.parametrize(
    ("func", "args", "kwargs", "error", "message"),
    BAD_CALLS,
    ids=[f"{c[0].__name__}-{i}" for i, c in enumerate(BAD_CALLS)],
)
def test_bad_arguments(func, args, kwargs, error, message):
    """Each bad argument raises an error that names it and says what is accepted."""
    with pytest.raises(error, match=message):
        func(*args, **kwargs)


@pytest.mark.parametrize(
    ("shape", "message"),
    [
        ((2, 3), "x must have 3 dimensions"),
        ((2, 3, 4, 8), "x must have 3 dimensions"),
        ((2, 3, 6), "last dimension must be dim=8"),
        ((2, 11, 8), "max_len=10"),
    ],
)
def test_module_bad_input(shape, message):
    """Wrong rank, width or length: a clear ValueError instead of a broadcast."""
    pe = SinusoidalPositionalEncoding(8, max_len=10)
    with pytest.raises(ValueError, match=message):
        pe(torch.zeros(shape))


def test_module_bad_offset():
    pe = SinusoidalPositionalEncoding(8, max_len=10)
    with pytest.raises(ValueError, match=r"positions 8\.\.10 do not fit"):
        pe(torch.zeros(1, 3, 8), offset=8)
    with pytest.raises(TypeError, match="x must be a torch.Tensor"):
        pe(np.zeros((1, 3, 8)))
