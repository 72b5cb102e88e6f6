"""kvtui's `sglang_cache_aware` against SGLang's real gateway (sglang-router 0.3.2), pick by pick.

The gateway runs on loopback (`.ci/peers/sglang.sh` installs it into `$KVTUI_PEERS/sglang`) in
front of fake workers: HTTP servers in this process that record which worker each request
reached and hold the response until the test releases it, so the gateway's load (its count of
requests sent and not finished, `Worker::load()`) is known at every step. The same randomised
stream of sends and completions goes to the gateway and to kvtui's policy; every pick must be
the same. The gateway's `/workers` list gives its worker order, which becomes kvtui's cluster
order, and its per-worker `load` is checked against kvtui's after every completion.

Prompts are made of blocks of `CHARS` equal characters, each block's character drawn from a
small alphabet along a few shared stems, so two prompts that part do so at a block's first
character: the gateway's character match is then kvtui's block match times `CHARS`, and its
match rate (matched / prompt characters) is kvtui's (matched / prompt blocks).

Size: `cases(300)` decisions per run (KVTUI_DIFF_SCALE); the agreement rate is printed.
"""

from __future__ import annotations

import http.client
import json
import socket
import subprocess
import tempfile
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import numpy as np

from kvtui.events import RequestCompleted
from kvtui.sim.request import Request
from kvtui.sim.router.base import Context
from kvtui.sim.router.sglang import SGLangCacheAware
from kvtui.sim.router.state import NodeState
from tests.differential.peers import cases, require

WORKERS = 4
CHARS = 8  # characters per block
BLOCK_TOKENS = 16  # kvtui's block size for the same prompt (any value: rates are block ratios)
ALPHABET = "abcdefghij"
KNOBS = {"cache_threshold": 0.5, "balance_abs_threshold": 2, "balance_rel_threshold": 1.5}
MAX_OUTSTANDING = 10


# ------------------------------------------------------------------------- fake workers
@dataclass
class Held:
    worker: int
    release: threading.Event = field(default_factory=threading.Event)


class FakeWorkers:
    """HTTP workers on 127.0.0.1: answer the gateway's health and info probes, and hold each
    /generate until released, noting which worker got which request id."""

    def __init__(self, n: int) -> None:
        self.arrived: dict[str, Held] = {}
        self.cond = threading.Condition()
        self.servers = [ThreadingHTTPServer(("127.0.0.1", 0), self._handler(i)) for i in range(n)]
        for s in self.servers:
            s.daemon_threads = True
            threading.Thread(target=s.serve_forever, daemon=True).start()

    def urls(self) -> list[str]:
        return [f"http://127.0.0.1:{s.server_address[1]}" for s in self.servers]

    def _handler(self, index: int):
        workers = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args) -> None:
                pass

            def _reply(self, payload: dict) -> None:
                body = json.dumps(payload).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def do_GET(self) -> None:
                self._reply({"model_path": "fake", "tokenizer_path": "fake", "is_generation": True, "data": [{"id": "fake"}]})

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")
                held = workers.note(str(body.get("rid")), index)
                held.release.wait(timeout=60)
                self._reply({"text": "ok", "meta_info": {"id": body.get("rid")}})

        return Handler

    def note(self, rid: str, index: int) -> Held:
        with self.cond:
            held = self.arrived[rid] = Held(index)
            self.cond.notify_all()
        return held

    def where(self, rid: str, timeout: float = 20.0) -> int:
        with self.cond:
            if not self.cond.wait_for(lambda: rid in self.arrived, timeout):
                raise AssertionError(f"request {rid} reached no worker")
            return self.arrived[rid].worker

    def close(self) -> None:
        for held in self.arrived.values():
            held.release.set()
        for s in self.servers:
            s.shutdown()
            s.server_close()


# ------------------------------------------------------------------------- the gateway
def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class GatewayExited(Exception):
    """The launcher died before its workers were ready (its port, picked free a moment before,
    may have been taken in between: `free_port` cannot hold it for the child)."""


def start_gateway(peer, urls: list[str], attempts: int = 3) -> tuple["Gateway", list[str]]:
    """A gateway with every worker registered, and their order; relaunched on a new port when
    one dies before it is ready (a CI run once waited the full minute on such a gateway)."""
    attempt = 1
    while True:
        gw = Gateway(peer, urls)
        try:
            return gw, gw.wait_ready()
        except GatewayExited:
            gw.close()
            if attempt == attempts:
                raise
            attempt += 1
        except BaseException:
            gw.close()
            raise


