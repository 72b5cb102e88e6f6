"""etcd as route mode's backend (issue 34, item 6): two `kvtui live --route --metadata etcd://`
processes on one cluster, the first killed with SIGKILL (or interrupted), the second taking over from etcd.

One etcd member on loopback (`.ci/peers/etcd.sh`: Debian's etcd-server, aetcd in the peer's own
venv, put on the kvtui processes' PYTHONPATH: the shared venv does not have it) and the routed
test cluster's two engines (tests/live/route_support.py: vLLM 0.33.0's real BlockPool and
publisher behind an OpenAI-style front). Prefixes are stored on the engines directly, half on
each, so only their KV events tell a router where they are. The first kvtui (A) routes with
cache_aware and writes its index to etcd; the second (B) waits on the routing lease. A is
killed; B must win the lease and route each prefix to the engine holding it.

B watches the engines without their replay sockets, so the only way it can know where the
prefixes A saw are is the snapshot in etcd (a B with an empty index has no prefix to go by:
cache_aware then sends every prompt by load, which puts half of them on the wrong engine). The
sessions A routed are checked the same way: B sends a new prompt (held nowhere) of each of A's
sessions to the engine A chose for it, which only the session routes in etcd can tell it.
The takeover time (from A's kill to B's first answer) is printed, not asserted: after SIGKILL it
is about the lease TTL (2 s here) plus etcd's expiry check and B's start; after SIGINT, B's start.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
import urllib.error
from pathlib import Path

import msgpack
import pytest

from differential.etcd_support import etcd_members, free_ports
from kvtui.live.delivery import Served
from kvtui.live.etcd_snapshot import BUCKETS, SESSION_BUCKETS, blocks_key, sessions_key
from kvtui.live.recording import read_recording
from differential.peers import require

from . import vllm_publishers as vp
from .route_support import Front, post

ROOT = Path(__file__).resolve().parents[2]
CLIENT = ROOT / "tests" / "differential" / "etcd_client.py"
TTL_S = 2
PREFIXES = 6
PREFIX = b"kvtui/t/"  # the etcd keys' prefix for the URL's /t (kvtui/live/etcd_url.py)
PREFIX_TOKENS = 3 * vp.BS  # three blocks shared, then a suffix of two of each request's own


def _prompt(i: int, variant: int) -> list[int]:
    prefix = [1000 * (i + 1) + t for t in range(PREFIX_TOKENS)]
    return prefix + [900_000 + 100 * variant + 10 * i + t for t in range(2 * vp.BS)]


def _kvtui(peer: Path, fronts, listen: int, etcd: list[int], replay: bool, log: Path, *more: str) -> subprocess.Popen:
    site = next((peer / "lib").glob("python*/site-packages"))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), str(site)])}
    engines = [f"--engine=vllm-{i}={f.pub.endpoint}" + (f",replay={f.pub.replay_endpoint}" if replay else "")
               + f",metrics={f.api}/metrics,api={f.api}" for i, f in enumerate(fronts)]
    return subprocess.Popen([sys.executable, "-m", "kvtui", "live", *engines, "--route", "cache_aware",
                             "--listen", f"127.0.0.1:{listen}", "--metadata", "etcd://" + ",".join(f"127.0.0.1:{p}" for p in etcd) + "/t",
                             "--lease-ttl", str(TTL_S), "--no-ui", "--duration", "300", *more],
                            stdout=log.open("w"), stderr=subprocess.STDOUT, env=env)


def _until_logged(log: Path, pattern: str, proc: subprocess.Popen, seconds: float = 60) -> re.Match:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if (m := re.search(pattern, log.read_text())) is not None:
            return m
        assert proc.poll() is None, log.read_text()
        time.sleep(0.05)
    pytest.fail(f"{pattern!r} not in {log}: {log.read_text()}")


def _served_by(fronts, url: str, tokens: list[int], user: str) -> tuple[str, int]:
    """Send `tokens` for session `user` through the proxy at `url`: (the engine that served it,
    its hit blocks)."""
    before = [len(f.hits) for f in fronts]
    post(url, {"model": "m", "prompt": " ".join(map(str, tokens)), "max_tokens": 2, "user": user})
    (i,) = [i for i, f in enumerate(fronts) if len(f.hits) > before[i]]
    return f"vllm-{i}", fronts[i].hits[-1]


def _first_answer(fronts, url: str, tokens: list[int], user: str, seconds: float = 60) -> tuple[str, int]:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            return _served_by(fronts, url, tokens, user)
        except (urllib.error.URLError, ConnectionError):  # not listening yet, or 503 while not routing
            time.sleep(0.02)
    pytest.fail(f"{url} did not route within {seconds} s")


def _until_in_etcd(peer: Path, port: int, keys: list[str], done, what: str, seconds: float = 60) -> None:
    """Wait until A's writes have reached etcd: `done` says so of the values under `keys`
    (unpacked, absent ones left out). (After a member is killed, the writes in flight wait for
    their RPC timeout, and for etcd's election when it was the leader, before the next member
    takes them.) A writes after its index has taken a batch, so what etcd has, A's index has."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        got = subprocess.run([str(peer / "bin" / "python"), str(CLIENT), "dump", str(port), *keys],
                             capture_output=True, text=True, timeout=30)
        values = json.loads(got.stdout).values() if got.returncode == 0 else []
        if done([msgpack.unpackb(bytes.fromhex(v), raw=False) for v in values if v]):
            return
        time.sleep(0.1)
    pytest.fail(f"{what} did not reach etcd in {seconds} s")


