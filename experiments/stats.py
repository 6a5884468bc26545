"""Intervals over seeds, and paired differences between two runs that share their seeds.

A seed fixes a run's weights, its training batches and its test sets; two runs with the same seed
(two encodings, two bases, two methods) see the same batches and are scored on the same
sequences. The seed-to-seed spread of a score is the noise that matters here (a model's whole
training is the random draw), so intervals are Student's t over seeds, not binomial over
sequences, and a comparison between two runs uses their per-seed differences (paired), which
removes what the seed does to both.
"""

from __future__ import annotations

import functools
import math
import statistics
from collections.abc import Sequence
from typing import NamedTuple


def _t_pdf(x: float, df: int) -> float:
    log_c = math.lgamma((df + 1) / 2) - math.lgamma(df / 2) - 0.5 * math.log(df * math.pi)
    return math.exp(log_c - (df + 1) / 2 * math.log1p(x * x / df))


def t_cdf(x: float, df: int) -> float:
    """Student's t distribution function, by Simpson's rule on the density (error < 1e-10)."""
    if df < 1:
        raise ValueError(f"df must be >= 1, got {df}")
    if x < 0:
        return 1.0 - t_cdf(-x, df)
    n = 4000  # even; the density is smooth, so Simpson's error is far below what is printed
    h = x / n
    total = _t_pdf(0.0, df) + _t_pdf(x, df)
    total += sum((4 if i % 2 else 2) * _t_pdf(i * h, df) for i in range(1, n))
    return 0.5 + total * h / 3


@functools.lru_cache(maxsize=64)  # a report asks for a handful of (p, df), hundreds of times
def t_quantile(p: float, df: int) -> float:
    """The ``p`` quantile of Student's t with ``df`` degrees of freedom (``0.5 < p < 1``)."""
    if not 0.5 < p < 1:
        raise ValueError(f"p must be in (0.5, 1), got {p}")
    low, high = 0.0, 1.0
    while t_cdf(high, df) < p:
        high *= 2
    for _ in range(60):  # bisection to float precision
        mid = (low + high) / 2
        low, high = (mid, high) if t_cdf(mid, df) < p else (low, mid)
    return (low + high) / 2


class Interval(NamedTuple):
    """A mean over ``n`` seeds and its two-sided 95 % t interval (``nan`` bounds when ``n < 2``)."""

    mean: float
    low: float
    high: float
    n: int

    def excludes_zero(self) -> bool:
        """Whether the interval lies wholly on one side of zero (the sign is then supported)."""
        return self.n >= 2 and (self.low > 0 or self.high < 0)


def interval(values: Sequence[float], level: float = 0.95) -> Interval:
    r"""Mean and t interval :math:`\bar x \pm t_{n-1}\, s/\sqrt n` of ``values`` (one per seed)."""
    n = len(values)
    if n == 0:
        return Interval(math.nan, math.nan, math.nan, 0)
    mean = statistics.fmean(values)
    if n == 1:
        return Interval(mean, math.nan, math.nan, 1)
    half = t_quantile(0.5 + level / 2, n - 1) * statistics.stdev(values) / math.sqrt(n)
    return Interval(mean, mean - half, mean + half, n)


def paired(a: dict[int, float], b: dict[int, float], level: float = 0.95) -> Interval:
    """The interval of ``a - b`` over the seeds both have (``{seed: score}`` each)."""
    seeds = sorted(set(a) & set(b))
    return interval([a[s] - b[s] for s in seeds], level)
