r"""Relative terms that meet the content: Transformer-XL, DeBERTa and CoPE.

Shaw's, T5's and ALiBi's terms (:mod:`posenc_ref.relative`) depend on the distance alone, or on
the query and the distance. The schemes here let position and content meet in more ways:

- Transformer-XL (Dai et al., 2019): four terms, content-content, content-position and two
  global biases :math:`u, v`, with sinusoidal relative vectors and no absolute positions
  (:func:`transformer_xl_scores`; the "relative shift" people use, :func:`rel_shift`).
- DeBERTa (He et al., 2021): disentangled content-to-position and position-to-content terms
  from one table of clipped relative positions (:func:`deberta_relative_index`,
  :func:`deberta_scores`; v2's log buckets, :func:`deberta_log_bucket`).
- CoPE (Golovneva et al., 2024): positions counted by gates that depend on the content
  (:func:`cope_positions`), interpolated into a table of position vectors (:func:`cope_bias`).

Shapes: ``query`` is ``(..., query_len, dim)`` and ``key`` ``(..., key_len, dim)``, with any
matching leading dimensions (``(batch, heads)``); scores are ``(..., query_len, key_len)``.
Queries are the last ``query_len`` of the ``key_len`` positions, as with a key/value cache (see
:func:`posenc_ref.relative.relative_positions`).

Derived on the site: [Transformer-XL](relative.md#relative-transformer-xl),
[DeBERTa](relative.md#relative-deberta) and [CoPE](relative.md#relative-cope).
"""

from __future__ import annotations

import math

import torch

from ._checks import broadcast_shape, check_bool, check_int
from ._tensor_checks import check_tensor
from .relative import relative_positions

__all__ = [
    "rel_shift",
    "transformer_xl_scores",
    "deberta_relative_index",
    "deberta_log_bucket",
    "deberta_scores",
    "cope_positions",
    "cope_bias",
]


def _check_qk(query: object, key: object) -> tuple[torch.Tensor, torch.Tensor]:
    query = check_tensor("query", query)
    key = check_tensor("key", key)
    for name, t in (("query", query), ("key", key)):
        if t.dim() < 2 or not t.is_floating_point():
            raise ValueError(
                f"{name} must be a floating tensor of shape (..., seq_len, dim), got shape "
                f"{tuple(t.shape)} and dtype {t.dtype}"
            )
    if query.shape[-1] != key.shape[-1] or query.shape[:-2] != key.shape[:-2]:
        raise ValueError(
            f"query {tuple(query.shape)} and key {tuple(key.shape)} must share their leading "
            "dimensions and their last (dim)"
        )
    if query.shape[-2] > key.shape[-2]:
        raise ValueError(
            f"query_len must be <= key_len (queries are the last query_len positions), got "
            f"{query.shape[-2]} and {key.shape[-2]}"
        )
    return query, key


def _check_vectors(name: str, value: object, rows: int, like: torch.Tensor) -> torch.Tensor:
    """A ``(..., rows, dim)`` table whose leading dimensions broadcast to ``like``'s."""
    value = check_tensor(name, value)
    dim = like.shape[-1]
    if value.dim() < 2 or value.shape[-2] != rows or value.shape[-1] != dim:
        raise ValueError(f"{name} must have shape (..., {rows}, {dim}), got {tuple(value.shape)}")
    if broadcast_shape(tuple(value.shape[:-2]), tuple(like.shape[:-2])) is None:
        raise ValueError(
            f"{name}'s leading dimensions {tuple(value.shape[:-2])} do not broadcast to "
            f"{tuple(like.shape[:-2])}"
        )
    return value


# --------------------------------------------------------------------------- Transformer-XL


