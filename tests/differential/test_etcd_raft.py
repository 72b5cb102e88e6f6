"""The Raft model against a real etcd cluster: a leader killed with SIGKILL (issue 34's probe).

Three etcd members (`.ci/peers/etcd.sh`: Debian's etcd-server 3.4.23; aetcd in the peer's own
venv, driven through tests/differential/etcd_client.py) run on 127.0.0.1 with temporary data
dirs, heartbeat 100 ms and election timeout 1000 ms, etcd's defaults. A client writes a key
every ~10 ms through a follower; the leader is SIGKILLed. The simulation runs the same fault
on a group with the same timings (heartbeat_ms 100, election_timeout_ms [1000, 2000], etcd's
draw). The same observable facts must hold in both: one leader per term, no acknowledged
write lost, and writes stop for a time within the same band relative to the election timeout.

Not here (left, issue 34): the cut member behind a TCP proxy on the peer URLs (stale
serializable reads, refused linearizable ones, terms with and without --pre-vote). A proxy must
tell each connection's sender to cut one member both ways: etcd 3.4's streams name the dialer
in their path (/raft/stream/{message,msgapp}/<id>), but a first try also saw connections it
could not attribute (most likely pipeline posts) carry the cut member's higher term across, and
the majority's own streams re-dialing every 100 ms; it was left out rather than shipped flaky.
The simulated side of those facts is tests/sim/raft/test_replicated_control_plane.py.
"""

from __future__ import annotations

import json
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from kvtui.events import MetadataCommitted, MetadataLeaderElected
from kvtui.scenario import load_scenario
from kvtui.sim.engine import Simulation
from tests.differential.etcd_support import etcd_members
from tests.differential.peers import require

CLIENT = Path(__file__).with_name("etcd_client.py")
ELECTION_S = 1.0
BAND = (0.8, 3.5)  # unavailability / election timeout, for both (the probe measured ~2.0 s)

SIM = """
name: etcd-leader-kill
seed: 11
model: llama-3.1-8b
latency: {model: roofline}
router: {policy: load_prefix}
cluster:
  hardware: h100-80gb
  nodes: [{name: node-a, kv_blocks: 128, max_num_seqs: 8}]
workload:
  duration_s: 10
  arrival: {process: poisson, rate: 20}
  groups: [{name: g, system_prompt_tokens: 64, question_tokens: 32, output_tokens: 8}]
events:
  - {at: 4, action: metadata_leader_down}
metadata:
  replication: {members: 3, heartbeat_ms: 100, election_timeout_ms: [1000, 2000], link_latency_ms: 0.1}
"""


def _client(peer: Path, *args, timeout: float = 60) -> dict:
    p = subprocess.run([str(peer / "bin" / "python"), str(CLIENT), *map(str, args)],
                       capture_output=True, text=True, timeout=timeout)
    assert p.returncode == 0, p.stderr[-2000:]
    return json.loads(p.stdout)


@pytest.fixture
def cluster():
    peer = require("etcd")
    with etcd_members(3, int(ELECTION_S * 1000)) as procs:
        yield peer, list(procs), procs


def _settled(peer: Path, ports: list[int], deadline_s: float = 30.0) -> dict:
    """Status of `ports` once they all name the same leader."""
    end = time.monotonic() + deadline_s
    while time.monotonic() < end:
        st = _client(peer, "status", *ports)
        leaders = {(s["leader"], s["term"]) for s in st.values() if s}
        if all(st.values()) and len(leaders) == 1 and next(iter(leaders))[0]:
            return st
        time.sleep(0.2)
    pytest.fail(f"no settled leader among {ports}: {st}")


def _gap(acks: list) -> float:
    return max(b[2] - a[2] for a, b in zip(acks, acks[1:]))


def _simulated_gap() -> tuple[float, list]:
    path = Path(tempfile.mkdtemp(prefix="kvtui-etcd-sim-")) / "s.yaml"
    path.write_text(SIM)
    sim = Simulation(load_scenario(path))
    seen = []
    sim.subscribe(seen.append, (MetadataCommitted, MetadataLeaderElected))
    try:
        sim.run()
        rep = sim.control_plane.report()
    finally:
        sim.close()
        shutil.rmtree(path.parent, ignore_errors=True)
    before = max(ev.t for ev in seen if isinstance(ev, MetadataCommitted) and ev.t <= 4)
    after = min(ev.t for ev in seen if isinstance(ev, MetadataCommitted) and ev.t > 4)
    assert rep["committed_entries_lost"] == 0 and rep["applied_digests_equal"]
    return after - before, [ev for ev in seen if isinstance(ev, MetadataLeaderElected)]


@pytest.mark.skipif(sys.platform != "linux", reason="etcd peers run on Linux")
def test_a_leader_killed_with_sigkill_like_the_model(cluster):
    peer, ports, procs = cluster
    before = _settled(peer, ports)
    leader_id = next(iter(before.values()))["leader"]
    term0 = next(iter(before.values()))["term"]
    leader_port = next(int(p) for p, s in before.items() if s["member"] == leader_id)
    writer_port = next(p for p in ports if p != leader_port)
    writer = subprocess.Popen([str(peer / "bin" / "python"), str(CLIENT), "write", str(writer_port), "8"],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        time.sleep(3.0)
        procs[leader_port].send_signal(signal.SIGKILL)
        out, err = writer.communicate(timeout=60)
    finally:
        writer.kill()
    assert writer.returncode == 0, err[-2000:]
    acks = json.loads(out)["acks"]
    survivors = [p for p in ports if p != leader_port]
    after = _settled(peer, survivors)
    # one leader per term: the survivors agree on one new leader, in a later term
    (new_leader, term1), = {(s["leader"], s["term"]) for s in after.values()}
    assert new_leader != leader_id and term1 > term0
    # no acknowledged write lost: a linearizable read finds every acknowledged key
    assert _client(peer, "read", survivors[0], *[k for k, _s, _a in acks])["missing"] == []
    real_gap = _gap(acks)
    sim_gap, elected = _simulated_gap()
    print(f"writes stopped: etcd {real_gap:.3f} s, simulation {sim_gap:.3f} s (election timeout {ELECTION_S:g} s)")
    assert len(elected) == 1 and elected[0].term == 2  # the model: one election, one new leader
    for name, gap in (("etcd", real_gap), ("simulation", sim_gap)):
        assert BAND[0] <= gap / ELECTION_S <= BAND[1], (name, gap, real_gap, sim_gap)
