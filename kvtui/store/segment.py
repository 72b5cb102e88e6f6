"""Segment files and the chain that ties them together.

The log is a directory of bounded-size segment files `wal-00000000.log`, `wal-00000001.log`, ...
(etcd's WAL and RocksDB's numbered log files work the same way: a file is never rewritten,
old ones are deleted whole once a snapshot covers them). Each segment starts with a 44-byte
header, then frames (see `frame.py`):

    magic "KVTWALS1" (8) | version (2) | reserved (2) | log id (8) | index (8) |
    first seq (8) | crc of the previous segment's header (4) | crc of this header (4)

What the chain catches:
- `index` must match the file name and follow the previous segment's index: a missing,
  duplicated (copied under another name) or reordered segment breaks it;
- `first seq` must be one past the previous segment's last frame: a segment that lost its
  tail, or a gap between segments, breaks it;
- `prev crc` must equal the previous segment's header checksum: a segment swapped in from
  another time of the same log breaks it; `log id` (random, per log) catches one from another
  log altogether;
- a small `CURRENT` file (LevelDB's name for the same idea) records the index of the newest
  segment, written by temp file + rename after the segment exists; a *missing last segment*,
  which no chain can reveal, shows as CURRENT naming a segment that is not there.
"""

from __future__ import annotations

import re
import struct
import zlib
from dataclasses import dataclass

from kvtui.store import header
from kvtui.store.frame import run_back

MAGIC = b"KVTWALS1"
HEADER_SIZE = header.SIZE  # 44: index, first seq, previous header's crc, own crc
_NAME = re.compile(r"^wal-(\d{8})\.log$")

# Preallocation fill. The writer keeps some room ahead of the write position filled with this
# byte (see wal.py), so that appending overwrites allocated blocks and fdatasync need not
# commit a file-size change. A fill byte rather than zeros: a sector that comes back zeroed
# (a torn or lost write) is then still recognisable as damage, not mistaken for free space.
FILL = b"\xa5"


def content_end(data, start: int) -> int:
    """End of the non-fill content of `data` at or after `start` (== start: only fill).

    Damaged content that happens to end in fill bytes is indistinguishable from fill there,
    so those last bytes count as free space (the truncation removes them all the same)."""
    return max(start, run_back(data, FILL, start))



CURRENT = "CURRENT"
_CUR_MAGIC = b"KVTCUR01"
_CUR = struct.Struct("<8sQQ")
_CRC = struct.Struct("<I")


class SegmentHeaderError(ValueError):
    pass


@dataclass(frozen=True, slots=True)
class SegmentHeader:
    log_id: int
    index: int
    first_seq: int
    prev_crc: int
    crc: int  # checksum of this header, what the next segment's prev_crc must equal

    def encode(self) -> bytes:
        return encode_header(self.log_id, self.index, self.first_seq, self.prev_crc)[0]


def segment_name(index: int) -> str:
    return f"wal-{index:08d}.log"


def parse_segment_name(name: str) -> int | None:
    m = _NAME.match(name)
    return int(m.group(1)) if m else None


def encode_header(log_id: int, index: int, first_seq: int, prev_crc: int) -> tuple[bytes, int]:
    return header.pack(MAGIC, log_id, index, first_seq, prev_crc)


def decode_header(buf: bytes) -> SegmentHeader:
    log_id, index, first_seq, prev_crc, crc = header.unpack(buf, MAGIC, "WAL segment", SegmentHeaderError)
    if first_seq < 1:
        raise SegmentHeaderError("segment header names first seq 0")
    return SegmentHeader(log_id, index, first_seq, prev_crc, crc)


# -- CURRENT ---------------------------------------------------------------------------------


def encode_current(log_id: int, last_index: int) -> bytes:
    body = _CUR.pack(_CUR_MAGIC, log_id, last_index)
    return body + _CRC.pack(zlib.crc32(body))


def decode_current(buf: bytes) -> tuple[int, int]:
    """(log id, index of the newest segment) or SegmentHeaderError."""
    if len(buf) != _CUR.size + 4:
        raise SegmentHeaderError(f"CURRENT has {len(buf)} bytes, expected {_CUR.size + 4}")
    (crc,) = _CRC.unpack_from(buf, _CUR.size)
    if zlib.crc32(buf[: _CUR.size]) != crc:
        raise SegmentHeaderError("CURRENT checksum mismatch")
    magic, log_id, last_index = _CUR.unpack_from(buf)
    if magic != _CUR_MAGIC:
        raise SegmentHeaderError("CURRENT has a bad magic number")
    return log_id, last_index
