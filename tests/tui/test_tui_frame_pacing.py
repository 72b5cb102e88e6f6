"""Play pacing: a frame that gives way to a waiting key moves no simulated time, and the next
frame catches up, so play speed means the same with and without key presses
(kvtui/tui/give_way.py, in the one frame loop of kvtui/tui/frame_loop.py): the app over a
simulation, over a recording, and the split screen (`--vs`) alike.

Frames are driven by hand with a stand-in clock (fps=0: no frame timer), so nothing here
depends on how fast the machine is."""

from __future__ import annotations

import asyncio
import time as real_time
from types import SimpleNamespace

import pytest
from textual import events

import kvtui.tui.app as app_module
import kvtui.tui.compare as compare_module
import kvtui.tui.give_way as give_way_module
import kvtui.tui.frame_loop as frame_module

PERIOD = 0.05
SPEED = 0.5


def _stand_in_clock(monkeypatch, *modules) -> list[float]:
    """One clock, advanced by hand, for the frame and for the moment a key arrives."""
    now = [100.0]
    clock = SimpleNamespace(perf_counter=lambda: now[0], monotonic=real_time.monotonic)
    for module in (give_way_module, *modules):
        monkeypatch.setattr(module, "time", clock)
    return now


def _drive(app, now: list[float], keys_before: set[int], frames: int, watch) -> list:
    """Run `frames` frames one period apart on the stand-in clock, a key waiting before the
    frames numbered in `keys_before`; `watch(record)` installs a spy that writes the running
    frame's figure into `record[-1]` (its default, appended here, is what a frame that did no
    work leaves). Returns the record."""

    async def go() -> list:
        record: list = []
        async with app.run_test() as pilot:
            default = watch(record)
            for i in range(frames):
                now[0] += PERIOD
                if i in keys_before:
                    app.post_message(events.Key("f24", None))  # bound to nothing
                record.append(default)
                app._frame()
                await pilot.pause()  # the app handles the key (the give-way lasts a time, not a frame)
        return record

    return asyncio.run(go())


def _asked_of(app, engine):
    """A `watch` for a playing screen: the simulated time each frame asked `engine` (the app's
    run, or the split screen's lockstep) to advance by, 0 for a frame that did not advance."""

    def watch(record: list) -> float:
        app.speed = SPEED
        app.action_toggle_play()  # what space does, without a key for the frames to give way to
        advance = engine.advance

        def spy(target: float, budget_s: float):
            record[-1] = target - engine.now
            return advance(target, budget_s)

        engine.advance = spy
        return 0.0

    return watch


def _asked(make, monkeypatch, keys_before: set[int], frames: int = 8) -> list[float]:
    """What each frame of the app asked the engine to advance by (see `_drive`)."""
    now = _stand_in_clock(monkeypatch, app_module, frame_module)
    app = make()
    return _drive(app, now, keys_before, frames, _asked_of(app, app.runner))


def test_a_waiting_key_delays_the_advance_but_not_the_pace(make, monkeypatch):
    plain = _asked(make, monkeypatch, set())
    keyed = _asked(make, monkeypatch, {3})
    assert plain == pytest.approx([SPEED * PERIOD] * 8)
    assert keyed[3:5] == [0.0, 0.0], "the frames just after the key gave way"
    assert keyed[5] == pytest.approx(3 * SPEED * PERIOD), "the next one caught up"
    assert sum(keyed) == pytest.approx(sum(plain))


def test_held_keys_never_stop_play(make, monkeypatch):
    plain = _asked(make, monkeypatch, set())
    held = _asked(make, monkeypatch, set(range(8)), frames=9)
    assert held[2::3] == pytest.approx([3 * SPEED * PERIOD] * 3), "every third frame advances"
    assert held[0::3] + held[1::3] == [0.0] * 6
    assert sum(held) == pytest.approx(sum(plain) + SPEED * PERIOD)


def _split_asked(scenario, monkeypatch, keys_before: set[int], frames: int = 8) -> list[float]:
    """`_asked` for the split screen: what each frame asked both runs (in lockstep) to advance by."""
    from kvtui.tui.compare import make_compare_app

    now = _stand_in_clock(monkeypatch, compare_module, frame_module)
    app = make_compare_app(scenario, "round_robin", policy="cache_aware", fps=0, theme="dark")
    return _drive(app, now, keys_before, frames, _asked_of(app, app.lockstep))


def test_the_split_screen_gives_way_to_a_key_and_keeps_its_pace(scenario, monkeypatch):
    plain = _split_asked(scenario, monkeypatch, set())
    keyed = _split_asked(scenario, monkeypatch, {3})
    held = _split_asked(scenario, monkeypatch, set(range(8)), frames=9)
    assert plain == pytest.approx([SPEED * PERIOD] * 8)
    assert keyed[3:5] == [0.0, 0.0] and keyed[5] == pytest.approx(3 * SPEED * PERIOD)
    assert sum(keyed) == pytest.approx(sum(plain))
    assert held[2::3] == pytest.approx([3 * SPEED * PERIOD] * 3) and held[0::3] + held[1::3] == [0.0] * 6


def _live_worked(monkeypatch, keys_before: set[int], frames: int = 8) -> list[bool]:
    """Which of `frames` frames of the replay screen did their work (took deliveries, redrew)."""
    from kvtui.run.live import LiveSource
    from kvtui.tui.app import make_live_app

    from live.made_recording import made_recording

    now = _stand_in_clock(monkeypatch, app_module, frame_module)
    app = make_live_app(LiveSource(made_recording(requests=8)), "replay", theme="dark", fps=0)

    def watch(record: list) -> bool:
        app.action_toggle_play()
        redraw = app.refresh_panels

        def spy() -> None:
            record[-1] = True
            redraw()

        app.refresh_panels = spy
        return False

    return _drive(app, now, keys_before, frames, watch)


def test_the_live_screen_gives_way_to_a_key_but_held_keys_never_stop_it(monkeypatch):
    assert _live_worked(monkeypatch, set()) == [True] * 8
    assert _live_worked(monkeypatch, {3}) == [True] * 3 + [False, False] + [True] * 3
    assert _live_worked(monkeypatch, set(range(9)), frames=9) == [False, False, True] * 3
