r"""RoPE as functions: the cos/sin tables, the rotation, the two pair layouts, checkpoints.

RoPE rotates each pair of coordinates :math:`(u, v)` of a query or key at position :math:`m` by
the angle :math:`m\,\omega_i`:

.. math::

    \begin{pmatrix} u' \\ v' \end{pmatrix} =
    \begin{pmatrix} \cos m\omega_i & -\sin m\omega_i \\
                    \sin m\omega_i & \cos m\omega_i \end{pmatrix}
    \begin{pmatrix} u \\ v \end{pmatrix},
    \qquad \omega_i = \text{base}^{-2i/d},

with :math:`d` = ``rotary_dim`` (the head width unless partial), so that the score
:math:`\langle R(m)q, R(p)k\rangle` of a query at :math:`m` and a key at :math:`p` depends on
:math:`p - m` only.

Pair layouts (which coordinates form pair :math:`i`):

- ``"interleaved"``: :math:`(x_{2i}, x_{2i+1})`. The RoFormer paper, Meta's Llama code (complex
  numbers), torchtune, rotary-embedding-torch, DeepSeek, GLM. The default here.
- ``"half"``: :math:`(x_i, x_{i+r/2})`. HF transformers (``rotate_half``),
  GPT-NeoX, the YaRN reference code.

The two are the same function up to a permutation of the head dimension
(:func:`to_half_layout`); converting a checkpoint permutes the rows of the query and key
projections once (:func:`permute_qk_weight`).

Tables hold **one value per pair**, the same for both layouts: the layout is a property of the
rotation (:func:`apply_rope`), never of the table, so a table cannot be "built for the other
layout". Partial rotary (GPT-NeoX, Phi, GLM, ...) rotates only the first ``rotary_dim``
coordinates of each head and copies the rest; the frequencies then use ``rotary_dim`` as the
width.

Shapes: ``x`` is ``(..., seq_len, head_dim)``, for example ``(batch, heads, seq_len, head_dim)``;
``positions`` is ``(seq_len,)`` or any shape ``(..., seq_len)`` that broadcasts against
``x.shape[:-1]``; ``cos`` and ``sin`` are ``(..., seq_len, rotary_dim // 2)``.

The module :class:`~posenc_ref.rope.RotaryEmbedding` (in :mod:`posenc_ref.rope`, which
re-exports every function here) caches these tables and rotates queries and keys with them.

Numerical policy: angles ``position * inv_freq`` are formed in float64 and only cos/sin are cast
(to float32 or float64: half-precision tables are refused); bfloat16/float16 inputs are rotated
in float32 and cast back once.
"""

from __future__ import annotations

import math

import torch

from ._checks import (
    broadcast_shape,
    check_int,
    check_layout,
    check_positive_float,
    check_rotary_dim,
)
from ._rotate import rotate
from ._tensor_checks import (
    check_even_last,
    check_float_dtype,
    check_head_dim,
    check_inv_freq,
    check_positions,
    check_table_dtype,
    check_tensor,
    values_visible,
)
from .device import compute_device

__all__ = [
    "rope_cos_sin",
    "apply_rope",
    "apply_rope_loop",
    "to_half_layout",
    "to_interleaved_layout",
    "permute_qk_weight",
]


# --------------------------------------------------------------------------- tables


