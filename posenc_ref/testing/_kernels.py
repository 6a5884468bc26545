r"""The float32 kernels the tolerance covers, reproduced step by step in float32.

Explained on the site: [the float32 kernels it covers](check.md#check-kernels).

Real code computes a pair's angle :math:`m\,\omega_i` in float32 in a few ways; each function
of :data:`FLOAT32_KERNELS` does one of them with the same float32 operations, in the same order, and
returns the float32 angles ``(n, dim // 2)`` it forms. They are what
:func:`~posenc_ref.testing.float32_angle_allowance` is derived from and checked against
(``tests/test_testing_tolerance.py``, and the table on the check page):

- ``pow``: :math:`1 / n^{2i/d}` per pair, then the product with the position (HF
  transformers, vLLM's and TensorRT-LLM's cos/sin caches, which are these angles computed
  once and indexed by position);
- ``exp_log``: :math:`\exp(2i \cdot (-\ln n / d))` (the PyTorch tutorial, fairseq);
- ``ggml``: ``theta = m; theta *= theta_scale`` once per pair with
  ``theta_scale = powf(n, -2/d)`` (ggml's CPU rope cache, and its other backends);
- ``float64_cast``: frequencies in float64 rounded once to float32 (Meta's Llama code computes
  ``freqs`` in float32 from a float64 ``theta``; torchtune; many ports);
- ``yarn_blend``: YaRN's frequencies blended in float32 from the two plain ones (HF's
  ``_compute_yarn_parameters``), for a reference with YaRN scaling.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
import torch

__all__ = ["FLOAT32_KERNELS", "pow_kernel", "exp_log_kernel", "ggml_kernel", "float64_cast_kernel"]


def _positions(positions: np.ndarray) -> np.ndarray:
    return np.asarray(positions, dtype=np.float32)[:, None]  # exact below 2^24


def pow_kernel(positions: np.ndarray, dim: int, base: float) -> np.ndarray:
    """``1 / base ** (arange(0, dim, 2) / dim)`` in float32, times the position."""
    exponent = torch.arange(0, dim, 2, dtype=torch.int64).float() / dim
    inv_freq = (1.0 / (base**exponent)).numpy()
    return _positions(positions) * inv_freq


def exp_log_kernel(positions: np.ndarray, dim: int, base: float) -> np.ndarray:
    """``exp(arange(0, dim, 2) * (-ln(base) / dim))`` in float32, times the position."""
    inv_freq = torch.exp(torch.arange(0, dim, 2).float() * (-math.log(base) / dim)).numpy()
    return _positions(positions) * inv_freq


def ggml_kernel(positions: np.ndarray, dim: int, base: float) -> np.ndarray:
    """The loop of ggml: the angle of pair ``i`` is the position times ``theta_scale``, i times."""
    theta_scale = np.power(np.float32(base), np.float32(-2.0) / np.float32(dim))
    theta = _positions(positions)[:, 0].copy()
    angles = np.empty((theta.size, dim // 2), dtype=np.float32)
    for i in range(dim // 2):
        angles[:, i] = theta
        theta = theta * theta_scale  # one float32 rounding per pair
    return angles


def float64_cast_kernel(positions: np.ndarray, dim: int, base: float) -> np.ndarray:
    """Frequencies in float64, cast to float32, times the position in float32."""
    inv_freq = (base ** (-np.arange(0, dim, 2, dtype=np.float64) / dim)).astype(np.float32)
    return _positions(positions) * inv_freq


def yarn_blend_kernel(
    positions: np.ndarray, dim: int, base: float, factor: float = 8.0, original: int = 4096
) -> np.ndarray:
    """HF's YaRN frequencies in float32 (a blend of the plain and the interpolated ones)."""
    pos_freqs = base ** (torch.arange(0, dim, 2).float() / dim)
    extrapolation = 1.0 / pos_freqs
    interpolation = 1.0 / (factor * pos_freqs)

    def pair(rotations: float) -> float:
        return (dim * math.log(original / (rotations * 2 * math.pi))) / (2 * math.log(base))

    low = max(math.floor(pair(32.0)), 0)
    high = min(math.ceil(pair(1.0)), dim - 1)
    ramp = ((torch.arange(dim // 2, dtype=torch.float32) - low) / (high - low)).clamp(0, 1)
    keep = 1 - ramp
    inv_freq = interpolation * (1 - keep) + extrapolation * keep
    return _positions(positions) * inv_freq.numpy()


FLOAT32_KERNELS: dict[str, Callable[..., np.ndarray]] = {
    "pow": pow_kernel,
    "exp_log": exp_log_kernel,
    "ggml": ggml_kernel,
    "float64_cast": float64_cast_kernel,
    "yarn_blend": yarn_blend_kernel,
}
"""Kernel name to the function forming its float32 angles ``(n, dim // 2)``."""
