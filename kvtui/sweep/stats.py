"""Mean and a Student-t confidence interval over a cell's seeds, with the standard library only.

The interval is mean +/- t(1 - alpha/2, n-1) * s / sqrt(n) (s the sample standard deviation):
seeds are few (3-10), so the normal 1.96 would be too narrow. The t quantile comes from the
t distribution's CDF, written with the regularized incomplete beta function
(F(t) = 1 - I_x(df/2, 1/2) / 2 for t >= 0, x = df / (df + t^2)), evaluated by its continued
fraction (modified Lentz), and inverted by bisection.
"""

from __future__ import annotations

import math
from dataclasses import dataclass


def _betacf(a: float, b: float, x: float) -> float:
    """The continued fraction of the incomplete beta function (converges for x < (a+1)/(a+b+2))."""
    tiny, eps = 1e-300, 1e-15
    c, d = 1.0, 1.0 - (a + b) * x / (a + 1.0)
    d = 1.0 / (d if abs(d) > tiny else tiny)
    h = d
    for m in range(1, 500):
        for num in (m * (b - m) * x / ((a + 2 * m - 1) * (a + 2 * m)), -(a + m) * (a + b + m) * x / ((a + 2 * m) * (a + 2 * m + 1))):
            d = 1.0 + num * d
            d = 1.0 / (d if abs(d) > tiny else tiny)
            c = 1.0 + num / c
            c = c if abs(c) > tiny else tiny
            h *= d * c
        if abs(d * c - 1.0) < eps:
            break
    return h


def betainc(a: float, b: float, x: float) -> float:
    """The regularized incomplete beta function I_x(a, b)."""
    if x <= 0.0:
        return 0.0
    if x >= 1.0:
        return 1.0
    log_front = math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log1p(-x)
    if x < (a + 1.0) / (a + b + 2.0):
        return math.exp(log_front) * _betacf(a, b, x) / a
    return 1.0 - math.exp(log_front) * _betacf(b, a, 1.0 - x) / b


def t_cdf(t: float, df: float) -> float:
    tail = 0.5 * betainc(df / 2.0, 0.5, df / (df + t * t))
    return 1.0 - tail if t >= 0 else tail


def t_quantile(p: float, df: float) -> float:
    """The t value with CDF p (0.5 < p < 1), by bisection to 1e-12."""
    if not 0.5 <= p < 1.0:
        raise ValueError("t_quantile wants 0.5 <= p < 1")
    lo, hi = 0.0, 1.0
    while t_cdf(hi, df) < p:
        hi *= 2.0
    while hi - lo > 1e-12 * max(1.0, hi):
        mid = (lo + hi) / 2.0
        lo, hi = (mid, hi) if t_cdf(mid, df) < p else (lo, mid)
    return (lo + hi) / 2.0


@dataclass(frozen=True)
class Estimate:
    n: int
    mean: float
    half_width: float | None  # None with one sample: no interval

    @property
    def low(self) -> float | None:
        return None if self.half_width is None else self.mean - self.half_width

    @property
    def high(self) -> float | None:
        return None if self.half_width is None else self.mean + self.half_width


def estimate(values: list[float], confidence: float = 0.95) -> Estimate | None:
    """Mean and confidence half-width of the samples; None when there are none."""
    xs = [float(v) for v in values if v is not None and not math.isnan(float(v))]
    n = len(xs)
    if n == 0:
        return None
    mean = math.fsum(xs) / n
    if n == 1:
        return Estimate(1, mean, None)
    var = math.fsum((x - mean) ** 2 for x in xs) / (n - 1)
    t = t_quantile(1.0 - (1.0 - confidence) / 2.0, n - 1)
    return Estimate(n, mean, t * math.sqrt(var / n))