class Gateway:
    """sglang-router's launcher in the peer's venv, cache_aware over the fake workers."""

    def __init__(self, peer, urls: list[str]) -> None:
        self.port = free_port()
        args = [str(peer / "bin" / "python"), "-m", "sglang_router.launch_router", "--host", "127.0.0.1",
                "--port", str(self.port), "--policy", "cache_aware", "--worker-urls", *urls,
                "--eviction-interval-secs", "100000", "--max-tree-size", str(2**26), "--log-level", "error",
                "--disable-retries", "--disable-circuit-breaker"]
        for knob, value in KNOBS.items():
            args += [f"--{knob.replace('_', '-')}", str(value)]
        self.log = tempfile.TemporaryFile()  # its stderr, read back if it exits before it is ready
        self.proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=self.log)
        self.urls = urls

    def get(self, path: str) -> dict:
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=10)
        try:
            conn.request("GET", path)
            return json.loads(conn.getresponse().read())
        finally:
            conn.close()

    def workers(self) -> list[dict]:
        return self.get("/workers")["workers"]

    def wait_ready(self, timeout: float = 60.0) -> list[str]:
        """The worker URLs in the gateway's own order, once every one is registered and healthy."""
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            if self.proc.poll() is not None:
                self.log.seek(0)
                raise GatewayExited(f"exit {self.proc.returncode}: {self.log.read().decode(errors='replace')[-2000:]}")
            try:
                ws = self.workers()
                if len(ws) == len(self.urls) and all(w["is_healthy"] for w in ws):
                    return [w["url"] for w in ws]
            except (OSError, ValueError, KeyError):
                pass
            time.sleep(0.2)
        raise AssertionError(f"the gateway did not register its workers in {timeout:.0f} s")

    def send(self, rid: str, text: str) -> threading.Thread:
        """POST /generate in a thread (it returns when the worker is released)."""

        def run() -> None:
            conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=120)
            body = json.dumps({"text": text, "rid": rid, "sampling_params": {"max_new_tokens": 1}})
            conn.request("POST", "/generate", body, {"Content-Type": "application/json"})
            conn.getresponse().read()
            conn.close()

        t = threading.Thread(target=run, daemon=True)
        t.start()
        return t

    def close(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.log.close()


# ------------------------------------------------------------------------- the stream
def prompt(rng: np.random.Generator, stems: list[str]) -> str:
    """A stem's first blocks (or none), then fresh blocks: one character per block."""
    stem = stems[int(rng.integers(len(stems)))]
    keep = int(rng.integers(0, len(stem) + 1))
    fresh = "".join(ALPHABET[int(i)] for i in rng.integers(len(ALPHABET), size=int(rng.integers(1, 6))))
    return stem[:keep] + fresh


def chained_keys(blocks: str) -> tuple[int, ...]:
    """One key per block, each fixing every block before it (as kvtui's block keys do)."""
    return tuple(hash(blocks[: i + 1]) for i in range(len(blocks)))


def state(name: str) -> NodeState:
    return NodeState(name, None, 0, 0.0, 0, 0, 0, 0, 100, 100, -1)


def completed(rid: str, node: str) -> RequestCompleted:
    return RequestCompleted(0, 0.0, rid, node, "s", "g", 0, 1, 0, "miss", 0.0, 0.0, 0.0, 0)


def wait_for_load(gw: Gateway, want: dict[str, int], timeout: float = 10.0) -> dict[str, int]:
    """The gateway's loads once they equal `want` (its guard drops just after the response)."""
    end = time.monotonic() + timeout
    while True:
        loads = {w["url"]: int(w["load"]) for w in gw.workers()}
        if loads == want or time.monotonic() > end:
            return loads
        time.sleep(0.002)


def run_pair(peer, decisions: int, seed: int, tie_break: str = "deterministic") -> tuple[int, int, list[str], dict]:
    """Drive both routers with one stream; (agreeing picks, decisions, first disagreements, the
    policy's counts of imbalanced / hit / miss decisions)."""
    rng = np.random.default_rng(seed)
    stems = ["".join(ALPHABET[int(i)] for i in rng.integers(len(ALPHABET), size=12)) for _ in range(3)]
    workers = FakeWorkers(WORKERS)
    gw, order = start_gateway(peer, workers.urls())
    try:
        policy = SGLangCacheAware(eviction_interval_s=0, max_tree_size=2**26, tie_break=tie_break, **KNOBS)
        states = [state(u) for u in order]
        ctx = Context(rng=np.random.default_rng(seed), block_size=BLOCK_TOKENS, sessions={})
        outstanding: list[tuple[str, str, threading.Thread]] = []
        agree, made, diffs = 0, 0, []
        while made < decisions:
            if outstanding and (len(outstanding) >= MAX_OUTSTANDING or rng.random() < 0.45):
                rid, node, thread = outstanding.pop(int(rng.integers(len(outstanding))))
                workers.arrived[rid].release.set()
                thread.join(timeout=30)
                policy.on_event(completed(rid, node))
                want = {u: policy.load(u) for u in order}
                got = wait_for_load(gw, want)
                assert got == want, f"after {rid} finished the gateway's loads are {got}, kvtui's {want}"
                continue
            made += 1
            rid, blocks = f"r{made}", prompt(rng, stems)
            req = Request(rid, f"s{made}", "g", 0, len(blocks) * BLOCK_TOKENS, 1, chained_keys(blocks))
            ours = policy.decide(req, ctx, states)
            thread = gw.send(rid, "".join(c * CHARS for c in blocks))
            theirs = workers.urls()[workers.where(rid)]
            policy.routed(req, theirs, states)  # both go on from the gateway's pick
            outstanding.append((rid, theirs, thread))
            if ours.node == theirs:
                agree += 1
            elif len(diffs) < 5:
                diffs.append(f"{rid} {blocks!r}: kvtui {ours.node} ({ours.reason}), gateway {theirs}")
        return agree, made, diffs, policy.stats
    finally:
        workers.close()
        gw.close()


def test_sglang_gateway_and_kvtui_pick_the_same_worker_every_time():
    peer = require("sglang")
    n = cases(300)
    agree, made, diffs, kinds = run_pair(peer, n, seed=18)
    print(f"\nsglang_cache_aware vs sglang-router 0.3.2: {agree}/{made} picks agree ({100 * agree / made:.2f} %); {kinds}")
    assert min(kinds["imbalanced"], kinds["cache_hit"], kinds["cache_miss"]) > 0  # every branch was compared
    assert agree == made, "\n".join(diffs)
