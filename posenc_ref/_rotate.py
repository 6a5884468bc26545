r"""The rotation kernels behind :func:`posenc_ref.rope.apply_rope` (arguments already validated).

``rotate(x, cos, sin, layout, rotary_dim, out)`` rotates the first ``rotary_dim`` coordinates of
``x`` pair by pair and copies the rest: for pair :math:`(u, v)` and angle :math:`t`,
:math:`u' = u\cos t - v\sin t`, :math:`v' = v\cos t + u\sin t`. Pairs are
``(2i, 2i+1)`` (interleaved) or ``(i, i + rotary_dim/2)`` (half) inside the rotary part.
``cos`` and ``sin`` hold one value per pair, ``(..., seq_len, rotary_dim // 2)``, float32 or
float64, broadcastable against ``x``'s leading dimensions. Half-precision ``x`` is rotated in
float32 and rounded once.

Two implementations of the same formula:

- :func:`rotate_formula`: out-of-place tensor arithmetic. Autograd differentiates it, and
  ``torch.compile`` / ``torch.export`` trace it (the compiler fuses it into one kernel).
- The eager kernels (:func:`_rotate_interleaved`, :func:`_rotate_half`): they write into the
  result with as few passes over memory as PyTorch's stock operators allow and, on the CPU, a
  block of positions at a time, so that the passes after the first find the block in the cache.

Both are tested against :func:`posenc_ref.rope.apply_rope_loop`, the definition.
"""

from __future__ import annotations

import torch

from ._checks import HALF_DTYPES, tracing

# Elements of x per block on the CPU (2 MiB of float32). Each operator call costs a few
# microseconds of dispatch whatever its size, and each pass over a block costs less the more of
# it is still in the cache: this size balanced the two on the benchmark machine (1 MiB L2 per
# core), measured from 2**15 to 2**20 elements.
BLOCK_ELEMENTS = 1 << 19

# Devices that run the eager kernels; elsewhere (meta, mps, ...) the formula is used.
KERNEL_DEVICES = ("cpu", "cuda")


