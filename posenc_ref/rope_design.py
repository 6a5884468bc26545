r"""Why RoPE has its form: the additive score it replaces, and what its frequencies do.

Derived on the site: [Why RoPE is a rotation](rope_design.md).

- :func:`additive_score_terms`: the score of an *additive* encoding split into its four terms
  (content and position, query and key side), the reason the field moved to rotations.
- :func:`score_matrix` and :func:`causal_attention`: the rotated scores of a sequence and a
  causal softmax over them, in float64.
- :func:`positional_head`: a query and a key built from the fastest pairs whose score peaks at
  one relative distance, a head that attends by position alone.
- :func:`self_similarity`: the score of a key equal to its query against their distance,
  relative to distance 0, :math:`\frac{1}{N}\sum_i \cos(k\,\omega_i)`: how fast a pair's content
  match drifts.

p-RoPE, RoPE with the slowest pairs not rotating (Gemma 4's ``proportional`` rope type), is
:func:`posenc_ref.beyond_rope.p_rope`.

Notation as on the site: pair :math:`i` of a query is the complex number :math:`q^{(i)}`, it
turns by :math:`m\,\omega_i` at position :math:`m`, and a query at :math:`m` and a key at
:math:`p` score
:math:`\operatorname{Re}\sum_i q^{(i)}\overline{k^{(i)}}e^{\mathrm{j}(m-p)\omega_i}`.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import torch

from ._checks import check_base, check_dim, check_int, check_layout, check_positive_float
from .absolute import inv_freq as _inv_freq
from .rope import apply_rope, rope_cos_sin

__all__ = [
    "ScoreTerms",
    "additive_score_terms",
    "score_matrix",
    "causal_attention",
    "positional_head",
    "self_similarity",
]

F64 = torch.float64


class ScoreTerms(NamedTuple):
    r"""The four terms of an additive encoding's attention score, each ``(n_q, n_k)``.

    For :math:`x_m = e_m + \mathrm{PE}(m)` (content plus position), a key token :math:`x_p` and
    :math:`A = W_q^\top W_k`: :math:`e_m^\top A e_p`, :math:`e_m^\top A\,\mathrm{PE}(p)`,
    :math:`\mathrm{PE}(m)^\top A e_p`, :math:`\mathrm{PE}(m)^\top A\,\mathrm{PE}(p)`.
    """

    content_content: torch.Tensor
    content_position: torch.Tensor
    position_content: torch.Tensor
    position_position: torch.Tensor

    def total(self) -> torch.Tensor:
        """The score itself: the sum of the four terms."""
        return (
            self.content_content
            + self.content_position
            + self.position_content
            + self.position_position
        )


def _matrix(name: str, value: object, width: int | None = None) -> torch.Tensor:
    if not isinstance(value, torch.Tensor) or value.dim() != 2 or not value.is_floating_point():
        shape = tuple(value.shape) if isinstance(value, torch.Tensor) else type(value).__name__
        raise TypeError(f"{name} must be a 2-D floating tensor, got {shape}")
    if width is not None and value.shape[1] != width:
        raise ValueError(
            f"{name} must have {width} columns (the model width), got {value.shape[1]}"
        )
    return value.to(F64)


def additive_score_terms(
    content_q: torch.Tensor,
    position_q: torch.Tensor,
    content_k: torch.Tensor,
    position_k: torch.Tensor,
    w_q: torch.Tensor,
    w_k: torch.Tensor,
) -> ScoreTerms:
    r"""Split the score of an additive positional encoding into its four terms.

    Derived on the site: [the additive score](rope_design.md#design-additive).

    A token enters the layer as :math:`x_m = e_m + \mathrm{PE}(m)`; its query is :math:`W_q x_m`,
    a key is :math:`W_k x_p`, and with :math:`A = W_q^\top W_k`

    .. math::

        (W_q x_m)^\top (W_k x_p) = e_m^\top A e_p + e_m^\top A\,\mathrm{PE}(p)
        + \mathrm{PE}(m)^\top A e_p + \mathrm{PE}(m)^\top A\,\mathrm{PE}(p) .

    Parameters
    ----------
    content_q, position_q
        Content and position vectors of the query tokens, each ``(n_q, width)``.
    content_k, position_k
        The same for the key tokens, each ``(n_k, width)``.
    w_q, w_k
        Projections ``(head_dim, width)``.

    Returns
    -------
    ScoreTerms
        Four float64 ``(n_q, n_k)`` matrices; :meth:`ScoreTerms.total` is their sum.
    """
    w_q = _matrix("w_q", w_q)
    width = w_q.shape[1]
    w_k = _matrix("w_k", w_k, width)
    if w_k.shape[0] != w_q.shape[0]:
        raise ValueError(
            f"w_q and w_k must project to the same head width, got {w_q.shape[0]} and "
            f"{w_k.shape[0]}"
        )
    e_q, p_q = _matrix("content_q", content_q, width), _matrix("position_q", position_q, width)
    e_k, p_k = _matrix("content_k", content_k, width), _matrix("position_k", position_k, width)
    if e_q.shape != p_q.shape or e_k.shape != p_k.shape:
        raise ValueError(
            "content and position vectors must have the same shape on each side, got "
            f"{tuple(e_q.shape)} and {tuple(p_q.shape)}, {tuple(e_k.shape)} and {tuple(p_k.shape)}"
        )
    a = w_q.T @ w_k  # (width, width)
    return ScoreTerms(e_q @ a @ e_k.T, e_q @ a @ p_k.T, p_q @ a @ e_k.T, p_q @ a @ p_k.T)


def _vectors(name: str, x: object, n: int) -> torch.Tensor:
    if not isinstance(x, torch.Tensor) or x.dim() not in (1, 2) or not x.is_floating_point():
        raise TypeError(f"{name} must be a floating tensor of shape (dim,) or (n, dim)")
    x = x.to(F64)
    return x.expand(n, -1) if x.dim() == 1 else x


def score_matrix(
    q: torch.Tensor,
    k: torch.Tensor,
    inv_freq: torch.Tensor,
    positions: torch.Tensor,
    *,
    layout: str = "interleaved",
) -> torch.Tensor:
    r"""Rotated scores of a sequence: ``S[a, b]`` is the score of query ``a`` and key ``b``.

    :math:`\langle R_{t_a} q_a, R_{t_b} k_b\rangle` for the positions :math:`t` of the tokens.

    Parameters
    ----------
    q, k
        Queries and keys, ``(dim,)`` (the same vector at every position) or ``(n, dim)``.
    inv_freq
        Frequencies ``(dim // 2,)``.
    positions
        Positions ``(n,)``.
    layout
        ``"interleaved"`` or ``"half"``.

    Returns
    -------
    torch.Tensor
        ``(n, n)`` float64, no scaling by :math:`1/\sqrt{d}`.
    """
    layout = check_layout("layout", layout)
    n = positions.shape[-1]
    cos, sin = rope_cos_sin(positions, inv_freq, dtype=F64)  # (n, dim/2)
    q_rot = apply_rope(_vectors("q", q, n), cos, sin, layout=layout)  # (n, dim)
    k_rot = apply_rope(_vectors("k", k, n), cos, sin, layout=layout)
    return q_rot @ k_rot.T


def causal_attention(scores: torch.Tensor) -> torch.Tensor:
    """Softmax over the keys at or before each query: ``(n, n)`` weights, 0 above the diagonal."""
    if (
        not isinstance(scores, torch.Tensor)
        or scores.dim() != 2
        or scores.shape[0] != scores.shape[1]
    ):
        raise ValueError("scores must be a square (n, n) tensor")
    n = scores.shape[0]
    future = torch.ones(n, n, dtype=torch.bool).triu(1)
    return torch.softmax(scores.to(F64).masked_fill(future, -math.inf), dim=-1)


def positional_head(
    dim: int,
    base: float = 10000.0,
    *,
    offset: int = 1,
    pairs: int = 4,
    scale: float = 1.0,
    layout: str = "interleaved",
) -> tuple[torch.Tensor, torch.Tensor]:
    r"""A query and a key whose score depends on position only and peaks at distance ``offset``.

    Derived on the site: [positional heads](rope_design.md#design-positional).

    The key holds :math:`(\text{scale}, 0)` and the query
    :math:`\text{scale}\,e^{-\mathrm{j}c\,\omega_i}` in each of the ``pairs`` fastest pairs
    (zero elsewhere), so a query at :math:`m` and a key at :math:`p` score

    .. math::

        \text{scale}^2 \sum_{i < P} \cos\bigl((m - p - c)\,\omega_i\bigr),

    largest, :math:`P\,\text{scale}^2`, at :math:`m - p = c` and only there among integer
    distances (pair 0 turns by :math:`\omega_0 = 1` radian, and no non-zero integer is a multiple
    of :math:`2\pi`). Every token carrying this query and key makes a head that attends to the
    token ``offset`` places back; ``offset = 1`` is a previous-token head.

    Returns
    -------
    tuple of torch.Tensor
        ``(q, k)``, each ``(dim,)`` float64, in ``layout``.
    """
    dim, base = check_dim("dim", dim), check_base("base", base)
    layout = check_layout("layout", layout)
    offset = check_int("offset", offset)
    pairs = check_int("pairs", pairs, minimum=1)
    if pairs > dim // 2:
        raise ValueError(f"pairs must be <= dim // 2 = {dim // 2}, got {pairs}")
    scale = check_positive_float("scale", scale)
    omega = _inv_freq(dim, base)[:pairs]
    u = torch.zeros(dim // 2, dtype=F64)
    v = torch.zeros(dim // 2, dtype=F64)
    k_u = torch.zeros(dim // 2, dtype=F64)
    u[:pairs], v[:pairs] = scale * torch.cos(offset * omega), -scale * torch.sin(offset * omega)
    k_u[:pairs] = scale
    return _assemble(u, v, layout), _assemble(k_u, torch.zeros_like(k_u), layout)


def _assemble(u: torch.Tensor, v: torch.Tensor, layout: str) -> torch.Tensor:
    """Pair coordinates ``(u_i, v_i)`` placed in ``layout``: ``(dim,)``."""
    if layout == "interleaved":
        return torch.stack([u, v], dim=-1).flatten()
    return torch.cat([u, v])


def self_similarity(inv_freq: torch.Tensor, distances: torch.Tensor) -> torch.Tensor:
    r"""Score of a key equal to its query at each distance, relative to distance 0.

    Derived on the site: [semantic channels](rope_design.md#design-semantic).

    .. math::

        \frac{1}{N}\sum_{i=0}^{N-1} \cos(k\,\omega_i) ,

    for a query whose pairs all have the same norm (for a query drawn from an isotropic
    Gaussian, the expected score). A pair with :math:`\omega_i = 0` contributes 1 at every
    distance.

    Parameters
    ----------
    inv_freq
        Frequencies ``(N,)``.
    distances
        Distances ``(R,)``.

    Returns
    -------
    torch.Tensor
        ``(R,)`` float64.
    """
    if not isinstance(inv_freq, torch.Tensor) or inv_freq.dim() != 1 or inv_freq.numel() == 0:
        raise ValueError("inv_freq must be a non-empty 1-D tensor of frequencies")
    distances = torch.as_tensor(distances, dtype=F64)
    return torch.cos(torch.outer(distances, inv_freq.to(F64))).mean(dim=-1)
