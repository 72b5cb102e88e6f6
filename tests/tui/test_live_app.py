"""The app over live data (kvtui/tui/live_app.py) on a fixed recording (tests/live/made_recording.py):
snapshots at fixed sizes and theme, paused; stepping, going back and seeking over the run
layer's LiveRun give the same picture as getting there forward; the app's table at the end
says what `kvtui replay --no-ui` prints."""

from __future__ import annotations

import asyncio

import pytest

from kvtui.live.delivery import ingest
from kvtui.live.session import summary_lines
from kvtui.live.state import LiveState
from kvtui.run.live import CHECKPOINT_EVERY, LiveRun
from kvtui.tui.live_app import LiveApp

from live.made_recording import made_recording

SIZES = [pytest.param((80, 24), id="80x24"), pytest.param((160, 50), id="160x50")]


def _app(**kw) -> LiveApp:
    return LiveApp(LiveRun(made_recording(**kw)), "replay made.rec", theme="dark", fps=0)


def _picture(run: LiveRun) -> tuple:
    view = run.view()
    return (tuple((n.name, n.gpu.state.tobytes(), n.gpu.owner) for n in view.nodes), tuple(run.engines()),
            run.index_figures(), run.recent(5))


def keys(*pressed: str):
    async def run_before(pilot) -> None:
        await pilot.press(*pressed)
        pilot.app.refresh_panels()
        await pilot.pause()

    return run_before


@pytest.mark.parametrize("size", SIZES)
def test_replay_first_screen(snap_compare, size):
    assert snap_compare(_app(), terminal_size=size, run_before=keys())


@pytest.mark.parametrize("size", SIZES)
def test_replay_at_the_first_eviction_after_the_gap(snap_compare, size):
    assert snap_compare(_app(), terminal_size=size, run_before=keys("m", "e", "s", "b"))


def test_back_and_goto_rebuild_the_picture_stepping_forward_made():
    deliveries = made_recording(requests=2 * CHECKPOINT_EVERY + 40)
    forward, pictures = LiveRun(deliveries), {}
    while forward.step() is not None:
        pictures[forward.position] = _picture(forward)
    moved = LiveRun(deliveries)
    moved.goto(len(deliveries))
    for p in (len(deliveries) - 1, CHECKPOINT_EVERY + 3, CHECKPOINT_EVERY, 7, 1):
        moved.goto(p)
        assert _picture(moved) == pictures[p], p
    moved.back()
    assert moved.position == 0 and moved.engines() == []


def test_checkpoints_stay_bounded_and_back_still_rebuilds(monkeypatch):
    monkeypatch.setattr("kvtui.run.live.CHECKPOINT_EVERY", 4)
    monkeypatch.setattr("kvtui.run.live.MAX_CHECKPOINTS", 5)
    deliveries = made_recording(requests=100)
    run, pictures = LiveRun(deliveries), {}
    while run.step() is not None:
        pictures[run.position] = _picture(run)
        assert len(run._checkpoints) <= 5
    for p in (97, 50, 33, 3):
        run.goto(p)
        assert _picture(run) == pictures[p], p


def test_seek_lands_on_the_next_removal_and_gap():
    run = LiveRun(made_recording())
    removal = run.seek("removal")
    assert "removed" in run.recent(1)[0][2] and run.deliveries[run.position - 1] is removal
    assert sum(e.removed for e in run.engines()) > 0
    run.goto(run.position - 1)
    assert sum(e.removed for e in run.engines()) == 0
    run.seek("gap")
    assert run.recent(1)[0][2].startswith("gap: 2 batches")
    assert run.seek("gap") is None and run.ended is False


def test_goto_time_stands_on_the_last_delivery_received_by_then():
    run = LiveRun(made_recording())
    run.goto_time(10.0)
    assert run.now <= 10.0 < run.deliveries[run.position].at - run.start


def test_following_moves_with_new_deliveries_and_pause_holds_the_picture():
    deliveries = made_recording()
    run = LiveRun(live=True)
    for d in deliveries[:50]:
        run.receive(d)
    assert run.position == 50
    run.following = False
    for d in deliveries[50:]:
        run.receive(d)
    assert run.position == 50 and not run.ended
    run.follow()
    assert run.position == len(deliveries) and run.following


def test_the_app_at_the_end_says_what_replay_no_ui_prints():
    asyncio.run(_the_app_at_the_end())


async def _the_app_at_the_end() -> None:
    deliveries = made_recording()
    state = LiveState()
    for d in deliveries:
        ingest(state, d)
    app = LiveApp(LiveRun(deliveries), "replay", theme="dark", fps=0)
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.press("end")
        table = app.engines_text().splitlines()
    for line, counts in zip(table[1:], state.counts.values()):
        name, gpu, _cpu, stored, removed, batches, gaps, bad = line.split()[:8]
        assert (int(stored), int(removed), int(batches), int(gaps), int(bad)) == (
            counts.stored, counts.removed, counts.batches, counts.gaps, counts.malformed)
    assert summary_lines(state)[0].startswith("vllm-a: stored 114 removed 74")


def test_play_runs_a_recording_to_its_end_and_stops():
    asyncio.run(_play_to_the_end())


async def _play_to_the_end() -> None:
    import time

    app = LiveApp(LiveRun(made_recording(requests=8)), "replay", theme="dark", fps=0)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("space")
        assert app.playing and app.runner.position == 0
        app._play_from = (time.monotonic() - 3.0, 0.0)  # three seconds of play (the recording: 2.25 s)
        app._frame()
        await pilot.pause()
        assert app.runner.ended and not app.playing
        assert "■ ended" in app.status_text()


def test_a_frame_during_shutdown_does_nothing():
    """Textual's shutdown removes the screens' widgets before it stops the app's timers, so a
    frame can fire with no #status to update (seen once in CI as NoMatches)."""
    asyncio.run(_frame_after_shutdown())


async def _frame_after_shutdown() -> None:
    app = LiveApp(LiveRun(made_recording(requests=10)), "replay", theme="dark", fps=30)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("space")
    app._frame()  # the widgets are gone; before the guard this raised NoMatches


def test_random_keys_while_playing_never_crash():
    """Every key of the live app, pressed at random while a recording plays (seeded)."""
    asyncio.run(_random_keys())


async def _random_keys() -> None:
    import random

    rng = random.Random(21)
    keys = ["space", "s", "b", "e", "m", "home", "end", "plus", "minus", "t", "left", "tab", "x"]
    app = LiveApp(LiveRun(made_recording(requests=60)), "replay", theme="dark", fps=30)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("plus", "plus", "plus", "space")
        for _ in range(200):
            await pilot.press(rng.choice(keys))
        await pilot.pause(0.1)
        run = app.runner
        assert 0 <= run.position <= len(run.deliveries)
        assert app.return_code is None
