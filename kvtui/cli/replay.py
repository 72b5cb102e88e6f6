"""`kvtui replay DIR --no-ui`: a `kvtui live --record` recording's figures, from the recording.

Every recorded delivery goes through the same `ingest` as live, so the lines are the ones the
live session printed.
"""

from __future__ import annotations

from kvtui.cli.common import Parser, UsageError


def main(argv: list[str]) -> int:
    from kvtui.live.delivery import ingest
    from kvtui.live.recording import read_recording
    from kvtui.live.session import summary_lines
    from kvtui.live.state import LiveState

    args = _parser().parse_args(argv)
    if not args.no_ui:
        raise UsageError("kvtui replay: the app screen over a recording is not built yet; run with --no-ui")
    state = LiveState()
    for delivery in read_recording(args.recording):
        ingest(state, delivery)
    print("\n".join(summary_lines(state)))
    return 0


def _parser() -> Parser:
    p = Parser(prog="kvtui replay", description="Print a live recording's per-engine figures.")
    p.add_argument("recording", metavar="DIR", help="a directory written by `kvtui live --record`")
    p.add_argument("--no-ui", action="store_true", help="headless: print one line per engine")
    return p
