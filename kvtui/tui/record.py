"""`kvtui record SCENARIO --steps N --out FILE.svg`: the app rendered headless to an SVG.

The picture depends only on the arguments: the app runs without its frame timer, the
simulation is advanced by explicit steps (and optional jumps), and the screenshot is taken
while paused. Rich names the SVG's CSS classes after a checksum of the content (not a random
id), so the same command twice writes the same bytes; `_stable_svg` keeps it that way should
a future Rich go back to random ids.

Options beyond the contract (`--steps --out --size --theme`, plus `--policy --seed --set`):
`--until T` advances to sim time T first, `--jump KIND` (repeatable) then jumps to the next
eviction / rejection / preemption / failure, `--screen help` shows the help screen and
`--zoom NODE` the zoomed node, `--crash` crashes the control plane before the picture.
"""

from __future__ import annotations

import asyncio
import re
from pathlib import Path

from kvtui.errors import InputError

DEFAULT_SIZE = (120, 40)
JUMPS = ("eviction", "rejection", "preemption", "failure", "crash", "recovery")


def _parser():
    from kvtui.cli.common import Parser, policy_help, seed_value

    p = Parser(prog="kvtui record", description="Render the app after N steps to an SVG (deterministic).")
    p.add_argument("scenario", help="scenario YAML file")
    p.add_argument("--steps", type=int, default=0, metavar="N", help="events to step before the screenshot (default 0)")
    p.add_argument("--out", required=True, metavar="FILE.svg", help="where to write the SVG")
    p.add_argument("--size", default=f"{DEFAULT_SIZE[0]}x{DEFAULT_SIZE[1]}", metavar="COLSxROWS", help="terminal size (default 120x40)")
    p.add_argument("--theme", help="colour theme (dark, light, high-contrast)")
    p.add_argument("--policy", help=policy_help())
    p.add_argument("--seed", type=seed_value, help="override the scenario's seed")
    p.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE", help="override a scenario field (repeatable)")
    p.add_argument("--until", type=float, metavar="T", help="first advance the simulation to sim time T (seconds)")
    p.add_argument("--jump", action="append", default=[], choices=JUMPS, help="then jump to the next event of this kind (repeatable)")
    p.add_argument("--screen", choices=("main", "help"), default="main", help="which screen to show")
    p.add_argument("--zoom", metavar="NODE", help="show this node zoomed")
    p.add_argument("--crash", action="store_true", help="crash the control plane after the steps and jumps")
    p.add_argument("--title", help="window title in the SVG (default: kvtui SCENARIO)")
    return p


def parse_size(text: str) -> tuple[int, int]:
    from kvtui.cli.common import UsageError

    m = re.fullmatch(r"\s*(\d+)\s*[xX]\s*(\d+)\s*", text)
    if not m:
        raise UsageError(f"kvtui record: --size wants COLSxROWS, e.g. 120x40; got {text!r}")
    cols, rows = int(m.group(1)), int(m.group(2))
    if not (20 <= cols <= 1000 and 6 <= rows <= 500):
        raise UsageError(f"kvtui record: --size {cols}x{rows} is out of range (20..1000 x 6..500)")
    return cols, rows


def _stable_svg(svg: str) -> str:
    """Replace Rich's per-export id (`terminal-<digits>`) by a checksum of the rest, so the
    output is byte-identical for identical pictures whatever Rich does with the id."""
    import zlib

    ids = sorted(set(re.findall(r"terminal-(\d+)", svg)))
    if not ids:
        return svg
    body = re.sub(r"terminal-\d+", "terminal-ID", svg)
    stable = str(zlib.crc32(body.encode("utf-8")))
    return body.replace("terminal-ID", f"terminal-{stable}")


async def render_svg(
    scenario,
    *,
    steps: int = 0,
    size: tuple[int, int] = DEFAULT_SIZE,
    theme: str | None = None,
    policy: str | None = None,
    seed: int | None = None,
    until: float | None = None,
    jumps: list[str] | tuple[str, ...] = (),
    screen: str = "main",
    zoom: str | None = None,
    title: str | None = None,
    crash: bool = False,
    after_crash_steps: int = 0,
) -> str:
    """Run the app headless, drive it, and return the screenshot (SVG text)."""
    from kvtui.tui.app import make_app

    app = make_app(scenario, seed=seed, policy=policy, theme=theme, fps=0)
    if zoom is not None and zoom not in [n.name for n in app.runner.sim.nodes]:
        raise InputError.one("--zoom", None, f"no node {zoom!r}; nodes: {', '.join(app.runner.node_names())}")
    async with app.run_test(size=size) as pilot:
        await pilot.pause()
        runner = app.runner
        if until is not None:
            runner.advance(until, budget_s=float("inf"))
            runner.current = runner.last_emitted
        for _ in range(steps):
            if runner.step() is None:
                break
        for kind in jumps:
            app.action_seek(kind)
        if crash:
            app.action_crash()
            for _ in range(after_crash_steps):
                if runner.step() is None:
                    break
        app.refresh_panels(force=True)
        await pilot.pause()
        if zoom is not None:
            app._zoom(zoom)
            await pilot.pause()
        if screen == "help":
            app.action_help()
            await pilot.pause()
        app.refresh_panels(force=True)
        await pilot.wait_for_scheduled_animations()
        await pilot.pause()
        svg = app.export_screenshot(title=title or f"kvtui {scenario.name}")
    return _stable_svg(svg)


def record_main(argv: list[str]) -> int:
    from kvtui.cli.common import check_policy, load

    args = _parser().parse_args(argv)
    size = parse_size(args.size)
    check_policy(args.policy)
    from kvtui.cli.paths import check_output

    check_output(args.out, [args.scenario], "SVG")
    if args.steps < 0:
        from kvtui.cli.common import UsageError

        raise UsageError("kvtui record: --steps must be >= 0")
    scenario = load(args)
    svg = asyncio.run(
        render_svg(
            scenario,
            steps=args.steps,
            size=size,
            theme=args.theme,
            policy=args.policy,
            seed=args.seed,
            until=args.until,
            jumps=args.jump,
            screen=args.screen,
            zoom=args.zoom,
            title=args.title,
            crash=args.crash,
        )
    )
    from kvtui.cli.common import write_output

    out = Path(args.out)
    write_output(str(out), svg, "the SVG")  # atomic, regular files only (issue 10)
    print(f"{out}: {size[0]}x{size[1]}, {len(svg):,} bytes")
    return 0
