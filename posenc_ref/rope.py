r"""Rotary position embeddings (RoPE): tables, the rotation, both pair layouts, the module.

RoPE rotates each pair of coordinates :math:`(u, v)` of a query or key at position :math:`m` by
the angle :math:`m\,\omega_i`:

.. math::

    \begin{pmatrix} u' \\ v' \end{pmatrix} =
    \begin{pmatrix} \cos m\omega_i & -\sin m\omega_i \\
                    \sin m\omega_i & \cos m\omega_i \end{pmatrix}
    \begin{pmatrix} u \\ v \end{pmatrix},
    \qquad \omega_i = \text{base}^{-2i/\text{dim}},

so that :math:`\langle R(m)q, R(n)k\rangle` depends on :math:`m - n` only.

Pair layouts (which coordinates form pair :math:`i`):

- ``"interleaved"``: :math:`(x_{2i}, x_{2i+1})`. The RoFormer paper, Meta's Llama code (complex
  numbers), torchtune, rotary-embedding-torch, DeepSeek. The default here.
- ``"half"``: :math:`(x_i, x_{i+\text{dim}/2})`. HF transformers (``rotate_half``), GPT-NeoX, the
  YaRN reference code.

The two are the same function up to a permutation of the head dimension
(:func:`to_half_layout`); converting a checkpoint permutes the rows of the query and key
projections once (:func:`permute_qk_weight`).

Shapes: ``x`` is ``(..., seq_len, head_dim)``, for example ``(batch, heads, seq_len, head_dim)``;
``positions`` is ``(seq_len,)`` or any shape ``(..., seq_len)`` that broadcasts against
``x.shape[:-1]``; ``cos`` and ``sin`` are ``(..., seq_len, head_dim)``.

Numerical policy: angles ``position * inv_freq`` are formed in float64 and only cos/sin are cast;
bfloat16/float16 inputs are rotated in float32 and cast back once.
"""

from __future__ import annotations

import inspect
import math
from collections.abc import Mapping

import torch
from torch import nn

from ._checks import (
    check_base,
    check_dim,
    check_float_dtype,
    check_int,
    check_layout,
    check_positive_float,
    check_tensor,
)
from .absolute import inv_freq as _inv_freq
from .device import compute_device
from .rope_scaling import SCALING_METHODS, ScaledFrequencies, dynamic_ntk

__all__ = [
    "rope_cos_sin",
    "apply_rope",
    "apply_rope_loop",
    "to_half_layout",
    "to_interleaved_layout",
    "permute_qk_weight",
    "RotaryEmbedding",
]

_HALF_DTYPES = (torch.float16, torch.bfloat16)


# --------------------------------------------------------------------------- validation


def _check_positions(positions: object, *, integer_only: bool = False) -> torch.Tensor:
    positions = check_tensor("positions", positions)
    if positions.dtype == torch.bool or positions.is_complex():
        raise TypeError(f"positions must hold integers or floats, got dtype {positions.dtype}")
    if positions.dtype in _HALF_DTYPES:
        # bfloat16 has 8 significant bits: 257 rounds to 256, so two tokens share an angle.
        raise TypeError(
            f"positions must not be {positions.dtype} (it cannot represent every integer above "
            "256); use an integer dtype such as torch.long (or float32/float64)"
        )
    if integer_only and positions.is_floating_point():
        raise TypeError(f"positions must have an integer dtype here, got {positions.dtype}")
    if positions.dim() == 0:
        raise ValueError("positions must have at least one dimension (..., seq_len), got a scalar")
    if positions.numel():
        if positions.is_floating_point() and not bool(torch.isfinite(positions).all()):
            raise ValueError("positions must be finite")
        if bool((positions < 0).any()):
            raise ValueError(f"positions must be >= 0, got a minimum of {positions.min().item()}")
    return positions


def _check_inv_freq(inv_freq: object) -> torch.Tensor:
    if isinstance(inv_freq, ScaledFrequencies):
        raise TypeError(
            "inv_freq must be a tensor; for a ScaledFrequencies `freqs` pass "
            "freqs.inv_freq, attention_factor=freqs.attention_factor"
        )
    inv_freq = check_tensor("inv_freq", inv_freq)
    if inv_freq.dim() != 1 or inv_freq.numel() == 0 or not inv_freq.is_floating_point():
        raise ValueError(
            f"inv_freq must be a non-empty 1-D floating tensor of shape (head_dim // 2,), "
            f"got shape {tuple(inv_freq.shape)} and dtype {inv_freq.dtype}"
        )
    if inv_freq.dtype in _HALF_DTYPES:
        # A bfloat16 inv_freq (a model cast with .to(bfloat16)) is off by up to 2**-9 relative, so
        # angles of fast pairs are off by a radian near position 1000 (GPT-NeoX PR #1016).
        raise TypeError(
            f"inv_freq must be float32 or float64, got {inv_freq.dtype}; rebuild it with "
            "posenc_ref.inv_freq (float64)"
        )
    if not bool(torch.isfinite(inv_freq).all()) or bool((inv_freq < 0).any()):
        raise ValueError("inv_freq must be finite and >= 0")
    return inv_freq


