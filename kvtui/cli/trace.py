"""`kvtui trace stats FILE`: what hit rate a trace allows, before simulating it.

The analysis is `kvtui.sim.workload.trace_stats` (no Rich), reached through kvtui/run/traces.py;
this module parses the arguments and draws the tables.
"""

from __future__ import annotations

import re

from kvtui.cli.common import Parser, UsageError
from kvtui.scenario.trace_formats import TRACE_FORMAT_NAMES, format_of_path

_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([kKmMgG]?)\s*$")
_UNITS = {"": 1, "k": 1_000, "m": 1_000_000, "g": 1_000_000_000}


def parse_capacities(text: str) -> tuple[int, ...]:
    """`1M,3M,10M` -> token counts (k, M, G are powers of 1,000)."""
    out = []
    for part in text.split(","):
        m = _SIZE.match(part)
        if not m:
            raise UsageError(f"--capacity wants token counts like 1M,3M,10M or 500k; got {part!r}")
        value = int(float(m.group(1)) * _UNITS[m.group(2).lower()])
        if not 1 <= value <= 10**12:
            raise UsageError(f"--capacity: {part.strip()!r} must be between 1 and 1,000G tokens")
        out.append(value)
    return tuple(out)


def guess_format(path: str) -> str:
    """By the file's content first (a Mooncake trace saved as .txt is still one), else its name."""
    found = format_of_path(path)
    if found is None:
        raise UsageError(f"cannot tell the format of {path!r} from its content or name; give --format {'|'.join(TRACE_FORMAT_NAMES)}")
    return found


def main(argv: list[str]) -> int:
    p = Parser(prog="kvtui trace", description="Look into a trace file.")
    sub = p.add_subparsers(dest="action", required=True, parser_class=Parser)
    s = sub.add_parser(
        "stats",
        help="requests, rate, lengths, reuse and the LRU hit rate per cache capacity",
        description=(
            "Requests, duration, rate, input/output length percentiles, infinite-cache block and "
            "token reuse, and the LRU token hit rate at each capacity for one global cache and for "
            "N cache-blind caches of capacity/N each (requests dealt round robin)."
        ),
    )
    s.add_argument("file", help="mooncake .jsonl, azure .csv, or a weka .json file or directory")
    s.add_argument("--format", choices=TRACE_FORMAT_NAMES, help="default: from the file's content, else its name")
    s.add_argument("--capacity", default="1M,3M,10M", help="total KV capacity in tokens (k, M, G), comma-separated")
    s.add_argument("--nodes", type=int, default=10, help="cache-blind caches the capacity is split over (default 10)")
    s.add_argument("--skip-invalid", action="store_true", help="skip invalid records (and count them) instead of stopping")
    args = p.parse_args(argv)
    if not 1 <= args.nodes <= 4096:
        raise UsageError("--nodes must be between 1 and 4096")
    capacities = parse_capacities(args.capacity)
    fmt = args.format or guess_format(args.file)
    from kvtui.files import check_input

    check_input(args.file, "trace", directory_ok=fmt == "weka")  # a fifo or /dev/zero: refused unread

    from kvtui.report import print_table
    from kvtui.run.traces import trace_stats

    stats = trace_stats(fmt, args.file, capacities, args.nodes, args.skip_invalid)
    print_table(render(stats))
    return 0


def render(st):
    from rich.console import Group
    from rich.table import Table

    head = Table(title=f"{st.path} ({st.format})", show_header=False, title_justify="left")
    head.add_column(style="bold")
    head.add_column()
    head.add_row("requests", f"{st.requests:,}" + (f" in {st.conversations} conversations" if st.conversations else ""))
    if st.duration_s is None:
        head.add_row("duration, rate", "no common timeline (each conversation has its own clock)")
    else:
        rate = f"{st.rate:.2f} req/s" if st.rate else "-"
        head.add_row("duration, rate", f"{st.duration_s:,.1f} s, {rate}")
    for name, d in (("input tokens", st.input), ("output tokens", st.output)):
        head.add_row(name, "  ".join(f"{k} {v:,.0f}" for k, v in d.items()))
    if st.skipped:
        head.add_row("skipped", f"{st.skipped} invalid record(s)")
    if st.hash_block is None:
        head.add_row("reuse", "no prefix information in this format (lengths and times only)")
        return head
    head.add_row("hash block", f"{st.hash_block} tokens")
    head.add_row(
        "infinite cache",
        f"block reuse {_pct(st.blocks_reused, st.blocks)} of {st.blocks:,} blocks, "
        f"token reuse {_pct(st.tokens_reused, st.tokens)} of {st.tokens:,} prompt tokens",
    )
    curve = Table(title="LRU token hit rate by total KV capacity (tokens)", title_justify="left")
    curve.add_column("capacity", justify="right")
    curve.add_column("1 global cache", justify="right")
    curve.add_column(f"{st.nodes} cache-blind caches (round robin)", justify="right")
    for pt in st.curve:
        curve.add_row(_tokens(pt.capacity_tokens), f"{pt.global_hit:.1%}", f"{pt.split_hit:.1%}")
    return Group(head, curve)


def _pct(a: int, b: int) -> str:
    return f"{a / b:.1%}" if b else "-"


def _tokens(n: int) -> str:
    for unit, size in (("G", 10**9), ("M", 10**6), ("k", 10**3)):
        if n >= size and n % (size // 10) == 0:
            return f"{n / size:g}{unit}"
    return f"{n:,}"
