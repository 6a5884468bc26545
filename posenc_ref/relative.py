r"""Relative position schemes that add a bias to attention logits or index a small table.

- Shaw et al. (2018): relative distances clipped to :math:`[-K, K]` index a learned table.
- T5 (Raffel et al. 2020): distances fall into log-spaced buckets, one learned scalar per
  bucket and head.
- ALiBi (Press et al. 2022): a fixed linear penalty :math:`-\mu_h (m - p)` per head :math:`h`.

All of them use the relative position ``key - query``, :math:`p - m` for a query at position
:math:`m` and a key at position :math:`p` (negative for keys in the past).
"""

from __future__ import annotations

import math

import torch

from ._checks import check_bool, check_float_dtype, check_int, check_tensor
from .device import check_device

__all__ = [
    "relative_positions",
    "shaw_relative_index",
    "t5_relative_bucket",
    "alibi_slopes",
    "alibi_bias",
]


def relative_positions(
    query_len: int, key_len: int, *, device: torch.device | str | None = None
) -> torch.Tensor:
    """Matrix of relative positions ``key - query`` for self-attention with a key/value cache.

    Explained on the site: [relative positions](relative.md#relative-positions) and
    [the key/value cache](relative.md#relative-kv-cache).

    Queries are the last ``query_len`` of the ``key_len`` positions (the usual layout when new
    tokens attend to a cache): query ``i`` sits at position ``key_len - query_len + i``.

    Parameters
    ----------
    query_len
        Number of queries, ``>= 0`` and ``<= key_len``.
    key_len
        Number of keys, ``>= 0``.

    Returns
    -------
    torch.Tensor
        Shape ``(query_len, key_len)``, int64; entry ``[i, j]`` is
        ``j - (key_len - query_len + i)``.
    """
    query_len = check_int("query_len", query_len)
    key_len = check_int("key_len", key_len)
    if query_len > key_len:
        raise ValueError(
            f"query_len must be <= key_len (queries are the last query_len of key_len "
            f"positions), got query_len={query_len}, key_len={key_len}"
        )
    device = check_device(device)
    queries = torch.arange(key_len - query_len, key_len, device=device)[:, None]  # (Lq, 1)
    keys = torch.arange(key_len, device=device)[None, :]  # (1, Lk)
    return keys - queries


def shaw_relative_index(
    relative_position: torch.Tensor, max_relative_position: int
) -> torch.Tensor:
    r"""Clip relative positions to :math:`[-K, K]` and shift them to table rows :math:`0..2K`.

    Explained on the site: [Shaw et al.](relative.md#relative-shaw).

    Shaw et al. learn one vector per clipped distance; this is the index into that
    ``(2K + 1, head_dim)`` table. Distances beyond :math:`K` share the edge rows.

    Parameters
    ----------
    relative_position
        Signed integer tensor of ``key - query`` distances, any shape.
    max_relative_position
        :math:`K \ge 1`.

    Returns
    -------
    torch.Tensor
        Same shape, int64, values in ``[0, 2K]``.
    """
    relative_position = _check_int_tensor("relative_position", relative_position)
    k = check_int("max_relative_position", max_relative_position, minimum=1)
    return relative_position.clamp(-k, k).to(torch.int64) + k


def t5_relative_bucket(
    relative_position: torch.Tensor,
    *,
    bidirectional: bool = True,
    num_buckets: int = 32,
    max_distance: int = 128,
) -> torch.Tensor:
    r"""T5's bucket index for each relative position ``key - query``.

    Derived on the site: [T5 buckets](relative.md#relative-t5).

    Half of the buckets (per direction when ``bidirectional``) hold the exact distances
    :math:`0 .. e-1` with :math:`e = N/2`; larger distances :math:`k = |p - m|` go to bucket

    .. math::

        \min\!\left(N - 1,\; e + \left\lfloor \frac{\ln(k/e)}{\ln(D/e)}\,(N - e) \right\rfloor
        \right),

    with :math:`N` the buckets per direction (``num_buckets``, halved when ``bidirectional``)
    and :math:`D` = ``max_distance``. The floor reaches the last bucket :math:`N - 1` from
    :math:`k = e\,(D/e)^{(N-e-1)/(N-e)}` on (91 with T5's defaults), well before
    ``max_distance``, where the formula would give :math:`N` and the cap takes over.
    Bidirectional (encoder): keys after the query get the upper half of the buckets. Causal
    (decoder, ``bidirectional=False``): only the past is distinguished; future keys share bucket
    0 with distance 0 (they are masked anyway).

    The logarithm is evaluated in float32, as in the Mesh TensorFlow original and HF
    transformers, so that bucket edges match the published checkpoints bit for bit.

    Parameters
    ----------
    relative_position
        Signed integer tensor of ``key - query`` distances, any shape.
    bidirectional
        Encoder-style (both directions) or decoder-style (past only).
    num_buckets
        Total number of buckets (:math:`2N` when bidirectional, :math:`N` otherwise); even and
        ``>= 4`` when bidirectional, ``>= 2`` otherwise.
    max_distance
        :math:`D`, the distance at which the log formula reaches :math:`N` (the last bucket
        starts before it, see above); larger than the number of exact buckets.

    Returns
    -------
    torch.Tensor
        Same shape, int64, values in ``[0, num_buckets - 1]``.
    """
    relative_position = _check_int_tensor("relative_position", relative_position).to(torch.int64)
    bidirectional = check_bool("bidirectional", bidirectional)
    num_buckets = check_int("num_buckets", num_buckets, minimum=4 if bidirectional else 2)
    if bidirectional and num_buckets % 2:
        raise ValueError(f"num_buckets must be even when bidirectional, got {num_buckets}")
    per_direction = num_buckets // 2 if bidirectional else num_buckets
    max_exact = per_direction // 2
    max_distance = check_int("max_distance", max_distance, minimum=1)
    if max_distance <= max_exact:
        raise ValueError(
            f"max_distance must be > {max_exact} (the number of exact buckets), got {max_distance}"
        )

    buckets = torch.zeros_like(relative_position)
    if bidirectional:
        buckets += (relative_position > 0).to(torch.int64) * per_direction  # future half
        distance = relative_position.abs()
    else:
        distance = (-relative_position).clamp(min=0)  # the future collapses to distance 0
    # Guard the log against distance 0; those entries take the exact branch anyway.
    scaled = torch.log(distance.clamp(min=1).float() / max_exact) / math.log(
        max_distance / max_exact
    )
    large = max_exact + (scaled * (per_direction - max_exact)).to(torch.int64)
    large = large.clamp(max=per_direction - 1)
    return buckets + torch.where(distance < max_exact, distance, large)


