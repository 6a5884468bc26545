r"""Check your implementation: conformance checks with diagnoses, for your own test suite.

Explained on the site: [Check your implementation](check.md).

- :func:`assert_rope_equal`: your RoPE ``fn(q, k, positions)`` against a
  :class:`~posenc_ref.RotaryEmbedding`; on failure, the cause found by testing models of the
  common bugs against your output. :func:`rope_error` gives the error per position.
- :func:`assert_rope_grad_equal`: the backward pass of a training kernel (the rotation by
  minus the angle).
- :func:`assert_axial_rope_equal`: a vision tower's 2-D RoPE on patch grids (row-major or in
  merge blocks), with the same diagnosis.
- :func:`assert_mrope_positions_equal`: a multimodal position builder (the M-RoPE rows of a
  sequence with images and videos) against each family's rules, with the mistake named.
- :func:`assert_sinusoidal_equal`: a sinusoidal table (or a function making one).
- :func:`assert_alibi_slopes_equal`, :func:`assert_alibi_bias_equal`,
  :func:`assert_t5_buckets_equal`: the relative schemes.
- Properties of any RoPE ``fn``: :func:`assert_relative_property`, :func:`assert_norm_preserved`,
  :func:`assert_composition`, :func:`assert_layout_permutation`.
- Other array libraries and calling conventions: :func:`qk_fn`, :func:`positions_fn`,
  :func:`offset_fn` (NumPy, JAX or MLX functions, ``fn(x, offset)`` kernels),
  :func:`offsets_fn` (one offset per batch row), :func:`packed_fn` (``cu_seqlens``),
  :func:`inplace_fn` (kernels that write into q and k) and :func:`table_fn` (a precomputed
  cos/sin table) turn them into the ``fn(q, k, positions)`` every check takes
  ([other frameworks](frameworks.md), [call patterns](check.md#check-patterns)).
- Reference vectors for code in any language: :func:`build_vectors`, :func:`write_vectors`,
  :func:`read_vectors` (which checks every field of a file from another program) and
  :func:`verify_outputs` (``python -m posenc_ref vectors`` and ``verify``).
- Hypothesis strategies (:mod:`posenc_ref.testing.strategies`, re-exported here) for your own
  properties; they need the extra: ``pip install "posenc-ref[testing]"``. Everything else works
  without hypothesis.

Every check returns ``None`` on agreement and raises ``AssertionError`` otherwise, so it reads
as one line in a pytest test.
"""

from __future__ import annotations

from ._absolute import assert_sinusoidal_equal
from ._adapters import (
    inplace_fn,
    offset_fn,
    offsets_fn,
    packed_fn,
    per_dtype_fn,
    positions_fn,
    qk_fn,
    tokens_fn,
)
from ._axial import assert_axial_rope_equal
from ._builders import assert_mrope_positions_equal
from ._grad import assert_rope_grad_equal
from ._kernels import FLOAT32_KERNELS
from ._properties import (
    assert_composition,
    assert_layout_permutation,
    assert_norm_preserved,
    assert_relative_property,
)
from ._relative import assert_alibi_bias_equal, assert_alibi_slopes_equal, assert_t5_buckets_equal
from ._rope import assert_rope_equal, rope_error
from ._table_fn import table_fn
from ._tolerance import float32_angle_allowance
from ._vector_files import VectorsFileError, read_vectors, write_vectors
from ._vectors import build_vectors, verify_outputs

__all__ = [
    "assert_rope_equal",
    "rope_error",
    "assert_axial_rope_equal",
    "assert_mrope_positions_equal",
    "assert_rope_grad_equal",
    "float32_angle_allowance",
    "FLOAT32_KERNELS",
    "build_vectors",
    "write_vectors",
    "read_vectors",
    "verify_outputs",
    "VectorsFileError",
    "assert_sinusoidal_equal",
    "assert_alibi_slopes_equal",
    "assert_alibi_bias_equal",
    "assert_t5_buckets_equal",
    "assert_relative_property",
    "assert_norm_preserved",
    "assert_composition",
    "assert_layout_permutation",
    "qk_fn",
    "positions_fn",
    "offset_fn",
    "offsets_fn",
    "packed_fn",
    "inplace_fn",
    "table_fn",
    "tokens_fn",
    "per_dtype_fn",
]

# Re-exported lazily from .strategies, so that importing posenc_ref.testing never needs
# hypothesis: the ImportError (naming the extra) comes only when a strategy is asked for.
_STRATEGIES = (
    "head_dims",
    "bases",
    "layouts",
    "positions",
    "factors",
    "scalings",
    "rope_kwargs",
    "rotary_embeddings",
    "rope_inputs",
)


def __getattr__(name: str):
    if name in _STRATEGIES:
        from . import strategies

        return getattr(strategies, name)
    raise AttributeError(f"module 'posenc_ref.testing' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted([*globals(), *_STRATEGIES])
