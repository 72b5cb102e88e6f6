"""The bounded fit: Levenberg-Marquardt on the log of each knob (plus its offset: knobs.py), numpy only.

The residuals are log(simulated / measured) of each fit stage's percentiles (a relative error,
so TTFT in milliseconds and E2E in seconds weigh alike), weighted: the medians of TTFT and TPOT
count fully, E2E and ITL half, a p90 a quarter of its median (a simulated tail is narrower than
a real one, and should not drag the median). A weak pull toward each knob's prior (its centre
`Knob.prior`, else the profile's value; PRIOR / `Knob.spread` per unit of log) keeps a knob the
data cannot see in place: a workload whose prompts are all cached says nothing about the
prefill's compute efficiency, and one load level little about how a decode step splits into a
fixed and a per-byte cost; without the pull the fit would wander along those flat directions. The Jacobian is taken by forward differences of
whole engine runs (a run is deterministic for its seed, so the differences are not noise); a
step that leaves the bounds is clipped to them. The linear algebra is a (knobs x knobs) normal
system solved by LAPACK's gesv: far too small for BLAS threads to matter.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

from kvtui.calibrate.knobs import Knob

PRIOR = 0.05
STEP = 0.05  # forward-difference step, in log units (5 %)


@dataclass(frozen=True)
class FitResult:
    values: dict[str, float]
    cost: float  # sum of squared weighted residuals at the end (prior included)
    start_cost: float
    runs: int  # residual evaluations (each one engine run per fit stage)
    iterations: int


def fit(residuals: Callable[[dict[str, float]], np.ndarray], knobs: tuple[Knob, ...], start: dict[str, float],
        iterations: int = 8) -> FitResult:
    """Knob values minimising |residuals|^2 + |PRIOR (x - centre) / spread|^2 within the bounds
    (x: log(value + offset)), starting from `start`."""
    names = [k.name for k in knobs]
    off = np.array([k.offset for k in knobs])
    lo = np.log([k.low + k.offset for k in knobs])
    hi = np.log([k.high + k.offset for k in knobs])
    x0 = np.clip(np.log([start[n] for n in names] + off), lo, hi)
    centre = np.clip(np.log([k.prior if k.prior is not None else start[k.name] for k in knobs] + off), lo, hi)
    weight = PRIOR / np.array([k.spread for k in knobs])

    def values(x: np.ndarray) -> dict[str, float]:
        return dict(zip(names, map(float, np.clip(np.exp(x) - off, [k.low for k in knobs], [k.high for k in knobs]))))
    cache: dict[tuple, np.ndarray] = {}

    def res(x: np.ndarray) -> np.ndarray:
        key = tuple(np.round(x, 9))
        if key not in cache:
            r = residuals(values(x))
            cache[key] = np.concatenate([r, weight * (x - centre)])
        return cache[key]

    x, r = x0, res(x0)
    start_cost = cost = float(r @ r)
    lam, done = 1e-2, 0
    while done < iterations:
        done += 1
        J = np.empty((len(r), len(x)))
        for i in range(len(x)):
            h = STEP if x[i] + STEP <= hi[i] else -STEP
            xi = x.copy()
            xi[i] += h
            J[:, i] = (res(xi) - r) / h
        improved = False
        for _ in range(4):
            A = J.T @ J
            A = A + lam * np.diag(np.diag(A) + 1e-9)
            dx = np.linalg.solve(A, -J.T @ r)
            xn = np.clip(x + dx, lo, hi)
            rn = res(xn)
            cn = float(rn @ rn)
            if cn < cost:
                improved = cost - cn > 1e-4 * cost
                x, r, cost, lam = xn, rn, cn, lam / 3
                break
            lam *= 4
        if not improved:
            break
    return FitResult(values(x), cost, start_cost, len(cache), done)
