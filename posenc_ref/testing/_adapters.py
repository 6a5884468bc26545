r"""Adapters: the calling conventions engines use, turned into the kit's ``fn(q, k, positions)``.

Explained on the site: [other frameworks](frameworks.md#frameworks-adapters) and
[engines' conventions](check.md#check-engines).

- :func:`qk_fn`: ``fn(q, k, positions) -> (q_rot, k_rot)`` in another library;
- :func:`positions_fn`: ``fn(x, positions) -> x_rot``, one tensor at a time;
- :func:`offset_fn`: ``fn(x, offset) -> x_rot`` rotating the contiguous positions
  ``offset .. offset + seq_len - 1`` (MLX ``fast.rope``, mlx-lm, ggml, keras-hub's
  ``start_index``);
- :func:`offsets_fn`: ``fn(x, offsets) -> x_rot`` with one start per batch row
  (``seqlen_offsets``, left padding);
- :func:`packed_fn`: ``fn(x, cu_seqlens, offsets) -> x_rot`` over sequences packed into one row;
- :func:`inplace_fn`: ``fn(q, k, positions)`` writing its result into ``q`` and ``k``;
- :func:`~._table_fn.table_fn`: a precomputed cos/sin table (rows are positions), rotated by
  the kit, so that the table itself is what is checked (``_table_fn.py``);
- :func:`tokens_fn`: ``forward(positions, query, key)`` over flattened tokens, ``query`` of shape
  ``(num_tokens, heads * head_dim)`` (vLLM, SGLang, TensorRT-LLM);
- :func:`per_dtype_fn`: a module built for each activation dtype (vLLM builds its cos/sin cache
  in the model's dtype).

An adapter can add call patterns to the check (``patterns``: ``offsets_fn`` adds the batch
with per-row offsets, ``packed_fn`` the packed row) or say which its convention cannot express
(``unsupported``: a cos/sin table has no M-RoPE rows); the check reports both. Each calls the
user's function through :func:`~._arrays.call_user`, so an exception raised there is reported as
the user's.
"""

from __future__ import annotations

from collections.abc import Callable

import torch

from ._arrays import RopeFn, call_user, check_arrays, check_callable, to_library, to_torch

__all__ = [
    "qk_fn",
    "positions_fn",
    "offset_fn",
    "offsets_fn",
    "packed_fn",
    "inplace_fn",
    "tokens_fn",
    "per_dtype_fn",
]


def consecutive_runs(positions: torch.Tensor) -> list[tuple[int, int]]:
    """``(start, count)`` of each run of consecutive positions, in order."""
    p = positions.tolist()
    runs, start = [], 0
    for t in range(1, len(p) + 1):
        if t == len(p) or p[t] != p[t - 1] + 1:
            runs.append((start, t - start))
            start = t
    return runs


class Adapter:
    """A user's function in another calling convention, called as ``fn(q, k, positions)``."""

    form = ""
    name = ""  # the public function that makes it
    calls_user = True  # it calls the user's function through call_user itself
    patterns: tuple[str, ...] = ()  # call patterns it adds to the default check
    unsupported: tuple[str, ...] = ()  # call patterns its convention cannot express

    def __init__(self, fn: Callable, arrays: str) -> None:
        self.fn = check_callable(fn, self.form)
        self.arrays = check_arrays(arrays)
        self.max_position: int | None = None

    def __repr__(self) -> str:
        name = getattr(self.fn, "__qualname__", None) or type(self.fn).__name__
        return f"{self.name}({name}, arrays={self.arrays!r})"

    def one(self, x: torch.Tensor, positions: torch.Tensor) -> object:
        raise NotImplementedError

    def __call__(self, q: torch.Tensor, k: torch.Tensor, positions: torch.Tensor):
        return self.one(q, positions), self.one(k, positions)


class QKAdapter(Adapter):
    name = "qk_fn"
    form = "fn(q, k, positions) -> (q_rot, k_rot)"

    def __call__(self, q, k, positions):
        q, k, positions = (to_library(t, self.arrays) for t in (q, k, positions))
        return call_user(self.fn, q, k, positions)


class PositionsAdapter(Adapter):
    name = "positions_fn"
    form = "fn(x, positions) -> x_rot"

    def one(self, x, positions):
        return call_user(self.fn, to_library(x, self.arrays), to_library(positions, self.arrays))


