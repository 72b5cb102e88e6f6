"""A run to its end with no screen: the library function behind `kvtui run`, `compare`, sweeps
and benchmarks.

It owns the only wall clock of a headless run (the result document's `wall_time_s`, measured
around the engine, never inside it) and turns the engine's event counts into `Progress` numbers
for whoever draws a bar (kvtui/cli/progress.py); the engine knows nothing of either.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Callable

from kvtui.events import Event
from kvtui.run.progress import Progress, progress_of
from kvtui.run.result import result_document
from kvtui.scenario.model import Scenario
from kvtui.scenario.run_spec import RunSpec
from kvtui.sim.engine import Simulation


@dataclass(frozen=True)
class Finished:
    """A run that reached its end: the closed simulation (figures only) and its result document."""

    simulation: Simulation
    document: dict



def run_to_end(
    run: RunSpec | Scenario,
    seed: int | None = None,
    policy: str | None = None,
    on_progress: Callable[[Progress], None] | None = None,
    on_event: Callable[[Event], None] | None = None,
    event_types: tuple[type[Event], ...] | None = None,
) -> Finished:
    """Run a run spec (or a scenario, resolved with `seed` and `policy`: kvtui/scenario/run_spec.py)
    to its end; `on_progress` gets numbers now and then, `on_event` every event
    (or only those of `event_types`: the others are then never built)."""
    t0 = time.perf_counter()
    sim = Simulation(run, seed=seed, policy=policy)
    if on_event is not None:
        sim.subscribe(on_event, event_types)
    tick = None if on_progress is None else (lambda _events: on_progress(progress_of(sim)))
    try:
        sim.run(progress=tick)
        return Finished(sim, result_document(sim, time.perf_counter() - t0))
    finally:
        sim.close()
