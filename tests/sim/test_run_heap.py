"""`Simulation.run` freezes the heap between batches of events, so the collector's full passes
skip the cluster's long-lived state, and thaws it at the end, so a process that runs many
simulations (sweeps, tests) still collects the cyclic garbage of the ones it dropped."""

from __future__ import annotations

import gc
from pathlib import Path

from kvtui.scenario import load_scenario
from kvtui.sim.engine import Simulation

STANDARD = Path(__file__).resolve().parents[2] / "benchmarks" / "standard.yaml"


def test_run_freezes_the_heap_while_it_runs_and_thaws_it_after():
    sim = Simulation(load_scenario(STANDARD, ["workload.requests=300"]))
    frozen: list[int] = []
    sim.run(progress=lambda _n: frozen.append(gc.get_freeze_count()), every=256)
    assert len(frozen) > 2 and all(f > 0 for f in frozen[:-1])  # between batches
    assert frozen[-1] == 0 and gc.get_freeze_count() == 0  # the last call comes after the thaw


def test_a_simulation_dropped_is_collected_by_the_next_run():
    """The thaw puts the heap back in the oldest generation without counting it towards a full
    pass, so without the pass at a run's end the dropped simulations (cycles) were never freed."""
    gc.collect()  # what earlier tests dropped
    before = live_simulations()
    first = Simulation(load_scenario(STANDARD, ["workload.requests=300"]))
    first.run(every=256)
    assert live_simulations() == before + 1
    del first
    Simulation(load_scenario(STANDARD, ["workload.requests=300"])).run(every=256)
    # one left: the second, dropped after its own run's pass (a cycle nothing has collected yet)
    assert live_simulations() == before + 1


def live_simulations() -> int:
    """Simulations the collector still tracks; not a weak reference, because the compiled
    engine's native classes (mypyc, .ci/checks/compiled.sh) cannot be weakly referenced."""
    return sum(1 for o in gc.get_objects() if isinstance(o, Simulation))
