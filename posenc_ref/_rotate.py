r"""The rotation kernels behind :func:`posenc_ref.rope.apply_rope` (arguments already validated).

``rotate(x, cos, sin, layout, rotary_dim, out)`` rotates the first ``rotary_dim`` coordinates of
``x`` pair by pair and copies the rest: for pair :math:`(u, v)` and angle :math:`t`,
:math:`u' = u\cos t - v\sin t`, :math:`v' = v\cos t + u\sin t`. Pairs are
``(2i, 2i+1)`` (interleaved) or ``(i, i + rotary_dim/2)`` (half) inside the rotary part.
``cos`` and ``sin`` hold one value per pair, ``(..., seq_len, rotary_dim // 2)``, float32 or
float64, broadcastable against ``x``'s leading dimensions. Half-precision ``x`` is rotated in
float32 and rounded once.

This module is the fast path; :func:`posenc_ref.rope.apply_rope_loop` is the definition it is
tested against.
"""

from __future__ import annotations

import torch

HALF_DTYPES = (torch.float16, torch.bfloat16)

# Elements per block of the CPU blocked path (256 KiB of float32): small enough that a block of
# x, its result and the float32 work stay in the core's cache between the passes.
BLOCK_ELEMENTS = 1 << 16


def rotate(
    x: torch.Tensor,
    cos: torch.Tensor,
    sin: torch.Tensor,
    layout: str,
    rotary_dim: int,
    out: torch.Tensor | None,
) -> torch.Tensor:
    """Rotate ``x`` (see the module docstring); ``out`` is the result buffer or ``None``."""
    half_precision = x.dtype in HALF_DTYPES
    # Half precision is rotated in float32 and rounded once, as Meta's and torchtune's code do
    # (HF rotates in the activation dtype, with tables rounded to it).
    work = torch.float32 if half_precision else x.dtype
    cos, sin = cos.to(work), sin.to(work)
    needs_grad = torch.is_grad_enabled() and any(t.requires_grad for t in (x, cos, sin))
    if needs_grad or x.device.type != "cpu" or torch.compiler.is_compiling():
        # Out-of-place arithmetic: autograd and compilers follow it, and on GPUs the blocks of
        # the CPU path below would only add kernel launches.
        result = _rotate_whole(x.to(work), cos, sin, layout, rotary_dim)
        result = result.to(x.dtype)
        return result if out is None else out.copy_(result)
    result = out if out is not None else torch.empty_like(x)
    if rotary_dim < x.shape[-1]:
        result[..., rotary_dim:].copy_(x[..., rotary_dim:])  # pass-through, bit for bit
    if layout == "interleaved" and not half_precision:
        _rotate_interleaved(x[..., :rotary_dim], cos, sin, result[..., :rotary_dim])
        return result
    _rotate_blocks(x[..., :rotary_dim], cos, sin, layout, result[..., :rotary_dim])
    return result


def _rotate_whole(
    x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor, layout: str, rotary_dim: int
) -> torch.Tensor:
    # The textbook vectorized form, in x's dtype: every pair's two coordinates at once.
    h = rotary_dim // 2
    if layout == "interleaved":
        u, v = x[..., 0:rotary_dim:2], x[..., 1:rotary_dim:2]  # (..., seq_len, h) each
        rotated = torch.stack([u * cos - v * sin, v * cos + u * sin], dim=-1).flatten(-2)
    else:
        u, v = x[..., :h], x[..., h:rotary_dim]
        rotated = torch.cat([u * cos - v * sin, v * cos + u * sin], dim=-1)
    if rotary_dim == x.shape[-1]:
        return rotated
    return torch.cat([rotated, x[..., rotary_dim:]], dim=-1)


def _as_complex(t: torch.Tensor) -> torch.Tensor | None:
    # (..., d) real -> (..., d/2) complex view, pair (x[2i], x[2i+1]) as x[2i] + i x[2i+1];
    # None when the strides or offset are not a whole number of pairs.
    if t.stride(-1) != 1:
        return None
    try:
        return torch.view_as_complex(t.unflatten(-1, (-1, 2)))
    except RuntimeError:
        return None


def _rotate_interleaved(
    x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor, out: torch.Tensor
) -> None:
    # Rotating pair (u, v) by angle t is multiplying u + iv by cos t + i sin t (Meta's Llama code
    # does the same). One complex multiplication reads x once and writes the result once, which
    # keeps this at the cost of a copy; real arithmetic on strided even/odd columns is ~3x slower.
    rotation = torch.complex(cos, sin)  # (..., seq_len, d/2)
    source = _as_complex(x)
    if source is None:
        source = torch.view_as_complex(x.contiguous().unflatten(-1, (-1, 2)))
    target = _as_complex(out)
    if target is not None:
        torch.mul(source, rotation, out=target)
    else:
        out.copy_(torch.view_as_real(source * rotation).flatten(-2))


def _rotate_half_split(
    x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor, out: torch.Tensor
) -> None:
    # HF's x * cos + rotate_half(x) * sin, without building rotate_half(x): a product into each
    # half, then a fused multiply-add into each half (no torch.cat, no temporaries).
    h = x.shape[-1] // 2
    u, v = x[..., :h], x[..., h:]
    torch.mul(u, cos, out=out[..., :h])
    out[..., :h].addcmul_(v, sin, value=-1.0)  # u cos - v sin
    torch.mul(v, cos, out=out[..., h:])
    out[..., h:].addcmul_(u, sin)  # v cos + u sin


def _rotate_blocks(
    x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor, layout: str, out: torch.Tensor
) -> None:
    # The half layout takes four passes and half precision needs a float32 copy of x and a
    # rounding pass. Over whole tensors each pass goes to memory; over a few positions at a time
    # the repeated passes hit the cache, and memory sees about one read of x and one write.
    seq_len, width = x.shape[-2], x.shape[-1]
    per_position = max(1, x[..., :1, :].numel())  # one position across all leading dimensions
    rows = max(1, BLOCK_ELEMENTS // per_position)
    scratch = None
    if x.dtype in HALF_DTYPES:  # float32 work space, rounded into `out` block by block
        scratch = torch.empty(
            (*x.shape[:-2], min(rows, seq_len), width), dtype=torch.float32, device=x.device
        )
    for start in range(0, seq_len, rows):
        stop = min(start + rows, seq_len)

        def rows_of(table: torch.Tensor, start: int = start, stop: int = stop) -> torch.Tensor:
            return table if table.shape[-2] == 1 else table[..., start:stop, :]  # 1: broadcast

        target = out[..., start:stop, :] if scratch is None else scratch[..., : stop - start, :]
        if layout == "interleaved":  # (only reached for half precision)
            target.copy_(x[..., start:stop, :])  # exact widening
            _rotate_interleaved(target, rows_of(cos), rows_of(sin), target)
        else:  # mixed-dtype kernels widen half-precision x on the fly
            _rotate_half_split(x[..., start:stop, :], rows_of(cos), rows_of(sin), target)
        if scratch is not None:
            out[..., start:stop, :].copy_(target)  # the one rounding
