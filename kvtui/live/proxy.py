"""Route mode: an OpenAI-compatible proxy in front of the engines, routing with kvtui's policies.

`kvtui live ... --route POLICY --listen HOST:PORT` serves `/v1/completions` and
`/v1/chat/completions` (streaming and not) and `/v1/models`. For each request it:
1. tokenizes the prompt through an engine's own `/tokenize` (vLLM's: the same body with
   `prompt`, or `messages` for a chat, answers `{"tokens": [...]}`), so the blocks are the
   engine's: any engine with an API will do (they serve one model), the one that answered
   last first, so one engine down does not stop routing; and chains kvtui's keys over them (kvtui/sim/workload/hashing.py), from the
   adapter's root when the body's `model` names a LoRA adapter (kvtui/live/lora.py);
2. routes with the policy over the live state (kvtui/live/routing.py), under the session's lock;
3. forwards the body unchanged to the chosen engine's `api` and relays its answer as it
   comes (server-sent events line by line), timing the first byte (TTFT) and the end (E2E);
4. reads the tokens the engine served from its prefix cache (`usage.prompt_tokens_details.
   cached_tokens`, in the last streamed chunk with usage, or the body) and hands a `Served`
   (decision, forensics: kvtui/live/forensics.py) to the session, which records it.

vLLM reports cached tokens only with `--enable-prompt-tokens-details`; without it the engine is
taken to have hit nothing, and the forensics say so (every block missed).

Every client gets an answer, and none can hold the proxy: the limits, timeouts and statuses are
kvtui/live/proxy_io.py's; the server reads a client's request within CLIENT_TIMEOUT_S, serves
at most MAX_CLIENTS at once (503 beyond), and every problem is one log line (logger
`kvtui.route`) and a count by kind (`RouteProxy.problems`), never a traceback.
"""

from __future__ import annotations

import json
import logging
import threading
import time
import urllib.request
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from queue import Empty, Queue

import numpy as np

from kvtui.live import proxy_io as io
from kvtui.live.delivery import Served
from kvtui.live.forensics import attribute
from kvtui.live.lora import adapter_root
from kvtui.live.proxy_io import Refused
from kvtui.live.routing import LiveRouter, Routed
from kvtui.sim.request import Request
from kvtui.sim.workload.hashing import chain_keys

ROUTED_PATHS = ("/v1/completions", "/v1/chat/completions")
DEFAULT_BLOCK_SIZE = 16  # vLLM's default, until an engine's metrics give its own
CLIENT_TIMEOUT_S = 30.0  # a client's silence while sending its request
MAX_CLIENTS = 256  # requests served at once; a thread each
LOG = logging.getLogger("kvtui.route")