def _checked_piece(out: object, block: torch.Tensor, what: str) -> torch.Tensor:
    out = to_torch(out, "x_rot")
    if tuple(out.shape) != tuple(block.shape):
        raise AssertionError(
            f"fn returned x_rot of shape {tuple(out.shape)} for x of shape "
            f"{tuple(block.shape)} ({what})"
        )
    return out


def token_rows(positions: torch.Tensor, batch: int) -> list[torch.Tensor]:
    """The 1-D positions each batch row is rotated at, from any of the kit's position forms.

    ``(n,)``: every row; ``(batch, 1, n)``: per row; ``(3, n)`` M-RoPE rows: a kernel that takes
    one position per token can only rotate the token's index, the first position plus its
    place (what an engine without M-RoPE does with an image).
    """
    if positions.dim() == 1:
        return [positions] * batch
    if positions.dim() == 3:
        return [positions[b, 0] for b in range(positions.shape[0])]
    first = int(positions[:, 0].min())
    return [torch.arange(first, first + positions.shape[-1], device=positions.device)] * batch


class OffsetAdapter(Adapter):
    name = "offset_fn"
    form = "fn(x, offset) -> x_rot"

    def one(self, x, positions):
        # One call per row and per run of consecutive positions (the property checks and packed
        # batches have several runs; per-row offsets have one per row).
        rows = []
        for b, row in enumerate(token_rows(positions, x.shape[0])):
            pieces = []
            for start, count in consecutive_runs(row):
                block = x[b : b + 1, ..., start : start + count, :]
                out = call_user(self.fn, to_library(block, self.arrays), int(row[start]))
                pieces.append(_checked_piece(out, block, f"offset {int(row[start])}"))
            rows.append(torch.cat([p.to(x.device) for p in pieces], dim=-2))
        return rows[0] if len(rows) == 1 else torch.cat(rows, dim=0)


class OffsetsAdapter(Adapter):
    name = "offsets_fn"
    form = "fn(x, offsets) -> x_rot"
    patterns = ("rows",)

    def one(self, x, positions):
        rows = token_rows(positions, x.shape[0])
        runs = {tuple(consecutive_runs(row)) for row in rows}
        if len(runs) == 1 and len(next(iter(runs))) == 1:  # every row one run, one length
            offsets = torch.tensor([int(row[0]) for row in rows], dtype=torch.int64)
            out = call_user(self.fn, to_library(x, self.arrays), to_library(offsets, self.arrays))
            return _checked_piece(out, x, f"offsets {offsets.tolist()}")
        pieces = []  # several runs (the property checks): one call per run, per row
        for b, row in enumerate(rows):
            for start, count in consecutive_runs(row):
                block = x[b : b + 1, ..., start : start + count, :]
                offsets = torch.tensor([int(row[start])])
                out = call_user(
                    self.fn, to_library(block, self.arrays), to_library(offsets, self.arrays)
                )
                pieces.append((b, _checked_piece(out, block, f"offsets [{int(row[start])}]")))
        by_row = [torch.cat([p for r, p in pieces if r == b], dim=-2) for b in range(len(rows))]
        return torch.cat(by_row, dim=0)


class PackedAdapter(Adapter):
    name = "packed_fn"
    form = "fn(x, cu_seqlens, offsets) -> x_rot"
    patterns = ("packed",)

    def one(self, x, positions):
        out = torch.empty_like(x)
        for b, row in enumerate(token_rows(positions, x.shape[0])):
            runs = consecutive_runs(row)
            lengths = torch.tensor([0] + [count for _, count in runs])
            cu_seqlens = torch.cumsum(lengths, 0).to(torch.int32)
            offsets = torch.tensor([int(row[start]) for start, _ in runs], dtype=torch.int64)
            tokens = x[b].transpose(0, 1).contiguous()  # (total, heads, head_dim)
            args = (to_library(t, self.arrays) for t in (tokens, cu_seqlens, offsets))
            got = call_user(self.fn, *args)
            got = _checked_piece(got, tokens, f"cu_seqlens {cu_seqlens.tolist()}")
            out[b] = got.to(x.device).transpose(0, 1)
        return out


class InPlaceAdapter(Adapter):
    name = "inplace_fn"
    form = "fn(q, k, positions) writing into q and k"

    def __init__(self, fn: Callable, arrays: str) -> None:
        super().__init__(fn, arrays)
        if self.arrays not in ("torch", "numpy"):
            raise ValueError(
                f"arrays must be 'torch' or 'numpy' for an in-place function ({self.arrays!r} "
                "arrays cannot be written into)"
            )

    def __call__(self, q, k, positions):
        q, k = q.clone(), k.clone()  # the buffers fn writes into
        args = (to_library(q, self.arrays), to_library(k, self.arrays))
        call_user(self.fn, *args, to_library(positions, self.arrays))
        return tuple(to_torch(a, name) for a, name in zip(args, ("q", "k"), strict=True))