def _check_even_last(x: torch.Tensor, name: str, what: str = "last dimension") -> int:
    if x.dim() == 0 or x.shape[-1] % 2 or x.shape[-1] == 0:
        raise ValueError(f"{name}'s {what} must be positive and even, got {tuple(x.shape)}")
    return x.shape[-1]


def _check_head_dim(x: torch.Tensor, name: str = "x") -> int:
    if x.dim() < 2:
        raise ValueError(f"{name} must have shape (..., seq_len, head_dim), got {tuple(x.shape)}")
    return _check_even_last(x, name, "last dimension (head_dim)")


# --------------------------------------------------------------------------- tables


def rope_cos_sin(
    positions: torch.Tensor,
    inv_freq: torch.Tensor,
    *,
    layout: str = "interleaved",
    attention_factor: float = 1.0,
    dtype: torch.dtype = torch.float32,
) -> tuple[torch.Tensor, torch.Tensor]:
    r"""Compute the cos and sin tables of RoPE, expanded to the pair layout.

    Derived on the site: [frequencies and tables](rope.md#rope-frequencies).

    .. math::

        \cos_{m, j} = a \cos(m\,\omega_{i(j)}), \qquad \sin_{m, j} = a \sin(m\,\omega_{i(j)})

    where :math:`i(j) = \lfloor j/2 \rfloor` (``"interleaved"``: each frequency twice in a row) or
    :math:`j \bmod \text{dim}/2` (``"half"``: the frequency vector repeated), and :math:`a` is the
    ``attention_factor``. Angles are formed in float64 (on the CPU where the device has no float64,
    e.g. ``mps``) and only the result is cast to ``dtype``.

    Parameters
    ----------
    positions
        ``(..., seq_len)`` integer (or float32/float64, for fractional positions) tensor, ``>= 0``;
        never bfloat16/float16. The result lives on its device.
    inv_freq
        ``(head_dim // 2,)`` frequencies, e.g. :func:`posenc_ref.inv_freq` or the ``inv_freq`` of a
        :mod:`posenc_ref.rope_scaling` method; read in float64.
    layout
        ``"interleaved"`` or ``"half"``.
    attention_factor
        :math:`a > 0`, multiplied into both tables (YaRN); 1 for plain RoPE.
    dtype
        Floating dtype of the result.

    Returns
    -------
    tuple of torch.Tensor
        ``(cos, sin)``, each ``(..., seq_len, head_dim)``.

    Examples
    --------
    >>> from posenc_ref import inv_freq
    >>> cos, sin = rope_cos_sin(torch.arange(3), inv_freq(4, 100.0))
    >>> cos.shape
    torch.Size([3, 4])
    """
    positions = _check_positions(positions)
    inv_freq = _check_inv_freq(inv_freq)
    layout = check_layout(layout)
    attention_factor = check_positive_float("attention_factor", attention_factor)
    dtype = check_float_dtype("dtype", dtype)
    where = compute_device(positions.device)
    angles = positions.to(where, torch.float64).unsqueeze(-1) * inv_freq.to(where, torch.float64)
    tables = []
    for fn in (torch.cos, torch.sin):
        half = fn(angles)  # (..., seq_len, head_dim / 2)
        if attention_factor != 1.0:
            half = half * attention_factor
        if layout == "interleaved":
            full = half.unsqueeze(-1).expand(*half.shape, 2).flatten(-2)  # w0 w0 w1 w1 ...
        else:
            full = torch.cat([half, half], dim=-1)  # w0 w1 ... w0 w1 ...
        tables.append(full.to(device=positions.device, dtype=dtype))
    return tables[0], tables[1]


# --------------------------------------------------------------------------- rotation