def rel_shift(x: torch.Tensor) -> torch.Tensor:
    r"""Transformer-XL's relative shift: turn scores against distances into scores against keys.

    Derived on the site: [the relative shift](relative.md#relative-transformer-xl).

    ``x[..., i, r]`` is query ``i``'s score against the relative vector of row ``r``, where the
    rows hold distances ``key_len - 1, ..., 1, 0`` (the reference code's order). The result's
    ``[..., i, j]`` is the score at distance :math:`m_i - j` for every key :math:`j \le m_i`
    (query ``i`` at position :math:`m_i = \text{key\_len} - \text{query\_len} + i`). Entries
    above that diagonal are left-overs of the trick, not scores: mask them. It costs one pad and
    two reshapes instead of a gather.

    Parameters
    ----------
    x
        ``(..., query_len, key_len)``.

    Returns
    -------
    torch.Tensor
        Same shape.
    """
    x = check_tensor("x", x)
    if x.dim() < 2:
        raise ValueError(f"x must have shape (..., query_len, key_len), got {tuple(x.shape)}")
    *lead, q_len, k_len = x.shape
    padded = torch.nn.functional.pad(x, (1, 0))  # (..., Lq, Lk + 1): a zero column in front
    # Read the same memory as (Lk + 1) rows of Lq: row i of the result starts one entry later
    # than row i - 1 did, which turns "distance r" into "key j = m_i - r".
    shifted = padded.reshape(*lead, k_len + 1, q_len)[..., 1:, :]
    return shifted.reshape(*lead, q_len, k_len)


def transformer_xl_scores(
    query: torch.Tensor,
    key: torch.Tensor,
    pos_key: torch.Tensor,
    u: torch.Tensor,
    v: torch.Tensor,
) -> torch.Tensor:
    r"""Transformer-XL's attention logits: four terms, scaled by :math:`1/\sqrt{d}`, causal.

    Derived on the site: [Transformer-XL](relative.md#relative-transformer-xl).

    .. math::

        A_{ij} = \frac{1}{\sqrt d}\Big(
            \underbrace{q_i^\top k_j}_{(a)} + \underbrace{q_i^\top r_{m_i - j}}_{(b)}
          + \underbrace{u^\top k_j}_{(c)} + \underbrace{v^\top r_{m_i - j}}_{(d)} \Big)

    for keys :math:`j \le m_i` (later keys get ``-inf``), with :math:`q_i = W_q x_{m_i}`,
    :math:`k_j = W_{k,E}\,x_j`, :math:`r_t = W_{k,R}\,R_t` the projected sinusoid of distance
    :math:`t`, and the learned global vectors :math:`u` (content bias) and :math:`v` (position
    bias). Computed here by indexing each query's row of distances directly; the reference code
    gets the same values with :func:`rel_shift`.

    Parameters
    ----------
    query
        ``(..., query_len, d)``: :math:`q_i`.
    key
        ``(..., key_len, d)``: :math:`k_j`.
    pos_key
        ``(..., key_len, d)``: row :math:`t` is :math:`r_t`, distance :math:`t = 0 ..
        \text{key\_len} - 1` (e.g. a linear map of :func:`posenc_ref.sinusoidal` rows; the
        reference code concatenates the sines and the cosines, a permutation that
        :math:`W_{k,R}` absorbs). Leading dimensions broadcast (``(heads, 1, key_len, d)``).
    u, v
        ``(..., d)``, broadcasting against the leading dimensions (``(heads, 1, d)`` for
        ``(batch, heads, seq_len, d)`` inputs: one vector per head, shared by all positions).

    Returns
    -------
    torch.Tensor
        ``(..., query_len, key_len)``, in the inputs' dtype.
    """
    query, key = _check_qk(query, key)
    q_len, k_len, dim = query.shape[-2], key.shape[-2], key.shape[-1]
    pos_key = _check_vectors("pos_key", pos_key, k_len, key)
    for name, bias in (("u", u), ("v", v)):
        bias = check_tensor(name, bias)
        if bias.dim() < 1 or bias.shape[-1] != dim:
            raise ValueError(f"{name} must have shape (..., {dim}), got {tuple(bias.shape)}")
    rel = relative_positions(q_len, k_len, device=query.device)  # (Lq, Lk), key - query
    distance = (-rel).clamp(min=0)  # m_i - j, and 0 where masked anyway
    u, v = u.unsqueeze(-2), v.unsqueeze(-2)  # (..., 1, d)
    content = (query + u) @ key.transpose(-1, -2)  # (a) + (c): (..., Lq, Lk)
    against_distance = (query + v) @ pos_key.transpose(-1, -2)  # (..., Lq, t): (b) + (d)
    against_distance = against_distance.expand(*content.shape[:-1], k_len)
    position = against_distance.gather(-1, distance.expand_as(content))  # pick t = m_i - j
    scores = (content + position) / math.sqrt(dim)
    return scores.masked_fill(rel > 0, float("-inf"))


