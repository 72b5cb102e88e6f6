"""A crash — or an I/O error — at every file-system operation of a workload.

The workload appends frames, rotates segments (4 KiB segments) and takes snapshots (with
compaction), all through `FaultFS`. For every k, the process "dies" before operation k; then
either only the process died (the kernel keeps what was written) or the machine lost power
(`FaultFS.power_loss`: back to what was fsynced, torn unsynced tails). The store is reopened on
the real file system and must satisfy:

P1 every frame acknowledged before the crash is there (process kill: all policies; power
   loss: `always` and `batch` — `never` promises nothing there);
P2/P3 the state is the model's state after some prefix of the frames;
P4 reopening again changes nothing; and a recovery that is itself interrupted at every one of
   its own operations ends in the same state as an uninterrupted one;
P6 after an injected I/O error (disk full, failed write, failed fsync, failed rename...) the
   writer raises LogFailed, refuses everything after, and issues no further file operation.
"""

from __future__ import annotations

import errno
import os
import random
import shutil

import pytest

from kvtui.store import LogFailed, MetadataStore
from kvtui.store.faultfs import FaultFS, SimulatedCrash
from storetest_support import SCALE, History, Model, clone, do, flip_bit, frame_offsets, segments

SNAPSHOT_EVERY = 7  # frames


def batches_for(policy: str, seed: int = 7, n: int = 18):
    rng = random.Random(seed)
    m = Model()
    out = []
    for _ in range(n):
        batch = []
        for _ in range(rng.randint(2, 5)):
            from storetest_support import random_op
            op = random_op(rng, m)
            m.apply(op)
            batch.append(op)
        out.append(batch)
    if policy == "always":  # every op is its own frame
        out = [[op] for b in out for op in b][: 2 * n]
    return out


def history_for(batches) -> History:
    h = History()
    for b in batches:
        h.add_frame(b)
    return h


class Acks:
    frames = 0


def workload(d: str, fs, policy: str, batches, acks: Acks, opened: list | None = None) -> MetadataStore:
    """Apply `batches` with a flush after each; `opened` receives the store once it exists, so a
    caller can inspect it after an injected failure interrupts the run."""
    s = MetadataStore.open(d, fsync=policy, snapshot_every=0, segment_bytes=4096,
                           batch_records=1 << 20, fs=fs)
    if opened is not None:
        opened.append(s)
    for i, batch in enumerate(batches):
        for op in batch:
            do(s, op)
        s.flush()
        acks.frames = i + 1
        if (i + 1) % SNAPSHOT_EVERY == 0:
            s.snapshot()
    s.close()
    return s


def total_ops(policy: str, batches) -> int:
    d = os.path.join(os.environ.get("TMPDIR", "/tmp"), f"kvtui-count-{os.getpid()}")
    shutil.rmtree(d, ignore_errors=True)
    fs = FaultFS(d)
    workload(d, fs, policy, batches, Acks())
    shutil.rmtree(d)
    return fs.ops


def crash_points(n: int) -> list[int]:
    """Every operation of the workload (the workload grows with KVTUI_FAULT_SCALE instead)."""
    return list(range(n + 1))


@pytest.mark.parametrize("policy", ["always", "batch", "never"])
@pytest.mark.parametrize("power", [False, True], ids=["process-kill", "power-loss"])
@pytest.mark.parametrize("seed", range(7, 7 + SCALE))
def test_crash_at_every_file_operation(tmp_path, policy, power, seed):
    batches = batches_for(policy, seed=seed)
    h = history_for(batches)
    n = total_ops(policy, batches)
    rng = random.Random(n)
    kinds_seen = set()
    for k in crash_points(n):
        d = str(tmp_path / f"k{k}")
        fs = FaultFS(d, crash_at=k)
        acks = Acks()
        try:
            workload(d, fs, policy, batches, acks)
            crashed = False
        except SimulatedCrash:
            crashed = True
        if k < n:
            assert crashed, f"op {k} of {n} did not crash"
            kinds_seen.add(fs.trace[-1][0] if fs.trace else None)
        if power:
            fs.power_loss(rng)
        else:
            fs.release()
        if not os.path.isdir(d):
            continue  # died before the directory existed
        s = MetadataStore.open(d)
        rep = s.last_report
        got = h.seq_of(s.digest())
        assert got is not None, f"k={k}: state is not a prefix (P2/P3): {rep.damage}"
        if not (power and policy == "never"):
            assert got >= acks.frames, f"k={k}: acknowledged frame lost (P1): {got} < {acks.frames}"
            assert not rep.suspected_corruption, f"k={k}: {rep.damage}"
            assert all(x.kind == "torn_tail" for x in rep.damage), rep.damage
        digest = s.digest()
        s.close()
        again = MetadataStore.open(d)  # P4
        assert again.digest() == digest
        # nothing new is found; damage before the snapshot in use (possible only for `never`
        # after power loss) stays reported until compaction removes it
        first = {(x.file, x.kind) for x in rep.damage}
        assert all(x.covered and (x.file, x.kind) in first for x in again.last_report.damage)
        assert again.last_report.bytes_truncated == 0
        again.close()
        shutil.rmtree(d)
    # the campaign did pass through rotations and snapshots
    assert {"rename", "fsync_dir", "fsync", "write", "unlink"} <= kinds_seen | {"unlink"}


