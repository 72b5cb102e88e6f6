"""Nothing a user owns is overwritten, read forever or left running (issue 25, and issue 20's
`--json` check): each case the campaign reproduced, as a test.

Every call goes through `fuzz_support.call` (in-process `main()` under a hang bound), so a
fifo that blocks or a device read until memory runs out fails the test as `hang`/`traceback`
instead of stalling the suite.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from fuzz_support import call

ROOT = Path(__file__).resolve().parents[2]
SCENARIO = textwrap.dedent("""\
    name: u
    latency: {model: linear, prefill_ms_per_token: 0.1, decode_ms_per_token: 0.1}
    cluster: {nodes: [{name: a, kv_blocks: 64}]}
    workload: {requests: 3, groups: [{question_tokens: 16, output_tokens: 4}]}
""")
BOUND_S = 30  # a hang bound, not a speed claim: each call here returns in well under a second


@pytest.fixture
def scenario(tmp_path) -> Path:
    s = tmp_path / "s.yaml"
    s.write_text(SCENARIO)
    return s


def refused(argv: list[str], needle: str) -> str:
    out = call([str(a) for a in argv], BOUND_S)
    assert out.kind == "refused", out.describe()
    assert needle in out.err, out.err
    return out.err


def test_sweep_refuses_a_results_path_that_holds_something_else(tmp_path, scenario):
    notes, json_doc = tmp_path / "notes.txt", tmp_path / "doc.jsonl"
    notes.write_text("my notes\nsecond line\n")
    json_doc.write_text('{"not": "a sweep line"}\n')
    for target in (notes, json_doc, scenario):
        before = target.read_bytes()
        err = refused(["sweep", scenario, "--out", target, "--workers", "1"], str(target))
        assert len(err.strip().splitlines()) == 1 and target.read_bytes() == before
    assert not (tmp_path / "notes.journal.jsonl").exists()


def test_a_torn_sweep_line_at_the_end_is_still_resumed(tmp_path, scenario):
    out = tmp_path / "r.jsonl"
    assert call(["sweep", str(scenario), "--out", str(out), "--workers", "1"], BOUND_S).kind == "ok"
    line = out.read_text()
    out.write_text(line + line[: len(line) // 2])  # a kill mid-write
    assert call(["sweep", str(scenario), "--out", str(out), "--workers", "1"], BOUND_S).kind == "ok"
    assert out.read_text() == line


def test_the_journal_never_appends_through_a_symlink(tmp_path, scenario):
    target = tmp_path / "precious.txt"
    target.write_text("mine\n")
    (tmp_path / "r.journal.jsonl").symlink_to(target)
    refused(["sweep", scenario, "--out", tmp_path / "r.jsonl", "--workers", "1"], "symbolic link")
    assert target.read_text() == "mine\n" and not (tmp_path / "r.jsonl").exists()


@pytest.mark.parametrize("command", [
    ["run", "{s}", "--json", "{s}"],
    ["compare", "{s}", "--json", "{s}"],
    ["record", "{s}", "--out", "{link}"],
    ["sweep", "{s}", "--out", "{s}"],
])
def test_an_output_that_is_an_input_is_refused(tmp_path, scenario, command):
    link = tmp_path / "hard.svg"
    os.link(scenario, link)  # another name for the same file: still the input
    argv = [a.format(s=scenario, link=link) for a in command]
    refused(argv, "it is an input of this command")
    assert scenario.read_text() == SCENARIO


def test_plot_refuses_to_write_its_input(tmp_path, scenario):
    results = tmp_path / "r.jsonl"
    assert call(["sweep", str(scenario), "--out", str(results), "--workers", "1"], BOUND_S).kind == "ok"
    before = results.read_bytes()
    refused(["plot", results, "--x", "seed", "--y", "token_hit_rate", "--out", results], "an input of this command")
    assert results.read_bytes() == before


def special_files(tmp_path: Path) -> dict[str, Path]:
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    link = tmp_path / "zero-link"
    link.symlink_to("/dev/zero")
    return {"/dev/zero": Path("/dev/zero"), "/dev/full": Path("/dev/full"), "a fifo": fifo, "a link to /dev/zero": link}


def test_plot_and_sweep_refuse_special_files_unread(tmp_path, scenario):
    for path in special_files(tmp_path).values():
        refused(["plot", path, "--x", "seed", "--y", "ttft"], "not a regular file")
        refused(["sweep", scenario, "--out", path, "--workers", "1"], "not a regular file")


@pytest.mark.parametrize("where", ["dir", "missing"])
def test_json_into_a_directory_or_missing_directory_is_refused_before_the_run(tmp_path, scenario, monkeypatch, where):
    import kvtui.cli.common as common

    def no_run(*a, **k):
        raise AssertionError("the run started before the output path was checked")

    monkeypatch.setattr(common, "run_once", no_run)
    target = tmp_path if where == "dir" else tmp_path / "nowhere" / "r.json"
    for command in ("run", "compare"):
        refused([command, scenario, "--json", target], str(target))


def damaged_wal(tmp_path: Path, scenario: Path, name: str, make) -> Path:
    wal = tmp_path / name
    assert call(["run", str(scenario), "--set", f"metadata.dir={wal}"], BOUND_S).kind == "ok"
    make(wal)
    return wal


def _replace(path: Path, make) -> None:
    path.unlink(missing_ok=True)
    make(path)


WAL_DAMAGE = {
    "CURRENT -> /dev/zero": ("CURRENT", lambda p: p.symlink_to("/dev/zero"), "symbolic link"),
    "CURRENT a fifo": ("CURRENT", os.mkfifo, "not a regular file"),
    "LOCK a fifo": ("LOCK", os.mkfifo, "not a regular file"),
    "LOCK -> a user's file": ("LOCK", lambda p: p.symlink_to(p.parent.parent / "precious.txt"), "symbolic link"),
}


@pytest.mark.parametrize("case", WAL_DAMAGE)
def test_a_wal_directory_with_special_files_is_refused_with_the_reason(tmp_path, scenario, case):
    (tmp_path / "precious.txt").write_text("mine\n")
    name, make, needle = WAL_DAMAGE[case]
    wal = damaged_wal(tmp_path, scenario, "wal", lambda w: _replace(w / name, make))
    for command in ("inspect", "verify", "dump"):
        refused(["wal", command, wal], needle)
    refused(["run", scenario, "--set", f"metadata.dir={wal}", "--set", "metadata.resume=true"], needle)  # continue it: only then is it opened
    assert (tmp_path / "precious.txt").read_text() == "mine\n"


def test_huge_seed_counts_and_odd_digits_are_one_line_of_bad_input(scenario, tmp_path):
    out = tmp_path / "r.jsonl"
    err = refused(["sweep", scenario, "--seeds", "1000000000", "--out", out], "1,000,000,000 runs")
    assert len(err.strip().splitlines()) == 1
    refused(["sweep", scenario, "--seed", str(2**63 - 1), "--seeds", "2", "--out", out], "largest seed")
    err = refused(["sweep", scenario, "--set", "cluster.nodes.\u00b2.kv_blocks=8", "--out", out], "item number")
    assert len(err.strip().splitlines()) == 1
    refused(["run", scenario, "--set", "cluster.nodes.\u00b2.kv_blocks=8"], "item number")
    assert not out.exists()


def _children(pid: int) -> set[int]:
    """Every descendant of `pid`, from /proc (Linux)."""
    parents: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = Path(f"/proc/{entry}/stat").read_text()
            except OSError:
                continue
            parents[int(entry)] = int(stat.rsplit(")", 1)[1].split()[1])
    found, frontier = set(), {pid}
    while frontier:
        frontier = {p for p, pp in parents.items() if pp in frontier} - found
        found |= frontier
    return found


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads the process tree from /proc")
@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGTERM])
def test_no_worker_outlives_a_killed_sweep(tmp_path, sig):
    """Kill the driver of a 2-worker sweep while its workers run; every process it started ends."""
    pressure = ROOT / "scenarios" / "pressure.yaml"
    args = [sys.executable, "-m", "kvtui", "sweep", str(pressure), "--set", "workload.duration_s=60",
            "--grid", "workload.arrival.rate=1,2,3", "--workers", "2", "--out", str(tmp_path / "k.jsonl")]
    proc = subprocess.Popen(args, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 60
    started: set[int] = set()
    while time.monotonic() < deadline and proc.poll() is None and len(started) < 4:
        started |= _children(proc.pid)  # resource tracker, forkserver and its two workers
        time.sleep(0.05)
    assert len(started) >= 4, f"the workers did not start: {started}"
    proc.send_signal(sig)
    proc.wait()
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and any(_alive(p) for p in started):
        time.sleep(0.1)
    left = [p for p in started if _alive(p)]
    for p in left:  # do not leave them to the next test either
        os.kill(p, signal.SIGKILL)
    assert left == [], f"{len(left)} processes outlived the killed sweep"


def test_the_result_counts_the_turns_a_rejection_cut(tmp_path):
    """Every first turn is too large for the node: each 3-turn session sends one request and the
    result document counts its two other turns as cut (schema version 3)."""
    s = tmp_path / "cut.yaml"
    s.write_text(SCENARIO.replace("kv_blocks: 64}", "kv_blocks: 4}").replace(
        "question_tokens: 16, output_tokens: 4}", "question_tokens: 500, output_tokens: 4, turns: 3}"))
    out = tmp_path / "r.json"
    assert call(["run", str(s), "--json", str(out)], BOUND_S).kind == "ok"
    r = json.loads(out.read_text())["requests"]
    assert r["arrived"] == r["rejected"] == 3 and r["turns_cut"] == 6


# -- the campaign: special files, symlinks and fifos against every command that takes a path ------

def _targets(tmp_path: Path, i: int) -> dict[str, Path]:
    """One of each kind of path a user might hand over, fresh for draw `i`; the precious files
    are the user's and must come out byte for byte as they went in."""
    d = tmp_path / f"t{i}"
    d.mkdir()
    (d / "precious.txt").write_text(f"mine {i}\n")
    (d / "fifo").parent.mkdir(exist_ok=True)
    os.mkfifo(d / "fifo")
    (d / "link-precious").symlink_to(d / "precious.txt")
    (d / "link-zero").symlink_to("/dev/zero")
    (d / "link-fifo").symlink_to(d / "fifo")
    (d / "dangling").symlink_to(d / "nowhere.json")
    return {
        "precious": d / "precious.txt", "fifo": d / "fifo", "link-precious": d / "link-precious",
        "link-zero": d / "link-zero", "link-fifo": d / "link-fifo", "dangling": d / "dangling",
        "/dev/zero": Path("/dev/zero"), "/dev/full": Path("/dev/full"), "directory": d,
        "missing-dir": d / "no" / "such.json",
    }


