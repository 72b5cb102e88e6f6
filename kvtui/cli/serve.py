"""`kvtui serve SCENARIO [--port N]`: the app in a web browser, so a teacher shares a link.

textual-serve (the `serve` extra) runs a web server that starts one `kvtui SCENARIO ...` process
per browser tab and relays its screen and keys over a websocket (textual_serve/server.py,
textual-serve 1.1.3). The scenario is loaded here first, so bad input exits 2 before anything
listens, and so is a port that is not 1..65535. It listens on loopback unless `--host` says
otherwise: a simulation anyone on the network could start many of is the user's choice to
make, not a default, and a warning on stderr says what that choice exposes.
"""

from __future__ import annotations

import ipaddress
import shlex
import sys

from kvtui.cli.common import Parser, UsageError, add_run_options, check_vs, load_run, port_number

DEFAULT_PORT = 8000


def main(argv: list[str]) -> int:
    p = Parser(prog="kvtui serve", description="Serve the interactive app to a web browser (textual-serve).")
    add_run_options(p)
    p.add_argument("--port", default=str(DEFAULT_PORT), help=f"TCP port, 1 to 65535 (default {DEFAULT_PORT})")
    p.add_argument("--host", default="127.0.0.1", help="address to listen on (default loopback only)")
    p.add_argument("--theme", help="colour theme, as for `kvtui SCENARIO`")
    p.add_argument("--vs", metavar="POLICY", help="split screen (a policy, or pattern:A|B|C), as for `kvtui SCENARIO`")
    args = p.parse_args(argv)
    port = port_number(args.port)
    if port is None:
        raise UsageError(f"kvtui serve: --port {args.port!r} is not a TCP port (1 to 65535)")
    check_vs(args.vs, load_run(args))
    server_class = _server_class()
    if not is_loopback(args.host):
        print(f"kvtui serve: warning: listening on {args.host}: anyone who can reach port {port} there "
              "can open the app and drive it (start simulations on this machine)", file=sys.stderr)
    server = server_class(app_command(args), host=args.host, port=port, title=f"kvtui {args.scenario}")
    server.serve()
    return 0


def app_command(args) -> str:
    """The command textual-serve starts per browser tab: this Python, the same options."""
    words = [sys.executable, "-m", "kvtui", args.scenario]
    for flag, value in (("--policy", args.policy), ("--seed", args.seed), ("--theme", args.theme), ("--vs", args.vs)):
        if value is not None:
            words += [flag, str(value)]
    for override in args.overrides:
        words += ["--set", override]
    if args.force:
        words.append("--force")
    return shlex.join(words)


def is_loopback(host: str) -> bool:
    """Only this machine can reach `host`: `localhost`, or a loopback address."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def _server_class():
    try:
        from textual_serve.server import Server
    except ImportError:
        raise UsageError("kvtui serve needs textual-serve: pip install 'kvtui[serve]'") from None
    return Server
