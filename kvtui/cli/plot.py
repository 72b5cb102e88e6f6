"""`kvtui plot FILE --x KEY --y METRIC [--by policy]`: a sweep's results as a line chart, in the
terminal (braille, coloured when the terminal has colour) or to `--out chart.svg` / `.png`.

Parsing and printing only; the series, the text chart and the SVG are kvtui.sweep.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

from kvtui.cli.common import Parser, UsageError
from kvtui.files import check_input, check_output
from kvtui.errors import InputError

DESCRIPTION = """\
Plot a `kvtui sweep` results file: y (a result field, e.g. ttft.p95 for latency_ms.ttft.p95,
token_hit_rate, output_tokens_per_s) against x (a grid key, e.g. rate for
workload.arrival.rate), one line per --by value (default policy), each point the mean over
seeds; the SVG also shows the 95 % interval. Keys that vary and are neither x nor by split the
lines further, so nothing is averaged silently."""


def main(argv: list[str]) -> int:
    from kvtui.sweep.driver import load_lines
    from kvtui.sweep.fields import FieldError
    from kvtui.sweep.series import build

    p = Parser(prog="kvtui plot", description=DESCRIPTION)
    p.add_argument("file", help="a sweep's JSON Lines results")
    p.add_argument("--x", required=True, help="the x axis: a grid key (or a unique suffix of one)")
    p.add_argument("--y", required=True, help="the y axis: a result field path (or a unique suffix)")
    p.add_argument("--by", default="policy", help="one line per value of this key (default policy; '' for one line)")
    p.add_argument("--out", metavar="FILE", help="write FILE.svg (or FILE.png, with matplotlib) instead of the terminal chart")
    p.add_argument("--title", help="chart title")
    p.add_argument("--size", default=None, metavar="WxH", help="terminal chart size in characters (default: terminal width x 20)")
    args = p.parse_args(argv)
    check_input(args.file, "sweep results")
    if args.out:
        check_output(args.out, [args.file], "chart")
    suffix = Path(args.out).suffix.lower() if args.out else ""
    if args.out and suffix not in (".svg", ".png"):
        raise UsageError(f"--out: write .svg or .png; got {args.out!r}")
    if suffix == ".png" and importlib.util.find_spec("matplotlib") is None:
        raise UsageError("--out .png needs matplotlib (pip install matplotlib); .svg needs nothing")
    lines = load_lines(args.file)
    try:
        plot = build(lines, args.x, args.y, args.by or None)
    except FieldError as e:
        raise UsageError(str(e)) from None
    except ValueError as e:
        raise InputError.one(args.file, None, str(e)) from None
    if args.out:
        _write(plot, args.out, suffix, args.title)
        print(f"wrote {args.out}", file=sys.stderr)
    else:
        _print_chart(plot, args.size)
    return 0


def _write(plot, out: str, suffix: str, title: str | None) -> None:
    from kvtui.files import write_output
    from kvtui.sweep.svg import render_svg, write_png

    if suffix == ".svg":
        write_output(out, render_svg(plot, title=title), "the chart")  # atomic, regular files only
        return
    try:
        write_png(plot, out, title)
    except OSError as e:
        raise InputError.one(out, None, f"cannot write the chart: {e.strerror}") from None


def _size(text: str | None, console_width: int) -> tuple[int, int]:
    if not text:
        return min(console_width, 100), 20
    w, sep, h = text.lower().partition("x")
    if not sep or not w.isdecimal() or not h.isdecimal() or int(w) < 20 or int(h) < 4:
        raise UsageError(f"--size wants WxH with W >= 20 and H >= 4, e.g. 80x20; got {text!r}")
    return int(w), int(h)


def _print_chart(plot, size: str | None) -> None:
    from rich.console import Console
    from rich.text import Text

    from kvtui.sweep.chart import render

    console = Console(width=None if sys.stdout.isatty() else 100)
    colours = ("blue", "dark_orange", "green", "magenta", "yellow", "cyan", "red", "white")
    width, height = _size(size, console.width)
    for row in render(plot, width, height):
        text = Text()
        for ch, si in row:
            text.append(ch, style=colours[si % len(colours)] if si is not None else None)
        text.rstrip()
        console.print(text, no_wrap=True, overflow="ignore", crop=False)
