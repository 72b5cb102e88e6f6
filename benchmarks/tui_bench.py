"""The app's speed on a big cluster: step time, frame time, key-press latency.

Run:  python benchmarks/tui_bench.py [--scenario scenarios/big-cluster.yaml] [--quick]

Everything is reported as a ratio against a baseline measured in the same run on this machine
(never as an absolute limit):

- step time: the app's `Run` advancing the simulation event by event (what play mode and
  the single-step key do) against a plain `sim.run_until(t)` over the same sim time, with no
  screen at all. The ratio is the price of stepping one event at a time plus the app's
  listener.
- frame time: how long one play-mode frame holds the event loop (advance the simulation under
  its wall budget, then update every panel), and how long the compositor takes to draw the
  whole screen, each against the frame period (1 / FPS).
- key latency: while playing at full speed, press a key that changes the screen (next node)
  and wait until it has been handled and drawn; reported against the 100 ms target.
- memory (`--memory`, issue 25): the app's Run plays the whole scenario (building
  checkpoints between chunks, as the app does while idle), then steps back `--back` events;
  reported: resident memory against the checkpoint byte budget (kvtui/sim/checkpoint_budget.py),
  checkpoints kept and dropped for memory, and the wall time per step back. The Textual modules
  are imported but no screen is drawn.
- `--key-json`: only the key latency at 200x60, printed as one JSON line (peer_bench.py reads
  it for issue 23's target).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import resource
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from kvtui.scenario import load_scenario  # noqa: E402
from kvtui.sim.engine import Simulation  # noqa: E402
from kvtui.tui.app import make_app  # noqa: E402
from kvtui.tui.frame_loop import FPS, FRAME_BUDGET_S  # noqa: E402
from kvtui.run import Run  # noqa: E402

TARGET_KEY_MS = 100.0
SPEED = 50.0  # sim seconds per wall second asked for (more than the engine can give: budget-bound)


def pct(values: list[float], q: float) -> float:
    if not values:
        return 0.0
    values = sorted(values)
    i = min(len(values) - 1, max(0, round(q / 100 * (len(values) - 1))))
    return values[i]


def bench_step(scenario, sim_seconds: float) -> dict:
    # baseline: the engine alone, run_until in one call
    sim = Simulation(scenario)
    t0 = time.perf_counter()
    sim.run_until(sim_seconds)
    base = time.perf_counter() - t0
    events = sim.bus.seq
    # the app's way: one event at a time through the Run (listener included)
    runner = Run(scenario)
    t0 = time.perf_counter()
    runner.advance(sim_seconds, budget_s=float("inf"))
    stepped = time.perf_counter() - t0
    # step() returns at the next *event*, so it may end a few simpy steps past `sim_seconds`;
    # compare the cost per event.
    stepped_events = runner.position
    return {
        "events": events,
        "baseline_s": base,
        "stepped_s": stepped,
        "us_per_event_baseline": base / events * 1e6,
        "us_per_event_stepped": stepped / stepped_events * 1e6,
    }


async def key_latency(app) -> float:
    """Send one key the way a terminal would and wait until the screen has redrawn it.

    (Pilot.press waits for the process to go idle, which never happens while playing, so the
    key goes straight to the driver and the block map reports when it drew the new
    selection.)"""
    from textual import events

    maps = app.maps
    before = app.selected_node
    drawn: list[float] = []
    original = maps.render_line

    def spy(y: int):
        if not drawn and maps.selected != before:
            drawn.append(time.perf_counter())
        return original(y)

    maps.render_line = spy
    t0 = time.perf_counter()
    app._driver.send_message(events.Key("right_square_bracket", "]"))
    while not drawn and time.perf_counter() - t0 < 5:
        await asyncio.sleep(0.001)
    maps.render_line = original
    return ((drawn[0] if drawn else time.perf_counter()) - t0) * 1000


async def bench_frames(scenario, size: tuple[int, int], frames: int, speed: float) -> dict:
    app = make_app(scenario)
    frame_ms: list[float] = []
    compose_ms: list[float] = []
    key_ms: list[float] = []
    async with app.run_test(size=size) as pilot:
        await pilot.pause()
        app.speed = speed
        await pilot.press("space")
        period = 1 / FPS
        n = 0
        while n < frames and not app.runner.ended:
            await asyncio.sleep(period)
            n += 1
            if n % 10 == 0:
                # full redraw of the screen, as the compositor does it
                t0 = time.perf_counter()
                app.screen._compositor.render_update(full=True)
                compose_ms.append((time.perf_counter() - t0) * 1000)
            if n % 7 == 0:
                key_ms.append(await key_latency(app))
        frame_ms = [t * 1000 for t in app.frame_times]
        budget_ms = app.budget * 1000
        sim_t = app.runner.now
        await pilot.press("space")
    return {
        "size": size,
        "frames": len(frame_ms),
        "sim_time": sim_t,
        "frame_ms": frame_ms,
        "compose_ms": compose_ms,
        "key_ms": key_ms,
        "budget_ms": budget_ms,
    }


def bench_memory(scenario, back: int) -> None:
    from kvtui.run.checkpoint_budget import process_memory

    mb = 2**20
    from kvtui.run import Run

    runner = Run(scenario)
    budget = runner.source.budget
    print(f"\nmemory: budget {budget.limit_bytes / mb:.0f} MB resident; at start {process_memory() / mb:.0f} MB")
    t0 = time.perf_counter()
    while not runner.ended:
        runner.advance(runner.now + 5.0, budget_s=0.5)
        runner.maintain(0.05)
    played = time.perf_counter() - t0
    print(f"  full play: {runner.position:,} events in {played:.1f} s; {process_memory() / mb:.0f} MB, "
          f"{len(runner.source.checkpoints)} checkpoints")
    t0 = time.perf_counter()
    for _ in range(back):
        runner.back()
        runner.maintain(0.05)
    stepped = time.perf_counter() - t0
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux
    print(f"  {back} steps back to event {runner.position:,}: {stepped / max(1, back):.2f} s each; "
          f"{process_memory() / mb:.0f} MB now, {peak:.0f} MB peak; {len(runner.source.checkpoints)} checkpoints "
          f"kept, {budget.dropped} dropped for memory")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--scenario", default=str(ROOT / "scenarios" / "big-cluster.yaml"))
    p.add_argument("--quick", action="store_true", help="fewer frames, shorter sim time")
    p.add_argument("--memory", action="store_true", help="only the memory run: full play, then --back steps back")
    p.add_argument("--back", type=int, default=100, help="steps back in the memory run (default 100)")
    p.add_argument("--key-json", action="store_true", help="only key to screen at 200x60, as one JSON line (peer_bench.py)")
    args = p.parse_args(argv)
    scenario = load_scenario(args.scenario, [])
    if args.key_json:
        r = asyncio.run(bench_frames(scenario, (200, 60), 60 if args.quick else 200, speed=SPEED))
        k = r["key_ms"]
        print(json.dumps({"p50_ms": pct(k, 50), "p95_ms": pct(k, 95), "max_ms": max(k, default=0.0), "n": len(k)}))
        return 0
    if args.memory:
        bench_memory(scenario, args.back)
        return 0
    nodes = len(scenario.cluster.nodes)
    print(f"scenario {scenario.name}: {nodes} nodes")

    sim_seconds = 10.0 if args.quick else 30.0
    s = bench_step(scenario, sim_seconds)
    print(f"\nstep time over {sim_seconds:g} sim s ({s['events']:,} events)")
    print(f"  baseline sim.run_until      {s['baseline_s'] * 1000:9.1f} ms  {s['us_per_event_baseline']:7.2f} us/event")
    print(f"  Run.advance (app path)   {s['stepped_s'] * 1000:9.1f} ms  {s['us_per_event_stepped']:7.2f} us/event")
    print(f"  ratio app / baseline        {s['us_per_event_stepped'] / s['us_per_event_baseline']:9.2f} x  (per event)")

    period_ms = 1000 / FPS
    frames = 60 if args.quick else 200
    for size in ((200, 60), (80, 24)):
        r = asyncio.run(bench_frames(scenario, size, frames, speed=SPEED))
        f, c, k = r["frame_ms"], r["compose_ms"], r["key_ms"]
        print(f"\nplay at x{SPEED:g} on {size[0]}x{size[1]}: {r['frames']} frames, sim reached t={r['sim_time']:.1f} s")
        print(
            f"  frame period (1/{FPS} s)       {period_ms:7.1f} ms   advance budget {FRAME_BUDGET_S * 1000:.0f} ms max,"
            f" adapted to {r['budget_ms']:.1f} ms at the end"
        )
        if f:
            print(
                f"  frame work p50 / p95 / max   {pct(f, 50):7.1f} / {pct(f, 95):5.1f} / {max(f):5.1f} ms"
                f"   = {pct(f, 50) / period_ms:.2f} / {pct(f, 95) / period_ms:.2f} / {max(f) / period_ms:.2f} x period"
            )
        if c:
            print(
                f"  full redraw p50 / max        {pct(c, 50):7.1f} / {max(c):5.1f} ms"
                f"   = {pct(c, 50) / period_ms:.2f} / {max(c) / period_ms:.2f} x period"
            )
        if k:
            print(
                f"  key to screen p50 / p95 / max{pct(k, 50):7.1f} / {pct(k, 95):5.1f} / {max(k):5.1f} ms"
                f"   = {pct(k, 50) / TARGET_KEY_MS:.2f} / {pct(k, 95) / TARGET_KEY_MS:.2f} / {max(k) / TARGET_KEY_MS:.2f} x the 100 ms target"
                f"  (n={len(k)}, mean {statistics.mean(k):.1f})"
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
