"""Argument validation of tensors: dtypes, positions, frequency vectors, head widths.

The checks of plain values (integers, floats, layouts) are in :mod:`posenc_ref._checks`, which
the config reader uses without torch; these need it. Same convention: ``check_x(name, value)``
returns the value or raises an error naming the argument and the accepted values.
"""

from __future__ import annotations

import torch

HALF_DTYPES = (torch.float16, torch.bfloat16)


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