def qk_fn(fn: Callable, *, arrays: str) -> RopeFn:
    """Adapt ``fn(q, k, positions) -> (q_rot, k_rot)`` written for another array library.

    Explained on the site: [other frameworks](frameworks.md#frameworks-adapters).

    Parameters
    ----------
    fn
        Takes ``q`` and ``k`` ``(batch, heads, seq_len, head_dim)`` and ``positions``
        ``(seq_len,)`` int64 as arrays of ``arrays``; returns two arrays of any library.
    arrays
        ``"numpy"``, ``"jax"``, ``"mlx"`` or ``"torch"``.

    Returns
    -------
    callable
        ``fn(q, k, positions)`` on torch tensors, for every check of the kit.
    """
    return QKAdapter(fn, arrays)


def positions_fn(fn: Callable, *, arrays: str = "torch") -> RopeFn:
    """Adapt ``fn(x, positions) -> x_rot``, which rotates one tensor (called for q, then k).

    Explained on the site: [other frameworks](frameworks.md#frameworks-adapters).

    Parameters
    ----------
    fn
        Takes ``x`` ``(batch, heads, seq_len, head_dim)`` and ``positions`` ``(seq_len,)`` int64
        as arrays of ``arrays``.
    arrays
        ``"torch"`` (default), ``"numpy"``, ``"jax"`` or ``"mlx"``.

    Returns
    -------
    callable
        ``fn(q, k, positions)`` on torch tensors.
    """
    return PositionsAdapter(fn, arrays)


def offset_fn(fn: Callable, *, arrays: str = "torch") -> RopeFn:
    """Adapt ``fn(x, offset) -> x_rot``, which rotates positions ``offset .. offset + seq_len - 1``.

    Explained on the site: [other frameworks](frameworks.md#frameworks-adapters).

    The convention of MLX's ``mx.fast.rope`` and mlx-lm's RoPE modules, ggml's ``rope`` with a
    contiguous position block, and keras-hub's ``start_index``. Non-consecutive positions (the
    property checks use several runs) are split into runs, one call each.

    Parameters
    ----------
    fn
        Takes ``x`` ``(batch, heads, seq_len, head_dim)`` as an array of ``arrays`` and the first
        position as a Python ``int``.
    arrays
        ``"torch"`` (default), ``"numpy"``, ``"jax"`` or ``"mlx"``.

    Returns
    -------
    callable
        ``fn(q, k, positions)`` on torch tensors.

    Examples
    --------
    >>> from posenc_ref import RotaryEmbedding
    >>> from posenc_ref.testing import assert_rope_equal
    >>> rope = RotaryEmbedding(16)
    >>> def rotate(x, offset):  # one tensor, positions offset, offset + 1, ...
    ...     return rope(x, x, offset=offset)[0]
    >>> assert_rope_equal(offset_fn(rotate), rope)
    """
    return OffsetAdapter(fn, arrays)


def offsets_fn(fn: Callable, *, arrays: str = "torch") -> RopeFn:
    """Adapt ``fn(x, offsets) -> x_rot``: batch row ``b`` rotates from position ``offsets[b]``.

    Explained on the site: [call patterns](check.md#check-patterns).

    The convention of batches whose rows start at different positions: flash-attn's
    ``apply_rotary_emb(x, cos, sin, seqlen_offsets=tensor)``, a KV cache of a different length
    per sequence, left padding. The check adds a call with three rows at different offsets
    (positions ``(batch, 1, seq_len)`` in the kit's form).

    Parameters
    ----------
    fn
        Takes ``x`` ``(batch, heads, seq_len, head_dim)`` and ``offsets`` ``(batch,)`` int64, as
        arrays of ``arrays``.
    arrays
        ``"torch"`` (default), ``"numpy"``, ``"jax"`` or ``"mlx"``.

    Returns
    -------
    callable
        ``fn(q, k, positions)`` on torch tensors.
    """
    return OffsetsAdapter(fn, arrays)


