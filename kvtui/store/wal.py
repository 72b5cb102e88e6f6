"""The write-ahead log: a single writer appending frames to a chain of segment files.

`Log.open(dir, ...)` takes the directory's lock, recovers (see `recovery.py`: snapshot, replay,
repair), and returns a writer positioned after the last valid frame. Then either

    log.add(record)                     # records collect in the open batch ...
    log.flush()                         # ... which becomes one frame: the acknowledgement point

or, for callers with their own batch encoding (the metadata store),

    seq = log.append(ftype, payload)    # one frame = one atomic batch
    log.flush()

and `log.write_snapshot(payload)` (state as of `log.last_seq`; compacts old segments),
`log.close()`. A batch of records is one frame: one header, one checksum, all-or-nothing —
LevelDB's WriteBatch in one log record. Replay hands frames to `apply(seq, type, payload)`, or
records to `apply_record(seq, record)`.

fsync policies — what an *acknowledged* frame (one whose `append`/`add`, under `always`, or
whose following `flush()`, otherwise, has returned) survives:

- `always`: every `append` (every `add`) writes its frame and fsyncs before returning (etcd's
  WAL, SQLite `synchronous=FULL` with one transaction per commit). Survives process kill *and*
  power loss, per frame. Costs one fsync per frame.
- `batch` (default): frames collect in memory; `flush()` — or the `batch_frames`-th buffered
  frame/record — writes them with one `write` and one fsync (group commit, like PostgreSQL's
  commit delay or RocksDB's `sync=true` write groups). Survives process kill and power loss for
  everything flushed; what was appended since the last flush is lost by either.
- `never`: like `batch`, but `flush()` only hands the bytes to the kernel, no fsync (SQLite's
  WAL mode with `synchronous=NORMAL` between checkpoints, RocksDB's default `sync=false`).
  Survives a process kill (the kernel has the data) but *not* power loss: any suffix of the
  flushed frames may be lost, or come back torn — recovery then replays the longest valid
  prefix. Snapshots are fsynced even under `never`, because compaction deletes segments on
  their strength.

Fail-stop: any error from the file layer (a failed write, a disk full, a failed fsync) puts
the log in a failed state where every further write raises `LogFailed`. A failed fsync is never
retried: after PostgreSQL's "fsyncgate" (2018) we know the kernel may already have dropped the
dirty pages and reports the error only once, so a retry that "succeeds" proves nothing. The only
way forward is to reopen, i.e. recover from what is really on disk.

Preallocation (fsync policies only): the writer keeps up to 256 KiB ahead of its position
filled with `segment.FILL`, so appends overwrite allocated blocks and an fdatasync need not also
commit a file-size change — etcd preallocates its segments, SQLite reuses its WAL file, for the
same reason. Recovery treats fill after the last frame as free space; a closed segment is
truncated to its frames. "fsync" here means fdatasync where the OS has it.

Single writer: `LOCK` is held with `flock` for the writer's lifetime (LevelDB's LOCK file);
a second writer — in this process or another — gets `LogLocked`. The kernel releases the lock
when the process dies, SIGKILL included.
"""

from __future__ import annotations

import errno
import os
import secrets
import struct
import zlib

from kvtui.store import frame as fr
from kvtui.store import recovery as rc
from kvtui.store import segment as sg
from kvtui.store import snapshot as sn
from kvtui.store.fs import RealFS, lock_holder, write_atomic

FSYNC_POLICIES = ("always", "batch", "never")
DEFAULT_SEGMENT_BYTES = 16 << 20
DEFAULT_BATCH_FRAMES = 1024
DEFAULT_BATCH_BYTES = 1 << 20
PREALLOC_CHUNK = 256 << 10
_BODY = fr.BODY
_CRC = struct.Struct("<I")


class WALError(Exception):
    """Base of the store's own errors."""


class LogLocked(WALError):
    """Another writer holds the directory's lock."""


class LogFailed(WALError):
    """The log hit an I/O error earlier and refuses further writes (fail-stop)."""


