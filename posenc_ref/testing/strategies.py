"""Hypothesis strategies for property tests of positional encodings (needs the testing extra).

Explained on the site: [your own properties](check.md#check-strategies).

Every function returns a strategy; ``posenc_ref.testing`` re-exports them. Install with
``pip install "posenc-ref[testing]"``. Tensors are drawn through a seed (hypothesis shrinks the
seed, torch draws the values), so failures replay exactly.

Example
-------
::

    from hypothesis import given
    from posenc_ref.testing import rope_inputs, rotary_embeddings

    @given(rotary_embeddings(), rope_inputs(64))
    def test_mine(reference, inputs):
        q, k, positions = inputs
        ...
"""

from __future__ import annotations

try:
    from hypothesis import strategies as st
except ImportError as error:  # pragma: no cover - exercised in a subprocess by the tests
    raise ImportError(
        "posenc_ref.testing.strategies needs hypothesis: pip install 'posenc-ref[testing]' "
        "(the rest of posenc_ref.testing works without it)"
    ) from error

import torch

from ..rope import RotaryEmbedding
from ..rope_scaling import METHODS

__all__ = [
    "head_dims",
    "bases",
    "layouts",
    "positions",
    "factors",
    "scalings",
    "rope_kwargs",
    "rotary_embeddings",
    "rope_inputs",
]

# Bases in released models, tried first (hypothesis shrinks towards the first element).
_KNOWN_BASES = [10000.0, 500000.0, 1000000.0, 100.0, 150000.0, 5000000.0]


def head_dims(min_value: int = 2, max_value: int = 256) -> st.SearchStrategy[int]:
    """Even widths in ``[min_value, max_value]``; shrinks towards the smallest (one pair).

    Parameters
    ----------
    min_value, max_value
        Bounds, each rounded up to even; ``2 <= min_value <= max_value``.
    """
    low, high = (min_value + 1) // 2, max_value // 2
    if low < 1 or high < low:
        raise ValueError(f"need 2 <= min_value <= max_value, got {min_value}, {max_value}")
    return st.integers(low, high).map(lambda half: 2 * half)


def bases() -> st.SearchStrategy[float]:
    """The bases of released models, or any float in ``[1.01, 1e7]``."""
    return st.sampled_from(_KNOWN_BASES) | st.floats(
        1.01, 1e7, allow_nan=False, allow_infinity=False
    )


def layouts() -> st.SearchStrategy[str]:
    """``"interleaved"`` or ``"half"``."""
    return st.sampled_from(["interleaved", "half"])


def positions(max_value: int = 1 << 20) -> st.SearchStrategy[int]:
    """Integer positions in ``[0, max_value]`` (long contexts included by default)."""
    return st.integers(0, max_value)


def factors(max_value: float = 64.0) -> st.SearchStrategy[float]:
    """Context-extension ratios ``s >= 1`` (1, the identity, is the shrink target)."""
    return st.sampled_from([1.0, 2.0, 4.0, 8.0, 16.0, 32.0]) | st.floats(
        1.0, max_value, allow_nan=False, allow_infinity=False
    )


@st.composite
def scalings(draw, rotary_dim: int) -> dict | None:
    """``scaling=`` values for ``RotaryEmbedding``: None or a method dict with drawn parameters.

    Parameters
    ----------
    rotary_dim
        The width the method will see (NTK methods need at least 4).
    """
    # Every method of the table, so a new one is drawn (with factor and original_max_len, unless
    # it is given its parameters below) without an edit here; longrope needs a searched list per
    # pair and is drawn by its own tests; the NTK methods need two pairs.
    methods = ["none"] + [
        name for name in METHODS
        if name != "longrope" and (rotary_dim >= 4 or name not in ("ntk_aware", "dynamic_ntk"))
    ]  # fmt: skip
    method = draw(st.sampled_from(methods))
    if method == "none":
        return None
    factor = draw(factors(32.0))
    original = draw(st.sampled_from([512, 2048, 4096, 8192]))
    if method in ("linear", "ntk_aware"):
        return {"method": method, "factor": factor}
    if method == "llama3":
        low = draw(st.sampled_from([1.0, 2.0]))
        high = draw(st.sampled_from([4.0, 8.0]))
        return {
            "method": method,
            "factor": factor,
            "low_freq_factor": low,
            "high_freq_factor": high,
            "original_max_len": original,
        }
    return {"method": method, "factor": factor, "original_max_len": original}


@st.composite
def rope_kwargs(draw, max_head_dim: int = 128, partial: bool = True) -> dict:
    """Keyword arguments for ``RotaryEmbedding``: width, base, layout, rotary_dim, scaling.

    Parameters
    ----------
    max_head_dim
        Largest ``head_dim`` (even, ``>= 2``).
    partial
        Whether ``rotary_dim`` may be smaller than ``head_dim``.
    """
    head_dim = draw(head_dims(2, max_head_dim))
    rotary_dim = head_dim
    if partial and head_dim > 2:
        rotary_dim = draw(st.sampled_from([head_dim, head_dim // 2 + head_dim // 2 % 2, 2]))
    return {
        "head_dim": head_dim,
        "base": draw(bases()),
        "layout": draw(layouts()),
        "rotary_dim": rotary_dim,
        "scaling": draw(scalings(rotary_dim)),
    }


def rotary_embeddings(max_head_dim: int = 128, partial: bool = True):
    """``RotaryEmbedding`` modules from :func:`rope_kwargs`."""
    return rope_kwargs(max_head_dim, partial).map(lambda kw: RotaryEmbedding(**kw))


@st.composite
def rope_inputs(
    draw,
    head_dim: int,
    max_seq_len: int = 16,
    max_position: int = 1 << 17,
    dtype: torch.dtype = torch.float32,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """``(q, k, positions)``: random ``(batch, heads, seq_len, head_dim)`` tensors and positions.

    Positions are ``seq_len`` contiguous integers from a drawn start (what a KV-cache step
    sees), so they fit every implementation's call form.

    Parameters
    ----------
    head_dim
        Last dimension of ``q`` and ``k``.
    max_seq_len
        Largest ``seq_len`` (``>= 1``).
    max_position
        Largest position.
    dtype
        Floating dtype of ``q`` and ``k``.
    """
    batch = draw(st.integers(1, 2))
    heads = draw(st.integers(1, 3))
    seq_len = draw(st.integers(1, max_seq_len))
    start = draw(st.integers(0, max(0, max_position - seq_len + 1)))
    seed = draw(st.integers(0, 2**32 - 1))
    generator = torch.Generator().manual_seed(seed)
    shape = (batch, heads, seq_len, head_dim)
    q = torch.randn(shape, generator=generator).to(dtype)
    k = torch.randn(shape, generator=generator).to(dtype)
    return q, k, torch.arange(start, start + seq_len)
