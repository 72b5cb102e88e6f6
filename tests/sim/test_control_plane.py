"""The engine's control plane on the WAL store: crash, recover, and carry on correctly."""

from __future__ import annotations

from pathlib import Path

import pytest
from kv_replay import KVReplay

from kvtui.events import ControlPlaneCrashed, ControlPlaneRecovered, RequestRejected
from kvtui.scenario import load_scenario
from kvtui.sim.engine import Simulation

SCENARIOS = Path(__file__).resolve().parents[2] / "scenarios"


def run_collecting(scenario, seed=None):
    sim = Simulation(scenario, seed=seed)
    seen = []
    sim.subscribe(seen.append, (ControlPlaneCrashed, ControlPlaneRecovered, RequestRejected))
    checks = []
    replay = KVReplay(sim)

    def index_matches_pools(ev):
        for node in sim.nodes:
            checks.append(replay.indexed(node.name) == sim.router.index.keys_on(node.name))
            checks.append(replay.pool_matches(node))

    sim.subscribe(index_matches_pools, (ControlPlaneRecovered,))
    sim.run()
    return sim, seen, checks


@pytest.mark.parametrize("seed", [1, 2, 3, 4])
def test_recovered_digest_equals_digest_before_crash(seed):
    sim, seen, checks = run_collecting(load_scenario(SCENARIOS / "crash-recovery.yaml"), seed)
    try:
        recovered = [e for e in seen if isinstance(e, ControlPlaneRecovered)]
        assert len(recovered) == 2
        for ev in recovered:
            assert ev.digest_before == ev.digest_after
            assert ev.records > 0 and ev.downtime > 0
        assert all(checks), "the rebuilt KV index disagrees with the nodes' pools"
        m = sim.metrics
        assert m.arrived == m.completed + m.rejected + m.failed + sim.in_flight()
        assert sim.control_plane.counters()["recoveries"] == 2
    finally:
        sim.close()


def test_pressure_demo_recovers_with_matching_digests():
    sim, seen, checks = run_collecting(load_scenario(SCENARIOS / "pressure.yaml"))
    try:
        recovered = [e for e in seen if isinstance(e, ControlPlaneRecovered)]
        assert len(recovered) == 1 and recovered[0].digest_before == recovered[0].digest_after
        assert all(checks)
    finally:
        sim.close()


def test_requests_wait_while_the_control_plane_recovers():
    s = load_scenario(SCENARIOS / "crash-recovery.yaml")
    sim = Simulation(s)
    held = []

    def watch(ev):
        if isinstance(ev, ControlPlaneRecovered):
            held.append(ev)

    sim.subscribe(watch, (ControlPlaneRecovered,))
    sim.run_until(20.0 + 1e-9)
    assert sim.control_plane.down
    sim.run_until(20.0 + 0.2)
    waiting = len(sim.router.held)
    sim.run()
    sim.close()
    assert waiting > 0  # arrivals during the downtime were held, then routed
    assert sim.metrics.rejected == 0


def test_while_down_reject_rejects_with_the_reason():
    s = load_scenario(SCENARIOS / "crash-recovery.yaml", ["metadata.while_down=reject"])
    sim, seen, _ = run_collecting(s)
    sim.close()
    reasons = [e.reason for e in seen if isinstance(e, RequestRejected)]
    assert reasons and all("control plane is recovering" in r for r in reasons)


def test_log_on_disk_verifies_after_a_run(tmp_path):
    from kvtui.cli.wal import main as wal_main

    s = load_scenario(SCENARIOS / "crash-recovery.yaml", [f"metadata.dir={tmp_path / 'wal'}"])
    sim = Simulation(s)
    sim.run()
    sim.close()
    assert wal_main(["verify", str(tmp_path / "wal")]) == 0


def test_crash_without_a_store_is_refused():
    sim = Simulation(load_scenario(SCENARIOS / "seed-table" / "no-cache.yaml"))
    assert sim.crash_control_plane() is False