def packed_fn(fn: Callable, *, arrays: str = "torch") -> RopeFn:
    """Adapt ``fn(x, cu_seqlens, offsets) -> x_rot`` over sequences packed into one row.

    Explained on the site: [call patterns](check.md#check-patterns).

    The variable-length convention of flash-attn (``cu_seqlens``, ``max_seqlen`` and
    ``seqlen_offsets``), TransformerEngine's ``thd`` format (``cu_seqlens``,
    ``start_positions``), vLLM and SGLang's flattened token batches: ``x`` holds the tokens of
    several sequences one after the other, sequence ``j`` is ``x[cu_seqlens[j]:cu_seqlens[j+1]]``
    and starts at position ``offsets[j]``. The check adds a packed call of four sequences of
    different lengths and starts.

    Parameters
    ----------
    fn
        Takes ``x`` ``(total_tokens, heads, head_dim)``, ``cu_seqlens`` ``(sequences + 1,)``
        int32 and ``offsets`` ``(sequences,)`` int64, as arrays of ``arrays``.
    arrays
        ``"torch"`` (default), ``"numpy"``, ``"jax"`` or ``"mlx"``.

    Returns
    -------
    callable
        ``fn(q, k, positions)`` on torch tensors.
    """
    return PackedAdapter(fn, arrays)


def inplace_fn(fn: Callable, *, arrays: str = "torch") -> RopeFn:
    """Adapt ``fn(q, k, positions)`` that rotates ``q`` and ``k`` in place (returns nothing).

    Explained on the site: [call patterns](check.md#check-patterns).

    vLLM's ``rotary_embedding`` custom op, flash-attn's ``apply_rotary_emb(..., inplace=True)``
    and SGLang's ``apply_rope_with_cos_sin_cache_inplace`` write their result into their
    inputs. The kit passes copies and reads them back after the call; an in-place kernel that
    overwrites one coordinate of a pair before reading it for the other is one of the bugs it
    names.

    Parameters
    ----------
    fn
        Takes ``q``, ``k`` ``(batch, heads, seq_len, head_dim)`` and ``positions`` as arrays of
        ``arrays`` and writes into ``q`` and ``k``; what it returns is ignored.
    arrays
        ``"torch"`` (default) or ``"numpy"`` (JAX and MLX arrays cannot be written into).

    Returns
    -------
    callable
        ``fn(q, k, positions)`` on torch tensors.
    """
    return InPlaceAdapter(fn, arrays)


def flat_positions(positions: torch.Tensor, batch: int) -> torch.Tensor:
    """The kit's positions for ``batch`` rows as one position per flattened token.

    ``(n,)`` for every row: ``(batch * n,)``; ``(batch, 1, n)``, a start per row:
    ``(batch * n,)``; M-RoPE ``(rows, n)``: ``(rows, batch * n)``.
    """
    if positions.dim() == 1:
        return positions.repeat(batch)
    if positions.dim() == 3:
        return positions[:, 0].reshape(-1)
    return positions.repeat(1, batch)


class TokensAdapter(Adapter):
    name = "tokens_fn"
    form = "forward(positions, query, key) -> (query, key)"
    patterns = ("rows", "packed")  # flattened tokens carry a position each: both are natural

    def _tokens(self, x: torch.Tensor) -> torch.Tensor:
        b, h, n, d = x.shape
        return x.permute(0, 2, 1, 3).reshape(b * n, h * d).contiguous()  # (num_tokens, h * d)

    def _back(self, out: object, x: torch.Tensor, what: str) -> torch.Tensor:
        b, h, n, d = x.shape
        out = to_torch(out, what)
        if out.numel() != x.numel() or out.shape[0] != b * n:
            raise AssertionError(
                f"fn returned {what} of shape {tuple(out.shape)} for {what} of shape "
                f"({b * n}, {h * d}) (num_tokens, heads * head_dim)"
            )
        return out.reshape(b, n, h, d).permute(0, 2, 1, 3).to(x.device)

    def __call__(self, q, k, positions):
        flat = flat_positions(positions, q.shape[0])
        query, key = (to_library(self._tokens(x), self.arrays) for x in (q, k))
        result = call_user(self.fn, to_library(flat, self.arrays), query, key)
        if result is None:  # written in place (vLLM's custom op returns nothing)
            result = (query, key)
        if not isinstance(result, (tuple, list)) or len(result) != 2:
            raise AssertionError(
                f"forward(positions, query, key) must return (query, key) or None (in place), "
                f"got {type(result).__name__}"
            )
        return self._back(result[0], q, "query"), self._back(result[1], k, "key")


