"""The Raft model against a real etcd cluster: a leader killed with SIGKILL (issue 34's probe).

Three etcd members (`.ci/peers/etcd.sh`: Debian's etcd-server 3.4.23; aetcd in the peer's own
venv, driven through tests/differential/etcd_client.py) run on 127.0.0.1 with temporary data
dirs, heartbeat 100 ms and election timeout 1000 ms, etcd's defaults. A client writes a key
every ~10 ms through a follower; the leader is SIGKILLed. The simulation runs the same fault
on a group with the same timings (heartbeat_ms 100, election_timeout_ms [1000, 2000], etcd's
draw). The same observable facts must hold in both: one leader per term, no acknowledged
write lost, and writes stop for a time within the same band relative to the election timeout.

A member cut then healed, with and without --pre-vote (`test_a_member_cut_then_healed_like_the_model`):
each member is advertised at an HTTP-aware proxy (tests/differential/peer_cut_proxy.py) that tells
each peer connection's sender from etcd's `X-Server-From` header and cuts one follower both ways.
The same facts on the simulated group (tests/sim/raft/test_replicated_control_plane.py shows more):
stale serializable reads served only by the cut member (etcd refuses a linearizable read there: it
times out; the model's router reading the leader never reads stale); without PreVote the cut
member's term climbs and deposes the leader on healing (who may win again), with PreVote no term
moves. The terms are compared as behaviour, not counted: etcd's member stays cut ~3 s longer than
CUT_S (the two reads wait on it first) and climbed 2 -> 8..10, the model's 1 -> 4 in 6 s.
"""

from __future__ import annotations

import json
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path

import pytest

from kvtui.events import (
    MetadataCommitted,
    MetadataHealed,
    MetadataLeaderElected,
    MetadataPartitioned,
    MetadataStaleRead,
    MetadataStepDown,
    MetadataTermChanged,
)
from kvtui.scenario import load_scenario
from kvtui.sim.engine import Simulation
from tests.differential.etcd_support import etcd_members
from tests.differential.peer_cut_proxy import Cut, PeerProxy
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


@contextmanager
def _cluster(pre_vote: bool = False):
    """Three members on loopback, each advertised at its `PeerProxy` (a `Cut` decides who talks),
    yielding (peer venv, client ports, {client port: process}, cut, {client port: proxy}); each
    member's log is `<its process>.log_path`."""
    peer = require("etcd")
    cut = Cut()
    proxies: dict[int, PeerProxy] = {}

    def proxied(client: int, front: int, peer_port: int) -> None:
        proxies[client] = PeerProxy(cut, front, peer_port)

    try:
        with etcd_members(3, int(ELECTION_S * 1000), pre_vote, proxied) as procs:
            yield peer, list(procs), procs, cut, proxies
    finally:
        for proxy in proxies.values():
            proxy.close()


@pytest.fixture
def cluster():
    with _cluster() as (peer, clients, procs, _cut, _proxies):
        yield peer, clients, procs


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


CUT_S = 6.0  # the cut lasts several election timeouts: a member without PreVote campaigns 3-6 times

SIM_CUT = SIM.replace("name: etcd-leader-kill", "name: etcd-cut").replace(
    "  - {at: 4, action: metadata_leader_down}", f"  - {{at: 4, action: metadata_partition, members: [m3], duration_s: {CUT_S:g}}}"
).replace("duration_s: 10", "duration_s: 16").replace("link_latency_ms: 0.1}", "link_latency_ms: 0.1, pre_vote: PRE, router_reads: READS}")


def _simulated_cut(pre_vote: bool, reads: str) -> tuple[list, dict]:
    path = Path(tempfile.mkdtemp(prefix="kvtui-etcd-sim-")) / "s.yaml"
    path.write_text(SIM_CUT.replace("PRE", str(pre_vote).lower()).replace("READS", reads))
    sim = Simulation(load_scenario(path))
    seen = []
    sim.subscribe(seen.append)
    try:
        sim.run()
        return seen, sim.control_plane.report()
    finally:
        sim.close()
        shutil.rmtree(path.parent, ignore_errors=True)


