"""Play pacing: a frame that gives way to a waiting key moves no simulated time, and the next
frame catches up, so play speed means the same with and without key presses (App._give_way).

Frames are driven by hand with a stand-in clock (fps=0: no frame timer), so nothing here
depends on how fast the machine is."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace

import pytest
from textual import events

import kvtui.tui.app as app_module

PERIOD = 0.05
SPEED = 0.5


def _asked(make, monkeypatch, keys_before: set[int], frames: int = 8) -> list[float]:
    """The simulated time each of `frames` frames (one period apart) asked the engine to
    advance by (0 for a frame that did not advance), with a key waiting before the frames
    numbered in `keys_before`."""
    now = [100.0]
    monkeypatch.setattr(app_module, "time", SimpleNamespace(perf_counter=lambda: now[0]))

    async def go() -> list[float]:
        app = make()
        asked = []
        async with app.run_test() as pilot:
            app.speed = SPEED
            app.action_toggle_play()  # what space does, without a key for the frames to give way to
            advance = app.runner.advance

            def spy(target: float, budget_s: float) -> bool:
                asked[-1] = target - app.runner.now
                return advance(target, budget_s)

            app.runner.advance = spy
            for i in range(frames):
                now[0] += PERIOD
                if i in keys_before:
                    app.post_message(events.Key("f24", None))  # bound to nothing
                asked.append(0.0)
                app._frame()
                await pilot.pause()  # the app handles the key (the give-way lasts a time, not a frame)
        return asked

    return asyncio.run(go())


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
