"""Raft's safety properties after every step of random fault schedules (members killed and
restarted, leaders killed, partitions of random sides), with and without PreVote, and its
liveness once the faults are over. Size: `KVTUI_RAFT_SCALE` (raft_support.py)."""

from __future__ import annotations

import pytest
from raft_support import SCALE, Harness

from kvtui.sim.raft.invariants import violations

SCHEDULES = {3: 8 * SCALE, 5: 3 * SCALE}


@pytest.mark.parametrize("pre_vote", [False, True])
@pytest.mark.parametrize("members", [3, 5])
def test_safety_after_every_step(members, pre_vote):
    steps = 0
    for seed in range(SCHEDULES[members]):
        h = Harness(seed * 31 + members + pre_vote, members, pre_vote, sim_s=12.0)
        while h.step():
            steps += 1
            found = violations(h.group)
            assert not found, (seed, h.env.now, found)
        _assert_live(h, seed)
    assert steps > 1000 * SCHEDULES[members]  # the schedules did run (a guard against an empty loop)


def _assert_live(h: Harness, seed: int) -> None:
    """After the faults (the last 30 % of the run): one leader, everything acknowledged is
    committed, and every member applied the same entries."""
    g = h.group
    leader = g.leader()
    assert leader is not None, seed
    committed = {serial for _term, serial in g.committed_log}
    assert set(h.acked) <= committed, seed  # no acknowledged write lost
    for serials in h.applied_serials.values():  # each member applies a serial once, in order
        assert serials == sorted(set(serials)), seed
    applied = [len(g.applied_ids[n]) for n in h.names]
    assert max(applied) >= len(g.committed_log) - 1, seed
    assert h.acked, seed


def test_the_checks_catch_a_broken_log():
    """The invariants are not vacuous: two members that disagree under the same term fail."""
    h = Harness(1, 3, False, sim_s=2.0)
    while h.step():
        pass
    from kvtui.sim.raft.log import Entry

    m1, m2 = h.group.members["m1"], h.group.members["m2"]
    last = m1.log.last_index
    m2.log.truncate(last - 3)
    m2.log.entries.extend([Entry(m1.log.entry(last - 2).term, 10**9, None)] + list(m1.log.entries[last - 2:]))
    assert any(v.startswith("log matching") for v in violations(h.group))


def _settled() -> Harness:
    h = Harness(1, 3, False, sim_s=2.0)
    while h.step():
        pass
    assert not violations(h.group)
    return h


def test_the_checks_catch_two_leaders_in_one_term():
    h = _settled()
    leader = h.group.leader()
    other = next(m for m in h.group.members.values() if m is not leader)
    other.role, other.term = "leader", leader.term
    assert any(v.startswith("election safety") for v in violations(h.group))


def test_the_checks_catch_a_leader_missing_a_committed_entry():
    h = _settled()
    leader = h.group.leader()
    leader.term += 1  # as if elected after the commits
    leader.log.truncate(leader.log.last_index - 2)
    assert any(v.startswith("leader completeness") for v in violations(h.group))


def test_the_checks_catch_members_that_applied_different_entries():
    h = _settled()
    ids = h.group.applied_ids["m2"]
    ids[-1] = (ids[-1][0], 10**9)
    assert any(v.startswith("state-machine safety") for v in violations(h.group))
