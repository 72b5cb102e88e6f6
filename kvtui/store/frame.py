"""Record framing: one frame = one atomic batch, self-checking, with its sequence number.

Layout (little-endian, 17-byte header, then the payload):

    crc32 (4) | length (4) | seq (8) | type (1) | payload (length bytes)

- The checksum covers length, seq, type and payload, so a flipped bit anywhere in a frame —
  including a length that now points elsewhere — fails it. Like LevelDB/RocksDB's log format
  (`log_format.h`) it is stored *masked* (rotated and offset), because a CRC over data that
  itself contains CRCs is weak; unlike them we use zlib's CRC-32 (the stdlib has no CRC-32C)
  and do not split records across 32 KiB blocks — a frame never spans segments, and recovery
  resynchronises by searching for a valid header instead of by block boundaries.
- The sequence number in every frame (etcd's WAL does the same with its index) makes a
  duplicated, dropped or reordered frame visible even though each one checksums fine.
- The type byte sits right after the seq so that "high bytes of a plausible seq + a valid
  type" is a 6-byte pattern `bytes.find` can search for when looking for valid frames after a
  damaged one (`find_valid_after`); zero-filled regions never match it (type 0 is invalid).
- A frame is all-or-nothing: recovery applies a frame only if its checksum holds, so the ops
  inside it form one atomic batch, like a LevelDB `WriteBatch` or an SQLite transaction.
"""

from __future__ import annotations

import mmap
import struct
import zlib
from typing import Callable, NamedTuple

HEADER = struct.Struct("<IIQB")
HEADER_SIZE = HEADER.size  # 17
BODY = struct.Struct("<IQB")  # the checksummed part of the header
MAX_PAYLOAD = 64 << 20
MAX_TYPE = 15  # valid types are 1..MAX_TYPE (1 = RECORDS; the metadata store uses 2)
_MASK_DELTA = 0xA282EAD8


def mask(crc: int) -> int:
    """LevelDB's crc mask: rotate right by 15 bits and add a constant."""
    return ((((crc >> 15) | (crc << 17)) & 0xFFFFFFFF) + _MASK_DELTA) & 0xFFFFFFFF


def encode(seq: int, ftype: int, payload) -> bytes:
    """One frame as bytes."""
    n = len(payload)
    if not 1 <= ftype <= MAX_TYPE:
        raise ValueError(f"frame type {ftype} out of range 1..{MAX_TYPE}")
    if n > MAX_PAYLOAD:
        raise ValueError(f"frame payload {n} bytes exceeds {MAX_PAYLOAD}")
    body = BODY.pack(n, seq, ftype)
    crc = mask(zlib.crc32(payload, zlib.crc32(body)))
    return struct.pack("<I", crc) + body + bytes(payload)


class Stop(NamedTuple):
    """Where and why a scan stopped. `reason` is None at a clean end of the buffer.

    `visited_from` is the offset of the first frame handed to the visitor (None: none was).
    """

    offset: int
    next_seq: int
    reason: str | None
    detail: str = ""
    visited_from: int | None = None


def scan(buf, pos: int, expected_seq: int, visit: Callable[[int, int, memoryview], object] | None,
         skip_through: int = 0) -> Stop:
    """Walk frames in `buf[pos:]`, calling `visit(seq, type, payload)` for each good one.

    Frames with seq <= `skip_through` are verified but not visited (they are covered by a
    snapshot). Stops at the end of `buf` or at the first frame that is short, oversized,
    fails its checksum, has an invalid type or carries a sequence number other than the
    expected one. The payload is a memoryview into `buf` (no copy). This loop is the replay
    hot path: one header unpack, one C-level crc32 and one call per frame.
    """
    mv = memoryview(buf)
    n = len(buf)
    unpack = HEADER.unpack_from
    crc32 = zlib.crc32
    seq = expected_seq
    first = None
    while pos < n:
        if n - pos < 17:
            return Stop(pos, seq, "short_header", f"{n - pos} bytes left, header needs 17", first)
        crc, length, fseq, ftype = unpack(buf, pos)
        end = pos + 17 + length
        if length > MAX_PAYLOAD or end > n:
            return Stop(pos, seq, "bad_length",
                        f"frame length {length} runs past the end ({n - pos - 17} bytes left)",
                        first)
        c = crc32(mv[pos + 4:end])
        if ((((c >> 15) | (c << 17)) & 0xFFFFFFFF) + _MASK_DELTA) & 0xFFFFFFFF != crc:
            return Stop(pos, seq, "checksum", f"checksum mismatch in frame of {length} bytes",
                        first)
        if not 0 < ftype <= MAX_TYPE:
            return Stop(pos, seq, "bad_type", f"invalid frame type {ftype}", first)
        if fseq != seq:
            return Stop(pos, seq, "sequence", f"frame carries seq {fseq}, expected {seq}", first)
        if seq > skip_through and visit is not None:
            if first is None:
                first = pos
            visit(seq, ftype, mv[pos + 17:end])
        seq += 1
        pos = end
    return Stop(pos, seq, None, "", first)


