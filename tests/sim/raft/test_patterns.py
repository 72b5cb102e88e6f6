"""The three control-plane patterns on one scenario (scenarios/control-plane-patterns.yaml: a
leader kill at 8 s, m3 cut off 18-24 s), as the story teaches them: A holds requests while no
leader can serve reads and loses nothing; B never holds a request but routes on a stale member;
C holds fewer (its leader answers on a lease) and loses the KV events published without a leader.
Every pattern keeps Raft's guarantees: no committed entry lost, the members' states agree."""

from __future__ import annotations

from pathlib import Path

import pytest

from kvtui.scenario import load_scenario
from kvtui.scenario.patterns import PATTERNS, pattern_of, with_pattern
from kvtui.sim.engine import Simulation

ROOT = Path(__file__).resolve().parents[3]
STORY = ROOT / "scenarios" / "control-plane-patterns.yaml"


def _report(pattern: str) -> tuple[dict, list[float]]:
    sim = Simulation(with_pattern(load_scenario(str(STORY), []), pattern))
    try:
        sim.run()
        return sim.control_plane.report(), sorted(sim.metrics.ttft)
    finally:
        sim.close()


@pytest.fixture(scope="module")
def reports():
    return {p: _report(p) for p in PATTERNS}


def test_every_pattern_keeps_raft_s_guarantees_under_the_same_faults(reports):
    elections = {p: r["elections"] for p, (r, _) in reports.items()}
    assert len(set(elections.values())) == 1 and elections["A"] >= 2  # the same group, the same faults
    for r, _ in reports.values():
        assert r["committed_entries_lost"] == 0 and r["applied_digests_equal"] is True


def test_a_holds_requests_and_loses_nothing(reports):
    a, _ = reports["A"]
    assert a["requests_delayed"] > 0 and a["stale_reads"] == 0 and a["kv_events_lost"] == 0
    assert a["kv_events_held"] > 0  # published while no leader took them, re-sent to the new one


def test_b_never_holds_a_request_but_reads_stale_and_its_tail_is_the_shortest(reports):
    b, ttft_b = reports["B"]
    assert b["requests_delayed"] == 0 and b["kv_events_lost"] == 0
    assert b["stale_reads"] > 0 and b["stale_read_prefix_tokens"] > 0
    p95 = {p: t[int(0.95 * len(t))] for p, (_, t) in reports.items()}
    assert p95["B"] < p95["C"] < p95["A"]


def test_c_loses_the_events_published_without_a_leader(reports):
    c, _ = reports["C"]
    a, _ = reports["A"]
    assert c["kv_events_lost"] > 0 and c["kv_events_held"] == 0 and c["stale_reads"] == 0
    assert 0 < c["requests_delayed"] < a["requests_delayed"]  # the lease serves reads a quorum round would hold


def test_patterns_overlay_only_a_raft_group():
    story = load_scenario(str(STORY), [])
    assert pattern_of(story) == "A"
    assert [pattern_of(with_pattern(story, p)) for p in PATTERNS] == list(PATTERNS)
    with pytest.raises(ValueError, match="unknown pattern 'D'"):
        with_pattern(story, "D")
    with pytest.raises(ValueError, match="members: 2 or more"):
        with_pattern(load_scenario(str(ROOT / "scenarios" / "crash-recovery.yaml"), []), "B")
