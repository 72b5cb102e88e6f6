"""The Why of every event kind pressure.yaml produces is readable in full at 120x40 (and a
rejection's at 80x24): either the panel holds the whole text, or its title says it is cut and
`y` opens a screen on which the text's last words can be scrolled into view."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from screen_support import screen_text
from textual.containers import VerticalScroll

from kvtui.events import Event
from kvtui.scenario import load_scenario
from kvtui.tui.app import make_app
from kvtui.tui.screens.why import WhyScreen
from kvtui.tui.widgets.explanation import CUT_HINT

PRESSURE = Path(__file__).resolve().parents[2] / "scenarios" / "pressure.yaml"
KINDS = ("arrived", "routed", "rejected", "scheduled", "stored", "evicted", "preempted", "first_token",
         "completed", "batch", "node_down", "node_up", "cache_cleared", "pinned", "cp_crash", "cp_recovered")


CLASS_OF = {cls.kind: cls for cls in Event.__subclasses__()}


async def assert_readable(app, pilot, ev) -> None:
    app.highlight = ev
    app.refresh_panels(force=True)
    await pilot.pause()
    why = app.why
    assert why.body == app.runner.explain(ev) and why.body, ev.kind
    tail = " ".join(why.body.split()[-2:])
    if not why.cut():
        assert tail in screen_text(app, why.region), (ev.kind, tail)
        return
    assert CUT_HINT.strip() in screen_text(app, why.region), ev.kind
    await pilot.press("y")
    await pilot.pause()
    assert isinstance(app.screen, WhyScreen), ev.kind
    await pilot.press("end")
    await pilot.pause()
    assert tail in screen_text(app, app.screen.query_one(VerticalScroll).content_region), (ev.kind, tail)
    await pilot.press("escape")
    await pilot.pause()


@pytest.mark.parametrize("size, kinds", [((120, 40), KINDS), ((80, 24), ("rejected",))], ids=["120x40", "80x24"])
def test_why_of_every_event_kind_is_readable_in_full(size, kinds):
    async def go():
        app = make_app(load_scenario(str(PRESSURE), []), fps=0, theme="dark")
        async with app.run_test(size=size) as pilot:
            missing = set(kinds)
            while missing:
                ev = app.runner.seek(tuple(CLASS_OF[k] for k in missing), float("inf"))
                assert ev, f"pressure.yaml produced no {sorted(missing)}"
                missing.discard(ev.kind)
                await assert_readable(app, pilot, ev)

    asyncio.run(go())


DISAGGREGATION = PRESSURE.parent / "disaggregation.yaml"


def test_a_disaggregated_run_in_the_app_shows_both_picks_pools_and_moves():
    """The P/D scenario in the app: the Why of each disaggregation event is readable in full, and
    the maps name each node's pool, with the KV in flight on both nodes' labels mid-transfer."""
    async def go():
        app = make_app(load_scenario(str(DISAGGREGATION), []), fps=0, theme="dark")
        async with app.run_test(size=(160, 50)) as pilot:
            for kind in ("routed", "decode_routed", "transfer", "transferred"):
                ev = app.runner.seek((CLASS_OF[kind],), float("inf"))
                assert ev, kind
                await assert_readable(app, pilot, ev)
            ev = app.runner.seek((CLASS_OF["transfer"],), float("inf"))
            app.highlight = ev
            app.refresh_panels(force=True)
            await pilot.pause()
            text = screen_text(app)
            assert "prefill" in text and "decode" in text
            assert "⇢1" in text and "⇠1" in text, "the move shows on both maps"

    asyncio.run(go())
