"""`kvtui wal inspect|verify|dump`: output, exit codes on every planted fault, no tracebacks."""

from __future__ import annotations

import json
import os
import random
import shutil

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kvtui.errors import InputError
from kvtui.store import MetadataStore
from kvtui.store import segment as sg
from kvtui.cli.wal import main as wal_main
from storetest_support import (History, Model, build_log, clone, flip_bit, frame_offsets,
                               segments, snapshots)


def run(argv) -> int:
    try:
        return wal_main(argv)
    except InputError:
        return 2


@pytest.fixture(scope="module")
def wal(tmp_path_factory):
    d = str(tmp_path_factory.mktemp("cmd") / "wal")
    h = History()
    s = MetadataStore.open(d, snapshot_every=0, segment_bytes=4096)
    build_log(s, random.Random(8), 40, h, snapshot_at=(15,))
    digest = s.digest()
    s.close()
    return d, h, digest


def test_inspect_text_and_json(wal, capsys):
    d, h, digest = wal
    assert wal_main(["inspect", d]) == 0
    out = capsys.readouterr().out
    for name in segments(d) + snapshots(d):
        assert name in out
    assert f"digest {digest}" in out and "health         sound" in out
    assert wal_main(["inspect", d, "--json"]) == 0
    info = json.loads(capsys.readouterr().out)
    assert info["sound"] and info["last_seq"] == 40 and info["state"]["digest"] == digest
    assert info["frames"] == 40 and sum(g["frames"] for g in info["segments"]) == 40
    assert [s["used"] for s in info["snapshots"]] == [True]


def test_verify_sound(wal, capsys):
    d, h, digest = wal
    assert wal_main(["verify", d]) == 0
    assert capsys.readouterr().out.startswith("sound: ")


def test_dump_replays_to_the_same_state(wal, capsys):
    """The JSON lines are complete: replaying them in a model gives the store's digest."""
    d, h, digest = wal
    assert wal_main(["dump", d]) == 0
    lines = [json.loads(x) for x in capsys.readouterr().out.splitlines()]
    m = Model()
    seqs = []
    for r in lines:
        seqs.append(r["seq"])
        op = r["op"]
        if op == "NODE_REGISTER":
            m.apply(("register", r["node"], r["kv_blocks"]))
        elif op == "NODE_STATE":
            m.apply(("state", r["node"], r["up"]))
        elif op == "BLOCKS_STORED":
            m.apply(("stored", r["node"], tuple(r["keys"]), r["group"]))
        elif op == "BLOCKS_EVICTED":
            m.apply(("evicted", r["node"], tuple(r["keys"])))
        elif op == "NODE_CLEARED":
            m.apply(("cleared", r["node"]))
        elif op == "SESSION_ROUTE":
            m.apply(("route", r["session"], r["node"]))
        else:
            assert op == "DEFINE"
    assert seqs == sorted(seqs) and seqs[0] == 1 and seqs[-1] == 40
    assert m.digest() == digest


def test_verify_notices_a_running_writer(tmp_path, capsys):
    s = MetadataStore.open(tmp_path / "w")
    s.register_node("a", 1)
    s.flush()
    assert wal_main(["verify", str(tmp_path / "w")]) == 0
    assert "a writer holds the lock" in capsys.readouterr().out
    s.close()


def _plant(d: str, fault: str) -> None:
    segs, snaps = segments(d), snapshots(d)
    last = os.path.join(d, segs[-1])
    if fault == "torn_tail":
        with open(last, "ab") as f:
            f.write(b"\x05" * 11)
    elif fault == "bit_flip":
        fr = frame_offsets(last)
        flip_bit(last, fr[0][0] + 19, 1)
    elif fault == "bad_segment_header":
        flip_bit(os.path.join(d, segs[1]), 20, 0)
    elif fault == "missing_middle_segment":
        os.unlink(os.path.join(d, segs[2]))
    elif fault == "missing_last_segment":
        os.unlink(last)
    elif fault == "duplicate_segment":
        shutil.copy(os.path.join(d, segs[0]), os.path.join(d, sg.segment_name(len(segs))))
    elif fault == "reordered_segments":
        a, b = os.path.join(d, segs[1]), os.path.join(d, segs[2])
        os.rename(a, a + ".x")
        os.rename(b, a)
        os.rename(a + ".x", b)
    elif fault == "corrupt_snapshot":
        flip_bit(os.path.join(d, snaps[-1]), 60, 4)
    elif fault == "bad_current":
        flip_bit(os.path.join(d, sg.CURRENT), 3, 0)
    elif fault == "missing_current":
        os.unlink(os.path.join(d, sg.CURRENT))
    elif fault == "duplicated_frame":
        fr = frame_offsets(last)
        data = open(last, "rb").read()
        with open(last, "ab") as f:
            f.write(data[fr[-1][0]:fr[-1][1]])
    else:
        raise AssertionError(fault)


