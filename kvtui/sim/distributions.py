"""Drawing numbers from a scenario's `Dist`.

Every draw takes the caller's `numpy.random.Generator`: the engine owns one seeded stream for
the workload, so the same scenario and seed give the same prompts, lengths and pauses. A
`fixed` distribution draws nothing from the stream.
"""

from __future__ import annotations

import math

import numpy as np

from kvtui.scenario.model import Dist


def sample(dist: Dist, rng: np.random.Generator) -> float:
    """One draw, clipped to [min, max] when given, and never negative.

    The floor at 0 is there because every quantity a Dist describes (tokens, turns, seconds)
    is non-negative, and a negative pause would crash the event loop: a normal with a large std must
    not be able to produce one.
    """
    kind = dist.dist
    if kind == "fixed":
        x = dist.value
    elif kind == "uniform":
        x = rng.uniform(dist.low, dist.high)
    elif kind == "normal":
        x = rng.normal(dist.mean, dist.std) if dist.std > 0 else dist.mean
    elif kind == "lognormal":
        x = _lognormal(dist.mean, dist.sigma, rng)
    else:
        raise ValueError(f"unknown distribution {kind!r}")
    if dist.min is not None and x < dist.min:
        x = dist.min
    if dist.max is not None and x > dist.max:
        x = dist.max
    return float(x) if x > 0 else 0.0


def sample_int(dist: Dist, rng: np.random.Generator) -> int:
    """One draw rounded half-up to an integer >= 0 (token counts, turns).

    Half-up rather than Python's round-half-even, so `fixed: 2.5` means 3 as a reader expects.
    """
    return int(math.floor(sample(dist, rng) + 0.5))


def _lognormal(mean: float, sigma: float, rng: np.random.Generator) -> float:
    """A lognormal whose *result* has mean `mean`: mu = ln(mean) - sigma^2 / 2.

    Scenario authors think in "mean 512 tokens, some spread", not in the log-space mu.
    """
    if mean <= 0:
        return 0.0
    if sigma <= 0:
        return mean
    return rng.lognormal(math.log(mean) - 0.5 * sigma * sigma, sigma)