class Log:
    """A single-writer append-only log of frames. Create with `Log.open`."""

    def __init__(self, fs: RealFS, directory: str, policy: str, segment_bytes: int,
                 batch_frames: int, batch_bytes: int):
        self.fs = fs
        self.directory = directory
        self.policy = policy
        self.segment_bytes = segment_bytes
        self.batch_frames = batch_frames
        self.batch_bytes = batch_bytes
        self.log_id = 0
        self.last_seq = 0  # last frame appended (maybe not yet written)
        self.acked_seq = 0  # last frame acknowledged under the policy
        self.failed: BaseException | None = None
        self.closed = False
        self.report: rc.RecoveryReport | None = None
        # counters (this writer's lifetime)
        self.frames_written = 0
        self.bytes_written = 0
        self.fsyncs = 0
        self.snapshots_written = 0
        self._lock_fd: int | None = None
        self._fd: int | None = None
        self._buf = bytearray()
        self._buffered = 0
        self._batch: list = []  # records of the open RECORDS batch
        self._batch_bytes = 0
        self.records_written = 0
        self._seg_index = -1
        self._seg_crc = 0
        self._seg_size = 0  # bytes of header + frames: where the next frame goes
        self._alloc_end = 0  # file size: [_seg_size, _alloc_end) holds preallocation fill
        self._segments: list[tuple[str, int]] = []  # (name, first_seq), index order
        self._snapshots: list[int] = []

    # -- opening -----------------------------------------------------------------------------

    @classmethod
    def open(cls, directory: str, *, fsync: str = "batch", mode: str = "point_in_time",
             load_snapshot: rc.Loader | None = None, apply: rc.Apply | None = None,
             apply_record=None, segment_bytes: int = DEFAULT_SEGMENT_BYTES,
             batch_frames: int = DEFAULT_BATCH_FRAMES, batch_bytes: int = DEFAULT_BATCH_BYTES,
             fs: RealFS | None = None) -> "Log":
        """Lock, recover and position a writer. The recovery report is `log.report`.

        `load_snapshot(payload or None)` installs a snapshot's state (None: the empty state)
        and raises ValueError if it cannot decode it; `apply(seq, type, payload)` applies one
        frame; `apply_record(seq, record)`, if given, receives each record of RECORDS frames
        instead (other frame types still go to `apply`).
        """
        if fsync not in FSYNC_POLICIES:
            raise ValueError(f"unknown fsync policy {fsync!r} (expected one of {FSYNC_POLICIES})")
        if segment_bytes < 4096:
            raise ValueError("segment_bytes must be at least 4096")
        fs = fs or RealFS()
        directory = os.path.abspath(directory)
        if fs.exists(directory) and not fs.isdir(directory):
            raise NotADirectoryError(errno.ENOTDIR, "exists and is not a directory (a log needs one)", directory)
        if not fs.isdir(directory):
            parent = os.path.dirname(directory)
            if not fs.isdir(parent):
                os.makedirs(parent, exist_ok=True)
            fs.mkdir(directory)
            fs.fsync_dir(parent)
        log = cls(fs, directory, fsync, segment_bytes, batch_frames, batch_bytes)
        lock_path = os.path.join(directory, rc.LOCK)
        try:
            log._lock_fd = fs.lock(lock_path)
        except BlockingIOError:
            raise LogLocked(f"{directory}: the log is in use: {lock_holder(lock_path)} holds its lock "
                            f"({lock_path}); stop it or use another metadata.dir") from None
        counted = [0]
        if apply_record is not None:
            apply = _record_splitter(apply_record, apply, counted)
        try:
            sc = rc.recover(fs, directory, mode=mode, load_snapshot=load_snapshot, apply=apply, fsync=fsync)
            if apply_record is not None:
                sc.report.records_replayed = counted[0]
            log._position(sc)
        except BaseException:
            log._release()
            raise
        return log

    def _position(self, sc: rc.Scan) -> None:
        rep = sc.report
        self.report = rep
        self.last_seq = self.acked_seq = rep.last_seq
        self.log_id = sc.log_id if sc.log_id is not None else secrets.randbits(64) or 1
        self._snapshots = sorted(s.seq for s in sc.snapshots
                                 if s.ok and s.name not in sc.bad_snapshots)
        remaining = sc.remaining_segments()
        self._segments = [(s.name, s.header.first_seq if s.header else 0) for s in remaining]
        last = remaining[-1] if remaining else None
        if last is not None and last.header is not None:
            cut = sc.cut is not None and sc.cut[0] == last.name
            end = last.end_seq
            self._seg_index = last.index
            self._seg_crc, self._seg_size = last.header.crc, last.valid_end
            self._alloc_end = last.valid_end if cut else last.size
            if end < self.last_seq:
                # the log ends before the snapshot (a `never` log after power loss): continue
                # in a fresh segment that starts right after the snapshot
                self._rotate()
            else:
                self._fd = self.fs.open_write(os.path.join(self.directory, last.name))
        else:
            seen = [s.index for s in sc.segments]
            self._seg_index = (max(seen) if seen else -1)
            self._seg_crc = 0
            self._rotate(first=not seen)

    # -- appending ---------------------------------------------------------------------------

    def _check(self) -> None:
        if self.failed is not None:
            raise LogFailed(f"{self.directory}: the log failed earlier ({self.failed}); "
                            "reopen to recover") from self.failed
        if self.closed:
            raise LogFailed(f"{self.directory}: the log is closed")

    def add(self, record) -> None:
        """Add a record to the open batch (sealed into one RECORDS frame by `flush`, by every
        `add` under `always`, or every `batch_frames` records / `batch_bytes` bytes)."""
        self._check()
        self._batch.append(record)
        self._batch_bytes += len(record) + 4
        if self.policy == "always":
            self.append(fr.RECORDS, fr.pack_records(self._batch_take()))
        elif len(self._batch) >= self.batch_frames or self._batch_bytes >= self.batch_bytes:
            self.flush()

    def _batch_take(self) -> list:
        batch = self._batch
        self.records_written += len(batch)
        self._batch = []
        self._batch_bytes = 0
        return batch

    def append(self, ftype: int, payload) -> int:
        """Add one frame (an atomic batch); returns its seq. See the policies for durability."""
        self._check()
        if self._batch:  # records added before keep their place in the log
            batch = self._batch_take()
            self.append(fr.RECORDS, fr.pack_records(batch))
        n = len(payload)
        if n > fr.MAX_PAYLOAD:
            raise ValueError(f"frame payload {n} bytes exceeds {fr.MAX_PAYLOAD}")
        seq = self.last_seq + 1
        body = _BODY.pack(n, seq, ftype)
        c = zlib.crc32(payload, zlib.crc32(body))
        buf = self._buf
        buf += _CRC.pack(fr.mask(c))
        buf += body
        buf += payload
        self.last_seq = seq
        self._buffered += 1
        if self.policy == "always" or self._buffered >= self.batch_frames \
                or len(buf) >= self.batch_bytes:
            self.flush()
        return seq

    def flush(self) -> int:
        """Write buffered frames (one write) and, unless `never`, fsync. Returns `acked_seq`."""
        self._check()
        if self._batch:
            self.append(fr.RECORDS, fr.pack_records(self._batch_take()))
            if self.policy == "always":
                return self.acked_seq
        if not self._buf:
            return self.acked_seq
        data = self._buf
        try:
            if self._seg_size > sg.HEADER_SIZE and self._seg_size + len(data) > self.segment_bytes:
                self._rotate()
            end = self._seg_size + len(data)
            if self.policy != "never" and end > self._alloc_end:
                self._preallocate(end)
            self.fs.pwrite(self._fd, data, self._seg_size)
            self._seg_size = end
            if self.policy != "never":
                self.fs.fsync(self._fd)
                self.fsyncs += 1
        except OSError as e:
            self.failed = e
            raise LogFailed(f"{self.directory}: write failed, the log stops here: {e}") from e
        self.frames_written += self._buffered
        self.bytes_written += len(data)
        self._buf = bytearray()
        self._buffered = 0
        self.acked_seq = self.last_seq
        return self.acked_seq

    # -- segments ----------------------------------------------------------------------------

    def _preallocate(self, end: int) -> None:
        """Fill the file up to the next PREALLOC_CHUNK boundary past `end` (at most up to
        `segment_bytes`) with FILL bytes.

        Appending to a file changes its size, so on ext4/XFS every fdatasync of an append
        also commits a journal transaction; overwriting already-written blocks does not
        (measured here: ~100 µs vs ~150 µs per commit). etcd preallocates its WAL segments
        and SQLite reuses its WAL file for the same reason. Only the fsync policies pay for it:
        this write rides on the next data fsync, once per chunk.
        """
        new_end = max(end, min(-(-end // PREALLOC_CHUNK) * PREALLOC_CHUNK, self.segment_bytes))
        start = max(self._alloc_end, self._seg_size)
        self.fs.pwrite(self._fd, sg.FILL * (new_end - start), start)
        self._alloc_end = new_end

    def _rotate(self, first: bool = False) -> None:
        """Close the current segment and start the next one (header via temp + rename).

        Order matters for crash safety: the old segment is synced, the new one appears whole
        (temp, fsync, rename, dir fsync), and only then does CURRENT move to it — so CURRENT
        never names a segment that is not durably there.
        """
        sync = self.policy != "never"
        fs, d = self.fs, self.directory
        if self._fd is not None:
            if sync:
                fs.fsync(self._fd)
            if self._alloc_end > self._seg_size:  # a closed segment keeps no fill
                fs.truncate(self._fd, self._seg_size)
                if sync:
                    fs.fsync(self._fd)
            fs.close(self._fd)
            self._fd = None
        index = self._seg_index + 1
        name = sg.segment_name(index)
        header, crc = sg.encode_header(self.log_id, index, self.last_seq + 1 - self._buffered,
                                       self._seg_crc)
        write_atomic(fs, d, name, header, sync=sync)
        self._seg_index, self._seg_crc = index, crc
        self._seg_size = self._alloc_end = len(header)
        self._segments.append((name, self.last_seq + 1 - self._buffered))
        self._write_current(sync=sync or first)
        self._fd = fs.open_write(os.path.join(d, name))

    def _write_current(self, sync: bool = True) -> None:
        write_atomic(self.fs, self.directory, sg.CURRENT,
                     sg.encode_current(self.log_id, self._seg_index), sync=sync)

    # -- snapshots ---------------------------------------------------------------------------

    def write_snapshot(self, payload: bytes) -> str:
        """Flush, write a snapshot of the state as of `last_seq`, start a new segment, compact.

        The new segment makes the segments before it fully covered once the *next* snapshot
        exists, so the log kept on disk (and replayed by recovery) is bounded by two snapshot
        intervals, whatever the history length.
        """
        self.flush()
        seq = self.last_seq
        try:
            name = sn.write(self.fs, self.directory, self.log_id, seq, payload)
            self.snapshots_written += 1
            if seq not in self._snapshots:
                self._snapshots.append(seq)
                self._snapshots.sort()
            if self._seg_size > sg.HEADER_SIZE:
                self._rotate()
            self._compact()
        except OSError as e:
            self.failed = e
            raise LogFailed(f"{self.directory}: snapshot failed, the log stops here: {e}") from e
        return name

    def _compact(self) -> None:
        drop_segs, drop_snaps = sn.plan_compaction(self._segments, self._snapshots)
        fs, d = self.fs, self.directory
        for name in drop_segs:
            fs.unlink(os.path.join(d, name))
        for seq in drop_snaps:
            fs.unlink(os.path.join(d, sn.snapshot_name(seq)))
        if drop_segs or drop_snaps:
            fs.fsync_dir(d)
        self._segments = [s for s in self._segments if s[0] not in drop_segs]
        self._snapshots = [s for s in self._snapshots if s not in drop_snaps]

    # -- closing -----------------------------------------------------------------------------

    def close(self) -> None:
        """Flush, fsync (unless `never`), release the lock. Idempotent."""
        if self.closed:
            return
        try:
            if self.failed is None:
                self.flush()
                fd, self._fd = self._fd, None
                if fd is not None:
                    try:
                        self.fs.close(fd)
                    except OSError as e:  # e.g. NFS reporting a lost write only now
                        self.failed = e
                        raise LogFailed(f"{self.directory}: close failed: {e}") from e
        finally:
            self._release()

    def abandon(self) -> None:
        """Die like a killed process: drop unwritten frames, close files, release the lock."""
        self._buf = bytearray()
        self._buffered = 0
        self._batch = []
        self._batch_bytes = 0
        self.last_seq = self.acked_seq
        self._release()

    def _release(self) -> None:
        self.closed = True
        fd, self._fd = self._fd, None
        if fd is not None:
            try:
                self.fs.close(fd)
            except OSError:
                pass
        lk, self._lock_fd = self._lock_fd, None
        if lk is not None:
            self.fs.unlock(lk)

    # -- information -------------------------------------------------------------------------

    def stats(self) -> dict:
        return {"frames": self.frames_written, "records": self.records_written,
                "bytes": self.bytes_written,
                "fsyncs": self.fsyncs, "snapshots": self.snapshots_written,
                "segments": len(self._segments), "last_seq": self.last_seq,
                "acked_seq": self.acked_seq}


def _record_splitter(apply_record, apply, counted: list):
    """An `apply` that hands each record of a RECORDS frame to `apply_record` (inline loop:
    this is the replay hot path for record logs)."""
    unpack = struct.Struct("<I").unpack_from

    def split(seq: int, ftype: int, payload) -> None:
        if ftype != fr.RECORDS:
            if apply is not None:
                apply(seq, ftype, payload)
            return
        pos, n, k = 0, len(payload), 0
        while pos < n:
            (ln,) = unpack(payload, pos)
            pos += 4
            end = pos + ln
            if end > n:
                raise ValueError(f"frame {seq}: record runs past the end of its frame")
            apply_record(seq, payload[pos:end])
            pos = end
            k += 1
        counted[0] += k
    return split
