r"""Why context extension works: interpolation, the base against the context, inference tricks.

Derived on the site: [Why context extension works](rope_extension.md).

- :func:`fit_score_function` and :func:`score_function`: Position Interpolation's argument. A
  RoPE score is a sum of sinusoids of the distance; one fitted to stay bounded on
  :math:`[0, L_0]` is bounded between the integers there, and not past :math:`L_0`.
- :func:`entropy_keeping_scale`: why YaRN's attention factor grows like :math:`\ln s`.
- :func:`critical_dimension`: how many rotated coordinates complete a full turn within the
  pre-training context (Liu et al.'s critical dimension for extrapolation).
- :func:`base_lower_bound`: the smallest base for which the expected score of a similar token
  stays positive over a context (Men et al., "Base of RoPE Bounds Context Length").
- :func:`ntk_equivalent_factor`: adjusted base frequency (ABF, a new base and long-context
  training) as the NTK-aware factor it equals.
- :func:`self_extend_relative_positions` and :func:`rerope_relative_positions`: Self-Extend's
  grouped positions and (leaky) ReRoPE, as maps from a query-key distance to the distance the
  rotation uses.
- :func:`lm_infinite_positions` and :func:`streaming_llm_positions`: the first tokens kept beside a
  window of recent ones, every other key dropped, and the distances capped (LM-Infinite) or
  counted within the cache (StreamingLLM's attention sinks).
"""

from __future__ import annotations

import functools
import math
from typing import NamedTuple

import numpy as np
import torch

from ._checks import check_base, check_dim, check_int, check_positive_float
from .absolute import inv_freq as _inv_freq

__all__ = [
    "SinkWindow",
    "lm_infinite_positions",
    "streaming_llm_positions",
    "fit_score_function",
    "score_function",
    "entropy_keeping_scale",
    "critical_dimension",
    "base_lower_bound",
    "first_negative_distance",
    "passing_base_intervals",
    "ntk_equivalent_factor",
    "self_extend_relative_positions",
    "self_extend_max_length",
    "rerope_relative_positions",
]

F64 = torch.float64


def _features(inv_freq: torch.Tensor, distances: torch.Tensor) -> torch.Tensor:
    """Columns cos(k w_i) and -sin(k w_i): f(k) = features @ [Re h, Im h]. ``(R, 2N)``."""
    angles = torch.outer(torch.as_tensor(distances, dtype=F64), inv_freq.to(F64))
    return torch.cat([torch.cos(angles), -torch.sin(angles)], dim=1)


def score_function(
    h: torch.Tensor, inv_freq: torch.Tensor, distances: torch.Tensor
) -> torch.Tensor:
    r"""A RoPE score as a function of the distance :math:`k`: a sum of sinusoids.

    Derived on the site: [interpolation against extrapolation](rope_extension.md#extension-pi).

    .. math::

        f(k) = \operatorname{Re}\sum_{i=0}^{N-1} h_i\, e^{\mathrm{j}k\omega_i} .

    With :math:`h_i = q^{(i)}\overline{k^{(i)}}` this is the score of a query and a key
    :math:`k = m - p` positions apart, the form Position Interpolation's argument starts from (the
    paper writes :math:`s`); :math:`k` need not be an integer.

    Parameters
    ----------
    h
        Complex coefficients ``(N,)``.
    inv_freq
        Frequencies ``(N,)``.
    distances
        Distances :math:`k`, ``(R,)``.

    Returns
    -------
    torch.Tensor
        ``(R,)`` float64.
    """
    h = torch.as_tensor(h).to(torch.complex128)
    if h.dim() != 1 or h.shape != inv_freq.shape:
        raise ValueError(
            f"h must have one coefficient per frequency, shape {tuple(inv_freq.shape)}"
        )
    return _features(inv_freq, distances) @ torch.cat([h.real, h.imag])


