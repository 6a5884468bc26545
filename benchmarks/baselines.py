r"""The common formulations we compare against, written here in our own words.

These are not copies of anyone's code: each function restates a widely used formulation from
its description (see the project's notes on peers), so that the benchmarks measure the
formulation rather than one file. The installed peers (HF transformers, torchtune,
rotary-embedding-torch) are called through their real functions in :mod:`benchmarks.peers`.
"""

from __future__ import annotations

import math

import numpy as np
import torch

__all__ = ["float32_formula_table", "numpy_float64_table", "complex_rope_table", "complex_rope"]


def float32_formula_table(positions: torch.Tensor, dim: int, base: float = 10000.0) -> torch.Tensor:
    r"""The sinusoidal table as the PyTorch examples compute it: everything in float32.

    Frequencies :math:`\exp(2i \cdot (-\ln n / d))`, angles as a float32 product of a position
    column and a frequency row, sin into the even columns and cos into the odd ones of a zeroed
    table.

    Parameters
    ----------
    positions
        ``(seq_len,)`` positions (converted to float32, exact up to :math:`2^{24}`).
    dim
        Even width.
    base
        The constant :math:`n`.

    Returns
    -------
    torch.Tensor
        ``(seq_len, dim)`` float32.
    """
    column = positions.to(torch.float32).unsqueeze(1)  # (L, 1)
    frequencies = torch.exp(torch.arange(0, dim, 2, dtype=torch.float32) * (-math.log(base) / dim))
    table = torch.zeros(positions.shape[0], dim)
    table[:, 0::2] = torch.sin(column * frequencies)  # (L, dim/2) angles rounded to float32
    table[:, 1::2] = torch.cos(column * frequencies)
    return table


def numpy_float64_table(num_positions: int, dim: int, base: float = 10000.0) -> np.ndarray:
    """The sinusoidal table in NumPy float64 (as in NumPy/TensorFlow tutorials), left in float64.

    Returns
    -------
    numpy.ndarray
        ``(num_positions, dim)`` float64, sin in even and cos in odd columns.
    """
    angles = np.arange(num_positions, dtype=np.float64)[:, None] * base ** (
        -np.arange(0, dim, 2, dtype=np.float64) / dim
    )  # (L, dim/2)
    table = np.empty((num_positions, dim), dtype=np.float64)
    table[:, 0::2] = np.sin(angles)
    table[:, 1::2] = np.cos(angles)
    return table


def complex_rope_table(seq_len: int, dim: int, base: float = 10000.0) -> torch.Tensor:
    r"""Unit complex numbers :math:`e^{i m \omega_j}` as Meta's Llama code precomputes them.

    Returns
    -------
    torch.Tensor
        ``(seq_len, dim/2)`` complex64 (float32 frequencies and angles, as in that code).
    """
    frequencies = 1.0 / base ** (torch.arange(0, dim, 2, dtype=torch.float32) / dim)
    angles = torch.outer(torch.arange(seq_len, dtype=torch.float32), frequencies)  # (L, dim/2)
    return torch.polar(torch.ones_like(angles), angles)


def complex_rope(x: torch.Tensor, rotations: torch.Tensor) -> torch.Tensor:
    r"""Rotate interleaved pairs of ``x`` as a complex multiplication (Meta's formulation).

    Pairs ``(x[2i], x[2i+1])`` are read as complex numbers (in float32, also for bfloat16 input),
    multiplied by :math:`e^{i m \omega_i}`, read back as pairs and cast to ``x.dtype``.

    Parameters
    ----------
    x
        ``(..., seq_len, dim)``.
    rotations
        ``(seq_len, dim/2)`` complex64, from :func:`complex_rope_table`.

    Returns
    -------
    torch.Tensor
        Same shape and dtype as ``x``.
    """
    pairs = torch.view_as_complex(x.float().unflatten(-1, (-1, 2)))  # (..., L, dim/2) complex
    return torch.view_as_real(pairs * rotations).flatten(-2).type_as(x)  # (..., L, dim)