def apply_rope(
    x: torch.Tensor,
    cos: torch.Tensor,
    sin: torch.Tensor,
    *,
    layout: str = "interleaved",
    out: torch.Tensor | None = None,
) -> torch.Tensor:
    r"""Rotate every pair of ``x`` by the angles whose cos and sin are given: the fast path.

    Derived on the site: [the rotation with complex numbers](rope.md#rope-derivation) and
    [loop vs vectorized](rope.md#rope-loop-vs-vectorized).

    For pair :math:`(u, v)` (coordinates chosen by ``layout``),
    :math:`u' = u\cos_u - v\sin_u` and :math:`v' = v\cos_v + u\sin_v`, i.e.
    ``x * cos + rotate(x) * sin`` with ``rotate`` mapping each pair :math:`(u, v)` to
    :math:`(-v, u)`. The tables must carry the same angle in both coordinates of a pair, as every
    table from :func:`rope_cos_sin` does: the interleaved path reads only ``cos[..., 0::2]`` and
    ``sin[..., 0::2]`` (one complex multiplication, the cost of a copy), the half path reads both
    halves (one product and two fused multiply-adds, no ``rotate_half``/``torch.cat``
    temporaries).

    bfloat16/float16 inputs are rotated in float32 and cast back once; otherwise the rotation runs
    in ``x.dtype`` (``cos``/``sin`` are cast to it, which costs only their size). On the CPU the
    half layout and half-precision inputs are processed a few positions at a time, so that the
    repeated passes over a block stay in cache (same arithmetic, same result). Differentiable
    when ``out`` is ``None``.

    Parameters
    ----------
    x
        ``(..., seq_len, head_dim)`` floating tensor.
    cos, sin
        ``(..., seq_len, head_dim)``, same shape, broadcastable to ``x`` without enlarging it and on
        its device; from :func:`rope_cos_sin` with the same ``layout``. For ``x`` of shape
        ``(batch, heads, seq_len, head_dim)`` a table of shape ``(seq_len, head_dim)`` or
        ``(batch, 1, seq_len, head_dim)`` works; ``(batch, seq_len, head_dim)`` needs
        ``.unsqueeze(-3)``.
    layout
        ``"interleaved"`` or ``"half"``.
    out
        Optional preallocated result: same shape, dtype and device as ``x``, and sharing no memory
        with ``x`` (in-place rotation is not supported: ``out=x`` raises). Writing into ``out``
        is not differentiable; leave it ``None`` under autograd.

    Returns
    -------
    torch.Tensor
        Same shape and dtype as ``x`` (``out`` itself when given).
    """
    x = check_tensor("x", x)
    cos = check_tensor("cos", cos)
    sin = check_tensor("sin", sin)
    layout = check_layout(layout)
    head_dim = _check_head_dim(x)
    if not x.is_floating_point():
        raise TypeError(f"x must be a floating-point tensor, got dtype {x.dtype}")
    for name, table in (("cos", cos), ("sin", sin)):
        if not table.is_floating_point():
            raise TypeError(f"{name} must be a floating-point tensor, got dtype {table.dtype}")
        if table.shape[-1] != head_dim:
            raise ValueError(
                f"{name}'s last dimension must equal x's head_dim={head_dim}, got "
                f"{name} shape {tuple(table.shape)} and x shape {tuple(x.shape)}"
            )
        if table.device != x.device:
            raise ValueError(f"{name} is on {table.device} but x is on {x.device}")
    if cos.shape != sin.shape:
        raise ValueError(
            f"cos and sin must have the same shape, got {tuple(cos.shape)} and {tuple(sin.shape)}"
        )
    try:
        broadcast = torch.broadcast_shapes(x.shape, cos.shape)
    except RuntimeError:
        broadcast = None
    if broadcast != x.shape:
        raise ValueError(
            f"cos/sin of shape {tuple(cos.shape)} must broadcast to x's shape {tuple(x.shape)} "
            "without enlarging it; for x (batch, heads, seq_len, head_dim) and cos "
            "(batch, seq_len, head_dim), pass cos.unsqueeze(-3)"
        )
    if out is not None:
        out = check_tensor("out", out)
        if out.shape != x.shape or out.dtype != x.dtype or out.device != x.device:
            raise ValueError(
                f"out must match x's shape {tuple(x.shape)}, dtype {x.dtype} and device "
                f"{x.device}, got {tuple(out.shape)}, {out.dtype}, {out.device}"
            )
        if out.untyped_storage().data_ptr() == x.untyped_storage().data_ptr():
            raise ValueError(
                "out must not share memory with x (in-place rotation is not supported)"
            )

    rotate = _rotate_interleaved if layout == "interleaved" else _rotate_half_split
    half_precision = x.dtype in _HALF_DTYPES
    # Half precision is rotated in float32 and rounded once, as Meta's and torchtune's code do
    # (HF rotates in the activation dtype, with tables rounded to it).
    work = torch.float32 if half_precision else x.dtype
    cos, sin = cos.to(work), sin.to(work)
    needs_grad = torch.is_grad_enabled() and any(t.requires_grad for t in (x, cos, sin))
    if needs_grad or x.device.type != "cpu":
        # The blocked path below writes into slices of a buffer (out= kernels), which autograd
        # cannot follow; on GPUs blocks would only add kernel launches.
        result = rotate(x.to(work), cos, sin, None if half_precision else out)
        if not half_precision:
            return result
        return result.to(x.dtype) if out is None else out.copy_(result)
    if layout == "interleaved" and not half_precision:
        return rotate(x, cos, sin, out)  # one complex multiplication: already one pass
    return _rotate_blocks(x, cos, sin, layout, out)