def _until_sessions_in_etcd(peer: Path, port: int, sessions: set[str]) -> None:
    keys = [sessions_key(PREFIX, b).decode() for b in range(SESSION_BUCKETS)]
    _until_in_etcd(peer, port, keys, lambda values: sessions <= {s for v in values for s in v}, "A's session routes")


def _until_blocks_in_etcd(peer: Path, port: int, fronts, at_least: int) -> None:
    """A has heard (and written) at least `at_least` blocks: the prefixes stored on the engines."""
    keys = [blocks_key(PREFIX, f"vllm-{e}", b).decode() for e in range(len(fronts)) for b in range(BUCKETS)]
    _until_in_etcd(peer, port, keys, lambda values: sum(map(len, values)) >= at_least, f"{at_least} blocks")


def _decisions(recording: Path, count: int, seconds: float = 30) -> dict[str, Served]:
    """B's routed requests by session, read from its recording once all `count` are in it (B's
    polling thread writes them; it stopped for good when the etcd link's callback deadlocked it)."""
    deadline = time.monotonic() + seconds
    while True:
        served = {d.session: d for d in read_recording(str(recording)) if isinstance(d, Served)}
        if len(served) >= count:
            return served
        if time.monotonic() > deadline:
            pytest.fail(f"B recorded {len(served)} of its {count} routed requests in {seconds} s: {sorted(served)}")
        time.sleep(0.1)


@pytest.mark.skipif(sys.platform != "linux", reason="etcd peers run on Linux")
@pytest.mark.parametrize("stop, members", [(signal.SIGKILL, 1), (signal.SIGINT, 1), (signal.SIGKILL, 3)],
                         ids=["killed", "interrupted", "killed-after-its-etcd-member"])
