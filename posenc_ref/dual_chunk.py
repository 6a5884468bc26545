r"""Dual chunk attention: the positions serving engines rotate queries and keys at, past a chunk.

Explained on the site: [dual chunk attention](rope_scaling.md#scaling-dual-chunk).

Qwen2.5-1M's configs carry a ``dual_chunk_attention_config`` (``chunk_size``, ``local_size``,
``original_max_position_embeddings``). transformers ignores it and runs plain RoPE; vLLM and
SGLang run these models with dual chunk attention (DCA), which keeps the frequencies and changes
the *positions*. With :math:`S` = ``chunk_size``, :math:`w` = ``local_size`` and the chunk length
:math:`c = S - w`, a key at position :math:`j` is rotated at :math:`j \bmod c`, and a query at
position :math:`i` is scored at one of three positions, chosen by how many chunks lie between
it and the key:

.. math::

    \begin{aligned}
    q_{\text{intra}}(i) &= i \bmod c, \\
    q_{\text{succ}}(i) &= \min(i \bmod c + c,\ S), \\
    q_{\text{inter}} &= \min(2c - 1,\ S),
    \end{aligned}

for a key in the query's own chunk, in the chunk before it, and further back. The score of the
pair then depends on the distance :math:`q_{\text{regime}}(i) - (j \bmod c)` instead of
:math:`i - j` (:func:`dual_chunk_distance`). Read from vLLM's
``vllm/model_executor/layers/rotary_embedding/dual_chunk_rope.py`` (``DualChunkRotaryEmbedding``:
its ``q``, ``qc`` and ``k`` tables; the ``qc`` table at :math:`c - 1` for the inter-chunk
query) and ``vllm/attention/backends/dual_chunk_flash_attn.py`` (which query meets which keys),
and from SGLang's copies (``python/sglang/srt/layers/rotary_embedding/rope_variant.py``,
``python/sglang/srt/layers/attention/dual_chunk_flashattention_backend.py``). vLLM rotates each
query five ways, not three: two more tables, :math:`i \bmod c + c` and :math:`i \bmod c + S`
without the clamp (:func:`dual_chunk_sparse_positions`), feed only its sparse-attention path,
which scores the last queries against every chunk to choose the keys to keep. The attention
backends default to ``chunk_size`` 8192 and ``local_size`` 1024 where the config omits them, but
vLLM's rotary module takes both as required arguments (``get_rope`` passes on only the keys the
config has), so a config without them fails there; the Qwen2.5-1M configs give 262144 and 8192.

Both functions take the chunk sizes keyword-only and integer positions, and work in integers
(no angles: the rotation itself is :func:`posenc_ref.rope.apply_rope` at these positions).
"""

from __future__ import annotations

from typing import NamedTuple

import torch

from ._checks import check_int
from ._tensor_checks import check_positions

__all__ = [
    "DualChunkPositions",
    "dual_chunk_positions",
    "dual_chunk_sparse_positions",
    "dual_chunk_distance",
]


class DualChunkPositions(NamedTuple):
    r"""Where DCA rotates each token: its key, and its query for each of the three regimes.

    Attributes
    ----------
    key : torch.Tensor
        :math:`j \bmod c`, shape of the positions, ``torch.long``.
    intra : torch.Tensor
        :math:`i \bmod c`: the query against keys of its own chunk.
    successive : torch.Tensor
        :math:`\min(i \bmod c + c, S)`: against keys of the chunk before.
    inter : torch.Tensor
        :math:`\min(2c - 1, S)` for every token: against keys further back.
    """

    key: torch.Tensor
    intra: torch.Tensor
    successive: torch.Tensor
    inter: torch.Tensor


def _check_sizes(chunk_size: object, local_size: object) -> tuple[int, int]:
    chunk_size = check_int("chunk_size", chunk_size, minimum=2)
    local_size = check_int("local_size", local_size)
    if local_size >= chunk_size:
        raise ValueError(
            f"local_size must be < chunk_size (the chunk length chunk_size - local_size is at "
            f"least 1), got local_size={local_size}, chunk_size={chunk_size}"
        )
    return chunk_size, local_size


def _positions(name: str, value: object) -> torch.Tensor:
    if isinstance(value, int) and not isinstance(value, bool):
        value = torch.tensor([check_int(name, value)])
    return check_positions(name, value, integer_only=True).to(torch.long)