def fit_score_function(
    inv_freq: torch.Tensor, points: torch.Tensor, targets: torch.Tensor
) -> torch.Tensor:
    r"""Least-squares coefficients :math:`h` of :func:`score_function` through the given points.

    Derived on the site: [interpolation against extrapolation](rope_extension.md#extension-pi).

    Minimises :math:`\sum_r (a(s_r) - y_r)^2` over the :math:`2N` real numbers of :math:`h`, with
    no regularisation (the minimum-norm solution over the singular values above the solver's
    cut-off): the kind of fit Position Interpolation's Figure 2 makes for a 128-wide head.

    Parameters
    ----------
    inv_freq
        Frequencies ``(N,)``.
    points, targets
        Distances :math:`s_r` and values :math:`y_r`, each ``(R,)``.

    Returns
    -------
    torch.Tensor
        ``(N,)`` complex128.
    """
    points = torch.as_tensor(points, dtype=F64)
    targets = torch.as_tensor(targets, dtype=F64)
    if points.dim() != 1 or points.shape != targets.shape:
        raise ValueError("points and targets must be 1-D tensors of the same length")
    # gelsd (SVD) keeps every direction above eps * max(R, 2N) of the largest singular value, as
    # numpy's lstsq does; torch's default gelsy truncates more, which hides the effect.
    features = _features(inv_freq, points)
    solution = torch.linalg.lstsq(features, targets[:, None], driver="gelsd").solution[:, 0]
    n = inv_freq.numel()
    return torch.complex(solution[:n], solution[n:])


def entropy_keeping_scale(factor: float, logit_std: float) -> float:
    r"""The logit multiplier that keeps a softmax's entropy when it sees ``factor`` times more keys.

    Derived on the site: [the attention temperature](rope_extension.md#extension-temperature).

    For :math:`K` logits drawn from :math:`N(0, \sigma^2)` the entropy of
    :math:`\operatorname{softmax}(\lambda x)` is about :math:`\ln K - \lambda^2\sigma^2/2` when
    :math:`K \gg e^{\lambda^2\sigma^2}` (the sums over the keys are then close to their
    expectations, :math:`K\,e^{\lambda^2\sigma^2/2}` and :math:`\lambda\sigma^2` times it).
    Asking :math:`sK` keys at multiplier :math:`\lambda` for the entropy of :math:`K` keys at 1
    gives

    .. math::

        \lambda(s) = \sqrt{1 + \frac{2\ln s}{\sigma^2}} ,

    which grows like :math:`\ln s` for moderate :math:`s`: the form of YaRN's
    :math:`0.1\ln s + 1`.
    """
    factor = check_positive_float("factor", factor, minimum=1.0)
    logit_std = check_positive_float("logit_std", logit_std)
    return math.sqrt(1.0 + 2.0 * math.log(factor) / logit_std**2)


def critical_dimension(dim: int, base: float, original_max_len: int) -> int:
    r"""Rotated coordinates whose pair completes a full turn within the pre-training context.

    Derived on the site: [the critical dimension](rope_extension.md#extension-critical).

    Pair :math:`i` turns :math:`L_0\omega_i/2\pi` times within :math:`L_0`; it has been seen at
    every angle when that is at least 1. The count of such coordinates (two per pair),

    .. math::

        d_{\text{extra}} = 2\,\bigl|\{i : L_0\,n^{-2i/d} \ge 2\pi\}\bigr|
        = 2\left\lceil \tfrac{d}{2}\log_n \tfrac{L_0}{2\pi} \right\rceil

    (the closed form when the logarithm is not an integer, clamped to :math:`[0, d]`), is what
    Liu et al. call the critical dimension for extrapolation: the coordinates past it were never
    trained on a whole period.
    """
    dim, base = check_dim("dim", dim), check_base("base", base)
    original_max_len = check_int("original_max_len", original_max_len, minimum=1)
    turns = original_max_len * _inv_freq(dim, base) / (2 * math.pi)
    return 2 * int((turns >= 1).sum())


