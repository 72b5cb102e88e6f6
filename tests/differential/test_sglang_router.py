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

Evicting streams: the gateway runs its eviction thread every second (`--eviction-interval-secs
1`, the least it takes) over a small `--max-tree-size`, with `--log-level debug` into a file;
its thread logs "Cache eviction completed" after each pass, and sleeps at least a second
(`PeriodicTask`: ten sleeps of 100 ms) before the next. So the stream runs in windows: seen
pass k end, send and finish a few requests well inside that second, wait for pass k+1; kvtui's
policy gets simulated time k at those decisions and an eviction interval of 1 s, so its pass
falls between the same two decisions. A window whose request reached its worker too late to be
sure it preceded the next pass restarts the stream on a fresh gateway (same seed). The
gateway's global epoch counter has already been advanced by its worker registrations
("Initializing cache-aware policy with N workers": N root inserts each, racing), read from the
same log, so kvtui's tree starts from the same epoch and re-stamps on the same matches (one in
eight). Evicting streams use two workers: with more, a run whose creator was evicted falls back
to the first of a per-process hash map, which nothing outside the gateway can foresee.

Size: `cases(300)` decisions for the plain stream and `cases(60)` for the evicting ones
(KVTUI_DIFF_SCALE); the agreement rates are printed. The evicting ones run on the gateway's
clock, about a second per three decisions: ~20 s at scale 1, ~50 min at scale 34.
"""

from __future__ import annotations

import http.client
import json
import os
import re
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
ANSI = re.compile(r"\x1b\[[0-9;]*m")
PASS_DONE = "Cache eviction completed"
REGISTERED = re.compile(r"Initializing cache-aware policy with (\d+) workers")
WINDOW_S = 0.5  # sends start only this long after a pass was seen to end ...
SURE_S = 0.8  # ... and must have reached their worker by this: the next pass is >= 1 s after


# ------------------------------------------------------------------------- fake workers
@dataclass
class Held:
    worker: int
    release: threading.Event = field(default_factory=threading.Event)
    at: float = field(default_factory=time.monotonic)  # when it reached the worker


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


def start_gateway(peer, urls: list[str], attempts: int = 3, max_tree_size: int | None = None) -> tuple["Gateway", list[str]]:
    """A gateway with every worker registered, and their order; relaunched on a new port when
    one dies before it is ready (a CI run once waited the full minute on such a gateway)."""
    attempt = 1
    while True:
        gw = Gateway(peer, urls, max_tree_size)
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
    """sglang-router's launcher in the peer's venv, cache_aware over the fake workers; eviction
    off unless `max_tree_size` is given (then a pass every second, logged at debug level)."""

    def __init__(self, peer, urls: list[str], max_tree_size: int | None = None) -> None:
        self.port = free_port()
        evicting = max_tree_size is not None
        args = [str(peer / "bin" / "python"), "-m", "sglang_router.launch_router", "--host", "127.0.0.1",
                "--port", str(self.port), "--policy", "cache_aware", "--worker-urls", *urls,
                "--eviction-interval-secs", "1" if evicting else "100000",
                "--max-tree-size", str(max_tree_size if evicting else 2**26),
                "--log-level", "debug" if evicting else "error", "--disable-retries", "--disable-circuit-breaker"]
        for knob, value in KNOBS.items():
            args += [f"--{knob.replace('_', '-')}", str(value)]
        self.log = tempfile.TemporaryFile()  # its output: read back for passes, or if it exits before it is ready
        self.proc = subprocess.Popen(args, stdout=self.log, stderr=subprocess.STDOUT)
        self.urls = urls

    def logged(self) -> str:
        """Everything it has logged so far, colour codes removed."""
        size = os.fstat(self.log.fileno()).st_size
        return ANSI.sub("", os.pread(self.log.fileno(), size, 0).decode(errors="replace"))

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
                raise GatewayExited(f"exit {self.proc.returncode}: {self.logged()[-2000:]}")
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


class Pair:
    """One gateway and one kvtui policy fed the same sends and completions; both go on from the
    gateway's picks. `now` is kvtui's simulated time at the next decision."""

    def __init__(self, peer, workers: int, seed: int, tie_break: str = "deterministic", max_tree_chars: int | None = None) -> None:
        self.workers = FakeWorkers(workers)
        self.gw, self.order = start_gateway(peer, self.workers.urls(), max_tree_size=max_tree_chars)
        evicting = max_tree_chars is not None
        self.policy = SGLangCacheAware(
            eviction_interval_s=1.0 if evicting else 0, tie_break=tie_break,
            max_tree_size=max_tree_chars // CHARS if evicting else 2**26, **KNOBS,
        )  # a tenant is over `max_tree_chars` characters when over its floor in blocks of CHARS
        self.states = [state(u) for u in self.order]
        self.ctx = Context(rng=np.random.default_rng(seed), block_size=BLOCK_TOKENS, sessions={})
        self.outstanding: list[tuple[str, str, threading.Thread]] = []
        self.agree, self.made, self.diffs = 0, 0, []
        self.now = 0.0
        self.last_arrival = 0.0
        # the same stream to a policy that never evicts: the decisions eviction changed
        self.shadow = SGLangCacheAware(eviction_interval_s=0, max_tree_size=2**26, **KNOBS) if evicting else None
        self.changed = 0

    def send(self, blocks: str) -> None:
        self.made += 1
        rid = f"r{self.made}"
        req = Request(rid, f"s{self.made}", "g", 0, len(blocks) * BLOCK_TOKENS, 1, chained_keys(blocks))
        self.ctx.now = self.now
        ours = self.policy.decide(req, self.ctx, self.states)
        thread = self.gw.send(rid, "".join(c * CHARS for c in blocks))
        theirs = self.workers.urls()[self.workers.where(rid)]
        self.last_arrival = self.workers.arrived[rid].at
        self.policy.routed(req, theirs, self.states)
        if self.shadow is not None:
            self.changed += self.shadow.decide(req, self.ctx, self.states).node != ours.node
            self.shadow.routed(req, theirs, self.states)
        self.outstanding.append((rid, theirs, thread))
        if ours.node == theirs:
            self.agree += 1
        elif len(self.diffs) < 5:
            self.diffs.append(f"{rid} {blocks!r} at pass {self.now:g}: kvtui {ours.node} ({ours.reason}), gateway {theirs}")

    def finish(self, index: int) -> None:
        rid, node, thread = self.outstanding.pop(index)
        self.workers.arrived[rid].release.set()
        thread.join(timeout=30)
        for policy in (self.policy, self.shadow):
            if policy is not None:
                policy.on_event(completed(rid, node))
        want = {u: self.policy.load(u) for u in self.order}
        got = wait_for_load(self.gw, want)
        assert got == want, f"after {rid} finished the gateway's loads are {got}, kvtui's {want}"

    def step(self, rng: np.random.Generator, stems: list[str]) -> None:
        """A completion (of a random outstanding request) or a new send, as the stream draws."""
        if self.outstanding and (len(self.outstanding) >= MAX_OUTSTANDING or rng.random() < 0.45):
            self.finish(int(rng.integers(len(self.outstanding))))
        else:
            self.send(prompt(rng, stems))

    def close(self) -> None:
        self.workers.close()
        self.gw.close()


def stems_for(rng: np.random.Generator) -> list[str]:
    return ["".join(ALPHABET[int(i)] for i in rng.integers(len(ALPHABET), size=12)) for _ in range(3)]


def run_pair(peer, decisions: int, seed: int, tie_break: str = "deterministic") -> tuple[int, int, list[str], dict]:
    """Drive both routers with one stream, eviction off; (agreeing picks, decisions, first
    disagreements, the policy's counts of imbalanced / hit / miss decisions)."""
    rng = np.random.default_rng(seed)
    stems = stems_for(rng)
    pair = Pair(peer, WORKERS, seed, tie_break)
    try:
        while pair.made < decisions:
            pair.step(rng, stems)
        return pair.agree, pair.made, pair.diffs, pair.policy.stats
    finally:
        pair.close()


def test_sglang_gateway_and_kvtui_pick_the_same_worker_every_time():
    peer = require("sglang")
    n = cases(300)
    agree, made, diffs, kinds = run_pair(peer, n, seed=18)
    print(f"\nsglang_cache_aware vs sglang-router 0.3.2: {agree}/{made} picks agree ({100 * agree / made:.2f} %); {kinds}")
    assert min(kinds["imbalanced"], kinds["cache_hit"], kinds["cache_miss"]) > 0  # every branch was compared
    assert agree == made, "\n".join(diffs)


# ------------------------------------------------------------------------- evicting streams
class Unsure(Exception):
    """A request reached its worker too close to the gateway's next pass to be sure which came first."""


class Passes:
    """The gateway's eviction passes and worker registrations, read from its debug log as it grows."""

    def __init__(self, gw: Gateway) -> None:
        self.gw, self.offset, self.done, self.registered = gw, 0, 0, 0
        self.seen_at = time.monotonic()  # when `done` was last seen to grow

    def poll(self) -> None:
        fd = self.gw.log.fileno()
        data = os.pread(fd, os.fstat(fd).st_size - self.offset, self.offset)
        data = data[: data.rfind(b"\n") + 1]  # whole lines only
        self.offset += len(data)
        text = ANSI.sub("", data.decode(errors="replace"))
        passes = text.count(PASS_DONE)
        if passes:
            self.done += passes
            self.seen_at = time.monotonic()
        self.registered += sum(int(n) for n in REGISTERED.findall(text))

    def wait_next(self, timeout: float = 10.0) -> None:
        """Until at least one more pass has ended."""
        before, end = self.done, time.monotonic() + timeout
        while self.done == before:
            if time.monotonic() > end:
                raise AssertionError(f"no eviction pass in {timeout:.0f} s")
            time.sleep(0.003)
            self.poll()


def run_evicting(peer, decisions: int, seed: int, workers: int = 2, max_ops: int = 8) -> Pair:
    """One evicting stream: windows between the gateway's passes (see the module's docstring)."""
    rng = np.random.default_rng(seed)
    stems = stems_for(rng)
    max_blocks = int(rng.integers(2, 9))
    pair = Pair(peer, workers, seed, max_tree_chars=max_blocks * CHARS + int(rng.integers(CHARS)))
    try:
        passes = Passes(pair.gw)
        passes.wait_next()  # registrations are over well before the first pass over a tree
        for policy in (pair.policy, pair.shadow):
            policy.members[:] = pair.order  # registered together, as the log says ...
            policy.tree.epoch = passes.registered  # ... with this many root inserts
        while pair.made < decisions:
            pair.now = float(passes.done)
            for _ in range(int(rng.integers(0, max_ops + 1))):
                if time.monotonic() - passes.seen_at > WINDOW_S or pair.made >= decisions:
                    break
                made = pair.made
                pair.step(rng, stems)
                if pair.made > made and pair.last_arrival - passes.seen_at > SURE_S:
                    raise Unsure(f"r{pair.made} reached its worker {pair.last_arrival - passes.seen_at:.2f} s after a pass")
            passes.wait_next()
        return pair
    finally:
        pair.close()


def evicting_streams(peer, decisions: int, per_stream: int = 30, attempts: int = 3) -> tuple[int, int, int, list[str], dict]:
    """Streams of `per_stream` decisions until `decisions`; (agreeing picks, decisions, decisions
    eviction changed, first disagreements, summed counts incl. blocks evicted)."""
    agree = made = changed = 0
    diffs: list[str] = []
    kinds: dict[str, int] = {}
    seed = 31_000
    while made < decisions:
        seed += 1
        for attempt in range(1, attempts + 1):
            try:
                pair = run_evicting(peer, min(per_stream, decisions - made), seed)
                break
            except Unsure:
                if attempt == attempts:
                    raise
        agree, made, changed = agree + pair.agree, made + pair.made, changed + pair.changed
        diffs += [f"seed {seed}: {d}" for d in pair.diffs][: 5 - len(diffs)]
        counts = {**pair.policy.stats, "evicted_blocks": pair.policy.tree.evicted_blocks,
                  "ambiguous_evictions": pair.policy.tree.ambiguous_evictions}
        kinds = {k: kinds.get(k, 0) + v for k, v in counts.items()}
    return agree, made, changed, diffs, kinds


def test_sglang_gateway_and_kvtui_evict_alike():
    """Small trees, a pass every second: kvtui's node-granular pass over 0.3.2's epochs keeps
    every pick the gateway's, and eviction did change picks (else this would test nothing)."""
    peer = require("sglang")
    agree, made, changed, diffs, kinds = evicting_streams(peer, cases(60))
    print(f"\nevicting: sglang_cache_aware vs sglang-router 0.3.2: {agree}/{made} picks agree "
          f"({100 * agree / made:.2f} %); {changed} decisions differ from a never-evicting tree; {kinds}")
    assert kinds["evicted_blocks"] > 0 and changed > 0 and kinds["ambiguous_evictions"] == 0
    assert min(kinds["imbalanced"], kinds["cache_hit"], kinds["cache_miss"]) > 0
    assert agree == made, "\n".join(diffs)


def test_sglang_gateway_drops_the_whole_run_and_sends_the_repeat_to_the_idle_worker():
    """Issue 31's smallest case on the real gateway: two workers, max tree size 10 characters,
    the same 16 characters (two blocks of 8) sent twice with one pass between, the first still
    in flight: the gateway and kvtui both send the repeat to the idle worker."""
    peer = require("sglang")
    pair = Pair(peer, 2, seed=0, max_tree_chars=10)
    try:
        passes = Passes(pair.gw)
        passes.wait_next()
        for policy in (pair.policy, pair.shadow):
            policy.members[:] = pair.order
            policy.tree.epoch = passes.registered
        pair.now = float(passes.done)
        pair.send("ab")
        passes.wait_next()
        pair.now = float(passes.done)
        pair.send("ab")
        first, second = (rid_node for _rid, rid_node, _t in pair.outstanding)
        assert pair.agree == 2, "\n".join(pair.diffs)
        assert first != second and pair.policy.tree.size(first) == 0 and pair.policy.tree.size(second) == 2
        assert pair.changed == 1  # a tree that never evicts would have matched 2/2 blocks on the busy worker
    finally:
        pair.close()