def _simulated_cut_facts(pre_vote: bool) -> dict:
    """The facts the etcd side is asserted on, read off the simulated group (m3 cut at 4 s)."""
    seen, rep = _simulated_cut(pre_vote, "follower_serializable")
    cut = next(ev for ev in seen if isinstance(ev, MetadataPartitioned))
    healed = next(ev.t for ev in seen if isinstance(ev, MetadataHealed))
    stale = [ev for ev in seen if isinstance(ev, MetadataStaleRead) and cut.t <= ev.t < healed]
    cut_terms = [ev.new_term for ev in seen if isinstance(ev, MetadataTermChanged) and ev.member == "m3" and ev.t < healed]
    led, _ = _simulated_cut(pre_vote, "leader")
    return {"term0": 1, "cut_term": max(cut_terms, default=1), "final_term": rep["terms"],
            "stale_from": {ev.member for ev in stale}, "max_behind": max((ev.behind for ev in stale), default=0),
            "deposed": any(isinstance(ev, MetadataStepDown) and ev.t >= healed for ev in seen),
            "leader_reads_stale": sum(isinstance(ev, MetadataStaleRead) for ev in led),
            "lost": rep["committed_entries_lost"], "digests_equal": rep["applied_digests_equal"]}


def _etcd_cut_facts(pre_vote: bool) -> dict:
    """The same facts on three real members, a follower cut by the proxies for CUT_S, then healed."""
    with _cluster(pre_vote) as (peer, ports, procs, cut, proxies):
        st = _settled(peer, ports)
        for port, s in st.items():
            proxies[int(port)].member = format(s["member"], "x")
        leader_id, term0 = next(iter(st.values()))["leader"], next(iter(st.values()))["term"]
        leader = next(int(p) for p, s in st.items() if s["member"] == leader_id)
        victim = next(p for p in ports if p != leader)
        assert _client(peer, "put", leader, "k", "before") == {"ok": True}
        _until(lambda: _client(peer, "get", victim, "k", "serializable").get("value") == "before")
        cut.set({proxies[victim].member})
        assert _client(peer, "put", leader, "k", "after") == {"ok": True}  # the majority still commits
        stale = _client(peer, "get", victim, "k", "serializable")
        linear = _client(peer, "get", victim, "k", "linearizable")
        time.sleep(CUT_S)
        cut_term = _highest_term(procs[victim].log_path.read_text(errors="replace"))
        cut.set(set())
        after = _settled(peer, ports)
        _until(lambda: _client(peer, "get", victim, "k", "serializable").get("value") == "after")
        (leader1, final_term), = {(s["leader"], s["term"]) for s in after.values()}
        return {"term0": term0, "cut_term": cut_term, "final_term": final_term, "stale": stale, "linear": linear,
                "leader_kept": leader1 == leader_id, "refused": cut.refused}


def _highest_term(log: str) -> int:
    """The highest term a member's raft log lines name ("became candidate at term 5", "became
    pre-candidate at term 2"): Status reports the term of the last applied entry, which a cut member,
    applying nothing, does not move."""
    return max(int(t) for t in re.findall(r"at term (\d+)", log))


def _until(ok, deadline_s: float = 15.0) -> None:
    end = time.monotonic() + deadline_s
    while not ok():
        assert time.monotonic() < end, "timed out"
        time.sleep(0.2)


@pytest.mark.slow
@pytest.mark.skipif(sys.platform != "linux", reason="etcd peers run on Linux")
@pytest.mark.parametrize("pre_vote", [False, True], ids=["no-pre-vote", "pre-vote"])
def test_a_member_cut_then_healed_like_the_model(pre_vote):
    real = _etcd_cut_facts(pre_vote)
    sim = _simulated_cut_facts(pre_vote)
    print(f"pre_vote={pre_vote}: etcd {real}; simulation {sim}")
    # a stale serializable read on the cut member, a linearizable read refused there
    assert real["stale"] == {"value": "before"} and "error" in real["linear"] and real["refused"] > 0
    assert sim["stale_from"] == {"m3"} and sim["max_behind"] > 0 and sim["leader_reads_stale"] == 0
    assert sim["lost"] == 0 and sim["digests_equal"] is True
    for side in (real, sim):
        if pre_vote:  # PreVote: the cut member never raises its term; healing changes nothing
            assert side["cut_term"] == side["final_term"] == side["term0"], side
        else:  # it campaigns alone, term after term; on healing its term deposes the leader
            assert side["cut_term"] >= side["term0"] + 2 and side["final_term"] > side["cut_term"], side
    # deposed on healing: a new election (the old leader may win it again); with PreVote it leads on
    assert sim["deposed"] is not pre_vote and (real["leader_kept"] or not pre_vote)