def dual_chunk_positions(
    positions: torch.Tensor, *, chunk_size: int, local_size: int
) -> DualChunkPositions:
    r"""The positions DCA rotates each token's key and queries at.

    Derived on the site: [dual chunk attention](rope_scaling.md#scaling-dual-chunk).

    .. math::

        \begin{aligned}
        k(j) &= j \bmod c, & q_{\text{intra}}(i) &= i \bmod c, \\
        q_{\text{succ}}(i) &= \min(i \bmod c + c, S), & q_{\text{inter}} &= \min(2c - 1, S)
        \end{aligned}

    with :math:`S` = ``chunk_size``, :math:`w` = ``local_size``, :math:`c = S - w`.

    Parameters
    ----------
    positions
        Integer token positions ``(..., seq_len)``, ``>= 0``.
    chunk_size
        ``dual_chunk_attention_config["chunk_size"]``, ``>= 2``.
    local_size
        ``dual_chunk_attention_config["local_size"]``, ``0 <= local_size < chunk_size``.

    Returns
    -------
    DualChunkPositions
        Four ``torch.long`` tensors of the shape of ``positions``.

    Examples
    --------
    >>> p = dual_chunk_positions(torch.tensor([0, 5, 6, 13]), chunk_size=8, local_size=2)
    >>> p.key.tolist(), p.successive.tolist(), p.inter.tolist()
    ([0, 5, 0, 1], [6, 8, 6, 7], [8, 8, 8, 8])
    """
    chunk_size, local_size = _check_sizes(chunk_size, local_size)
    positions = _positions("positions", positions)
    c = chunk_size - local_size
    offset = positions % c  # (..., seq_len)
    return DualChunkPositions(
        key=offset,
        intra=offset,
        successive=(offset + c).clamp(max=chunk_size),
        inter=torch.full_like(offset, min(2 * c - 1, chunk_size)),
    )


def dual_chunk_sparse_positions(
    positions: torch.Tensor, *, chunk_size: int, local_size: int
) -> tuple[torch.Tensor, torch.Tensor]:
    r"""The two extra query positions of vLLM's DCA, used only by its sparse-attention path.

    Derived on the site: [dual chunk attention](rope_scaling.md#scaling-dual-chunk).

    .. math::

        q_{\text{succ}}^{\text{sparse}}(i) = i \bmod c + c, \qquad
        q_{\text{inter}}^{\text{sparse}}(i) = i \bmod c + S

    (vLLM's ``qc_no_clamp`` and ``q_inter`` tables of ``DualChunkRotaryEmbedding``): the
    successive-chunk query without the clamp at :math:`S`, and an inter-chunk query that moves
    with :math:`i` instead of sitting at one position. The backend uses them only to score the
    last queries of a chunk against the keys before it when it picks the keys its sparse
    attention keeps; the attention itself uses the three of :func:`dual_chunk_positions`.

    Returns
    -------
    tuple of torch.Tensor
        ``(successive, inter)``, ``torch.long``, of the shape of ``positions``.

    Examples
    --------
    >>> dual_chunk_sparse_positions(torch.tensor([0, 5, 6, 13]), chunk_size=8, local_size=2)
    (tensor([ 6, 11,  6,  7]), tensor([ 8, 13,  8,  9]))
    """
    chunk_size, local_size = _check_sizes(chunk_size, local_size)
    offset = _positions("positions", positions) % (chunk_size - local_size)
    return offset + (chunk_size - local_size), offset + chunk_size


def dual_chunk_distance(
    query_positions: torch.Tensor | int,
    key_positions: torch.Tensor | int,
    *,
    chunk_size: int,
    local_size: int,
) -> torch.Tensor:
    r"""The relative position DCA scores a query at :math:`i` and a key at :math:`j \le i` with.

    Derived on the site: [dual chunk attention](rope_scaling.md#scaling-dual-chunk).

    With :math:`\Delta = \lfloor i/c \rfloor - \lfloor j/c \rfloor` chunks between them,

    .. math::

        d(i, j) = \begin{cases}
            i - j & \Delta = 0 \\
            \min(i \bmod c + c,\ S) - j \bmod c & \Delta = 1 \\
            \min(2c - 1,\ S) - j \bmod c & \Delta \ge 2
        \end{cases}

    (the same chunk, the chunk before, further back; :math:`S` = ``chunk_size``,
    :math:`w` = ``local_size``, :math:`c = S - w`), so :math:`0 \le d \le S` however long the
    sequence, and :math:`d = i - j` for every pair with :math:`i - j \le w` when
    :math:`c \ge w`.

    Parameters
    ----------
    query_positions, key_positions
        Integer positions, broadcastable against each other, every key at or before its query
        (DCA is causal).
    chunk_size, local_size
        As for :func:`dual_chunk_positions`.

    Returns
    -------
    torch.Tensor
        The distances, ``torch.long``, of the broadcast shape.

    Examples
    --------
    >>> i = torch.tensor([5, 13, 13, 17, 13])
    >>> j = torch.tensor([1, 12, 7, 6, 1])
    >>> dual_chunk_distance(i, j, chunk_size=8, local_size=2).tolist()
    [4, 1, 6, 8, 7]
    """
    chunk_size, local_size = _check_sizes(chunk_size, local_size)
    i = _positions("query_positions", query_positions)
    j = _positions("key_positions", key_positions)
    try:
        i, j = torch.broadcast_tensors(i, j)
    except RuntimeError as error:
        raise ValueError(
            f"query_positions {tuple(i.shape)} and key_positions {tuple(j.shape)} do not "
            "broadcast against each other"
        ) from error
    if bool((j > i).any()):
        raise ValueError("every key position must be <= its query position (DCA is causal)")
    c = chunk_size - local_size
    chunks_between = i // c - j // c
    query = torch.where(
        chunks_between == 0,
        i % c,
        torch.where(
            chunks_between == 1,
            (i % c + c).clamp(max=chunk_size),
            torch.full_like(i, min(2 * c - 1, chunk_size)),
        ),
    )
    return query - j % c
