r"""Any array library in, torch tensors out: conversions, and the check of every output.

Explained on the site: [Check an implementation in another framework](frameworks.md).

The checks make their inputs as torch tensors and judge torch tensors. A function written for
NumPy, JAX or MLX is wrapped in an adapter that names its library (``arrays="jax"``,
``_adapters.py``); its inputs are handed over with that library's ``from_dlpack`` (the array
API's exchange function, which NumPy, JAX and MLX all have) and whatever it returns comes back
through ``torch.from_dlpack``. Nothing is cast on the way: a function that returns bfloat16 is
judged as bfloat16, and one that returns float32 for bfloat16 input is told so. A library is
imported only when an adapter names it; outputs are converted without importing anything.

NumPy has no bfloat16. With ``arrays="numpy"``, bfloat16 inputs are passed as
``ml_dtypes.bfloat16`` arrays (the dtype JAX uses, installed with it); the bits are reinterpreted,
not converted, in both directions. Without ml_dtypes, such a call raises an error that says so.

An exception raised inside the user's function is the user's: :func:`call_user` reports it as
theirs (:class:`FnRaised`, with its type and message), never as a failed comparison.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Sequence

import numpy as np
import torch

from ._common import dtype_name

__all__ = [
    "ARRAY_LIBRARIES",
    "RopeFn",
    "FnRaised",
    "call_user",
    "call_qk",
    "check_outputs",
    "to_library",
    "to_torch",
]

RopeFn = Callable[[torch.Tensor, torch.Tensor, torch.Tensor], Sequence[torch.Tensor]]

# The libraries an adapter can hand arrays to, and the module whose from_dlpack makes them.
ARRAY_LIBRARIES = {"torch": None, "numpy": "numpy", "jax": "jax.numpy", "mlx": "mlx.core"}


def check_arrays(arrays: object) -> str:
    if arrays not in ARRAY_LIBRARIES:
        raise ValueError(f"arrays must be one of {tuple(ARRAY_LIBRARIES)}, got {arrays!r}")
    return arrays  # type: ignore[return-value]


def ml_dtypes_module():
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
        return t.view(torch.int16).numpy().view(ml_dtypes_module().bfloat16)
    namespace = importlib.import_module(ARRAY_LIBRARIES[arrays])
    return namespace.from_dlpack(t)


def to_torch(value: object, what: str) -> torch.Tensor:
    """An array of any library as a torch tensor of the same dtype (no cast), else raise.

    ``what`` names the value in the error (``"q_rot"``). The array's own ``__dlpack__`` does the
    work, so no library is imported; NumPy's ml_dtypes bfloat16, which DLPack cannot carry, is
    reinterpreted bit for bit.
    """
    if isinstance(value, torch.Tensor):
        if value.layout != torch.strided:
            raise AssertionError(
                f"fn returned {what} as a {value.layout} tensor; return a dense (strided) one"
            )
        if value.device.type == "meta":
            raise AssertionError(
                f"fn returned {what} on the meta device, which holds shapes but no values: "
                "return it on the device of the input (a tensor made with device='meta', or "
                "a module whose buffers were never materialised, does this)"
            )
        return value
    if isinstance(value, np.ndarray):
        # A copy where the strides are not plain (x[..., ::-1] has negative ones, which DLPack
        # cannot carry: torch would abort the process).
        value = np.ascontiguousarray(value)
        if value.dtype.name == "bfloat16":
            return torch.from_numpy(value.view(np.int16)).view(torch.bfloat16)
        if value.dtype.kind not in "fiub" or value.dtype.byteorder == ">":
            raise AssertionError(
                f"fn returned {what} as a NumPy array of dtype {value.dtype}, which is not a "
                "number type torch takes"
            )
        return torch.from_numpy(value)
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
        if not out.is_floating_point() and out.dtype != x.dtype:
            raise AssertionError(
                f"fn returned {name}_rot as {dtype_name(out.dtype)} for {dtype_name(x.dtype)} "
                f"input {where}: a rotation returns floating values of its input's dtype"
            )
        if out.dtype != x.dtype:
            raise AssertionError(
                f"fn returned {name}_rot as {dtype_name(out.dtype)} for {dtype_name(x.dtype)} "
                f"input {where}: a rotation should return its input's dtype"
            )
        outputs.append(out)
    return outputs[0], outputs[1]


class FnRaised(AssertionError):
    """The user's function raised an exception: the check reports it as theirs.

    Attributes
    ----------
    error : Exception
        What the function raised (also the ``__cause__``).
    where : str
        The call, in words (its positions, dtype and shapes), once known.
    positions : torch.Tensor or None
        The positions of that call.
    """

    def __init__(self, error: Exception, where: str = "", positions=None) -> None:
        self.error, self.where, self.positions = error, where, positions
        super().__init__(self.words())

    def words(self) -> str:
        message = str(self.error).strip() or "(no message: a bare assert, or raise without one)"
        call = f" in the call with {self.where}" if self.where else ""
        return f"fn raised {type(self.error).__name__}{call}: {message}"


def call_user(fn: Callable, *args):
    """``fn(*args)`` for a user's function: an exception it raises becomes :class:`FnRaised`."""
    try:
        return fn(*args)
    except FnRaised:
        raise
    except Exception as error:  # the user's, whatever it is: reported as theirs
        raise FnRaised(error) from error


def call_qk(
    fn: RopeFn, q: torch.Tensor, k: torch.Tensor, positions: torch.Tensor, where: str
) -> tuple[torch.Tensor, torch.Tensor]:
    """Call ``fn(q, k, positions)`` on copies and return its checked outputs (float64, CPU).

    An adapter (``calls_user``) calls the user's function itself, so that its own refusals are
    not taken for the user's exceptions; any other ``fn`` is the user's.
    """
    args = (q.clone(), k.clone(), positions.clone())
    with torch.no_grad():
        try:
            result = fn(*args) if getattr(fn, "calls_user", False) else call_user(fn, *args)
        except FnRaised as raised:
            inner = where[1:-1] if where.startswith("(") and where.endswith(")") else where
            raised.where, raised.positions = inner, positions
            raised.args = (raised.words(),)
            raise
    q_rot, k_rot = check_outputs(result, (q, k), where)
    return q_rot.detach().to("cpu", torch.float64), k_rot.detach().to("cpu", torch.float64)


def check_callable(fn: object, form: str) -> Callable:
    if not callable(fn):
        raise TypeError(f"fn must be callable as {form}, got {type(fn).__name__}")
    return fn
