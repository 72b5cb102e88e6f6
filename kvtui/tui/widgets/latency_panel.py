"""Latency: TTFT, TPOT and E2E histograms with p50/p95/p99, under a line of run-wide figures."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.containers import Vertical

from kvtui.tui.widgets.histogram import Histogram
from kvtui.tui.widgets.stats_line import StatsLine


class LatencyPanel(Vertical):
    DEFAULT_CSS = """
    LatencyPanel { height: auto; }
    """

    def __init__(self, runner, *, id: str | None = None, classes: str | None = None):
        super().__init__(id=id, classes=classes)
        self.runner = runner

    def compose(self) -> ComposeResult:
        yield StatsLine(id="stats")
        yield Histogram("TTFT", lambda: self.runner.sim.metrics.ttft, id="hist-ttft")
        yield Histogram("TPOT", lambda: self.runner.sim.metrics.tpot, id="hist-tpot")
        yield Histogram("E2E", lambda: self.runner.sim.metrics.e2e, id="hist-e2e")

    def tick(self) -> None:
        self.query_one(StatsLine).show(self.runner.sim)
        for h in self.query(Histogram):
            h.tick()

    def rebind(self) -> None:
        for h in self.query(Histogram):
            h._key = None
        self.tick()
