r"""Absolute positional encodings: the sinusoidal table, its closed forms, and two baselines.

The sinusoidal encoding of the original transformer is

.. math::

    PE[t, 2i] = \sin(t\,\omega_i), \qquad PE[t, 2i+1] = \cos(t\,\omega_i),
    \qquad \omega_i = \text{base}^{-2i/\text{dim}},

for position ``t`` and pair index ``i = 0 .. dim/2 - 1``. Derivations are on the site's
"Sinusoidal encoding" and "Properties" pages; this module is the executable version.
"""

from __future__ import annotations

import math

import numpy as np
import torch
from torch import nn

from ._checks import check_base, check_bool, check_dim, check_int, check_probability
from ._tensor_checks import check_float_dtype, check_tensor
from .device import check_device, compute_device
from .values import MAX_POSITION, inv_freq_values

__all__ = [
    "inv_freq",
    "wavelengths",
    "sinusoidal_loop",
    "sinusoidal",
    "adjacent_distance",
    "offset_dot_product",
    "relative_rotation",
    "binary_encoding",
    "SinusoidalPositionalEncoding",
    "LearnedPositionalEmbedding",
]


def inv_freq(
    dim: int,
    base: float = 10000.0,
    *,
    device: torch.device | str | None = None,
    dtype: torch.dtype = torch.float64,
) -> torch.Tensor:
    r"""Per-pair angular frequencies :math:`\omega_i = \text{base}^{-2i/\text{dim}}`.

    Derived on the site: [the definition](absolute.md#sinusoidal-definition) and
    [the exp-log form](absolute.md#sinusoidal-vectorized).

    Shared by the sinusoidal table and RoPE. :math:`\omega_0 = 1` is the fastest pair; the
    frequencies fall geometrically to :math:`\text{base}^{-(\text{dim}-2)/\text{dim}}`, which
    approaches ``1/base`` from above as ``dim`` grows.

    Parameters
    ----------
    dim
        Width of the encoded vector (positive, even).
    base
        The constant :math:`n` (10000 in the paper, 500000 in Llama 3); finite and > 1.
    device, dtype
        Where and in which floating dtype to return the result (float64 by default, because the
        angles built from it must be float64; see the numerical policy).

    Returns
    -------
    torch.Tensor
        Shape ``(dim // 2,)``.

    Examples
    --------
    >>> inv_freq(4, 100.0)
    tensor([1.0000, 0.1000], dtype=torch.float64)
    """
    dim = check_dim("dim", dim)
    base = check_base("base", base)
    dtype = check_float_dtype("dtype", dtype)
    device = check_device(device)
    omega = torch.tensor(
        inv_freq_values(dim, base), dtype=torch.float64, device=compute_device(device)
    )
    return omega.to(device=device, dtype=dtype)


def wavelengths(
    dim: int,
    base: float = 10000.0,
    *,
    device: torch.device | str | None = None,
    dtype: torch.dtype = torch.float64,
) -> torch.Tensor:
    r"""Per-pair wavelengths :math:`\lambda_i = 2\pi / \omega_i`, from :math:`2\pi` upwards.

    Derived on the site: [geometric wavelengths](properties.md#properties-wavelengths).

    Parameters
    ----------
    dim, base
        As in :func:`inv_freq`.
    device, dtype
        Where and in which floating dtype to return the result (computed in float64).

    Returns
    -------
    torch.Tensor
        Shape ``(dim // 2,)``, float64 by default; a geometric progression with ratio
        :math:`\text{base}^{2/\text{dim}}`.
    """
    dtype = check_float_dtype("dtype", dtype)
    return (2 * math.pi / inv_freq(dim, base, device=device)).to(dtype)


