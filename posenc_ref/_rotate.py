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
  ``torch.compile`` / ``torch.export`` trace it (the compiler fuses it into one kernel). For
  the interleaved layout on the CPU it reads each pair as one integer word
  (:func:`rotate_pair_words`), so that the compiled code is vectorised.
- The eager kernels (:func:`interleaved_kernel`, :func:`half_kernel`): they write into the
  result with as few passes over memory as PyTorch's stock operators allow and, on the CPU, a
  block of positions at a time, so that the passes after the first find the block in the cache.

Both are tested against :func:`posenc_ref.rope.apply_rope_loop`, the definition.
"""

from __future__ import annotations

import sys

import torch

from ._tensor_checks import HALF_DTYPES, tracing

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
    kernel = interleaved_kernel if layout == "interleaved" else half_kernel
    kernel(x[..., :rotary_dim], cos, sin, result[..., :rotary_dim], rows)
    return result


def rotate_formula(
    x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor, layout: str, rotary_dim: int
) -> torch.Tensor:
    """Out-of-place rotation: differentiable, and fused into one kernel by ``torch.compile``.

    ``cos`` and ``sin`` are already in the working dtype (float32 for half-precision ``x``).
    """
    if layout == "interleaved" and pair_words_apply(x, cos, sin):
        return rotate_pair_words(x, cos, sin, rotary_dim)
    h = rotary_dim // 2
    if layout == "interleaved":
        u, v = x[..., 0:rotary_dim:2], x[..., 1:rotary_dim:2]  # (..., seq_len, h) each
    else:
        u, v = x[..., :h], x[..., h:rotary_dim]  # (..., seq_len, h) each
    u, v = u.to(cos.dtype), v.to(cos.dtype)
    # Each half is rounded to x's dtype as soon as it is computed: still one rounding, and the
    # compiler then writes the result directly instead of a float32 copy of it first.
    parts = [(u * cos - v * sin).to(x.dtype), (v * cos + u * sin).to(x.dtype)]
    if layout == "interleaved":
        # (..., seq_len, h, 2) -> (..., seq_len, rotary_dim): u', v' back to coordinates 2i, 2i+1
        rotated = torch.stack(parts, dim=-1).flatten(-2)
    else:
        rotated = torch.cat(parts, dim=-1)  # (..., seq_len, rotary_dim): all u', then all v'
    if rotary_dim == x.shape[-1]:
        return rotated
    return torch.cat([rotated, x[..., rotary_dim:]], dim=-1)  # (..., seq_len, head_dim)


# The integer word that holds one interleaved pair (u, v) = (x[2i], x[2i+1]) of each dtype.
PAIR_WORDS = {torch.float32: torch.int64, torch.bfloat16: torch.int32}
PAIR_WORDS_COMPILE = tuple(int(part) for part in torch.__version__.split(".")[:2]) >= (2, 5)


def pair_words_apply(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> bool:
    # Only where it was measured faster: inductor's CPU code (on a GPU the formula is used,
    # unmeasured here) and a contiguous x, as Meta-style code holds q and k, (batch, seq, heads,
    # head_dim); inductor copies a strided x before viewing it as words, which cost more (3x a
    # clone against 1.2-2x for the formula, at the benchmark shape). Also: no gradients (bit
    # views have none), little-endian machines (u in the low half of the word), and torch >= 2.5
    # (older inductors cannot compile a view between dtypes of different widths).
    # Limitation: dynamo does not trace x.storage_offset(), so a contiguous x that starts at an
    # odd element of its storage (a flat buffer sliced at an odd index; no model's head split
    # does that) fails to compile with torch's "storage_offset() must be divisible by 2";
    # x.clone() first avoids it. Pinned by tests/test_rope_compile.py.
    return (
        x.dtype in PAIR_WORDS
        and cos.dtype == torch.float32
        and x.device.type == "cpu"
        and sys.byteorder == "little"
        and PAIR_WORDS_COMPILE
        and not (torch.is_grad_enabled() and any(t.requires_grad for t in (x, cos, sin)))
        and x.is_contiguous()
        and (tracing() or x.storage_offset() % 2 == 0)
    )


def rotate_pair_words(
    x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor, rotary_dim: int
) -> torch.Tensor:
    # rotate_formula's interleaved layout, compiled for the CPU. Inductor's C++ code is
    # vectorized only where loads and stores are contiguous; the pairs (2i, 2i+1) are read and
    # written at stride 2 (a scalar loop: 2x the time of the half layout in float32, 6x in
    # bfloat16). Viewed as one integer word per pair, x, the tables and the result are all
    # contiguous over the pair index i; u and v are the word's low and high halves (exact).
    words = x.view(PAIR_WORDS[x.dtype])  # (..., seq_len, head_dim / 2)
    pairs = words[..., : rotary_dim // 2]  # (..., seq_len, rotary_dim / 2): one word per pair
    if x.dtype == torch.float32:
        u = pairs.to(torch.int32).view(torch.float32)  # the low 32 bits, (..., seq_len, pairs)
        v = (pairs >> 32).to(torch.int32).view(torch.float32)  # the high 32, same shape
        u, v = u * cos - v * sin, v * cos + u * sin
        low = u.view(torch.int32).to(torch.int64) & 0xFFFFFFFF
        rotated = (v.view(torch.int32).to(torch.int64) << 32) | low  # (..., seq_len, pairs)
    else:  # bfloat16 is the high half of a float32: widening is a shift
        u = (pairs << 16).view(torch.float32)  # (..., seq_len, pairs)
        v = (pairs & -65536).view(torch.float32)  # (-65536: the high 16 bits of an int32)
        u, v = u * cos - v * sin, v * cos + u * sin
        rotated = bfloat16_bits(v) | ((bfloat16_bits(u) >> 16) & 0xFFFF)  # (..., seq, pairs)
    if rotary_dim < x.shape[-1]:
        # (..., seq_len, head_dim / 2) words: the pass-through part copied bit for bit
        rotated = torch.cat([rotated, words[..., rotary_dim // 2 :]], dim=-1)
    return rotated.view(x.dtype)  # (..., seq_len, head_dim)


def bfloat16_bits(t: torch.Tensor) -> torch.Tensor:
    # float32 -> bfloat16, rounded to nearest (ties to even), as the high 16 bits of an int32
    # (the low 16 are zero). Spelled out on the bits because inductor keeps values in float32
    # inside a kernel and drops t.to(bfloat16).to(float32) as a no-op. NaN stays NaN (t != t).
    bits = t.view(torch.int32)  # t's shape, the float32 bits as integers
    rounded = (bits + 0x7FFF + ((bits >> 16) & 1)) & -65536
    return torch.where(t != t, 0x7FC00000, rounded)


def split_rows(t: torch.Tensor, rows: int, blocks: int) -> list[torch.Tensor]:
    # `blocks` views of `rows` positions (dimension -2); a table with one row serves them all.
    return [t] * blocks if t.shape[-2] == 1 else list(t.split(rows, dim=-2))


def as_complex(t: torch.Tensor) -> torch.Tensor | None:
    # (..., d) real -> (..., d/2) complex view, pair (t[2i], t[2i+1]) as t[2i] + i t[2i+1];
    # None for half precision (PyTorch has no complex bfloat16) and for strides or an offset that
    # are not a whole number of pairs.
    if t.dtype in HALF_DTYPES or t.stride(-1) != 1:
        return None
    try:
        return torch.view_as_complex(t.unflatten(-1, (-1, 2)))  # (..., d/2, 2) -> (..., d/2)
    except RuntimeError:
        return None


def interleaved_kernel(
    x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor, out: torch.Tensor, rows: int
) -> None:
    # Rotating pair (u, v) by angle t is multiplying u + iv by cos t + i sin t (Meta's Llama code
    # does the same). One complex multiplication reads x once and writes out once: the cost of a
    # copy, where real arithmetic on the strided even and odd columns takes several passes.
    source, target = as_complex(x), as_complex(out)
    staged = source is None or target is None
    if not staged:
        rows = x.shape[-2]  # a single pass already: blocks would only add operator calls
    blocks = -(-x.shape[-2] // rows)
    if staged:
        # bfloat16/float16 (no complex dtype) or awkward strides: each block is copied into a
        # complex work space (widening exactly), multiplied there, and copied (rounded) out.
        work = torch.empty(  # (..., rows, d/2) complex
            (*x.shape[:-2], min(rows, x.shape[-2]), x.shape[-1] // 2),
            dtype=torch.complex64 if cos.dtype == torch.float32 else torch.complex128,
            device=x.device,
        )
        source, target = x, out
    tables = zip(split_rows(cos, rows, blocks), split_rows(sin, rows, blocks), strict=True)
    for x_block, out_block, (c, s) in zip(
        split_rows(source, rows, blocks), split_rows(target, rows, blocks), tables, strict=True
    ):
        rotation = torch.complex(c, s)  # (..., rows, d/2): built per block, so it stays cached
        if not staged:
            torch.mul(x_block, rotation, out=out_block)  # (..., rows, d/2) complex
            continue
        w = work[..., : x_block.shape[-2], :]  # the last block may be shorter
        w_real = torch.view_as_real(w).flatten(-2)  # the same memory as (..., rows, d) reals
        w_real.copy_(x_block)
        w.mul_(rotation)
        out_block.copy_(w_real)


def half_kernel(
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
        shape = (*x.shape[:-2], min(rows, x.shape[-2]), x.shape[-1])  # (..., rows, d)
        widened = torch.empty(shape, dtype=cos.dtype, device=x.device)
        rotated = torch.empty_like(widened)
    tables = zip(split_rows(cos, rows, blocks), split_rows(sin, rows, blocks), strict=True)
    for x_block, out_block, (c, s) in zip(
        split_rows(x, rows, blocks), split_rows(out, rows, blocks), tables, strict=True
    ):
        source, target = x_block, out_block
        if staged:
            source = widened[..., : x_block.shape[-2], :].copy_(x_block)  # exact widening
            target = rotated[..., : x_block.shape[-2], :]
        # cat: (..., rows, d/2) -> (..., rows, d), one cos per coordinate of each pair
        torch.mul(source, torch.cat([c, c], dim=-1), out=target)  # (u cos, v cos)
        target[..., :h].addcmul_(source[..., h:], s, value=-1.0)  # u cos - v sin
        target[..., h:].addcmul_(source[..., :h], s)  # v cos + u sin
        if staged:
            out_block.copy_(target)  # the one rounding
