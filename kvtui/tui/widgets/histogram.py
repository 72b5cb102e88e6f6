"""A latency histogram (log-spaced bins when the range is wide) with p50 / p95 / p99 marked.

    TTFT █▇▄▂▁  ▁      ▁     p50 10ms p95 25ms p99 375ms
    8ms  ▲50  ▲95      ▲99   1.1s

Bars are eighth-blocks (several rows when the widget is taller); the last row marks where the
percentiles fall and the scale's ends. Redrawn only when the number of samples or the size
changes.
"""

from __future__ import annotations

from typing import Callable, Sequence

import numpy as np
from rich.text import Text

from kvtui.percentiles import percentiles
from textual.widget import Widget

EIGHTHS = " ▁▂▃▄▅▆▇█"


def short_ms(ms: float) -> str:
    """A latency in a few characters. Each unit is chosen by the value as it will print:
    999.6 ms showed "p99 1000ms" (and 9.996 "10.0ms") where 1,000.4 shows "1.0s"."""
    if round(ms, 2) < 1:
        return f"{ms:.2f}ms"
    if round(ms, 1) < 10:
        return f"{ms:.1f}ms"
    if round(ms) < 1000:
        return f"{ms:.0f}ms"
    if round(ms / 1000, 1) < 100:
        return f"{ms / 1000:.1f}s"
    return f"{ms / 1000:.0f}s"


def place_marks(width: int, marks: list[tuple[str, int]]) -> str:
    """A row with ▲ under each percentile's column and its label beside it.

    Percentiles whose labels would collide share one arrow ("▲95,99", at the first of their
    columns); near the right edge the label goes left of the arrow ("95,99▲").
    """

    def span(first: int, last: int, labels: list[str]) -> tuple[int, str]:
        text = ",".join(labels)
        if first + 1 + len(text) <= width:
            return first, "▲" + text
        return max(0, last - len(text)), text + "▲"

    groups: list[tuple[int, int, list[str]]] = []
    for label, col in sorted(marks, key=lambda m: m[1]):
        groups.append((col, col, [label]))
        # merge backwards while the newest group's text runs into the one before it
        while len(groups) >= 2:
            (f1, e1, l1), (f2, e2, l2) = groups[-2], groups[-1]
            s1, t1 = span(f1, e1, l1)
            s2, _ = span(f2, e2, l2)
            if s2 <= s1 + len(t1):  # no gap between them
                groups[-2:] = [(f1, e2, l1 + l2)]
            else:
                break
    row = [" "] * width
    for first, last, labels in groups:
        start, text = span(first, last, labels)
        for j, ch in enumerate(text[: width - start]):
            row[start + j] = ch
    return "".join(row)


class Histogram(Widget):
    DEFAULT_CSS = """
    Histogram { height: 2; }
    Histogram > .histogram--bar { color: $histogram-bar; }
    Histogram > .histogram--mark { color: $histogram-mark; text-style: bold; }
    Histogram > .histogram--label { text-style: bold; }
    Histogram > .histogram--dim { color: $text-muted; }
    """
    COMPONENT_CLASSES = {"histogram--bar", "histogram--mark", "histogram--label", "histogram--dim"}

    def __init__(self, title: str, source: Callable[[], Sequence[float]], *, id: str | None = None, classes: str | None = None):
        super().__init__(id=id, classes=classes)
        self.title = title
        self.source = source
        self._key = None

    def tick(self) -> None:
        key = (len(self.source()), self.size)
        if key != self._key:
            self._key = key
            self.refresh()

    def render(self) -> Text:
        width, height = self.size
        bar = self.get_component_rich_style("histogram--bar")
        mark = self.get_component_rich_style("histogram--mark")
        label_style = self.get_component_rich_style("histogram--label")
        dim = self.get_component_rich_style("histogram--dim")
        values = self.source()
        lab_w = max(len(self.title) + 1, 6)
        n = len(values)
        if n == 0:
            return Text.assemble((f"{self.title:<{lab_w}}", label_style), ("no completed requests yet", dim))
        a = np.asarray(values, dtype=float) * 1000.0
        p50, p95, p99 = percentiles(a, (50, 95, 99))
        stats = f" p50 {short_ms(p50)} p95 {short_ms(p95)} p99 {short_ms(p99)} n={n:,}"
        bar_rows = max(1, height - 1) if height >= 2 else 1
        bar_w = width - lab_w - len(stats)
        if bar_w < 12:
            stats = f" {short_ms(p50)}/{short_ms(p95)}/{short_ms(p99)}"
            bar_w = width - lab_w - len(stats)
        bar_w = max(bar_w, 4)
        lo = max(float(a.min()), 1e-3)
        hi = max(float(a.max()), lo * 1.0001)
        log = hi / lo > 20
        edges = np.geomspace(lo, hi, bar_w + 1) if log else np.linspace(lo, hi, bar_w + 1)
        counts, _ = np.histogram(np.clip(a, lo, hi), bins=edges)
        levels = bar_rows * 8
        top = counts.max() or 1
        h = np.where(counts > 0, np.maximum(1, np.ceil(counts / top * levels)), 0).astype(int)

        def col_of(v: float) -> int:
            return int(np.clip(np.searchsorted(edges, v, side="right") - 1, 0, bar_w - 1))

        lines: list[Text] = []
        for r in range(bar_rows):
            floor = (bar_rows - 1 - r) * 8
            cells = "".join(EIGHTHS[int(min(8, max(0, x - floor)))] for x in h)
            line = Text()
            line.append(f"{self.title:<{lab_w}}" if r == 0 else " " * lab_w, label_style)
            line.append(cells, bar)
            if r == 0:
                line.append(stats, dim)
            lines.append(line)
        if height >= 2:
            marks = place_marks(bar_w, [(q, col_of(v)) for q, v in (("50", p50), ("95", p95), ("99", p99))])
            line = Text()
            line.append(f"{short_ms(lo):<{lab_w}}"[:lab_w], dim)
            line.append(marks, mark)
            line.append(f" {short_ms(hi)}{' log' if log else ''}", dim)
            lines.append(line)
        return Text("\n").join(lines[:height] if height else lines)
