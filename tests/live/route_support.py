"""Route mode's test cluster: engines whose cores are vLLM 0.33.0's real BlockPool and
ZmqEventPublisher (tests/live/vllm_publishers.py), each behind a thin OpenAI-style HTTP front
(/tokenize, /v1/completions streaming and not, /metrics in vLLM's names). Shared by the route
tests and the counterfactual replay's."""

from __future__ import annotations

import json
import threading
import time
import urllib.request
from contextlib import contextmanager
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from kvtui.live.engines import Engine
from kvtui.live.proxy import RouteProxy
from kvtui.live.recording import Recorder
from kvtui.live.routing import LiveRouter
from kvtui.live.session import LiveSession

from . import vllm_publishers as vp

POOL_BLOCKS = 40


class Front:
    """An engine: vLLM's pool and publisher behind /tokenize, /v1/completions and /metrics."""

    def __init__(self, v):
        self.pub, self.pool = vp.Publisher(v.kv_events), vp.PoolSource(v, POOL_BLOCKS)
        self.hits: list[int] = []
        self.lock = threading.Lock()
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()
        self.api = f"http://127.0.0.1:{self.httpd.server_address[1]}"

    def serve(self, tokens: list[int]) -> int:
        with self.lock:
            self.pub.publish(self.pool.run(tokens))
            self.hits.append(self.pool.last_hit)
            return self.pool.last_hit * vp.BS

    def _handler(self):
        front = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_GET(self):
                self._send(200, (f'vllm:cache_config_info{{block_size="{vp.BS}",engine="0",'
                                 f'num_gpu_blocks="{POOL_BLOCKS}"}} 1.0\n').encode(), "text/plain")

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                tokens = [int(w) for w in body["prompt"].split()]
                if self.path == "/tokenize":
                    return self._send(200, json.dumps({"tokens": tokens, "count": len(tokens)}).encode())
                usage = {"prompt_tokens": len(tokens), "prompt_tokens_details": {"cached_tokens": front.serve(tokens)}}
                if not body.get("stream"):
                    return self._send(200, json.dumps({"choices": [{"text": "ok"}], "usage": usage}).encode())
                chunks = [{"choices": [{"text": "o"}]}, {"choices": [{"text": "k"}]}, {"choices": [], "usage": usage}]
                events = b"".join(b"data: " + json.dumps(c).encode() + b"\n\n" for c in chunks) + b"data: [DONE]\n\n"
                self._send(200, events, "text/event-stream")

            def _send(self, status, data, kind="application/json"):
                self.send_response(status)
                self.send_header("Content-Type", kind)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        return Handler

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()
        self.pub.close()


def post(url: str, body: dict) -> bytes:
    request = urllib.request.Request(url, data=json.dumps(body).encode(), headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=10) as response:
        return response.read()


@dataclass
class RoutedCluster:
    session: LiveSession
    fronts: list[Front]
    url: str  # the proxy's /v1/completions


@contextmanager
def routed_cluster(policy: str, recording: str):
    """Two engines (Front), a session recording to `recording`, kvtui's proxy routing by
    `policy`, and a thread polling the session; all closed on the way out."""
    v = vp.load_new()
    fronts = [Front(v), Front(v)]
    engines = [Engine(f"vllm-{i}", f.pub.endpoint, f.pub.replay_endpoint, f.api + "/metrics", f.api)
               for i, f in enumerate(fronts)]
    session = LiveSession(engines, Recorder(recording))
    proxy = RouteProxy("127.0.0.1", vp.free_port(), LiveRouter(policy, engines), session)
    session.sources.append(proxy)
    stop = threading.Event()
    feeder = threading.Thread(target=lambda: [session.poll(0.02) for _ in iter(stop.is_set, True)])
    feeder.start()
    try:
        yield RoutedCluster(session, fronts, f"http://127.0.0.1:{proxy.address[1]}/v1/completions")
    finally:
        stop.set()
        feeder.join()
        session.close()
        for f in fronts:
            f.close()


def wait_until(condition, seconds: float = 10.0) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > deadline:
            pytest.fail("timed out")
        time.sleep(0.01)
