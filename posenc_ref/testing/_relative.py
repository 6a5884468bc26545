r"""Checks for ALiBi slopes and biases and T5 relative buckets, with the classic mistakes as models.

The mistakes are those that circulate (see the site's Beyond-sinusoids and Pitfalls pages):
ALiBi's :math:`2^{-8h/n}` for a head count that is not a power of two, monotone or reversed
slopes, the query-key sign; T5's ``query - key`` sign, future keys outside bucket 0 in the
causal case, a forgotten halving of the buckets for the bidirectional case, rounding, and no
saturation at ``max_distance``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import torch

from .._checks import check_bool, check_int
from ..relative import alibi_slopes, t5_relative_bucket
from ._common import as_float64, check_nonnegative_float

__all__ = ["assert_alibi_slopes_equal", "assert_alibi_bias_equal", "assert_t5_buckets_equal"]

# Head counts a slope function is asked for: powers of two and the counts between them that
# released models use (12, 20, 40, 48, 96, ...).
HEAD_COUNTS = (1, 2, 3, 4, 5, 6, 8, 12, 16, 20, 24, 32, 40, 48, 64, 96, 112, 128)


# --------------------------------------------------------------------------- ALiBi slopes


def geometric_slopes(n: int, heads: int | None = None, start: int = 1) -> torch.Tensor:
    heads = n if heads is None else heads
    h = torch.arange(start, start + heads, dtype=torch.float64)
    return 2.0 ** (-8.0 * h / n)


def slope_models() -> list[tuple[str, str, Callable[[int], torch.Tensor]]]:
    def reference(n: int) -> torch.Tensor:
        return alibi_slopes(n, dtype=torch.float64)

    def extras_even(n: int) -> torch.Tensor:
        closest = 2 ** int(math.floor(math.log2(n)))
        extra = geometric_slopes(2 * closest)[1::2][: n - closest]
        return torch.cat([geometric_slopes(closest), extra])

    def from_zero(n: int) -> torch.Tensor:
        # The reference's rule with h counted from 0 in both sets.
        closest = 2 ** int(math.floor(math.log2(n)))
        extra = geometric_slopes(2 * closest, start=0)[0::2][: n - closest]
        return torch.cat([geometric_slopes(closest, start=0), extra])

    def next_power_cut(n: int) -> torch.Tensor:
        return geometric_slopes(2 ** math.ceil(math.log2(n)), heads=n)

    return [
        (
            "2^(-8h/n) for every head count",
            "your slopes are 2^(-8h/n) for h = 1..n; that holds only when n is a power of two. "
            "Otherwise ALiBi takes the slopes of the closest smaller power of two c, then every "
            "other slope (h = 1, 3, 5, ...) of the 2c-head set (the list is not monotone)",
            lambda n: geometric_slopes(n),
        ),
        (
            "slopes sorted",
            "your slopes are ALiBi's set sorted from largest to smallest; for head counts that "
            "are not powers of two the list restarts near the top after the first c heads, and "
            "which head gets which slope matters for a trained checkpoint",
            lambda n: reference(n).sort(descending=True).values,
        ),
        (
            "slopes reversed",
            "your slopes are ALiBi's in reverse order (the smallest slope on head 0)",
            lambda n: reference(n).flip(0),
        ),
        (
            "the head index from 0",
            "your slopes are 2^(-8h/n) for h = 0..n-1: the first head gets slope 1 (no decay "
            "penalty scale) instead of 2^(-8/n)",
            from_zero,
        ),
        (
            "the extra heads from the even slopes",
            "for a head count that is not a power of two, your extra heads take the even-h "
            "slopes (h = 2, 4, ...) of the 2c-head set; ALiBi takes the odd ones (h = 1, 3, ...)",
            extras_even,
        ),
        (
            "the next power of two, cut",
            "your slopes are the first n of the 2^(-8h/n') set for the next power of two n' "
            "(MPT computes that set but then reorders it: odd positions first)",
            next_power_cut,
        ),
    ]


def slopes_report(got: torch.Tensor, n: int, rtol: float) -> str | None:
    expected = alibi_slopes(n, dtype=torch.float64)
    if got.shape != expected.shape:
        return f"num_heads={n}: got {got.numel()} slopes, expected {n}."
    bad = (got - expected).abs() > rtol * expected.abs()
    if not bool(bad.any()):
        return None
    head = int(torch.nonzero(bad).flatten()[0])
    lines = [
        f"num_heads={n}: head {head} has slope {float(got[head]):.8g}, expected "
        f"{float(expected[head]):.8g} ({int(bad.sum())} of {n} heads differ).",
        "    got:      " + short_list(got),
        "    expected: " + short_list(expected),
    ]
    return "\n".join(lines)


def short_list(values: torch.Tensor, limit: int = 12) -> str:
    shown = ", ".join(f"{float(v):.4g}" for v in values[:limit])
    return f"[{shown}{', ...' if values.numel() > limit else ''}]"


def slopes_diagnosis(got_by_n: dict[int, torch.Tensor], rtol: float) -> list[str]:
    models = slope_models()
    explained = []
    for title, detail, model in models:
        if all(
            got.shape == (n,) and bool(((got - model(n)).abs() <= rtol * model(n).abs()).all())
            for n, got in got_by_n.items()
        ):
            explained.append((title, detail))
    if not explained:
        return [f"Diagnosis: none of the {len(models)} models of common mistakes reproduces it."]
    return [
        f"Diagnosis (tested: {len(models)} models of common mistakes; "
        + ("this one reproduces" if len(explained) == 1 else "these reproduce")
        + " your slopes):",
        *[f"    - {title}: {detail}." for title, detail in explained],
    ]


def check_rtol(rtol: object) -> float:
    return check_nonnegative_float("rtol", rtol)


def assert_alibi_slopes_equal(
    slopes_or_fn: object,
    num_heads: int | Sequence[int] | None = None,
    *,
    rtol: float = 1e-6,
) -> None:
    r"""Check ALiBi head slopes against the paper's rule, naming the classic mistake on failure.

    Explained on the site: [ALiBi and T5](check.md#check-relative).

    The reference is :func:`posenc_ref.alibi_slopes`: :math:`2^{-8h/n}` for a power-of-two
    :math:`n`, otherwise the :math:`c = 2^{\lfloor\log_2 n\rfloor}`-head slopes followed by
    every other slope of the :math:`2c`-head set. Models of the mistakes (:math:`2^{-8h/n}` for
    every :math:`n`, sorted, reversed, the head index from 0, the even slopes for the extra
    heads, the next power of two cut) are run on the same head counts.

    Parameters
    ----------
    slopes_or_fn
        A ``(num_heads,)`` tensor or array, or ``fn(num_heads)`` returning one.
    num_heads
        For a function: the head counts to ask for (default 1-6, 8, 12, 16, 20, 24, 32, 40, 48,
        64, 96, 112, 128: powers of two and the counts between them models use). For a tensor:
        its expected length (default its length).
    rtol
        Allowed relative error per slope (default ``1e-6``: float32 powers are within it).

    Raises
    ------
    AssertionError
        When any slope differs by more than ``rtol`` relative.

    Examples
    --------
    >>> from posenc_ref import alibi_slopes
    >>> assert_alibi_slopes_equal(alibi_slopes)
    """
    rtol = check_rtol(rtol)
    if callable(slopes_or_fn):
        counts = HEAD_COUNTS if num_heads is None else num_heads
        if isinstance(counts, int):
            counts = (counts,)
        counts = [check_int("num_heads", n, minimum=1) for n in counts]
        got_by_n = {n: as_float64(slopes_or_fn(n), "slopes").flatten() for n in counts}
    else:
        got = as_float64(slopes_or_fn, "slopes").flatten()
        n = got.numel() if num_heads is None else check_int("num_heads", num_heads, minimum=1)
        got_by_n = {n: got}
    problems = [p for n, got in got_by_n.items() if (p := slopes_report(got, n, rtol))]
    if not problems:
        return None
    lines = ["ALiBi slopes disagree with the paper's rule (posenc_ref.alibi_slopes):"]
    lines += problems[:4]
    if len(problems) > 4:
        lines.append(f"... and {len(problems) - 4} more head counts.")
    lines += slopes_diagnosis(got_by_n, rtol)
    raise AssertionError("\n".join(lines))


# --------------------------------------------------------------------------- ALiBi bias


def assert_alibi_bias_equal(
    bias_or_fn: object,
    num_heads: int,
    query_len: int = 64,
    key_len: int | None = None,
    *,
    causal: bool = True,
    rtol: float = 1e-6,
    atol: float = 1e-5,
) -> None:
    r"""Check an ALiBi attention bias, up to what softmax ignores, and diagnose its slopes.

    Explained on the site: [ALiBi and T5](check.md#check-relative).

    The reference is :func:`posenc_ref.alibi_bias`: :math:`-m_h\,(i - j)` for query :math:`i`
    and key :math:`j` (queries are the last ``query_len`` of ``key_len`` positions). A constant
    per query row does not change the softmax, so biases of the form :math:`m_h\,j` (fairseq) or
    :math:`m_h\,(j - L + 1)` (MPT) are equal here. With ``causal=True`` only keys
    :math:`j \le i` are compared (the mask may live in the bias or elsewhere); otherwise all
    keys, against :math:`-m_h\,|i - j|`. On failure the slopes are read off your bias (its step
    between neighbouring keys) and diagnosed as by :func:`assert_alibi_slopes_equal`, and a
    bias that grows with distance (the query-key sign) is named.

    Parameters
    ----------
    bias_or_fn
        A ``(num_heads, query_len, key_len)`` tensor (leading dimensions of size 1 are
        dropped), or ``fn(num_heads, query_len, key_len)`` returning one.
    num_heads, query_len, key_len
        Shape (``key_len`` defaults to ``query_len``).
    causal
        Compare only keys at or before each query (default), or all keys.
    rtol, atol
        Allowed error per entry: ``atol + rtol * |reference|``.

    Raises
    ------
    AssertionError
        When the bias differs beyond what a row constant explains.
    """
    num_heads = check_int("num_heads", num_heads, minimum=1)
    query_len = check_int("query_len", query_len, minimum=1)
    key_len = query_len if key_len is None else check_int("key_len", key_len, minimum=query_len)
    causal = check_bool("causal", causal)
    rtol, atol = check_rtol(rtol), check_nonnegative_float("atol", atol)
    raw = bias_or_fn(num_heads, query_len, key_len) if callable(bias_or_fn) else bias_or_fn
    got = as_float64(raw, "bias")
    while got.dim() > 3 and got.shape[0] == 1:
        got = got[0]
    if tuple(got.shape) != (num_heads, query_len, key_len):
        raise AssertionError(
            f"the bias must have shape (num_heads, query_len, key_len) = "
            f"{(num_heads, query_len, key_len)}, got {tuple(raw.shape)}"
        )
    slopes = alibi_slopes(num_heads, dtype=torch.float64)
    queries = torch.arange(key_len - query_len, key_len)[:, None]
    keys = torch.arange(key_len)[None, :]
    distance = (queries - keys).to(torch.float64)  # i - j, >= 0 for the past
    compared = (distance >= 0) if causal else torch.ones_like(distance, dtype=torch.bool)
    expected = -slopes[:, None, None] * (distance if causal else distance.abs())
    # Remove each row's constant: subtract the value at the diagonal key (j = i), always compared.
    diagonal = (keys == queries).to(torch.float64)
    got_row = (torch.nan_to_num(got, neginf=0.0) * diagonal).sum(-1, keepdim=True)
    exp_row = (expected * diagonal).sum(-1, keepdim=True)
    centred_got, centred_exp = got - got_row, expected - exp_row
    error = (centred_got - centred_exp).abs()
    allowed = atol + rtol * centred_exp.abs()
    bad = compared & ~(error <= allowed)
    if not bool(bad.any()):
        return None
    h, i, j = (int(v) for v in torch.nonzero(bad)[0])
    lines = [
        f"the ALiBi bias disagrees with -m_h (i - j) (posenc_ref.alibi_bias; compared up to a "
        f"constant per query row{', keys at or before the query' if causal else ''}).",
        f"First disagreement: head {h}, query {i} (position {int(queries[i, 0])}), key {j}: got "
        f"{float(centred_got[h, i, j]):.6g}, expected {float(centred_exp[h, i, j]):.6g} "
        "(both relative to the diagonal entry of the row).",
    ]
    # Read the slopes off the bias: the step between neighbouring past keys of the last query.
    last = got[:, -1, :]
    if key_len >= 2 and bool(torch.isfinite(last[:, -2:]).all()):
        step = last[:, -1] - last[:, -2]  # -m_h (0) - (-m_h (1)) = m_h for the reference
        if bool((step < 0).all()):
            lines.append(
                "Diagnosis (tested: the step between neighbouring keys): your bias grows with "
                "the distance (it rewards far keys): the sign is flipped, e.g. "
                "m_h (i - j) or a key - query distance without the minus."
            )
        else:
            lines.append(
                f"Slopes read off your bias (step between the last two keys): {short_list(step)}"
            )
            if slopes_report(step, num_heads, max(rtol, 1e-5)) is None:
                lines.append(
                    "The slopes are right: the bias is not linear in i - j (check the distance "
                    "you multiply them by)."
                )
            else:
                lines += slopes_diagnosis({num_heads: step}, max(rtol, 1e-5))
    raise AssertionError("\n".join(lines))


# --------------------------------------------------------------------------- T5 buckets


def t5_model(
    rel: torch.Tensor,
    *,
    bidirectional: bool,
    num_buckets: int,
    max_distance: int,
    halve: bool = True,
    log_dtype: torch.dtype = torch.float32,
    rounding: str = "floor",
    cap: bool = True,
    future: str = "zero",
) -> torch.Tensor:
    """T5's bucket rule with switches for the common mistakes (defaults: the reference)."""
    rel = rel.to(torch.int64)
    buckets = torch.zeros_like(rel)
    per_direction = num_buckets // 2 if (bidirectional and halve) else num_buckets
    if bidirectional:
        buckets = buckets + (rel > 0).to(torch.int64) * per_direction
        distance = rel.abs()
    elif future == "zero":
        distance = (-rel).clamp(min=0)
    else:  # future keys bucketed by their distance, like past ones
        distance = rel.abs()
    exact = per_direction // 2
    scaled = torch.log(distance.clamp(min=1).to(log_dtype) / exact) / math.log(max_distance / exact)
    position = scaled * (per_direction - exact)
    position = torch.round(position) if rounding == "round" else position
    large = exact + position.to(torch.int64)
    if cap:
        large = large.clamp(max=per_direction - 1)
    return buckets + torch.where(distance < exact, distance, large)


def t5_bug_models(params: dict) -> list[tuple[str, str, Callable]]:
    """The common mistakes of T5 buckets as ``(title, detail, bucket function)``."""
    bidirectional, num_buckets = params["bidirectional"], params["num_buckets"]
    max_distance = params["max_distance"]
    other = "causal" if bidirectional else "bidirectional"
    models = [
        (
            "the query - key sign",
            "your fn uses query - key where T5 uses key - query (keys in the past have negative "
            "relative positions)",
            lambda r: t5_relative_bucket(-r, **params),
        ),
        (
            "the bidirectional flag inverted",
            f"your fn gives the {other} buckets",
            lambda r: t5_relative_bucket(r, **{**params, "bidirectional": not bidirectional}),
        ),
        (
            "buckets not halved per direction",
            "your fn gives each direction all num_buckets buckets instead of half of them",
            lambda r: t5_model(r, **params, halve=False),
        ),
        (
            "rounding instead of truncation",
            "your fn rounds the logarithmic bucket position where T5 truncates it",
            lambda r: t5_model(r, **params, rounding="round"),
        ),
        (
            "no saturation",
            f"your fn does not cap the buckets at {num_buckets - 1}: distances past "
            f"max_distance={max_distance} get buckets of their own",
            lambda r: t5_model(r, **params, cap=False),
        ),
        (
            "the logarithm in float64",
            "your fn evaluates the logarithm in float64; T5 (Mesh TensorFlow, HF) uses float32, "
            "and bucket edges differ where the value is within rounding of an integer",
            lambda r: t5_model(r, **params, log_dtype=torch.float64),
        ),
    ]
    if not bidirectional:
        future = (
            "future keys outside bucket 0",
            "your fn buckets future keys (key > query) by their distance; in the causal case T5 "
            "puts every future key in bucket 0, with distance 0 (they are masked anyway, but "
            "the bucket indexes the learned table)",
            lambda r: t5_model(r, **params, future="distance"),
        )
        models.insert(1, future)
    return models


def assert_t5_buckets_equal(
    fn: Callable[[torch.Tensor], torch.Tensor],
    *,
    bidirectional: bool = True,
    num_buckets: int = 32,
    max_distance: int = 128,
) -> None:
    r"""Check a T5 relative-position bucket function exactly, naming the classic mistake.

    Explained on the site: [ALiBi and T5](check.md#check-relative).

    ``fn(relative_position) -> buckets`` takes an int64 tensor of ``key - query`` distances
    (here every distance in ``[-3 max_distance, 3 max_distance]`` and a few far ones, up to
    ``±10**6``) and must return the same buckets as :func:`posenc_ref.t5_relative_bucket` with
    these parameters (HF transformers' rule, float32 logarithm), exactly. Models of the mistakes
    (the ``query - key`` sign, future keys not in bucket 0 for the causal case, the bidirectional
    flag inverted, buckets not halved per direction, rounding instead of truncation, no
    saturation, the logarithm in float64) are run on the same distances.

    Parameters
    ----------
    fn
        The bucket function under test (wrap your own in a lambda to fix its parameters).
    bidirectional, num_buckets, max_distance
        The reference's parameters (T5 defaults; ``bidirectional=False`` for a decoder).

    Raises
    ------
    AssertionError
        When any bucket differs.

    Examples
    --------
    >>> from posenc_ref import t5_relative_bucket
    >>> assert_t5_buckets_equal(t5_relative_bucket)
    """
    if not callable(fn):
        raise TypeError(f"fn must be callable as fn(relative_position), got {type(fn).__name__}")
    bidirectional = check_bool("bidirectional", bidirectional)
    num_buckets = check_int("num_buckets", num_buckets, minimum=2)
    max_distance = check_int("max_distance", max_distance, minimum=1)
    params = {
        "bidirectional": bidirectional,
        "num_buckets": num_buckets,
        "max_distance": max_distance,
    }
    far = torch.tensor([10**4, 10**5, 10**6])
    span = 3 * max_distance
    rel = torch.cat([-far.flip(0), torch.arange(-span, span + 1), far])
    expected = t5_relative_bucket(rel, **params)
    got_raw = fn(rel.clone())
    if not isinstance(got_raw, torch.Tensor) or got_raw.shape != rel.shape:
        raise AssertionError(
            f"fn(relative_position) must return a tensor of the same shape {tuple(rel.shape)}, "
            f"got {type(got_raw).__name__} {tuple(getattr(got_raw, 'shape', ()))}"
        )
    if got_raw.is_floating_point():
        raise AssertionError(f"buckets must be integers, got dtype {got_raw.dtype}")
    got = got_raw.to("cpu", torch.int64)
    bad = got != expected
    if not bool(bad.any()):
        return None
    where = torch.nonzero(bad).flatten()
    order = where[torch.argsort(rel[where].abs(), stable=True)]  # smallest distance first
    first = int(order[0])
    arguments = ", ".join(f"{k}={v}" for k, v in params.items())
    lines = [
        f"T5 buckets disagree with posenc_ref.t5_relative_bucket({arguments}).",
        f"First disagreement (smallest |key - query|): relative position {int(rel[first])}: "
        f"bucket {int(got[first])}, expected {int(expected[first])}; {int(bad.sum())} of "
        f"{rel.numel()} distances differ.",
    ]
    if int(got.min()) < 0 or int(got.max()) >= num_buckets:
        lines.append(
            f"Observed: your buckets range over {int(got.min())}..{int(got.max())}, outside "
            f"0..{num_buckets - 1}."
        )
    models = t5_bug_models(params)
    # A model identical to the reference on these distances cannot be told apart: not tested.
    models = [m for m in models if not bool((m[2](rel) == expected).all())]
    explained = [(t, d) for t, d, model in models if bool((model(rel) == got).all())]
    if explained:
        lines.append(
            f"Diagnosis (tested: {len(models)} models of common mistakes on the same distances; "
            + ("this one reproduces" if len(explained) == 1 else "these reproduce")
            + " your buckets exactly):"
        )
        lines += [f"    - {t}: {d}." for t, d in explained]
    else:
        lines.append(
            f"Diagnosis: none of the {len(models)} models of common mistakes reproduces your "
            "buckets."
        )
    lines.append("    distance: " + " ".join(f"{int(v):>4d}" for v in rel[order[:10]]))
    lines.append("    got:      " + " ".join(f"{int(v):>4d}" for v in got[order[:10]]))
    lines.append("    expected: " + " ".join(f"{int(v):>4d}" for v in expected[order[:10]]))
    raise AssertionError("\n".join(lines))