class _BaseScan:
    r"""What is known of the bases ``10^(k/per_decade)`` for one width: the scan's memory.

    For each base, the first distance at which :math:`B(m) < 0` once found (``negative``, -1
    while none is), and the distance up to which :math:`B(m) \ge 0` is proven (``proven``).
    Whether a base passes a context :math:`L` is decided by them alone: it fails iff its first
    negative distance is below :math:`L`. So the bounds of several contexts share one scan: a
    base that failed at distance 90 fails every context past 90 without another cosine (the site
    asks for four contexts, and each used to scan the small bases again from distance 0).
    """

    def __init__(self, dim: int, per_decade: int) -> None:
        self.dim, self.per_decade = dim, per_decade
        self.batches: dict[tuple[int, int], tuple[list[float], np.ndarray, np.ndarray, np.ndarray]]
        self.batches = {}

    def batch(self, first: int, stop: int):
        """Bases ``k = first .. stop - 1``: ``(bases, omega (B, pairs), negative, proven)``."""
        if (first, stop) not in self.batches:
            bases = [10.0 ** (k / self.per_decade) for k in range(first, stop)]
            omega = np.stack([_inv_freq(self.dim, b).numpy() for b in bases])
            negative = np.full(len(bases), -1, dtype=np.int64)
            proven = np.zeros(len(bases), dtype=np.int64)
            self.batches[first, stop] = (bases, omega, negative, proven)
        return self.batches[first, stop]

    def passes(self, first: int, stop: int, limit: int) -> np.ndarray:
        """For each base of the batch, whether sum_i cos(m w_i) >= 0 for all m < limit. ``(B,)``."""
        _, omega, negative, proven = self.batch(first, stop)
        pending = np.flatnonzero((negative < 0) & (proven < limit))
        # Distances below a base's proven one are known non-negative: evaluating them again (from
        # the batch's smallest) gives the same values, so the first negative found is the first.
        start, chunk = (int(proven[pending].min()) if pending.size else limit), 32
        while pending.size and start < limit:
            stop_m = min(start + chunk, limit)
            m = np.arange(start, stop_m, dtype=np.float64)
            values = np.cos(m[None, :, None] * omega[pending, None, :]).sum(axis=-1)  # (A, chunk)
            below = values < 0
            hit = below.any(axis=1)
            negative[pending[hit]] = start + below[hit].argmax(axis=1)
            proven[pending[~hit]] = np.maximum(proven[pending[~hit]], stop_m)
            pending = pending[~hit]
            # Chunks double, so the cost follows where each base fails, not the limit; the
            # product of bases and distances per step stays under about a million.
            start, chunk = stop_m, max(32, min(2 * chunk, (1 << 20) // (64 * max(pending.size, 1))))
        return np.where(negative < 0, proven >= limit, negative >= limit)


@functools.lru_cache(maxsize=16)
def _scan(dim: int, per_decade: int) -> _BaseScan:
    return _BaseScan(dim, per_decade)


def base_lower_bound(
    context_len: int, dim: int = 128, *, per_decade: int = 400, max_base: float = 1e10
) -> float:
    r"""The smallest base whose expected similar-token score stays non-negative over a context.

    Derived on the site: [the base bounds the context](rope_extension.md#extension-base-bound).

    Men et al. ask that a key similar to the query score higher on average than a random key at
    every distance within the context. For a query with i.i.d. coordinates that advantage is
    proportional to :math:`B(m) = \sum_i \cos(m\,\omega_i)` (``d/2`` times
    :func:`~posenc_ref.rope_design.self_similarity`), so the condition is :math:`B(m) \ge 0` for
    :math:`m = 0 \ldots L - 1`, and the bound is the smallest base that meets it. The set of
    bases that meet it is not an interval (a larger base can fail again), so the search scans the
    bases :math:`10^{k/\text{per\_decade}}` upward from just above 1 and returns the first that
    passes: the bound to that resolution.

    Raises
    ------
    ValueError
        If no base up to ``max_base`` passes.
    """
    context_len = check_int("context_len", context_len, minimum=1)
    dim = check_dim("dim", dim)
    per_decade = check_int("per_decade", per_decade, minimum=1)
    max_base = check_positive_float("max_base", max_base)
    top = int(math.floor(per_decade * math.log10(max_base)))
    scan = _scan(dim, per_decade)
    for first in range(1, top + 1, 64):  # 64 bases at a time, in increasing order
        stop = min(first + 64, top + 1)
        passed = np.flatnonzero(scan.passes(first, stop, context_len))
        if passed.size:
            return scan.batch(first, stop)[0][int(passed[0])]
    raise ValueError(
        f"no base up to max_base={max_base:g} keeps the score non-negative over {context_len} "
        "positions"
    )


def first_negative_distance(base: float, context_len: int, dim: int = 128) -> int | None:
    r"""The first distance :math:`m < L` at which :math:`B(m) = \sum_i \cos(m\,\omega_i) < 0`.

    Derived on the site: [the base bounds the context](rope_extension.md#extension-base-bound).

    ``None`` when there is none: the base then passes Men et al.'s condition for a context of
    ``context_len``.
    """
    base, dim = check_base("base", base), check_dim("dim", dim)
    context_len = check_int("context_len", context_len, minimum=1)
    omega = _inv_freq(dim, base).numpy()
    for start in range(0, context_len, 4096):  # a block of distances at a time
        m = np.arange(start, min(start + 4096, context_len), dtype=np.float64)
        below = np.flatnonzero(np.cos(m[:, None] * omega[None, :]).sum(axis=1) < 0)
        if below.size:
            return start + int(below[0])
    return None


def passing_base_intervals(
    context_len: int, dim: int = 128, *, low: float, high: float, per_decade: int = 4000
) -> list[tuple[float, float]]:
    r"""The bases in ``[low, high]`` that meet :math:`B(m) \ge 0` for every :math:`m < L`.

    Derived on the site: [the base bounds the context](rope_extension.md#extension-base-bound).

    The bases :math:`10^{k/\text{per\_decade}}` in the range are tested, and each change from
    failing to passing (or back) between two neighbours is located by bisection, to a relative
    :math:`10^{-10}`. Returns the maximal passing intervals ``(first, last)`` in increasing
    order; one that reaches an end of the range is cut there. A window narrower than the grid's
    step (:math:`10^{1/\text{per\_decade}} - 1`, 0.058 % at the default) can be missed.
    """
    context_len = check_int("context_len", context_len, minimum=1)
    dim, per_decade = check_dim("dim", dim), check_int("per_decade", per_decade, minimum=1)
    low, high = check_base("low", low), check_base("high", high)
    if not low < high:
        raise ValueError(f"low must be < high, got low={low!r}, high={high!r}")
    first = math.ceil(per_decade * math.log10(low))
    stop = math.floor(per_decade * math.log10(high)) + 1
    scan = _scan(dim, per_decade)
    bases, passed = [], []
    for start in range(first, stop, 256):  # 256 bases at a time
        end = min(start + 256, stop)
        bases += scan.batch(start, end)[0]
        passed += scan.passes(start, end, context_len).tolist()

    def passes(base: float) -> bool:
        return first_negative_distance(base, context_len, dim) is None

    intervals, opened = [], (low if passes(low) else None)
    points = [low, *bases, high]
    verdicts = [opened is not None, *passed, passes(high)]
    for i in range(len(points) - 1):
        if verdicts[i] == verdicts[i + 1]:
            continue
        edge = _bisect(points[i], points[i + 1], passes)
        if verdicts[i + 1]:  # failing -> passing: an interval opens at the first passing base
            opened = edge[1]
        else:  # passing -> failing: it closes at the last passing base
            intervals.append((opened, edge[0]))
            opened = None
    if opened is not None:
        intervals.append((opened, high))
    return intervals


def _bisect(a: float, b: float, passes) -> tuple[float, float]:
    """``(a', b')`` in ``[a, b]``, 1e-10 apart relative, with the verdicts of ``a`` and ``b``."""
    verdict_a = passes(a)
    while b - a > 1e-10 * b:
        mid = (a + b) / 2
        a, b = (mid, b) if passes(mid) == verdict_a else (a, mid)
    return a, b


def ntk_equivalent_factor(dim: int, base: float, new_base: float) -> float:
    r"""The NTK-aware factor whose base change is the adjusted base ``new_base``.

    Derived on the site: [adjusted base frequency](rope_extension.md#extension-abf).

    NTK-aware scaling sets :math:`n' = n\,s^{d/(d-2)}`; a chosen :math:`n'` is therefore
    :math:`s = (n'/n)^{(d-2)/d}`, and ``ntk_aware(dim, base, factor=s)`` gives the frequencies
    ``inv_freq(dim, new_base)``.
    """
    dim, base = check_dim("dim", dim), check_base("base", base)
    new_base = check_base("new_base", new_base)
    if dim < 4:
        raise ValueError(f"dim must be an even integer >= 4 for NTK scaling, got {dim!r}")
    return (new_base / base) ** ((dim - 2) / dim)


def _positions(name: str, value: object) -> torch.Tensor:
    value = torch.as_tensor(value)
    if value.is_floating_point() or value.is_complex() or value.dtype == torch.bool:
        raise TypeError(f"{name} must hold integer positions, got dtype {value.dtype}")
    if value.numel() and bool((value < 0).any()):
        raise ValueError(f"{name} must be >= 0, got a minimum of {int(value.min())}")
    return value.to(torch.int64)


def _query_key(query: object, key: object) -> tuple[torch.Tensor, torch.Tensor]:
    query, key = _positions("query_positions", query), _positions("key_positions", key)
    try:
        query, key = torch.broadcast_tensors(query, key)
    except RuntimeError as exc:
        raise ValueError(
            f"query_positions {tuple(query.shape)} and key_positions {tuple(key.shape)} must "
            "broadcast together (for example m[:, None] and n[None, :])"
        ) from exc
    if query.numel() and bool((key > query).any()):
        raise ValueError(
            "key_positions must be <= query_positions (a causal query sees no later key)"
        )
    return query, key


def self_extend_relative_positions(
    query_positions: torch.Tensor, key_positions: torch.Tensor, *, group_size: int, window: int
) -> torch.Tensor:
    r"""Self-Extend's relative positions: exact within ``window``, grouped beyond it.

    Derived on the site: [Self-Extend and ReRoPE](rope_extension.md#extension-inference).

    A query at :math:`m` and a key at :math:`p \le m` with :math:`m - p < w` use their distance;
    farther keys use grouped positions, the query :math:`\lfloor m/G\rfloor + w - \lfloor w/G
    \rfloor` and the key :math:`\lfloor p/G\rfloor`:

    .. math::

        \delta(m, p) = \begin{cases} m - p & m - p < w \\
        \lfloor m/G \rfloor - \lfloor p/G \rfloor + w - \lfloor w/G \rfloor & \text{otherwise.}
        \end{cases}

    Parameters
    ----------
    query_positions, key_positions
        Integer positions that broadcast together, every key at or before its query (for a
        whole sequence: ``arange(L)[:, None]`` and ``arange(L)[None, :]``, masked above the
        diagonal by the caller).

    Returns
    -------
    torch.Tensor
        int64, the broadcast shape.
    """
    group_size = check_int("group_size", group_size, minimum=1)
    window = check_int("window", window, minimum=1)
    m, p = _query_key(query_positions, key_positions)
    grouped = m // group_size - p // group_size + window - window // group_size
    return torch.where(m - p < window, m - p, grouped)


def self_extend_max_length(original_max_len: int, *, group_size: int, window: int) -> int:
    r"""The longest input whose Self-Extend relative positions all stay below ``original_max_len``.

    Derived on the site: [Self-Extend and ReRoPE](rope_extension.md#extension-inference).

    The largest relative position at length :math:`L` is
    :math:`\lfloor (L-1)/G \rfloor + w - \lfloor w/G \rfloor` (query last, key first); it stays
    below :math:`L_0` up to :math:`L = G\,(L_0 - w + \lfloor w/G \rfloor)`.
    """
    original_max_len = check_int("original_max_len", original_max_len, minimum=1)
    group_size = check_int("group_size", group_size, minimum=1)
    window = check_int("window", window, minimum=1)
    if window >= original_max_len:
        raise ValueError(
            f"window must be < original_max_len={original_max_len} (the neighbour window is "
            f"attended with exact positions), got {window}"
        )
    return group_size * (original_max_len - window + window // group_size)


def rerope_relative_positions(
    query_positions: torch.Tensor,
    key_positions: torch.Tensor,
    *,
    window: int,
    leak: float | None = None,
) -> torch.Tensor:
    r"""ReRoPE's relative positions: exact within ``window``, then clipped or slowed.

    Derived on the site: [Self-Extend and ReRoPE](rope_extension.md#extension-inference).

    .. math::

        \delta(m, p) = \begin{cases} m - p & m - p < w \\
        w & \text{otherwise (ReRoPE)} \\
        w + (m - p - w)/\kappa & \text{otherwise (leaky ReRoPE, } \kappa = \text{leak).}
        \end{cases}

    Parameters
    ----------
    query_positions, key_positions
        As for :func:`self_extend_relative_positions`.

    Returns
    -------
    torch.Tensor
        float64, the broadcast shape.
    """
    window = check_int("window", window, minimum=1)
    if leak is not None:
        leak = check_positive_float("leak", leak, minimum=1.0)
    m, p = _query_key(query_positions, key_positions)
    distance = (m - p).to(F64)
    far = torch.full_like(distance, float(window))
    if leak is not None:
        far = window + (distance - window) / leak
    return torch.where(distance < window, distance, far)


class SinkWindow(NamedTuple):
    """Which keys a query sees, and at what distance the rotation puts each.

    Attributes
    ----------
    distance : torch.Tensor
        int64, the distance the rotation uses (defined for every pair; it matters where visible).
    visible : torch.Tensor
        bool: the key is among the first ``sinks`` tokens or within the last ``window``.
    """

    distance: torch.Tensor
    visible: torch.Tensor


def _sinks_and_window(sinks: object, window: object) -> tuple[int, int]:
    return check_int("sinks", sinks, minimum=0), check_int("window", window, minimum=1)


def lm_infinite_positions(
    query_positions: torch.Tensor,
    key_positions: torch.Tensor,
    *,
    sinks: int,
    window: int,
    cap: int | None = None,
) -> SinkWindow:
    r"""LM-Infinite: the first tokens and a recent window seen, every distance capped.

    Derived on the site: [the first tokens kept](rope_extension.md#extension-sinks).

    A query at :math:`m` sees a key at :math:`p` if :math:`p < n_{\text{sink}}` or
    :math:`m - p < w` (the Λ-shaped mask), at distance :math:`\min(m - p, c)`, with the cap
    :math:`c` = ``cap`` (the pre-training length; ``window`` when ``None``). Within the window
    this is ReRoPE's map (:func:`rerope_relative_positions` with window :math:`c`); the keys in
    between are not attended at all.
    """
    sinks, window = _sinks_and_window(sinks, window)
    cap = window if cap is None else check_int("cap", cap, minimum=1)
    m, p = _query_key(query_positions, key_positions)
    return SinkWindow((m - p).clamp(max=cap), (p < sinks) | (m - p < window))


def streaming_llm_positions(
    query_positions: torch.Tensor, key_positions: torch.Tensor, *, sinks: int, window: int
) -> SinkWindow:
    r"""StreamingLLM: the first tokens kept as attention sinks, positions counted in the cache.

    Derived on the site: [the first tokens kept](rope_extension.md#extension-sinks).

    The cache holds the first :math:`n_{\text{sink}}` tokens and the last :math:`w` (the query
    among them), numbered :math:`0, 1, \ldots` in that order, and keys are rotated by their
    number in the cache, not in the text. For a query at :math:`m \ge n_{\text{sink}} + w - 1` a
    recent key keeps its distance :math:`m - p`, and a sink at :math:`p` is seen from
    :math:`n_{\text{sink}} + w - 1 - p`: no distance exceeds :math:`n_{\text{sink}} + w - 1`.
    Before the cache is full nothing is dropped and the positions are the text's.
    """
    sinks, window = _sinks_and_window(sinks, window)
    m, p = _query_key(query_positions, key_positions)
    full = m >= sinks + window - 1  # the cache has started dropping keys
    visible = (p < sinks) | (m - p < window) | ~full
    query_slot = torch.where(full, torch.full_like(m, sinks + window - 1), m)
    key_slot = torch.where(full & (p >= sinks), p - (m - window + 1) + sinks, p)
    return SinkWindow(query_slot - key_slot, visible)
