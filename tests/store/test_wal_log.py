"""The Log on its own: record batches, frames, policies, rotation, snapshots, the lock."""

from __future__ import annotations

import os

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kvtui.store import Log, LogLocked
from storetest_support import SCALE, segments, snapshots


def replay(d, **kw):
    got = []
    log = Log.open(d, apply_record=lambda seq, r: got.append((seq, bytes(r))), **kw)
    return log, got


def test_a_flush_makes_one_frame_of_the_batch(tmp_path):
    d = str(tmp_path / "w")
    log = Log.open(d)
    for r in (b"a", b"bb", b""):
        log.add(r)
    assert log.flush() == 1
    log.add(b"c")
    log.flush()
    assert log.stats()["frames"] == 2 and log.stats()["records"] == 4
    log.close()
    log, got = replay(d)
    assert got == [(1, b"a"), (1, b"bb"), (1, b""), (2, b"c")]
    assert log.report.records_replayed == 4 and log.report.frames_replayed == 2
    log.close()


def test_always_makes_every_record_its_own_durable_frame(tmp_path):
    d = str(tmp_path / "w")
    log = Log.open(d, fsync="always")
    log.add(b"x")
    log.add(b"y")
    assert log.acked_seq == 2 and log.fsyncs == 2
    log.abandon()  # nothing was pending
    log, got = replay(d)
    assert [r for _, r in got] == [b"x", b"y"]
    log.close()


def test_abandon_drops_what_was_not_flushed(tmp_path):
    d = str(tmp_path / "w")
    log = Log.open(d)
    log.add(b"kept")
    log.flush()
    log.add(b"lost")
    log.append(5, b"lost too")
    log.abandon()
    log, got = replay(d)
    assert got == [(1, b"kept")]
    log.close()


def test_records_and_frames_keep_their_order(tmp_path):
    d = str(tmp_path / "w")
    log = Log.open(d)
    log.add(b"r1")
    log.append(3, b"F")
    log.add(b"r2")
    log.close()
    frames = []
    log = Log.open(d, apply=lambda seq, t, p: frames.append((seq, t, bytes(p))),
                   apply_record=lambda seq, r: frames.append((seq, "rec", bytes(r))))
    assert frames == [(1, "rec", b"r1"), (2, 3, b"F"), (3, "rec", b"r2")]
    log.close()


def test_batch_limits_flush_automatically(tmp_path):
    d = str(tmp_path / "w")
    log = Log.open(d, batch_frames=3)
    for i in range(7):
        log.add(bytes([i]))
    assert log.acked_seq == 2 and log.records_written == 6
    log.abandon()
    log, got = replay(d)
    assert len(got) == 6
    log.close()


def test_rotation_snapshots_and_compaction(tmp_path):
    d = str(tmp_path / "w")
    log = Log.open(d, segment_bytes=4096)
    for i in range(300):
        log.add(i.to_bytes(4, "little") * 10)
        log.flush()
        if i in (100, 200, 250):
            log.write_snapshot(b"state@%d" % log.last_seq)
    log.close()
    assert len(snapshots(d)) == 2
    # the segments kept start no later than the older kept snapshot + 1
    loaded = []
    log, got = replay(d, load_snapshot=lambda p: loaded.append(None if p is None else bytes(p)))
    assert loaded == [b"state@251"] and [s for s, _ in got] == list(range(252, 301))
    log.close()
    assert len(segments(d)) < 300 * 57 // 4096


def test_lock_is_exclusive_and_released_on_close(tmp_path):
    d = str(tmp_path / "w")
    log = Log.open(d)
    with pytest.raises(LogLocked):
        Log.open(d)
    log.close()
    Log.open(d).close()


def test_bad_configuration():
    with pytest.raises(ValueError):
        Log.open("/tmp/never-created-kvtui", fsync="fast")
    with pytest.raises(ValueError):
        Log.open("/tmp/never-created-kvtui", segment_bytes=100)
    assert not os.path.exists("/tmp/never-created-kvtui")


@settings(max_examples=30 * SCALE, deadline=None, database=None)
@given(st.lists(st.one_of(st.binary(max_size=40), st.sampled_from(["flush", "crash"])),
                max_size=60),
       st.sampled_from(["always", "batch", "never"]))
def test_replay_is_the_acknowledged_prefix(tmp_path_factory, script, policy):
    """P1 + P2 at the Log level, for any interleaving of adds, flushes and crashes."""
    d = str(tmp_path_factory.mktemp("p"))
    log = Log.open(d, fsync=policy, segment_bytes=4096)
    acked: list[bytes] = []
    pending: list[bytes] = []
    for step in script:
        if step == "flush":
            log.flush()
            acked += pending
            pending = []
        elif step == "crash":
            log.abandon()
            pending = []
            log, got = replay(d, fsync=policy, segment_bytes=4096)
            assert [r for _, r in got] == acked
        else:
            log.add(step)
            if policy == "always":
                acked.append(step)
            else:
                pending.append(step)
    log.close()
    log, got = replay(d)
    assert [r for _, r in got] == acked + pending
    log.close()
