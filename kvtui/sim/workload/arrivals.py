"""Arrival processes: when sessions (or, for the shared-prefix generator, requests) begin.

Poisson and Gamma-bursty open loops with stepwise rate schedules, and closed-loop users. Trace
replay of the weka agent sessions uses them too.

All randomness comes from the `numpy.random.Generator` passed in; closed-loop users each get a
stream of their own (`Generator.spawn`), so their pauses do not depend on timing.
"""

from __future__ import annotations

from typing import Callable

import numpy as np
from kvtui.sim import loop

from kvtui.scenario.model import Arrival, RatePoint
from kvtui.sim.distributions import sample
from kvtui.sim.request import Request

Submit = Callable[[Request], loop.Event]
"""The engine's entry point: submit a request, get an event that fires with its outcome
("completed", "rejected", "failed")."""

IDLE_RETRY_S = 0.01
"""A closed-loop user whose session ended without any sim time passing (rejected at once) and
who has no think time waits this long before the next session, so an overloaded cluster
cannot trap the simulation in an endless loop at one instant."""


def start_arrivals(
    env: loop.Environment,
    arrival: Arrival,
    rng: np.random.Generator,
    may_start: Callable[[], bool],
    start: Callable[[], loop.Event],
) -> None:
    """Start the processes that begin sessions.

    `may_start()` says whether another session may begin now (the stop conditions); `start()`
    begins one and returns an event that fires when it is over (closed-loop users wait on it).
    """
    if arrival.process == "closed_loop":
        for user_rng in rng.spawn(arrival.users):  # own pauses per user: timing-independent
            env.process(_closed_loop_user(env, arrival, user_rng, may_start, start))
    else:
        env.process(_open_loop(env, arrival, rng, may_start, start))


def _open_loop(env: loop.Environment, arrival: Arrival, rng, may_start, start):
    """Sessions begin at random gaps, whatever the cluster is doing.

    The first session begins one gap after t=0, like any renewal process. When the scheduled
    rate changes before the next arrival, the draw is discarded and a new one made at the new
    rate from the change point: exact for Poisson (memoryless), a restart for gamma.
    """
    points = sorted(arrival.schedule, key=lambda p: p.at)
    while True:
        rate, change = rate_at(arrival.rate, points, env.now)
        if rate <= 0:
            if change is None:
                return
            yield env.timeout(change - env.now)
            continue
        gap = _gap(arrival, rate, rng)
        if change is not None and env.now + gap > change:
            yield env.timeout(change - env.now)
            continue
        yield env.timeout(gap)
        if not may_start():
            return
        start()


def rate_at(base: float, points: list[RatePoint], t: float) -> tuple[float, float | None]:
    """The open-loop rate in force at `t`, and when it next changes (None: never).

    Before the first point the Arrival's own `rate` holds. Points that repeat the current rate
    are not changes, so they do not disturb a gamma process.
    """
    rate = base
    i = 0
    while i < len(points) and points[i].at <= t:
        rate = points[i].rate
        i += 1
    while i < len(points):
        if points[i].rate != rate:
            return rate, points[i].at
        i += 1
    return rate, None


def _gap(arrival: Arrival, rate: float, rng: np.random.Generator) -> float:
    """Time to the next session start: exponential (poisson) or Gamma with squared CV = burstiness."""
    if arrival.process == "gamma":
        b = arrival.burstiness
        return float(rng.gamma(1.0 / b, b / rate))
    return float(rng.exponential(1.0 / rate))


def _closed_loop_user(env, arrival: Arrival, rng, may_start, start):
    """One user: a session, then a pause, then the next session, while the stop conditions allow."""
    while may_start():
        began = env.now
        yield start()
        pause = sample(arrival.think_time_s, rng)
        if pause <= 0 and env.now == began:
            pause = IDLE_RETRY_S
        if pause > 0:
            yield env.timeout(pause)
