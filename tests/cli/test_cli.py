"""The command line as users and scripts meet it: exit codes, messages, the result document."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCENARIOS = ROOT / "scenarios"


def kvtui(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "kvtui", *args], capture_output=True, text=True, cwd=cwd)


def test_run_writes_the_contract_document(tmp_path):
    out = tmp_path / "out.json"
    p = kvtui("run", str(SCENARIOS / "pressure.yaml"), "--json", str(out))
    assert p.returncode == 0, p.stderr
    doc = json.loads(out.read_text())
    for key in ("kvtui_version", "scenario", "policy", "seed", "sim_time_s", "wall_time_s", "requests", "cache",
                "latency_ms", "throughput", "nodes", "wal"):
        assert key in doc
    assert set(doc["requests"]) >= {"arrived", "completed", "rejected", "preempted"}
    assert set(doc["cache"]) >= {"request_hit_rate", "exact_hits", "prefix_hits", "misses", "token_hit_rate", "evicted_blocks"}
    for k in ("ttft", "tpot", "e2e"):
        assert set(doc["latency_ms"][k]) == {"mean", "p50", "p90", "p95", "p99", "max"}
    assert set(doc["throughput"]) == {"requests_per_s", "output_tokens_per_s"}
    assert {"name", "kv_blocks", "peak_blocks_used", "requests_served"} <= set(doc["nodes"][0])
    assert set(doc["wal"]) >= {"records", "bytes", "snapshots", "recoveries"}
    r = doc["requests"]
    assert r["arrived"] == r["completed"] + r["rejected"] + r["failed"] + r["in_flight"]
    assert "TTFT" in p.stdout


def test_compare_one_row_per_policy(tmp_path):
    out = tmp_path / "cmp.json"
    p = kvtui("compare", str(SCENARIOS / "pressure.yaml"), "--policies", "round_robin,cache_aware", "--json", str(out))
    assert p.returncode == 0, p.stderr
    runs = json.loads(out.read_text())["runs"]
    assert [r["policy"] for r in runs] == ["round_robin", "cache_aware"]
    assert runs[0]["seed"] == runs[1]["seed"]


def test_result_document_schema_version_5(tmp_path):
    out = tmp_path / "out.json"
    p = kvtui("run", str(SCENARIOS / "pressure.yaml"), "--json", str(out))
    assert p.returncode == 0, p.stderr
    doc = json.loads(out.read_text())
    assert doc["schema_version"] == 5
    assert doc["disaggregation"] is None  # no node has a role, the policy is colocated
    assert doc["control_plane"] == {"replication": None}  # one WAL store, not replicated
    assert set(doc["slo"]) == {"with_slo", "met", "attainment", "goodput_rps"}
    assert set(doc["latency_ms"]["itl"]) == {"mean", "p50", "p90", "p95", "p99", "max"}
    assert {"shed", "success_rate", "rejected_reasons", "turns_cut"} <= set(doc["requests"])
    assert sum(doc["requests"]["rejected_reasons"].values()) == doc["requests"]["rejected"]
    assert "token_hit_rate" in doc["cache"]
    assert isinstance(doc["routing"], dict)
    for needle in ("token hit rate", "ITL", "SLO attainment", "goodput"):
        assert needle in p.stdout


def test_compare_prints_the_serving_columns():
    p = kvtui("compare", str(SCENARIOS / "pressure.yaml"), "--policies", "round_robin,least_loaded")
    assert p.returncode == 0, p.stderr
    lines = p.stdout.splitlines()
    assert max(len(line) for line in lines) <= 120
    header = "\n".join(lines[:6])
    for needle in ("ok", "E2E", "TTFT", "TPOT", "p99", "tok/s", "hit%", "max/avg", "SLO", "good"):
        assert needle in header, needle


def test_compare_ladder_one_block_per_step(tmp_path):
    out = tmp_path / "ladder.json"
    p = kvtui("compare", str(SCENARIOS / "pressure.yaml"), "--policies", "round_robin,cache_aware",
              "--set", "workload.arrival.ladder=[0.5,2]", "--set", "workload.duration_s=20",
              "--ladder", "--json", str(out))
    assert p.returncode == 0, p.stderr
    # pressure.yaml starts sessions (prefix groups): its rate is sessions/s, not requests/s
    assert p.stdout.count("rate 0.5 sessions/s") == 1 and p.stdout.count("rate 2 sessions/s") == 1
    runs = json.loads(out.read_text())["runs"]
    assert [(r["ladder"]["rate"], r["policy"]) for r in runs] == [
        (0.5, "round_robin"), (0.5, "cache_aware"), (2.0, "round_robin"), (2.0, "cache_aware")
    ]
    # The step's rate holds throughout: the scenario's rate schedule is dropped.
    assert runs[0]["requests"]["arrived"] < runs[2]["requests"]["arrived"]


def test_compare_ladder_prints_the_capacity_line(tmp_path):
    """docs/cli.md: capacity = the last step meeting the SLOs (issue 35: no line was printed)."""
    p = kvtui("compare", str(SCENARIOS / "pressure.yaml"), "--policies", "round_robin",
              "--set", "workload.duration_s=20", "--ladder", "0.5,2")
    assert p.returncode == 0, p.stderr
    assert "capacity: none measured, the workload sets no SLO" in p.stdout


def test_ladder_capacity_is_the_highest_step_before_attainment_first_falls():
    from kvtui.report import ladder_capacity

    def run(policy, rate, attainment):
        return {"policy": policy, "ladder": {"rate": rate}, "slo": {"attainment": attainment}}

    docs = [run("a", 1, 1.0), run("b", 1, 0.5), run("a", 2, 0.95), run("b", 2, 0.99),
            run("a", 4, 0.6), run("b", 4, 0.99), run("a", 8, 0.95), run("b", 8, 0.91)]
    line = ladder_capacity(docs, "requests", target=0.9)
    assert line.endswith("a 2, b below the first step") and "90%" in line  # a's step 8 comes after a miss


def test_compare_ladder_without_steps_is_bad_input():
    p = kvtui("compare", str(SCENARIOS / "pressure.yaml"), "--ladder")
    assert p.returncode == 2 and "ladder" in p.stderr and "Traceback" not in p.stderr


def test_compare_ladder_of_no_rates_says_so_not_that_the_scenario_has_none():
    p = kvtui("compare", str(SCENARIOS / "pressure.yaml"), "--ladder", " , ")
    assert p.returncode == 2 and "Traceback" not in p.stderr
    assert "--ladder: no rates in ' , '" in p.stderr and "sets no workload.arrival.ladder" not in p.stderr


def test_compare_sweep():
    p = kvtui("compare", str(SCENARIOS / "concurrency.yaml"), "--sweep", "workload.arrival.users=1,3")
    assert p.returncode == 0, p.stderr
    assert "users=1" in p.stdout and "users=3" in p.stdout


@pytest.mark.parametrize(
    "args, needle",
    [
        (("run", "does-not-exist.yaml"), "does-not-exist.yaml"),
        (("run", "scenarios/pressure.yaml", "--policy", "nope"), "unknown policy"),
        (("run", "scenarios/pressure.yaml", "--set", "cluster.block_size=abc"), "--set cluster.block_size"),
        (("run", "scenarios/pressure.yaml", "--seed", "x"), "argument --seed: expected an integer"),
        (("run", "scenarios/pressure.yaml", "--seed", "-1"), "argument --seed: must be between 0 and"),
        (("frobnicate.yaml",), "frobnicate.yaml"),
        (("compare", "scenarios/pressure.yaml", "--sweep", "nokey"), "--sweep"),
    ],
)
def test_bad_input_exits_2_without_traceback(args, needle):
    p = kvtui(*args)
    assert p.returncode == 2
    assert needle in p.stderr
    assert "Traceback" not in p.stderr + p.stdout


def test_malformed_scenario_names_file_and_line(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("name: x\ncluster:\n  nodes:\n    - {name: a, kv_blockz: 4}\n")
    p = kvtui("validate", str(bad))
    assert p.returncode == 2
    assert f"{bad}:4:" in p.stderr and "kv_blocks" in p.stderr
    assert "Traceback" not in p.stderr


def test_yaml_syntax_error(tmp_path):
    bad = tmp_path / "broken.yaml"
    bad.write_text("name: [unclosed\n")
    p = kvtui("run", str(bad))
    assert p.returncode == 2 and str(bad) in p.stderr and "Traceback" not in p.stderr


def test_validate_every_shipped_scenario():
    for path in sorted(SCENARIOS.rglob("*.yaml")):
        p = kvtui("validate", str(path))
        assert p.returncode == 0, f"{path}: {p.stderr}"


def test_version_help_and_schema():
    assert kvtui("--version").stdout.startswith("kvtui ")
    assert "kvtui run" in kvtui("--help").stdout
    schema = json.loads(kvtui("schema").stdout)
    assert "properties" in schema or "$defs" in schema


def test_no_arguments_is_a_usage_error():
    p = kvtui()
    assert p.returncode == 2 and "usage" in p.stderr.lower()


def test_validate_says_what_arrival_rate_counts(capsys):
    """arrival.rate is arrivals per second: sessions for groups, requests for shared_prefix."""
    from kvtui.cli import main

    assert main(["validate", str(SCENARIOS / "pressure.yaml")]) == 0
    assert "arrival.rate 0.3 sessions/s" in capsys.readouterr().out
    assert main(["validate", str(SCENARIOS / "workload-a-small.yaml")]) == 0
    assert "arrival.rate 10 requests/s; one request each" in capsys.readouterr().out


def test_ladder_eta_scales_the_estimate_by_the_runs_so_far():
    from kvtui.cli.compare import _eta

    assert _eta(0.0, 0.0, 90.0) == "~1m30s"  # nothing run yet: the cost estimate as it is
    assert _eta(10.0, 5.0, 30.0) == "~1m00s"  # runs took twice their estimate so far
    assert _eta(1.0, 4.0, 8.0) == "~2s"


def test_a_run_past_its_budget_stops_with_exit_2_naming_the_file(tmp_path):
    """issue 24: what the estimate cannot bound is enforced as the run goes (kvtui/run/budget.py)."""
    from kvtui.run.budget import RunBudget
    from kvtui.cli.common import run_once
    from kvtui.errors import InputError
    from kvtui.scenario import load_scenario

    scenario = load_scenario("scenarios/pressure.yaml")
    with pytest.raises(InputError) as e:
        run_once(scenario, budget=RunBudget("scenarios/pressure.yaml", seconds=0.0))
    assert str(e.value).startswith("scenarios/pressure.yaml: over budget while running, stopped at t=")
    with pytest.raises(InputError) as e:
        run_once(scenario, budget=RunBudget("scenarios/pressure.yaml", memory_bytes=-1))
    assert "past the budget of" in str(e.value)
    _, doc = run_once(scenario, budget=RunBudget("scenarios/pressure.yaml"))
    assert doc


def test_help_usage_column_never_runs_into_its_description():
    """`kvtui --help`: each command's usage is followed by at least two spaces before what it
    does (a long usage such as live's once ran into it: '--duration Swatch')."""
    from kvtui.cli import COMMANDS, epilog

    text = epilog()
    for _, usage, _what in COMMANDS.values():
        assert f"kvtui {usage}  " in text


def test_a_mistyped_command_is_named_with_a_suggestion(capsys):
    """`kvtui runn FILE` says which command was meant (it once said 'unrecognized arguments:
    FILE', as if the file were the problem); exit 2."""
    from kvtui.cli import main

    assert main(["runn", "scenarios/pressure.yaml"]) == 2
    err = capsys.readouterr().err
    assert "unknown command 'runn'; did you mean 'run'?" in err


def test_an_unknown_policy_gets_the_nearest_name_everywhere():
    """One message for `--policy`, `--vs` and the engine (QA: a typo listed the names only)."""
    from kvtui.scenario.policies import unknown_policy

    p = kvtui("run", "scenarios/pressure.yaml", "--policy", "dynamoo")
    assert p.returncode == 2 and "unknown policy 'dynamoo'; did you mean 'dynamo'?" in p.stderr
    assert "did you mean 'cache_aware'?" in unknown_policy("cache_awar")
    assert "did you mean" not in unknown_policy("zzzz") and "known: round_robin" in unknown_policy("zzzz")


def test_compare_enforces_the_run_time_budget_on_every_run(monkeypatch):
    """QA: only `run` passed the backstop (kvtui/run/budget.py); `compare` ran on past it."""
    from kvtui.cli.compare import main as compare
    from kvtui.errors import InputError
    from kvtui.run.budget import RunBudget

    monkeypatch.setattr(RunBudget.__init__, "__defaults__", (0.0, None))  # no CPU time at all
    for how in ([], ["--sweep", "workload.arrival.rate=1"], ["--ladder", "1"]):
        with pytest.raises(InputError) as e:
            compare(["scenarios/pressure.yaml", "--set", "workload.duration_s=10", *how])
        assert str(e.value).startswith("scenarios/pressure.yaml: over budget while running"), how
    assert compare(["scenarios/pressure.yaml", "--set", "workload.duration_s=10", "--force"]) == 0


def test_record_refuses_an_out_that_is_not_svg(tmp_path):
    """`--out shot.png` wrote SVG text into a .png file (exit 0)."""
    out = tmp_path / "shot.png"
    p = kvtui("record", str(ROOT / "tests" / "tui" / "scenario.yaml"), "--steps", "5", "--out", str(out))
    assert p.returncode == 2, p.stderr
    assert "--out writes an SVG" in p.stderr and "Traceback" not in p.stderr
    assert not out.exists()


def test_a_narrow_sweep_table_keeps_its_title_and_failure_on_whole_lines(tmp_path):
    """Every run failing left a two-column table whose title and "first failure" caption
    wrapped at its 25 columns: "sweep · mean ± 95 % CI" / "over seeds · latencies in" / "ms"."""
    p = kvtui("sweep", str(ROOT / "tests" / "tui" / "scenario.yaml"), "--grid", "router.policy=nosuch",
              "--workers", "1", "--out", str(tmp_path / "r.jsonl"))
    assert p.returncode == 0, p.stderr
    lines = [line.strip() for line in p.stdout.splitlines()]
    assert lines[0] == "sweep · mean ± 95 % CI over seeds · latencies in ms"
    assert any(line.startswith("first failure: --set router.policy: router.policy: 'nosuch' is not one of:") for line in lines)


@pytest.mark.parametrize("argv, flag", [
    (("serve", "scenarios/pressure.yaml", "--vs", "nope"), "--vs"),
    (("serve", "scenarios/pressure.yaml", "--policy", "nope"), "--policy"),
    (("compare", "scenarios/pressure.yaml", "--policies", "round_robin,nope"), "--policies"),
])
def test_an_unknown_policy_names_its_flag(argv, flag):
    """`kvtui SCENARIO --policy a --vs b` with one of them wrong said "unknown policy 'b'",
    not which flag gave it."""
    p = kvtui(*argv)
    assert p.returncode == 2 and p.stderr.startswith(f"{flag}: unknown policy 'nope'"), p.stderr


@pytest.mark.parametrize("argv, said", [
    (("serve", "scenarios/pressure.yaml", "--vs", "pattern:B"), "--vs: a pattern needs a scenario whose metadata.replication"),
    (("serve", "scenarios/control-plane-patterns.yaml", "--vs", "pattern:Z"), "--vs: unknown pattern 'Z' (one of A, B, C)"),
])
def test_a_pattern_the_scenario_cannot_take_is_refused_by_its_flag(argv, said):
    p = kvtui(*argv)
    assert p.returncode == 2 and p.stderr.startswith(said), p.stderr


@pytest.mark.parametrize("argv, flag", [
    (("compare", "scenarios/pressure.yaml", "--policies", ""), "--policies"),
    (("compare", "scenarios/pressure.yaml", "--policies", " , "), "--policies"),
    (("sweep", "scenarios/pressure.yaml", "--policies", "", "--out", "OUT"), "--policies"),
    (("sweep", "scenarios/pressure.yaml", "--metrics", " ", "--out", "OUT"), "--metrics"),
    (("compare", "scenarios/pressure.yaml", "--sweep", "router.policy=,"), "--sweep router.policy"),
])
def test_an_empty_list_is_a_usage_error_naming_its_flag(argv, flag, tmp_path):
    """`--policies ''` silently ran the scenario's own policy (and `--metrics ''` the default
    columns, `--sweep KEY=,` nothing): an empty list is a mistake, not a request for the default."""
    out = tmp_path / "r.jsonl"
    p = kvtui(*(str(out) if a == "OUT" else a for a in argv))
    assert p.returncode == 2 and p.stderr.startswith(f"{flag}: "), p.stderr
    assert "Traceback" not in p.stderr and not out.exists()


def test_demo_list_keeps_every_name_apart_from_its_path():
    """Names and paths in two columns: a fixed 22-column name ran control-plane-patterns (22
    characters) into its path."""
    from kvtui.cli.demo import packaged

    p = kvtui("demo", "--list")
    assert p.returncode == 0, p.stderr
    rows = [line.split() for line in p.stdout.splitlines()]
    assert [r[0] for r in rows] == list(packaged()) and all(len(r) == 2 for r in rows)
