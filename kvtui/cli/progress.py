"""The progress bar of headless runs: Rich, on stderr, only on a terminal, only when it is slow.

The engine stays free of Rich: the run layer (`kvtui.run.run_to_end`) calls back with a
`kvtui.run.Progress`, plain numbers, so the bar never sees the simulation. The bar appears once a run has taken
SHOW_AFTER_S of wall time (a quick run prints nothing extra) and disappears when it ends
(transient), so stdout (the table, --json) is never touched. With stderr not a terminal
(piped, CI) there is no bar at all.
"""

from __future__ import annotations

import sys
import time
from contextlib import contextmanager
from typing import Callable, Iterator

SHOW_AFTER_S = 1.0


@contextmanager
def progress_bar(label: str, enabled: bool | None = None, expected: int | None = None) -> Iterator[Callable | None]:
    """Yield a callback for `run_to_end(on_progress=...)`, or None when no bar is wanted.
    `expected`: the cost estimate's request count, the bar's total when the run's own is
    unknown (an open-ended shared_prefix run read "N/? requests"); shown as `~requests`."""
    if enabled is None:
        enabled = sys.stderr.isatty()
    if not enabled:
        yield None
        return
    bar = _Bar(label, expected)
    try:
        yield bar.update
    finally:
        bar.close()


class _Bar:
    def __init__(self, label: str, expected: int | None = None):
        self.label = label
        self.expected = expected
        self.began = time.perf_counter()
        self.progress = None
        self.task = None

    def update(self, p) -> None:
        if self.progress is None:
            if time.perf_counter() - self.began < SHOW_AFTER_S:
                return
            self._open()
        total, unit = p.total, p.unit
        if total is None and self.expected and unit == "requests":
            total, unit = max(self.expected, p.done), "requests (~total)"
        self.progress.update(self.task, completed=p.done, total=total, unit=unit, now=f"t={p.sim_time:,.1f}s")

    def _open(self) -> None:
        from rich.console import Console
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

        self.progress = Progress(
            TextColumn("{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("{task.fields[unit]}  {task.fields[now]}"),
            TimeElapsedColumn(),
            TimeRemainingColumn(),
            console=Console(stderr=True),
            transient=True,
        )
        self.progress.start()
        self.task = self.progress.add_task(self.label, total=None, unit="", now="")

    def close(self) -> None:
        if self.progress is not None:
            self.progress.stop()