def test_a_standby_takes_over_routing_from_etcd_when_the_leader_stops(tmp_path, stop, members):
    """SIGKILL: the standby waits for the lease to expire. SIGINT (a clean exit): the leader
    writes what is left and gives the lease back, and the standby takes over at once. With
    three etcd members, the one both routers talk to first is killed halfway: the leader keeps
    its lease and goes on writing through the next member, and the standby's snapshot has the
    prefixes stored after that."""
    peer = require("etcd")
    v = vp.load_new()
    fronts = [Front(v), Front(v)]
    procs = []
    holders = {i: f"vllm-{i % 2}" for i in range(PREFIXES)}
    try:
        with etcd_members(members) as etcd:
            port_a, port_b = free_ports(2)
            a = _kvtui(peer, fronts, port_a, list(etcd), True, tmp_path / "a.log")
            procs.append(a)
            _until_logged(tmp_path / "a.log", r"routing \(lease", a)
            b = _kvtui(peer, fronts, port_b, list(etcd), False, tmp_path / "b.log", "--record", str(tmp_path / "b.rec"))
            procs.append(b)
            _until_logged(tmp_path / "b.log", r"standby: waiting for the routing lease", b)
            url_a, url_b = (f"http://127.0.0.1:{p}/v1/completions" for p in (port_a, port_b))
            seen_by_a = []
            for half in (range(PREFIXES // 2), range(PREFIXES // 2, PREFIXES)):
                for i in half:  # stored on the engines directly: A learns them from KV events
                    fronts[i % 2].serve(_prompt(i, 0))
                _until_blocks_in_etcd(peer, list(etcd)[-1], fronts, 3 * (half.stop))  # A has the stored events
                seen_by_a += [_first_answer(fronts, url_a, _prompt(i, 1), f"a-{i}") for i in half]
                if members > 1 and half.start == 0:
                    next(iter(etcd.values())).kill()
            assert [e for e, _ in seen_by_a] == [holders[i] for i in range(PREFIXES)], seen_by_a
            _until_sessions_in_etcd(peer, list(etcd)[-1], {f"a-{i}" for i in range(PREFIXES)})
            a.send_signal(stop)
            killed = time.monotonic()
            took_over = _first_answer(fronts, url_b, _prompt(0, 2), "b-0")
            takeover_s = time.monotonic() - killed
            seen_by_b = [took_over] + [_served_by(fronts, url_b, _prompt(i, 2), f"b-{i}") for i in range(1, PREFIXES)]
            # A's sessions, with prompts no engine holds: only their routes say where they go
            sessions_by_b = [_served_by(fronts, url_b, _prompt(100 + i, 3), f"a-{i}")[0] for i in range(PREFIXES)]
            restored = _until_logged(tmp_path / "b.log", r"routing \(lease \w+\); from \S+: (\d+) blocks", b)
            decided = _decisions(tmp_path / "b.rec", 2 * PREFIXES)
    finally:
        for p in procs:
            p.kill()
            p.wait(timeout=10)
        for f in fronts:
            f.close()
    print(f"takeover: {takeover_s:.3f} s after {stop.name} ({members} etcd members, lease TTL {TTL_S} s); "
          f"B restored {restored[1]} blocks")
    assert int(restored[1]) > 0
    shared = PREFIX_TOKENS // vp.BS
    for i in range(PREFIXES):
        # B's index is A's: it credits the holder with the prefix, and no other engine
        s = decided[f"b-{i}"]
        assert {name: promised for name, _, promised, _ in s.candidates} == \
               {h: shared if h == holders[i] else 0 for h in ("vllm-0", "vllm-1")}, s
        # and B keeps A's sessions where A put them
        assert decided[f"a-{i}"].reason.startswith(f"session affinity: a-{i} lives on {holders[i]}"), decided[f"a-{i}"]
    # so (with every engine eligible: a /metrics scrape that timed out under load makes one
    # ineligible for a moment) every prefix went to the engine holding it, which hit it
    for i, (engine, hit) in enumerate(seen_by_b):
        if all(eligible for *_, eligible in decided[f"b-{i}"].candidates):
            assert engine == holders[i] and hit >= shared, seen_by_b
    for i, engine in enumerate(sessions_by_b):
        if all(eligible for *_, eligible in decided[f"a-{i}"].candidates):
            assert engine == holders[i], sessions_by_b