# --------------------------------------------------------------------------- DeBERTa


def deberta_relative_index(
    relative_position: torch.Tensor, max_relative_positions: int
) -> torch.Tensor:
    r"""DeBERTa's :math:`\delta`: the row of the relative table for query minus key, clipped.

    Derived on the site: [DeBERTa](relative.md#relative-deberta).

    With :math:`k` = ``max_relative_positions`` and :math:`i - j` the query minus the key
    position (the paper's convention; this function takes the package's ``key - query``),

    .. math::

        \delta(i, j) = \begin{cases} 0 & i - j \le -k \\ 2k - 1 & i - j \ge k \\
        i - j + k & \text{otherwise,} \end{cases}

    rows :math:`0 .. 2k - 1` of a table of :math:`2k` relative vectors.

    Parameters
    ----------
    relative_position
        Signed integer tensor of ``key - query`` distances, any shape.
    max_relative_positions
        :math:`k \ge 1`.

    Returns
    -------
    torch.Tensor
        Same shape, int64, values in ``[0, 2k - 1]``.
    """
    from .relative import _check_int_tensor

    relative_position = _check_int_tensor("relative_position", relative_position)
    k = check_int("max_relative_positions", max_relative_positions, minimum=1)
    return (-relative_position.to(torch.int64) + k).clamp(0, 2 * k - 1)


def deberta_log_bucket(
    relative_position: torch.Tensor, bucket_size: int, max_position: int
) -> torch.Tensor:
    r"""DeBERTa-v2's log buckets: exact offsets near 0, log-spaced ones beyond.

    Derived on the site: [DeBERTa](relative.md#relative-deberta).

    With :math:`b` = ``bucket_size``, :math:`h = \lfloor b/2 \rfloor` and :math:`M` =
    ``max_position``, an offset :math:`t` (query minus key) with :math:`|t| \le h` stays as it is,
    and a larger one becomes

    .. math::

        \operatorname{sign}(t)\left(h + \left\lceil \frac{\ln(|t|/h)}{\ln((M - 1)/h)}\,(h - 1)
        \right\rceil\right),

    which reaches :math:`\pm(2h - 1)` at :math:`|t| = M - 1`. The result then goes through
    :func:`deberta_relative_index` with :math:`k = b` (a table of :math:`2b` rows; v2 and v3
    configs: ``position_buckets`` :math:`b = 256`, ``max_relative_positions`` :math:`M = 512`).
    Evaluated in float32 like the reference code, whose ``ceil`` sits on float32 logarithms.

    Parameters
    ----------
    relative_position
        Signed integer tensor of ``key - query`` distances, any shape.
    bucket_size
        :math:`b \ge 4`.
    max_position
        :math:`M`, larger than :math:`h + 1`.

    Returns
    -------
    torch.Tensor
        Same shape, int64: query-minus-key offsets, bucketed (the sign of
        :func:`deberta_relative_index`'s convention).
    """
    from .relative import _check_int_tensor

    relative_position = _check_int_tensor("relative_position", relative_position)
    bucket_size = check_int("bucket_size", bucket_size, minimum=4)
    mid = bucket_size // 2
    max_position = check_int("max_position", max_position, minimum=mid + 2)
    offset = -relative_position.to(torch.int64)  # query - key, DeBERTa's sign
    far = offset.abs().clamp(min=mid).float()  # the log branch only sees |t| >= h
    span = torch.log(torch.tensor((max_position - 1) / mid, dtype=torch.float32))
    log_pos = torch.ceil(torch.log(far / mid) / span.to(far.device) * (mid - 1))
    bucket = (log_pos + mid).to(torch.int64) * offset.sign()
    return torch.where(offset.abs() <= mid, offset, bucket)


