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

from dataclasses import dataclass, field

import torch

from ..rope import RotaryEmbedding
from ._arrays import RopeFn, call_qk
from ._calls import Call, CallPlan, describe_positions, position_runs
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


@dataclass
class Plan:
    """The calls of one check and what the report says of them.

    ``calls`` in increasing order of their largest position; ``notes`` says where a pattern was
    placed other than by default (a table shorter than the original context) and which window
    or pattern was not made, and why.
    """

    calls: list[CallPlan]
    notes: list[str] = field(default_factory=list)

    def made(self) -> list[str]:
        """The report's lines: the patterns made (with their calls) and the notes."""
        counts: dict[str, int] = {}
        for plan in self.calls:
            counts[plan.kind] = counts.get(plan.kind, 0) + 1
        made = ", ".join(f"{kind} ({n} call{'s' if n > 1 else ''})" for kind, n in counts.items())
        return [f"Patterns made: {made}."] + [f"    {note}" for note in self.notes]


class PatternError(ValueError):
    """A call pattern that was asked for and cannot be made: the message says why."""


def row_starts(limit: int, length: int) -> tuple[int, list[int]]:
    """A row length and three distinct starts > 0 (two below a table of 3 rows) under ``limit``."""
    length = max(1, min(length, limit - 2))
    top = limit - length  # the largest start that fits
    return length, sorted({min(3, top), top // 2, top})


def packed_runs(context: int, limit: int) -> list[tuple[int, int]]:
    """``(start, count)`` of four packed sequences whose positions stay below ``limit``.

    By default: two from 0 (one a single token), one from 17, one across the original context.
    Below a short table they are placed under it, each restarting where the last did not end
    (else the packed row would read as one sequence).
    """
    runs = [(0, 23), (0, 1), (17, 40), (max(context - 10, 60), 30)]
    if runs[-1][0] + runs[-1][1] <= limit:
        return runs
    n = max(1, min(23, (limit - 2) // 3))
    runs = [(0, n), (0, 1), (n + 1, n), (limit - n, n)]
    positions = torch.cat([_span(a, a + c) for a, c in runs])
    if len(position_runs(positions)) != 4 or int(positions.max()) >= limit:
        raise PatternError(
            f"patterns 'packed' needs max_position >= 4 (four sequences that restart), got "
            f"{limit - 1}"
        )
    return runs


def _windows(context: int, far: int, patterns: tuple[str, ...], notes: list[str]):
    """The prefill windows, decode steps and chunks, placed below ``far + 1``."""
    first = min(FIRST_WINDOW, far + 1)
    calls = [CallPlan("prefill", _span(0, first), batch=2, q_heads=2, k_heads=1)]
    if "decode" in patterns and first <= far:
        calls.append(CallPlan("decode", _span(first, first + 1), 1, 2, 1))
    near = context - WINDOW // 2 >= first + 1 and context + WINDOW // 2 <= far + 1
    if near:
        calls.append(CallPlan("prefill", _span(context - WINDOW // 2, context + WINDOW // 2),
                              1, 2, 2))  # fmt: skip
        if "decode" in patterns:
            calls.append(CallPlan("decode", _span(context, context + 1), 1, 2, 1))
    else:
        reason = (
            f"it is past max_position {far}, so no call reaches it"
            if context > far
            else "it is too close to the first or the last window for a call of its own"
        )
        notes.append(
            f"No prefill window of its own around the original context {context}: {reason}."
        )
    if "chunk" in patterns:
        # two chunks that meet at the original context, or as close below the last position
        # as they fit: a chunked prefill whose second chunk starts where the first ended
        size = min(CHUNK, (far + 1) // 2)
        meet = min(context, far + 1 - size)
        if meet != context:
            notes.append(
                f"The chunked prefill meets at position {meet}, not at the original context "
                f"{context}: max_position is {far}."
            )
        calls.append(CallPlan("chunk", _span(meet - size, meet), 1, 2, 2))
        calls.append(CallPlan("chunk", _span(meet, meet + size), 1, 2, 2))
    return calls


def plan_calls(
    reference: RotaryEmbedding,
    max_position: int | None,
    patterns: tuple[str, ...],
    default: tuple[str, ...] = (),
) -> Plan:
    """The calls of one check, in increasing order of their largest position.

    That order lets a stateful implementation (HF's dynamic NTK, which keeps grown frequencies
    for shorter calls past the original context) see what a stateless one does. Every pattern
    in ``patterns`` is made, at positions below ``max_position`` (a table with exactly the
    original context's rows gets its rows, chunks and packed sequences below it), or a
    :class:`PatternError` says why it cannot be; a pattern of ``default`` (asked for by
    default, not by the caller) that does not apply is left out with a note.
    """
    context = original_context(reference) or DEFAULT_CONTEXT
    far = max_position if max_position is not None else max(8 * context, DEFAULT_FAR)
    limit = far + 1  # positions 0 .. far
    notes: list[str] = []
    calls = _windows(context, far, patterns, notes)
    end = max(int(c.positions.max()) for c in calls) + 1
    if "rows" in patterns:
        if limit < 3:
            raise PatternError(
                f"patterns 'rows' needs max_position >= 2 (rows starting at different "
                f"positions), got {far}"
            )
        starts, length = [3, 37, max(context - 20, 43)], 40
        if starts[-1] + length > limit:
            length, starts = row_starts(limit, length)
            notes.append(f"The rows start at {starts} (below max_position {far}).")
        rows = torch.stack([_span(s, s + length) for s in starts])[:, None, :]
        calls.append(CallPlan("rows", rows, len(starts), 2, 1))
    if "packed" in patterns:
        runs = packed_runs(context, limit)
        packed = torch.cat([_span(s, s + n) for s, n in runs])
        calls.append(CallPlan("packed", packed, 1, 2, 1))
    mrope = getattr(reference, "mrope_section", None) is not None
    if "image" in patterns and mrope:
        span = int(mrope_segments(0)[0].max()) + 1  # the positions the image call spans
        start = min(5, max(limit - span, 0))
        if start + span > limit:
            raise PatternError(
                f"patterns 'image' needs max_position >= {span - 1} (text, an image and a "
                f"video), got {far}"
            )
        calls.append(image_call(reference, start=start))
    elif "image" in patterns and "image" not in default:
        raise PatternError(
            "patterns 'image' asks for an M-RoPE call (text, an image and a video), but the "
            "reference has no mrope_section: leave 'image' out, or build the reference from the "
            "model's config (RotaryEmbedding.from_hf_config)"
        )
    if far + 1 > end:
        if "decode" in patterns and far >= end:
            calls.append(CallPlan("decode", _span(far, far + 1), 1, 1, 1))
        calls.append(CallPlan("prefill", _span(max(far + 1 - WINDOW, end), far + 1), 1, 1, 1))
    if "decode" in patterns and not any(c.kind == "decode" for c in calls):
        # a table shorter than the first window: one token at its last row
        calls.append(CallPlan("decode", _span(far, far + 1), 1, 2, 1))
    calls.sort(key=lambda c: int(c.positions.max()))
    return Plan(calls, notes)


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
    """``patterns`` as a tuple of names of :data:`PATTERNS` (prefill first), else raise."""
    if isinstance(patterns, str) or not isinstance(patterns, (tuple, list, set, frozenset)):
        raise TypeError(f"patterns must be a sequence of names from {PATTERNS}, got {patterns!r}")
    if not patterns:
        raise ValueError(
            f"patterns must name at least one call pattern of {PATTERNS} (an empty check "
            "checks nothing); ('prefill',) is the smallest check"
        )
    unknown = [p for p in patterns if p not in PATTERNS]
    if unknown:
        raise ValueError(f"patterns must be among {PATTERNS}, got {unknown!r}")
    return tuple(dict.fromkeys(["prefill", *patterns]))
