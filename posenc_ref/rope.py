r"""Rotary position embeddings (RoPE): tables, the rotation, both pair layouts, the module.

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

Numerical policy: angles ``position * inv_freq`` are formed in float64 and only cos/sin are cast
(to float32 or float64: half-precision tables are refused); bfloat16/float16 inputs are rotated
in float32 and cast back once.
"""

from __future__ import annotations

import inspect
import math
from collections.abc import Mapping, Sequence

import torch
from torch import nn

from ._checks import (
    check_base,
    check_bool,
    check_dim,
    check_float_dtype,
    check_int,
    check_inv_freq,
    check_layout,
    check_positions,
    check_positive_float,
    check_table_dtype,
    check_tensor,
    tracing,
    values_visible,
)
from ._rotate import rotate
from .absolute import inv_freq as _inv_freq
from .device import check_device, compute_device
from .models import QueryScale, RopeSpec, rope_spec
from .mrope import MROPE_ASSIGNMENTS, _assignment, mrope_cos_sin, mrope_pair_rows
from .rope_scaling import SCALING_METHODS, ScaledFrequencies

__all__ = [
    "rope_cos_sin",
    "apply_rope",
    "apply_rope_loop",
    "to_half_layout",
    "to_interleaved_layout",
    "permute_qk_weight",
    "RotaryEmbedding",
]


# --------------------------------------------------------------------------- validation


def _check_even_last(x: torch.Tensor, name: str, what: str = "last dimension") -> int:
    if x.dim() == 0 or x.shape[-1] % 2 or x.shape[-1] == 0:
        raise ValueError(f"{name}'s {what} must be positive and even, got {tuple(x.shape)}")
    return x.shape[-1]


def _check_head_dim(x: torch.Tensor, name: str = "x") -> int:
    if x.dim() < 2:
        raise ValueError(f"{name} must have shape (..., seq_len, head_dim), got {tuple(x.shape)}")
    return _check_even_last(x, name, "last dimension (head_dim)")


def _check_rotary_dim(rotary_dim: object, head_dim: int) -> int:
    """Return the rotary width: ``head_dim`` for ``None``, else an even ``2 <= r <= head_dim``."""
    if rotary_dim is None:
        return head_dim
    rotary_dim = check_dim(rotary_dim, "rotary_dim")
    if rotary_dim > head_dim:
        raise ValueError(
            f"rotary_dim must be an even integer <= head_dim={head_dim} (the coordinates past it "
            f"are passed through), got {rotary_dim}"
        )
    return rotary_dim


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
    positions = check_positions(positions)
    inv_freq = check_inv_freq(inv_freq)
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
    layout = check_layout(layout)
    head_dim = _check_head_dim(x)
    rotary_dim = _check_rotary_dim(rotary_dim, head_dim)
    if not x.is_floating_point():
        raise TypeError(f"x must be a floating-point tensor, got dtype {x.dtype}")
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
    try:
        broadcast = torch.broadcast_shapes(pair_shape, cos.shape)
    except RuntimeError:
        broadcast = None
    if broadcast != pair_shape:
        raise ValueError(
            f"cos/sin of shape {tuple(cos.shape)} must broadcast to {pair_shape} (x's leading "
            f"dimensions {tuple(x.shape[:-1])}, {pairs} pairs) without enlarging it; for x "
            "(batch, heads, seq_len, head_dim) and cos (batch, seq_len, pairs), pass "
            "cos.unsqueeze(-3)"
        )
    if out is not None:
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
            raise ValueError(
                "out must not share memory with x (in-place rotation is not supported)"
            )
    return rotate(x, cos, sin, layout, rotary_dim, out)


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
    positions = check_positions(positions)
    inv_freq = check_inv_freq(inv_freq)
    layout = check_layout(layout)
    attention_factor = check_positive_float("attention_factor", attention_factor)
    head_dim = _check_head_dim(x)
    rotary_dim = _check_rotary_dim(rotary_dim, head_dim)
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
    half = rotary_dim // 2
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
    scaling: object, rotary_dim: int, base: float
) -> tuple[str | None, dict, ScaledFrequencies, int | None]:
    """Return ``(method, params, frequencies inside the original context, per_call_after)``.

    ``method`` is None (plain RoPE), ``"static"`` (a ScaledFrequencies) or a method name;
    ``per_call_after`` is the length past which a length-dependent method's frequencies change
    (its ``original_max_len``), else None.
    """
    if scaling is None:
        return None, {}, ScaledFrequencies(_inv_freq(rotary_dim, base), 1.0), None
    if isinstance(scaling, ScaledFrequencies):
        freqs = check_inv_freq(scaling.inv_freq)
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
        freqs = ScaledFrequencies(freqs.detach().to("cpu", torch.float64), factor)
        return "static", {}, freqs, None
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
    signature = inspect.signature(function).parameters
    accepted = [n for n, p in signature.items() if p.kind is p.KEYWORD_ONLY and n != "seq_len"]
    unknown = sorted(set(params) - set(accepted))
    if unknown:
        raise ValueError(
            f"scaling keys {unknown} are not accepted by method {method!r}; accepted: "
            f"{accepted} (base and dim come from RotaryEmbedding itself)"
        )
    if "seq_len" in signature:  # length-dependent (dynamic NTK): the original context's values
        if "original_max_len" not in params:
            raise ValueError(f"scaling for {method!r} needs 'original_max_len'")
        freqs = function(rotary_dim, base, seq_len=0, **params)  # validates params now
        return method, params, freqs, params["original_max_len"]
    return method, params, function(rotary_dim, base, **params), None


