"""`kvtui record SCENARIO --steps N --out FILE.svg`: the app rendered headless to an SVG
(kvtui/tui/record.py renders it; this module parses the command).

Options beyond the contract (`--steps --out --size --theme`, plus `--policy --seed --set`):
`--until T` advances to sim time T first, `--jump KIND` (repeatable) then jumps to the next
eviction / rejection / preemption / failure, `--screen help` shows the help screen and
`--zoom NODE` the zoomed node, `--crash` crashes the control plane before the picture.
"""

from __future__ import annotations

import asyncio
import re
from pathlib import Path

from kvtui.cli.common import Parser, UsageError, load_run, policy_help, seed_value
from kvtui.files import check_output, write_output
from kvtui.tui.record import DEFAULT_SIZE

JUMPS = ("eviction", "rejection", "preemption", "failure", "crash", "recovery")


def _parser() -> Parser:
    p = Parser(prog="kvtui record", description="Render the app after N steps to an SVG (deterministic).")
    p.add_argument("scenario", help="scenario YAML file")
    p.add_argument("--steps", type=int, default=0, metavar="N", help="events to step before the screenshot (default 0)")
    p.add_argument("--out", required=True, metavar="FILE.svg", help="where to write the SVG")
    p.add_argument("--size", default=f"{DEFAULT_SIZE[0]}x{DEFAULT_SIZE[1]}", metavar="COLSxROWS", help="terminal size (default 120x40)")
    p.add_argument("--theme", help="colour theme (dark, light, high-contrast)")
    p.add_argument("--policy", help=policy_help())
    p.add_argument("--seed", type=seed_value, help="override the scenario's seed")
    p.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE", help="override a scenario field (repeatable)")
    p.add_argument("--until", type=float, metavar="T", help="first advance the simulation to sim time T (seconds)")
    p.add_argument("--jump", action="append", default=[], choices=JUMPS, help="then jump to the next event of this kind (repeatable)")
    p.add_argument("--screen", choices=("main", "help"), default="main", help="which screen to show")
    p.add_argument("--zoom", metavar="NODE", help="show this node zoomed")
    p.add_argument("--crash", action="store_true", help="crash the control plane after the steps and jumps")
    p.add_argument("--title", help="window title in the SVG (default: kvtui SCENARIO)")
    return p


def parse_size(text: str) -> tuple[int, int]:
    m = re.fullmatch(r"\s*(\d+)\s*[xX]\s*(\d+)\s*", text)
    if not m:
        raise UsageError(f"kvtui record: --size wants COLSxROWS, e.g. 120x40; got {text!r}")
    cols, rows = int(m.group(1)), int(m.group(2))
    if not (20 <= cols <= 1000 and 6 <= rows <= 500):
        raise UsageError(f"kvtui record: --size {cols}x{rows} is out of range (20..1000 x 6..500)")
    return cols, rows


def check_svg_name(out: str) -> None:
    """Record writes SVG only: `--out shot.png` wrote SVG text under a .png name, which image
    viewers then refuse. Say so, and how to get a PNG, before the run."""
    if Path(out).suffix.lower() != ".svg":
        raise UsageError(
            f"kvtui record: --out writes an SVG; name it FILE.svg (got {out!r}); "
            "for a PNG, convert it: rsvg-convert FILE.svg -o FILE.png"
        )


def main(argv: list[str]) -> int:
    from kvtui.tui.record import render_svg

    args = _parser().parse_args(argv)
    size = parse_size(args.size)
    check_svg_name(args.out)
    check_output(args.out, [args.scenario], "SVG")
    if args.steps < 0:
        raise UsageError("kvtui record: --steps must be >= 0")
    spec = load_run(args)
    svg = asyncio.run(
        render_svg(
            spec,
            steps=args.steps,
            size=size,
            theme=args.theme,
            until=args.until,
            jumps=args.jump,
            screen=args.screen,
            zoom=args.zoom,
            title=args.title,
            crash=args.crash,
        )
    )
    out = Path(args.out)
    write_output(str(out), svg, "the SVG")  # atomic, regular files only (issue 10)
    print(f"{out}: {size[0]}x{size[1]}, {len(svg):,} bytes")
    return 0
