"""The replicated control plane inside a run: one store stays today's store bit for bit, a
leader kill costs an election within the timeout's band, a cut member's terms with and without
PreVote, stale serializable reads only from a cut member, determinism, and stepping back."""

from __future__ import annotations

import hashlib
from dataclasses import replace
from pathlib import Path

import pytest

from raft_support import scenario

from kvtui.events import (
    MetadataCommitted,
    MetadataElection,
    MetadataHealed,
    MetadataLeaderElected,
    MetadataMemberDown,
    MetadataPartitioned,
    MetadataStaleRead,
    MetadataStepDown,
    MetadataTermChanged,
    RequestArrived,
)
from kvtui.run.drive import Drive, digest
from kvtui.run.journal import Journal
from kvtui.scenario import load_scenario
from kvtui.scenario.model import Replication
from kvtui.sim.engine import Simulation

ROOT = Path(__file__).resolve().parents[3]


def run(scn):
    sim = Simulation(scn)
    seen = []
    sim.subscribe(seen.append)
    try:
        sim.run()
        return sim, seen, sim.control_plane.report() if hasattr(sim.control_plane, "report") else None
    finally:
        sim.close()


def _digest(events) -> str:
    h = hashlib.sha256()
    for ev in events:
        h.update(repr(ev).encode())
    return h.hexdigest()


STORES = sorted(p.name for p in (ROOT / "scenarios").glob("*.yaml")
                if "\nmetadata:" in p.read_text() and "replication:" not in p.read_text())


def test_the_shipped_stores_are_covered():
    assert "crash-recovery.yaml" in STORES and "pressure.yaml" in STORES


@pytest.mark.parametrize("name", STORES)
def test_one_member_is_todays_store_event_for_event(name):
    """Every shipped scenario with a store (a `metadata:` section) gives the same events with
    `replication: {members: 1}`."""
    plain_scn = load_scenario(ROOT / "scenarios" / name)
    one_scn = replace(plain_scn, metadata=replace(plain_scn.metadata, replication=Replication(members=1)))
    _, plain, _ = run(plain_scn)
    _, one, _ = run(one_scn)
    assert _digest(plain) == _digest(one)


def test_a_leader_kill_costs_one_election_within_the_timeout_band(tmp_path):
    scn = scenario(tmp_path, "{members: 3}", "  - {at: 5, action: metadata_leader_down, duration_s: 6}\n")
    sim, seen, rep = run(scn)
    elected = [ev for ev in seen if isinstance(ev, MetadataLeaderElected)]
    assert len(elected) == 1 and elected[0].term == 2
    lo, hi = 1.0, 2.0  # etcd's defaults
    # a follower times out lo..hi after the last heartbeat it heard (<= 100 ms before the kill)
    assert lo - 0.1 <= elected[0].without_leader_s <= hi + 0.05
    # writes stop from the kill to the new leader's first commit
    gap = next(ev.t for ev in seen if isinstance(ev, MetadataCommitted) and ev.t > 5) - 5
    assert lo - 0.1 <= gap <= hi + 0.05
    assert rep["committed_entries_lost"] == 0 and rep["applied_digests_equal"] is True
    assert rep["requests_delayed"] > 0  # leader reads: the router held requests without a leader
    assert len(set(rep["leaders"])) == len(rep["leaders"])


def _partitioned(tmp_path, pre_vote: bool, reads: str = "leader"):
    scn = scenario(tmp_path, f"{{members: 3, pre_vote: {str(pre_vote).lower()}, router_reads: {reads}}}",
                   "  - {at: 4, action: metadata_partition, members: [m3], duration_s: 8}\n", duration=20,
                   name=f"p{pre_vote}{reads}.yaml")
    return run(scn)


def test_a_cut_member_without_pre_vote_raises_its_term_and_deposes_the_leader(tmp_path):
    _, seen, rep = _partitioned(tmp_path, pre_vote=False)
    cut_terms = [ev.new_term for ev in seen if isinstance(ev, MetadataTermChanged) and ev.member == "m3" and 4 < ev.t < 12]
    assert len(cut_terms) >= 3  # it kept campaigning alone
    healed = next(ev.t for ev in seen if isinstance(ev, MetadataHealed))
    assert any(isinstance(ev, MetadataStepDown) and ev.member == "m1" and ev.t >= healed for ev in seen)
    assert rep["terms"] > max(cut_terms) >= 4
    assert rep["committed_entries_lost"] == 0 and rep["applied_digests_equal"] is True


def test_with_pre_vote_the_cut_member_keeps_its_term_and_the_leader_stays(tmp_path):
    _, seen, rep = _partitioned(tmp_path, pre_vote=True)
    assert not any(isinstance(ev, MetadataTermChanged) for ev in seen)
    assert not any(isinstance(ev, (MetadataStepDown, MetadataLeaderElected)) for ev in seen)
    assert rep["terms"] == 1 and rep["leaders"] == {"1": "m1"}


