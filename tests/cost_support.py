"""Measuring a run against its cost estimate (scenario/cost.py): CPU time and peak memory.

Two runs of the same scenario in this process: one timed (`time.process_time`, so the other
engineers' load on a shared machine does not count), one under `tracemalloc` for the peak of
what the simulation allocates (the interpreter and the imports are not the scenario's cost,
and the estimate does not count them). The ratio measured / estimated is what the tests and
the campaign judge; never a wall-clock limit.
"""

from __future__ import annotations

import gc
import time
import tracemalloc
from dataclasses import dataclass

from kvtui.scenario.cost import FACTOR, Cost, estimate
from kvtui.sim.engine import Simulation


@dataclass
class Measured:
    cpu_s: float
    peak_bytes: int

    def ratios(self, cost: Cost) -> tuple[float, float]:
        """(time, memory) as measured / estimated."""
        return self.cpu_s / max(cost.seconds, 1e-9), self.peak_bytes / max(cost.memory_bytes, 1)

    def within(self, cost: Cost, factor: float = FACTOR) -> bool:
        return all(r <= factor for r in self.ratios(cost))


def cost_of(scenario) -> Cost:
    """The estimate as the CLI makes it (a trace is scanned for its shape first)."""
    from kvtui.run.budget import cost_of as cli_cost_of

    return cli_cost_of(scenario)


def measure(scenario) -> Measured:
    return Measured(_cpu(scenario), _peak(scenario))


def _cpu(scenario) -> float:
    gc.collect()
    t0 = time.process_time()
    _run(scenario)
    return time.process_time() - t0


def _peak(scenario) -> int:
    gc.collect()
    tracemalloc.start()
    try:
        _run(scenario)
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def _run(scenario) -> None:
    sim = Simulation(scenario)
    try:
        sim.run()
    finally:
        sim.close()


def describe(scenario, cost: Cost, got: Measured) -> str:
    t, m = got.ratios(cost)
    return (f"{scenario.name}: {cost.summary()}; measured {got.cpu_s:.3f} s CPU ({t:.2f}x), "
            f"{got.peak_bytes / 1e6:.1f} MB peak ({m:.2f}x)")


__all__ = ["FACTOR", "Measured", "cost_of", "describe", "estimate", "measure"]
