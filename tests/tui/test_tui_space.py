"""The room a terminal gives (issue 35, item 5), asserted on what the app draws via the Pilot.

At 120x40 nothing that matters is cut: the candidates table shows every column's name (turning
when it is wider than its panel), its heading and every decision-log line keep the policy, the
chosen node and its score. At 250x70 the panels show more decision lines and more candidates
than at 120x40 (the right half becomes two columns of panels there)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from kvtui.events import RouteDecided
from kvtui.scenario import load_scenario
from kvtui.tui.app import make_app
from kvtui.tui.widgets.candidates import candidate_rows, pick_score
from screen_support import screen_text

HERE = Path(__file__).resolve().parent


async def _at(app, pilot, t: float) -> None:
    """The app paused at `t` simulated seconds, every panel drawn."""
    app.goto(str(t))
    await pilot.pause()
    app.refresh_panels(force=True)
    await pilot.pause()


def _log_lines(log) -> list[str]:
    """The decision log's rows as drawn (its heading first when it has room for one)."""
    return [log.render_line(y).text for y in range(log.scrollable_content_region.height)]


@pytest.mark.parametrize("policy", ["load_prefix", "dynamo", "mooncake", "predicted_latency", "cache_aware"])
def test_at_120x40_every_column_and_the_pick_with_its_score_show(make, policy):
    async def go():
        app = make(policy=policy)
        async with app.run_test(size=(120, 40)) as pilot:
            await _at(app, pilot, 6)
            ev = app.candidates.decision
            assert isinstance(ev, RouteDecided) and ev.node is not None
            shown = screen_text(app, app.candidates.region)
            header, _ = candidate_rows(ev)
            for name in header:
                assert name.strip() in shown, (policy, name, shown)
            for word in (ev.request, ev.node, ev.policy, f"score {pick_score(ev)}"):
                assert word in shown, (policy, word, shown)
            width = app.candidates.scrollable_content_region.width
            assert max(len(line) for line in app.candidates.plain.splitlines()) <= width, app.candidates.plain

            lines = _log_lines(app.decision_log)
            assert lines[0].startswith(policy) and "score" in lines[0], lines[0]
            shown_decisions = [d for d in app.decision_log.items][-(len(lines) - 1):]
            assert len(shown_decisions) >= 4
            for line, d in zip(lines[1:], shown_decisions):
                assert f"→ {d.node}" in line and f" {pick_score(d)} " in line, (line, d.reason)

    asyncio.run(go())


def _visible(app) -> tuple[int, int]:
    """(decision lines, candidate rows) the app has on screen."""
    log_rows = sum(1 for line in _log_lines(app.decision_log) if "→ " in line)
    names = {c.node for c in app.candidates.decision.candidates}
    shown = screen_text(app, app.candidates.region).split()
    return log_rows, len(names & set(shown))


def test_a_big_screen_shows_more_decisions_and_candidates():
    scenario = load_scenario(str(HERE / "scenario-64.yaml"), [])

    async def seen(size: tuple[int, int]) -> tuple[int, int]:
        app = make_app(scenario, fps=0, theme="dark")
        async with app.run_test(size=size) as pilot:
            await _at(app, pilot, 8)
            assert len(app.runner.decisions) > 60
            return _visible(app)

    small, big = asyncio.run(seen((120, 40))), asyncio.run(seen((250, 70)))
    print("visible (decision lines, candidates) at 120x40", small, "at 250x70", big)
    assert big[0] > 2 * small[0], (small, big)
    assert big[1] > small[1], (small, big)


def test_the_huge_layout_puts_panels_side_by_side(make):
    async def go():
        app = make()
        async with app.run_test(size=(250, 70)) as pilot:
            await _at(app, pilot, 4)
            assert app.has_class("-huge")
            log, cands, events = app.decision_log.region, app.candidates.region, app.event_log.region
            assert log.width > cands.width and cands.y > log.y, "the log runs across the top"
            assert events.x > cands.x and events.y == cands.y, "events beside the candidates"
        narrower = make()
        async with narrower.run_test(size=(160, 50)):
            assert narrower.has_class("-wide") and not narrower.has_class("-huge")

    asyncio.run(go())