def alibi_slopes(
    num_heads: int,
    *,
    device: torch.device | str | None = None,
    dtype: torch.dtype = torch.float32,
) -> torch.Tensor:
    r"""ALiBi's per-head slopes :math:`\mu_h`, including head counts that are not powers of two.

    Explained on the site: [ALiBi](relative.md#relative-alibi).

    For :math:`H` heads, :math:`H` a power of two, :math:`\mu_h = 2^{-8(h+1)/H}` for
    :math:`h = 0 .. H-1` (the ALiBi paper writes the slope :math:`m` and counts heads from 1).
    Otherwise, with :math:`c = 2^{\lfloor \log_2 H \rfloor}`: the :math:`c` slopes for :math:`c`
    heads, followed by the first :math:`H - c` of every other slope (the 1st, 3rd, 5th, ...) of
    the :math:`2c`-head set. That sequence is not monotone (the extra slopes restart near the
    top); using :math:`2^{-8(h+1)/H}` for any :math:`H` is a different, wrong, set.

    Parameters
    ----------
    num_heads
        Number of attention heads, ``>= 1``.
    device, dtype
        Where (the CPU when ``None``) and in which floating dtype to return the slopes
        (computed in float64).

    Returns
    -------
    torch.Tensor
        Shape ``(num_heads,)``.

    Examples
    --------
    >>> alibi_slopes(8)
    tensor([0.5000, 0.2500, 0.1250, 0.0625, 0.0312, 0.0156, 0.0078, 0.0039])
    """
    num_heads = check_int("num_heads", num_heads, minimum=1)
    dtype = check_float_dtype("dtype", dtype)
    device = check_device(device)
    closest = 2 ** int(math.floor(math.log2(num_heads)))
    slopes = _power_of_two_slopes(closest)
    if closest < num_heads:
        slopes += _power_of_two_slopes(2 * closest)[0::2][: num_heads - closest]
    return torch.tensor(slopes, dtype=torch.float64, device=device).to(dtype)


def _power_of_two_slopes(n: int) -> list[float]:
    # 2^(-8h/n) = (2^(-8/n))^h: a geometric sequence starting at, and with ratio, 2^(-8/n).
    return [2.0 ** (-8.0 * h / n) for h in range(1, n + 1)]


def alibi_bias(
    num_heads: int,
    query_len: int,
    key_len: int,
    *,
    causal: bool = True,
    device: torch.device | str | None = None,
    dtype: torch.dtype = torch.float32,
) -> torch.Tensor:
    r"""ALiBi's additive attention bias :math:`-\mu_h\,(m - p)` (query at ``m``, key at ``p``).

    Explained on the site: [ALiBi](relative.md#relative-alibi) and
    [the key/value cache](relative.md#relative-kv-cache).

    Queries are the last ``query_len`` of the ``key_len`` positions (see
    :func:`relative_positions`), so the same function serves a full prompt and one new token
    attending to a key/value cache: nothing in the past is re-encoded.

    Parameters
    ----------
    num_heads
        Number of heads, ``>= 1`` (slopes from :func:`alibi_slopes`).
    query_len, key_len
        Sequence lengths, ``0 <= query_len <= key_len``.
    causal
        ``True`` (the paper's language-model setting): keys after the query get ``-inf``, so the
        result is the bias and the causal mask in one tensor, ready to add to the logits.
        ``False``: the symmetric form :math:`-\mu_h\,|p - m|` used by bidirectional variants.
    device, dtype
        Where (the CPU when ``None``) and in which floating dtype to return the bias.

    Returns
    -------
    torch.Tensor
        Shape ``(num_heads, query_len, key_len)``.
    """
    causal = check_bool("causal", causal)
    device = check_device(device)
    slopes = alibi_slopes(num_heads, device=device, dtype=torch.float64)
    rel = relative_positions(query_len, key_len, device=device)  # (Lq, Lk), key - query
    # -|i - j| in integers, so that the diagonal is +0.0 rather than -0.0 after scaling.
    bias = slopes[:, None, None] * (-rel.abs()).to(torch.float64)  # (H, Lq, Lk)
    if causal:
        bias = bias.masked_fill(rel > 0, float("-inf"))
    return bias.to(check_float_dtype("dtype", dtype))


def _check_int_tensor(name: str, value: object) -> torch.Tensor:
    value = check_tensor(name, value)
    if value.is_floating_point() or value.is_complex() or value.dtype == torch.bool:
        raise TypeError(f"{name} must be an integer tensor, got dtype {value.dtype}")
    if not value.dtype.is_signed:
        # key - query is negative for every key in the past: an unsigned tensor has already
        # wrapped those around (-1 is 255 in uint8), and clamping would silently go wrong.
        raise TypeError(
            f"{name} must be a signed integer tensor (key - query is negative for keys in the "
            f"past), got dtype {value.dtype}"
        )
    return value