FAULTS = ["torn_tail", "bit_flip", "bad_segment_header", "missing_middle_segment",
          "missing_last_segment", "duplicate_segment", "reordered_segments", "corrupt_snapshot",
          "bad_current", "missing_current", "duplicated_frame"]


@pytest.mark.parametrize("fault", FAULTS)
def test_every_planted_fault_fails_verify_with_exit_2(wal, tmp_path, fault, capsys):
    d = clone(wal[0], str(tmp_path / "w"))
    _plant(d, fault)
    with pytest.raises(InputError) as e:
        wal_main(["verify", d])
    out = capsys.readouterr().out
    assert out.startswith("DAMAGED")
    problems = e.value.problems
    assert problems and all(isinstance(p[0], str) and isinstance(p[2], str) for p in problems)
    suspected = "SUSPECTED CORRUPTION" in out
    assert suspected == (fault != "torn_tail")
    # inspect and dump say the same, after printing what they can
    assert run(["inspect", d]) == 2
    assert "DAMAGED" in capsys.readouterr().out
    assert run(["dump", d]) == 2
    capsys.readouterr()
    # opening the store repairs it; then verify is happy again
    MetadataStore.open(d).close()
    assert run(["verify", d]) == 0


@pytest.mark.parametrize("what", ["missing", "file", "empty", "junk"])
def test_not_a_wal_directory_is_bad_input(tmp_path, what):
    p = tmp_path / "x"
    if what == "file":
        p.write_text("hello")
    elif what == "empty":
        p.mkdir()
    elif what == "junk":
        p.mkdir()
        (p / "notes.txt").write_text("nothing to see")
    for cmd in ("inspect", "verify", "dump"):
        with pytest.raises(InputError) as e:
            wal_main([cmd, str(p)])
        assert str(p) in e.value.render()


def test_a_file_is_named_as_a_file_not_a_missing_directory(tmp_path):
    """`kvtui wal dump good.yaml` said "no such directory" for a file that was plainly there."""
    p = tmp_path / "good.yaml"
    p.write_text("seed: 1\n")
    for cmd in ("inspect", "verify", "dump"):
        with pytest.raises(InputError) as e:
            wal_main([cmd, str(p)])
        assert e.value.render() == f"{p}: is a file, not a WAL directory"
    with pytest.raises(InputError) as e:
        wal_main(["dump", str(tmp_path / "gone")])
    assert e.value.render().endswith("gone: no such directory")


def test_usage_errors_exit_2():
    with pytest.raises(SystemExit) as e:
        wal_main([])
    assert e.value.code == 2
    with pytest.raises(SystemExit) as e:
        wal_main(["frobnicate", "."])
    assert e.value.code == 2


GARBAGE_NAMES = ["wal-00000000.log", "wal-00000001.log", "wal-00000007.log", "CURRENT",
                 "snap-0000000000000003.snap", "snap-0000000000000009.snap"]


@settings(max_examples=40, deadline=None, database=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.tuples(st.sampled_from(GARBAGE_NAMES), st.binary(max_size=300)),
                min_size=1, max_size=5))
def test_garbage_never_causes_a_traceback(tmp_path, files):
    d = tmp_path / "g"
    shutil.rmtree(d, ignore_errors=True)
    d.mkdir()
    for name, blob in files:
        (d / name).write_bytes(blob)
    for cmd in ("inspect", "verify", "dump"):
        try:
            wal_main([cmd, str(d)])
        except InputError:
            pass
    # and the store itself opens it (point in time), setting the garbage aside
    MetadataStore.open(d).close()
    assert run(["verify", str(d)]) == 0