def deberta_scores(
    query: torch.Tensor,
    key: torch.Tensor,
    pos_query: torch.Tensor,
    pos_key: torch.Tensor,
    max_relative_positions: int,
    *,
    relative_position: torch.Tensor | None = None,
) -> torch.Tensor:
    r"""DeBERTa's disentangled attention logits: content, content-to-position, position-to-content.

    Derived on the site: [DeBERTa](relative.md#relative-deberta).

    .. math::

        A_{ij} = \frac{1}{\sqrt{3d}}\Big(
            \underbrace{Q^c_i \cdot K^c_j}_{\text{c2c}}
          + \underbrace{Q^c_i \cdot K^r_{\delta(i, j)}}_{\text{c2p}}
          + \underbrace{K^c_j \cdot Q^r_{\delta(i, j)}}_{\text{p2c}} \Big)

    with :math:`K^r = P W_{k,r}` and :math:`Q^r = P W_{q,r}` projections of one shared table
    :math:`P` of :math:`2k` relative vectors and :math:`\delta` from
    :func:`deberta_relative_index`. The :math:`\sqrt{3d}` accounts for the three terms. No
    mask is applied (DeBERTa is an encoder: every query sees every key).

    The paper writes the position-to-content term with :math:`\delta(j, i)`; the code the
    checkpoints were trained with (microsoft/DeBERTa, and HF transformers) indexes it with
    :math:`\delta(i, j)`, like the content-to-position term. This function follows the code,
    checked against HF's ``DisentangledSelfAttention``.

    Parameters
    ----------
    query, key
        ``(..., query_len, d)`` and ``(..., key_len, d)``: :math:`Q^c` and :math:`K^c` (with
        their biases).
    pos_query, pos_key
        ``(..., 2k, d)``: :math:`Q^r` and :math:`K^r`, row :math:`r` for :math:`\delta = r`.
    max_relative_positions
        :math:`k \ge 1`.
    relative_position
        Optional ``(query_len, key_len)`` ``key - query`` offsets to use instead of the plain
        ones (for example :func:`deberta_log_bucket` values, negated back to ``key - query``).

    Returns
    -------
    torch.Tensor
        ``(..., query_len, key_len)``.
    """
    query, key = _check_qk(query, key)
    k = check_int("max_relative_positions", max_relative_positions, minimum=1)
    pos_query = _check_vectors("pos_query", pos_query, 2 * k, query)
    pos_key = _check_vectors("pos_key", pos_key, 2 * k, key)
    q_len, k_len = query.shape[-2], key.shape[-2]
    if relative_position is None:
        relative_position = relative_positions(q_len, k_len, device=query.device)
    elif tuple(relative_position.shape) != (q_len, k_len):
        raise ValueError(
            f"relative_position must have shape ({q_len}, {k_len}), got "
            f"{tuple(relative_position.shape)}"
        )
    row = deberta_relative_index(relative_position, k)  # delta(i, j): (Lq, Lk)
    content = query @ key.transpose(-1, -2)  # (..., Lq, Lk)
    c2p = (query @ pos_key.transpose(-1, -2)).expand(*content.shape[:-1], 2 * k)
    c2p = c2p.gather(-1, row.expand_as(content))  # Q^c_i . K^r_delta(i,j)
    p2c = (pos_query @ key.transpose(-1, -2)).expand(*content.shape[:-2], 2 * k, k_len)
    p2c = p2c.gather(-2, row.expand_as(content))  # Q^r_delta(i,j) . K^c_j
    return (content + c2p + p2c) / math.sqrt(3 * query.shape[-1])


# --------------------------------------------------------------------------- CoPE