class RouteProxy:
    def __init__(self, host: str, port: int, router: LiveRouter, session, clock=time.time,
                 client_timeout: float = CLIENT_TIMEOUT_S, engine_timeout: float = io.ENGINE_TIMEOUT_S,
                 gate=None):
        """`gate()`: why this proxy may not route now (a router that lost its etcd lease:
        kvtui/live/etcd_election.py), or None; every request is refused 503 while it says why."""
        self.router, self.session, self.clock, self.gate = router, session, clock, gate
        self.assumed_block_size = DEFAULT_BLOCK_SIZE  # until a scrape says; a standby: the leader's (etcd)
        self.client_timeout, self.engine_timeout = client_timeout, engine_timeout
        self.ready: Queue[Served] = Queue()
        self.count = 0
        self.problems: Counter[str] = Counter()  # kind -> requests that ended in it
        self._asked: set[str] = set()  # model names already looked up in /v1/models
        self._listed: set[str] = set()  # LoRA adapters /v1/models listed
        self._count_lock = threading.Lock()
        self._clients = threading.BoundedSemaphore(MAX_CLIENTS)
        self._tokenizer = 0  # index in apis() of the engine that tokenized last
        self.server = _Server((host, port), _handler(self), self)
        self.server.daemon_threads = True
        self.address = self.server.server_address
        threading.Thread(target=self.server.serve_forever, name="kvtui-route", daemon=True).start()

    def take(self) -> list[Served]:
        out = []
        while True:
            try:
                out.append(self.ready.get_nowait())
            except Empty:
                return out

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()

    def problem(self, kind: str, message: str) -> None:
        """One log line and one count per problem (the app owns the terminal: no traceback)."""
        with self._count_lock:
            self.problems[kind] += 1
        LOG.warning("kvtui route: %s: %s", kind, message)

    # ------------------------------------------------------------------ one request
    def next_id(self) -> str:
        with self._count_lock:
            self.count += 1
            return f"req-{self.count}"

    def block_size(self) -> int:
        sizes = [f.block_size for f in self.session.state.figures.values() if f.block_size]
        return sizes[0] if sizes else self.assumed_block_size

    def adapter(self, model) -> str | None:
        """The LoRA adapter a request's `model` names, or None for the base model
        (kvtui/live/lora.py): one the engines stored blocks under, or one an engine's
        `/v1/models` lists with a `parent` (asked once per model name not seen before)."""
        if not isinstance(model, str):
            return None
        with self.session.lock:
            if model in self.session.state.adapters:
                return model
        if model not in self._asked and len(self._asked) < 1000:
            self._asked.add(model)
            self._listed |= _listed_adapters(self.any_api())
        return model if model in self._listed else None

    def tokens(self, ask: dict) -> list[int]:
        """The prompt's token ids from the first engine that gives them, starting with the one
        that did last; Refused(502) with every engine's reason when none does."""
        apis = self.apis()
        if not apis:
            raise Refused(502, "no engine has an api URL to tokenize with", "tokenize")
        reasons = []
        for k in range(len(apis)):
            i = (self._tokenizer + k) % len(apis)
            try:
                tokens = io.tokenize(apis[i], ask)
            except Refused as e:
                reasons.append(f"{apis[i]}: {e}")
                continue
            self._tokenizer = i
            return tokens
        raise Refused(502, "no engine could tokenize it: " + "; ".join(reasons), "tokenize")

    def decide(self, body: dict, tokens: list[int]) -> Routed:
        bs = self.block_size()
        root = adapter_root(self.adapter(body.get("model")))
        keys = tuple(chain_keys(np.asarray(tokens, dtype=np.int64), bs, root))
        rid = self.next_id()
        request = Request(rid, str(body.get("user") or rid)[:200], "", 0, len(tokens), io.max_tokens(body), keys)
        with self.session.lock:
            return self.router.route(self.session.state, request, bs, self.clock())

    def served(self, routed: Routed, engine: str, usage: tuple[int, int], ttft: float | None, e2e: float) -> None:
        """Hand the answered request on; `usage` is (cached prompt tokens, completion tokens or 0)."""
        cached_tokens, completion = usage
        with self.session.lock:
            forensics = attribute(routed, self.session.state, cached_tokens, self.block_size())
        d = routed.decision
        candidates = tuple((c.node, c.score, routed.promised(c.node), c.eligible) for c in d.candidates)
        req = routed.request
        self.ready.put(Served(engine, self.clock(), req.id, d.reason, candidates, forensics, ttft, e2e,
                              req.prompt_tokens, completion or req.output_tokens, req.block_keys,
                              routed.at, self.router.policy_name, req.session))

    def api_of(self, engine: str) -> str:
        """The chosen engine's API (a policy chooses only eligible engines: they have one)."""
        return next(e.api for e in self.router.engines if e.name == engine and e.api).rstrip("/")

    def apis(self) -> list[str]:
        """Every engine's API URL, once each (data-parallel ranks share their server's)."""
        return list(dict.fromkeys(e.api.rstrip("/") for e in self.router.engines if e.api))

    def any_api(self) -> str | None:
        apis = self.apis()
        return apis[self._tokenizer % len(apis)] if apis else None


class _Server(ThreadingHTTPServer):
    """The proxy's server: a failure no handler caught is a log line, not a traceback."""

    def __init__(self, address, handler, proxy: RouteProxy):
        self.proxy = proxy
        super().__init__(address, handler)

    def handle_error(self, request, client_address) -> None:
        import sys

        e = sys.exc_info()[1]
        self.proxy.problem("connection", f"{client_address[0]}: {type(e).__name__}: {e}"[:200])


