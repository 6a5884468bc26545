"""Argument validation shared by every public function.

Each helper raises an error that names the argument and the accepted values, so that bad input
never turns into a silent broadcast or a NaN further down. Every check takes the argument's name
first and its value second, ``check_x(name, value, *, options)``, and returns the value
(converted where it says so).
"""

from __future__ import annotations

import math
import numbers
import reprlib

import torch

LAYOUTS = ("interleaved", "half")
HALF_DTYPES = (torch.float16, torch.bfloat16)


def check_int(name: str, value: object, *, minimum: int = 0) -> int:
    """Return ``value`` as an ``int`` if it is an integer ``>= minimum``, else raise."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be an integer >= {minimum}, got {value!r}")
    if value < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}, got {value!r}")
    return int(value)


def check_bool(name: str, value: object) -> bool:
    """Return ``value`` if it is ``True`` or ``False`` (not 0/1 or a string), else raise."""
    if not isinstance(value, bool):
        raise TypeError(f"{name} must be True or False, got {value!r}")
    return value


def check_dim(name: str, value: object) -> int:
    """Return ``value`` if it is a positive even integer, else raise."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be a positive even integer, got {value!r}")
    if value <= 0 or value % 2:
        raise ValueError(
            f"{name} must be a positive even integer (pairs of sin/cos or of rotated "
            f"coordinates), got {value!r}"
        )
    return int(value)


def shown(value: object, limit: int = 80) -> str:
    """A value for an error message that cannot fail: cut at ``limit`` characters.

    An integer of 30 digits or more is described by its number of digits (Python refuses to
    print one past 4,300), and a deeply nested list is summarised six levels down (its ``repr``
    would exhaust the recursion limit).
    """
    if isinstance(value, numbers.Integral) and not isinstance(value, bool):
        if abs(int(value)) >= 10**30:
            digits = math.ceil(abs(int(value)).bit_length() * math.log10(2))
            return f"an integer of about {digits} digits"
    try:
        text = repr(value)
    except (RecursionError, ValueError):
        try:
            text = reprlib.repr(value)
        except (RecursionError, ValueError):  # a huge integer inside a container
            text = f"a {type(value).__name__}"
    return text if len(text) <= limit else text[: limit - 3] + "..."


def check_positive_float(name: str, value: object, *, minimum: float | None = None) -> float:
    """Return ``value`` as a finite float ``> 0`` (or ``>= minimum`` when given), else raise."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a finite real number, got {shown(value)}")
    value = float(value)
    if not math.isfinite(value):
        raise ValueError(f"{name} must be finite, got {value!r}")
    if minimum is None:
        if value <= 0:
            raise ValueError(f"{name} must be > 0, got {value!r}")
    elif value < minimum:
        raise ValueError(f"{name} must be >= {minimum}, got {value!r}")
    return value


def check_base(name: str, value: object) -> float:
    """Return ``value`` if it is a finite float > 1, else raise.

    A base of 1 makes every frequency 1 and a base below 1 reverses the order of the
    frequencies; neither is an encoding anyone uses, so both are refused.
    """
    base = check_positive_float(name, value)
    if base <= 1.0:
        raise ValueError(f"{name} must be a finite number > 1 (10000 in the paper), got {value!r}")
    return base


def check_layout(name: str, value: object) -> str:
    """Return ``value`` if it is a known RoPE pair layout, else raise."""
    if value not in LAYOUTS:
        raise ValueError(f"{name} must be one of {LAYOUTS}, got {value!r}")
    return value  # type: ignore[return-value]


def check_probability(name: str, value: object) -> float:
    """Return ``value`` if it is a float in [0, 1), else raise."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a real number in [0, 1), got {value!r}")
    value = float(value)
    if not 0.0 <= value < 1.0:
        raise ValueError(f"{name} must be in [0, 1), got {value!r}")
    return value


def check_float_dtype(name: str, dtype: object) -> torch.dtype:
    """Return ``dtype`` if it is a floating-point ``torch.dtype``, else raise."""
    if not isinstance(dtype, torch.dtype) or not dtype.is_floating_point:
        raise TypeError(f"{name} must be a floating-point torch.dtype, got {dtype!r}")
    return dtype


