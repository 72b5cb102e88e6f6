"""`kvtui sweep` and `kvtui plot`: grid order, byte-identical lines across worker counts, resume
after a kill or Ctrl-C without redoing finished runs, failed runs recorded, plots rendered.

Every sweep here is pressure.yaml cut to 10 simulated seconds at a flat rate (each run well
under a second), so the whole file costs a few seconds of subprocess start-up."""

from __future__ import annotations

import gc
import json
import os
import signal
import subprocess
import sys
import time
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from kvtui.sweep.driver import run_sweep
from kvtui.sweep.grid import expand, key_text, parse_axes
from kvtui.sweep.local import LocalBackend
from kvtui.sweep.output import journal_path, read_journal
from kvtui.sweep.stats import estimate, t_quantile

ROOT = Path(__file__).resolve().parents[2]
PRESSURE = str(ROOT / "scenarios" / "pressure.yaml")
SMALL = ["--set", "workload.duration_s=10", "--set", "workload.arrival.schedule=[]"]
GRID = ["--grid", "workload.arrival.rate=1,2", "--policies", "round_robin,load_prefix", "--seeds", "2"]


def kvtui(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "kvtui", *args], capture_output=True, text=True, cwd=cwd)


def small_specs(rates=("1", "2"), seeds=2):
    axes = parse_axes([f"workload.arrival.rate={','.join(rates)}"])
    return expand([PRESSURE], axes, ["round_robin", "load_prefix"], seeds, SMALL[1::2])


@pytest.fixture(scope="module")
def reference(tmp_path_factory) -> Path:
    """The small grid, uninterrupted, on 2 worker processes."""
    out = tmp_path_factory.mktemp("ref") / "ref.jsonl"
    p = kvtui("sweep", PRESSURE, *SMALL, *GRID, "--workers", "2", "--out", str(out))
    assert p.returncode == 0, p.stderr
    return out


def test_grid_order_and_derived_seeds():
    specs = small_specs()
    keys = [(dict(s.grid)["workload.arrival.rate"], s.policy, s.seed) for s in specs]
    assert keys == [
        ("1", "round_robin", 7), ("1", "round_robin", 8), ("1", "load_prefix", 7), ("1", "load_prefix", 8),
        ("2", "round_robin", 7), ("2", "round_robin", 8), ("2", "load_prefix", 7), ("2", "load_prefix", 8),
    ]  # pressure.yaml's seed is 7: seeds S, S+1; seeds innermost
    assert [s.index for s in specs] == list(range(8))


def test_lines_carry_the_run_key_and_no_wall_time(reference):
    lines = [json.loads(x) for x in reference.read_text().splitlines()]
    assert [(x["run"]["grid"]["workload.arrival.rate"], x["run"]["policy"], x["run"]["seed"]) for x in lines] == [
        (dict(s.grid)["workload.arrival.rate"], s.policy, s.seed) for s in small_specs()
    ]
    for x in lines:
        assert x["status"] == "ok"
        assert "wall_time_s" not in x["result"]
        assert x["result"]["policy"] == x["run"]["policy"] and x["result"]["seed"] == x["run"]["seed"]
    records = read_journal(journal_path(reference))
    assert len(records) == 8 and all(r["wall_time_s"] > 0 and r["backend"] == "local" for r in records)
    assert sorted(r["line"] for r in records) == sorted(reference.read_text().splitlines())


def test_one_worker_gives_the_same_bytes_as_two(reference, tmp_path):
    out = tmp_path / "one.jsonl"
    p = kvtui("sweep", PRESSURE, *SMALL, *GRID, "--workers", "1", "--out", str(out))
    assert p.returncode == 0, p.stderr
    assert out.read_bytes() == reference.read_bytes()
    assert "ttft.p95" in p.stdout and "±" in p.stdout  # the summary table


class InterruptAfter:
    """A backend that delivers `n` runs of the real local backend, then a Ctrl-C."""

    name = "local"

    def __init__(self, n: int):
        self.n = n

    def run(self, specs):
        for i, outcome in enumerate(LocalBackend(1).run(specs)):
            if i == self.n:
                raise KeyboardInterrupt
            yield outcome


class Counting(LocalBackend):
    def run(self, specs):
        self.asked = [s.index for s in specs]
        yield from super().run(specs)


