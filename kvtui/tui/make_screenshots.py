"""Make the README's screenshots: `python -m kvtui.tui.make_screenshots [--out screenshots]`.

Every picture is `kvtui record` of scenarios/pressure.yaml at a telling moment, so the same
command on the same code gives the same files. The moments are found by sim time and by
jumping to events (not by step counts), so they survive small changes of the workload:

  01-warm-up           t=15 s: system prompts cached, prefix hits, blocks filling
  02-eviction-storm    t=38 s, then the next eviction: pools full, LRU blocks evicted
  03-node-failure      the scripted failure of a node: its map crossed out, requests re-routed
  04-peak              t=62 s: the peak of the load (queues, rejections, preemptions)
  05-zoom              t=38 s, node-a zoomed: every block its own cell
  06-help              the help screen
  07-crash-recovery    scenarios/crash-recovery.yaml: the control plane replayed its WAL
  08-small-terminal    80x24, after the node failure
  09-split-screen      `--policy cache_aware --vs load_prefix` at t=44.5 s (end of "load rises,
                       first evictions"): cache_aware piles chat onto one node, load_prefix spreads it
  10-live              `kvtui replay` of screenshots/10-live.rec, a session of two real vLLM
                       publishers that tests/live/make_live_screenshot.py recorded (it needs the
                       vllm peer; the recording is kept, so the picture needs nothing)

tests/tui/test_screenshots.py makes every one again and compares it byte for byte with the
file in screenshots/: a change that alters a picture fails until the picture is made again
(this command) and looked at. (screenshots/sweep-ttft-p95.svg is a docs block's chart:
docs/generate.py makes and checks it.)
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SIZE = (120, 40)

SHOTS = [
    ("01-warm-up", dict(until=15.0)),
    ("02-eviction-storm", dict(until=38.0, jumps=["eviction"])),
    ("03-node-failure", dict(jumps=["failure"], steps=30)),
    ("04-peak", dict(until=62.0)),
    ("05-zoom", dict(until=38.0, zoom="node-a")),
    ("06-help", dict(screen="help")),
    ("07-crash-recovery", dict(jumps=["recovery"], scenario="crash-recovery.yaml")),
    ("08-small-terminal", dict(jumps=["failure"], steps=30, size=(80, 24))),
]


LIVE = "10-live"
LIVE_RECORDING = ROOT / "screenshots" / f"{LIVE}.rec"
LIVE_SIZE = (120, 36)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--scenario", default=str(ROOT / "scenarios" / "pressure.yaml"))
    p.add_argument("--out", default=str(ROOT / "screenshots"))
    p.add_argument("--theme", default="dark")
    args = p.parse_args(argv)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    for name, svg, size in make_all(args.scenario, args.theme):
        path = out / f"{name}.svg"
        path.write_text(svg, encoding="utf-8")
        print(f"{path}: {size[0]}x{size[1]}")
    return 0


def make_all(scenario_path: str, theme: str = "dark") -> Iterator[tuple[str, str, tuple[int, int]]]:
    """Every picture: (name, SVG text, size). A shot whose scenario is missing is skipped."""
    from kvtui.scenario import load_scenario
    from kvtui.tui.record import render_svg

    scenario = load_scenario(scenario_path, [])
    for name, kw in SHOTS:
        kw = dict(kw)
        size = kw.pop("size", SIZE)
        sc = scenario
        other = kw.pop("scenario", None)
        if other is not None:
            path = ROOT / "scenarios" / other
            if not path.exists():
                print(f"skip {name}: {path} is missing")
                continue
            sc = load_scenario(str(path), [])
        yield name, asyncio.run(render_svg(sc, size=size, theme=theme, title=f"kvtui {sc.name}", **kw)), size
    yield "09-split-screen", asyncio.run(_split_screen(scenario, theme)), SIZE
    yield LIVE, asyncio.run(live_screenshot(LIVE_RECORDING, LIVE_SIZE, theme)), LIVE_SIZE


async def live_screenshot(recording: Path, size: tuple[int, int], theme: str = "dark") -> str:
    """The app replaying `recording` (read from a copy: reading takes the store's lock file,
    which must not touch the repository's), at its last event."""
    from kvtui.live.recording import read_recording
    from kvtui.run.live import LiveSource
    from kvtui.tui.app import make_live_app
    from kvtui.tui.record import _stable_svg

    with tempfile.TemporaryDirectory() as tmp:
        copy = Path(tmp) / recording.name
        shutil.copytree(recording, copy)
        source = LiveSource(read_recording(str(copy)))
        app = make_live_app(source, f"replay {recording.name}", theme=theme, fps=0)
        async with app.run_test(size=size) as pilot:
            app.runner.goto(source.end)
            app.refresh_panels(force=True)
            await pilot.pause()
            return _stable_svg(app.export_screenshot(title=f"kvtui replay {recording.name}"))


async def _split_screen(scenario, theme: str) -> str:
    from kvtui.tui.compare import make_compare_app
    from kvtui.tui.record import _stable_svg

    app = make_compare_app(scenario, "load_prefix", policy="cache_aware", theme=theme, fps=0)
    async with app.run_test(size=SIZE) as pilot:
        app.lockstep.advance(44.5, budget_s=float("inf"))
        app.refresh_panels()
        await pilot.pause()
        svg = app.export_screenshot(title=f"kvtui {scenario.name} --policy cache_aware --vs load_prefix")
    return _stable_svg(svg)


if __name__ == "__main__":
    raise SystemExit(main())
