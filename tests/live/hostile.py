"""Hostile peers on loopback for tests/live/test_live_hostile.py and test_live_fuzz.py: a
replay socket that answers what it is told to, a /metrics server that serves what it is told
to (slowly if asked), and an OpenAI-style engine that misbehaves on request. Every loop here
is bounded and every server stops by itself (a deadline), so a test that fails cannot leave a
peer running.
"""

from __future__ import annotations

import json
import socket
import sys
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import msgpack
import zmq

LIFETIME_S = 30.0  # no peer outlives this


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def seq_bytes(seq: int) -> bytes:
    return seq.to_bytes(8, "big", signed=True)


def payload(events: list, ts: float = 1.0, rank=None) -> bytes:
    return msgpack.packb([ts, events] + ([] if rank is None else [rank]))


def stored(hashes: list, tokens: list, block_size: int = 4, parent=None, medium="GPU", **extra) -> dict:
    return {"type": "BlockStored", "block_hashes": hashes, "parent_block_hash": parent, "token_ids": tokens,
            "block_size": block_size, "lora_id": None, "medium": medium, **extra}


def message(seq: int, events: list, topic: bytes = b"kv") -> list[bytes]:
    return [topic, seq_bytes(seq), payload(events)]


class ReplaySocket:
    """A ROUTER that answers each request with `answer(start_seq)`: a list of (delay_s,
    frames) sent after the identity, in order; the end marker only if the list holds it."""

    def __init__(self, answer: Callable[[int], list[tuple[float, list[bytes]]]]):
        self.endpoint = f"tcp://127.0.0.1:{free_port()}"
        self.answer, self.asked = answer, []
        self._ctx = zmq.Context()
        self._router = self._ctx.socket(zmq.ROUTER)
        self._router.setsockopt(zmq.LINGER, 0)
        self._router.bind(self.endpoint)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        deadline = time.monotonic() + LIFETIME_S
        while not self._stop.is_set() and time.monotonic() < deadline:
            if not self._router.poll(50):
                continue
            identity, _, start = self._router.recv_multipart()
            self.asked.append(int.from_bytes(start, "big", signed=True))
            for delay, frames in self.answer(self.asked[-1]):
                if self._stop.wait(delay) or time.monotonic() > deadline:
                    return
                self._router.send_multipart([identity, *frames])

    def close(self) -> None:
        self._stop.set()
        self._thread.join(5)
        self._router.close(linger=0)
        self._ctx.term()


def replayed(sub, bound_s: float = LIFETIME_S) -> bool:
    """Drain the subscriber `sub` until its open replay request ended, as a session's polls
    do; True when it ended within `bound_s`."""
    deadline = time.monotonic() + bound_s
    while sub.asking is not None and time.monotonic() < deadline:
        sub.asking.socket.poll(int(min(sub.wait_s(), 0.05) * 1000))
        sub.drain()
    return sub.asking is None


class HangUpTolerantServer(ThreadingHTTPServer):
    """A hostile engine's client (the proxy, a scraper) hanging up mid-answer is what the tests
    provoke on purpose; socketserver would print each as a traceback among the test dots."""

    def handle_error(self, request, client_address) -> None:
        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)


class Http:
    """A threaded HTTP server on loopback whose handler methods are given."""

    def __init__(self, handler: type[BaseHTTPRequestHandler]):
        self.httpd = HangUpTolerantServer(("127.0.0.1", 0), handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()
        threading.Timer(LIFETIME_S, self.close).start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


class Quiet(BaseHTTPRequestHandler):
    def log_message(self, *args) -> None:
        pass

    def send(self, status: int, data: bytes, kind: str = "application/json") -> None:
        self.send_response(status)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


def metrics_server(page: str, trickle_s: float = 0.0) -> Http:
    """Serves `page` at /metrics; with `trickle_s`, one byte of it every `trickle_s` seconds."""

    class Handler(Quiet):
        def do_GET(self):
            data = page.encode()
            if not trickle_s:
                return self.send(200, data, "text/plain")
            self.send_response(200)
            self.send_header("Content-Type", "text/plain")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            for i in range(min(len(data), int(LIFETIME_S / trickle_s))):
                self.wfile.write(data[i:i + 1])
                self.wfile.flush()
                time.sleep(trickle_s)

    return Http(Handler)


STREAM = [b'data: {"choices": [{"text": "o"}]}\n\n', b'data: {"choices": [{"text": "k"}]}\n\n', b"data: [DONE]\n\n"]


def engine(tokens=None, die_mid_stream: bool = False, silent_s: float = 0.0) -> Http:
    """An OpenAI-style engine: /tokenize answers `{"tokens": tokens}` (or the prompt's words as
    ids), /v1/completions answers or streams; `die_mid_stream` closes the connection after the
    first event, `silent_s` sleeps before answering."""

    class Handler(Quiet):
        protocol_version = "HTTP/1.1"

        def do_POST(self):
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            if self.path == "/tokenize":
                ids = tokens if tokens is not None else [int(w) for w in str(body.get("prompt", "1 2 3")).split()]
                return self.send(200, json.dumps({"tokens": ids}).encode())
            time.sleep(silent_s)
            if not body.get("stream"):
                return self.send(200, json.dumps({"choices": [{"text": "ok"}]}).encode())
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            for event in STREAM[:1] if die_mid_stream else STREAM:
                self.wfile.write(b"%x\r\n%s\r\n" % (len(event), event))
                self.wfile.flush()
            if die_mid_stream:
                self.connection.shutdown(socket.SHUT_RDWR)
                return
            self.wfile.write(b"0\r\n\r\n")

    return Http(Handler)


def raw_request(port: int, data: bytes, wait_s: float = 10.0) -> bytes:
    """Send `data` as is and read the answer until the server closes (or `wait_s`)."""
    with socket.create_connection(("127.0.0.1", port), timeout=wait_s) as s:
        s.sendall(data)
        out = b""
        try:
            while chunk := s.recv(65536):
                out += chunk
        except (TimeoutError, ConnectionResetError):
            pass
    return out


def status_of(answer: bytes) -> int | None:
    """The status code of a raw HTTP answer, None when there was none."""
    parts = answer.split(b" ", 2)
    return int(parts[1]) if len(parts) > 1 and answer.startswith(b"HTTP/") and parts[1].isdigit() else None
