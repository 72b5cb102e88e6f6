"""The one frame loop: every screen that plays a run (the app over a simulation, a live cluster
or a recording, and the split screen) runs this on its frame timer.

Each frame: give way to input first (give_way.py); take in what a live source has received;
adapt the budget (when frames arrive late, drawing or the engine is eating the period, so the
next frame advances for less wall time and keys still get their turn); let the screen do its
work for the wall time elapsed (`frame_work`: a go-to, a jump, play); then refresh the panels.
A stalled frame never asks for more than MAX_FRAME_GAP_S of wall time.
"""

from __future__ import annotations

import gc
import time
from collections import deque

from kvtui.tui.give_way import GivesWay

FPS = 20
FRAME_BUDGET_S = 0.025  # most wall time a frame may spend advancing the run
MIN_BUDGET_S = 0.004  # ... and the least, when drawing takes most of the frame period
MAX_FRAME_GAP_S = 0.25  # a stalled frame never asks for more sim time than this x speed
FREEZE_EVERY_S = 1.0  # while playing, hide the run's long-lived objects from the GC this often


class FrameLoop(GivesWay):
    """Mixed into a Textual App before it; the app supplies `fps`, `frame_work`, `pull` and
    `refresh_panels`."""

    fps = FPS

    def start_loop(self) -> None:
        self.budget = FRAME_BUDGET_S
        self.frame_times: deque[float] = deque(maxlen=600)
        self._last_frame = time.perf_counter()  # the last frame that did its work (play pacing)
        self._last_tick = self._last_frame  # the last frame at all (lateness)
        self._last_freeze = 0.0

    def _frame(self) -> None:
        if not self.is_running:  # type: ignore[attr-defined]  # shutting down: Textual removes the widgets before it stops timers
            return
        start = time.perf_counter()
        gap = start - self._last_tick
        self._last_tick = start
        if self.gives_way(start, self._last_frame):  # the key's handler and screen update first (give_way.py)
            return
        elapsed = min(start - self._last_frame, MAX_FRAME_GAP_S)
        self._last_frame = start
        period = 1 / self.fps if self.fps > 0 else 0.05
        if gap > period * 1.25:
            self.budget = max(MIN_BUDGET_S, self.budget * 0.7)
        else:
            self.budget = min(FRAME_BUDGET_S, self.budget * 1.1)
        self.pull()
        if not self.frame_work(elapsed):
            return
        if start - self._last_freeze >= FREEZE_EVERY_S:
            # Keep the collector's full passes small while the run grows its state (the
            # engine makes almost no cyclic garbage; a restart or quit collects it anyway).
            gc.freeze()
            self._last_freeze = start
        self.refresh_panels()
        self.frame_times.append(time.perf_counter() - start)

    def pull(self) -> None:
        """Take in what live sources received (their sessions' sockets)."""

    def frame_work(self, elapsed: float) -> bool:
        """The screen's work for `elapsed` wall seconds; False when idle (nothing to redraw)."""
        raise NotImplementedError

    def refresh_panels(self, force: bool = False) -> None:
        raise NotImplementedError