def test_ctrl_c_then_resume_redoes_nothing_finished(reference, tmp_path):
    out = tmp_path / "r.jsonl"
    specs = small_specs()
    first = run_sweep(specs, InterruptAfter(3), out)
    assert first.interrupted and first.progress.done == 3 and out.read_text().count("\n") == 3
    again = Counting(1)
    second = run_sweep(specs, again, out)
    assert again.asked == [3, 4, 5, 6, 7] and second.progress.skipped == 3
    assert out.read_bytes() == reference.read_bytes()


def test_torn_tail_and_out_of_order_journal_resume(reference, tmp_path):
    """A kill leaves half a line; a run finished after a gap lives only in the journal."""
    out = tmp_path / "t.jsonl"
    ref_lines = reference.read_text().splitlines(keepends=True)
    out.write_text("".join(ref_lines[:2]) + ref_lines[2][:40])
    journal_path(out).write_text(json.dumps({"wall_time_s": 1.0, "worker": "x:1", "backend": "local", "line": ref_lines[5].strip()}) + "\n")
    backend = Counting(1)
    run_sweep(small_specs(), backend, out)
    assert backend.asked == [2, 3, 4, 6, 7]
    assert out.read_bytes() == reference.read_bytes()


def test_kill_then_resume_redoes_nothing_finished(tmp_path):
    """SIGKILL a real sweep part-way; the same command finishes it, each run exactly once."""
    out = tmp_path / "k.jsonl"
    args = [sys.executable, "-m", "kvtui", "sweep", PRESSURE, *SMALL, "--grid", "workload.arrival.rate=1,2",
            "--policies", "round_robin,load_prefix", "--seeds", "4", "--workers", "1", "--out", str(out)]
    proc = subprocess.Popen(args, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    journal = journal_path(out)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and proc.poll() is None:
        if journal.exists() and journal.read_text().count("\n") >= 2:
            proc.send_signal(signal.SIGKILL)
            break
        time.sleep(0.01)
    proc.wait()
    assert proc.returncode == -signal.SIGKILL, "the sweep ended before it could be killed"
    before = [r["line"] for r in read_journal(journal)]
    done_before = len(before)
    assert 2 <= done_before < 16
    p = subprocess.run(args, cwd=ROOT, capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    records = read_journal(journal)
    keys = [key_text(json.loads(r["line"])["run"]) for r in records]
    assert len(records) == 16 and len(set(keys)) == 16, "a finished run was redone"
    lines = out.read_text().splitlines()
    specs = expand([PRESSURE], parse_axes(["workload.arrival.rate=1,2"]), ["round_robin", "load_prefix"], 4, SMALL[1::2])
    assert [key_text(json.loads(x)["run"]) for x in lines] == [key_text(s.key()) for s in specs]
    assert set(before) <= set(lines)  # the runs finished before the kill, kept as they were
    assert f"{done_before} done before" in p.stderr


def test_sigint_stops_the_pool_and_the_file_resumes(reference, tmp_path):
    """Ctrl-C on a 2-worker sweep: exit 130 at once (workers stopped), then the same command
    finishes it and gives the uninterrupted bytes."""
    out = tmp_path / "i.jsonl"
    args = [sys.executable, "-m", "kvtui", "sweep", PRESSURE, *SMALL, *GRID, "--workers", "2", "--out", str(out)]
    proc = subprocess.Popen(args, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    journal = journal_path(out)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and proc.poll() is None:
        if journal.exists() and journal.read_text().count("\n") >= 1:
            proc.send_signal(signal.SIGINT)
            break
        time.sleep(0.01)
    _, err = proc.communicate(timeout=60)
    if proc.returncode == 0:
        pytest.skip("the sweep finished before the interrupt landed")
    assert proc.returncode == 130 and "resume" in err and "Traceback" not in err
    p = subprocess.run(args, cwd=ROOT, capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    assert out.read_bytes() == reference.read_bytes()
    keys = [key_text(json.loads(r["line"])["run"]) for r in read_journal(journal)]
    assert len(keys) == len(set(keys)) == 8


def test_a_killed_worker_loses_only_unfinished_runs(tmp_path):
    """SIGKILL one pool worker: the pool breaks, the sweep reports lost runs (exit 1) without
    writing them, and the same command then runs exactly those."""
    out = tmp_path / "w.jsonl"
    args = [sys.executable, "-m", "kvtui", "sweep", PRESSURE, *SMALL, "--grid", "workload.arrival.rate=1,2",
            "--policies", "round_robin,load_prefix", "--seeds", "4", "--workers", "2", "--out", str(out)]
    proc = subprocess.Popen(args, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    journal = journal_path(out)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and proc.poll() is None:
        records = read_journal(journal)
        if records:
            os.kill(int(records[0]["worker"].rsplit(":", 1)[1]), signal.SIGKILL)
            break
        time.sleep(0.01)
    _, err = proc.communicate(timeout=60)
    if proc.returncode == 0:
        pytest.skip("the sweep finished before the worker was killed")
    assert proc.returncode == 1 and "runs lost" in err and "Traceback" not in err
    done_before = len(read_journal(journal))
    p = subprocess.run(args, cwd=ROOT, capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    assert f"{16 - done_before} runs done now" in p.stderr
    keys = [key_text(json.loads(r["line"])["run"]) for r in read_journal(journal)]
    assert len(keys) == len(set(keys)) == 16 and len(out.read_text().splitlines()) == 16


def test_failing_run_is_recorded_and_the_sweep_goes_on(tmp_path):
    out = tmp_path / "f.jsonl"
    p = kvtui("sweep", PRESSURE, *SMALL, "--grid", "cluster.nodes.0.kv_blocks=64,-1", "--workers", "1", "--out", str(out))
    assert p.returncode == 0, p.stderr
    good, bad = [json.loads(x) for x in out.read_text().splitlines()]
    assert good["status"] == "ok" and bad["status"] == "error"
    assert "kv_blocks" in bad["error"] and "must be between 1 and" in bad["error"]
    assert bad["run"]["grid"] == {"cluster.nodes.0.kv_blocks": "-1"}
    assert "1 failed" in p.stderr and "(1 failed)" in p.stdout


def test_resume_keeps_failed_runs_unless_retry_failed(tmp_path):
    out = tmp_path / "rf.jsonl"
    specs = expand([PRESSURE], parse_axes(["cluster.nodes.0.kv_blocks=64,-1"]), [None], 1, SMALL[1::2])
    assert run_sweep(specs, LocalBackend(1), out).progress.failed == 1
    assert run_sweep(specs, LocalBackend(1), out).progress.skipped == 2
    again = Counting(1)
    result = run_sweep(specs, again, out, retry_failed=True)
    assert again.asked == [1] and result.progress.failed == 1  # still invalid: recorded again
    assert len(out.read_text().splitlines()) == 2


def test_csv_output(reference, tmp_path):
    out = tmp_path / "c.csv"
    p = kvtui("sweep", PRESSURE, *SMALL, "--grid", "workload.arrival.rate=1", "--workers", "1", "--out", str(out))
    assert p.returncode == 0, p.stderr
    header, row = out.read_text().splitlines()
    cols = header.split(",")
    assert cols[:5] == ["scenario", "policy", "seed", "grid.workload.arrival.rate", "status"]
    assert "result.latency_ms.ttft.p95" in cols and (tmp_path / "c.jsonl").exists()


@pytest.mark.parametrize(
    "args, message",
    [
        (["--grid", "seed=1,2"], "--seeds"),
        (["--grid", "workload.arrival.rate"], "KEY=V1,V2"),
        (["--grid", "a=1", "--grid", "a=2"], "twice"),
        (["--seeds", "0"], "at least 1"),
        (["--policies", "nope"], "unknown policy"),
        (["--backend", "local", "--address", "auto"], "--backend ray"),
    ],
)
def test_usage_errors_exit_2(tmp_path, args, message):
    p = kvtui("sweep", PRESSURE, *args, "--out", str(tmp_path / "u.jsonl"))
    assert p.returncode == 2 and message in p.stderr and "Traceback" not in p.stderr


def test_refuses_to_overwrite_a_file_that_is_not_a_sweep(tmp_path):
    other = tmp_path / "notes.jsonl"
    other.write_text('{"hello": 1}\n')
    p = kvtui("sweep", PRESSURE, *SMALL, "--out", str(other))
    assert p.returncode == 2 and "not a sweep result line" in p.stderr
    assert other.read_text() == '{"hello": 1}\n'


def test_t_interval():
    # two-sided 95 % Student-t quantiles, from any printed t table
    for df, t in ((1, 12.706), (2, 4.303), (4, 2.776), (9, 2.262), (30, 2.042)):
        assert t_quantile(0.975, df) == pytest.approx(t, abs=5e-4)
    e = estimate([1.0, 2.0, 3.0])
    assert e.mean == 2.0 and e.half_width == pytest.approx(4.303 * 1.0 / 3**0.5, rel=1e-3)
    assert estimate([5.0]).half_width is None and estimate([]) is None


def test_plot_in_the_terminal(reference):
    p = kvtui("plot", str(reference), "--x", "rate", "--y", "ttft.p95", "--by", "policy", "--size", "60x12")
    assert p.returncode == 0, p.stderr
    text = p.stdout
    assert "latency_ms.ttft.p95 by workload.arrival.rate" in text
    assert "● round_robin" in text and "■ load_prefix" in text
    assert any(0x2800 < ord(ch) <= 0x28FF for ch in text), "no braille dots drawn"
    axis = [line for line in text.splitlines() if "(workload.arrival.rate)" in line][0]
    assert axis.split()[:2] == ["1", "2"]


def test_plot_to_svg(reference, tmp_path):
    svg = tmp_path / "p.svg"
    p = kvtui("plot", str(reference), "--x", "workload.arrival.rate", "--y", "cache.token_hit_rate", "--out", str(svg))
    assert p.returncode == 0, p.stderr
    root = ET.fromstring(svg.read_text())
    ns = "{http://www.w3.org/2000/svg}"
    lines = [e for e in root.iter(f"{ns}polyline") if e.get("stroke") != "black"]
    assert len(lines) == 2 and all(len(e.get("points").split()) == 2 for e in lines)
    assert {t.text for t in root.iter(f"{ns}text")} >= {"round_robin", "load_prefix"}


def test_plot_errors(reference, tmp_path):
    p = kvtui("plot", str(reference), "--x", "rate", "--y", "no_such_metric")
    assert p.returncode == 2 and "matches no grid key or result field" in p.stderr
    p = kvtui("plot", str(reference), "--x", "rate", "--y", "p95")
    assert p.returncode == 2 and "ambiguous" in p.stderr
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        p = kvtui("plot", str(reference), "--x", "rate", "--y", "ttft.p95", "--out", str(tmp_path / "p.png"))
        assert p.returncode == 2 and "matplotlib" in p.stderr


def test_cli_reports_a_missing_ray_cleanly(tmp_path):
    """Without the extra, `--backend ray` is a usage error naming the extra (exit 2)."""
    code = (
        "import sys, builtins; real = builtins.__import__\n"
        "def fake(name, *a, **k):\n"
        "    if name == 'ray' or name.startswith('ray.'): raise ImportError(name)\n"
        "    return real(name, *a, **k)\n"
        "builtins.__import__ = fake\n"
        "from kvtui.cli import main; sys.exit(main(sys.argv[1:]))\n"
    )
    p = subprocess.run(
        [sys.executable, "-c", code, "sweep", PRESSURE, "--backend", "ray", "--out", str(tmp_path / "x.jsonl")],
        capture_output=True, text=True, cwd=ROOT,
    )
    assert p.returncode == 2 and "pip install 'kvtui[ray]'" in p.stderr


def test_the_sweep_package_imports_neither_textual_nor_rich():
    """kvtui.sweep is a library like the engine: the CLI layer alone prints with Rich."""
    pkg = ROOT / "kvtui" / "sweep"
    modules = sorted(f"kvtui.sweep.{p.stem}" for p in pkg.glob("*.py") if p.stem != "__init__")
    assert len(modules) >= 10
    code = (
        "import sys\n"
        f"for m in {modules!r}: __import__(m)\n"
        "print(','.join(sorted(m for m in sys.modules if m.split('.')[0] in ('textual', 'rich', 'ray'))))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT)
    assert out.stdout.strip() == ""


def test_a_sweep_run_keeps_the_budget_unless_forced(monkeypatch):
    """QA: a sweep's runs had neither the estimate's check nor the backstop `kvtui run` has
    (kvtui/run/budget.py): now a run over either is a failed line naming the file."""
    from kvtui.run.budget import RunBudget
    from kvtui.sweep.run import execute

    monkeypatch.setattr(RunBudget.__init__, "__defaults__", (0.0, None))  # no CPU time at all
    spec = small_specs(rates=("1",), seeds=1)[0]
    out = execute(spec)
    assert not out.ok and "over budget while running" in out.line and "pressure.yaml" in out.line
    assert execute(expand([PRESSURE], [], [None], 1, SMALL[1::2], force=True)[0]).ok
    huge = expand([PRESSURE], [], [None], 1, ["workload.duration_s=1e9"])[0]
    out = execute(huge)  # refused by its estimate before it runs
    assert not out.ok and "over budget: estimated run time" in out.line


def _ray_task_with_driver(pid: int, overrides: list[str]) -> subprocess.CompletedProcess:
    """The Ray backend's task function, run in a process of its own (no Ray needed) for a driver `pid`."""
    code = (
        "import socket, sys\n"
        "from kvtui.sweep.grid import expand\n"
        "from kvtui.sweep.raytasks import execute_watched\n"
        f"spec = expand([{PRESSURE!r}], [], [None], 1, {overrides!r})[0]\n"
        f"assert execute_watched(spec, (socket.gethostname(), {pid})).ok\n"
        "print('finished its run')\n"
    )
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)


def test_a_ray_task_ends_with_its_driver():
    """QA: the process pool's workers leave when their driver is killed; Ray's kept running the
    simulation until the raylet noticed. A task whose driver is gone leaves without finishing;
    with its driver there, it finishes."""
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    # long enough that no build (the compiled engine is faster) finishes before the first check
    long_run = ["workload.duration_s=600", "workload.arrival.schedule=[]", "workload.arrival.rate=20"]
    orphan = _ray_task_with_driver(gone.pid, long_run)
    assert orphan.returncode == 0 and "finished its run" not in orphan.stdout, orphan.stderr
    watched = _ray_task_with_driver(os.getpid(), SMALL[1::2])
    assert "finished its run" in watched.stdout, watched.stderr


def _two_series_meeting():
    from kvtui.sweep.series import Plot, Series
    from kvtui.sweep.stats import Estimate

    same = [(0.0, Estimate(3, 10.0, 1.0)), (1.0, Estimate(3, 20.0, 1.0))]
    apart = [(0.0, Estimate(3, 10.0, 1.0)), (1.0, Estimate(3, 5.0, 1.0))]  # meets `same` at x=0 only
    return Plot("rate", "ttft", [(0.0, "1"), (1.0, "2")], [Series("a", same), Series("b", apart)])


def test_plot_markers_of_series_that_meet_stay_visible():
    """QA: where two series' points meet, the later marker hid the earlier one (terminal: the
    last glyph won the cell; SVG: a filled circle covered the other)."""
    from kvtui.sweep.chart import MARKERS, SHARED, render
    from kvtui.sweep.svg import render_svg

    text = "\n".join("".join(ch for ch, _ in row) for row in render(_two_series_meeting(), 40, 10))
    assert text.count(SHARED) == 2 and f"{SHARED} points of several series" in text  # the meeting point, and the legend
    assert text.count(MARKERS[0]) == 2 and text.count(MARKERS[1]) == 2  # each series' own point, and its legend line
    root = ET.fromstring(render_svg(_two_series_meeting()))
    ns = "{http://www.w3.org/2000/svg}"
    marks = [e for e in root.iter() if e.get("fill") == "none" and e.get("stroke", "").startswith("#")]
    assert {e.tag for e in marks} >= {f"{ns}circle", f"{ns}rect"}  # a shape per series, hollow


def test_a_sweep_run_frees_its_simulation_when_it_ends():
    """A Simulation is a cycle and a run thaws its heap into the collector's oldest generation:
    `blog_rerun.py --scale full --workers 1` kept every run's (19.7 GB after 201 runs)."""
    from kvtui.sim.engine import Simulation
    from kvtui.sweep.run import execute

    assert execute(expand([PRESSURE], [], [None], 1, SMALL[1::2], force=True)[0]).ok
    assert not [o for o in gc.get_objects() if isinstance(o, Simulation)]
