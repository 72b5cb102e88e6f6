"""`kvtui SCENARIO`: the interactive app."""

from __future__ import annotations

import argparse
import os
import sys

from kvtui.cli.common import Parser, UsageError, add_run_options, check_vs, load_run
from kvtui.cli.crash import report_crash


def main(argv: list[str]) -> int:
    p = Parser(prog="kvtui", description="Open the interactive app on a scenario.", epilog=_epilog(),
                formatter_class=argparse.RawDescriptionHelpFormatter)
    add_run_options(p)
    p.add_argument("--theme", help="colour theme (themes/, or your own in ~/.config/kvtui/themes/ or $KVTUI_THEMES)")
    p.add_argument("--vs", metavar="POLICY", help="split screen: the same run under POLICY, side by side in lockstep "
                   "(or pattern:A|B|C: the same run with its Raft group as another control-plane pattern)")
    args = p.parse_args(argv)
    if not stdin_is_terminal():
        raise UsageError("kvtui: the interactive app needs a terminal, and stdin is not one; "
                         f"for a headless run: kvtui run {args.scenario}")
    spec = load_run(args)
    check_vs(args.vs, spec)
    try:
        from kvtui.tui.app import make_app
    except ImportError:
        print(
            "The interactive app is not built yet. Try the headless run:\n"
            f"  kvtui run {args.scenario}",
            file=sys.stderr,
        )
        return 1
    if args.vs:
        from kvtui.tui.compare import make_compare_app

        app = make_compare_app(spec, args.vs, theme=args.theme)
    else:
        app = make_app(spec, theme=args.theme)
    return run_app(app, argv)


def run_app(app, argv: list[str]) -> int:
    """Run a Textual app to its end; a crash is reported (crash.py), not a traceback."""
    try:
        app.run()
    except Exception as e:  # noqa: BLE001 - raised before Textual could catch it: still a crash
        return report_crash(e, argv)
    if app.return_code:  # Textual caught a crash, restored the terminal and returned (crash.py)
        return report_crash(getattr(app, "_exception", None), argv)
    return 0


def stdin_is_terminal() -> bool:
    """Without a terminal on stdin no key ever arrives and the app would wait forever (issue 25).
    Under `kvtui serve`, textual-serve starts the app with Textual's web driver, whose keys come
    over a pipe on stdin by design (textual-serve 1.1.3's textual_serve/app_service.py sets TEXTUAL_DRIVER)."""
    if os.environ.get("TEXTUAL_DRIVER", "").endswith(":WebDriver"):
        return True
    try:
        return os.isatty(sys.stdin.fileno())
    except (AttributeError, OSError, ValueError):  # closed, or replaced by an object without a descriptor
        return False


def _epilog() -> str:
    from kvtui.cli import epilog

    return epilog()