def tokens_fn(fn: Callable, *, arrays: str = "torch") -> RopeFn:
    """Adapt ``forward(positions, query, key)`` over flattened tokens (vLLM, SGLang, TRT-LLM).

    Explained on the site: [engines' conventions](check.md#check-engines).

    The serving engines' convention: the tokens of every sequence in the batch are one flat
    list, ``positions`` holds each token's position, and ``query`` and ``key`` hold each
    token's heads side by side, ``(num_tokens, heads * head_dim)``. The module splits the heads
    itself (``query.view(num_tokens, -1, head_size)``) and returns the rotated pair, or rotates
    in place and returns nothing (vLLM's custom op). M-RoPE positions are ``(3, num_tokens)``.
    The check adds the calls these batches make: rows starting at different positions, and
    sequences packed one after the other (``patterns`` ``"rows"`` and ``"packed"``).

    Parameters
    ----------
    fn
        ``fn(positions, query, key)``: ``positions`` ``(num_tokens,)`` int64 (``(3,
        num_tokens)`` for M-RoPE), ``query`` ``(num_tokens, q_heads * head_dim)`` and ``key``
        ``(num_tokens, k_heads * head_dim)`` as arrays of ``arrays``; returns ``(query, key)``
        (any shape holding ``num_tokens`` rows of those values) or ``None`` after writing into
        them.
    arrays
        ``"torch"`` (default), ``"numpy"``, ``"jax"`` or ``"mlx"``.

    Returns
    -------
    callable
        ``fn(q, k, positions)`` on torch tensors.

    Examples
    --------
    >>> from posenc_ref import RotaryEmbedding
    >>> from posenc_ref.testing import assert_rope_equal
    >>> rope = RotaryEmbedding(16, layout="half")
    >>> def forward(positions, query, key):  # (num_tokens, heads * 16)
    ...     def one(x):
    ...         x = x.view(1, x.shape[0], -1, 16).transpose(1, 2)  # (1, heads, tokens, 16)
    ...         return rope(x, x, positions)[0].transpose(1, 2).reshape(x.shape[2], -1)
    ...     return one(query), one(key)
    >>> assert_rope_equal(tokens_fn(forward), rope)
    """
    return TokensAdapter(fn, arrays)


class PerDtypeAdapter(Adapter):
    name = "per_dtype_fn"
    form = "build(dtype) -> fn"

    def __init__(self, build: Callable) -> None:
        super().__init__(build, "torch")
        self.built: dict[torch.dtype, Callable] = {}

    def for_dtype(self, dtype: torch.dtype) -> Callable:
        """The function built for ``dtype`` (built on first use, kept after)."""
        if dtype not in self.built:
            built = call_user(self.fn, dtype)
            self.built[dtype] = check_callable(built, "fn(q, k, positions), built by build(dtype)")
        return self.built[dtype]

    # What the built function's convention adds or lacks, read from one built for float32.
    @property
    def patterns(self) -> tuple[str, ...]:
        return tuple(getattr(self.for_dtype(torch.float32), "patterns", ()))

    @property
    def unsupported(self) -> tuple[str, ...]:
        return tuple(getattr(self.for_dtype(torch.float32), "unsupported", ()))

    def __call__(self, q, k, positions):
        fn = self.for_dtype(q.dtype)
        if getattr(fn, "calls_user", False):  # an adapter: it calls the user's code itself
            return fn(q, k, positions)
        return call_user(fn, q, k, positions)


def per_dtype_fn(build: Callable) -> RopeFn:
    """Adapt a RoPE built for one activation dtype: ``build(dtype)`` for each dtype checked.

    Explained on the site: [engines' conventions](check.md#check-engines).

    vLLM builds its cos/sin cache when the model is built, cast to the model's dtype, and casts
    it again to the activations' dtype at the first call (``_match_cos_sin_cache_dtype``, which
    keeps the cast cache for later calls). A module checked with one instance for float32 and
    bfloat16 calls would carry a cache cast for one of them into the other; served, a model has
    one dtype. This adapter builds one per dtype the check makes calls in, as the engine does:
    ``per_dtype_fn(lambda dtype: tokens_fn(MyRotary(..., dtype=dtype)))``.

    Parameters
    ----------
    build
        ``build(dtype) -> fn``, ``fn`` in the kit's call form or any adapter's
        (:func:`tokens_fn`, :func:`offset_fn`, ...), called once per dtype.

    Returns
    -------
    callable
        ``fn(q, k, positions)`` on torch tensors.
    """
    return PerDtypeAdapter(build)