def test_stale_serializable_reads_come_from_the_cut_member_and_leader_reads_are_never_stale(tmp_path):
    _, seen, rep = _partitioned(tmp_path, pre_vote=True, reads="follower_serializable")
    cut = next(ev for ev in seen if isinstance(ev, MetadataPartitioned))
    stale = [ev for ev in seen if isinstance(ev, MetadataStaleRead)]
    during = [ev.behind for ev in stale if cut.t <= ev.t < cut.t + cut.duration_s]
    outside = [ev.behind for ev in stale if not cut.t <= ev.t < cut.t + cut.duration_s + 0.2]
    assert during and max(during) > 20 * max(outside, default=1)  # the cut member falls far behind
    assert rep["stale_reads"] == len(stale) and rep["requests_delayed"] == 0
    _, seen, rep = _partitioned(tmp_path, pre_vote=True, reads="leader")
    assert rep["stale_reads"] == 0 and not any(isinstance(ev, MetadataStaleRead) for ev in seen)


def test_same_seed_same_events_and_the_workload_stream_is_untouched(tmp_path):
    events = "  - {at: 3, action: metadata_leader_down, duration_s: 2}\n"
    a = run(scenario(tmp_path, "{members: 3}", events, duration=8, name="a.yaml"))[1]
    b = run(scenario(tmp_path, "{members: 3}", events, duration=8, name="b.yaml"))[1]
    assert _digest(a) == _digest(b)
    one = run(scenario(tmp_path, "{members: 1}", duration=8, name="c.yaml"))[1]

    def arrivals(evs):
        return [(e.request, e.session, e.prompt_tokens, e.output_tokens) for e in evs if isinstance(e, RequestArrived)]

    assert arrivals(a)[:20] == arrivals(one)[:20]  # same prompts in the same order (arrival times move with holds)


def _to_the_end(d: Drive) -> None:
    while d.step() is not None:
        pass


@pytest.mark.parametrize("loop", ["simpy", "kvtui"])
def test_stepping_back_replays_the_group_exactly(tmp_path, monkeypatch, loop):
    """Back over the leader kill (event 154 of 498), the election (170) and the old leader's
    restart (311), from checkpoints and from a fresh run, then forward to the end: the same events
    and the same members' terms, roles, logs and commits as a run never stepped back. (It once
    "hung": the test stepped to position 900 of a run that ends at 498, and a step at the end
    returns None without moving.)"""
    monkeypatch.setenv("KVTUI_LOOP", loop)
    scn = scenario(tmp_path, "{members: 3}", "  - {at: 2, action: metadata_leader_down, duration_s: 2}\n", duration=6)
    straight = Drive(scn)
    _to_the_end(straight)
    end = straight.position
    kill = next(e.seq for e in straight.journal.log if isinstance(e, MetadataMemberDown))
    d = Drive(scn, every=100)
    for _ in range(end - 20):
        d.step()
    d.maintain(60.0)
    for _ in range(60):  # one event at a time, from the ladder of near checkpoints
        d.back()
    assert d.position == end - 80
    d.goto(kill - 5)  # a long jump back, before the kill, then forward over all of it
    assert d.position == kill - 5 and d.sim.control_plane.group.leader().name == "m1"
    _to_the_end(d)
    assert d.position == end and d.run.last == straight.run.last
    assert digest(list(d.journal.log)) == digest(list(straight.journal.log))
    ga, gb = d.sim.control_plane.group, straight.sim.control_plane.group
    assert [(m.term, m.role, m.log.last_index, m.commit) for m in ga.members.values()] == \
           [(m.term, m.role, m.log.last_index, m.commit) for m in gb.members.values()]
    straight.close()
    d.close()


def test_the_crash_key_kills_the_leader_and_the_headline_follows(tmp_path):
    d = Drive(scenario(tmp_path, "{members: 3}", duration=6))
    for _ in range(200):
        d.step()
    assert "metadata m1 leads term 1 (3/3 up)" in d.routing_headline()
    ev = d.command("crash")
    assert ev.kind == "member_down" and ev.member == "m1" and ev.was_leader
    assert "metadata no leader, term 1 (2/3 up, router cannot read)" in d.routing_headline()
    while not any(isinstance(e, MetadataLeaderElected) for e in d.journal.log) and not d.ended:
        d.step()
    # elected, but reads wait until it commits an entry of its own term (Raft paper §8)
    assert "leads term 2 (2/3 up, router cannot read)" in d.routing_headline()
    while not isinstance(ev := d.step(), MetadataCommitted):
        pass
    assert ev.term == 2 and d.routing_headline().endswith("metadata m2 leads term 2 (2/3 up)")
    d.close()


def test_the_last_election_outlives_the_bounded_event_log():
    """J goes back to the last election even when later lines (evictions, say) have pushed it out
    of the journal's bounded log: the journal keeps it apart; a PreVote round is not an election."""
    journal = Journal(keep_log=2)

    def election(seq: int, pre_vote: bool) -> MetadataElection:
        return MetadataElection(seq=seq, t=float(seq), member="m2", term=2, pre_vote=pre_vote, timeout_s=1.2,
                                lo_s=1.0, hi_s=2.0, last_term=1, last_index=40)

    for ev in [election(1, False), election(2, True), election(3, True), election(4, True)]:
        journal.on_event(ev)
    assert [e.seq for e in journal.log] == [3, 4]
    assert journal.last_election is not None and journal.last_election.seq == 1