def rotate(
    x: torch.Tensor,
    cos: torch.Tensor,
    sin: torch.Tensor,
    layout: str,
    rotary_dim: int,
    out: torch.Tensor | None,
) -> torch.Tensor:
    """Rotate ``x`` (see the module docstring); ``out`` is the result buffer or ``None``."""
    # Half precision is rotated in float32 and rounded once, as Meta's and torchtune's code do
    # (HF rotates in the activation dtype, with tables rounded to it).
    work = torch.float32 if x.dtype in HALF_DTYPES else x.dtype
    cos, sin = cos.to(work), sin.to(work)
    needs_grad = torch.is_grad_enabled() and any(t.requires_grad for t in (x, cos, sin))
    # Inside torch.compile / torch.export graphs: trace the formula, which the compiler fuses.
    if needs_grad or tracing() or x.device.type not in KERNEL_DEVICES:
        result = rotate_formula(x, cos, sin, layout, rotary_dim)
        return result if out is None else out.copy_(result)
    result = out if out is not None else torch.empty_like(x)
    if x.numel() == 0:
        return result
    if rotary_dim < x.shape[-1]:
        result[..., rotary_dim:].copy_(x[..., rotary_dim:])  # pass-through, bit for bit
    rows = x.shape[-2]  # one block on a GPU: a small cache, and every operator is a launch
    if x.device.type == "cpu":
        rows = max(1, BLOCK_ELEMENTS // max(1, x[..., :1, :].numel()))
    kernel = _rotate_interleaved if layout == "interleaved" else _rotate_half
    kernel(x[..., :rotary_dim], cos, sin, result[..., :rotary_dim], rows)
    return result


def rotate_formula(
    x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor, layout: str, rotary_dim: int
) -> torch.Tensor:
    """Out-of-place rotation: differentiable, and fused into one kernel by ``torch.compile``.

    ``cos`` and ``sin`` are already in the working dtype (float32 for half-precision ``x``).
    """
    h = rotary_dim // 2
    if layout == "interleaved":
        u, v = x[..., 0:rotary_dim:2], x[..., 1:rotary_dim:2]  # (..., seq_len, h) each
    else:
        u, v = x[..., :h], x[..., h:rotary_dim]
    u, v = u.to(cos.dtype), v.to(cos.dtype)
    # Each half is rounded to x's dtype as soon as it is computed: still one rounding, and the
    # compiler then writes the result directly instead of a float32 copy of it first.
    parts = [(u * cos - v * sin).to(x.dtype), (v * cos + u * sin).to(x.dtype)]
    if layout == "interleaved":
        rotated = torch.stack(parts, dim=-1).flatten(-2)  # (..., seq_len, rotary_dim)
    else:
        rotated = torch.cat(parts, dim=-1)
    if rotary_dim == x.shape[-1]:
        return rotated
    return torch.cat([rotated, x[..., rotary_dim:]], dim=-1)


def _split(t: torch.Tensor, rows: int, blocks: int) -> list[torch.Tensor]:
    # `blocks` views of `rows` positions (dimension -2); a table with one row serves them all.
    return [t] * blocks if t.shape[-2] == 1 else list(t.split(rows, dim=-2))


def _as_complex(t: torch.Tensor) -> torch.Tensor | None:
    # (..., d) real -> (..., d/2) complex view, pair (t[2i], t[2i+1]) as t[2i] + i t[2i+1];
    # None for half precision (PyTorch has no complex bfloat16) and for strides or an offset that
    # are not a whole number of pairs.
    if t.dtype in HALF_DTYPES or t.stride(-1) != 1:
        return None
    try:
        return torch.view_as_complex(t.unflatten(-1, (-1, 2)))
    except RuntimeError:
        return None


def _rotate_interleaved(
    x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor, out: torch.Tensor, rows: int
) -> None:
    # Rotating pair (u, v) by angle t is multiplying u + iv by cos t + i sin t (Meta's Llama code
    # does the same). One complex multiplication reads x once and writes out once: the cost of a
    # copy, where real arithmetic on the strided even and odd columns takes several passes.
    source, target = _as_complex(x), _as_complex(out)
    staged = source is None or target is None
    if not staged:
        rows = x.shape[-2]  # a single pass already: blocks would only add operator calls
    blocks = -(-x.shape[-2] // rows)
    if staged:
        # bfloat16/float16 (no complex dtype) or awkward strides: each block is copied into a
        # complex work space (widening exactly), multiplied there, and copied (rounded) out.
        work = torch.empty(
            (*x.shape[:-2], min(rows, x.shape[-2]), x.shape[-1] // 2),
            dtype=torch.complex64 if cos.dtype == torch.float32 else torch.complex128,
            device=x.device,
        )
        source, target = x, out
    tables = zip(_split(cos, rows, blocks), _split(sin, rows, blocks), strict=True)
    for x_block, out_block, (c, s) in zip(
        _split(source, rows, blocks), _split(target, rows, blocks), tables, strict=True
    ):
        rotation = torch.complex(c, s)  # (..., rows, d/2): built per block, so it stays cached
        if not staged:
            torch.mul(x_block, rotation, out=out_block)
            continue
        w = work[..., : x_block.shape[-2], :]  # the last block may be shorter
        w_real = torch.view_as_real(w).flatten(-2)  # the same memory as (..., rows, d) reals
        w_real.copy_(x_block)
        w.mul_(rotation)
        out_block.copy_(w_real)


def _rotate_half(
    x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor, out: torch.Tensor, rows: int
) -> None:
    # HF's x * cos + rotate_half(x) * sin in three operators, without building rotate_half(x):
    # a full-width product (the only pass that reads x from memory), then a fused multiply-add
    # into each half, which finds the block in the cache. There is no complex-number shortcut:
    # the coordinates of a pair are half a head apart.
    blocks = -(-x.shape[-2] // rows)
    h = x.shape[-1] // 2
    staged = x.dtype in HALF_DTYPES
    if staged:  # float32 copies of a block of x and of its result, rounded into out once
        shape = (*x.shape[:-2], min(rows, x.shape[-2]), x.shape[-1])
        widened = torch.empty(shape, dtype=cos.dtype, device=x.device)
        rotated = torch.empty_like(widened)
    tables = zip(_split(cos, rows, blocks), _split(sin, rows, blocks), strict=True)
    for x_block, out_block, (c, s) in zip(
        _split(x, rows, blocks), _split(out, rows, blocks), tables, strict=True
    ):
        source, target = x_block, out_block
        if staged:
            source = widened[..., : x_block.shape[-2], :].copy_(x_block)  # exact widening
            target = rotated[..., : x_block.shape[-2], :]
        torch.mul(source, torch.cat([c, c], dim=-1), out=target)  # (u cos, v cos)
        target[..., :h].addcmul_(source[..., h:], s, value=-1.0)  # u cos - v sin
        target[..., h:].addcmul_(source[..., :h], s)  # v cos + u sin
        if staged:
            out_block.copy_(target)  # the one rounding
