"""Latency: TTFT, TPOT and E2E histograms with p50/p95/p99, above a line of run-wide figures.

The histograms come first and shrink to one row each when the panel is short (app.tcss): at
80x24 the run-wide line above them left room for TTFT alone, with TPOT and E2E cut off unseen.
What does not fit then scrolls, with its scrollbar showing.
"""

from __future__ import annotations

from textual.app import ComposeResult
from textual.containers import Vertical

from kvtui.tui.widgets.histogram import Histogram
from kvtui.tui.widgets.stats_line import StatsLine


class LatencyPanel(Vertical):
    DEFAULT_CSS = """
    LatencyPanel { height: auto; overflow-y: auto; scrollbar-size-vertical: 1; }
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
        yield from self.histograms
        yield self.stats

    def tick(self, frame=None) -> None:
        """The panels' tick (tui/panels.py); the figures are the run's, whatever is on show."""
        if not self.stats.is_mounted:
            return  # the next frame or command draws it
        self.stats.show(self.runner)
        for h in self.histograms:
            h.tick()

    def rebind(self) -> None:
        for h in self.histograms:
            h._key = None
        self.tick()