# Rows a RotaryEmbedding builds up front (2**20 rows of 64 pairs: 512 MiB in float32).
_MAX_EAGER_ROWS = 1 << 20


class RotaryEmbedding(nn.Module):
    r"""Rotate queries and keys with RoPE, from a cached cos/sin table.

    Explained on the site: [the module](rope.md#rope-module).

    ``forward(q, k, positions)`` equals
    ``apply_rope(q, *rope_cos_sin(positions, inv_freq, ...), layout=..., rotary_dim=...)`` (and
    the same for ``k``), with ``inv_freq`` and ``attention_factor`` from ``scaling``: the table
    is only an optimisation, and tests prove the two equal.

    The table holds cos and sin for positions ``0 .. max_len - 1`` (one value per pair) in
    float32, or float64 for float64 inputs, in *non-persistent* buffers: they follow
    ``.to(device)`` but are not saved in ``state_dict()``, being a function of the constructor
    arguments. A position past the table rebuilds it at least twice as long, or is computed
    directly when it lies far past (never an error, never a table sized by a far position). A
    ``.to(dtype)`` cast of the buffers is undone at the next call, from float64 angles, and the
    frequencies are a float64 CPU tensor (not a buffer), so a bfloat16 model never uses bfloat16
    angles. Inside ``torch.compile`` and ``torch.export`` graphs the rows are computed from the
    positions instead (no cache, no value read).

    ``scaling`` is ``None`` (plain RoPE), a :class:`~posenc_ref.rope_scaling.ScaledFrequencies`
    (``base`` is then unused), or a dict naming a :mod:`~posenc_ref.rope_scaling` method and its
    keyword arguments, e.g. ``{"method": "yarn", "factor": 4.0, "original_max_len": 4096}`` (the
    width and base come from the module). Methods whose frequencies depend on the current length
    (``"dynamic_ntk"``) use the cached table while the call's largest position is below
    ``original_max_len`` and compute each longer call's rows directly: stateless, unlike HF's
    module. Keys already in a KV cache keep the rotation they were written with; the
    [context-extension page](rope_scaling.md#scaling-dynamic-ntk) explains what that does to
    their scores.

    A released model's RoPE is built from its config by :meth:`from_hf_config`.

    Parameters
    ----------
    head_dim
        Width of each query/key head (positive, even).
    base
        The constant :math:`n`; finite and > 1.
    layout
        ``"interleaved"`` (default) or ``"half"``.
    rotary_dim
        Coordinates rotated per head (partial rotary): ``None`` for all of ``head_dim``, else an
        even integer ``<= head_dim``; the frequencies use it as their width.
    scaling
        See above.
    max_len
        Initial table length (``>= 1``; at most ``2**20`` rows are built up front); grows on
        demand, by at most doubling or twice the call's number of positions. Positions past
        that are computed directly, with the same values: a call costs what its number of
        positions costs, whatever their values (one position ``2**40`` is one row).
    device
        Where to build the table.
    mrope_section
        Multimodal RoPE (Qwen2-VL and later): pairs per position row (time, height, width;
        height, width for ``"alternating_2d"``), summing to ``rotary_dim // 2``; ``None`` for
        one position row. An M-RoPE module takes positions of shape ``(rows, ..., seq_len)``
        (see :func:`posenc_ref.mrope.mrope_positions`); 1-D positions, or none, mean text (the
        same value in every row, which is plain RoPE). Explained on the site:
        [M-RoPE](rope.md#rope-mrope).
    mrope_interleaved
        Shorthand for ``mrope_assignment="interleaved"`` (Qwen3-VL).
    mrope_assignment
        Which pairs each row gets: a key of :data:`posenc_ref.mrope.MROPE_ASSIGNMENTS`
        (``"consecutive"``, the default; ``"interleaved"``; ``"alternating"``, ERNIE 4.5 VL;
        ``"alternating_2d"``, NeoMME's two rows); see
        :func:`posenc_ref.mrope.mrope_pair_rows`.
    output_layout
        The order in which the rotated pairs are written back, when it differs from the order in
        which they are read: DeepSeek-V3 reads interleaved pairs and writes all first
        coordinates, then all second ones (``layout="interleaved", output_layout="half"``). The
        output is then a fixed permutation of the rotary part (the same for queries and keys),
        so attention scores do not change. ``None``: the same as ``layout``.
    query_scale
        A :class:`~posenc_ref.models.QueryScale` :math:`\sigma`: the rotated queries are
        multiplied by :math:`\sigma(t)` at their positions :math:`t` (Ministral 3's and Mistral
        4's ``llama_4_scaling_beta``); keys are not. ``None``: no scaling. Explained on the site:
        [position-dependent query scaling](models.md#models-query-scale).
    clockwise
        Rotate by :math:`-t\,\omega_i` instead of :math:`t\,\omega_i` (NanoChat's code): the
        transpose of each rotation, so scores depend on :math:`m - p` instead of :math:`p - m`.

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
        rotary_dim: int | None = None,
        scaling: ScaledFrequencies | Mapping | None = None,
        max_len: int = 4096,
        device: torch.device | str | None = None,
        mrope_section: Sequence[int] | None = None,
        mrope_interleaved: bool = False,
        mrope_assignment: str | None = None,
        output_layout: str | None = None,
        query_scale: QueryScale | None = None,
        clockwise: bool = False,
    ) -> None:
        super().__init__()
        self.head_dim = check_dim(head_dim, "head_dim")
        self.rotary_dim = _check_rotary_dim(rotary_dim, self.head_dim)
        self.base = check_base(base)
        self.layout = check_layout(layout)
        self.output_layout = self.layout if output_layout is None else check_layout(output_layout)
        self.mrope_section = None
        self.mrope_interleaved = False
        self.mrope_assignment = None
        self._mrope_rows = None
        if mrope_section is not None:
            assignment = _assignment(mrope_interleaved, mrope_assignment)
            rows = mrope_pair_rows(mrope_section, assignment=assignment)
            if rows.numel() != self.rotary_dim // 2:
                raise ValueError(
                    f"mrope_section={list(mrope_section)} gives {rows.numel()} pairs but the "
                    f"rotary part has rotary_dim // 2 = {self.rotary_dim // 2}"
                )
            self.mrope_section = tuple(int(n) for n in mrope_section)
            self.mrope_assignment = assignment
            self.mrope_interleaved = assignment == "interleaved"
            self._mrope_rows = rows  # (pairs,) position row of each pair
        elif mrope_interleaved or mrope_assignment is not None:
            raise ValueError("mrope_interleaved / mrope_assignment need mrope_section")
        if query_scale is not None and not isinstance(query_scale, QueryScale):
            raise TypeError(
                "query_scale must be a posenc_ref.models.QueryScale or None, got "
                f"{type(query_scale).__name__}"
            )
        if query_scale is not None and self.mrope_section is not None:
            raise ValueError("query_scale with M-RoPE is not supported (no model uses both)")
        self.query_scale = query_scale
        self.clockwise = check_bool("clockwise", clockwise)
        # The model config this module was built from (from_hf_config), else None.
        self.spec: RopeSpec | None = None
        self.method, self.scaling_params, freqs, self._per_call_after = _resolve_scaling(
            scaling, self.rotary_dim, self.base
        )
        # float64 on the CPU, a plain attribute rather than a buffer so .to(dtype) can't round it
        self.inv_freq, self.attention_factor = freqs
        # A requested length past _MAX_EAGER_ROWS is built lazily, as calls reach it: 2**40 rows
        # up front would ask for terabytes, and the table is only a cache.
        max_len = min(check_int("max_len", max_len, minimum=1), _MAX_EAGER_ROWS)
        self.register_buffer("cos_cached", torch.empty(0), persistent=False)
        self.register_buffer("sin_cached", torch.empty(0), persistent=False)
        self._build(max_len, check_device(device), torch.float32)

    @property
    def max_len(self) -> int:
        """Current table length (positions ``0 .. max_len - 1`` are cached)."""
        return self.cos_cached.shape[0]

    def reset_parameters(self) -> None:
        """Rebuild the cached table where it lives (float32, current length).

        The table is a cache, not a parameter, but deferred initialisation treats it like one:
        after ``to_empty(device=...)`` (a module built on ``meta`` and then given real memory)
        the buffers hold uninitialised memory until this is called, as for any module.
        """
        self._build(self.max_len, self.cos_cached.device, torch.float32)

    def frequencies(self, seq_len: int = 0) -> ScaledFrequencies:
        """Frequencies and attention factor for a call whose largest position is ``seq_len - 1``.

        The same for every length, except under length-dependent scaling (``"dynamic_ntk"``)
        past ``original_max_len``.

        Returns
        -------
        ScaledFrequencies
            ``inv_freq`` ``(rotary_dim // 2,)`` float64, and the attention factor.
        """
        seq_len = check_int("seq_len", seq_len)
        if self._per_call(seq_len):
            function = SCALING_METHODS[self.method]
            return function(self.rotary_dim, self.base, seq_len=seq_len, **self.scaling_params)
        return ScaledFrequencies(self.inv_freq, self.attention_factor)

    def _may_grow_to(self, needed: int, count: int) -> bool:
        # Growing is worth it when the call could have walked there: at most doubling the table
        # (a KV cache that advances step by step pays O(1) per position, amortised) or at most
        # twice the call's own number of positions (a prefill from near 0). A far position
        # (2**40, say) is computed directly: a table that long would need terabytes.
        return needed <= 2 * max(self.max_len, count)

    def _per_call(self, seq_len: int) -> bool:
        # Length-dependent scaling past the original context: frequencies of this call only.
        return self._per_call_after is not None and seq_len > self._per_call_after

    def _build(self, length: int, device: torch.device, dtype: torch.dtype) -> None:
        positions = torch.arange(length, device=device)
        cos, sin = rope_cos_sin(
            positions, self.inv_freq, attention_factor=self.attention_factor, dtype=dtype
        )
        self.cos_cached, self.sin_cached = cos, sin  # (length, rotary_dim / 2) each

    def cos_sin(
        self, positions: torch.Tensor, *, dtype: torch.dtype = torch.float32
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Return cos and sin for ``positions``, from the table (grown if needed).

        Parameters
        ----------
        positions
            ``(..., seq_len)`` integer tensor, ``>= 0``.
        dtype
            ``torch.float32`` or ``torch.float64``.

        Returns
        -------
        tuple of torch.Tensor
            ``(cos, sin)``, each ``(..., seq_len, rotary_dim // 2)``, on the table's device.
        """
        positions = check_positions(positions, integer_only=True)
        dtype = check_table_dtype("dtype", check_float_dtype("dtype", dtype))
        return self._rows(positions, None, dtype)

    def _rows(
        self, positions: torch.Tensor | None, span: tuple[int, int] | None, dtype: torch.dtype
    ) -> tuple[torch.Tensor, torch.Tensor]:
        # positions: None for the span (start, stop), served by slicing the table (a view, no
        # gather: the common case); (..., seq_len); or, for M-RoPE, (3, ..., seq_len).
        device = self.cos_cached.device
        several_rows = self.mrope_section is not None and positions is not None
        several_rows = several_rows and positions.dim() > 1
        if positions is not None:
            positions = positions.to(device)
        readable = device.type != "meta" and not tracing()
        if positions is None:
            needed = span[1]
        elif readable:
            needed = int(positions.max().item()) + 1 if positions.numel() else 0
        elif self._per_call_after is not None and device.type != "meta":
            raise RuntimeError(
                f"scaling method {self.method!r} depends on the largest position's value, which "
                "a compiled graph cannot read: pass offset= instead of positions, or run this "
                "module eagerly"
            )
        else:
            needed = 0  # on meta only the shape matters
        count = span[1] - span[0] if positions is None else positions.numel()
        if not readable or self._per_call(needed) or not self._may_grow_to(needed, count):
            # From the pure functions: inside graphs (no cache growth, no value read), for
            # length-dependent scaling past the original context (not cacheable), and for
            # positions far past the table (a cost that follows their number, not their value).
            if positions is None:
                positions = torch.arange(*span, device=device)
            freqs = self.frequencies(needed)
            if several_rows:
                return mrope_cos_sin(
                    positions, freqs.inv_freq, self.mrope_section,
                    assignment=self.mrope_assignment,
                    attention_factor=freqs.attention_factor, dtype=dtype,
                )  # fmt: skip
            return rope_cos_sin(
                positions, freqs.inv_freq, attention_factor=freqs.attention_factor, dtype=dtype
            )
        if needed > self.max_len:
            self._build(max(needed, 2 * self.max_len), device, dtype)  # doubling: amortised growth
        elif self.cos_cached.dtype != dtype:
            self._build(self.max_len, device, dtype)  # e.g. after .to(torch.bfloat16)
        if positions is None:
            return self.cos_cached[span[0] : span[1]], self.sin_cached[span[0] : span[1]]
        if not several_rows:
            return self.cos_cached[positions], self.sin_cached[positions]
        # M-RoPE: pair i reads the table at its own row's position (one gather per table).
        index = positions.movedim(0, -1)[..., self._mrope_rows.to(device)]  # (..., seq, pairs)
        flat = index.reshape(-1, index.shape[-1])
        cos = self.cos_cached.gather(0, flat).reshape(index.shape)
        return cos, self.sin_cached.gather(0, flat).reshape(index.shape)

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
            ``(batch, heads, seq_len, head_dim)`` inputs). For an M-RoPE module (``mrope_section``
            given): ``(seq_len,)`` for text, or ``(rows, ..., seq_len)`` with one row per
            position row of its assignment (three: time, height, width; ``"alternating_2d"``:
            height, width), the ``...`` broadcastable as above (e.g. ``(3, batch, 1, seq_len)``).
        offset
            First position when ``positions`` is ``None`` (the length of a KV cache), ``>= 0``.

        Returns
        -------
        tuple of torch.Tensor
            ``(q_rot, k_rot)``, shapes and dtypes of ``q`` and ``k``.
        """
        seq_len = _check_qk(q, k, self.head_dim)
        offset = check_int("offset", offset)
        span = None
        if positions is None:
            span = (offset, offset + seq_len)
        elif offset:
            raise ValueError("give either positions or offset, not both (add the offset yourself)")
        else:
            positions = check_positions(positions, integer_only=True)
            if positions.shape[-1] != seq_len:
                raise ValueError(
                    f"positions' last dimension must be seq_len={seq_len}, "
                    f"got {tuple(positions.shape)}"
                )
        dtype = torch.float64 if torch.float64 in (q.dtype, k.dtype) else torch.float32
        if self.mrope_section is not None and positions is not None and positions.dim() > 1:
            rows = MROPE_ASSIGNMENTS[self.mrope_assignment].rows
            if positions.shape[0] != len(rows):
                n = len(rows)
                raise ValueError(
                    f"an M-RoPE module takes positions ({n}, ..., seq_len) (rows "
                    f"{', '.join(rows)}) or (seq_len,) for text, got {tuple(positions.shape)}; "
                    f"for batched text positions p of shape (batch, seq_len) pass "
                    f"p.expand({n}, -1, -1)"
                )
        cos, sin = self._rows(positions, span, dtype)
        rotated = []
        for x in (q, k):
            y = apply_rope(
                x,
                cos.to(x.device),
                -sin.to(x.device) if self.clockwise else sin.to(x.device),
                layout=self.layout,
                rotary_dim=self.rotary_dim,
            )
            if self.output_layout != self.layout:
                # Written back in the other order (DeepSeek-V3): a fixed permutation of the
                # rotary part, the same for q and k.
                r = self.rotary_dim
                reorder = to_half_layout if self.output_layout == "half" else to_interleaved_layout
                y = torch.cat([reorder(y[..., :r]), y[..., r:]], dim=-1)
            rotated.append(y)
        if self.query_scale is not None:
            # sigma(t) on the queries only, at the positions of this call: (..., seq_len, 1)
            where = torch.arange(*span) if positions is None else positions
            sigma = self.query_scale(where.to("cpu"))[..., None]
            q_rot = rotated[0]
            rotated[0] = (q_rot.to(torch.float64) * sigma.to(q_rot.device)).to(q_rot.dtype)
        return rotated[0], rotated[1]

    @classmethod
    def from_hf_config(
        cls,
        config: Mapping | object,
        *,
        layer_type: str | None = None,
        layout: str | None = None,
        max_len: int = 4096,
        device: torch.device | str | None = None,
    ) -> RotaryEmbedding:
        r"""Build the RoPE of a released model from its config.

        Explained on the site: [Model zoo](models.md).

        ``config`` is the contents of the model's ``config.json`` (a dict), or a transformers
        config object; it is read by :func:`posenc_ref.models.rope_spec`, whose rules (both config
        forms, the family's pair layout and defaults, errors for unknown or inconsistent keys)
        apply. ``forward(q, k, positions)`` then rotates the model's queries and keys as its code
        does, with ``q`` and ``k`` of width ``head_dim`` (for DeepSeek-V3, the
        ``qk_rope_head_dim`` part of each head). The spec is kept as ``self.spec``.

        Parameters
        ----------
        config
            The model's configuration.
        layer_type
            For configs with one RoPE per layer type (Gemma 3): which one.
        layout
            Pair layout, only for a family posenc_ref does not know.
        max_len
            Initial table length (``>= 1``); grows on demand.
        device
            Where to build the table.

        Returns
        -------
        RotaryEmbedding

        Examples
        --------
        >>> rope = RotaryEmbedding.from_hf_config({
        ...     "model_type": "glm4", "head_dim": 128, "partial_rotary_factor": 0.5,
        ...     "rope_theta": 10000.0, "max_position_embeddings": 32768})
        >>> rope.rotary_dim, rope.layout
        (64, 'interleaved')
        """
        spec = rope_spec(config, layer_type=layer_type, layout=layout)
        if spec.scaling is not None:  # the method by name: the module recomputes what it needs
            scaling = dict(spec.scaling)
        else:
            scaling = ScaledFrequencies(spec.inv_freq, spec.attention_factor)
        module = cls(
            spec.head_dim,
            base=spec.base,
            layout=spec.layout,
            rotary_dim=spec.rotary_dim,
            scaling=scaling,
            max_len=max_len,
            device=device,
            mrope_section=spec.mrope_section,
            mrope_assignment=spec.mrope_assignment,
            output_layout=spec.output_layout,
            query_scale=spec.query_scale,
            clockwise=spec.clockwise,
        )
        module.spec = spec
        return module

    def extra_repr(self) -> str:  # noqa: D102 (nn.Module's hook for repr)
        partial = "" if self.rotary_dim == self.head_dim else f", rotary_dim={self.rotary_dim}"
        extra = ""
        if self.output_layout != self.layout:
            extra += f", output_layout={self.output_layout!r}"
        if self.mrope_section is not None:
            extra += f", mrope_section={self.mrope_section} ({self.mrope_assignment})"
        if self.query_scale is not None:
            extra += f", query_scale={self.query_scale.describe()!r}"
        return (
            f"head_dim={self.head_dim}{partial}, base={self.base}, layout={self.layout!r}, "
            f"scaling={self.method}, max_len={self.max_len}{extra}"
        )


def _check_qk(q: object, k: object, head_dim: int) -> int:
    """Validate ``RotaryEmbedding.forward``'s q and k; return their ``seq_len``."""
    q, k = check_tensor("q", q), check_tensor("k", k)
    for name, t in (("q", q), ("k", k)):
        if _check_head_dim(t, name) != head_dim:
            raise ValueError(
                f"{name}'s last dimension must be head_dim={head_dim}, got {tuple(t.shape)}"
            )
    if q.shape[-2] != k.shape[-2]:
        raise ValueError(
            f"q and k must have the same seq_len (dimension -2), got {tuple(q.shape)} and "
            f"{tuple(k.shape)}; rotate them in separate calls with explicit positions"
        )
    return q.shape[-2]