def rope_cos_sin(
    positions: torch.Tensor,
    inv_freq: torch.Tensor,
    *,
    attention_factor: float = 1.0,
    dtype: torch.dtype = torch.float32,
) -> tuple[torch.Tensor, torch.Tensor]:
    r"""Compute the cos and sin tables of RoPE: one value per position and pair.

    Derived on the site: [frequencies and tables](rope.md#rope-frequencies).

    .. math::

        \cos_{m, i} = a \cos(m\,\omega_i), \qquad \sin_{m, i} = a \sin(m\,\omega_i)

    for pair :math:`i` and attention factor :math:`a`. The tables are the same for both pair
    layouts (:func:`apply_rope` decides which coordinates form pair :math:`i`). Angles are formed
    in float64 (on the CPU where the device has no float64, e.g. ``mps``) and only the result is
    cast to ``dtype``.

    Parameters
    ----------
    positions
        ``(..., seq_len)`` integer (or float32/float64, for fractional positions) tensor, ``>= 0``;
        never bfloat16/float16. The result lives on its device.
    inv_freq
        ``(rotary_dim // 2,)`` frequencies, e.g. :func:`posenc_ref.inv_freq` or the ``inv_freq``
        of a :mod:`posenc_ref.rope_scaling` method; read in float64.
    attention_factor
        :math:`a > 0`, multiplied into both tables (YaRN, LongRoPE); 1 for plain RoPE.
    dtype
        ``torch.float32`` or ``torch.float64``: a half-precision table would round every cos and
        sin to 8 (bfloat16) or 11 (float16) bits, and :func:`apply_rope` refuses one.

    Returns
    -------
    tuple of torch.Tensor
        ``(cos, sin)``, each ``(..., seq_len, rotary_dim // 2)``.

    Examples
    --------
    >>> from posenc_ref import inv_freq
    >>> cos, sin = rope_cos_sin(torch.arange(3), inv_freq(4, 100.0))
    >>> cos.shape  # 3 positions, 2 pairs
    torch.Size([3, 2])
    """
    positions = check_positions("positions", positions)
    inv_freq = check_inv_freq("inv_freq", inv_freq)
    attention_factor = check_positive_float("attention_factor", attention_factor)
    dtype = check_table_dtype("dtype", check_float_dtype("dtype", dtype))
    where = compute_device(positions.device)
    angles = positions.to(where, torch.float64).unsqueeze(-1) * inv_freq.to(where, torch.float64)
    cos, sin = torch.cos(angles), torch.sin(angles)  # (..., seq_len, rotary_dim / 2)
    if attention_factor != 1.0:
        cos, sin = cos * attention_factor, sin * attention_factor
    return cos.to(positions.device, dtype), sin.to(positions.device, dtype)


# --------------------------------------------------------------------------- rotation


