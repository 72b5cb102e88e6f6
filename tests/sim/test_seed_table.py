"""The seed project's latency table, reproduced exactly with the linear model."""

from __future__ import annotations

from pathlib import Path

import pytest

from kvtui.cli import run_once
from kvtui.scenario import load_scenario

SCENARIOS = Path(__file__).resolve().parents[2] / "scenarios"

# file -> (avg e2e ms, p95 e2e ms, request hit rate, rejection rate)
SEED_TABLE = {
    "no-cache.yaml": (1405.0, 1405.0, 0.0, 0.0),
    "exact-cache.yaml": (205.0, 205.0, 1.0, 0.0),
    "prefix-reuse.yaml": (980.0, 1405.0, 0.5, 0.0),
    "gpu-aware.yaml": (1405.0, 1405.0, 0.0, 0.25),
    "gpu-aware-eviction.yaml": (2105.0, 4205.0, 0.0, 0.0),
}


@pytest.mark.parametrize("name", sorted(SEED_TABLE))
def test_seed_table_row(name):
    avg, p95, hit, rejection = SEED_TABLE[name]
    _, doc = run_once(load_scenario(SCENARIOS / "seed-table" / name))
    e2e = doc["latency_ms"]["e2e"]
    r = doc["requests"]
    assert r["arrived"] == 20
    assert e2e["mean"] == pytest.approx(avg, abs=1e-6)
    assert e2e["p95"] == pytest.approx(p95, abs=1e-6)
    assert doc["cache"]["request_hit_rate"] == pytest.approx(hit)
    assert r["rejected"] / r["arrived"] == pytest.approx(rejection)


def test_big_request_takes_4205_ms_after_evicting():
    _, doc = run_once(load_scenario(SCENARIOS / "seed-table" / "gpu-aware-eviction.yaml"))
    assert doc["latency_ms"]["e2e"]["max"] == pytest.approx(4205.0, abs=1e-6)
    assert doc["cache"]["evicted_blocks"] > 0


def test_concurrency_grows_latency_not_throughput():
    rows = []
    for users in (1, 3, 5, 10):
        _, doc = run_once(load_scenario(SCENARIOS / "concurrency.yaml", [f"workload.arrival.users={users}"]))
        rows.append((doc["latency_ms"]["e2e"]["mean"], doc["latency_ms"]["e2e"]["p95"], doc["throughput"]["requests_per_s"]))
    means = [r[0] for r in rows]
    p95s = [r[1] for r in rows]
    assert means == sorted(means) and means[-1] > 5 * means[0]
    assert p95s == sorted(p95s)
    throughputs = [r[2] for r in rows]
    assert max(throughputs) / min(throughputs) < 1.05  # flat: one serial node


def test_admission_accepts_three_rejects_seven():
    _, doc = run_once(load_scenario(SCENARIOS / "admission.yaml"))
    assert doc["requests"]["completed"] == 3
    assert doc["requests"]["rejected"] == 7
    _, uncontrolled = run_once(load_scenario(SCENARIOS / "admission.yaml", ["cluster.nodes.0.max_active=null"]))
    assert uncontrolled["requests"]["completed"] == 10
    assert doc["latency_ms"]["e2e"]["p95"] < 0.5 * uncontrolled["latency_ms"]["e2e"]["p95"]
