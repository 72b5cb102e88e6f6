"""`kvtui wal inspect|verify|dump DIR`: the arguments; kvtui/store/commands.py does the walk."""

from __future__ import annotations

import argparse


def main(argv: list[str]) -> int:
    from kvtui.store.commands import wal_command

    args = _parser().parse_args(argv)
    return wal_command(args.command, args.dir, getattr(args, "json", False))


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="kvtui wal", description="Inspect, verify or dump a kvtui metadata WAL directory "
        "(read-only).")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    p = sub.add_parser("inspect", help="segments, snapshots, record counts and sizes")
    p.add_argument("dir", metavar="DIR")
    p.add_argument("--json", action="store_true", help="print one JSON object instead of text")
    p = sub.add_parser("verify", help="check every checksum and link; exit 2 if damaged")
    p.add_argument("dir", metavar="DIR")
    p.add_argument("--json", action="store_true", help="print the report as JSON")
    p = sub.add_parser("dump", help="every record as a JSON line (seq, op, fields)")
    p.add_argument("dir", metavar="DIR")
    return parser