def apply_rope(
    x: torch.Tensor,
    cos: torch.Tensor,
    sin: torch.Tensor,
    *,
    layout: str = "interleaved",
    rotary_dim: int | None = None,
    out: torch.Tensor | None = None,
) -> torch.Tensor:
    r"""Rotate the pairs of ``x`` by the angles whose cos and sin are given: the fast path.

    Derived on the site: [the rotation with complex numbers](rope.md#rope-derivation) and
    [loop vs vectorized](rope.md#rope-loop-vs-vectorized).

    For pair :math:`i` with coordinates :math:`(u, v)` (chosen by ``layout``),
    :math:`u' = u\cos_i - v\sin_i` and :math:`v' = v\cos_i + u\sin_i`. Only the first
    :math:`r` = ``rotary_dim`` coordinates are rotated, with the pairs laid out inside them
    (``"interleaved"``: :math:`(2i, 2i+1)`; ``"half"``: :math:`(i, i + r/2)`);
    the remaining coordinates are copied unchanged, bit for bit.

    bfloat16/float16 inputs are rotated in float32 and cast back once; otherwise the rotation
    runs in ``x.dtype``. Differentiable when ``out`` is ``None``. Only shapes, dtypes and devices
    are checked (never values), so a call costs no device synchronisation and compiles.

    Parameters
    ----------
    x
        ``(..., seq_len, head_dim)`` floating tensor.
    cos, sin
        ``(..., seq_len, rotary_dim // 2)``, one value per pair, float32 or float64, on ``x``'s
        device and broadcastable to ``x``'s leading dimensions without enlarging them; from
        :func:`rope_cos_sin`. For ``x`` of shape ``(batch, heads, seq_len, head_dim)`` a table of
        shape ``(seq_len, pairs)`` or ``(batch, 1, seq_len, pairs)`` works;
        ``(batch, seq_len, pairs)`` needs ``.unsqueeze(-3)``.
    layout
        ``"interleaved"`` or ``"half"``.
    rotary_dim
        How many leading coordinates of each head are rotated: ``None`` (all of ``head_dim``) or
        an even integer ``<= head_dim`` (partial rotary). The tables must have exactly
        ``rotary_dim // 2`` entries: a table of another width is an error, never reinterpreted.
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
    layout = check_layout("layout", layout)
    head_dim = check_head_dim("x", x)
    rotary_dim = check_rotary_dim("rotary_dim", rotary_dim, head_dim=head_dim)
    if not x.is_floating_point():
        raise TypeError(f"x must be a floating-point tensor, got dtype {x.dtype}")
    _check_tables(x, cos, sin, rotary_dim)
    if out is not None:
        out = _check_out(x, out)
    return rotate(x, cos, sin, layout, rotary_dim, out)


def _check_tables(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor, rotary_dim: int) -> None:
    """``apply_rope``'s tables: one value per rotated pair, on x's device, broadcastable to x."""
    pairs = rotary_dim // 2
    for name, table in (("cos", cos), ("sin", sin)):
        if not table.is_floating_point():
            raise TypeError(f"{name} must be a floating-point tensor, got dtype {table.dtype}")
        check_table_dtype(f"{name}'s dtype", table.dtype)
        if table.dim() < 2 or table.shape[-1] != pairs:
            raise ValueError(
                f"{name} must have one value per rotated pair: shape (..., seq_len, {pairs}) for "
                f"rotary_dim={rotary_dim}, got {tuple(table.shape)}. Tables that repeat each value "
                f"for both coordinates of a pair (HF's cat([freqs, freqs]) or an interleaved "
                f"repeat) reduce to it with {name}[..., :{pairs}] or {name}[..., ::2]; for partial "
                "rotary pass rotary_dim"
            )
        if table.device != x.device:
            raise ValueError(f"{name} is on {table.device} but x is on {x.device}")
    if cos.shape != sin.shape:
        raise ValueError(
            f"cos and sin must have the same shape, got {tuple(cos.shape)} and {tuple(sin.shape)}"
        )
    pair_shape = (*x.shape[:-1], pairs)
    if broadcast_shape(pair_shape, tuple(cos.shape)) != pair_shape:
        raise ValueError(
            f"cos/sin of shape {tuple(cos.shape)} must broadcast to {pair_shape} (x's leading "
            f"dimensions {tuple(x.shape[:-1])}, {pairs} pairs) without enlarging it; for x "
            "(batch, heads, seq_len, head_dim) and cos (batch, seq_len, pairs), pass "
            "cos.unsqueeze(-3)"
        )


def _check_out(x: torch.Tensor, out: object) -> torch.Tensor:
    """``apply_rope``'s ``out``: like ``x``, sharing no memory with it."""
    out = check_tensor("out", out)
    if out.shape != x.shape or out.dtype != x.dtype or out.device != x.device:
        raise ValueError(
            f"out must match x's shape {tuple(x.shape)}, dtype {x.dtype} and device "
            f"{x.device}, got {tuple(out.shape)}, {out.dtype}, {out.device}"
        )
    # Storage identity (conservative: two slices of one buffer count as shared). Skipped
    # where there is no memory to compare: meta tensors, empty ones, and graphs, where
    # data pointers cannot be traced.
    if (
        values_visible(x)
        and x.numel()
        and out.untyped_storage().data_ptr() == x.untyped_storage().data_ptr()
    ):
        raise ValueError("out must not share memory with x (in-place rotation is not supported)")
    return out


