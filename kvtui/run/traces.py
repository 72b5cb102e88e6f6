"""Trace files as the commands see them before (or instead of) a run: `kvtui validate` reads
a scenario's whole trace up front, `kvtui trace stats` analyses one (kvtui/sim/workload/).

The commands reach the workload readers only through here, as they reach the engine only
through kvtui/run/ (the import rules of docs/architecture.md).
"""

from __future__ import annotations

import numpy as np

from kvtui.scenario.model import Scenario
from kvtui.sim.workload.trace import TraceWorkload
from kvtui.sim.workload.trace_stats import TraceStats, trace_stats

__all__ = ["TraceStats", "read_whole_trace", "trace_stats"]


def read_whole_trace(scenario: Scenario) -> list[str]:
    """Read the scenario's trace now, so a broken line is reported before a run rather than
    in the middle of one; the workload's notes (skipped records, weka copies)."""
    w = scenario.workload
    if w.trace is None:
        return []
    workload = TraceWorkload(w.trace, w.arrival, scenario.cluster.block_size, np.random.default_rng(0))
    return workload.notes()
