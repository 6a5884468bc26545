"""Argument validation of tensors: dtypes, positions, frequencies, q and k, a scaling= argument.

The checks of plain values (integers, floats, layouts) are in :mod:`posenc_ref._checks`, which
the config reader uses without torch; these need it. Same convention: ``check_x(name, value)``
returns the value or raises an error naming the argument and the accepted values.
"""

from __future__ import annotations

from collections.abc import Mapping

import torch

from ._checks import check_dim, check_positive_float
from .rope_scaling import ScaledFrequencies, Scaling
from .values import inv_freq_values

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


# --------------------------------------------------------------------------- RotaryEmbedding's


def check_qk(q: object, k: object, head_dim: int) -> int:
    """Validate ``RotaryEmbedding.forward``'s q and k; return their ``seq_len``."""
    q, k = check_tensor("q", q), check_tensor("k", k)
    for name, t in (("q", q), ("k", k)):
        if check_head_dim(name, t) != head_dim:
            raise ValueError(
                f"{name}'s last dimension must be head_dim={head_dim}, got {tuple(t.shape)}"
            )
    if q.shape[-2] != k.shape[-2]:
        raise ValueError(
            f"q and k must have the same seq_len (dimension -2), got {tuple(q.shape)} and "
            f"{tuple(k.shape)}; rotate them in separate calls with explicit positions"
        )
    return q.shape[-2]


def check_scaling(
    scaling: object, rotary_dim: int, base: float
) -> tuple[Scaling | None, ScaledFrequencies, bool]:
    """``(method or None, frequencies inside the original context, static)`` of a ``scaling=``.

    What ``RotaryEmbedding(scaling=...)`` accepts: None, a ScaledFrequencies, or a dict or
    :class:`~posenc_ref.rope_scaling.Scaling` naming a method.

    ``static`` is True where frequencies were given (a ScaledFrequencies): no method to recompute.
    """
    if scaling is None:
        omega = inv_freq_values(check_dim("dim", rotary_dim), base)
        omega = torch.tensor(omega, dtype=torch.float64, device="cpu")  # kept on the CPU
        return None, ScaledFrequencies(omega, 1.0), False
    if isinstance(scaling, ScaledFrequencies):
        freqs = check_inv_freq("inv_freq", scaling.inv_freq)
        if freqs.device.type == "meta":
            raise ValueError(
                "scaling.inv_freq is a meta tensor, but the module keeps its frequencies as "
                "float64 values on the CPU (a few hundred numbers); compute them on the CPU and "
                "pass device='meta' for the tables only"
            )
        if freqs.numel() != rotary_dim // 2:
            raise ValueError(
                f"scaling.inv_freq must have rotary_dim // 2 = {rotary_dim // 2} entries, "
                f"got {freqs.numel()}"
            )
        factor = check_positive_float("scaling.attention_factor", scaling.attention_factor)
        return None, ScaledFrequencies(freqs.detach().to("cpu", torch.float64), factor), True
    if not isinstance(scaling, Mapping):
        raise TypeError(
            "scaling must be None, a ScaledFrequencies (from posenc_ref.rope_scaling) or a dict "
            f"like {{'method': 'yarn', 'factor': 4.0, 'original_max_len': 4096}}, got "
            f"{type(scaling).__name__}"
        )
    method = scaling if isinstance(scaling, Scaling) else Scaling.from_mapping(scaling)
    return method, method.frequencies(rotary_dim, base), False  # validates the values now
