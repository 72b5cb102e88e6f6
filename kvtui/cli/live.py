"""`kvtui live ENGINES_FILE [--engine NAME=ENDPOINT ...] [--record DIR]`: watch real engines' KV events in the app.

Engines come from the file, from `--engine` (repeatable), or both.

With `--no-ui --duration S` it is headless: it subscribes to every engine of the file for S
seconds, then prints one line per engine with the blocks stored and removed, the batches
received, the gaps replay could not fill and the malformed messages (by kind), and a line for
every engine that never sent a batch; when none of them ever sent anything it exits 2 (a wrong
address is the usual cause: ZMQ connects to anything and waits). Without `--no-ui` it opens
the app (kvtui/tui/app.py, on a live source: kvtui/run/live.py) until quit, or for S seconds
when `--duration` is given.

With `--route POLICY --metadata etcd://HOST:PORT,...` route mode keeps its index snapshot and
session routes in etcd, and only the `kvtui live` holding the routing lease routes: a second
one on the same cluster waits as a standby and takes over when the first dies, from the
snapshot in etcd (kvtui/live/etcd_backend.py; aetcd, the extra `kvtui[etcd]`). `--duration`
counts from when it starts routing.
"""

from __future__ import annotations

from kvtui.cli.common import Parser, UsageError, port_number


def main(argv: list[str]) -> int:
    from kvtui.live.recording import Recorder

    args = _parser().parse_args(argv)
    _check(args)
    engines = _engines(args)
    backend = _backend(args)
    recorder = Recorder(args.record) if args.record else None
    try:
        if args.no_ui:
            return _headless(engines, recorder, args, backend)
        return _app(engines, recorder, args, argv, backend)
    finally:
        if backend is not None:
            backend.close()


def _backend(args):
    """Route mode's etcd backend once this process holds the routing lease, or None."""
    if args.metadata is None:
        return None
    import sys

    from kvtui.live.etcd_backend import Unreachable, take_over
    from kvtui.live.etcd_link import MissingClient

    def say(line: str) -> None:
        print(f"kvtui live: {line}", file=sys.stderr, flush=True)

    try:
        backend = take_over(args.metadata, args.lease_ttl, args.listen, say)
    except (MissingClient, Unreachable) as e:
        raise UsageError(f"kvtui live: --metadata: {e}") from None
    s = backend.snapshot
    say(f"routing (lease {backend.leadership.lease:x}); from {args.metadata}: {s.held()} blocks on "
        f"{len({e for e, _ in s.blocks})} engines, {len(s.routes())} session routes, read in {backend.took_s:.3f} s")
    return backend


def _headless(engines, recorder, args, backend) -> int:
    import sys
    import time

    from kvtui.live.session import summary_lines

    session = _session(engines, recorder, args, backend=backend)
    _route(session, engines, args, backend)
    try:
        session.run_for(args.duration)
    finally:
        session.close()
    state = session.state
    print("\n".join(summary_lines(state) + ([backend.line()] if backend is not None else [])))
    silent = state.silent(time.time(), after=min(args.duration, 10.0))
    if silent:
        print("\n".join(silent), file=sys.stderr)
    if not any(state.answered(name) for name in state.counts):
        print(f"kvtui live: no engine sent anything in {args.duration:g} s", file=sys.stderr)
        return 2
    return 0


def _session(engines, recorder, args, listener=None, backend=None):
    """The session over `engines` (from the etcd snapshot with a backend); a ZMQ refusal of
    an address is a usage error (exit 2)."""
    import zmq

    from kvtui.live.session import LiveSession

    start = {} if backend is None else {"state": backend.state(), "expected": backend.snapshot.seqs}
    try:
        return LiveSession(engines, recorder, replay_timeout=args.replay_timeout, listener=listener, **start)
    except zmq.ZMQError as e:
        if recorder is not None:
            recorder.close()
        raise UsageError(f"kvtui live: cannot subscribe: {e}") from None


def _app(engines, recorder, args, argv: list[str], backend) -> int:
    from kvtui.cli.app import run_app
    from kvtui.run.live import LiveSource
    from kvtui.tui.app import make_live_app

    source = LiveSource(live=True)
    session = _session(engines, recorder, args, listener=source.receive, backend=backend)
    source.takes_from(lambda: session.poll(0))
    _route(session, engines, args, backend)
    app = make_live_app(source, f"live {args.engines or ', '.join(e.name for e in engines)}", theme=args.theme,
                        duration=args.duration)
    try:
        return run_app(app, argv)
    finally:
        session.close()


def _route(session, engines, args, backend=None) -> None:
    """Route mode: the proxy joins the session as one more source of deliveries (then, with
    etcd, the keeper that writes what each poll changed)."""
    if args.route is None:
        return
    from kvtui.live.proxy import RouteProxy
    from kvtui.live.routing import LiveRouter

    host, _, port = args.listen.rpartition(":")
    router = LiveRouter(args.route, engines)
    try:
        proxy = RouteProxy(host, int(port), router, session)
    except OSError as e:
        session.close()
        raise UsageError(f"kvtui live: cannot listen on {args.listen}: {e}") from None
    session.sources.append(proxy)
    if backend is not None:
        backend.attach(session, router, proxy)


