"""Route mode: an OpenAI-compatible proxy in front of the engines, routing with kvtui's policies.

`kvtui live ... --route POLICY --listen HOST:PORT` serves `/v1/completions` and
`/v1/chat/completions` (streaming and not) and `/v1/models`. For each request it:
1. tokenizes the prompt through an engine's own `/tokenize` (vLLM's: the same body with
   `prompt`, or `messages` for a chat, answers `{"tokens": [...]}`), so the blocks are the
   engine's, and chains kvtui's keys over them (kvtui/sim/workload/hashing.py), from the
   adapter's root when the body's `model` names a LoRA adapter (kvtui/live/lora.py);
2. routes with the policy over the live state (kvtui/live/routing.py), under the session's lock;
3. forwards the body unchanged to the chosen engine's `api` and relays its answer as it
   comes (server-sent events line by line), timing the first byte (TTFT) and the end (E2E);
4. reads the tokens the engine served from its prefix cache (`usage.prompt_tokens_details.
   cached_tokens`, in the last streamed chunk with usage, or the body) and hands a `Served`
   (decision, forensics: kvtui/live/forensics.py) to the session, which records it.

vLLM reports cached tokens only with `--enable-prompt-tokens-details`; without it the engine is
taken to have hit nothing, and the forensics say so (every block missed).
"""

from __future__ import annotations

import json
import threading
import time
import urllib.error
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from queue import Empty, Queue

import numpy as np

from kvtui.live.delivery import Served
from kvtui.live.forensics import attribute
from kvtui.live.lora import adapter_root
from kvtui.live.routing import LiveRouter, Routed
from kvtui.sim.request import Request
from kvtui.sim.workload.hashing import chain_keys

ROUTED_PATHS = ("/v1/completions", "/v1/chat/completions")
DEFAULT_BLOCK_SIZE = 16  # vLLM's default, until an engine's metrics give its own
TIMEOUT_S = 600.0


class RouteProxy:
    def __init__(self, host: str, port: int, router: LiveRouter, session, clock=time.time):
        self.router, self.session, self.clock = router, session, clock
        self.ready: Queue[Served] = Queue()
        self.count = 0
        self._asked: set[str] = set()  # model names already looked up in /v1/models
        self._listed: set[str] = set()  # LoRA adapters /v1/models listed
        self._count_lock = threading.Lock()
        self.server = ThreadingHTTPServer((host, port), _handler(self))
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

    # ------------------------------------------------------------------ one request
    def next_id(self) -> str:
        with self._count_lock:
            self.count += 1
            return f"req-{self.count}"

    def block_size(self) -> int:
        sizes = [f.block_size for f in self.session.state.figures.values() if f.block_size]
        return sizes[0] if sizes else DEFAULT_BLOCK_SIZE

    def adapter(self, model) -> str | None:
        """The LoRA adapter a request's `model` names, or None for the base model
        (kvtui/live/lora.py): one the engines stored blocks under, or one an engine's
        `/v1/models` lists with a `parent` (asked once per model name not seen before)."""
        if not isinstance(model, str):
            return None
        with self.session.lock:
            if model in self.session.state.adapters:
                return model
        if model not in self._asked:
            self._asked.add(model)
            self._listed |= _listed_adapters(self.any_api())
        return model if model in self._listed else None

    def decide(self, body: dict, tokens: list[int]) -> Routed:
        bs = self.block_size()
        root = adapter_root(self.adapter(body.get("model")))
        keys = tuple(chain_keys(np.asarray(tokens, dtype=np.int64), bs, root))
        rid = self.next_id()
        request = Request(rid, str(body.get("user") or rid), "", 0, len(tokens),
                          int(body.get("max_tokens") or body.get("max_completion_tokens") or 16), keys)
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
                              req.prompt_tokens, completion or req.output_tokens))

    def api_of(self, engine: str) -> str:
        """The chosen engine's API (a policy chooses only eligible engines: they have one)."""
        return next(e.api for e in self.router.engines if e.name == engine and e.api).rstrip("/")

    def any_api(self) -> str | None:
        return next((e.api.rstrip("/") for e in self.router.engines if e.api), None)


