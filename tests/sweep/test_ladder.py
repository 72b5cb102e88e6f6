"""`kvtui sweep --ladder --until-saturated`: each scenario's own ladder, stopped after the first
saturated step (throughput no longer following the rate, or queues that outlast the send),
decided from results alone, so the file is the same on any worker count and on resume."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from kvtui.sweep.grid import FLAT, RATE, GridError, RunSpec, expand, parse_axes, rate_text
from kvtui.sweep.ladder import LadderPlan, Saturation, Step

ROOT = Path(__file__).resolve().parents[2]
PRESSURE = str(ROOT / "scenarios" / "pressure.yaml")

# One small node (2,000 KV blocks), 10 s sends: saturates between 4 and 16 sessions/s.
TINY = """\
name: tiny-ladder
seed: 3
latency: {model: linear, prefill_ms_per_token: 0.2, decode_ms_per_token: 8}
router: {policy: round_robin}
cluster:
  block_size: 16
  nodes:
    - {name: node-a, kv_blocks: 2000, max_num_seqs: 16}
workload:
  arrival: {process: poisson, rate: 1, ladder: [1, 2, 4, 16, 32, 64]}
  duration_s: 10
  groups:
    - {name: chat, system_prompt_tokens: 64, question_tokens: 64, output_tokens: 40}