def iter_frames(buf, pos: int, end: int):
    """(offset, seq, type, payload) of the frames in `buf[pos:end]`, already verified by
    `scan` (the slow path `kvtui wal dump` uses to show where each record lives)."""
    mv = memoryview(buf)
    while pos < end:
        _, length, seq, ftype = HEADER.unpack_from(buf, pos)
        yield pos, seq, ftype, mv[pos + HEADER_SIZE:pos + HEADER_SIZE + length]
        pos += HEADER_SIZE + length


# -- record batches ---------------------------------------------------------------------------
#
# A frame of type RECORDS holds a batch of opaque records, each `u32 length + bytes` — the
# same idea as a LevelDB WriteBatch inside one log record: the checksum and header are paid
# once per batch, and the whole batch is applied or not at all.

RECORDS = 1
_LEN = struct.Struct("<I")


def pack_records(records) -> bytes:
    pack = _LEN.pack
    return b"".join([x for r in records for x in (pack(len(r)), r)])


def split_records(payload) -> list:
    """The records of a RECORDS frame's payload (memoryviews); ValueError if malformed."""
    out = []
    pos, n = 0, len(payload)
    unpack = _LEN.unpack_from
    while pos < n:
        if n - pos < 4:
            raise ValueError("truncated record length")
        (ln,) = unpack(payload, pos)
        pos += 4
        if pos + ln > n:
            raise ValueError("record runs past the end of its frame")
        out.append(payload[pos:pos + ln])
        pos += ln
    return out


def valid_at(buf, pos: int) -> int | None:
    """The seq of a frame starting at `pos` whose checksum holds, else None."""
    n = len(buf)
    if pos < 0 or n - pos < HEADER_SIZE:
        return None
    crc, length, fseq, ftype = HEADER.unpack_from(buf, pos)
    end = pos + HEADER_SIZE + length
    if length > MAX_PAYLOAD or end > n or not 1 <= ftype <= MAX_TYPE:
        return None
    if mask(zlib.crc32(memoryview(buf)[pos + 4:end])) != crc:
        return None
    return fseq


def find_valid_after(buf, pos: int, near_seq: int) -> int | None:
    """Offset of the first checksum-valid frame at or after `pos`, or None.

    Used to tell a torn tail (nothing valid follows the damage) from corruption in the middle
    of a log (something valid follows it — a later frame, or a duplicated or stale one).
    Any frame there carries a seq near `near_seq`, so its five high seq bytes equal those of
    `near_seq` or of a neighbouring 2**24 window; together with the type byte that is a pattern
    `bytes.find` locates at C speed, and only those candidates are checksummed.
    A tail of zeros (space the file system gave and nothing wrote) holds no frame, and the
    search stops where it begins: a pattern of mostly zero bytes is slow to look for in zeros.
    """
    data = buf if hasattr(buf, "find") else bytes(buf)  # a mapped file is searched in place
    stop = run_back(data, b"\0", pos) + 11 + 6
    highs = [struct.pack("<Q", window)[3:]  # one search per window; the type byte is checked after
             for window in (near_seq - (1 << 24), near_seq, near_seq + (1 << 24)) if window >= 0]
    for start in range(pos + 11, stop, CHUNK):  # a chunk at a time, in order: the first found is first
        end = min(stop, start + CHUNK + 5)
        cands: set[int] = set()
        for hi in highs:
            i = data.find(hi, start, end)
            while i != -1:
                if i + 5 < len(data) and 0 < data[i + 5] <= MAX_TYPE:
                    cands.add(i - 11)
                i = data.find(hi, i + 1, end)
        found = next((off for off in sorted(cands) if off >= pos and valid_at(data, off) is not None), None)
        _release(data, start, start + CHUNK)
        if found is not None:
            return found
    return None


CHUNK = 1 << 20


def run_back(data, byte: bytes, floor: int) -> int:
    """Where the run of `byte` that ends `data` begins (not below `floor`), a chunk at a time:
    no copy of the whole of a large (mapped) file, and no page of it kept mapped."""
    end = len(data)
    while end > floor:
        lo = max(floor, end - CHUNK)
        kept = len(bytes(data[lo:end]).rstrip(byte))
        _release(data, lo, end)
        if kept:
            return lo + kept
        end = lo
    return floor


def _release(data, lo: int, hi: int) -> None:
    """Let the kernel drop the pages of a mapped file read so far (they stay in its cache and
    come back if read again): a walk over a tail of gigabytes holds a chunk, not the tail."""
    if isinstance(data, mmap.mmap):
        start = -(-lo // mmap.PAGESIZE) * mmap.PAGESIZE
        stop = min(hi, len(data)) // mmap.PAGESIZE * mmap.PAGESIZE
        if stop > start:
            data.madvise(mmap.MADV_DONTNEED, start, stop - start)


def run_forward(data, byte: bytes, start: int, stop: int) -> int:
    """How many bytes of `byte` begin `data[start:stop]`, a chunk at a time."""
    at = start
    while at < stop:
        chunk = bytes(data[at:min(stop, at + CHUNK)])
        _release(data, at, at + len(chunk))
        rest = len(chunk.lstrip(byte))
        if rest:
            return at + len(chunk) - rest - start
        at += len(chunk)
    return stop - start
