"""Engine speed: simulated requests per wall second, microseconds per request.

Run:  python benchmarks/engine_bench.py [--quick]

Prints, for the standard workload (benchmarks/standard.yaml) and for scenarios/pressure.yaml:
wall time, simulated requests per wall second, microseconds per request, events per request,
and ratios against two baselines measured in the same run on this machine:
- `loop floor`: a bare loop (kvtui/sim/loop.py, the engine's) that schedules as many timeouts
  as the engine processed loop events — the cost of the discrete-event kernel alone;
- `simpy floor`: the same on simpy, which the engine ran on before issue 23's own loop;
- `workload only`: generating and hashing the same requests with no cluster behind them.
The issue's target is < 0.5 ms per simulated request.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import simpy

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from kvtui.scenario import load_scenario  # noqa: E402
from kvtui.sim import loop  # noqa: E402
from kvtui.sim.engine import Simulation  # noqa: E402

TARGET_US = 500.0


class CountingEnv(loop.Environment):
    """The engine's loop, counting the events it processes."""

    def __init__(self):
        super().__init__()
        self.processed = 0

    def run_through(self, limit: float, most: int) -> int:
        done = super().run_through(limit, most)
        self.processed += done
        return done


def run_engine(scenario) -> tuple[float, Simulation, int, int]:
    t0 = time.perf_counter()
    orig = loop.Environment
    loop.Environment = CountingEnv  # the engine builds its env through the module attribute
    try:
        sim = Simulation(scenario)
    finally:
        loop.Environment = orig
    events = 0

    def count(_ev):
        nonlocal events
        events += 1

    sim.subscribe(count)
    sim.run()
    return time.perf_counter() - t0, sim, sim.env.processed, events


def kernel_floor(env, n_events: int) -> float:
    def proc():
        for _ in range(n_events):
            yield env.timeout(0.001)

    env.process(proc())
    t0 = time.perf_counter()
    while env.peek() != float("inf"):
        env.step()
    return time.perf_counter() - t0


def workload_only(scenario) -> float:
    """Generate the same requests, completing each at once: the workload's own cost."""
    import numpy as np

    from kvtui.sim.workload import SyntheticWorkload

    env = loop.Environment()
    workload_seq, _router_seq = np.random.SeedSequence(scenario.seed).spawn(2)
    wl = SyntheticWorkload(scenario.workload, scenario.cluster.block_size, np.random.default_rng(workload_seq))

    def submit(req):
        ev = env.event()
        ev.succeed("completed")
        return ev

    t0 = time.perf_counter()
    wl.start(env, submit)
    env.run_through(float("inf"), sys.maxsize)
    return time.perf_counter() - t0


def bench(label: str, scenario) -> None:
    wall, sim, loop_events, events = run_engine(scenario)
    m = sim.metrics
    n = max(m.arrived, 1)
    floor = kernel_floor(loop.Environment(), loop_events)
    simpy_floor = kernel_floor(simpy.Environment(), loop_events)
    wl = workload_only(scenario)
    us = wall / n * 1e6
    print(f"\n== {label}: {m.arrived:,} requests ({m.completed:,} completed, {m.rejected:,} rejected), "
          f"{sim.now:,.1f} s simulated")
    print(f"  engine        {wall:8.3f} s   {n / wall:10,.0f} req/s   {us:8.1f} us/request   "
          f"{events / n:6.1f} events/request   {loop_events / n:6.1f} loop events/request")
    print(f"  loop floor    {floor:8.3f} s   engine / floor = {wall / floor:6.2f}x")
    print(f"  simpy floor   {simpy_floor:8.3f} s   engine / floor = {wall / simpy_floor:6.2f}x")
    print(f"  workload only {wl:8.3f} s   engine / workload = {wall / wl:6.2f}x")
    print(f"  target        {TARGET_US:8.0f} us/request   engine / target = {us / TARGET_US:6.2f}x "
          f"({'meets' if us < TARGET_US else 'misses'} the target)")


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="1,000 requests instead of 10,000")
    args = p.parse_args()
    overrides = ["workload.requests=1000"] if args.quick else []
    bench("standard (4 nodes, 512 in / 256 out, 20 req/s, roofline)", load_scenario(ROOT / "benchmarks/standard.yaml", overrides))
    bench("scenarios/pressure.yaml (with its WAL store)", load_scenario(ROOT / "scenarios/pressure.yaml"))
    bench("scenarios/pressure.yaml without the store", load_scenario(ROOT / "scenarios/pressure.yaml", ["metadata=null"]))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
