"""`kvtui live ENGINES_FILE --no-ui --duration S [--record DIR]`: watch real engines' KV events.

Headless for now (the app screen over live data is issue 21's next part): it subscribes to
every engine of the file for S seconds, then prints one line per engine with the blocks stored
and removed, the batches received, the gaps replay could not fill and the malformed messages.
"""

from __future__ import annotations

from kvtui.cli.common import Parser, UsageError


def main(argv: list[str]) -> int:
    from kvtui.live.engines import load_engines
    from kvtui.live.recording import Recorder
    from kvtui.live.session import LiveSession, summary_lines

    args = _parser().parse_args(argv)
    _check(args)
    engines = load_engines(args.engines)
    session = LiveSession(engines, Recorder(args.record) if args.record else None,
                          replay_timeout=args.replay_timeout)
    try:
        session.run_for(args.duration)
    finally:
        session.close()
    print("\n".join(summary_lines(session.state)))
    return 0


def _check(args) -> None:
    if not args.no_ui:
        raise UsageError("kvtui live: the live app screen is not built yet; run with --no-ui")
    if args.duration is None or not 0 < args.duration <= 7 * 86400:
        raise UsageError("kvtui live: --duration S (seconds, more than 0, at most a week) is required with --no-ui")
    if not 0 < args.replay_timeout <= 60:
        raise UsageError("kvtui live: --replay-timeout must be more than 0 and at most 60 seconds")


def _parser() -> Parser:
    p = Parser(prog="kvtui live", description="Subscribe to real engines' KV events (vLLM's ZMQ "
               "publisher, or Dynamo's mocker) and print what each published.")
    p.add_argument("engines", metavar="ENGINES.yaml", help="engines: [{name, kv_events, replay, metrics, api}]")
    p.add_argument("--no-ui", action="store_true", help="headless: print one line per engine at the end")
    p.add_argument("--duration", type=float, metavar="S", help="seconds to listen")
    p.add_argument("--record", metavar="DIR", help="record every received batch into a new WAL directory")
    p.add_argument("--replay-timeout", type=float, default=2.0, metavar="S",
                   help="seconds to wait for an engine's replay socket to answer (default 2)")
    return p
