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
        # Held, not queried: a frame or a restart (`R`) can tick the panel before Textual has
        # mounted what compose yields (NoMatches from the 20,000-key campaign, keys sent at start).
        self.stats = StatsLine(id="stats")
        self.histograms = (
            Histogram("TTFT", lambda: self.runner.metrics.ttft, id="hist-ttft"),
            Histogram("TPOT", lambda: self.runner.metrics.tpot, id="hist-tpot"),
            Histogram("E2E", lambda: self.runner.metrics.e2e, id="hist-e2e"),
        )

    def compose(self) -> ComposeResult:
        yield self.stats
        yield from self.histograms

    def tick(self) -> None:
        if not self.stats.is_mounted:
            return  # the next frame or command draws it
        self.stats.show(self.runner)
        for h in self.histograms:
            h.tick()

    def rebind(self) -> None:
        for h in self.histograms:
            h._key = None
        self.tick()
