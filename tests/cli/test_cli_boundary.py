"""The one error boundary of `kvtui` (issue 10): every exception class -> a message and 0/1/2."""

from __future__ import annotations

import errno
import os
import subprocess
import sys
import textwrap

import pytest

from kvtui.cli import main
from kvtui.cli.boundary import classify
from kvtui.errors import InputError
from kvtui.store.wal import LogFailed, LogLocked

SCENARIO = textwrap.dedent("""\
    name: b
    latency: {model: linear, prefill_ms_per_token: 0.1, decode_ms_per_token: 0.1}
    cluster: {nodes: [{name: a, kv_blocks: 64}]}
    workload: {requests: 3, groups: [{question_tokens: 16, output_tokens: 4}]}
""")


@pytest.mark.parametrize("error, code, needle", [
    (InputError.one("f.yaml", 3, "bad"), 2, "f.yaml:3: bad"),
    (PermissionError(errno.EACCES, "Permission denied", "/x/y"), 2, "/x/y: Permission denied"),
    (IsADirectoryError(errno.EISDIR, "Is a directory", "/d"), 2, "/d: Is a directory"),
    (LogLocked("/w: the log is in use"), 2, "/w: the log is in use"),
    (LogFailed("/w: write failed"), 2, "/w: write failed"),
    (MemoryError(), 2, "out of memory"),
    (RecursionError("maximum recursion depth exceeded"), 1, "internal error: RecursionError"),
    (ValueError("boom"), 1, "this is a bug in kvtui"),
])
def test_every_class_maps_to_one_message_and_a_code(error, code, needle):
    got, message = classify(error)
    assert got == code and needle in message
    assert "\n" not in message


def test_a_bug_exits_1_with_a_hint_and_debug_shows_the_traceback(monkeypatch, capsys):
    import kvtui.cli.validate as v

    def broken(argv):
        raise ZeroDivisionError("planted")

    monkeypatch.setattr(v, "schema_main", broken)
    assert main(["schema"]) == 1
    err = capsys.readouterr().err
    assert "internal error: ZeroDivisionError: planted" in err and "Traceback" not in err
    monkeypatch.setenv("KVTUI_DEBUG", "1")
    assert main(["schema"]) == 1
    assert "Traceback (most recent call last)" in capsys.readouterr().err


def test_json_output_refuses_special_files_and_writes_atomically(tmp_path, capsys):
    s = tmp_path / "s.yaml"
    s.write_text(SCENARIO)
    fifo, link = tmp_path / "fifo", tmp_path / "link"
    os.mkfifo(fifo)
    link.symlink_to(tmp_path / "target.json")
    for target, kind in ((fifo, "a fifo"), (link, "a symbolic link"), (tmp_path, "a directory")):
        assert main(["run", str(s), "--json", str(target)]) == 2
        assert f"it is {kind}, not a regular file" in capsys.readouterr().err
    assert fifo.is_fifo() and link.is_symlink() and not (tmp_path / "target.json").exists()
    out = tmp_path / "r.json"
    out.write_text("old")
    os.chmod(out, 0o600)
    assert main(["run", str(s), "--json", str(out)]) == 0
    assert out.read_text().startswith("{") and (os.stat(out).st_mode & 0o777) == 0o600
    assert [p.name for p in tmp_path.iterdir() if p.name.endswith(".tmp")] == []


@pytest.mark.parametrize("seed, ok", [("0", True), (str(2**63 - 1), True), ("-1", False), (str(2**63), False), ("x", False)])
def test_seed_is_range_checked(tmp_path, capsys, seed, ok):
    s = tmp_path / "s.yaml"
    s.write_text(SCENARIO)
    assert main(["run", str(s), "--seed", seed]) == (0 if ok else 2)
    if not ok:
        assert "argument --seed" in capsys.readouterr().err


def test_a_held_log_names_its_holder(tmp_path):
    wal = tmp_path / "wal"
    s = tmp_path / "s.yaml"
    s.write_text(SCENARIO + f"metadata: {{dir: {wal}}}\n")
    holder = subprocess.Popen(
        [sys.executable, "-c", "import sys, time; from kvtui.store import MetadataStore; "
         f"s = MetadataStore.open({str(wal)!r}); print('held', flush=True); time.sleep(60)"],
        stdout=subprocess.PIPE, text=True, env={**os.environ})
    try:
        assert holder.stdout.readline().strip() == "held"
        p = subprocess.run([sys.executable, "-m", "kvtui", "run", str(s), "--set", "metadata.resume=true"],
                           capture_output=True, text=True)
        assert p.returncode == 2, p.stderr
        assert f"the log is in use: process {holder.pid}" in p.stderr and "Traceback" not in p.stderr
        assert str(wal) in p.stderr
    finally:
        holder.kill()
        holder.wait()


def test_a_file_where_the_log_directory_should_be(tmp_path, capsys):
    f = tmp_path / "afile"
    f.write_text("x")
    s = tmp_path / "s.yaml"
    s.write_text(SCENARIO + f"metadata: {{dir: {f}}}\n")
    assert main(["run", str(s)]) == 2
    assert f"{f}: exists and is not a directory" in capsys.readouterr().err
