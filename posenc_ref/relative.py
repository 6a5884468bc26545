r"""Relative position schemes that add a bias to attention logits or index a small table.

- Shaw et al. (2018): relative distances clipped to :math:`[-K, K]` index a learned table.
- T5 (Raffel et al. 2020): distances fall into log-spaced buckets, one learned scalar per
  bucket and head.
- ALiBi (Press et al. 2022): a fixed linear penalty :math:`-\mu_h (m - p)` per head :math:`h`.
- KERPLE (Chi et al. 2022): learned kernels of the distance, :math:`-r_1 \log(1 + r_2 |m - p|)`
  or :math:`-r_1 |m - p|^{r_2}`, two scalars per head.
- FIRE (Li et al. 2024): a small learned MLP of the log-distance, normalised by the query's
  position, so its input stays in :math:`[0, 1]` at every length.

All of them use the relative position ``key - query``, :math:`p - m` for a query at position
:math:`m` and a key at position :math:`p` (negative for keys in the past).
"""

from __future__ import annotations

import math
from typing import NamedTuple

import torch

from ._checks import check_bool, check_int, check_positive_float
from ._tensor_checks import check_float_dtype, check_tensor, values_visible
from .device import check_device
from .values import alibi_slope_values, t5_bucket_sizes

__all__ = [
    "relative_positions",
    "shaw_relative_index",
    "t5_relative_bucket",
    "alibi_slopes",
    "alibi_bias",
    "kerple_log_bias",
    "kerple_power_bias",
    "FireWeights",
    "fire_bias",
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
    per_direction, max_exact, max_distance = t5_bucket_sizes(
        bidirectional, num_buckets, max_distance
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
    slopes = alibi_slope_values(num_heads)
    return torch.tensor(slopes, dtype=torch.float64, device=device).to(dtype)


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


def _check_head_params(name: str, value: object, *, maximum: float | None = None) -> torch.Tensor:
    """A 1-D float tensor of per-head parameters, every entry finite, > 0 (and <= maximum)."""
    value = check_tensor(name, value)
    if value.dim() != 1 or value.numel() == 0 or not value.is_floating_point():
        raise ValueError(
            f"{name} must be a non-empty 1-D floating tensor (one value per head), got shape "
            f"{tuple(value.shape)} and dtype {value.dtype}"
        )
    if not values_visible(value):  # meta tensors and compiled graphs: shapes only
        return value
    bad = ~torch.isfinite(value) | (value <= 0)
    if maximum is not None:
        bad |= value > maximum
    if bool(bad.any()):
        accepted = "(0, inf)" if maximum is None else f"(0, {maximum:g}]"
        raise ValueError(f"every entry of {name} must be in {accepted}, got {value.tolist()}")
    return value


def _distance_bias(
    bias_of_distance, num_heads: int, query_len: int, key_len: int, causal: bool, device, dtype
) -> torch.Tensor:
    """``bias_of_distance(|p - m|)`` per head, future keys ``-inf`` when ``causal``."""
    causal = check_bool("causal", causal)
    dtype = check_float_dtype("dtype", dtype)
    device = check_device(device)
    rel = relative_positions(query_len, key_len, device=device)  # (Lq, Lk), key - query
    distance = rel.abs().to(torch.float64)[None]  # (1, Lq, Lk)
    bias = bias_of_distance(distance)  # (H, Lq, Lk), float64
    if causal:
        bias = bias.masked_fill(rel > 0, float("-inf"))
    return bias.to(dtype).expand(num_heads, -1, -1).contiguous()


def _kerple_params(
    r1: object, r2: object, device: object, r2_maximum: float | None = None
) -> tuple[torch.Tensor, torch.Tensor, torch.device]:
    """KERPLE's two per-head parameters checked, as ``(heads, 1, 1)`` float64 on ``device``."""
    r1 = _check_head_params("r1", r1).to(torch.float64)
    r2 = _check_head_params("r2", r2, maximum=r2_maximum).to(torch.float64)
    if r1.shape != r2.shape:
        raise ValueError(
            f"r1 and r2 must have the same shape, got {tuple(r1.shape)} and {tuple(r2.shape)}"
        )
    device = check_device(device)
    return r1.to(device)[:, None, None], r2.to(device)[:, None, None], device


def kerple_log_bias(
    r1: torch.Tensor,
    r2: torch.Tensor,
    query_len: int,
    key_len: int,
    *,
    causal: bool = True,
    device: torch.device | str | None = None,
    dtype: torch.dtype = torch.float32,
) -> torch.Tensor:
    r"""KERPLE's logarithmic bias :math:`-r_1 \log(1 + r_2\,|m - p|)`, per head.

    Derived on the site: [KERPLE](relative.md#relative-kerple).

    Added to the scaled attention logits, like ALiBi's bias. Both parameters are learned and
    positive per head (the reference code clamps them to at least 0.01 after each step); here
    they are given as fixed values. The bias falls like a logarithm, so it keeps separating far
    distances where a linear penalty would have pushed them all to :math:`-\infty`.

    Parameters
    ----------
    r1, r2
        ``(heads,)`` floating tensors, every entry finite and > 0 (the reference code names them
        ``bias_p`` and ``bias_a``).
    query_len, key_len
        Sequence lengths, ``0 <= query_len <= key_len``; queries are the last ``query_len``
        positions (see :func:`relative_positions`).
    causal
        ``True``: keys after the query get ``-inf``. ``False``: the bias of :math:`|m - p|`
        everywhere.
    device, dtype
        Where (the CPU when ``None``) and in which floating dtype to return the bias (computed in
        float64).

    Returns
    -------
    torch.Tensor
        ``(heads, query_len, key_len)``.
    """
    r1, r2, device = _kerple_params(r1, r2, device)
    return _distance_bias(
        lambda k: -r1 * torch.log1p(r2 * k), r1.shape[0], query_len, key_len, causal, device, dtype
    )


def kerple_power_bias(
    r1: torch.Tensor,
    r2: torch.Tensor,
    query_len: int,
    key_len: int,
    *,
    causal: bool = True,
    device: torch.device | str | None = None,
    dtype: torch.dtype = torch.float32,
) -> torch.Tensor:
    r"""KERPLE's power bias :math:`-r_1 |m - p|^{r_2}`, per head, with :math:`0 < r_2 \le 2`.

    Derived on the site: [KERPLE](relative.md#relative-kerple).

    :math:`r_2 = 1` with :math:`r_1` the ALiBi slopes is exactly ALiBi (:func:`alibi_bias`);
    the paper's kernel needs :math:`r_2 \le 2` to be conditionally positive definite, and the
    reference code clamps :math:`r_2` to :math:`[0.01, 2]`.

    Parameters
    ----------
    r1, r2
        ``(heads,)`` floating tensors; :math:`r_1 > 0`, :math:`0 < r_2 \le 2` (the reference
        code names them ``bias_a`` and ``bias_p``).
    query_len, key_len, causal, device, dtype
        As in :func:`kerple_log_bias`.

    Returns
    -------
    torch.Tensor
        ``(heads, query_len, key_len)``.
    """
    r1, r2, device = _kerple_params(r1, r2, device, r2_maximum=2.0)
    return _distance_bias(
        lambda k: -r1 * k.pow(r2), r1.shape[0], query_len, key_len, causal, device, dtype
    )


class FireWeights(NamedTuple):
    r"""The learned parameters of one FIRE layer, given as fixed values.

    The MLP is :math:`f(x) = W_2\,\mathrm{ReLU}(W_1 x + b_1) + b_2`, one output per head, in the
    shapes of ``torch.nn.Linear(1, width)`` and ``torch.nn.Linear(width, heads)``, so a trained
    module's tensors can be passed as they are.

    Attributes
    ----------
    w1 : torch.Tensor
        ``(width, 1)``.
    b1 : torch.Tensor
        ``(width,)``.
    w2 : torch.Tensor
        ``(heads, width)``.
    b2 : torch.Tensor
        ``(heads,)``.
    c : float
        The log transform's scale :math:`c > 0` (initialised to 0.1 in the paper's code).
    threshold : float
        :math:`L > 0`, the query position up to which the normaliser is constant (the paper's
        code learns it as a multiplier of an initial 512).
    """

    w1: torch.Tensor
    b1: torch.Tensor
    w2: torch.Tensor
    b2: torch.Tensor
    c: float = 0.1
    threshold: float = 512.0


def _check_fire(weights: object) -> FireWeights:
    if not isinstance(weights, FireWeights):
        raise TypeError(f"weights must be a FireWeights, got {type(weights).__name__}")
    w1, b1, w2, b2 = (check_tensor(n, getattr(weights, n)) for n in ("w1", "b1", "w2", "b2"))
    width = w1.shape[0] if w1.dim() == 2 else -1
    heads = w2.shape[0] if w2.dim() == 2 else -1
    expected = {"w1": (width, 1), "b1": (width,), "w2": (heads, width), "b2": (heads,)}
    for name, tensor in zip(("w1", "b1", "w2", "b2"), (w1, b1, w2, b2), strict=True):
        if width < 1 or heads < 1 or tuple(tensor.shape) != expected[name]:
            raise ValueError(
                "FireWeights must have shapes w1 (width, 1), b1 (width,), w2 (heads, width), "
                "b2 (heads,) (those of nn.Linear), got "
                f"{[tuple(t.shape) for t in (w1, b1, w2, b2)]}"
            )
        if not tensor.is_floating_point():
            raise TypeError(f"FireWeights.{name} must be a floating tensor, got {tensor.dtype}")
    c = check_positive_float("FireWeights.c", weights.c)
    threshold = check_positive_float("FireWeights.threshold", weights.threshold)
    return FireWeights(w1, b1, w2, b2, c, threshold)


def fire_bias(
    weights: FireWeights,
    query_len: int,
    key_len: int,
    *,
    eps: float = 1e-6,
    causal: bool = True,
    device: torch.device | str | None = None,
    dtype: torch.dtype = torch.float32,
) -> torch.Tensor:
    r"""FIRE's bias :math:`f\big(\psi(m - p) / \psi(\max(L, m))\big)`, one value per head.

    Derived on the site: [FIRE](relative.md#relative-fire).

    .. math::

        \psi(x) = \log(c\,x + 1), \qquad
        b_h(m, p) = f_h\!\left(\frac{\psi(m - p)}{\psi(\max(L, m)) + \varepsilon}\right)

    for a query at :math:`m` and a key at :math:`p \le m`, with :math:`f` the MLP of
    ``weights``, :math:`c` and the threshold :math:`L` from ``weights``, and :math:`\varepsilon`
    = ``eps`` (as in the paper's code). The MLP's input lies in :math:`[0, 1)` at every length
    ("progressive interpolation"); for queries :math:`m < L` the normaliser is the constant
    :math:`\psi(L)`, so there the bias depends on :math:`m - p` only.

    Parameters
    ----------
    weights
        The MLP, :math:`c` and :math:`L` (:class:`FireWeights`).
    query_len, key_len
        Sequence lengths, ``0 <= query_len <= key_len``; queries are the last ``query_len`` of
        the ``key_len`` positions (a key/value cache), so query ``i`` is at position
        ``key_len - query_len + i``.
    eps
        :math:`\varepsilon > 0`.
    causal
        ``True``: keys after the query get ``-inf``. ``False``: :math:`|m - p|` in the numerator
        everywhere (the reference code's ``abs``).
    device, dtype
        Where (the CPU when ``None``) and in which floating dtype to return the bias (computed in
        float64).

    Returns
    -------
    torch.Tensor
        ``(heads, query_len, key_len)``.
    """
    weights = _check_fire(weights)
    eps = check_positive_float("eps", eps)
    causal = check_bool("causal", causal)
    dtype = check_float_dtype("dtype", dtype)
    device = check_device(device)
    rel = relative_positions(query_len, key_len, device=device)  # (Lq, Lk), key - query
    query_pos = torch.arange(key_len - query_len, key_len, device=device, dtype=torch.float64)
    c, threshold = weights.c, weights.threshold
    numerator = torch.log1p(c * rel.abs().to(torch.float64))  # psi(|m - p|), (Lq, Lk)
    normaliser = torch.log1p(c * query_pos.clamp(min=threshold)) + eps  # psi(max(L, m)), (Lq,)
    x = (numerator / normaliser[:, None]).unsqueeze(-1)  # (Lq, Lk, 1), in [0, 1)
    w1, b1, w2, b2 = (t.to(device, torch.float64) for t in weights[:4])
    hidden = torch.relu(x @ w1.T + b1)  # (Lq, Lk, width)
    bias = (hidden @ w2.T + b2).permute(2, 0, 1)  # (H, Lq, Lk)
    if causal:
        bias = bias.masked_fill(rel > 0, float("-inf"))
    return bias.to(dtype)


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
