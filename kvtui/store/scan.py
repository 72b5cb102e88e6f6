"""The read-only walk of a log directory: what is there, what is sound, what to replay.

`scan()` is shared by recovery (which then repairs, see `recovery.py`) and by
`kvtui wal inspect|verify|dump` (which never write). It never changes a file. In order:

1. list the directory: segments, snapshots, CURRENT, leftover `*.tmp` files (a snapshot,
   CURRENT or segment header that never got renamed into place — never durable state);
2. decode every segment header (checksum, name = index, same log id);
3. choose the base: the newest snapshot whose checksum holds and whose payload the loader
   accepts; corrupt newer ones are damage (SQLite and etcd fall back to an older
   checkpoint/snapshot the same way);
4. verify the segments wholly before the base ("covered"): damage there does not stop the
   replay, but is reported (it would matter if the base snapshot were lost);
5. replay from the segment holding `base + 1`: chain checks between segments (index + 1,
   previous header's crc, first seq = previous last seq + 1), then every frame (checksum,
   consecutive seqs); frames after the base go to `apply`. The first failure ends the valid
   prefix: the rest of that segment and every later segment are "beyond";
6. classify: a frame-level failure in the last segment with no valid frame after it is a torn
   tail (what a crash mid-write leaves); anything else is suspected corruption;
7. check CURRENT: it must exist and must not name a segment newer than the newest present.

Preallocation fill (see `segment.FILL`) after the last frame of a segment is free space, not
damage; any other byte there is.

The result (`Scan`) carries the report and the repair plan: where to cut, what to set aside.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field
from typing import Callable

from kvtui.store import frame as fr
from kvtui.store import segment as sg
from kvtui.store import snapshot as sn
from kvtui.store.fs import RealFS
from kvtui.store.report import TORN_TAIL, Damage, RecoveryReport

MODES = ("strict", "point_in_time")
QUARANTINE = "quarantine"
LOCK = "LOCK"
FRAME_KINDS = ("short_header", "bad_length", "checksum", "bad_type")

Loader = Callable[[object], None]  # load_snapshot(payload or None); ValueError if undecodable
Apply = Callable[[int, int, memoryview], object]  # apply(seq, type, payload)
VisitAll = Callable[[str, int, int, int, memoryview], object]  # (segment, offset, seq, type, p)


@dataclass
class SegmentInfo:
    name: str
    index: int
    size: int
    header: sg.SegmentHeader | None = None
    header_error: str | None = None
    frames: int = 0
    last_seq: int | None = None
    valid_end: int = 0
    role: str = "covered"  # covered (before the base) | replay | beyond (after the damage)
    status: str = "ok"

    @property
    def end_seq(self) -> int:
        """The last seq this segment holds (first seq - 1 when it holds none)."""
        return self.last_seq if self.last_seq is not None else self.header.first_seq - 1


@dataclass
class SnapshotInfo:
    name: str
    seq: int
    size: int
    ok: bool = True
    error: str | None = None
    used: bool = False


@dataclass
class Scan:
    directory: str
    report: RecoveryReport
    log_id: int | None = None
    current: tuple[int, int] | None = None  # (log id, index of the newest segment)
    current_error: str | None = None
    segments: list[SegmentInfo] = field(default_factory=list)
    snapshots: list[SnapshotInfo] = field(default_factory=list)
    temp_files: list[str] = field(default_factory=list)
    quarantine_files: list[str] = field(default_factory=list)
    other_files: list[str] = field(default_factory=list)
    # the repair plan
    cut: tuple[str, int, int] | None = None  # (segment, offset, damaged bytes from there)
    cut_seq: int = 0  # the seq the damaged frame should have had
    drop_segments: list[str] = field(default_factory=list)  # beyond the damage
    drop_covered: list[str] = field(default_factory=list)  # damaged, before the base
    bad_snapshots: list[str] = field(default_factory=list)
    rewrite_current: bool = False
    mapped: bool = False  # read segments mapped, not into memory (a read-only walk: kvtui replay)

    def needs_repair(self) -> bool:
        return bool(self.cut or self.drop_segments or self.drop_covered or self.bad_snapshots
                    or self.rewrite_current or self.temp_files)

    def remaining_segments(self) -> list[SegmentInfo]:
        gone = set(self.drop_segments) | set(self.drop_covered)
        return [s for s in self.segments if s.role != "beyond" and s.name not in gone]


def scan(fs: RealFS, directory: str, *, mode: str = "point_in_time",
         load_snapshot: Loader | None = None, apply: Apply | None = None,
         visit_all: VisitAll | None = None, fsync: str | None = None, mapped: bool = False) -> Scan:
    """Walk `directory` read-only; hand frames after the base to `apply`; plan the repairs.

    `visit_all(segment, offset, seq, type, payload)`, if given, sees every valid frame in
    every verified segment, covered or not (the slow path of `kvtui wal dump`). `fsync` is
    the policy the log is written under, when known (the writer opening it knows): under
    `always` a whole last frame that fails its checksum is corruption (see `_classify_tail`).
    `mapped` maps the segments instead of reading them (only for a walk that repairs nothing:
    a recovery truncates what it scanned).
    """
    if mode not in MODES:
        raise ValueError(f"unknown recovery mode {mode!r} (expected one of {MODES})")
    t0 = time.perf_counter()
    sc = Scan(directory, RecoveryReport(directory=directory, mode=mode), mapped=mapped)
    _list(fs, sc)
    _read_current(fs, sc)
    _read_headers(fs, sc)
    base = _choose_base(fs, sc, load_snapshot)
    start = _replay_start(sc, base)
    _verify_covered(fs, sc, start, base, visit_all)
    _replay(fs, sc, start, base, apply or _nothing, visit_all)
    _classify_tail(fs, sc, fsync)
    _check_current(sc)
    _check_fallback(sc)
    rep = sc.report
    rep.bytes_truncated = (sc.cut[2] if sc.cut else 0) + sum(
        s.size for s in sc.segments if s.name in sc.drop_segments)
    rep.suspected_corruption = any(d.kind != TORN_TAIL for d in rep.damage)
    rep.seconds = time.perf_counter() - t0
    return sc


def _nothing(seq, ftype, payload) -> None:
    pass


def _segment_bytes(fs: RealFS, sc: Scan, name: str):
    path = os.path.join(sc.directory, name)
    return fs.read_mapped(path) if sc.mapped else fs.read(path)


def _list(fs: RealFS, sc: Scan) -> None:
    for name in fs.listdir(sc.directory):
        path = os.path.join(sc.directory, name)
        if name == QUARANTINE and fs.isdir(path):
            sc.quarantine_files = fs.listdir(path)
        elif not fs.isfile(path):
            sc.other_files.append(name)
        elif name.endswith(".tmp"):
            sc.temp_files.append(name)
        elif (idx := sg.parse_segment_name(name)) is not None:
            sc.segments.append(SegmentInfo(name, idx, fs.size(path)))
        elif (seq := sn.parse_snapshot_name(name)) is not None:
            sc.snapshots.append(SnapshotInfo(name, seq, fs.size(path)))
        elif name not in (sg.CURRENT, LOCK):
            sc.other_files.append(name)
    sc.segments.sort(key=lambda s: s.index)
    sc.snapshots.sort(key=lambda s: s.seq, reverse=True)


def _read_current(fs: RealFS, sc: Scan) -> None:
    path = os.path.join(sc.directory, sg.CURRENT)
    if fs.exists(path):
        try:
            sc.current = sg.decode_current(fs.read(path))
        except sg.SegmentHeaderError as e:
            sc.current_error = str(e)


def _read_headers(fs: RealFS, sc: Scan) -> None:
    for s in sc.segments:
        try:
            s.header = sg.decode_header(fs.read_head(os.path.join(sc.directory, s.name),
                                                     sg.HEADER_SIZE))
        except sg.SegmentHeaderError as e:
            s.header_error = str(e)
    if sc.current is not None:
        sc.log_id = sc.current[0]
    else:
        ids = [s.header.log_id for s in sc.segments if s.header]
        sc.log_id = ids[0] if ids else None
    for s in sc.segments:
        if s.header is None:
            continue
        if s.header.index != s.index:
            s.header_error = (f"header says segment {s.header.index} but the file is named "
                              f"{s.name} (duplicated or reordered segment)")
        elif sc.log_id is not None and s.header.log_id != sc.log_id:
            s.header_error = f"belongs to another log (id {s.header.log_id:016x})"


def _choose_base(fs: RealFS, sc: Scan, load_snapshot: Loader | None) -> int:
    """Validate every snapshot; load the newest good one. Returns the base seq (0: none)."""
    rep = sc.report
    for snap in sc.snapshots:
        try:
            hdr, payload = sn.decode(fs.read(os.path.join(sc.directory, snap.name)))
            if hdr.seq != snap.seq:
                raise sn.SnapshotError(f"header says seq {hdr.seq}, file name {snap.seq}")
            if sc.log_id is None:
                sc.log_id = hdr.log_id
            elif hdr.log_id != sc.log_id:
                raise sn.SnapshotError(f"belongs to another log (id {hdr.log_id:016x})")
            if rep.snapshot_used is None and load_snapshot is not None:
                load_snapshot(payload)
        except (sn.SnapshotError, ValueError) as e:
            snap.ok, snap.error = False, str(e)
            rep.damage.append(Damage(snap.name, None, "corrupt_snapshot", str(e), snap.size))
            sc.bad_snapshots.append(snap.name)
            continue
        if rep.snapshot_used is None:
            snap.used = True
            rep.snapshot_used, rep.snapshot_seq = snap.name, snap.seq
    if rep.snapshot_used is None and load_snapshot is not None:
        load_snapshot(None)
    return rep.snapshot_seq


def _replay_start(sc: Scan, base: int) -> int:
    """Index (in sc.segments) of the newest sound segment that starts at or before base + 1."""
    start = 0
    for i, s in enumerate(sc.segments):
        if s.header_error is None and s.header.first_seq <= base + 1:
            start = i
    return start


def _chain_problem(prev: SegmentInfo, s: SegmentInfo) -> tuple[str, str] | None:
    """Why `s` cannot follow `prev` (both with sound headers), or None."""
    h, ph = s.header, prev.header
    if h.index != ph.index + 1:
        if h.index > ph.index + 1:
            return "segment_chain", f"follows {prev.name}: segment(s) missing in between"
        return "segment_chain", f"out of order after {prev.name}"
    if h.prev_crc != ph.crc:
        return "segment_chain", (f"does not chain to {prev.name} (previous-header checksum "
                                 f"{h.prev_crc:08x}, expected {ph.crc:08x})")
    if h.first_seq != prev.end_seq + 1:
        return "sequence_gap", (f"starts at seq {h.first_seq} but {prev.name} ends at seq "
                                f"{prev.end_seq}")
    return None


def _frames(fs: RealFS, sc: Scan, s: SegmentInfo, apply: Apply | None, base: int,
            visit_all: VisitAll | None, covered: bool, report: bool = True) -> fr.Stop:
    """Frame-walk one segment; on damage, add a Damage (if `report`)."""
    data = _segment_bytes(fs, sc, s.name)
    s.size = len(data)
    first = s.header.first_seq
    stop = fr.scan(data, sg.HEADER_SIZE, first, apply, base)
    if apply is not None and stop.visited_from is not None:
        sc.report.frames_replayed += stop.next_seq - max(first, base + 1)
        sc.report.bytes_replayed += stop.offset - stop.visited_from
    if visit_all is not None:
        for offset, seq, ftype, payload in fr.iter_frames(data, sg.HEADER_SIZE, stop.offset):
            visit_all(s.name, offset, seq, ftype, payload)
    s.frames = stop.next_seq - first
    s.last_seq = stop.next_seq - 1 if s.frames else None
    s.valid_end = stop.offset
    if stop.reason is not None:
        end = sg.content_end(data, stop.offset)
        if end == stop.offset:  # only preallocation fill after the last frame: a clean end
            return stop._replace(reason=None, detail="")
        fill = fr.run_forward(data, sg.FILL, stop.offset, end)
        detail = stop.detail if fill < fr.HEADER_SIZE else (
            f"stray bytes at offset {stop.offset + fill}, in the preallocated space after the "
            "last frame")
        s.status = f"damaged at offset {stop.offset}: {detail}"
        if report:
            sc.report.damage.append(Damage(s.name, stop.offset, stop.reason, detail,
                                           end - stop.offset, covered=covered))
    return stop


def _covered_chain_problem(sc: Scan, prev: SegmentInfo, s: SegmentInfo,
                           base: int) -> tuple[str, str] | None:
    problem = _chain_problem(prev, s)
    if problem and problem[0] == "sequence_gap" and s.header.first_seq <= base + 1:
        # frames lost before the base (a `never` log after power loss): the snapshot covers
        # them, so the log legitimately resumes after the gap
        sc.report.notes.append(f"{s.name}: {problem[1]} (covered by the snapshot)")
        return None
    return problem


def _verify_covered(fs: RealFS, sc: Scan, start: int, base: int,
                    visit_all: VisitAll | None) -> None:
    segs, damage = sc.segments, sc.report.damage
    prev: SegmentInfo | None = None
    last_bad = -1
    for i, s in enumerate(segs[:start]):
        s.role = "covered"
        problem = s.header_error and ("bad_segment_header", s.header_error)
        problem = problem or (prev is not None and _covered_chain_problem(sc, prev, s, base))
        if problem:
            s.status = problem[1]
            damage.append(Damage(s.name, None, problem[0], problem[1], s.size, covered=True))
            last_bad = i
        if s.header_error:
            prev = None
            continue
        stop = _frames(fs, sc, s, None, 0, visit_all, covered=True)
        if stop.reason is not None:
            last_bad = i
        prev = s if stop.reason is None else None
    if prev is not None and start < len(segs) and segs[start].header_error is None:
        problem = _covered_chain_problem(sc, prev, segs[start], base)
        if problem:
            damage.append(Damage(segs[start].name, None, problem[0], problem[1], 0, covered=True))
            last_bad = start - 1
    # damaged segments before the base are useless even as a fallback: recovery sets them
    # (and the covered ones before them) aside, so that the directory ends up sound
    sc.drop_covered = [s.name for s in segs[:last_bad + 1]]


def _replay(fs: RealFS, sc: Scan, start: int, base: int, apply: Apply,
            visit_all: VisitAll | None) -> None:
    rep = sc.report
    rep.last_seq = base
    broken = False
    prev: SegmentInfo | None = None
    for i, s in enumerate(sc.segments[start:], start):
        if broken:
            s.role = "beyond"
            if s.header_error is None:  # counted for `inspect`, not reported: all set aside
                _frames(fs, sc, s, None, 0, None, covered=False, report=False)
            s.status = "after the damage"
            sc.drop_segments.append(s.name)
            continue
        s.role = "replay"
        problem = s.header_error and ("bad_segment_header", s.header_error)
        if not problem and prev is not None:
            problem = _chain_problem(prev, s)
        if not problem and i == start and s.header.first_seq > base + 1:
            what = f"snapshot seq {base}" if base else "the start of the log"
            problem = ("sequence_gap", f"log resumes at seq {s.header.first_seq}, but state is "
                       f"known only up to {what}: earlier segments are missing")
        if problem:
            s.role, s.status = "beyond", problem[1]
            rep.damage.append(Damage(s.name, None, problem[0], problem[1], s.size))
            sc.drop_segments.append(s.name)
            broken = True
            continue
        stop = _frames(fs, sc, s, apply, base, visit_all, covered=False)
        if s.last_seq is not None:
            rep.last_seq = max(rep.last_seq, s.last_seq)
        if stop.reason is not None:
            broken = True
            sc.cut = (s.name, stop.offset, rep.damage[-1].length)
            sc.cut_seq = stop.next_seq
        prev = s
    rep.records_replayed = rep.frames_replayed  # the owner of `apply` may refine this


def _classify_tail(fs: RealFS, sc: Scan, fsync: str | None = None) -> None:
    """A damaged frame in the last segment with nothing valid after it is a torn tail --
    unless, under `fsync: always`, the frame is whole (`_whole_frame`): then it was written
    in full and fsynced before the next could begin, so it was acknowledged, and a checksum
    failure in it is corruption. etcd's WAL draws the same line: `server/storage/wal/decoder.go`
    (etcd-io/etcd@06b0e6a) calls a CRC failure of the last record a torn write (io.ErrUnexpectedEOF) only when
    `isTornEntry` finds a sector-aligned chunk of it that is all zeros, never written; any
    other CRC failure is an error."""
    damage = sc.report.damage
    if sc.cut is None or not damage:
        return
    name, off, _ = sc.cut
    d = damage[-1]
    if d.file != name or d.offset != off or d.kind not in FRAME_KINDS:
        return
    segs = sc.segments
    is_last = segs[-1].name == name
    current_names_later = sc.current is not None and sc.current[1] > segs[-1].index
    data = _segment_bytes(fs, sc, name)
    nxt = fr.find_valid_after(data, off + 1, sc.cut_seq)
    if nxt is None and is_last and not current_names_later:
        if fsync == "always" and d.kind == "checksum" and _whole_frame(data, off):
            damage[-1] = Damage(name, off, d.kind, f"{d.message}; the frame was written whole "
                                "(no unwritten sector in it, intact fill after it), and under "
                                "fsync: always a whole frame was acknowledged: corruption, not a "
                                "torn write", d.length)
            return
        damage[-1] = Damage(name, off, TORN_TAIL, f"{d.message}; nothing valid follows (a "
                            "write cut short by a crash)", d.length)
    elif nxt is not None:
        damage[-1] = Damage(name, off, d.kind, f"{d.message}; a valid frame follows at offset "
                            f"{nxt}", d.length)


SECTOR = 512


def _whole_frame(data, off: int) -> bool:
    """Was the frame at `off` written in full? Its length fits, no piece of what follows its
    length field, cut at sector boundaries, is all zeros or all preallocation fill (never
    written, or lost: etcd's isTornEntry test on the bytes after the length, with our fill
    byte added), and the bytes after it up to the next sector
    boundary are intact fill (a torn sector write would have garbled them too). A frame that
    ends exactly on a sector boundary cannot show the last sign; it counts as whole then."""
    length = fr.HEADER.unpack_from(data, off)[1]
    end = off + fr.HEADER_SIZE + length
    if end > len(data):
        return False
    start = off + 8  # after crc and length: the seq, type and payload they vouch for
    while start < end:
        stop = min(end, (start // SECTOR + 1) * SECTOR)
        chunk = bytes(data[start:stop])
        if not chunk.strip(b"\0") or not chunk.strip(sg.FILL):
            return False
        start = stop
    boundary = min(len(data), -(-end // SECTOR) * SECTOR)
    return not bytes(data[end:boundary]).strip(sg.FILL)


def _check_fallback(sc: Scan) -> None:
    """Note (not damage) when an older snapshot could no longer serve as a fallback."""
    firsts = [s.header.first_seq for s in sc.remaining_segments() if s.header]
    if not firsts:
        return
    for snap in sc.snapshots:
        if snap.ok and not snap.used and snap.seq + 1 < firsts[0]:
            sc.report.notes.append(f"{snap.name} cannot serve as a fallback: the log now starts "
                                   f"at seq {firsts[0]}")


def _check_current(sc: Scan) -> None:
    damage, segs = sc.report.damage, sc.segments
    if sc.current_error is not None:
        damage.append(Damage(sg.CURRENT, None, "bad_current", sc.current_error))
        sc.rewrite_current = True
    elif sc.current is None and segs:
        fresh = len(segs) == 1 and segs[0].index == 0 and segs[0].frames == 0 \
            and not sc.snapshots
        if fresh:
            sc.report.notes.append("log creation was interrupted before CURRENT was written")
        else:
            damage.append(Damage(sg.CURRENT, None, "missing_current",
                                 "CURRENT is missing: the newest segment cannot be confirmed"))
        sc.rewrite_current = True
    elif sc.current is not None:
        if not segs or sc.current[1] > segs[-1].index:
            got = f"the log ends at {segs[-1].name}" if segs else "there are no segments"
            damage.append(Damage(sg.CURRENT, None, "missing_segment",
                                 f"CURRENT names {sg.segment_name(sc.current[1])} as the newest "
                                 f"segment, but {got}: segments were lost"))
            sc.rewrite_current = True
    if sc.drop_segments:
        sc.rewrite_current = True