def _handler(proxy: RouteProxy):
    class Handler(BaseHTTPRequestHandler):
        timeout = proxy.client_timeout  # every read and write of the client's socket

        def log_message(self, *args) -> None:
            pass  # the app owns the terminal; problems go through proxy.problem

        def log_error(self, format, *args) -> None:
            proxy.problem("client", format % args)  # a bad request line or headers (answered by BaseHTTPRequestHandler)

        def handle(self) -> None:
            if not proxy._clients.acquire(blocking=False):
                proxy.problem("busy", f"more than {MAX_CLIENTS} requests at once")
                return self._busy()
            try:
                super().handle()
            finally:
                proxy._clients.release()

        def _busy(self) -> None:
            """503 before reading anything: a thread this short costs no more than refusing."""
            data = json.dumps({"error": {"message": f"the proxy is serving {MAX_CLIENTS} requests; try again",
                                         "type": "kvtui_route", "code": 503}}).encode()
            head = (f"HTTP/1.0 503 Service Unavailable\r\nContent-Type: application/json\r\n"
                    f"Content-Length: {len(data)}\r\n\r\n").encode()
            try:
                self.wfile.write(head + data)
            except OSError:
                pass

        def do_GET(self) -> None:
            self._answer(self._models)

        def do_POST(self) -> None:
            self._answer(self._route)

        def _models(self) -> None:
            api = proxy.any_api()
            if self.path.rstrip("/") != "/v1/models" or api is None:
                raise Refused(404, f"route mode serves {', '.join(ROUTED_PATHS)} and /v1/models", "path")
            self._relay(urllib.request.Request(api + "/v1/models"), time.monotonic())

        def _answer(self, serve) -> None:
            """Run `serve`; a Refused becomes the client's answer, and anything else a 502:
            every client gets a response."""
            try:
                serve()
            except Refused as e:
                proxy.problem(e.kind, f"{self.path}: {e.status} {e}")
                self._error(e.status, str(e))
            except (BrokenPipeError, ConnectionResetError):
                proxy.problem("client gone", f"{self.path}: the client closed its connection")
            except Exception as e:  # noqa: BLE001 - a fault of kvtui's own still answers the client
                proxy.problem("internal", f"{self.path}: {type(e).__name__}: {e}")
                self._error(500, f"kvtui route: {type(e).__name__}")

        def _route(self) -> None:
            if self.path not in ROUTED_PATHS:
                raise Refused(404, f"route mode serves {', '.join(ROUTED_PATHS)} and /v1/models", "path")
            if proxy.gate is not None and (why := proxy.gate()) is not None:
                raise Refused(503, f"this kvtui no longer routes: {why}", "not the leader")
            raw = io.read_body(self.headers, self.rfile)
            body = io.completion_request(raw)
            tokens = proxy.tokens(io.tokenize_body(body))
            routed = proxy.decide(body, tokens)
            engine = routed.decision.node
            if engine is None:
                raise Refused(503, routed.decision.reason, "no engine")
            forward = urllib.request.Request(proxy.api_of(engine) + self.path, data=raw,
                                             headers={"Content-Type": "application/json"})
            usage, ttft, e2e = self._relay(forward, time.monotonic())
            proxy.served(routed, engine, usage, ttft, e2e)

        def _relay(self, forward, t0: float):
            """Send `forward`, pass its answer on; ((cached, completion tokens), ttft, e2e). A whole answer
            is read before anything is sent (an engine failing in it is a clean 502); a
            stream is passed on as it comes, and ends with an error event if it breaks."""
            with io.engine_call(forward, proxy.engine_timeout) as response:
                kind = response.headers.get("Content-Type", "application/json")
                if response.status >= 400:  # relayed as the engine's answer, and counted
                    proxy.problem("engine status", f"{self.path}: the engine answered {response.status}")
                if "event-stream" not in kind:
                    data = io.read_whole(response)
                    self._send(response.status, kind, data)
                    return io.usage(data) or (0, 0), time.monotonic() - t0, time.monotonic() - t0
                self.send_response(response.status)
                self.send_header("Content-Type", kind)
                self.end_headers()
                return self._stream(response, t0)

        def _stream(self, response, t0: float):
            usage, first = (0, 0), None
            try:
                for line in io.stream_lines(response):
                    first = first if first is not None else time.monotonic() - t0
                    self.wfile.write(line)
                    self.wfile.flush()
                    usage = io.usage(line) or usage
            except Refused as e:
                proxy.problem(e.kind, f"{self.path}: {e}")
                self.wfile.write(io.error_event(e))
            return usage, first, time.monotonic() - t0

        def _error(self, status: int, message: str) -> None:
            data = json.dumps({"error": {"message": message, "type": "kvtui_route", "code": status}}).encode()
            try:
                self._send(status, "application/json", data)
            except OSError:
                pass  # the client is gone; the problem was counted

        def _send(self, status: int, kind: str, data: bytes) -> None:
            self.send_response(status)
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

    return Handler


def _listed_adapters(api: str | None) -> set[str]:
    """The LoRA adapters an engine's `/v1/models` lists (vLLM's card for a LoRA module has a
    `parent`, the base model's has none); none if it does not answer."""
    if api is None:
        return set()
    try:
        with io.engine_call(urllib.request.Request(api + "/v1/models"), io.TOKENIZE_TIMEOUT_S) as response:
            cards = json.loads(io.read_whole(response)).get("data", [])
    except (Refused, ValueError, AttributeError, RecursionError):
        return set()
    if not isinstance(cards, list):
        return set()
    return {c["id"] for c in cards if isinstance(c, dict) and c.get("parent") and isinstance(c.get("id"), str)}
