"""How far a run has got, for a progress display outside the engine (the CLI draws the bar).

The engine only reports numbers: `Simulation.run(progress=...)` calls back every so many events
with the count of events, and the run layer (kvtui/run/headless.py), which holds the
simulation, asks `progress_of` to turn its state into (done, total, unit, sim time). The measure is
the one the scenario ends on: finished requests when the workload's request count is known (a
trace, `workload.requests`, shared-prefix rounds), else simulated seconds towards `until_s` or
`workload.duration_s`, else started sessions towards `workload.sessions`; otherwise the total is
unknown (None) and a display can only count.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from kvtui.sim.engine import Simulation

@dataclass(frozen=True)
class Progress:
    done: float
    total: float | None
    unit: str  # "requests", "sim s" or "sessions"
    sim_time: float = 0.0  # where the run's clock is


def progress_of(sim: "Simulation") -> Progress:
    p = _measure(sim)
    return Progress(p.done, p.total, p.unit, sim.now)


def _measure(sim: "Simulation") -> Progress:
    m = sim.metrics
    finished = m.completed + m.rejected + m.failed
    total = _request_total(sim)
    if total is not None:
        return Progress(min(finished, total), total, "requests")
    if sim.until is not None:
        return Progress(min(sim.now, sim.until), sim.until, "sim s")
    w = sim.scenario.workload
    if w.duration_s is not None and w.trace is None and w.shared_prefix is None:
        return Progress(min(sim.now, w.duration_s), w.duration_s, "sim s")
    if w.sessions is not None:
        started = getattr(sim.workload, "sessions_started", 0)
        return Progress(min(started, w.sessions), w.sessions, "sessions")
    return Progress(finished, None, "requests")


def _request_total(sim: "Simulation") -> int | None:
    w = sim.scenario.workload
    if w.trace is not None:
        return sim.workload.total_requests
    if w.shared_prefix is not None:
        sp = w.shared_prefix
        return sp.rounds * sp.num_groups * sp.num_prompts_per_group if sp.rounds is not None else None
    return w.requests
