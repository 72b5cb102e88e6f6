"""Simulated results of every shipped scenario, recorded and compared (the speed work's guard).

Run:  python benchmarks/figures.py record before.json     (on the unchanged engine)
      python benchmarks/figures.py compare before.json    (after a change; exit 1 on a drift)
      python benchmarks/figures.py record pl.json --policy predicted_latency --only small
      (every scenario routed by one policy instead of its own: a change to a policy that no
      shipped scenario names by default, e.g. predicted_latency's trainer, is checked this way)

A speed change must not change what the simulation says. For each scenario in scenarios/*.yaml
and scenarios/seed-table/*.yaml this records the figures a user reads (completed, rejected,
token hit rate, TTFT/E2E/ITL p50 and p95, evicted blocks, preemptions) and the SHA-256 of the
event stream. `compare` prints every figure that moved by more than 1 % (the issue's bound)
and every digest that changed: a changed digest with unchanged figures means the event
stream changed shape (e.g. fewer, longer decode segments), which the commit must explain.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from kvtui.scenario import load_scenario  # noqa: E402
from kvtui.run import run_to_end  # noqa: E402

TOLERANCE = 0.01


def scenario_paths() -> list[Path]:
    s = ROOT / "scenarios"
    return sorted(s.glob("*.yaml")) + sorted((s / "seed-table").glob("*.yaml"))


def figures(path: Path, policy: str | None = None) -> dict:
    """Run one scenario to its end (routed by `policy`, or its own); its key figures and event digest."""
    digest = Digest()
    t0 = time.perf_counter()
    sim = run_to_end(load_scenario(path), policy=policy, on_event=digest.feed).simulation
    return figures_of(sim, digest, time.perf_counter() - t0)


class Digest:
    """The SHA-256 of an event stream, and its length: fed every event of a run."""

    def __init__(self) -> None:
        self.hash = hashlib.sha256()
        self.count = 0

    def feed(self, ev) -> None:
        self.count += 1
        self.hash.update(repr(ev).encode())


def figures_of(sim, digest: Digest, wall: float) -> dict:
    """The key figures of a simulation that has run to its end, with its events' digest."""
    m = sim.metrics
    lat = m.latency_ms()
    return {
        "completed": m.completed,
        "rejected": m.rejected,
        "preempted": m.preempted,
        "token_hit_rate": round(m.token_hit_rate, 6),
        "evicted_blocks": m.evicted_blocks,
        "ttft_p50": lat["ttft"]["p50"],
        "ttft_p95": lat["ttft"]["p95"],
        "e2e_p50": lat["e2e"]["p50"],
        "e2e_p95": lat["e2e"]["p95"],
        "itl_p50": lat["itl"]["p50"],
        "itl_p95": lat["itl"]["p95"],
        "sim_time_s": round(sim.now, 6),
        "events": digest.count,
        "digest": digest.hash.hexdigest(),
        "wall_s": round(wall, 3),
    }


def record(out: Path, only: list[str], policy: str | None = None) -> None:
    data: dict = {"policy": policy} if policy else {}
    for p in scenario_paths():
        name = str(p.relative_to(ROOT / "scenarios"))
        if only and not any(o in name for o in only):
            continue
        data[name] = figures(p, policy)
        f = data[name]
        print(f"{name:34s} {f['completed']:6d} done  hit {f['token_hit_rate']:.4f}  "
              f"{f['events']:8d} events  {f['wall_s']:7.2f} s", flush=True)
    out.write_text(json.dumps(data, indent=1, sort_keys=True))


def drift(a: float, b: float) -> float:
    if a == b:
        return 0.0
    return abs(b - a) / max(abs(a), 1e-12)


def compare(before: Path, only: list[str]) -> int:
    old = json.loads(before.read_text())
    policy = old.pop("policy", None)  # recorded with --policy: compared under the same policy
    bad = 0
    for name, f0 in old.items():
        if only and not any(o in name for o in only):
            continue
        f1 = figures(ROOT / "scenarios" / name, policy)
        moved = [
            f"{k} {f0[k]} -> {f1[k]} ({drift(f0[k], f1[k]) * 100:+.2f} %)"
            for k in f0
            if k not in ("digest", "events", "wall_s", "sim_time_s") and drift(f0[k], f1[k]) > TOLERANCE
        ]
        small = [k for k in f0 if k not in ("digest", "events", "wall_s") and 0 < drift(f0[k], f1[k]) <= TOLERANCE]
        same = "same digest" if f0["digest"] == f1["digest"] else f"digest changed ({f0['events']} -> {f1['events']} events)"
        speed = f"{f0['wall_s']:.2f} -> {f1['wall_s']:.2f} s"
        status = "DRIFT" if moved else "ok"
        print(f"{status:5s} {name:34s} {same:40s} {speed}" + (f"  within 1 %: {', '.join(small)}" if small else ""))
        for m in moved:
            print(f"        {m}")
        bad += bool(moved)
    print(f"\n{bad} scenario(s) drifted by more than {TOLERANCE * 100:.0f} %")
    return 1 if bad else 0


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("action", choices=("record", "compare"))
    p.add_argument("file", type=Path)
    p.add_argument("--only", action="append", default=[], help="scenario names containing this (repeatable)")
    p.add_argument("--policy", help="record: route every scenario by this policy (compare reads it from the file)")
    a = p.parse_args()
    if a.action == "record":
        record(a.file, a.only, a.policy)
        return 0
    return compare(a.file, a.only)


if __name__ == "__main__":
    raise SystemExit(main())