def test_crash_inside_snapshot_and_rotation_sequences_is_covered(tmp_path):
    """The workload's op trace really contains both recipes, so the campaign above crashed
    after each of their steps."""
    batches = batches_for("batch")
    d = str(tmp_path / "w")
    fs = FaultFS(d)
    workload(d, fs, "batch", batches, Acks())
    trace = [(op, os.path.basename(p.split(" -> ")[-1])) for op, p in fs.trace]
    snap = [i for i, (op, name) in enumerate(trace) if op == "rename" and name.startswith("snap-")]
    rot = [i for i, (op, name) in enumerate(trace) if op == "rename" and name.startswith("wal-")]
    assert len(snap) == 2 and len(rot) >= 3
    assert any(op == "unlink" and name.startswith("wal-") for op, name in trace)  # compaction


# -- interrupted recovery ----------------------------------------------------------------------


def _damaged_log(tmp_path) -> tuple[str, str]:
    """A log with a corrupt newest snapshot, a bad frame mid-segment, a torn tail, a temp file."""
    d = str(tmp_path / "damaged")
    s = MetadataStore.open(d, snapshot_every=0, segment_bytes=4096)
    rng = random.Random(4)
    m = Model()
    from storetest_support import random_op
    for i in range(60):
        for _ in range(rng.randint(1, 6)):
            op = random_op(rng, m)
            m.apply(op)
            do(s, op)
        s.flush()
        if i in (20, 40):
            s.snapshot()
    s.close()
    segs = segments(d)
    snaps = sorted(n for n in os.listdir(d) if n.endswith(".snap"))
    flip_bit(os.path.join(d, snaps[-1]), 70, 2)
    mid = frame_offsets(os.path.join(d, segs[-2]))
    flip_bit(os.path.join(d, segs[-2]), mid[len(mid) // 2][0] + 20, 5)
    with open(os.path.join(d, segs[-1]), "ab") as f:
        f.write(b"\x07" * 30)
    with open(os.path.join(d, "CURRENT.tmp"), "wb") as f:
        f.write(b"junk")
    ref = clone(d, str(tmp_path / "ref"))
    s = MetadataStore.open(ref)
    assert s.last_report.suspected_corruption
    digest = s.digest()
    s.close()
    return d, digest


@pytest.mark.parametrize("power", [False, True], ids=["process-kill", "power-loss"])
def test_recovery_interrupted_at_every_operation_is_idempotent(tmp_path, power):
    src, ref_digest = _damaged_log(tmp_path)
    rng = random.Random(1)
    ref_segments = segments(str(tmp_path / "ref"))
    k = 0
    while True:
        d = clone(src, str(tmp_path / "w"))
        fs = FaultFS(d, crash_at=k)
        try:
            MetadataStore.open(d, fs=fs).close()
            done = True
        except SimulatedCrash:
            done = False
        fs.power_loss(rng) if power else fs.release()
        s = MetadataStore.open(d)
        assert s.digest() == ref_digest, f"interrupted at op {k}: {fs.trace[-1:]}"
        s.close()
        again = MetadataStore.open(d)
        assert again.last_report.sound and again.digest() == ref_digest
        assert segments(d) == ref_segments
        again.close()
        if done:
            break
        k += 1
    assert k > 10  # recovery really did file operations to interrupt


# -- I/O errors: fail-stop (P6) ----------------------------------------------------------------


def _after_failure_everything_refuses(s: MetadataStore, fs: FaultFS) -> None:
    n = fs.ops
    for call in (lambda: s.route_session("late", "node-a"), s.flush, s.snapshot,
                 lambda: s.blocks_stored("node-a", [1])):
        with pytest.raises(LogFailed):
            call()
    assert fs.ops == n, f"the writer kept going after the error: {fs.trace[n:]}"


@pytest.mark.parametrize("policy", ["always", "batch"])
@pytest.mark.parametrize("seed", range(3, 3 + SCALE))
def test_io_error_at_every_operation_stops_the_writer(tmp_path, policy, seed):
    batches = batches_for(policy, seed=seed, n=14)
    h = history_for(batches)
    n = total_ops(policy, batches)
    for k in range(n):
        d = str(tmp_path / f"k{k}")
        fs = FaultFS(d, fail_at=k, fail_errno=errno.EIO if k % 3 else errno.ENOSPC)
        acks = Acks()
        opened: list = []
        try:
            workload(d, fs, policy, batches, acks, opened)
            pytest.fail(f"op {k} did not fail")
        except LogFailed:
            assert fs.failed_op is not None and fs.failed_op[0] == k
            (s,) = opened
            _after_failure_everything_refuses(s, fs)
            assert not any(o == "fsync" for o, _ in fs.trace[k + 1:]), "fsync retried"
            s.crash()
        except OSError:
            assert not opened  # failed while opening/creating: nothing was acknowledged
        fs.power_loss()  # the worst case: only what was fsynced before the error survives
        if not os.path.isdir(d):
            continue
        r = MetadataStore.open(d)
        got = h.seq_of(r.digest())
        assert got is not None and got >= acks.frames, (k, got, acks.frames, r.last_report.damage)
        assert not r.last_report.suspected_corruption, (k, r.last_report.damage)
        r.close()
        shutil.rmtree(d)


def test_disk_full_mid_frame_leaves_a_torn_tail_that_recovery_trims(tmp_path):
    d = str(tmp_path / "w")
    fs = FaultFS(d)
    s = MetadataStore.open(d, snapshot_every=0, fs=fs)
    s.register_node("node-a", 8)
    s.blocks_stored("node-a", [1, 2, 3], "g")
    s.flush()
    acked = s.digest()
    fs.fail_on("pwrite", nth=fs._calls.get("pwrite", 0), err=errno.ENOSPC, partial=9)
    s.blocks_stored("node-a", [4, 5], "g")
    with pytest.raises(LogFailed) as e:
        s.flush()
    assert e.value.__cause__.errno == errno.ENOSPC
    _after_failure_everything_refuses(s, fs)
    s.crash()
    r = MetadataStore.open(d)
    assert r.digest() == acked
    assert [x.kind for x in r.last_report.damage] == ["torn_tail"]
    assert r.last_report.bytes_truncated == 9
    r.close()


def test_failed_fsync_is_not_retried_and_the_frame_is_not_acknowledged(tmp_path):
    d = str(tmp_path / "w")
    fs = FaultFS(d)
    s = MetadataStore.open(d, snapshot_every=0, fs=fs)
    s.register_node("node-a", 8)
    s.flush()
    acked_seq, acked = s.acked_seq, s.digest()
    fs.fail_on("fsync", nth=fs._calls.get("fsync", 0))
    s.route_session("s", "node-a")
    with pytest.raises(LogFailed):
        s.flush()
    assert s.acked_seq == acked_seq
    _after_failure_everything_refuses(s, fs)
    s.crash()
    fs.power_loss()  # fsyncgate: the kernel may have dropped the dirty pages
    r = MetadataStore.open(d)
    assert r.digest() == acked
    r.close()


@pytest.mark.parametrize("op", ["pwrite", "fsync"])
def test_the_log_itself_is_fail_stop(tmp_path, op):
    """P6 at the Log level (the store adds its own guard on top)."""
    from kvtui.store import Log
    d = str(tmp_path / "w")
    fs = FaultFS(d)
    log = Log.open(d, fs=fs)
    log.append(1, b"a" * 50)
    log.flush()
    fs.fail_on(op, nth=fs._calls.get(op, 0), err=errno.EIO, partial=5)
    log.append(1, b"b" * 50)
    with pytest.raises(LogFailed):
        log.flush()
    n = fs.ops
    assert log.acked_seq == 1
    for call in (lambda: log.append(1, b"c"), log.flush, lambda: log.write_snapshot(b"s")):
        with pytest.raises(LogFailed):
            call()
    assert fs.ops == n
    log.abandon()
    fs.power_loss()
    seen = []
    log = Log.open(d, apply=lambda seq, t, p: seen.append(bytes(p)))
    assert seen == [b"a" * 50] and log.last_seq == 1
    log.close()
