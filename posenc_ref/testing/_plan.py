r"""The input plan: which calls the kit makes, in the patterns engines call RoPE in.

Explained on the site: [what is compared](check.md#check-rope) and
[the call patterns](check.md#check-patterns).

The kit chooses the inputs: random queries and keys at positions laid out the way engines call a
RoPE kernel (:func:`plan_calls`), each a call of the user's function (:func:`run_call`):

- ``prefill``: a window of consecutive positions (the start; around the original context,
  where length-dependent methods switch; the far end);
- ``decode``: one token at a time, after a prefill (the KV-cache step, a branch of its own in
  many kernels);
- ``chunk``: a prefill split in chunks that start where the last one ended (chunked prefill);
- ``rows``: a batch whose rows start at different positions (``seqlen_offsets``, left padding),
  positions ``(batch, 1, seq_len)``; asked for with ``patterns`` or by an adapter;
- ``packed``: sequences packed into one row (``cu_seqlens``), positions restarting at each;
  asked for likewise;
- ``image``: for M-RoPE, text, an image and a video, positions ``(3, seq_len)`` as
  :func:`~posenc_ref.mrope.mrope_positions` builds them.

Queries and keys have different head counts in most calls (GQA and MQA).
"""

from __future__ import annotations

import torch

from ..rope import RotaryEmbedding
from ._arrays import RopeFn, call_qk
from ._calls import Call, CallPlan, describe_positions
from ._common import dtype_name

# Windows of positions: the start (small positions, and 255/256/257 where bfloat16 positions
# collide), around the original context (where length-dependent methods switch), and the far end.
FIRST_WINDOW = 300
WINDOW = 128
CHUNK = 64
DEFAULT_CONTEXT = 4096
DEFAULT_FAR = 1 << 17
LARGEST_POSITION = 1 << 53  # float64 tells integers apart up to here

PATTERNS = ("prefill", "decode", "chunk", "rows", "packed", "image")
DEFAULT_PATTERNS = ("prefill", "decode", "chunk", "image")
"""Call patterns; the default check makes the ones every RoPE function should take."""

# An image and a video between text, as M-RoPE models see them: (text before, grid, text after)
# twice; the grids count tokens after the vision encoder's 2 x 2 merge.
MROPE_SEGMENTS = ((4, (1, 6, 8), 3), (0, (2, 3, 4), 2))


def original_context(reference: RotaryEmbedding) -> int | None:
    """The reference's original (pre-training) context, if it has one."""
    params = getattr(reference, "scaling_params", None) or {}
    if isinstance(params.get("original_max_len"), int):
        return params["original_max_len"]
    spec = getattr(reference, "spec", None)  # from_hf_config keeps the config's spec
    if spec is not None and getattr(spec, "original_max_len", None):
        return int(spec.original_max_len)
    for name in ("original_max_len", "original_max_position_embeddings"):
        value = getattr(reference, name, None)
        if isinstance(value, int) and not isinstance(value, bool) and value > 0:
            return value
    return None


def _span(start: int, stop: int) -> torch.Tensor:
    return torch.arange(start, stop, dtype=torch.int64)


