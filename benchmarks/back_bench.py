"""How fast `b` (one event back) answers, as the app drives it: the run's Drive under the
checkpoint byte budget (kvtui/run/checkpoint_budget.py), by default on scenarios/mooncake.yaml,
against the 0.5 s p95 target (issues 11 and 35).

Run:  python benchmarks/back_bench.py [--scenario scenarios/mooncake.yaml] [--backs 20]
      [--budget-mb N] [--idle 0.05]

The whole scenario is played first, building checkpoints between chunks as the app does while
idle. Then, for points at 25 / 50 / 75 / 95 % of the run's events: go there (a jump back), and
step back `--backs` times in a row, as a student pressing b would, with `--idle` wall seconds of
checkpoint building between presses (the app's idle frames). Reported: every step back's wall
time, their p50 / p95 / max against the target, the checkpoints kept and those dropped for
memory, and the peak resident memory. The budget is the app's default (it scales with the
machine) unless `--budget-mb` sets it.
"""

from __future__ import annotations

import argparse
import resource
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from kvtui.run.checkpoint_budget import CheckpointBudget, default_budget_bytes, process_memory  # noqa: E402
from kvtui.run.drive import FOLDABLE, Drive  # noqa: E402
from kvtui.scenario import load_scenario  # noqa: E402

TARGET_S = 0.5
MB = 2**20


def percentile(times: list[float], q: float) -> float:
    """numpy's linear rule (kvtui/percentiles.py), without importing the engine's helpers."""
    s = sorted(times)
    pos = (len(s) - 1) * q
    lo = int(pos)
    hi = min(lo + 1, len(s) - 1)
    return s[lo] + (s[hi] - s[lo]) * (pos - lo)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--scenario", default=str(ROOT / "scenarios" / "mooncake.yaml"))
    p.add_argument("--backs", type=int, default=20)
    p.add_argument("--budget-mb", type=float, default=None, help="checkpoint budget (default: the app's)")
    p.add_argument("--idle", type=float, default=0.05, help="wall seconds of checkpoint building between presses")
    args = p.parse_args(argv)
    scenario = load_scenario(args.scenario, [])
    limit = default_budget_bytes() if args.budget_mb is None else int(args.budget_mb * MB)
    budget = CheckpointBudget(limit_bytes=limit)
    d = Drive(scenario, clock=time.perf_counter, budget=budget)
    t0 = time.perf_counter()
    while not d.ended:
        d.advance(d.now + 5.0, 0.5)
        d.maintain(0.05)
    events, played = d.position, time.perf_counter() - t0
    print(f"scenario {scenario.name}: {events:,} events, played in {played:.2f} s; budget {limit / MB:.0f} MB "
          f"resident; {len(d.checkpoints)} checkpoints")
    all_times: list[float] = []
    for share in (0.25, 0.5, 0.75, 0.95):
        at = int(events * share)
        t = time.perf_counter()
        d.goto(at)
        jump = time.perf_counter() - t
        times = []
        for _ in range(args.backs):
            d.maintain(args.idle)
            t = time.perf_counter()
            d.back(FOLDABLE)
            times.append(time.perf_counter() - t)
        all_times += times
        print(f"at event {at:>6,} ({share:.0%}): jump {jump:.2f} s; {args.backs} backs p50 {statistics.median(times):.3f} s "
              f"max {max(times):.3f} s; {len(d.checkpoints)} checkpoints, {(process_memory() or 0) / MB:.0f} MB")
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    p95 = percentile(all_times, 0.95)
    print(f"\n{len(all_times)} steps back: p50 {percentile(all_times, 0.5):.3f} s, p95 {p95:.3f} s "
          f"= {p95 / TARGET_S:.2f} x the {TARGET_S} s target, max {max(all_times):.3f} s; "
          f"{budget.dropped} checkpoints dropped for memory; peak {peak:.0f} MB resident")
    d.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
