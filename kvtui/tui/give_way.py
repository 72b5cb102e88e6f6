"""Input first: a frame that would advance a run steps aside for a moment after a key or a click.

Every screen that plays a run on a frame timer (the app, the split screen, the live/replay
screen) mixes this in. Why: the frame timer is a task of its own, so it may fire before a key
is handled, or between its handling and the screen update that shows it; on big-cluster at
200x60 a key handled just after a frame waited for the next frame's advance before its screen
update (a timeline around tui_bench.py's key run). That trace showed the key posted to the app
twice before its binding ran, and the screen update later still, so the pause is a short time,
not one frame. Never longer than GIVE_WAY_S since the last frame that did its work (held keys
would stop play); play keeps its pace, as the next frame advances by the wall time since the
last one that did.
"""

from __future__ import annotations

import math
import time

from textual import events

GIVE_WAY_TO = (events.Key, events.MouseDown)  # input a frame steps aside for
GIVE_WAY_S = 0.12  # ... for this long after it arrives, and never longer since the last frame's work


class GivesWay:
    """Mixed into a Textual App before it: `post_message` notes when input arrives, and the
    frame asks `gives_way(now, last)` first, `last` being when a frame last did its work."""

    _input_at = -math.inf  # when the last key or click reached the app

    def post_message(self, message) -> bool:
        if isinstance(message, GIVE_WAY_TO):
            self._input_at = time.perf_counter()
        return super().post_message(message)  # type: ignore[misc]

    def gives_way(self, now: float, last: float) -> bool:
        return now - self._input_at < GIVE_WAY_S and now - last < GIVE_WAY_S