def _commands(scenario: Path, path: Path, results: Path) -> list[list[str]]:
    """Every place a command reads or writes a path the user names, with `path` there."""
    p = str(path)
    return [
        ["run", str(scenario), "--json", p], ["compare", str(scenario), "--json", p],
        ["record", str(scenario), "--out", p], ["sweep", str(scenario), "--out", p, "--workers", "1"],
        ["plot", p, "--x", "seed", "--y", "token_hit_rate"],
        ["plot", str(results), "--x", "seed", "--y", "token_hit_rate", "--out", p + ".svg" if path.name != "precious.txt" else p],
        ["run", p], ["validate", p], ["trace", "stats", p, "--format", "mooncake"],
        ["wal", "inspect", p], ["wal", "dump", p], ["run", str(scenario), "--set", f"metadata.dir={p}"],
    ]


def p_out(argv: list[str]) -> Path | None:
    """The output path a command was given (the user asked for that regular file to be written)."""
    for flag in ("--json", "--out"):
        if flag in argv:
            return Path(argv[argv.index(flag) + 1])
    return None


def test_campaign_special_files_symlinks_and_fifos(tmp_path, scenario):
    """KVTUI_FUZZ_SCALE draws of (command, kind of path): never a hang, never a traceback, never
    a user's file changed. Scale 1 runs every command against every kind once."""
    from fuzz_support import SCALE, Tally

    import random

    results = tmp_path / "results.jsonl"
    assert call(["sweep", str(scenario), "--out", str(results), "--workers", "1"], BOUND_S).kind == "ok"
    kinds = list(_targets(tmp_path, 0))
    pairs = [(c, k) for c in range(len(_commands(scenario, tmp_path, results))) for k in kinds]
    draws = pairs if SCALE == 1 else random.Random(SCALE).choices(pairs, k=len(pairs) * SCALE)
    tally = Tally("campaign_special_files")
    failures = []
    for i, (c, kind) in enumerate(draws, start=1):
        targets = _targets(tmp_path, i)
        before = {p: p.read_bytes() for p in (targets["precious"], scenario, results)}
        argv = _commands(scenario, targets[kind], results)[c]
        out = call(argv, BOUND_S)
        tally.add(out.kind)
        asked = kind == "precious" and argv[0] in ("run", "compare", "record", "plot") and p_out(argv) == targets["precious"]
        changed = [str(p) for p, data in before.items() if p.read_bytes() != data and not (asked and p == targets["precious"])]
        if out.kind in ("hang", "traceback") or changed or not targets["fifo"].is_fifo():
            failures.append(f"{argv}: {out.kind} changed={changed}\n{out.err[-400:]}")
    tally.write()
    print(f"campaign: {len(draws)} calls, {dict(tally.counts)}")
    assert failures == [], "\n".join(failures[:5])
