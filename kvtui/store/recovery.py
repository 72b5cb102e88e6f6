"""Recovery: replay the longest trustworthy history, then repair what is broken.

Two modes, after RocksDB's `WALRecoveryMode`:

- `strict` (RocksDB's kAbsoluteConsistency): any damage at all — even a torn tail — is an
  error (`RecoveryError`, carrying the report); nothing on disk is touched.
- `point_in_time` (the default; RocksDB's kPointInTimeRecovery): replay the longest valid
  prefix of the log (see `scan.py` for the walk) and stop at the first damaged frame or broken
  link of the segment chain. The damaged bytes are not deleted but set aside in
  `quarantine/`: the tail of the damaged segment is copied there before the segment is
  truncated, and whole segments after the damage (and corrupt snapshots, and damaged segments
  before the base) are moved there. If the damage is anything but a clean torn tail, the
  report flags `suspected_corruption`: valid frames after a bad one mean acknowledged data
  may have been lost to corruption, not to a crash. Leftover temp files are deleted and
  listed in the report.

Repair is ordered so that an interrupted recovery, run again, ends in the same state (P4):
quarantine copies are written (temp + rename) before the segment is truncated, later segments
are moved only after the truncation, and a rerun re-finds anything not yet moved because the
chain is then broken at exactly the same place. Quarantine names are deterministic
(`<segment>@<offset>`), so a rerun that copies the same bytes again finds them already there.
"""

from __future__ import annotations

import os
import time

from kvtui.store import segment as sg
from kvtui.store.fs import RealFS, write_atomic
from kvtui.store.report import Damage, RecoveryError, RecoveryReport
from kvtui.store.scan import (LOCK, MODES, QUARANTINE, Apply, Loader, Scan, SegmentInfo,
                              SnapshotInfo, scan)

__all__ = ["recover", "scan", "Scan", "SegmentInfo", "SnapshotInfo", "Damage", "RecoveryError",
           "RecoveryReport", "Loader", "Apply", "MODES", "QUARANTINE", "LOCK"]


# -- repair ----------------------------------------------------------------------------------


def recover(fs: RealFS, directory: str, *, mode: str = "point_in_time",
            load_snapshot: Loader | None = None, apply: Apply | None = None,
            fsync: str | None = None) -> Scan:
    """Scan, then (point_in_time) repair. Strict mode raises RecoveryError on any damage.
    `fsync` is the writer's policy (see `scan`)."""
    t0 = time.perf_counter()
    sc = scan(fs, directory, mode=mode, load_snapshot=load_snapshot, apply=apply, fsync=fsync)
    rep = sc.report
    if rep.damage and mode == "strict":
        rep.seconds = time.perf_counter() - t0
        raise RecoveryError(
            "strict recovery refused a damaged log:\n  " + "\n  ".join(
                d.describe() for d in rep.damage), rep)
    if not sc.needs_repair():
        rep.seconds = time.perf_counter() - t0
        return sc
    _repair(fs, sc)
    rep.seconds = time.perf_counter() - t0
    return sc


def _repair(fs: RealFS, sc: Scan) -> None:
    d = sc.directory
    rep = sc.report
    for name in sc.temp_files:
        fs.unlink(os.path.join(d, name))
        rep.temp_files_removed.append(name)
    if sc.temp_files:
        fs.fsync_dir(d)
    aside = sc.bad_snapshots or sc.cut or sc.drop_segments or sc.drop_covered
    if not (aside or sc.rewrite_current):
        return
    qdir = os.path.join(d, QUARANTINE)
    if aside and not fs.isdir(qdir):
        fs.mkdir(qdir)
        fs.fsync_dir(d)
    for name in sc.bad_snapshots:
        rep.quarantined.append(_move_aside(fs, d, qdir, name))
    for name in sc.drop_covered:  # in index order: the survivors stay contiguous
        rep.quarantined.append(_move_aside(fs, d, qdir, name))
    if sc.cut is not None:
        name, off, length = sc.cut
        path = os.path.join(d, name)
        tail = fs.read(path)[off:off + length]  # the damaged bytes (fill after them: dropped)
        if tail:
            rep.quarantined.append(_save_aside(fs, qdir, f"{name}@{off}", tail))
        fd = fs.open_write(path)
        try:
            fs.truncate(fd, off)
            fs.fsync(fd)
        finally:
            fs.close(fd)
    for name in sc.drop_segments:
        rep.quarantined.append(_move_aside(fs, d, qdir, name))
    if sc.rewrite_current:
        remaining = sc.remaining_segments()
        if remaining and sc.log_id is not None:
            write_atomic(fs, d, sg.CURRENT, sg.encode_current(sc.log_id, remaining[-1].index))
        # with no segment left, the writer creates one and then CURRENT


def _target(fs: RealFS, qdir: str, base: str, data: bytes) -> tuple[str, bool]:
    """A quarantine name for `data`: (name, True) if identical bytes are already saved there."""
    n = 0
    while True:
        name = base if n == 0 else f"{base}.{n}"
        path = os.path.join(qdir, name)
        if not fs.exists(path):
            return name, False
        if fs.read(path) == data:
            return name, True
        n += 1


def _save_aside(fs: RealFS, qdir: str, base: str, data: bytes) -> str:
    name, present = _target(fs, qdir, base, data)
    if not present:
        write_atomic(fs, qdir, name, data)
    return f"{QUARANTINE}/{name}"


def _move_aside(fs: RealFS, d: str, qdir: str, name: str) -> str:
    src = os.path.join(d, name)
    qname, present = _target(fs, qdir, name, fs.read(src))
    if present:
        fs.unlink(src)
    else:
        fs.rename(src, os.path.join(qdir, qname))
        fs.fsync_dir(qdir)
    fs.fsync_dir(d)
    return f"{QUARANTINE}/{qname}"
