"""`kvtui plot --out chart.svg`: the same chart as the terminal's, as a standalone SVG file.

SVG is text, so this is a few dozen lines of our own rather than a plotting dependency: axes
with round ticks, one polyline per series with a marker per point, the 95 % interval over seeds
as a vertical bar at each point, and a legend. Markers are hollow and of one shape per series
(circle, square, triangle, diamond, as the terminal's glyphs), so points of several series at
one place all stay visible (QA: a filled circle hid the one under it). Colours are the Okabe-Ito palette (readable with
colour-vision deficiencies).
"""

from __future__ import annotations

from xml.sax.saxutils import escape

from kvtui.sweep.chart import bounds, fmt, ticks
from kvtui.sweep.series import Plot

PALETTE = ("#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#F0E442", "#000000")


def render_svg(plot: Plot, width: int = 720, height: int = 420, title: str | None = None) -> str:
    x0, x1, y0, y1 = bounds(plot)
    lows = [e.low for s in plot.series for _, e in s.points if e.low is not None]
    highs = [e.high for s in plot.series for _, e in s.points if e.high is not None]
    # a non-negative metric keeps its axis at 0: an interval reaching below is clipped there
    y0 = max(min([y0, *lows]), 0.0) if y0 >= 0 else min([y0, *lows])
    y1 = max([y1, *highs])
    yt = ticks(y0, y1)
    y0, y1 = min(y0, yt[0]), max(y1, yt[-1])
    left, right, top, bottom = 70, 20 + 190, 40, 50
    pw, ph = width - left - right, height - top - bottom

    def sx(x: float) -> float:
        return left + (x - x0) / (x1 - x0) * pw

    def sy(y: float) -> float:
        return top + (y1 - y) / (y1 - y0) * ph

    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" viewBox="0 0 {width} {height}" '
        'font-family="sans-serif" font-size="12">',
        f'<rect width="{width}" height="{height}" fill="white"/>',
        f'<text x="{left}" y="22" font-size="14" font-weight="bold">{escape(title or f"{plot.y_name} by {plot.x_name}")}</text>',
    ]
    for v in yt:
        y = sy(v)
        out.append(f'<line x1="{left}" y1="{y:.1f}" x2="{left + pw}" y2="{y:.1f}" stroke="#e0e0e0"/>')
        out.append(f'<text x="{left - 6}" y="{y + 4:.1f}" text-anchor="end">{escape(fmt(v))}</text>')
    for x, text in plot.x_labels:
        out.append(f'<text x="{sx(x):.1f}" y="{top + ph + 18}" text-anchor="middle">{escape(text)}</text>')
    out.append(f'<polyline points="{left},{top} {left},{top + ph} {left + pw},{top + ph}" fill="none" stroke="black"/>')
    out.append(f'<text x="{left + pw / 2:.1f}" y="{height - 12}" text-anchor="middle">{escape(plot.x_name)}</text>')
    out.append(
        f'<text x="16" y="{top + ph / 2:.1f}" text-anchor="middle" transform="rotate(-90 16 {top + ph / 2:.1f})">'
        f"{escape(plot.y_name)}</text>"
    )
    for si, s in enumerate(plot.series):
        colour = PALETTE[si % len(PALETTE)]
        pts = " ".join(f"{sx(x):.1f},{sy(e.mean):.1f}" for x, e in s.points)
        out.append(f'<polyline points="{pts}" fill="none" stroke="{colour}" stroke-width="2"/>')
        nudge = 4 * (si - (len(plot.series) - 1) / 2)  # side by side, so the bars do not hide each other
        for x, e in s.points:
            if e.half_width is not None:
                lo, bx = max(e.low, y0), sx(x) + nudge
                out.append(f'<line x1="{bx:.1f}" y1="{sy(lo):.1f}" x2="{bx:.1f}" y2="{sy(e.high):.1f}" stroke="{colour}"/>')
            out.append(marker(si, sx(x), sy(e.mean), colour))
        ly = top + 10 + 20 * si
        out.append(f'<line x1="{left + pw + 16}" y1="{ly}" x2="{left + pw + 40}" y2="{ly}" stroke="{colour}" stroke-width="2"/>')
        out.append(marker(si, left + pw + 28, ly, colour))
        out.append(f'<text x="{left + pw + 46}" y="{ly + 4}">{escape(s.name)}</text>')
    out.append(f'<text x="{left + pw + 16}" y="{top + 30 + 20 * len(plot.series)}" fill="#666">bars: 95 % CI over seeds</text>')
    out.append("</svg>")
    return "\n".join(out) + "\n"


SHAPES = ("circle", "square", "triangle", "diamond")
R = 4.5  # a marker's half size, px


def marker(si: int, x: float, y: float, colour: str) -> str:
    """Series `si`'s marker at (x, y): its shape, hollow, so a marker of another shape around
    or inside it still shows."""
    style = f'fill="none" stroke="{colour}" stroke-width="1.5"'
    match SHAPES[si % len(SHAPES)]:
        case "circle":
            return f'<circle cx="{x:.1f}" cy="{y:.1f}" r="{R - 0.5}" {style}/>'
        case "square":
            return f'<rect x="{x - R + 0.5:.1f}" y="{y - R + 0.5:.1f}" width="{2 * R - 1}" height="{2 * R - 1}" {style}/>'
        case "triangle":
            return f'<polygon points="{x:.1f},{y - R:.1f} {x + R:.1f},{y + R - 1:.1f} {x - R:.1f},{y + R - 1:.1f}" {style}/>'
        case _:
            return f'<polygon points="{x:.1f},{y - R - 1:.1f} {x + R + 1:.1f},{y:.1f} {x:.1f},{y + R + 1:.1f} {x - R - 1:.1f},{y:.1f}" {style}/>'


def write_png(plot: Plot, path: str, title: str | None = None) -> None:
    """PNG through matplotlib, when it is installed (the CLI checks first)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(8, 4.5), dpi=120)
    for si, s in enumerate(plot.series):
        xs = [x for x, _ in s.points]
        ys = [e.mean for _, e in s.points]
        err = [e.half_width or 0.0 for _, e in s.points]
        ax.errorbar(xs, ys, yerr=err, marker="os^D"[si % 4], markerfacecolor="white", capsize=3,
                    color=PALETTE[si % len(PALETTE)], label=s.name)
    ax.set_xticks([x for x, _ in plot.x_labels], [t for _, t in plot.x_labels])
    ax.set_xlabel(plot.x_name)
    ax.set_ylabel(plot.y_name)
    ax.set_title(title or f"{plot.y_name} by {plot.x_name}")
    ax.grid(True, color="#e0e0e0")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
