"""`kvtui replay DIR`: a `kvtui live --record` recording, in the app or (`--no-ui`) as figures;
with `--as POLICY`, its traffic simulated under POLICY beside what happened, in the split
screen or (`--no-ui`) as a table (kvtui/cli/counterfactual.py).

Every recorded delivery goes through the same `ingest` as live, so the headless lines are the
ones the live session printed, and through the same translation into events
(kvtui/live/translate.py), so the app shows what it showed live at each event. What
the recording lost (a damaged last entry: the unflushed tail) and what it holds that is no
delivery are said on stderr first, with their counts (kvtui/live/recording.py `Reading`).
"""

from __future__ import annotations

from kvtui.cli.common import Parser, UsageError


def main(argv: list[str]) -> int:
    import sys

    from kvtui.live.recording import read_recording_report

    from kvtui.cli import counterfactual

    args = _parser().parse_args(argv)
    counterfactual.check(args)
    if args.as_policy is not None and args.no_ui:
        return counterfactual.main(args)
    if not args.no_ui:
        _need_terminal()
    reading = read_recording_report(args.recording)
    for warning in reading.warnings:
        print(f"kvtui replay: warning: {warning}", file=sys.stderr)
    if args.as_policy is not None:
        return counterfactual.app(args, reading.deliveries, argv)
    return _headless(reading.deliveries) if args.no_ui else _app(reading.deliveries, args, argv)


def _headless(deliveries) -> int:
    from kvtui.live.delivery import ingest
    from kvtui.live.session import summary_lines
    from kvtui.live.state import LiveState

    state = LiveState()
    for delivery in deliveries:
        ingest(state, delivery)
    print("\n".join(summary_lines(state)))
    return 0


def _app(deliveries, args, argv: list[str]) -> int:
    from kvtui.cli.app import run_app
    from kvtui.run.live import LiveSource
    from kvtui.tui.app import make_live_app

    return run_app(make_live_app(LiveSource(deliveries), f"replay {args.recording}", theme=args.theme), argv)


def _need_terminal() -> None:
    from kvtui.cli.app import stdin_is_terminal

    if not stdin_is_terminal():
        raise UsageError("kvtui replay: the app needs a terminal, and stdin is not one; "
                         "headless: kvtui replay DIR --no-ui")


def _parser() -> Parser:
    p = Parser(prog="kvtui replay", description="Open a live recording in the app, or print its per-engine figures.")
    p.add_argument("recording", metavar="DIR", help="a directory written by `kvtui live --record`")
    p.add_argument("--no-ui", action="store_true", help="headless: print one line per engine")
    p.add_argument("--as", dest="as_policy", metavar="POLICY",
                   help="simulate the recorded traffic under POLICY and show it beside what happened, "
                   "in the split screen or (--no-ui) as a table (route-mode recordings)")
    p.add_argument("--vs", action="store_true", help="with --as: the recorded and the simulated side by side (headless: the table)")
    p.add_argument("--calibrated", metavar="PROFILE.yaml", help="with --as: the latency profile `kvtui calibrate DIR --out` fitted")
    p.add_argument("--scenario", metavar="S", help="with --as: the base scenario (latency model, hardware); default calibrate's")
    p.add_argument("--set", metavar="KEY=VALUE", action="append", default=[], dest="sets", help="with --as: override a key of the base")
    p.add_argument("--seed", type=int, help="with --as: the simulation's seed (default the base scenario's)")
    p.add_argument("--theme", help="colour theme of the app (themes/, or your own in ~/.config/kvtui/themes/)")
    return p
