"""Engine speed: simulated requests per wall second, microseconds per request.

Run:  python benchmarks/engine_bench.py [--quick] [--rounds 3]

Prints, for the standard workload (benchmarks/standard.yaml) and for scenarios/pressure.yaml,
the engine on each of its two event loops (kvtui/sim/event_loop.py: simpy, the pure build's,
and kvtui/sim/loop.py, the compiled build's twin, here run pure), `--rounds` alternated rounds
each, medians of CPU seconds (the machine is shared: wall time moves with the neighbours):
simulated requests per CPU second, microseconds per request, events per request, the ratio
simpy / kvtui's loop, and ratios against baselines measured in the same run on this machine:
- `loop floor`: a bare loop (kvtui/sim/loop.py) that schedules as many timeouts as the engine
  processed loop events — the cost of the discrete-event kernel alone;
- `simpy floor`: the same on simpy;
- `workload only`: generating and hashing the same requests with no cluster behind them.
The issue's target is < 0.5 ms per simulated request.
"""

from __future__ import annotations

import argparse
import os
import statistics
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
LOOPS = ("kvtui", "simpy")


def run_engine(scenario, loop_name: str) -> tuple[float, Simulation, int, int]:
    """One whole run on the loop `loop_name`: CPU seconds, the simulation, loop events processed
    (scheduled, counted by the loop's ids, less those still queued) and engine events heard."""
    os.environ["KVTUI_LOOP"] = loop_name
    t0 = time.process_time()
    sim = Simulation(scenario)
    events = 0

    def count(_ev):
        nonlocal events
        events += 1

    sim.subscribe(count)
    sim.run()
    seconds = time.process_time() - t0
    env = sim.env
    ids = env._ids if isinstance(env, loop.Environment) else env._eid  # type: ignore[attr-defined]
    return seconds, sim, next(ids) - len(env._queue), events


def kernel_floor(env, n_events: int) -> float:
    def proc():
        for _ in range(n_events):
            yield env.timeout(0.001)

    env.process(proc())
    t0 = time.process_time()
    while env.peek() != float("inf"):
        env.step()
    return time.process_time() - t0


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

    t0 = time.process_time()
    wl.start(env, submit)
    env.run_through(float("inf"), sys.maxsize)
    return time.process_time() - t0


def bench(label: str, scenario, rounds: int) -> None:
    cpu: dict[str, list[float]] = {name: [] for name in LOOPS}
    for _ in range(rounds):  # alternated, so that a neighbour's load falls on both loops alike
        for name in LOOPS:
            seconds, sim, loop_events, events = run_engine(scenario, name)
            cpu[name].append(seconds)
    m = sim.metrics
    n = max(m.arrived, 1)
    print(f"\n== {label}: {m.arrived:,} requests ({m.completed:,} completed, {m.rejected:,} rejected), "
          f"{sim.now:,.1f} s simulated, {events / n:.1f} events/request, {loop_events / n:.1f} loop events/request")
    for name in LOOPS:
        cpu_s = statistics.median(cpu[name])
        print(f"  engine on {name:6s} {cpu_s:8.3f} CPU s   {n / cpu_s:10,.0f} req/s   {cpu_s / n * 1e6:8.1f} us/request"
              f"   (rounds: {', '.join(f'{c:.3f}' for c in cpu[name])})")
    simpy_cpu, kvtui_cpu = statistics.median(cpu["simpy"]), statistics.median(cpu["kvtui"])
    print(f"  simpy / kvtui's loop = {simpy_cpu / kvtui_cpu:6.3f}x")
    floor = kernel_floor(loop.Environment(), loop_events)
    simpy_floor = kernel_floor(simpy.Environment(), loop_events)
    wl = workload_only(scenario)
    us = simpy_cpu / n * 1e6
    print(f"  loop floor    {floor:8.3f} s   engine (simpy) / floor = {simpy_cpu / floor:6.2f}x")
    print(f"  simpy floor   {simpy_floor:8.3f} s   engine (simpy) / floor = {simpy_cpu / simpy_floor:6.2f}x")
    print(f"  workload only {wl:8.3f} s   engine (simpy) / workload = {simpy_cpu / wl:6.2f}x")
    print(f"  target        {TARGET_US:8.0f} us/request   engine (simpy) / target = {us / TARGET_US:6.2f}x "
          f"({'meets' if us < TARGET_US else 'misses'} the target)")


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="1,000 requests instead of 10,000")
    p.add_argument("--rounds", type=int, default=3, help="alternated rounds of each loop (default 3)")
    args = p.parse_args()
    overrides = ["workload.requests=1000"] if args.quick else []
    bench("standard (4 nodes, 512 in / 256 out, 20 req/s, roofline)", load_scenario(ROOT / "benchmarks/standard.yaml", overrides), args.rounds)
    bench("scenarios/pressure.yaml (with its WAL store)", load_scenario(ROOT / "scenarios/pressure.yaml"), args.rounds)
    bench("scenarios/pressure.yaml without the store", load_scenario(ROOT / "scenarios/pressure.yaml", ["metadata=null"]), args.rounds)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