def plan_calls(
    reference: RotaryEmbedding, max_position: int | None, patterns: tuple[str, ...]
) -> list[CallPlan]:
    """The calls of one check, in increasing order of their largest position.

    That order lets a stateful implementation (HF's dynamic NTK, which keeps grown frequencies
    for shorter calls past the original context) see what a stateless one does.
    """
    context = original_context(reference) or DEFAULT_CONTEXT
    far = max_position if max_position is not None else max(8 * context, DEFAULT_FAR)
    first = min(FIRST_WINDOW, far + 1)
    calls = [CallPlan("prefill", _span(0, first), batch=2, q_heads=2, k_heads=1)]
    if "decode" in patterns and first <= far:
        calls.append(CallPlan("decode", _span(first, first + 1), 1, 2, 1))
    near = context - WINDOW // 2 >= first + 1 and context + WINDOW // 2 <= far + 1
    if near and "chunk" in patterns:
        calls.append(CallPlan("chunk", _span(context - CHUNK, context), 1, 2, 2))
    if near and "decode" in patterns:
        calls.append(CallPlan("decode", _span(context, context + 1), 1, 2, 1))
    if near:
        window = _span(context - WINDOW // 2, context + WINDOW // 2)
        calls.append(CallPlan("prefill", window, 1, 2, 2))
    if near and "chunk" in patterns:
        calls.append(CallPlan("chunk", _span(context, context + CHUNK), 1, 2, 2))
    end = calls[-1].positions.max() + 1
    if "rows" in patterns:
        starts = [3, 37, max(context - 20, 43)]
        if starts[-1] + 40 <= far + 1:
            rows = torch.stack([_span(s, s + 40) for s in starts])[:, None, :]
            calls.append(CallPlan("rows", rows, len(starts), 2, 1))
    if "packed" in patterns:
        runs = [(0, 23), (0, 1), (17, 40), (max(context - 10, 60), 30)]
        if runs[-1][0] + runs[-1][1] <= far + 1:
            packed = torch.cat([_span(s, s + n) for s, n in runs])
            calls.append(CallPlan("packed", packed, 1, 2, 1))
    if "image" in patterns and getattr(reference, "mrope_section", None) is not None:
        calls.append(image_call(reference, start=5))
    if far + 1 > end:
        if "decode" in patterns and far >= end:
            calls.append(CallPlan("decode", _span(far, far + 1), 1, 1, 1))
        calls.append(CallPlan("prefill", _span(max(far + 1 - WINDOW, end), far + 1), 1, 1, 1))
    calls.sort(key=lambda c: int(c.positions.max()))
    return calls


def mrope_segments(start: int, resume: bool = True) -> tuple[torch.Tensor, list[str]]:
    """M-RoPE positions of :data:`MROPE_SEGMENTS` from ``start``, and each token's kind.

    ``resume=False`` gives the bug: text after a grid continues from the token count, not from
    the grid's largest position + 1.
    """
    columns, kinds, position = [], [], start
    for before, (t, h, w), after in MROPE_SEGMENTS:
        columns.append(_span(position, position + before).expand(3, -1))
        kinds += ["text"] * before
        position += before
        frames, rows, cols = torch.meshgrid(
            torch.arange(t), torch.arange(h), torch.arange(w), indexing="ij"
        )
        columns.append(torch.stack([frames, rows, cols]).reshape(3, -1) + position)
        kinds += ["image" if t == 1 else "video"] * (t * h * w)
        position += max(t, h, w) if resume else t * h * w
        columns.append(_span(position, position + after).expand(3, -1))
        kinds += ["text"] * after
        position += after
    return torch.cat(columns, dim=1), kinds


def image_call(reference: RotaryEmbedding, start: int) -> CallPlan:
    """An M-RoPE call: text, an image, text, a video, text, with the variants bugs rotate by."""
    positions, kinds = mrope_segments(start)
    rows = len(getattr(reference, "mrope_section", None) or (0, 0, 0))
    if rows != 3:  # NeoMME's two rows (height, width): drop the time row
        positions = positions[3 - rows :]
    n = positions.shape[1]
    wrong, _ = mrope_segments(start, resume=False)
    variants = {
        "token_index": _span(start, start + n),  # a 1-D kernel given the first position
        "time_row": positions[:1].expand_as(positions),
        "no_resume": wrong[3 - rows :],
    }
    return CallPlan("image", positions, 1, 2, 1, rows=True, variants=variants)


def run_call(
    fn: RopeFn,
    plan: CallPlan,
    dtype: torch.dtype,
    head_dim: int,
    generator: torch.Generator,
    device: torch.device,
) -> Call:
    """Make one call of ``fn`` with random inputs."""
    q_shape = (plan.batch, plan.q_heads, plan.n, head_dim)
    k_shape = (plan.batch, plan.k_heads, plan.n, head_dim)
    q = torch.randn(q_shape, generator=generator).to(device=device, dtype=dtype)
    k = torch.randn(k_shape, generator=generator).to(device=device, dtype=dtype)
    where = f"({describe_positions(plan)}, {dtype_name(dtype)} q {q_shape} and k {k_shape})"
    outputs = call_qk(fn, q, k, plan.positions.to(device), where)
    return Call(plan, dtype, (q.to("cpu", torch.float64), k.to("cpu", torch.float64)), outputs)


def check_patterns(patterns: object) -> tuple[str, ...]:
    """``patterns`` as a tuple of names of :data:`PATTERNS`, else raise."""
    if isinstance(patterns, str) or not isinstance(patterns, (tuple, list, set, frozenset)):
        raise TypeError(f"patterns must be a sequence of names from {PATTERNS}, got {patterns!r}")
    unknown = [p for p in patterns if p not in PATTERNS]
    if unknown:
        raise ValueError(f"patterns must be among {PATTERNS}, got {unknown!r}")
    return tuple(dict.fromkeys(["prefill", *patterns]))