def cope_positions(gate_logits: torch.Tensor, *, causal: bool = True) -> torch.Tensor:
    r"""CoPE's contextual positions: how many keys from :math:`j` to :math:`i` open their gate.

    Derived on the site: [CoPE](relative.md#relative-cope).

    .. math::

        g_{ij} = \sigma(z_{ij}), \qquad p_{ij} = \sum_{t = j}^{i} g_{it}

    for the gate logits :math:`z_{ij}` (in the paper, the query-key logits :math:`q_i^\top
    k_j`, scaled as the attention's). The key itself counts (:math:`p_{ii} = g_{ii}`); with
    every gate open (:math:`g = 1`), :math:`p_{ij} = i - j + 1`, a token count. With the causal
    mask, gates of later keys are 0 and their positions are 0 too.

    Parameters
    ----------
    gate_logits
        ``(..., query_len, key_len)`` floating tensor; queries are the last ``query_len``
        positions.
    causal
        Whether keys after the query are masked (their gate is 0).

    Returns
    -------
    torch.Tensor
        Same shape and dtype, :math:`p_{ij} \ge 0`, non-increasing in :math:`j`.
    """
    gate_logits = check_tensor("gate_logits", gate_logits)
    causal = check_bool("causal", causal)
    if gate_logits.dim() < 2 or not gate_logits.is_floating_point():
        raise ValueError(
            f"gate_logits must be a floating tensor of shape (..., query_len, key_len), got "
            f"shape {tuple(gate_logits.shape)} and dtype {gate_logits.dtype}"
        )
    gates = torch.sigmoid(gate_logits)
    if causal:
        q_len, k_len = gate_logits.shape[-2:]
        if q_len > k_len:
            raise ValueError(f"query_len must be <= key_len, got {q_len} and {k_len}")
        future = relative_positions(q_len, k_len, device=gates.device) > 0
        gates = gates.masked_fill(future, 0.0)
    # Sum from key j to the end of the row: a cumulative sum of the row read backwards.
    return gates.flip(-1).cumsum(-1).flip(-1)


def cope_bias(query: torch.Tensor, positions: torch.Tensor, pos_emb: torch.Tensor) -> torch.Tensor:
    r"""CoPE's logit term :math:`q_i^\top e[p_{ij}]`, with :math:`e` interpolated between integers.

    Derived on the site: [CoPE](relative.md#relative-cope).

    .. math::

        e[p] = (p - \lfloor p \rfloor)\, e[\lceil p \rceil]
             + (1 - p + \lfloor p \rfloor)\, e[\lfloor p \rfloor]

    for a table :math:`e[0], \dots, e[P - 1]` of learned vectors; positions past :math:`P - 1`
    are clamped to it. Computed as the paper does: the products :math:`q_i^\top e[n]` for the
    :math:`P` integers first, then interpolated, which gives the same numbers as interpolating
    the vectors (the product is linear). Add the result to the attention logits.

    Parameters
    ----------
    query
        ``(..., query_len, d)``.
    positions
        ``(..., query_len, key_len)`` from :func:`cope_positions`, ``>= 0``.
    pos_emb
        ``(d, P)``: column :math:`n` is :math:`e[n]` (the paper's layout).

    Returns
    -------
    torch.Tensor
        ``(..., query_len, key_len)``.
    """
    query = check_tensor("query", query)
    positions = check_tensor("positions", positions)
    pos_emb = check_tensor("pos_emb", pos_emb)
    if query.dim() < 2 or pos_emb.dim() != 2 or pos_emb.shape[0] != query.shape[-1]:
        raise ValueError(
            f"query must be (..., query_len, d) and pos_emb (d, P) with the same d, got "
            f"{tuple(query.shape)} and {tuple(pos_emb.shape)}"
        )
    if positions.shape[:-1] != query.shape[:-1] or not positions.is_floating_point():
        raise ValueError(
            f"positions must be a floating tensor of shape (..., {query.shape[-2]}, key_len) "
            f"matching query {tuple(query.shape)}, got {tuple(positions.shape)}"
        )
    if bool((positions < 0).any()) or not bool(torch.isfinite(positions).all()):
        raise ValueError("positions must be finite and >= 0")
    positions = positions.clamp(max=pos_emb.shape[1] - 1)
    lower, upper = positions.floor(), positions.ceil()
    at_integers = query @ pos_emb  # (..., Lq, P): q_i . e[n] for every integer n
    below = at_integers.gather(-1, lower.long())
    above = at_integers.gather(-1, upper.long())
    weight = positions - lower
    return above * weight + below * (1 - weight)
