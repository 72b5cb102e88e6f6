"""One app for every run: the main app (kvtui/tui/app.py) on a recording of real engines
(kvtui/run/live.py), made in the tests (tests/live/made_recording.py: route mode over two
engines), shows the Why of each routing decision and each miss, the decision log, the
TTFT / TPOT / E2E histograms and the nodes panel, at 80x24, 120x40 and 250x70; and a panel
added as one row of tui/panels.py reaches the simulation, the live app and the split screen."""

from __future__ import annotations

import asyncio
import itertools

import pytest
from textual.widgets import Static

from kvtui.run import life_rows
from kvtui.run.live import LiveSource
from kvtui.scenario import load_scenario
from kvtui.tui import panels
from kvtui.tui.app import make_app, make_live_app
from kvtui.tui.compare import make_compare_app

from live.made_recording import made_recording, made_routed_recording

SIZES = [pytest.param((80, 24), id="80x24"), pytest.param((120, 40), id="120x40"), pytest.param((250, 70), id="250x70")]


def _app(deliveries=None):
    return make_live_app(LiveSource(made_routed_recording() if deliveries is None else deliveries),
                         "replay made.rec", theme="dark", fps=0)


def at_end(*pressed: str):
    async def run_before(pilot) -> None:
        app = pilot.app
        app.runner.goto(app.runner.source.end)
        await pilot.press(*pressed)
        app.refresh_panels(force=True)
        await pilot.pause()

    return run_before


@pytest.mark.parametrize("size", SIZES)
def test_replay_at_the_end_shows_the_why_of_a_miss_the_decisions_and_histograms(snap_compare, size):
    assert snap_compare(_app(), terminal_size=size, run_before=at_end("b"))


@pytest.mark.parametrize("size", SIZES)
def test_replay_on_a_decision_shows_its_why_and_candidates(snap_compare, size):
    assert snap_compare(_app(), terminal_size=size, run_before=at_end("b", "b", "b", "v"))


def test_the_panels_on_show_say_what_the_run_says():
    asyncio.run(_panels_on_show())


async def _panels_on_show() -> None:
    app = _app()
    async with app.run_test(size=(250, 70)) as pilot:
        app.runner.goto(app.runner.source.end)
        await pilot.press("b")
        app.refresh_panels(force=True)
        await pilot.pause()
        assert len(app.decision_log.items) == 60
        assert "missed as partial block" in app.why.body
        assert [h.title for h in app.latency_panels[1].histograms] == ["TTFT", "TPOT", "E2E"]
        assert [len(h.source()) for h in app.latency_panels[1].histograms] == [59, 59, 59]  # the last one not done yet
        nodes = str(app.query_one("#engines").render())
        assert "vllm-a" in nodes and "batches" in nodes and "index" in nodes
        await pilot.press("i")  # the life of the request on show
        await pilot.pause()
        life = " ".join(text for _, text in life_rows("r59", app.runner.journal.life("r59")))
        assert type(app.screen).__name__ == "LifeScreen" and app.screen.request == "r59"
        assert "routed to vllm-b by load_prefix" in life and "misses: partial block 1" in life


def test_commands_a_real_cluster_cannot_take_say_so():
    asyncio.run(_commands())


async def _commands() -> None:
    app = _app(made_recording(requests=20))
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.press("d", "c", "R", "o")
        await pilot.pause()
        assert all(app.runner.node_is_up(n) for n in app.runner.node_names())
        assert sum("not kvtui's to change" in str(n.message) for n in app._notifications) >= 3


def test_a_live_run_opens_following_and_space_holds_the_picture():
    asyncio.run(_live_following())


async def _live_following() -> None:
    deliveries = made_routed_recording(requests=20)
    source = LiveSource(live=True)
    pending = iter(deliveries)
    source.takes_from(lambda: [source.receive(d) for d in itertools.islice(pending, 10)])  # a session's poll
    app = make_live_app(source, "live", theme="dark", fps=0)
    async with app.run_test(size=(120, 40)) as pilot:
        assert app.playing and "following" in app.state_text()
        app._frame()
        await pilot.pause()
        assert app.runner.position == source.end > 0 and app.runner.decisions
        await pilot.press("space")  # pause: the picture holds, what arrives is still taken in
        held = app.runner.position
        app.pull()
        assert source.end > held == app.runner.position and not app.playing
        await pilot.press("space")  # play again: back to the newest
        app._frame()
        assert app.runner.position == source.end and app.playing


def test_play_runs_a_recording_to_its_end_and_stops():
    asyncio.run(_play_to_the_end())


async def _play_to_the_end() -> None:
    app = _app(made_recording(requests=8))
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("space")
        assert app.playing and app.runner.position == 0
        app.frame_work(10.0)  # ten seconds of play at speed 1 (the recording: 2.25 s)
        await pilot.pause()
        assert app.runner.ended and not app.playing


def test_random_keys_while_playing_never_crash():
    asyncio.run(_random_keys())


async def _random_keys() -> None:
    import random

    rng = random.Random(21)
    keys = ["space", "s", "b", "e", "u", "n", "d", "c", "R", "o", "z", "y", "i", "v", "plus", "minus", "t", "tab", "x",
            "escape", "left_square_bracket", "g", "escape"]
    app = make_live_app(LiveSource(made_routed_recording(requests=30)), "replay", theme="dark", fps=30)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("plus", "plus", "plus", "space")
        for _ in range(150):
            await pilot.press(rng.choice(keys))
        await pilot.pause(0.1)
        assert 0 <= app.runner.position <= app.runner.source.end
        assert app.return_code is None


class Ticks(Static):
    """A panel added by a test: it says how many events its run has stepped."""

    def tick(self, frame) -> None:
        self.update(f"stepped {frame.run.position}")


def test_a_panel_added_as_one_row_reaches_every_app(monkeypatch):
    row = panels.Panel("ticks", "Ticks", lambda run, id: Ticks(id=id, classes="view"), "events stepped")
    monkeypatch.setattr(panels, "PANELS", [*panels.PANELS, row])
    scenario = load_scenario("tests/tui/scenario.yaml")
    asyncio.run(_reaches(make_app(scenario, theme="dark", fps=0), "#ticks"))
    asyncio.run(_reaches(_app(made_recording(requests=10)), "#ticks"))
    asyncio.run(_reaches(make_compare_app(scenario, "round_robin", theme="dark", fps=0), "#left #ticks"))


async def _reaches(app, selector: str) -> None:
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.press("s", "s", "s")
        app.refresh_panels(force=True)
        await pilot.pause()
        widget = app.query_one(selector, Ticks)
        runner = getattr(app, "runner", None) or app.left
        assert str(widget.render()) == f"stepped {runner.position}" and runner.position > 0
        assert "Ticks" in [label for _, label in panels.views(runner)]
        from kvtui.tui.screens.help import panel_rows

        assert ("Ticks", "events stepped") in panel_rows()
