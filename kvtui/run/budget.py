"""The run-time budget, for every command that runs a scenario (`run`, `compare`, `sweep`).

Before the run, the estimate (scenario/cost.py; a trace is scanned first, so its size is known)
must be within the budget: `check_budget`, which `validate` prints too. While the run goes, a
backstop for what the estimate cannot bound up front (`RunBudget`): a run whose
CPU time or memory growth passes the budget anyway stops with exit 2 and the reason, naming
the scenario file; whatever the run wrote so far (its store's log) stays. Checked at the
engine's progress calls (every `PROGRESS_EVERY` events), so it costs nothing per event.
`--force` runs without it, as it runs without the estimate's check.
"""

from __future__ import annotations

import resource
import time

from typing import TYPE_CHECKING

from kvtui.errors import InputError
from kvtui.scenario.cost import DEFAULT_SECONDS_BUDGET, Cost, default_memory_budget

if TYPE_CHECKING:
    from kvtui.scenario.model import Scenario


def cost_of(scenario: "Scenario", trace=None) -> Cost:
    """The estimate; a trace is scanned for it (its requests and lengths) unless `trace`, a
    scan already made (a `TraceWorkload`), is given."""
    from kvtui.run.traces import scan_trace
    from kvtui.scenario.cost import estimate

    if trace is None:
        trace = scan_trace(scenario)  # None without a trace
    return estimate(scenario, trace.shape if trace is not None else None)


def check_budget(file: str, scenario: "Scenario", cost: Cost) -> None:
    """Refuse (exit 2, naming `file`) a scenario whose estimate is over the budget."""
    over = cost.over_budget()
    if over:
        raise InputError([(file, None, f"over budget: {why}; --force to run it anyway") for why in over])


def enforce_budget(file: str, scenario: "Scenario", force: bool) -> "RunBudget | None":
    """What a sweep's worker does before each run of `scenario` (from `file`): refuse it over
    the estimate's budget, and hand back the backstop to pass as the run's progress callback;
    with `force`, neither. (The CLI checks the estimate as it loads: `cli.common.load`.)"""
    if force:
        return None
    check_budget(file, scenario, cost_of(scenario))
    return RunBudget(file)


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
