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

__all__ = ["TraceStats", "scan_trace", "trace_stats"]


def scan_trace(scenario: Scenario) -> TraceWorkload | None:
    """Read the scenario's whole trace now (None without one), so a broken line is reported
    before a run rather than in the middle of one, and the cost estimate knows what the trace
    holds (`TraceWorkload.shape`)."""
    w = scenario.workload
    if w.trace is None:
        return None
    return TraceWorkload(w.trace, w.arrival, scenario.cluster.block_size, np.random.default_rng(0))