"""


def kvtui(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "kvtui", *args], capture_output=True, text=True, cwd=cwd)


def result(tps: float, sim_time: float, ntpot: float = 6.0) -> dict:
    return {"throughput": {"output_tokens_per_s": tps}, "sim_time_s": sim_time, "latency_ms": {"ntpot": {"p50": ntpot}}}


# -------------------------------------------------------------------------- the rule
def test_a_step_whose_throughput_follows_the_rate_is_not_saturated():
    rule = Saturation()
    assert rule.why(Step(2.0, 190.0, 5.0), Step(1.0, 100.0, 5.0), 100.0) is None  # +90 % for +100 %


def test_throughput_rising_less_than_half_the_rate_is_saturation():
    why = Saturation().why(Step(2.0, 140.0, 5.0), Step(1.0, 100.0, 5.0), 100.0)  # +40 % for +100 %
    assert why is not None and "+40%" in why and "+100%" in why


def test_ntpot_more_than_doubling_is_queues_forming():
    why = Saturation().why(Step(2.0, 195.0, 5.0, 13.0), Step(1.0, 100.0, 5.0, 6.0), 100.0)
    assert why is not None and why.startswith("NTPOT p50 13.0 ms")
    assert Saturation().why(Step(2.0, 195.0, 5.0, 11.9), Step(1.0, 100.0, 5.0, 6.0), 100.0) is None


def test_a_drain_longer_than_half_the_send_is_saturation_even_on_the_first_step():
    why = Saturation().why(Step(1.0, 100.0, 51.0), None, 100.0)
    assert why is not None and why.startswith("queues grew")
    assert Saturation().why(Step(1.0, 100.0, 49.0), None, 100.0) is None


def test_rates_become_grid_values_yaml_reads_as_numbers():
    assert [rate_text(r) for r in (0.5, 2.0, 12.5, 1e-05)] == ["0.5", "2", "12.5", "0.00001"]


# -------------------------------------------------------------------------- the plan
def specs_of(rates: list[str], seeds: int = 2, policies=("a", "b")) -> list[RunSpec]:
    out = []
    for r in rates:
        for p in policies:
            for s in range(seeds):
                out.append(RunSpec(len(out), "x.yaml", (FLAT,), ((RATE, r),), p, s))
    return out


def test_a_ladder_starts_with_its_first_step_and_stops_after_its_saturated_step():
    specs = specs_of(["1", "2", "4", "8"])
    plan = LadderPlan(specs, {"x.yaml": 100.0}, Saturation())
    started = plan.start({})
    assert [s.index for s in started] == [0, 1, 2, 3]  # rate 1, both policies' seeds
    tps = {"a": {1: 100, 2: 200, 4: 250, 8: 260}, "b": {1: 100, 2: 200, 4: 400, 8: 790}}
    later, skipped_all = [], []
    queue = list(started)
    while queue:
        spec = queue.pop(0)
        rate = float(dict(spec.grid)[RATE])
        new, skipped = plan.finished(spec.index, result(tps[spec.policy][int(rate)], 105.0))
        later += [s.index for s in new]
        skipped_all += skipped
        queue += new
    a_runs = [s.index for s in specs if s.policy == "a"]
    assert sorted(skipped_all) == [i for i in a_runs if dict(specs[i].grid)[RATE] == "8"]  # a saturated at 4
    assert not [i for i in skipped_all if specs[i].policy == "b"]  # b followed the rate to the top
    (spec, why), = plan.reasons()
    assert spec.policy == "a" and why.startswith("saturated at 4/s")


def test_resume_replays_the_decisions_from_the_finished_runs():
    specs = specs_of(["1", "2", "4"], policies=("a",))
    known = {0: result(100, 105), 1: result(100, 105), 2: result(120, 105), 3: result(120, 105)}
    plan = LadderPlan(specs, {"x.yaml": 100.0}, Saturation())
    assert plan.start(known) == [] and sorted(plan.skipped) == [4, 5]  # saturated at 2: +20 % for +100 %


def test_a_failed_run_stops_its_ladder():
    specs = specs_of(["1", "2"], seeds=1, policies=("a",))
    plan = LadderPlan(specs, {"x.yaml": 100.0}, Saturation())
    plan.start({})
    assert plan.finished(0, None) == ([], [1])


# -------------------------------------------------------------------------- the grid
def test_each_scenario_climbs_its_own_ladder_at_a_flat_rate():
    a, d = str(ROOT / "scenarios" / "workload-a-small.yaml"), str(ROOT / "scenarios" / "workload-d-small.yaml")
    specs = expand([a, d], [], ["round_robin"], 1, ladder=True)
    rates = {p: [dict(s.grid)[RATE] for s in specs if s.scenario == p] for p in (a, d)}
    assert rates[a] == ["2", "5", "10", "15", "20", "25"] and rates[d] == ["0.5", "1", "2", "3", "5", "10"]
    assert all(s.overrides == (FLAT,) for s in specs)


def test_a_ladder_needs_one_and_owns_the_rate_axis():
    with pytest.raises(GridError, match="sets no workload.arrival.ladder"):
        expand([PRESSURE], [], [None], 1, ladder=True)
    with pytest.raises(GridError, match="leave it"):
        expand([PRESSURE], parse_axes(["workload.arrival.rate=1,2"]), [None], 1, ladder=True)


# -------------------------------------------------------------------------- end to end
@pytest.fixture(scope="module")
def tiny(tmp_path_factory) -> Path:
    d = tmp_path_factory.mktemp("ladder")
    (d / "tiny.yaml").write_text(TINY)
    return d


def ladder_sweep(d: Path, out: str, workers: int) -> subprocess.CompletedProcess:
    return kvtui("sweep", "tiny.yaml", "--ladder", "--until-saturated", "--policies", "round_robin,least_loaded",
                 "--seeds", "2", "--workers", str(workers), "--out", out, cwd=d)


def test_the_sweep_stops_at_saturation_with_the_same_bytes_on_one_worker_or_two(tiny):
    two = ladder_sweep(tiny, "two.jsonl", 2)
    assert two.returncode == 0, two.stderr
    one = ladder_sweep(tiny, "one.jsonl", 1)
    assert one.returncode == 0, one.stderr
    assert (tiny / "one.jsonl").read_bytes() == (tiny / "two.jsonl").read_bytes()
    lines = [json.loads(x) for x in (tiny / "two.jsonl").read_text().splitlines()]
    rates = sorted({float(x["run"]["grid"][RATE]) for x in lines})
    assert rates and rates[-1] < 64  # the top of the ladder is never reached
    assert "past saturation not run" in two.stderr and "stopped, saturated at" in two.stderr
    assert all(x["run"]["set"] == [FLAT] for x in lines)
    again = ladder_sweep(tiny, "two.jsonl", 2)  # resume: nothing left to run
    assert again.returncode == 0 and "0 runs done now" in again.stderr
    assert (tiny / "two.jsonl").read_bytes() == (tiny / "one.jsonl").read_bytes()


def test_until_saturated_needs_a_ladder(tiny):
    p = kvtui("sweep", "tiny.yaml", "--until-saturated", "--out", "x.jsonl", cwd=tiny)
    assert p.returncode == 2 and "--ladder" in p.stderr
