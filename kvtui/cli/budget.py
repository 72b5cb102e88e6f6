"""The budget enforced while a run goes, for what the estimate cannot bound up front.

`validate` refuses a scenario whose estimate is over the budget (scenario/cost.py), and a
trace is scanned before it runs, so its size is known. What is left is a backstop: a run whose
CPU time or memory growth passes the budget anyway stops with exit 2 and the reason, naming
the scenario file; whatever the run wrote so far (its store's log) stays. Checked at the
engine's progress calls (every `PROGRESS_EVERY` events), so it costs nothing per event.
`--force` runs without it, as it runs without the estimate's check.
"""

from __future__ import annotations

import resource
import time

from kvtui.errors import InputError
from kvtui.scenario.cost import DEFAULT_SECONDS_BUDGET, default_memory_budget


class RunBudget:
    """A progress callback that stops a run past the CPU-time or memory budget."""

    def __init__(self, file: str, seconds: float = DEFAULT_SECONDS_BUDGET, memory_bytes: int | None = None):
        self.file = file
        self.seconds = seconds
        self.memory_bytes = default_memory_budget() if memory_bytes is None else memory_bytes
        self.began = time.process_time()
        self.rss_before = _peak_rss()

    def __call__(self, p) -> None:
        """`p`: the run's `Progress` (kvtui/run/progress.py): numbers only."""
        spent = time.process_time() - self.began
        grown = _peak_rss() - self.rss_before
        if spent > self.seconds:
            self._stop(p, f"ran {spent:,.0f} s of CPU time, past the budget of {self.seconds:,.0f} s")
        if grown > self.memory_bytes:
            self._stop(p, f"grew by {grown / 1e6:,.0f} MB, past the budget of {self.memory_bytes / 1e6:,.0f} MB")

    def _stop(self, p, why: str) -> None:
        raise InputError.one(self.file, None, f"over budget while running, stopped at t={p.sim_time:,.1f} s: {why}; "
                             "what it wrote so far is kept; --force to run it anyway")


def _peak_rss() -> int:
    """This process's peak resident memory in bytes (Linux reports KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
