"""A line chart in text: braille dots (U+2800 block, 2 x 4 dots per cell) for the lines, with a
y axis, x ticks and a legend. Pure text, no Rich: each cell carries the index of the series that
drew it last, so the CLI can colour it, and a test can read it.

Lines between points are drawn on the dot grid with Bresenham's algorithm; a point is marked
with a series glyph on top of the lines, so series stay distinguishable without colour. Where
points of several series fall in one cell, the cell shows `SHARED` (and the legend says what it
means) rather than the last series' glyph over the others' (QA: one series' points vanished).
"""

from __future__ import annotations

import math

from kvtui.sweep.series import Plot

# braille dot bits by (column 0-1, row 0-3): the Unicode braille pattern layout
_DOT = ((0x01, 0x08), (0x02, 0x10), (0x04, 0x20), (0x40, 0x80))
MARKERS = "●■▲◆✚✖◉★"
SHARED = "✱"  # points of several series in one cell

Cell = tuple[str, int | None]  # (character, series index or None)


def ticks(lo: float, hi: float, n: int = 5) -> list[float]:
    """Round tick values (1, 2, 5 x 10^k steps) from at or below lo to at or above hi, so the
    axis ends on a labelled tick."""
    if hi <= lo:
        return [lo]
    raw = (hi - lo) / max(1, n - 1)
    mag = 10 ** math.floor(math.log10(raw))
    step = next(m * mag for m in (1, 2, 5, 10) if m * mag >= raw)
    first, last = math.floor(lo / step + 1e-9), math.ceil(hi / step - 1e-9)
    return [round(k * step, 12) for k in range(first, last + 1)]


def fmt(v: float) -> str:
    if v == 0:
        return "0"
    a = abs(v)
    if a >= 10_000:
        return f"{v:,.0f}"
    if a >= 100:
        return f"{v:.0f}"
    if a >= 1:
        return f"{v:.3g}"
    return f"{v:.3g}"


def bounds(plot: Plot) -> tuple[float, float, float, float]:
    xs = [x for x, _ in plot.x_labels]
    ys = [e.mean for s in plot.series for _, e in s.points]
    x0, x1 = min(xs), max(xs)
    y0, y1 = min(ys), max(ys)
    if 0 <= y0 < 0.5 * y1:
        y0 = 0.0  # close to zero: start the axis there, as a reader expects
    if x1 == x0:
        x0, x1 = x0 - 1, x1 + 1
    if y1 == y0:
        y0, y1 = y0 - (abs(y0) or 1) * 0.1, y1 + (abs(y1) or 1) * 0.1
    return x0, x1, y0, y1


def render(plot: Plot, width: int = 72, height: int = 18) -> list[list[Cell]]:
    """The chart as rows of (char, series) cells: title, plot area with y axis, x axis, legend."""
    x0, x1, y0, y1 = bounds(plot)
    yt = ticks(y0, y1)
    y0, y1 = min(y0, yt[0]), max(y1, yt[-1])
    label_w = max(len(fmt(v)) for v in yt)
    w, h = max(10, width - label_w - 2), max(4, height)
    bits = [[0] * w for _ in range(h)]
    owner: list[list[int | None]] = [[None] * w for _ in range(h)]
    marks: dict[tuple[int, int], set[int]] = {}

    def dot(px: int, py: int, si: int) -> None:
        if 0 <= px < 2 * w and 0 <= py < 4 * h:
            r, c = py // 4, px // 2
            bits[r][c] |= _DOT[py % 4][px % 2]
            owner[r][c] = si

    def to_dot(x: float, y: float) -> tuple[int, int]:
        px = round((x - x0) / (x1 - x0) * (2 * w - 1))
        py = round((y1 - y) / (y1 - y0) * (4 * h - 1))
        return px, py

    for si, s in enumerate(plot.series):
        pts = [to_dot(x, e.mean) for x, e in s.points]
        for (ax, ay), (bx, by) in zip(pts, pts[1:]):
            _line(ax, ay, bx, by, lambda px, py: dot(px, py, si))  # noqa: B023 (called at once)
        for px, py in pts:
            dot(px, py, si)
            marks.setdefault((py // 4, px // 2), set()).add(si)
    rows: list[list[Cell]] = [[(f"{plot.y_name} by {plot.x_name}", None)]]
    tick_rows = {round((y1 - v) / (y1 - y0) * (h - 1)): v for v in yt}
    for r in range(h):
        label = fmt(tick_rows[r]) if r in tick_rows else ""
        row: list[Cell] = [(f"{label:>{label_w}} ┤" if r in tick_rows else " " * label_w + " │", None)]
        for c in range(w):
            if (r, c) in marks:
                row.append(_mark(marks[(r, c)]))
            elif bits[r][c]:
                row.append((chr(0x2800 + bits[r][c]), owner[r][c]))
            else:
                row.append((" ", None))
        rows.append(row)
    rows.append([(" " * label_w + " └" + "─" * w, None)])
    rows.append([(" " * (label_w + 2) + _x_axis(plot, w, x0, x1), None)])
    for si, s in enumerate(plot.series):
        rows.append([(" " * (label_w + 2), None), (f"{MARKERS[si % len(MARKERS)]} {s.name}", si)])
    if any(len(m) > 1 for m in marks.values()):
        rows.append([(" " * (label_w + 2) + f"{SHARED} points of several series", None)])
    return rows


def _mark(series: set[int]) -> Cell:
    """A point's cell: its series' glyph, or SHARED (uncoloured) when several series meet there."""
    if len(series) > 1:
        return (SHARED, None)
    si = next(iter(series))
    return (MARKERS[si % len(MARKERS)], si)


def _x_axis(plot: Plot, w: int, x0: float, x1: float) -> str:
    """Tick labels under their columns; a label that would overlap the previous one is dropped."""
    line = [" "] * (w + 12)
    end = -1
    for x, text in plot.x_labels:
        c = round((x - x0) / (x1 - x0) * (w - 1))
        start = max(0, min(c - len(text) // 2, w + 12 - len(text)))
        if start <= end:
            continue
        line[start : start + len(text)] = text
        end = start + len(text)
    return "".join(line).rstrip() + f"   ({plot.x_name})"


def _line(ax: int, ay: int, bx: int, by: int, put) -> None:
    """Bresenham's line from (ax, ay) to (bx, by), endpoints included."""
    dx, dy = abs(bx - ax), -abs(by - ay)
    sx, sy = (1 if ax < bx else -1), (1 if ay < by else -1)
    err = dx + dy
    while True:
        put(ax, ay)
        if ax == bx and ay == by:
            return
        e2 = 2 * err
        if e2 >= dy:
            err += dy
            ax += sx
        if e2 <= dx:
            err += dx
            ay += sy