def sinusoidal_loop(num_positions: int, dim: int, base: float = 10000.0) -> np.ndarray:
    r"""The sinusoidal table written as the textbook double loop: the definition and the oracle.

    Shown on the site: [the textbook loop](absolute.md#sinusoidal-loop).

    ``PE[t, 2i] = sin(t / base**(2i/dim))`` and ``PE[t, 2i+1] = cos(t / base**(2i/dim))``,
    one Python float at a time. Slow on purpose: every other implementation is tested against it.

    Parameters
    ----------
    num_positions
        Number of rows (positions ``0 .. num_positions - 1``), ``>= 0``.
    dim
        Number of columns (positive, even).
    base
        The constant :math:`n`; finite and > 1.

    Returns
    -------
    numpy.ndarray
        Shape ``(num_positions, dim)``, float64.
    """
    num_positions = check_int("num_positions", num_positions)
    dim = check_dim("dim", dim)
    base = check_base("base", base)
    table = np.zeros((num_positions, dim), dtype=np.float64)
    for t in range(num_positions):  # t: the position (a row)
        for i in range(dim // 2):  # i: the pair index (two columns), not a token
            angle = t / base ** (2 * i / dim)
            table[t, 2 * i] = math.sin(angle)
            table[t, 2 * i + 1] = math.cos(angle)
    return table


def sinusoidal(
    num_positions: int,
    dim: int,
    base: float = 10000.0,
    *,
    offset: int = 0,
    device: torch.device | str | None = None,
    dtype: torch.dtype = torch.float32,
) -> torch.Tensor:
    r"""The sinusoidal table, vectorized: a column of positions times a row of frequencies.

    Derived on the site: [from the loop to vectors](absolute.md#sinusoidal-vectorized).

    Angles ``position * inv_freq`` are formed in float64 (an outer product, i.e. broadcasting,
    not a matrix product), sin goes to the even columns and cos to the odd ones, and only the
    result is cast to ``dtype``. float32 angles would carry an absolute error of about
    ``position * 2**-24`` radians (6e-2 near position 2**20); float64 angles keep every entry
    within one float32 rounding of the exact value.

    Parameters
    ----------
    num_positions
        Number of rows, ``>= 0``.
    dim
        Number of columns (positive, even).
    base
        The constant :math:`n`; finite and > 1.
    offset
        First position (``>= 0``): rows are positions ``offset .. offset + num_positions - 1``,
        e.g. the next tokens after a key/value cache. The last position must not exceed
        ``2**53``, the largest range of integers float64 holds exactly.
    device, dtype
        Where and in which floating dtype to return the table. On ``mps`` (no float64) the
        table is computed on the CPU and moved.

    Returns
    -------
    torch.Tensor
        Shape ``(num_positions, dim)``.

    Examples
    --------
    >>> sinusoidal(2, 4, 100.0)
    tensor([[0.0000, 1.0000, 0.0000, 1.0000],
            [0.8415, 0.5403, 0.0998, 0.9950]])
    """
    num_positions = check_int("num_positions", num_positions)
    offset = check_int("offset", offset)
    if offset + num_positions - 1 > MAX_POSITION:
        raise ValueError(
            f"positions {offset}..{offset + num_positions - 1} go past 2**53, the largest "
            "position float64 angles hold exactly; use offset + num_positions - 1 <= 2**53"
        )
    dim = check_dim("dim", dim)
    dtype = check_float_dtype("dtype", dtype)
    device = check_device(device)
    where = compute_device(device)
    frequencies = inv_freq(dim, base, device=where)  # (dim/2,) float64
    table = torch.empty(num_positions, dim // 2, 2, dtype=dtype, device=where)
    # Fill the table a block of rows at a time (about 2**17 angles, 1 MiB in float64): the
    # float64 temporaries then stay small and cache-resident. Whole-table float64 temporaries
    # made this 3-5x slower than the float32 formula at (8192, 1024), mostly from first-touch
    # page faults of fresh memory, not from float64 arithmetic (see the benchmarks page).
    rows = max(1, 2**17 // (dim // 2))
    for start in range(0, num_positions, rows):
        stop = min(start + rows, num_positions)
        # Integer arange, then float64: exact up to 2**53 (a float64 arange cannot end past it).
        positions = torch.arange(offset + start, offset + stop, device=where).to(torch.float64)
        angles = torch.outer(positions, frequencies)  # (rows, dim/2) float64
        table[start:stop, :, 0] = torch.sin(angles)  # even columns 2i, rounded once to dtype
        table[start:stop, :, 1] = torch.cos(angles)  # odd columns 2i+1
    return table.view(num_positions, dim).to(device=device)


def adjacent_distance(dim: int, base: float = 10000.0, offset: int = 1) -> float:
    r"""Distance between the codes of any two positions ``offset`` apart (closed form).

    Derived on the site:
    [the distance depends only on the offset](properties.md#properties-neighbours).

    .. math::

        \lVert PE(t+k) - PE(t) \rVert = \sqrt{\text{dim} - 2 \sum_i \cos(k\,\omega_i)}

    It does not depend on ``t``. Computed in float64.

    Parameters
    ----------
    dim
        Width (positive, even).
    base
        The constant :math:`n`.
    offset
        The offset :math:`k`: any integer with :math:`|k| \le 2^{53}` (the distance is
        symmetric in :math:`k`). Larger offsets are refused: float64, the dtype of the angles,
        would round them to another offset.

    Returns
    -------
    float
    """
    offset = _check_offset(offset)
    total = dim - 2 * offset_dot_product(dim, base, offset)
    return math.sqrt(max(total, 0.0))  # max: round-off can leave -1e-16 at offset 0


def offset_dot_product(dim: int, base: float = 10000.0, offset: int = 1) -> float:
    r"""Dot product of the codes of two positions ``offset`` apart (closed form).

    Derived on the site:
    [the dot product depends only on the offset](properties.md#properties-dot-product).

    .. math::

        PE(t) \cdot PE(t+k) = \sum_{i=0}^{\text{dim}/2-1} \cos(k\,\omega_i)

    It does not depend on ``t``, and it is even in :math:`k`.

    Returns
    -------
    float
    """
    offset = _check_offset(offset)
    return float(torch.cos(offset * inv_freq(dim, base)).sum())


def relative_rotation(
    offset: int,
    dim: int,
    base: float = 10000.0,
    *,
    device: torch.device | str | None = None,
    dtype: torch.dtype = torch.float64,
) -> torch.Tensor:
    r"""The matrix :math:`M_k` with :math:`PE(t+k) = M_k\,PE(t)` for every position ``t``.

    Derived on the site: [a fixed rotation moves every position](properties.md#properties-rotation).

    Block-diagonal, one 2x2 block per pair (rows ordered sin, cos as in the table):

    .. math::

        \begin{pmatrix} \sin((t+k)\omega_i) \\ \cos((t+k)\omega_i) \end{pmatrix}
        = \begin{pmatrix} \cos k\omega_i & \sin k\omega_i \\
                          -\sin k\omega_i & \cos k\omega_i \end{pmatrix}
          \begin{pmatrix} \sin t\omega_i \\ \cos t\omega_i \end{pmatrix}

    It depends on ``k`` only, which is the bridge from the sinusoidal table to RoPE.

    Parameters
    ----------
    offset
        The offset :math:`k`, an integer with :math:`|k| \le 2^{53}`.
    dim, base
        As in :func:`inv_freq`.
    device, dtype
        Where and in which floating dtype to return the matrix (computed in float64; on ``mps``
        on the CPU and moved).

    Returns
    -------
    torch.Tensor
        Shape ``(dim, dim)``, float64 by default.
    """
    offset = _check_offset(offset)
    dtype = check_float_dtype("dtype", dtype)
    device = check_device(device)
    angles = offset * inv_freq(dim, base, device=compute_device(device))  # (dim/2,) float64
    c, s = torch.cos(angles), torch.sin(angles)
    blocks = torch.stack([torch.stack([c, s], -1), torch.stack([-s, c], -1)], -2)  # (dim/2, 2, 2)
    return torch.block_diag(*blocks).to(device=device, dtype=dtype)


def binary_encoding(num_positions: int, bits: int, *, wrap: bool = False) -> np.ndarray:
    """Positions written in binary, one bit per column: the counter analogy.

    Discussed on the site:
    [the binary-counter analogy and its limits](properties.md#properties-binary).

    Column ``j`` is bit ``j`` of the position (column 0 the least significant bit, which flips
    at every step; column ``j`` flips every ``2**j`` steps). ``bits`` bits hold the positions
    ``0 .. 2**bits - 1``; a larger position has no code of its own, so asking for one is an
    error unless ``wrap=True`` asks for a counter that wraps around.

    Parameters
    ----------
    num_positions
        Number of rows, ``>= 0``.
    bits
        Number of columns, ``>= 1``.
    wrap
        ``False`` (default): ``num_positions`` must be at most ``2**bits``, so that every row is
        a different code. ``True``: position ``k`` gets the code of ``k mod 2**bits``, as a
        ``bits``-bit counter overflows (position ``2**bits`` repeats position 0).

    Returns
    -------
    numpy.ndarray
        Shape ``(num_positions, bits)``, uint8 values 0 or 1.

    Examples
    --------
    >>> binary_encoding(4, 3)
    array([[0, 0, 0],
           [1, 0, 0],
           [0, 1, 0],
           [1, 1, 0]], dtype=uint8)
    """
    num_positions = check_int("num_positions", num_positions)
    bits = check_int("bits", bits, minimum=1)
    if not check_bool("wrap", wrap) and num_positions > 2**bits:
        needed = (num_positions - 1).bit_length()
        raise ValueError(
            f"positions 0..{num_positions - 1} need {needed} bits, but bits={bits} holds only "
            f"0..{2**bits - 1}; use bits >= {needed}, or wrap=True for a counter that wraps "
            f"around modulo 2**{bits}"
        )
    positions = np.arange(num_positions, dtype=np.uint64)[:, None]  # (L, 1)
    shifts = np.arange(bits, dtype=np.uint64)[None, :]  # (1, bits)
    return ((positions >> shifts) & np.uint64(1)).astype(np.uint8)


def _check_offset(offset: object) -> int:
    if isinstance(offset, bool) or not isinstance(offset, (int, np.integer)):
        raise TypeError(f"offset must be an integer, got {offset!r}")
    if abs(int(offset)) > MAX_POSITION:
        raise ValueError(
            f"offset must be an integer with |offset| <= 2**53 (float64, the dtype of the angles, "
            f"holds larger integers only approximately), got {offset!r}"
        )
    return int(offset)


class _AdditivePositionalEncoding(nn.Module):
    """Shared forward contract: ``dropout(x + table[offset : offset + seq_len])``."""

    def __init__(self, dim: int, max_len: int, dropout: float, batch_first: bool) -> None:
        super().__init__()
        self.dim = check_dim("dim", dim)
        self.max_len = check_int("max_len", max_len, minimum=1)
        self.batch_first = check_bool("batch_first", batch_first)
        self.dropout = nn.Dropout(check_probability("dropout", dropout))

    def _table(self) -> torch.Tensor:
        raise NotImplementedError

    def forward(self, x: torch.Tensor, *, offset: int = 0) -> torch.Tensor:
        """Add the positional codes of positions ``offset .. offset + seq_len - 1`` to ``x``.

        Parameters
        ----------
        x
            ``(batch, seq_len, dim)`` if ``batch_first`` else ``(seq_len, batch, dim)``.
        offset
            Position of the first token (e.g. the length of a key/value cache), ``>= 0``.

        Returns
        -------
        torch.Tensor
            Same shape and dtype as ``x``.
        """
        x = check_tensor("x", x)
        offset = check_int("offset", offset)
        if x.dim() != 3:
            layout = "(batch, seq_len, dim)" if self.batch_first else "(seq_len, batch, dim)"
            raise ValueError(
                f"x must have 3 dimensions {layout}, got shape {tuple(x.shape)}; "
                "set batch_first to match your layout"
            )
        if x.shape[-1] != self.dim:
            raise ValueError(
                f"x's last dimension must be dim={self.dim}, got shape {tuple(x.shape)}"
            )
        seq_len = x.shape[1] if self.batch_first else x.shape[0]
        if offset + seq_len > self.max_len:
            raise ValueError(
                f"positions {offset}..{offset + seq_len - 1} do not fit in max_len="
                f"{self.max_len}; build the module with max_len >= {offset + seq_len}"
            )
        codes = self._table()[offset : offset + seq_len].to(x.dtype)  # (seq_len, dim)
        if not self.batch_first:
            codes = codes.unsqueeze(1)  # (seq_len, 1, dim): one code per row, shared by the batch
        return self.dropout(x + codes)


class SinusoidalPositionalEncoding(_AdditivePositionalEncoding):
    r"""Add the sinusoidal table to a batch of embeddings, then apply dropout.

    Explained on the site: [the module](absolute.md#sinusoidal-module),
    [the buffer](absolute.md#sinusoidal-buffer) and
    [batch-first vs sequence-first](absolute.md#sinusoidal-layouts).

    ``forward(x)`` returns ``dropout(x + sinusoidal(max_len, dim, base)[:seq_len])``.

    The table is computed once for ``max_len`` positions and kept as a *non-persistent*
    buffer: it follows ``.to()`` / ``.cuda()`` like any buffer, but it is not written to
    ``state_dict()``. It is a deterministic function of ``(dim, max_len, base)``, so a
    checkpoint need not carry it (PyTorch's tutorial stores it, 5000 x dim floats per model),
    and a checkpoint saved with one ``max_len`` loads into a module with another. The
    trade-off: a ``state_dict`` from code that *did* persist the table has an extra ``pe``
    key; load it with ``strict=False`` or drop that key.

    The multiplication of token embeddings by :math:`\sqrt{\text{dim}}` that many models
    apply before this addition belongs to the model, not to the encoding, and is not done here.

    Deferred initialisation: built with ``device="meta"`` the module allocates nothing and
    ``forward`` infers shapes. ``to_empty(device=...)`` then gives the table uninitialised
    memory (it is not in ``state_dict()``, so loading a checkpoint does not fill it): call
    :meth:`reset_parameters` afterwards, as for any module with computed buffers.

    Parameters
    ----------
    dim
        Model width (positive, even).
    max_len
        Number of precomputed positions (5000 as in the PyTorch examples).
    base
        The constant :math:`n`.
    dropout
        Dropout probability applied after the addition (inverted dropout: kept values are
        scaled by ``1 / (1 - p)`` in training, nothing happens in ``eval()`` mode).
    batch_first
        ``True``: inputs are ``(batch, seq_len, dim)``; ``False``: ``(seq_len, batch, dim)``,
        as in the PyTorch word-language-model example.
    device
        Where to build the table (the CPU when ``None``); ``"meta"`` builds none.

    Examples
    --------
    >>> pe = SinusoidalPositionalEncoding(4, max_len=16, dropout=0.0)
    >>> pe(torch.zeros(3, 6, 4)).shape
    torch.Size([3, 6, 4])
    """

    def __init__(
        self,
        dim: int,
        max_len: int = 5000,
        *,
        base: float = 10000.0,
        dropout: float = 0.1,
        batch_first: bool = True,
        device: torch.device | str | None = None,
    ) -> None:
        super().__init__(dim, max_len, dropout, batch_first)
        self.base = check_base("base", base)
        table = sinusoidal(self.max_len, self.dim, self.base, device=device)  # (max_len, dim)
        self.register_buffer("table", table, persistent=False)

    def _table(self) -> torch.Tensor:
        return self.table

    def reset_parameters(self) -> None:
        """Recompute the table in place, on its device and in its dtype.

        Needed after ``to_empty()`` (deferred initialisation from ``meta``), which leaves the
        buffer uninitialised; a no-op on ``meta``.
        """
        with torch.no_grad():
            self.table.copy_(
                sinusoidal(self.max_len, self.dim, self.base, device=self.table.device)
            )

    def extra_repr(self) -> str:
        """Summarise the configuration in ``repr(module)``."""
        return (
            f"dim={self.dim}, max_len={self.max_len}, base={self.base}, "
            f"batch_first={self.batch_first}"
        )


class LearnedPositionalEmbedding(_AdditivePositionalEncoding):
    """A trainable table of ``max_len`` position vectors, added to the input.

    Discussed on the site: [learned absolute embeddings](relative.md#relative-learned).

    Same forward contract and errors as :class:`SinusoidalPositionalEncoding`. It cannot
    encode a position at or past ``max_len``: there is no row for it.

    Parameters
    ----------
    max_len
        Number of rows (positions ``0 .. max_len - 1``).
    dim
        Model width (positive, even, for symmetry with the other encodings).
    dropout, batch_first
        As in :class:`SinusoidalPositionalEncoding`.
    init_std
        Standard deviation of the normal initialisation (0.02, as in BERT).
    device
        Where to create the weight (the CPU when ``None``); ``"meta"`` allocates none, and
        :meth:`reset_parameters` initialises it after ``to_empty()``.
    """

    def __init__(
        self,
        max_len: int,
        dim: int,
        *,
        dropout: float = 0.1,
        batch_first: bool = True,
        init_std: float = 0.02,
        device: torch.device | str | None = None,
    ) -> None:
        super().__init__(dim, max_len, dropout, batch_first)
        if not isinstance(init_std, (int, float)) or not init_std >= 0:
            raise ValueError(f"init_std must be a real number >= 0, got {init_std!r}")
        self.init_std = float(init_std)
        self.weight = nn.Parameter(torch.empty(self.max_len, self.dim, device=check_device(device)))
        self.reset_parameters()

    def _table(self) -> torch.Tensor:
        return self.weight

    def reset_parameters(self) -> None:
        """Draw the weight again from the normal distribution with ``init_std``, in place."""
        nn.init.normal_(self.weight, mean=0.0, std=self.init_std)

    def extra_repr(self) -> str:
        """Summarise the configuration in ``repr(module)``."""
        return f"max_len={self.max_len}, dim={self.dim}, batch_first={self.batch_first}"