def _engines(args) -> list:
    """The engines of the file, then those of `--engine`, each name (each rank's) once."""
    from kvtui.live.engines import engine_from_argument, load_engines, name_clash

    engines = load_engines(args.engines) if args.engines else []
    for argument in args.engine:
        engine = engine_from_argument(argument)
        if (why := name_clash(engines, engine)) is not None:
            raise UsageError(f"kvtui live: --engine {argument!r}: {why} (the engines file and --engine together)")
        engines.append(engine)
    return engines


def _check(args) -> None:
    if not args.engines and not args.engine:
        raise UsageError("kvtui live: name the engines: an engines file, or --engine NAME=tcp://HOST:PORT (repeatable)")
    if args.duration is not None and not 0 < args.duration <= 7 * 86400:
        raise UsageError("kvtui live: --duration S must be more than 0 seconds and at most a week")
    if args.no_ui and args.duration is None:
        raise UsageError("kvtui live: --duration S (seconds) is required with --no-ui")
    if not args.no_ui:
        from kvtui.cli.app import stdin_is_terminal

        if not stdin_is_terminal():
            raise UsageError("kvtui live: the app needs a terminal, and stdin is not one; "
                             "headless: kvtui live ENGINES.yaml --no-ui --duration S")
    _check_route(args)
    _check_metadata(args)
    if not 0 < args.replay_timeout <= 60:
        raise UsageError("kvtui live: --replay-timeout must be more than 0 and at most 60 seconds")


def _check_route(args) -> None:
    if args.route is None:
        if args.listen is not None:
            raise UsageError("kvtui live: --listen goes with --route POLICY")
        return
    from kvtui.scenario.run_spec import check_policy
    from kvtui.live.routing import route_refusal

    check_policy(args.route, "--route")
    if (why := route_refusal(args.route)) is not None:
        raise UsageError(f"kvtui live: --route {args.route}: {why}")
    args.listen = args.listen or "127.0.0.1:8000"
    host, sep, port = args.listen.rpartition(":")
    if not sep or not host or not port_number(port):
        raise UsageError(f"kvtui live: --listen {args.listen!r} is not HOST:PORT (PORT from 1 to 65535)")


def _check_metadata(args) -> None:
    if args.metadata is None:
        return
    from kvtui.live.etcd_url import parse_target

    if args.route is None:
        raise UsageError("kvtui live: --metadata goes with --route POLICY (it keeps route mode's state)")
    try:
        args.metadata = parse_target(args.metadata)
    except ValueError as e:
        raise UsageError(f"kvtui live: --metadata: {e}") from None
    if not 2 <= args.lease_ttl <= 3600:
        raise UsageError("kvtui live: --lease-ttl must be from 2 to 3600 seconds")


def _parser() -> Parser:
    p = Parser(prog="kvtui live", description="Subscribe to real engines' KV events (vLLM's ZMQ "
               "publisher, or Dynamo's mocker) and show them in the app, or print what each published.")
    p.add_argument("engines", metavar="ENGINES.yaml", nargs="?",
                   help="engines: [{name, kv_events, replay, metrics, api}] (or --engine)")
    p.add_argument("--engine", action="append", default=[], metavar="NAME=ENDPOINT[,replay=..]",
                   help="an engine on the command line, besides or instead of the file: "
                        "NAME=tcp://HOST:PORT, then ,replay=tcp://.. ,metrics=URL ,api=URL ,data_parallel_size=N")
    p.add_argument("--no-ui", action="store_true", help="headless: print one line per engine at the end")
    p.add_argument("--duration", type=float, metavar="S", help="seconds to listen (the app: until quit)")
    p.add_argument("--record", metavar="DIR", help="record every received batch into a new WAL directory")
    p.add_argument("--replay-timeout", type=float, default=2.0, metavar="S",
                   help="seconds to wait for an engine's replay socket to answer (default 2)")
    p.add_argument("--route", metavar="POLICY", help="route mode: an OpenAI-compatible proxy that routes with "
                   "kvtui's POLICY over the live index (engines need an `api` URL)")
    p.add_argument("--listen", metavar="HOST:PORT", help="where route mode listens (default 127.0.0.1:8000)")
    p.add_argument("--metadata", metavar="etcd://HOST:PORT,...", help="route mode's index and session routes "
                   "in etcd; a second kvtui live on the same etcd waits and takes over routing (needs kvtui[etcd])")
    p.add_argument("--lease-ttl", type=int, default=5, metavar="S",
                   help="seconds the routing lease outlives its holder (default 5, Mooncake's)")
    p.add_argument("--theme", help="colour theme of the app (themes/, or your own in ~/.config/kvtui/themes/)")
    return p
