"""The `kvtui` command line (a contract: ../shared/DESIGN.md section 5).

One module per command; `COMMANDS` names each with the function that runs it and the line the
top-level help shows, so adding a command is one file and one entry here.

Exit codes: 0 success; 2 bad input or environment the user controls (usage, scenario, trace,
WAL, files, permissions, a held lock), as `file:line: message` lines; 1 a bug in kvtui, one line
with a hint to report it. Never a Python traceback unless KVTUI_DEBUG=1 (see boundary.py).
"""

from __future__ import annotations

import argparse
import difflib
import importlib
import os
import sys

from kvtui import __version__
from kvtui.run.build import engine_build
from kvtui.cli.common import Parser, UsageError, run_once
from kvtui.cli.boundary import report

__all__ = ["COMMANDS", "main", "run_once", "UsageError"]

# name -> (module:function, usage, what it does)
COMMANDS: dict[str, tuple[str, str, str]] = {
    "demo": ("kvtui.cli.demo:main", "demo [NAME]", "the app on a scenario shipped in the package (pressure.yaml)"),
    "serve": ("kvtui.cli.serve:main", "serve SCENARIO [--port N]", "the app in a web browser (textual-serve), to share a link"),
    "run": ("kvtui.cli.run:main", "run SCENARIO", "headless run: summary table, --json result document"),
    "compare": ("kvtui.cli.compare:main", "compare SCENARIO", "one row per policy (or per --sweep value), same workload"),
    "record": ("kvtui.cli.record:main", "record SCENARIO", "render the app after N steps to an SVG"),
    "validate": ("kvtui.cli.validate:main", "validate SCENARIO", "check a scenario file: exit 0, or 2 with every problem"),
    "schema": ("kvtui.cli.validate:schema_main", "schema", "print the JSON Schema of scenario files"),
    "trace": ("kvtui.cli.trace:main", "trace stats FILE", "a trace's shape, reuse and LRU hit rate per cache capacity"),
    "profiles": ("kvtui.cli.profiles:main", "profiles [SCENARIO]", "hardware and model profiles with their sources"),
    "sweep": ("kvtui.cli.sweep:main", "sweep SCENARIO... --grid K=V", "scenarios x grid x policies x seeds, in parallel (local or Ray), to JSON Lines"),
    "plot": ("kvtui.cli.plot:main", "plot FILE --x KEY --y METRIC", "a sweep's results as a line chart (terminal, --out SVG/PNG)"),
    "live": ("kvtui.cli.live:main", "live ENGINES.yaml", "watch real engines' KV events (vLLM, Dynamo) in the app; --engine N=tcp://.., --record DIR, --no-ui --duration S"),
    "replay": ("kvtui.cli.replay:main", "replay DIR", "a live recording in the app with step and seek; --no-ui: its figures; --as POLICY: beside its traffic simulated under POLICY"),
    "calibrate": ("kvtui.cli.calibrate:main", "calibrate REPORT", "fit the latency model to a real benchmark (inference-perf, vllm bench, GuideLLM, a recording); its accuracy"),
    "wal": ("kvtui.cli.wal:main", "wal inspect|verify|dump DIR", "look into a metadata store's write-ahead log"),
}


def epilog() -> str:
    """The command list; the usage column is as wide as the longest usage, so none runs into
    its description."""
    rows = [("kvtui SCENARIO", "open the interactive app")]
    rows += [("kvtui " + usage, what) for _, usage, what in COMMANDS.values()]
    width = max(len(usage) for usage, _ in rows) + 2
    lines = ["commands:", *(f"  {usage:<{width}}{what}" for usage, what in rows)]
    return "\n".join(lines) + "\n\n`kvtui COMMAND --help` tells more."


def _top_parser() -> argparse.ArgumentParser:
    p = Parser(
        prog="kvtui",
        description="Watch a KV-cache-aware LLM serving control plane at work.",
        epilog=epilog(),
        formatter_class=argparse.RawDescriptionHelpFormatter,
        usage="kvtui [--version] SCENARIO [options] | kvtui COMMAND ...",
    )
    p.add_argument("--version", action="version", version=f"kvtui {__version__}, {engine_build()}")
    return p


def _handler(target: str):
    module, _, name = target.partition(":")
    return getattr(importlib.import_module(module), name)


def dispatch(argv: list[str]) -> int:
    if not argv or argv[0] in ("-h", "--help", "--version"):
        if not argv:
            raise UsageError(_top_parser().format_help().rstrip())
        _top_parser().parse_args(argv)
        return 0
    head, rest = argv[0], argv[1:]
    if head in COMMANDS:
        return _handler(COMMANDS[head][0])(rest)
    _refuse_mistyped_command(head)
    return _handler("kvtui.cli.app:main")(argv)


def _refuse_mistyped_command(head: str) -> None:
    """`kvtui runn FILE` would open the app on a file named `runn` and fail with "unrecognized
    arguments"; a word close to a command that is no file is a typo'd command."""
    close = difflib.get_close_matches(head, COMMANDS, n=1)
    if close and not os.path.exists(head):
        raise UsageError(f"kvtui: unknown command {head!r}; did you mean {close[0]!r}? (kvtui --help lists them)")


def main(argv: list[str] | None = None) -> int:
    """Run one command; every exception ends here as one message and an exit code (boundary.py)."""
    argv = sys.argv[1:] if argv is None else argv
    try:
        return dispatch(argv)
    except SystemExit as e:  # argparse --help / --version
        return e.code if isinstance(e.code, int) else (0 if e.code is None else 2)
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return 0
    except Exception as e:  # noqa: BLE001 - the one boundary: mapped by class in boundary.py
        return report(e)
