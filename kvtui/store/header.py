"""The self-checking file header that segments and snapshots share.

Layout (44 bytes, little-endian): magic (8 bytes, names the file kind), version (u16), padding
(u16), log id (u64), then three u64/u64/u32 fields whose meaning is the file kind's, then a
CRC-32 of everything before it. A header that fails its checksum, names another kind or an
unknown version is refused with a message saying which.
"""

from __future__ import annotations

import struct
import zlib

VERSION = 1
LAYOUT = struct.Struct("<8sHHQQQI")
_CRC = struct.Struct("<I")
SIZE = LAYOUT.size + _CRC.size


def pack(magic: bytes, log_id: int, a: int, b: int, c: int) -> tuple[bytes, int]:
    """The header's bytes and its own CRC (segments chain to the previous header's CRC)."""
    body = LAYOUT.pack(magic, VERSION, 0, log_id, a, b, c)
    crc = zlib.crc32(body)
    return body + _CRC.pack(crc), crc


def unpack(buf: bytes, magic: bytes, what: str, error: type[Exception]) -> tuple[int, int, int, int, int]:
    """(log_id, a, b, c, own crc) of a header, or `error` naming `what` was wrong."""
    if len(buf) < SIZE:
        raise error(f"{what} header truncated ({len(buf)} of {SIZE} bytes)")
    body = bytes(buf[: LAYOUT.size])
    (crc,) = _CRC.unpack_from(buf, LAYOUT.size)
    if zlib.crc32(body) != crc:
        raise error(f"{what} header checksum mismatch")
    found, version, _, log_id, a, b, c = LAYOUT.unpack(body)
    if found != magic:
        raise error(f"not a kvtui {what} (magic {found!r})")
    if version != VERSION:
        raise error(f"unsupported {what} version {version}")
    return log_id, a, b, c, crc