# Elements per block of the CPU blocked path (256 KiB of float32): small enough that a block of
# x, its result and the float32 work stay in the core's cache between the passes.
_BLOCK_ELEMENTS = 1 << 16


def _rotate_blocks(
    x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor, layout: str, out: torch.Tensor | None
) -> torch.Tensor:
    # The half layout takes three passes (a product and two fused multiply-adds) and half
    # precision needs a float32 copy of x and a rounding pass. Over whole tensors each pass goes
    # to memory (about 3x and 10x a copy); over a few positions at a time the repeated passes hit
    # the cache, and memory sees about one read of x and one write of the result.
    result = out if out is not None else torch.empty_like(x)
    seq_len, head_dim = x.shape[-2], x.shape[-1]
    per_position = max(1, x[..., :1, :].numel())  # one position across all leading dimensions
    rows = max(1, _BLOCK_ELEMENTS // per_position)
    scratch = None
    if x.dtype in _HALF_DTYPES:  # float32 work space, rounded into `result` block by block
        scratch = torch.empty(
            (*x.shape[:-2], min(rows, seq_len), head_dim), dtype=torch.float32, device=x.device
        )
    rotation = torch.complex(cos[..., 0::2], sin[..., 0::2]) if layout == "interleaved" else None
    for start in range(0, seq_len, rows):
        stop = min(start + rows, seq_len)

        def rows_of(table: torch.Tensor, start: int = start, stop: int = stop) -> torch.Tensor:
            return table if table.shape[-2] == 1 else table[..., start:stop, :]  # 1: broadcast

        target = result[..., start:stop, :] if scratch is None else scratch[..., : stop - start, :]
        if layout == "interleaved":  # (only reached for half precision)
            target.copy_(x[..., start:stop, :])  # exact widening
            torch.view_as_complex(target.unflatten(-1, (-1, 2))).mul_(rows_of(rotation))
        else:  # mixed-dtype kernels widen half-precision x on the fly
            _rotate_half_split(x[..., start:stop, :], rows_of(cos), rows_of(sin), target)
        if scratch is not None:
            result[..., start:stop, :].copy_(target)  # the one rounding
    return result


def _as_complex(t: torch.Tensor) -> torch.Tensor:
    # (..., d) real -> (..., d/2) complex view: pair (x[2i], x[2i+1]) becomes x[2i] + i x[2i+1].
    pairs = t.unflatten(-1, (-1, 2))
    try:
        return torch.view_as_complex(pairs)
    except RuntimeError:  # strides or offset not a whole number of pairs: copy once
        return torch.view_as_complex(pairs.contiguous())


def _rotate_interleaved(
    x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor, out: torch.Tensor | None
) -> torch.Tensor:
    # Rotating pair (u, v) by angle t is multiplying u + iv by cos t + i sin t (Meta's Llama code
    # does the same). One complex multiplication reads x once and writes the result once, which
    # keeps this at the cost of a copy; real arithmetic on strided even/odd columns is ~3x slower.
    rotation = torch.complex(cos[..., 0::2], sin[..., 0::2])  # (..., seq_len, d/2)
    if out is not None and out.stride(-1) == 1:
        try:
            torch.mul(
                _as_complex(x), rotation, out=torch.view_as_complex(out.unflatten(-1, (-1, 2)))
            )
            return out
        except RuntimeError:  # `out` not viewable as complex: fall through
            pass
    result = torch.view_as_real(_as_complex(x) * rotation).flatten(-2)  # (..., seq_len, d)
    return result if out is None else out.copy_(result)


def _rotate_half_split(
    x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor, out: torch.Tensor | None
) -> torch.Tensor:
    # HF's x * cos + rotate_half(x) * sin, without building rotate_half(x): one product over the
    # whole tensor, then a fused multiply-add into each half (no torch.cat, one allocation).
    h = x.shape[-1] // 2
    result = torch.mul(x, cos, out=out) if out is not None else x * cos
    result[..., :h].addcmul_(x[..., h:], sin[..., :h], value=-1.0)  # u cos - v sin
    result[..., h:].addcmul_(x[..., :h], sin[..., h:])  # v cos + u sin
    return result


def apply_rope_loop(
    x: torch.Tensor,
    positions: torch.Tensor,
    inv_freq: torch.Tensor,
    *,
    layout: str = "interleaved",
    attention_factor: float = 1.0,
) -> torch.Tensor:
    r"""RoPE written as the explicit 2x2 rotation of each pair, one Python float at a time.

    Shown on the site: [loop vs vectorized](rope.md#rope-loop-vs-vectorized).

    The definition and the oracle: slow on purpose (use small tensors), everything in float64.
    For every vector of ``x`` (all leading indices), every pair :math:`i` at coordinates
    :math:`(j, k)` (``(2i, 2i+1)`` or ``(i, i + dim/2)``) and angle :math:`m\,\omega_i`:

    .. math::

        \begin{pmatrix} x'_j \\ x'_k \end{pmatrix} = a
        \begin{pmatrix} \cos m\omega_i & -\sin m\omega_i \\ \sin m\omega_i & \cos m\omega_i
        \end{pmatrix}
        \begin{pmatrix} x_j \\ x_k \end{pmatrix}

    Parameters
    ----------
    x
        ``(..., seq_len, head_dim)`` floating tensor.
    positions
        ``(seq_len,)`` or ``(..., seq_len)`` broadcastable against ``x.shape[:-1]``; ``>= 0``.
    inv_freq
        ``(head_dim // 2,)`` frequencies.
    layout
        ``"interleaved"`` or ``"half"``.
    attention_factor
        :math:`a > 0` (1 for plain RoPE).

    Returns
    -------
    torch.Tensor
        Same shape, dtype and device as ``x``.
    """
    x = check_tensor("x", x)
    positions = _check_positions(positions)
    inv_freq = _check_inv_freq(inv_freq)
    layout = check_layout(layout)
    attention_factor = check_positive_float("attention_factor", attention_factor)
    head_dim = _check_head_dim(x)
    if not x.is_floating_point():
        raise TypeError(f"x must be a floating-point tensor, got dtype {x.dtype}")
    if inv_freq.numel() != head_dim // 2:
        raise ValueError(
            f"inv_freq must have head_dim // 2 = {head_dim // 2} entries for x of shape "
            f"{tuple(x.shape)}, got {inv_freq.numel()}"
        )
    try:
        positions = positions.expand(x.shape[:-1])
    except RuntimeError as err:
        raise ValueError(
            f"positions of shape {tuple(positions.shape)} must broadcast to x.shape[:-1] = "
            f"{tuple(x.shape[:-1])}"
        ) from err

    vectors = x.detach().to("cpu", torch.float64).reshape(-1, head_dim).tolist()
    where = positions.detach().to("cpu", torch.float64).reshape(-1).tolist()
    omegas = inv_freq.detach().to("cpu", torch.float64).tolist()
    half = head_dim // 2
    rotated = []
    for vector, m in zip(vectors, where, strict=True):
        new = list(vector)
        for i, omega in enumerate(omegas):
            j, k = (2 * i, 2 * i + 1) if layout == "interleaved" else (i, i + half)
            angle = m * omega
            rotation = (
                (math.cos(angle), -math.sin(angle)),
                (math.sin(angle), math.cos(angle)),
            )
            u, v = vector[j], vector[k]
            new[j] = attention_factor * (rotation[0][0] * u + rotation[0][1] * v)
            new[k] = attention_factor * (rotation[1][0] * u + rotation[1][1] * v)
        rotated.append(new)
    result = torch.tensor(rotated, dtype=torch.float64).reshape(x.shape)
    return result.to(device=x.device, dtype=x.dtype)


# --------------------------------------------------------------------------- layouts


def to_half_layout(x: torch.Tensor) -> torch.Tensor:
    r"""Reorder the last dimension from interleaved pairs to half-split pairs.

    Explained on the site: [the two pair layouts](rope.md#rope-layouts).

    Coordinates :math:`(x_0, x_1, x_2, x_3, \dots)` become
    :math:`(x_0, x_2, \dots, x_{d-2}, x_1, x_3, \dots, x_{d-1})`: pair :math:`(x_{2i}, x_{2i+1})`
    moves to positions :math:`(i, i + d/2)`. ``apply_rope(to_half_layout(x), layout="half")`` equals
    ``to_half_layout(apply_rope(x, layout="interleaved"))`` with matching tables.

    Parameters
    ----------
    x
        ``(..., head_dim)``, ``head_dim`` even.

    Returns
    -------
    torch.Tensor
        ``(..., head_dim)``, a new tensor.
    """
    x = check_tensor("x", x)
    _check_even_last(x, "x")
    return x.unflatten(-1, (-1, 2)).transpose(-1, -2).flatten(-2)  # (..., d/2, 2) -> (..., 2, d/2)


def to_interleaved_layout(x: torch.Tensor) -> torch.Tensor:
    r"""Reorder the last dimension from half-split pairs to interleaved pairs.

    Explained on the site: [the two pair layouts](rope.md#rope-layouts).

    The inverse of :func:`to_half_layout`: :math:`(x_i, x_{i+d/2})` moves to
    :math:`(2i, 2i+1)`.

    Parameters
    ----------
    x
        ``(..., head_dim)``, ``head_dim`` even.

    Returns
    -------
    torch.Tensor
        ``(..., head_dim)``, a new tensor.
    """
    x = check_tensor("x", x)
    _check_even_last(x, "x")
    return x.unflatten(-1, (2, -1)).transpose(-1, -2).flatten(-2)  # (..., 2, d/2) -> (..., d/2, 2)


def permute_qk_weight(weight: torch.Tensor, num_heads: int, *, to_layout: str) -> torch.Tensor:
    r"""Permute the output rows of a query or key projection, head by head, between layouts.

    Explained on the site: [converting checkpoints](rope.md#rope-permutation).

    Converting a checkpoint between Meta-style code (interleaved pairs) and HF-style code
    (half-split pairs) needs this once, for ``q_proj`` and ``k_proj`` (weights and 1-D biases)
    only: ``v`` and ``o`` are not rotated. For ``k`` pass the number of key/value heads (grouped
    query attention). After conversion the rotated queries and keys are permuted copies of each
    other, so every attention score is unchanged.

    ``to_layout="half"`` (Meta to HF): each head's rows, viewed as ``(head_dim/2, 2)``, are
    regrouped as ``(2, head_dim/2)``, even rows first. ``to_layout="interleaved"`` is
    the inverse (HF to Meta, torchtune's ``hf_to_tune``).

    Parameters
    ----------
    weight
        ``(num_heads * head_dim, in_features)`` weight or ``(num_heads * head_dim,)`` bias.
    num_heads
        Number of heads whose rows ``weight`` stacks (``>= 1``, dividing ``weight.shape[0]``
        into an even ``head_dim``).
    to_layout
        The layout the result is for: ``"half"`` or ``"interleaved"``.

    Returns
    -------
    torch.Tensor
        Same shape as ``weight``, a new tensor.
    """
    weight = check_tensor("weight", weight)
    num_heads = check_int("num_heads", num_heads, minimum=1)
    to_layout = check_layout(to_layout)
    if weight.dim() not in (1, 2):
        raise ValueError(
            f"weight must be a 2-D projection weight or a 1-D bias, got shape {tuple(weight.shape)}"
        )
    rows = weight.shape[0]
    if rows % num_heads or (rows // num_heads) % 2:
        raise ValueError(
            f"weight's first dimension ({rows}) must be num_heads={num_heads} times an even "
            "head_dim"
        )
    rest = weight.shape[1:]
    grouped = (-1, 2) if to_layout == "half" else (2, -1)
    per_head = weight.reshape(num_heads, rows // num_heads, *rest).unflatten(1, grouped)
    swapped = per_head.transpose(1, 2)  # (heads, a, b, ...) -> (heads, b, a, ...)
    return swapped.reshape(weight.shape)


# --------------------------------------------------------------------------- module


def _resolve_scaling(
    scaling: object, head_dim: int, base: float
) -> tuple[str | None, dict, ScaledFrequencies]:
    """Return ``(method, params, frequencies)`` for ``RotaryEmbedding``.

    ``method`` is None (plain RoPE), ``"static"`` (a ScaledFrequencies) or a method name.
    """
    if scaling is None:
        return None, {}, ScaledFrequencies(_inv_freq(head_dim, base), 1.0)
    if isinstance(scaling, ScaledFrequencies):
        freqs = _check_inv_freq(scaling.inv_freq)
        if freqs.numel() != head_dim // 2:
            raise ValueError(
                f"scaling.inv_freq must have head_dim // 2 = {head_dim // 2} entries, "
                f"got {freqs.numel()}"
            )
        factor = check_positive_float("scaling.attention_factor", scaling.attention_factor)
        return "static", {}, ScaledFrequencies(freqs.detach().to("cpu", torch.float64), factor)
    if not isinstance(scaling, Mapping):
        raise TypeError(
            "scaling must be None, a ScaledFrequencies (from posenc_ref.rope_scaling) or a dict "
            f"like {{'method': 'yarn', 'factor': 4.0, 'original_max_len': 4096}}, got "
            f"{type(scaling).__name__}"
        )
    params = dict(scaling)
    method = params.pop("method", None)
    if method not in SCALING_METHODS:
        raise ValueError(
            f"scaling['method'] must be one of {tuple(SCALING_METHODS)}, got {method!r}"
        )
    function = SCALING_METHODS[method]
    accepted = [
        name
        for name, p in inspect.signature(function).parameters.items()
        if p.kind is p.KEYWORD_ONLY and name != "seq_len"
    ]
    unknown = sorted(set(params) - set(accepted))
    if unknown:
        raise ValueError(
            f"scaling keys {unknown} are not accepted by method {method!r}; accepted: "
            f"{accepted} (base and dim come from RotaryEmbedding itself)"
        )
    if method == "dynamic_ntk":
        if "original_max_len" not in params or "factor" not in params:
            raise ValueError("scaling for 'dynamic_ntk' needs 'factor' and 'original_max_len'")
        dynamic_ntk(head_dim, base, seq_len=0, **params)  # validate now, not at the first forward
        return method, params, ScaledFrequencies(_inv_freq(head_dim, base), 1.0)
    return method, params, function(head_dim, base, **params)


class RotaryEmbedding(nn.Module):
    r"""Rotate queries and keys with RoPE, from a cached cos/sin table.

    Explained on the site: [the module](rope.md#rope-module).

    ``forward(q, k, positions)`` equals
    ``apply_rope(q, *rope_cos_sin(positions, inv_freq, ...))`` (and the same for ``k``), with
    ``inv_freq`` and ``attention_factor`` from ``scaling``; the table is only an optimisation.

    The table: cos and sin for positions ``0 .. max_len - 1`` in float32 (float64 when the inputs
    are float64), kept in *non-persistent* buffers. They follow ``.to(device)`` but are not saved
    in ``state_dict()``: they are a function of the constructor arguments. When a position at or
    beyond the table's length arrives, the table is rebuilt at least twice as long (never an
    error). If ``.to(dtype)`` casts the buffers, the next call rebuilds them in the compute dtype
    from float64 angles, so a bfloat16 model never uses bfloat16 angles. The frequencies
    themselves are kept as a float64 CPU tensor (not a buffer) for the same reason.

    ``scaling`` accepts:

    - ``None``: plain RoPE.
    - a :class:`~posenc_ref.rope_scaling.ScaledFrequencies`, e.g.
      ``yarn(head_dim, base, factor=4, original_max_len=4096)`` (``base`` is then unused).
    - a dict naming a :mod:`~posenc_ref.rope_scaling` function and its keyword arguments, e.g.
      ``{"method": "yarn", "factor": 4.0, "original_max_len": 4096}``; ``dim`` and ``base`` come
      from the module. The only way to get ``"dynamic_ntk"``, which needs the current length.

    Dynamic NTK is stateless here: each call uses ``dynamic_ntk(seq_len=largest position + 1)``,
    so calls whose positions stay below ``original_max_len`` use plain RoPE, and longer ones
    compute their table directly (not cached). HF transformers instead keeps the grown
    frequencies until a call shorter than the original length resets them. Either way, keys
    already in a KV cache keep the rotation they were written with: once the length passes
    ``original_max_len`` new queries use other frequencies than old keys, and scores with those
    keys no longer depend only on the distance. To keep them consistent, cache unrotated keys and
    rotate the whole cache on every step, or use the static ``ntk_aware`` method.

    Parameters
    ----------
    head_dim
        Rotary width (positive, even).
    base
        The constant :math:`n`; finite and > 1.
    layout
        ``"interleaved"`` (default) or ``"half"``.
    scaling
        See above.
    max_len
        Initial table length (``>= 1``); grows on demand.
    device
        Where to build the table.

    Examples
    --------
    >>> rope = RotaryEmbedding(8)
    >>> q, k = torch.randn(2, 4, 5, 8), torch.randn(2, 4, 5, 8)
    >>> q_rot, k_rot = rope(q, k)
    >>> q_rot.shape
    torch.Size([2, 4, 5, 8])
    """

    def __init__(
        self,
        head_dim: int,
        *,
        base: float = 10000.0,
        layout: str = "interleaved",
        scaling: ScaledFrequencies | Mapping | None = None,
        max_len: int = 4096,
        device: torch.device | str | None = None,
    ) -> None:
        super().__init__()
        self.head_dim = check_dim(head_dim, "head_dim")
        self.base = check_base(base)
        self.layout = check_layout(layout)
        self.method, self.scaling_params, freqs = _resolve_scaling(
            scaling, self.head_dim, self.base
        )
        # float64 on the CPU, a plain attribute rather than a buffer so .to(dtype) can't round it
        self.inv_freq = freqs.inv_freq
        self.attention_factor = freqs.attention_factor
        max_len = check_int("max_len", max_len, minimum=1)
        self.register_buffer("cos_cached", torch.empty(0), persistent=False)
        self.register_buffer("sin_cached", torch.empty(0), persistent=False)
        self._build(
            max_len, torch.device("cpu") if device is None else torch.device(device), torch.float32
        )

    @property
    def max_len(self) -> int:
        """Current table length (positions ``0 .. max_len - 1`` are cached)."""
        return self.cos_cached.shape[0]

    def _build(self, length: int, device: torch.device, dtype: torch.dtype) -> None:
        positions = torch.arange(length, device=device)
        cos, sin = rope_cos_sin(
            positions,
            self.inv_freq,
            layout=self.layout,
            attention_factor=self.attention_factor,
            dtype=dtype,
        )
        self.cos_cached, self.sin_cached = cos, sin  # (length, head_dim) each

    def cos_sin(
        self, positions: torch.Tensor, *, dtype: torch.dtype = torch.float32
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Return cos and sin for ``positions`` from the table, grown if needed.

        Under dynamic NTK, positions past the original length are computed directly instead.

        Parameters
        ----------
        positions
            ``(..., seq_len)`` integer tensor, ``>= 0``.
        dtype
            ``torch.float32`` or ``torch.float64``.

        Returns
        -------
        tuple of torch.Tensor
            ``(cos, sin)``, each ``(..., seq_len, head_dim)``, on the table's device.
        """
        positions = _check_positions(positions, integer_only=True)
        dtype = check_float_dtype("dtype", dtype)
        return self._rows(positions, None, dtype)

    def _rows(
        self, positions: torch.Tensor | None, span: tuple[int, int] | None, dtype: torch.dtype
    ) -> tuple[torch.Tensor, torch.Tensor]:
        # `span` (start, stop) stands for positions start .. stop - 1 and is served by slicing
        # the table (a view, no gather): the common case without packed sequences.
        device = self.cos_cached.device
        if positions is None:
            needed = span[1]
        else:
            positions = positions.to(device)
            needed = int(positions.max().item()) + 1 if positions.numel() else 0
        if self.method == "dynamic_ntk" and needed > self.scaling_params["original_max_len"]:
            # The frequencies depend on this call's length: not cacheable.
            if positions is None:
                positions = torch.arange(*span, device=device)
            freqs = dynamic_ntk(self.head_dim, self.base, seq_len=needed, **self.scaling_params)
            return rope_cos_sin(positions, freqs.inv_freq, layout=self.layout, dtype=dtype)
        if needed > self.max_len:
            self._build(max(needed, 2 * self.max_len), device, dtype)  # doubling: amortised growth
        elif self.cos_cached.dtype != dtype:
            self._build(self.max_len, device, dtype)  # e.g. after .to(torch.bfloat16)
        if positions is None:
            return self.cos_cached[span[0] : span[1]], self.sin_cached[span[0] : span[1]]
        return self.cos_cached[positions], self.sin_cached[positions]

    def forward(
        self,
        q: torch.Tensor,
        k: torch.Tensor,
        positions: torch.Tensor | None = None,
        *,
        offset: int = 0,
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Rotate queries and keys.

        Parameters
        ----------
        q, k
            ``(..., seq_len, head_dim)`` each, same ``seq_len`` (their leading dimensions may
            differ, e.g. fewer key heads); on the module's device.
        positions
            ``None``: positions ``offset .. offset + seq_len - 1``. Otherwise an integer tensor
            ``(seq_len,)`` or ``(..., seq_len)`` broadcastable against both ``q.shape[:-1]`` and
            ``k.shape[:-1]`` (e.g. ``(batch, 1, seq_len)`` for packed sequences with
            ``(batch, heads, seq_len, head_dim)`` inputs).
        offset
            First position when ``positions`` is ``None`` (the length of a KV cache), ``>= 0``.

        Returns
        -------
        tuple of torch.Tensor
            ``(q_rot, k_rot)``, shapes and dtypes of ``q`` and ``k``.
        """
        q = check_tensor("q", q)
        k = check_tensor("k", k)
        offset = check_int("offset", offset)
        for name, t in (("q", q), ("k", k)):
            if _check_head_dim(t, name) != self.head_dim:
                raise ValueError(
                    f"{name}'s last dimension must be head_dim={self.head_dim}, "
                    f"got {tuple(t.shape)}"
                )
        if q.shape[-2] != k.shape[-2]:
            raise ValueError(
                f"q and k must have the same seq_len (dimension -2), got {tuple(q.shape)} and "
                f"{tuple(k.shape)}; rotate them in separate calls with explicit positions"
            )
        seq_len = q.shape[-2]
        span = None
        if positions is None:
            span = (offset, offset + seq_len)
        elif offset:
            raise ValueError("give either positions or offset, not both (add the offset yourself)")
        else:
            positions = _check_positions(positions, integer_only=True)
            if positions.shape[-1] != seq_len:
                raise ValueError(
                    f"positions' last dimension must be seq_len={seq_len}, "
                    f"got {tuple(positions.shape)}"
                )
        dtype = torch.float64 if torch.float64 in (q.dtype, k.dtype) else torch.float32
        cos, sin = self._rows(positions, span, dtype)
        q_rot = apply_rope(q, cos.to(q.device), sin.to(q.device), layout=self.layout)
        k_rot = apply_rope(k, cos.to(k.device), sin.to(k.device), layout=self.layout)
        return q_rot, k_rot

    def extra_repr(self) -> str:  # noqa: D102 (nn.Module's hook for repr)
        return (
            f"head_dim={self.head_dim}, base={self.base}, layout={self.layout!r}, "
            f"scaling={self.method}, max_len={self.max_len}"
        )
