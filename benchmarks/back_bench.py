"""How fast `b` (one event back) answers: the engine's Drive on a scenario, by default
scenarios/pressure.yaml, against the 0.5 s target of issue 11.

Run:  python benchmarks/back_bench.py [--scenario scenarios/pressure.yaml] [--backs 20]

For points at 25 / 50 / 75 / 95 % of the run's events: go there, then
- cold: step back at once, before any checkpoint was built (the replay starts from the run
  the jump left behind or from the start);
- warm: let the idle-time builder (`Drive.maintain`, which the app calls between frames while
  paused) finish, then step back `--backs` times in a row, as a student pressing b would.
Times are wall seconds on this machine, printed with their ratio to the target.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from kvtui.scenario import load_scenario  # noqa: E402
from kvtui.run.drive import FOLDABLE, Drive  # noqa: E402

TARGET_S = 0.5


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--scenario", default=str(ROOT / "scenarios" / "pressure.yaml"))
    p.add_argument("--backs", type=int, default=20)
    args = p.parse_args(argv)
    scenario = load_scenario(args.scenario, [])
    total = Drive(scenario)
    t0 = time.perf_counter()
    while total.step() is not None:
        pass
    events, full = total.position, time.perf_counter() - t0
    total.close()
    print(f"scenario {scenario.name}: {events:,} events; one straight run through the Drive takes {full:.3f} s")
    print(f"target: a step back answers within {TARGET_S} s\n")
    worst = 0.0
    for share in (0.25, 0.5, 0.75, 0.95):
        at = int(events * share)
        d = Drive(scenario, clock=time.perf_counter)
        d.goto(at)
        t = time.perf_counter()
        d.back(FOLDABLE)
        cold = time.perf_counter() - t
        d.goto(at)
        t = time.perf_counter()
        d.maintain(float("inf"))
        build = time.perf_counter() - t
        times = []
        for _ in range(args.backs):
            t = time.perf_counter()
            d.back(FOLDABLE)
            times.append(time.perf_counter() - t)
        worst = max(worst, cold, max(times))
        print(
            f"at event {at:>6,} ({share:.0%}): cold back {cold:.3f} s = {cold / TARGET_S:.2f} x target; "
            f"idle checkpoint build {build:.2f} s ({len(d.checkpoints)} checkpoints); "
            f"{args.backs} backs p50 {statistics.median(times):.3f} s max {max(times):.3f} s = {max(times) / TARGET_S:.2f} x target"
        )
        d.close()
    print(f"\nworst step back: {worst:.3f} s = {worst / TARGET_S:.2f} x the {TARGET_S} s target")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
