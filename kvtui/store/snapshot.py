"""Snapshots: the whole state at a sequence number, so recovery need not replay all history.

A snapshot file `snap-<seq>.snap` holds an opaque payload (the metadata store's encoding of its
state after applying every frame up to and including `seq`) behind a checksummed header:

    magic "KVTSNAP1" (8) | version (2) | reserved (2) | log id (8) | seq (8) |
    payload length (8) | payload crc (4) | header crc (4)

Writing follows the recipe that makes a file appear all at once (SQLite, etcd's snapshotter,
LevelDB's CURRENT): temp file, fsync, rename, directory fsync. Snapshots are fsynced whatever
the log's fsync policy, because compaction deletes log segments on their strength.

Retention (`plan_compaction`): keep the newest two snapshots and every segment that holds a
frame newer than the *older* of them. If the newest snapshot turns out corrupt, recovery falls
back to the older one and replays the log from there — which is why the segments since the
older one must survive (etcd keeps several snapshots and the WAL after the oldest for the same
reason).
"""

from __future__ import annotations

import re
import zlib
from dataclasses import dataclass

from kvtui.store import header
from kvtui.store.fs import RealFS, write_atomic

MAGIC = b"KVTSNAP1"
HEADER_SIZE = header.SIZE
KEEP = 2
_NAME = re.compile(r"^snap-(\d{16})\.snap$")


class SnapshotError(ValueError):
    pass


@dataclass(frozen=True, slots=True)
class SnapshotHeader:
    log_id: int
    seq: int
    length: int
    payload_crc: int


def snapshot_name(seq: int) -> str:
    return f"snap-{seq:016d}.snap"


def parse_snapshot_name(name: str) -> int | None:
    m = _NAME.match(name)
    return int(m.group(1)) if m else None


def encode(log_id: int, seq: int, payload: bytes) -> bytes:
    return header.pack(MAGIC, log_id, seq, len(payload), zlib.crc32(payload))[0] + payload


def decode(buf: bytes) -> tuple[SnapshotHeader, memoryview]:
    """Header and payload of a snapshot file's bytes, or SnapshotError."""
    log_id, seq, length, pcrc, _ = header.unpack(buf, MAGIC, "snapshot", SnapshotError)
    payload = memoryview(buf)[HEADER_SIZE:]
    if len(payload) != length:
        raise SnapshotError(f"snapshot payload is {len(payload)} bytes, header says {length}")
    if zlib.crc32(payload) != pcrc:
        raise SnapshotError("snapshot payload checksum mismatch")
    return SnapshotHeader(log_id, seq, length, pcrc), payload


def write(fs: RealFS, directory: str, log_id: int, seq: int, payload: bytes) -> str:
    """Write a snapshot durably (temp + fsync + rename + dir fsync); returns its file name."""
    name = snapshot_name(seq)
    write_atomic(fs, directory, name, encode(log_id, seq, payload), sync=True)
    return name


def plan_compaction(segments: list[tuple[str, int]], snapshots: list[int],
                    keep: int = KEEP) -> tuple[list[str], list[int]]:
    """What to delete: (segment names, snapshot seqs).

    `segments` is [(name, first_seq)] in index order, the last one being the open segment;
    `snapshots` the seqs of the valid snapshots. A segment can go when the next segment starts
    at or below `oldest kept snapshot + 1`, i.e. every frame in it is covered. Deleting in
    index order keeps the surviving segments contiguous if compaction is interrupted.
    """
    kept = sorted(snapshots)[-keep:]
    drop_snaps = sorted(snapshots)[:-keep] if len(snapshots) > keep else []
    if len(kept) < keep:
        return [], drop_snaps
    floor = kept[0]
    drop_segs = []
    for (name, _), (_, next_first) in zip(segments, segments[1:]):
        if next_first <= floor + 1:
            drop_segs.append(name)
        else:
            break
    return drop_segs, drop_snaps
