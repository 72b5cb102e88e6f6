"""The Belief panel (kvtui/tui/widgets/belief_panel.py): shown for a simulation and for a recording
of real engines, its figures are the headless run's for the same seed or recording (`kvtui run`'s
`routing.available`; `replay --no-ui`'s available-vs-achieved line), its engine rows add up to
its total, `]` moves its Why to the next engine, and a step back takes its figures back."""

from __future__ import annotations

import asyncio
import re

from kvtui.live.available import available_line
from kvtui.live.delivery import Served
from kvtui.run.headless import run_to_end
from kvtui.run.live import LiveSource
from kvtui.scenario import load_scenario
from kvtui.tui.app import make_app, make_live_app

from live.made_recording import made_routed_recording

PRESSURE = "scenarios/pressure.yaml"


async def _belief_text(app, pilot, *keys: str) -> str:
    while app.view != "belief":  # at 80x24 one panel shows at a time: `v` to the Belief tab
        await pilot.press("v")
    await pilot.press(*keys)
    app.refresh_panels(force=True)
    await pilot.pause()
    return app.query_one("#belief").text.plain


def _all_line(text: str) -> list[str]:
    line = next(line for line in text.splitlines() if line.startswith("all: "))
    return re.findall(r"(\d+\.\d)", line)


def test_a_simulation_s_belief_equals_its_headless_run():
    scenario = load_scenario(PRESSURE)
    doc = run_to_end(scenario).document["routing"]
    a = doc["available"]

    async def go():
        app = make_app(scenario, theme="dark", fps=0)
        async with app.run_test(size=(80, 24)) as pilot:
            app.runner.goto(10**9)
            text = await _belief_text(app, pilot)
            view = app.runner.belief_view()
            assert (view.total.prompt_blocks, view.total.available, view.total.chosen) == (
                a["prompt_blocks"], a["available_blocks"], a["chosen_blocks"])
            assert view.total.requests == doc["index"]["decisions"] and view.total.stale == doc["index"]["stale_decisions"]
            for i in range(5):  # the engines' rows add up to the total
                assert sum((e.routed.requests, e.routed.prompt_blocks, e.routed.available, e.routed.chosen,
                            e.routed.stale)[i] for e in view.engines) == (
                    view.total.requests, a["prompt_blocks"], a["available_blocks"], a["chosen_blocks"], view.total.stale)[i]
            assert _all_line(text) == [f"{100 * a['available_hit_rate']:.1f}", f"{100 * a['chosen_hit_rate']:.1f}",
                                       f"{100 * a['given_away']:.1f}"]
            assert f"stale at {doc['index']['stale_decisions']}/{doc['index']['decisions']} decisions" in text
            assert text.splitlines()[-1].startswith("node-a: the index credits it with")
            for e in view.engines:  # at the end every published event has reached the index
                assert [(t.tier, t.credited - t.holds, t.wrong, t.unknown) for t in e.tiers] == [("gpu", 0, 0, 0)]
            text = await _belief_text(app, pilot, "right_square_bracket")
            assert text.splitlines()[-1].startswith("node-b: the index credits it with")
    asyncio.run(go())


def test_a_recording_s_belief_equals_replay_no_ui():
    deliveries = made_routed_recording(policy="round_robin")
    said = available_line([d for d in deliveries if isinstance(d, Served)])
    best, chosen, away, served = re.findall(r"(\d+\.\d)", said)[:4]

    async def go():
        app = make_live_app(LiveSource(deliveries), "replay made.rec", theme="dark", fps=0)
        async with app.run_test(size=(120, 40)) as pilot:
            app.runner.goto(app.runner.source.end)
            text = await _belief_text(app, pilot)
            assert _all_line(text) == [best, chosen, served, away]
            assert float(away) > 0  # round robin gives hits away: the figure is not a trivial 0
            assert "vllm-a" in text and "vllm-b" in text and "index from the engines' KV events" in text
            on_show = app.runner.decisions[-1].node  # no engine selected yet: the one the decision on show went to
            assert text.splitlines()[-1].startswith(f"{on_show}: the index holds")
            assert "requests routed here" in text.splitlines()[-1]
    asyncio.run(go())


def test_a_step_back_takes_a_recording_s_belief_back():
    deliveries = made_routed_recording(policy="round_robin")
    ahead = LiveSource(deliveries)
    ahead.goto(ahead.end)
    middle = ahead.end // 2
    ahead.goto(middle)
    fresh = LiveSource(deliveries)
    fresh.goto(middle)
    assert ahead.belief_view() == fresh.belief_view()
    assert 0 < fresh.belief_view().total.requests < 60


def test_the_belief_tab_draws_itself_when_shown_on_a_paused_run():
    """Hidden, the panel skips its ticks; `v` onto it while paused must not leave it blank until
    the run moves (it was, at 80x24, found in tmux)."""
    async def go():
        app = make_app(load_scenario(PRESSURE), fps=0, theme="dark")
        async with app.run_test(size=(80, 24)) as pilot:
            app.goto("20")
            await pilot.pause()
            app.refresh_panels(force=True)
            await pilot.pause()
            while app.view != "belief":
                await pilot.press("v")
            await pilot.pause()
            assert "node-a" in app.query_one("#belief").text.plain

    asyncio.run(go())
