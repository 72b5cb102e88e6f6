"""`kvtui sweep --backend ray`: the same grid on a local Ray instance gives the same bytes as the
local backend. Skipped when the `ray` extra is not installed; one Ray instance for the module."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

ray = pytest.importorskip("ray")

from kvtui.sweep.driver import run_sweep  # noqa: E402
from kvtui.sweep.grid import expand, parse_axes  # noqa: E402
from kvtui.sweep.local import LocalBackend  # noqa: E402
from kvtui.sweep.output import journal_path, read_journal  # noqa: E402
from kvtui.sweep.raytasks import RayBackend  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
PRESSURE = str(ROOT / "scenarios" / "pressure.yaml")
SMALL = ["workload.duration_s=10", "workload.arrival.schedule=[]"]


@pytest.fixture(scope="module")
def ray_session():
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    yield
    ray.shutdown()


def specs():
    axes = parse_axes(["workload.arrival.rate=1,2", "cluster.nodes.0.kv_blocks=64,-1"])
    return expand([PRESSURE], axes, ["round_robin", "load_prefix"], 2, SMALL)


def test_ray_and_local_give_identical_lines(ray_session, tmp_path):
    local, remote = tmp_path / "local.jsonl", tmp_path / "ray.jsonl"
    run_sweep(specs(), LocalBackend(1), local)
    result = run_sweep(specs(), RayBackend(2), remote)
    assert result.progress.done == 16 and result.progress.failed == 8 and not result.progress.lost
    assert remote.read_bytes() == local.read_bytes()
    statuses = [json.loads(x)["status"] for x in remote.read_text().splitlines()]
    assert statuses.count("error") == 8  # kv_blocks=-1: recorded, the others ran
    records = read_journal(journal_path(remote))
    assert {r["backend"] for r in records} == {"ray"}
    assert ray.is_initialized()  # a session the caller holds is used, not shut down



def test_a_ladder_stopped_at_saturation_gives_the_same_bytes_on_ray(ray_session, tmp_path):
    """Ray's tasks for a ladder's next step are started as its step finishes, as the pool's are."""
    from kvtui.sweep.grid import ladder_rates
    from kvtui.sweep.ladder import LadderPlan, Saturation

    scenario = str(ROOT / "scenarios" / "workload-d-small.yaml")
    sets = ["workload.duration_s=10"]
    ladder = expand([scenario], [], ["round_robin", "load_prefix"], 2, sets, ladder=True)
    window = ladder_rates(scenario, sets)[1]
    local, remote = tmp_path / "local.jsonl", tmp_path / "ray.jsonl"
    rule = Saturation(drain=10.0)  # 10 s sends: no queue builds, so every step is started by the one before
    a = run_sweep(ladder, LocalBackend(1), local, plan=LadderPlan(ladder, {scenario: window}, rule))
    b = run_sweep(ladder, RayBackend(2), remote, plan=LadderPlan(ladder, {scenario: window}, rule))
    assert remote.read_bytes() == local.read_bytes()
    assert a.progress.saturated == b.progress.saturated and a.progress.done == b.progress.done
    assert a.progress.done == len(ladder)  # six steps, each started when the one before finished