def check_tensor(name: str, value: object) -> torch.Tensor:
    """Return ``value`` if it is a tensor, else raise."""
    if not isinstance(value, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor, got {type(value).__name__}")
    return value


def broadcast_shape(*shapes: tuple[int, ...]) -> tuple[int, ...] | None:
    """The shape ``shapes`` broadcast to (NumPy's rules), or ``None`` where they do not.

    What ``torch.broadcast_shapes`` returns or refuses, without its first call's import of SymPy
    (half a second of CPU, paid by the first rotation of every process). Sizes are compared,
    never hashed, so symbolic sizes inside ``torch.compile`` work too.
    """
    out: list[int] = []
    for axis in range(1, max([0] + [len(s) for s in shapes]) + 1):  # (dynamo: no genexpr)
        size = 1
        for shape in shapes:
            n = shape[-axis] if axis <= len(shape) else 1
            if n != 1:
                if size != 1 and n != size:
                    return None
                size = n
        out.append(size)
    return tuple(reversed(out))


# --------------------------------------------------------------------------- RoPE inputs


def tracing() -> bool:
    """True inside ``torch.compile`` and ``torch.export`` graphs, where values cannot be read."""
    compiler = torch.compiler
    return compiler.is_compiling() or getattr(compiler, "is_exporting", lambda: False)()


def values_visible(t: torch.Tensor) -> bool:
    """Whether checks of ``t``'s *values* may run (not on meta tensors, not inside graphs).

    Meta tensors have no data, and inside a compiled or exported graph reading values would
    break the graph. Shapes and dtypes are checked always.
    """
    return t.device.type != "meta" and not tracing()


def check_positions(
    name: str, positions: object, *, integer_only: bool = False, signed: bool = False
) -> torch.Tensor:
    """Return ``positions`` if it is a usable position tensor ``(..., seq_len)``, else raise.

    ``signed``: negative positions are allowed (patch coordinates centred on 0, as DINOv3's).
    """
    positions = check_tensor(name, positions)
    if positions.dtype == torch.bool or positions.dtype.is_complex:
        raise TypeError(f"{name} must hold integers or floats, got dtype {positions.dtype}")
    if positions.dtype in HALF_DTYPES:
        # bfloat16 has 8 significant bits: 257 rounds to 256, so two tokens share an angle.
        raise TypeError(
            f"{name} must not be {positions.dtype} (it cannot represent every integer above "
            "256); use an integer dtype such as torch.long (or float32/float64)"
        )
    if integer_only and positions.is_floating_point():
        raise TypeError(f"{name} must have an integer dtype here, got {positions.dtype}")
    if positions.dim() == 0:
        raise ValueError(f"{name} must have at least one dimension (..., seq_len), got a scalar")
    if values_visible(positions) and positions.numel():  # numel first would specialise shapes
        if positions.is_floating_point() and not bool(torch.isfinite(positions).all()):
            raise ValueError(f"{name} must be finite")
        if not signed and bool((positions < 0).any()):
            raise ValueError(f"{name} must be >= 0, got a minimum of {positions.min().item()}")
    return positions


def check_inv_freq(name: str, inv_freq: object) -> torch.Tensor:
    """Return ``inv_freq`` if it is a 1-D float32/float64 frequency vector, else raise."""
    # A ScaledFrequencies, a NamedTuple (not imported: rope_scaling depends on this module); the
    # tuple test comes first so that hasattr never runs on a tensor, which old dynamo rejects.
    if isinstance(inv_freq, tuple) and hasattr(inv_freq, "attention_factor"):
        raise TypeError(
            f"{name} must be a tensor; for a ScaledFrequencies `freqs` pass "
            "freqs.inv_freq, attention_factor=freqs.attention_factor"
        )
    inv_freq = check_tensor(name, inv_freq)
    if inv_freq.dim() != 1 or inv_freq.numel() == 0 or not inv_freq.is_floating_point():
        raise ValueError(
            f"{name} must be a non-empty 1-D floating tensor of shape (rotary_dim // 2,), "
            f"got shape {tuple(inv_freq.shape)} and dtype {inv_freq.dtype}"
        )
    if inv_freq.dtype in HALF_DTYPES:
        # A bfloat16 inv_freq (a model cast with .to(bfloat16)) is off by up to 2**-8 relative, so
        # angles of fast pairs are off by a radian near position 1000 (GPT-NeoX PR #1016).
        raise TypeError(
            f"{name} must be float32 or float64, got {inv_freq.dtype}; rebuild it with "
            "posenc_ref.inv_freq (float64)"
        )
    if values_visible(inv_freq) and (
        not bool(torch.isfinite(inv_freq).all()) or bool((inv_freq < 0).any())
    ):
        raise ValueError(f"{name} must be finite and >= 0")
    return inv_freq


def check_table_dtype(name: str, dtype: torch.dtype) -> torch.dtype:
    """Return ``dtype`` unless it is half precision (RoPE tables are float32 or float64)."""
    if dtype in HALF_DTYPES:
        raise TypeError(
            f"{name} must be torch.float32 or torch.float64, got {dtype}: a half-precision table "
            "rounds cos and sin to 8 or 11 bits (an error of ~1e-3 on every rotation); build it "
            "with rope_cos_sin(..., dtype=torch.float32) and pass half-precision x as it is (it "
            "is rotated in float32 and rounded once)"
        )
    return dtype


def check_even_last(name: str, x: torch.Tensor, what: str = "last dimension") -> int:
    """Return the size of ``x``'s last dimension if it is positive and even, else raise."""
    if x.dim() == 0 or x.shape[-1] % 2 or x.shape[-1] == 0:
        raise ValueError(f"{name}'s {what} must be positive and even, got {tuple(x.shape)}")
    return x.shape[-1]


def check_head_dim(name: str, x: torch.Tensor) -> int:
    """Return ``head_dim`` of a ``(..., seq_len, head_dim)`` tensor (positive, even), else raise."""
    if x.dim() < 2:
        raise ValueError(f"{name} must have shape (..., seq_len, head_dim), got {tuple(x.shape)}")
    return check_even_last(name, x, "last dimension (head_dim)")


def check_rotary_dim(name: str, value: object, *, head_dim: int) -> int:
    """Return the rotary width: ``head_dim`` for ``None``, else an even ``2 <= r <= head_dim``."""
    if value is None:
        return head_dim
    value = check_dim(name, value)
    if value > head_dim:
        raise ValueError(
            f"{name} must be an even integer <= head_dim={head_dim} (the coordinates past it "
            f"are passed through), got {value}"
        )
    return value
