"""The app rendered headless to an SVG (`kvtui record`, whose arguments kvtui/cli/record.py parses).

The picture depends only on the arguments: the app runs without its frame timer, the
simulation is advanced by explicit steps (and optional jumps), and the screenshot is taken
while paused. Rich names the SVG's CSS classes after a checksum of the content (not a random
id), so the same command twice writes the same bytes; `_stable_svg` keeps it that way should
a future Rich go back to random ids.
"""

from __future__ import annotations

import re

from kvtui.errors import InputError

DEFAULT_SIZE = (120, 40)


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
    """Run the app on `scenario` (a run spec, or a scenario resolved with `seed` and `policy`)
    headless, drive it, and return the screenshot (SVG text)."""
    from kvtui.tui.app import make_app

    app = make_app(scenario, seed=seed, policy=policy, theme=theme, fps=0)
    if zoom is not None and zoom not in app.runner.node_names():
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
        svg = app.export_screenshot(title=title or f"kvtui {app.runner.name}")
    return _stable_svg(svg)