def _handler(proxy: RouteProxy):
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args) -> None:
            pass  # the app owns the terminal

        def do_GET(self) -> None:
            api = proxy.any_api()
            if self.path.rstrip("/") != "/v1/models" or api is None:
                return self._error(404, f"route mode serves {', '.join(ROUTED_PATHS)} and /v1/models")
            self._relay(urllib.request.Request(api + "/v1/models"), None)

        def do_POST(self) -> None:
            if self.path not in ROUTED_PATHS:
                return self._error(404, f"route mode serves {', '.join(ROUTED_PATHS)} and /v1/models")
            raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            try:
                body = json.loads(raw)
                ask = _tokenize_body(body)
            except (ValueError, KeyError, TypeError) as e:
                return self._error(400, f"not a completion request: {e}")
            try:
                tokens = _tokenize(proxy.any_api(), ask)
            except (ValueError, OSError, KeyError) as e:
                return self._error(502, f"the engine could not tokenize it: {e}")
            routed = proxy.decide(body, tokens)
            engine = routed.decision.node
            if engine is None:
                return self._error(503, routed.decision.reason)
            forward = urllib.request.Request(proxy.api_of(engine) + self.path, data=raw,
                                             headers={"Content-Type": "application/json"})
            usage, ttft, e2e = self._relay(forward, time.monotonic())
            proxy.served(routed, engine, usage, ttft, e2e)

        def _relay(self, forward, t0: float | None):
            """Send `forward`, pass its answer on as it comes; ((cached, completion tokens), ttft, e2e)."""
            try:
                response = urllib.request.urlopen(forward, timeout=TIMEOUT_S)
            except urllib.error.HTTPError as e:
                response = e
            except OSError as e:
                self._error(502, f"engine unreachable: {e}")
                return (0, 0), None, 0.0
            with response:
                self.send_response(response.status)
                self.send_header("Content-Type", response.headers.get("Content-Type", "application/json"))
                self.end_headers()
                events = "event-stream" in response.headers.get("Content-Type", "")
                return _stream(response, self.wfile, t0 if t0 is not None else time.monotonic(), events)

        def _error(self, status: int, message: str) -> None:
            data = json.dumps({"error": {"message": message, "type": "kvtui_route", "code": status}}).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

    return Handler


def _tokenize_body(body: dict) -> dict:
    """What vLLM's /tokenize takes for this request: its prompt, or a chat's messages."""
    ask = {"model": body.get("model")}
    ask.update({"messages": body["messages"]} if "messages" in body else {"prompt": body["prompt"]})
    return ask


def _tokenize(api: str | None, ask: dict) -> list[int]:
    if api is None:
        raise KeyError("no engine has an api URL to tokenize with")
    request = urllib.request.Request(api + "/tokenize", data=json.dumps(ask).encode(),
                                     headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=30) as response:
        tokens = json.loads(response.read())["tokens"]
    if not isinstance(tokens, list) or not all(isinstance(t, int) for t in tokens):
        raise ValueError("/tokenize did not answer a list of token ids")
    return tokens


def _stream(response, out, t0: float, events: bool) -> tuple[tuple[int, int], float | None, float]:
    """Copy the answer as it comes (server-sent events arrive a line at a time); the usage
    (cached prompt tokens, completion tokens) is in an event's JSON, or in the whole body when
    it is one JSON document."""
    usage, first, body = (0, 0), None, bytearray()
    for line in response:
        if first is None:
            first = time.monotonic() - t0
        out.write(line)
        out.flush()
        if events:
            usage = _usage(line) or usage
        else:
            body += line
    return (usage if events else (_usage(bytes(body)) or (0, 0))), first, time.monotonic() - t0


def _usage(line: bytes) -> tuple[int, int] | None:
    """(`usage.prompt_tokens_details.cached_tokens`, `usage.completion_tokens`) of a JSON body or
    a `data: {...}` event; None when it carries no usage."""
    text = line.strip().removeprefix(b"data:").strip()
    if not text.startswith(b"{") or b"usage" not in text:
        return None
    try:
        usage = json.loads(text).get("usage")
    except ValueError:
        return None
    if not isinstance(usage, dict):
        return None
    cached = int((usage.get("prompt_tokens_details") or {}).get("cached_tokens") or 0)
    return cached, int(usage.get("completion_tokens") or 0)


def _listed_adapters(api: str | None) -> set[str]:
    """The LoRA adapters an engine's `/v1/models` lists (vLLM's card for a LoRA module has a
    `parent`, the base model's has none); none if it does not answer."""
    if api is None:
        return set()
    try:
        with urllib.request.urlopen(api + "/v1/models", timeout=10) as response:
            cards = json.loads(response.read()).get("data", [])
    except (OSError, ValueError, AttributeError):
        return set()
    return {c["id"] for c in cards if isinstance(c, dict) and c.get("parent") and isinstance(c.get("id"), str)}
