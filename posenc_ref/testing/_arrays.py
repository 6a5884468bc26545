r"""Any array library in, torch tensors out: conversions, the shared output check, adapters.

Explained on the site: [Check an implementation in another framework](frameworks.md).

The checks make their inputs as torch tensors and judge torch tensors. A function written for
NumPy, JAX or MLX is wrapped in an adapter that names its library (``arrays="jax"``); its inputs
are handed over with that library's ``from_dlpack`` (the array API's exchange function, which
NumPy, JAX and MLX all have) and whatever it returns comes back through ``torch.from_dlpack``.
Nothing is cast on the way: a function that returns bfloat16 is judged as bfloat16, and one that
returns float32 for bfloat16 input is told so. A library is imported only when an adapter names
it; outputs are converted without importing anything.

NumPy has no bfloat16. With ``arrays="numpy"``, bfloat16 inputs are passed as
``ml_dtypes.bfloat16`` arrays (the dtype JAX uses, installed with it); the bits are reinterpreted,
not converted, in both directions. Without ml_dtypes, such a call raises an error that says so.

The adapters turn the calling conventions engines use into the kit's ``fn(q, k, positions)``:

- :func:`qk_fn`: ``fn(q, k, positions) -> (q_rot, k_rot)`` in another library;
- :func:`positions_fn`: ``fn(x, positions) -> x_rot``, one tensor at a time;
- :func:`offset_fn`: ``fn(x, offset) -> x_rot`` rotating the contiguous positions
  ``offset .. offset + seq_len - 1`` (MLX ``fast.rope``, mlx-lm, ggml, keras-hub's
  ``start_index``);
- :func:`table_fn`: a precomputed cos/sin table (rows are positions), rotated by the kit, so that
  the table itself is what is checked.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Sequence

import numpy as np
import torch

from .._checks import check_dim, check_layout
from ._model import _dtype_name, _pair_index, _partner

__all__ = ["qk_fn", "positions_fn", "offset_fn", "table_fn", "ARRAY_LIBRARIES"]

RopeFn = Callable[[torch.Tensor, torch.Tensor, torch.Tensor], Sequence[torch.Tensor]]

# The libraries an adapter can hand arrays to, and the module whose from_dlpack makes them.
ARRAY_LIBRARIES = {"torch": None, "numpy": "numpy", "jax": "jax.numpy", "mlx": "mlx.core"}


def _check_arrays(arrays: object) -> str:
    if arrays not in ARRAY_LIBRARIES:
        raise ValueError(f"arrays must be one of {tuple(ARRAY_LIBRARIES)}, got {arrays!r}")
    return arrays  # type: ignore[return-value]


def _ml_dtypes():
    try:
        return importlib.import_module("ml_dtypes")
    except ImportError as error:
        raise ImportError(
            "bfloat16 inputs for a NumPy function need the ml_dtypes package (NumPy has no "
            "bfloat16; JAX installs ml_dtypes): pip install ml_dtypes, or check float32 only"
        ) from error


def to_library(t: torch.Tensor, arrays: str):
    """``t`` as an array of ``arrays`` ("torch", "numpy", "jax", "mlx"), same dtype and values.

    Other libraries get a CPU copy (the kit's inputs are small), through their ``from_dlpack``.
    """
    if arrays == "torch":
        return t
    t = t.detach().to("cpu").contiguous().clone()  # a copy: fn may write into its input
    if arrays == "numpy" and t.dtype == torch.bfloat16:
        return t.view(torch.int16).numpy().view(_ml_dtypes().bfloat16)
    namespace = importlib.import_module(ARRAY_LIBRARIES[arrays])
    return namespace.from_dlpack(t)


def to_torch(value: object, what: str) -> torch.Tensor:
    """An array of any library as a torch tensor of the same dtype (no cast), else raise.

    ``what`` names the value in the error (``"q_rot"``). The array's own ``__dlpack__`` does the
    work, so no library is imported; NumPy's ml_dtypes bfloat16, which DLPack cannot carry, is
    reinterpreted bit for bit.
    """
    if isinstance(value, torch.Tensor):
        return value
    if isinstance(value, np.ndarray) and value.dtype.name == "bfloat16":
        bits = np.ascontiguousarray(value).view(np.int16)
        return torch.from_numpy(bits).view(torch.bfloat16)
    if hasattr(value, "__dlpack__"):
        try:
            return torch.from_dlpack(value)
        except (BufferError, RuntimeError, TypeError, ValueError) as error:
            raise AssertionError(
                f"fn returned {what} as a {type(value).__name__} that DLPack cannot hand to torch "
                f"({error})"
            ) from error
    raise AssertionError(
        f"fn returned {type(value).__name__} for {what}, not an array (a torch tensor, or a "
        "NumPy, JAX or MLX array)"
    )


def check_outputs(
    result: object, inputs: tuple[torch.Tensor, torch.Tensor], where: str
) -> tuple[torch.Tensor, torch.Tensor]:
    """What ``fn(q, k, positions)`` returned, as two torch tensors of the inputs' shapes and dtypes.

    The one check every function of the kit applies to a user's output, so a wrong return type,
    count, shape or dtype is named the same way by each of them. ``where`` says which call.
    """
    if not isinstance(result, (tuple, list)) or len(result) != 2:
        count = f" of {len(result)}" if isinstance(result, (tuple, list)) else ""
        raise AssertionError(
            f"fn(q, k, positions) must return (q_rot, k_rot), got {type(result).__name__}{count} "
            f"{where}"
        )
    outputs = []
    for name, x, out in zip("qk", inputs, result, strict=True):
        out = to_torch(out, f"{name}_rot")
        shape = tuple(x.shape)
        if tuple(out.shape) != shape:
            raise AssertionError(
                f"fn returned {name}_rot of shape {tuple(out.shape)} for {name} of shape {shape} "
                f"{where}; inputs are (batch, heads, seq_len, head_dim): transpose around your "
                "code if it expects (batch, seq_len, heads, head_dim)"
            )
        if out.dtype != x.dtype:
            raise AssertionError(
                f"fn returned {name}_rot as {_dtype_name(out.dtype)} for {_dtype_name(x.dtype)} "
                f"input {where}: a rotation should return its input's dtype"
            )
        outputs.append(out)
    return outputs[0], outputs[1]


def call_qk(
    fn: RopeFn, q: torch.Tensor, k: torch.Tensor, positions: torch.Tensor, where: str
) -> tuple[torch.Tensor, torch.Tensor]:
    """Call ``fn(q, k, positions)`` on copies and return its checked outputs (float64, CPU)."""
    with torch.no_grad():
        result = fn(q.clone(), k.clone(), positions.clone())
    q_rot, k_rot = check_outputs(result, (q, k), where)
    return q_rot.detach().to("cpu", torch.float64), k_rot.detach().to("cpu", torch.float64)


def _check_callable(fn: object, form: str) -> Callable:
    if not callable(fn):
        raise TypeError(f"fn must be callable as {form}, got {type(fn).__name__}")
    return fn


def _runs(positions: torch.Tensor) -> list[tuple[int, int]]:
    """``(start, count)`` of each run of consecutive positions, in order."""
    p = positions.tolist()
    runs, start = [], 0
    for t in range(1, len(p) + 1):
        if t == len(p) or p[t] != p[t - 1] + 1:
            runs.append((start, t - start))
            start = t
    return runs


class _Adapter:
    """A user's function in another calling convention, called as ``fn(q, k, positions)``."""

    form = ""

    def __init__(self, fn: Callable, arrays: str) -> None:
        self.fn = _check_callable(fn, self.form)
        self.arrays = _check_arrays(arrays)
        self.max_position: int | None = None

    def __repr__(self) -> str:
        name = getattr(self.fn, "__qualname__", None) or type(self.fn).__name__
        return f"{type(self).__name__.lstrip('_')}({name}, arrays={self.arrays!r})"

    def one(self, x: torch.Tensor, positions: torch.Tensor) -> object:
        raise NotImplementedError

    def __call__(self, q: torch.Tensor, k: torch.Tensor, positions: torch.Tensor):
        return self.one(q, positions), self.one(k, positions)


class _QK(_Adapter):
    form = "fn(q, k, positions) -> (q_rot, k_rot)"

    def __call__(self, q, k, positions):
        q, k, positions = (to_library(t, self.arrays) for t in (q, k, positions))
        return self.fn(q, k, positions)


class _Positions(_Adapter):
    form = "fn(x, positions) -> x_rot"

    def one(self, x, positions):
        return self.fn(to_library(x, self.arrays), to_library(positions, self.arrays))


class _Offset(_Adapter):
    form = "fn(x, offset) -> x_rot"

    def one(self, x, positions):
        # One call per run of consecutive positions (the property checks use several runs).
        pieces = []
        for start, count in _runs(positions):
            block = to_library(x[..., start : start + count, :], self.arrays)
            pieces.append(to_torch(self.fn(block, int(positions[start])), "x_rot"))
        if len(pieces) == 1:
            return pieces[0]
        return torch.cat([p.to(x.device) for p in pieces], dim=-2)


def qk_fn(fn: Callable, *, arrays: str) -> RopeFn:
    """Adapt ``fn(q, k, positions) -> (q_rot, k_rot)`` written for another array library.

    Explained on the site: [other frameworks](frameworks.md#frameworks-adapters).

    Parameters
    ----------
    fn
        Takes ``q`` and ``k`` ``(batch, heads, seq_len, head_dim)`` and ``positions``
        ``(seq_len,)`` int64 as arrays of ``arrays``; returns two arrays of any library.
    arrays
        ``"numpy"``, ``"jax"``, ``"mlx"`` or ``"torch"``.

    Returns
    -------
    callable
        ``fn(q, k, positions)`` on torch tensors, for every check of the kit.
    """
    return _QK(fn, arrays)


def positions_fn(fn: Callable, *, arrays: str = "torch") -> RopeFn:
    """Adapt ``fn(x, positions) -> x_rot``, which rotates one tensor (called for q, then k).

    Explained on the site: [other frameworks](frameworks.md#frameworks-adapters).

    Parameters
    ----------
    fn
        Takes ``x`` ``(batch, heads, seq_len, head_dim)`` and ``positions`` ``(seq_len,)`` int64
        as arrays of ``arrays``.
    arrays
        ``"torch"`` (default), ``"numpy"``, ``"jax"`` or ``"mlx"``.

    Returns
    -------
    callable
        ``fn(q, k, positions)`` on torch tensors.
    """
    return _Positions(fn, arrays)


def offset_fn(fn: Callable, *, arrays: str = "torch") -> RopeFn:
    """Adapt ``fn(x, offset) -> x_rot``, which rotates positions ``offset .. offset + seq_len - 1``.

    Explained on the site: [other frameworks](frameworks.md#frameworks-adapters).

    The convention of MLX's ``mx.fast.rope`` and mlx-lm's RoPE modules, ggml's ``rope`` with a
    contiguous position block, and keras-hub's ``start_index``. Non-consecutive positions (the
    property checks use several runs) are split into runs, one call each.

    Parameters
    ----------
    fn
        Takes ``x`` ``(batch, heads, seq_len, head_dim)`` as an array of ``arrays`` and the first
        position as a Python ``int``.
    arrays
        ``"torch"`` (default), ``"numpy"``, ``"jax"`` or ``"mlx"``.

    Returns
    -------
    callable
        ``fn(q, k, positions)`` on torch tensors.

    Examples
    --------
    >>> from posenc_ref import RotaryEmbedding
    >>> from posenc_ref.testing import assert_rope_equal
    >>> rope = RotaryEmbedding(16)
    >>> def rotate(x, offset):  # one tensor, positions offset, offset + 1, ...
    ...     return rope(x, x, offset=offset)[0]
    >>> assert_rope_equal(offset_fn(rotate), rope)
    """
    return _Offset(fn, arrays)


class _Table(_Adapter):
    form = "a cos/sin table"

    def __init__(self, cos, sin, layout: str, rotary_dim: int | None) -> None:
        self.fn, self.arrays = None, "torch"
        cos, sin = to_torch(cos, "cos"), to_torch(sin, "sin")
        if cos.dim() != 2 or cos.shape != sin.shape or cos.shape[0] == 0:
            raise ValueError(
                "cos and sin must be tables of one shape (num_positions, width), width = "
                f"rotary_dim // 2 (one value per pair) or rotary_dim, got {tuple(cos.shape)} and "
                f"{tuple(sin.shape)}"
            )
        if not cos.is_floating_point() or not sin.is_floating_point():
            raise TypeError(f"cos and sin must be floating tables, got {cos.dtype}, {sin.dtype}")
        self.layout = check_layout("layout", layout)
        self.cos, self.sin = cos, sin
        self.rotary_dim = None if rotary_dim is None else check_dim("rotary_dim", rotary_dim)
        self.max_position = cos.shape[0] - 1

    def __repr__(self) -> str:
        rows, width = self.cos.shape
        return f"table_fn(cos/sin {rows} x {width} {_dtype_name(self.cos.dtype)}, {self.layout})"

    def one(self, x, positions):
        width, head_dim = self.cos.shape[1], x.shape[-1]
        # Default: one value per pair when the table is at most half the head, else per
        # coordinate (a partial per-coordinate table needs rotary_dim).
        r = self.rotary_dim or (2 * width if 2 * width <= head_dim else width)
        if width not in (r, r // 2) or r > head_dim or r % 2:
            raise ValueError(
                f"a cos/sin table of width {width} does not fit rotary_dim {r} and head_dim "
                f"{head_dim}: pass rotary_dim= to table_fn"
            )
        if int(positions.max()) > self.max_position:
            raise ValueError(
                f"the table has rows for positions 0..{self.max_position}, asked for "
                f"{int(positions.max())}: pass max_position={self.max_position} to the check"
            )
        rows = positions.to("cpu")
        # The table's values, exactly, in float64: the rotation itself adds no error, so what
        # is judged is the table.
        cos = self.cos.to("cpu", torch.float64)[rows]
        sin = self.sin.to("cpu", torch.float64)[rows]
        if width == r // 2:  # one value per pair: spread it over the pair's two coordinates
            index = _pair_index(self.layout, r)
            cos, sin = cos[:, index], sin[:, index]
        x64 = x.to("cpu", torch.float64)
        xr = x64[..., :r]
        rotated = xr * cos + _partner(xr, self.layout) * sin
        out = torch.cat([rotated, x64[..., r:]], dim=-1)
        return out.to(x.dtype).to(x.device)


def table_fn(cos, sin, *, layout: str, rotary_dim: int | None = None) -> RopeFn:
    """Check a precomputed cos/sin table: the kit rotates with it, in the given layout.

    Explained on the site: [other frameworks](frameworks.md#frameworks-adapters).

    The rotation is exact (float64 from the table's own values, rounded once to the input's
    dtype), so every error the check finds is in the table: its frequencies, positions,
    attention factor or precision. Rows are positions ``0 .. num_positions - 1``; the checks
    stop at the last row (the returned function carries ``max_position``).

    Parameters
    ----------
    cos, sin
        ``(num_positions, rotary_dim // 2)`` (one value per pair) or
        ``(num_positions, rotary_dim)`` (per coordinate: HF's ``cat([freqs, freqs])`` for the half
        layout, each value twice in a row for the interleaved one), in any array library.
    layout
        ``"half"`` or ``"interleaved"``: which coordinates the rotation pairs.
    rotary_dim
        Coordinates rotated. Default: twice the table's width when that fits the head (one value
        per pair), else the width (one per coordinate).

    Returns
    -------
    callable
        ``fn(q, k, positions)`` on torch tensors.
    """
    return _Table(cos, sin, layout, rotary_dim)