def apply_rope_loop(
    x: torch.Tensor,
    positions: torch.Tensor,
    inv_freq: torch.Tensor,
    *,
    layout: str = "interleaved",
    rotary_dim: int | None = None,
    attention_factor: float = 1.0,
) -> torch.Tensor:
    r"""RoPE written as the explicit 2x2 rotation of each pair, one Python float at a time.

    Shown on the site: [loop vs vectorized](rope.md#rope-loop-vs-vectorized).

    The definition and the oracle: slow on purpose (use small tensors), everything in float64.
    For every vector of ``x`` (all leading indices), every pair :math:`i` at coordinates
    :math:`(c_1, c_2)` (``(2i, 2i+1)`` or ``(i, i + rotary_dim/2)``) and angle
    :math:`m\,\omega_i`, with :math:`a` the attention factor:

    .. math::

        \begin{pmatrix} x'_{c_1} \\ x'_{c_2} \end{pmatrix} = a
        \begin{pmatrix} \cos m\omega_i & -\sin m\omega_i \\ \sin m\omega_i & \cos m\omega_i
        \end{pmatrix}
        \begin{pmatrix} x_{c_1} \\ x_{c_2} \end{pmatrix}

    and every coordinate from ``rotary_dim`` on is copied.

    Parameters
    ----------
    x
        ``(..., seq_len, head_dim)`` floating tensor.
    positions
        ``(seq_len,)`` or ``(..., seq_len)`` broadcastable against ``x.shape[:-1]``; ``>= 0``.
    inv_freq
        ``(rotary_dim // 2,)`` frequencies.
    layout
        ``"interleaved"`` or ``"half"``.
    rotary_dim
        ``None`` (the whole head) or an even integer ``<= head_dim``.
    attention_factor
        :math:`a > 0` (1 for plain RoPE); it scales the rotated coordinates only.

    Returns
    -------
    torch.Tensor
        Same shape, dtype and device as ``x``.
    """
    x = check_tensor("x", x)
    positions = check_positions("positions", positions)
    inv_freq = check_inv_freq("inv_freq", inv_freq)
    layout = check_layout("layout", layout)
    attention_factor = check_positive_float("attention_factor", attention_factor)
    head_dim = check_head_dim("x", x)
    rotary_dim = check_rotary_dim("rotary_dim", rotary_dim, head_dim=head_dim)
    if not x.is_floating_point():
        raise TypeError(f"x must be a floating-point tensor, got dtype {x.dtype}")
    if inv_freq.numel() != rotary_dim // 2:
        raise ValueError(
            f"inv_freq must have rotary_dim // 2 = {rotary_dim // 2} entries for x of shape "
            f"{tuple(x.shape)} and rotary_dim={rotary_dim}, got {inv_freq.numel()}"
        )
    try:
        positions = positions.expand(x.shape[:-1])
    except RuntimeError as err:
        raise ValueError(
            f"positions of shape {tuple(positions.shape)} must broadcast to x.shape[:-1] = "
            f"{tuple(x.shape[:-1])}"
        ) from err
    if x.device.type == "meta":
        return torch.empty_like(x)  # shape inference only: there are no values to rotate

    vectors = x.detach().to("cpu", torch.float64).reshape(-1, head_dim).tolist()
    where = positions.detach().to("cpu", torch.float64).reshape(-1).tolist()
    omegas = inv_freq.detach().to("cpu", torch.float64).tolist()
    rotated = [
        _rotated_vector(vector, m, omegas, layout, attention_factor)
        for vector, m in zip(vectors, where, strict=True)
    ]
    result = torch.tensor(rotated, dtype=torch.float64).reshape(x.shape)
    return result.to(device=x.device, dtype=x.dtype)


def _rotated_vector(
    vector: list[float], m: float, omegas: list[float], layout: str, attention_factor: float
) -> list[float]:
    # One vector at position m, pair by pair, in Python floats: the definition itself.
    new = list(vector)
    half = len(omegas)
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
    return new


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
    check_even_last("x", x)
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
    check_even_last("x", x)
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
    to_layout = check_layout("to_layout", to_layout)
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
