"""The metadata operations and their compact binary encoding.

A frame's payload (type `FRAME_OPS` = 2) is a plain concatenation of ops, each an opcode byte and
fixed little-endian fields; block keys travel as packed uint64 arrays. Names (nodes, groups,
sessions) are interned *within the log*: the first time a name is used, a DEFINE op gives it
the next small id of its kind, in the same frame as its first use (so a frame never refers to
a name defined in a frame that might be lost). Ids are never reused, and snapshots carry the
name tables, so replay from any snapshot resolves every id. This is the idea of a string table
in a columnar or log format (e.g. the dictionary pages of Parquet), kept to what is needed: an
op that stores 8 blocks on a node is 11 + 64 bytes, not a JSON object.

    DEFINE          kind u8, id u32, length u16, utf-8 name     (kind: 0 node, 1 group, 2 session)
    NODE_REGISTER   node u16, kv_blocks u32                     (also marks the node up)
    NODE_STATE      node u16, up u8
    BLOCKS_STORED   node u16, group u32, count u32, count x key u64
    BLOCKS_EVICTED  node u16, count u32, count x key u64
    NODE_CLEARED    node u16
    SESSION_ROUTE   session u32, node u16
"""

from __future__ import annotations

import struct

FRAME_OPS = 2  # frame type of a batch of metadata ops (type 1 is the Log's generic RECORDS)

DEFINE = 1
NODE_REGISTER = 2
NODE_STATE = 3
BLOCKS_STORED = 4
BLOCKS_EVICTED = 5
NODE_CLEARED = 6
SESSION_ROUTE = 7

NAMES = {DEFINE: "DEFINE", NODE_REGISTER: "NODE_REGISTER", NODE_STATE: "NODE_STATE",
         BLOCKS_STORED: "BLOCKS_STORED", BLOCKS_EVICTED: "BLOCKS_EVICTED",
         NODE_CLEARED: "NODE_CLEARED", SESSION_ROUTE: "SESSION_ROUTE"}

NODE, GROUP, SESSION = 0, 1, 2
KINDS = ("node", "group", "session")
MAX_IDS = (1 << 16, 1 << 32, 1 << 32)
MAX_NAME = 0xFFFF

S_DEFINE = struct.Struct("<BBIH")
S_REGISTER = struct.Struct("<BHI")
S_STATE = struct.Struct("<BHB")
S_STORED = struct.Struct("<BHII")
S_EVICTED = struct.Struct("<BHI")
S_CLEARED = struct.Struct("<BH")
S_ROUTE = struct.Struct("<BIH")

_KEYS: dict[int, struct.Struct] = {}


def keys_struct(n: int) -> struct.Struct:
    """A cached Struct for n little-endian uint64s."""
    s = _KEYS.get(n)
    if s is None:
        s = struct.Struct(f"<{n}Q")
        if len(_KEYS) < 4096:
            _KEYS[n] = s
    return s


def pack_keys(keys) -> bytes:
    try:
        return keys_struct(len(keys)).pack(*keys)
    except struct.error as e:
        raise ValueError(f"block keys must be unsigned 64-bit integers: {e}") from None


def decode(payload) -> list[tuple]:
    """Ops of one frame as tuples (name, fields...), for `wal dump` and tests. Ids unresolved."""
    out: list[tuple] = []
    buf = memoryview(payload)
    pos, n = 0, len(buf)
    try:
        while pos < n:
            op = buf[pos]
            if op == DEFINE:
                _, kind, ident, ln = S_DEFINE.unpack_from(buf, pos)
                pos += S_DEFINE.size
                name = bytes(buf[pos:pos + ln]).decode("utf-8")
                if len(name.encode()) != ln or kind > SESSION:
                    raise ValueError("bad DEFINE")
                pos += ln
                out.append(("DEFINE", kind, ident, name))
            elif op == NODE_REGISTER:
                _, node, kv = S_REGISTER.unpack_from(buf, pos)
                pos += S_REGISTER.size
                out.append(("NODE_REGISTER", node, kv))
            elif op == NODE_STATE:
                _, node, up = S_STATE.unpack_from(buf, pos)
                pos += S_STATE.size
                out.append(("NODE_STATE", node, bool(up)))
            elif op == BLOCKS_STORED:
                _, node, group, k = S_STORED.unpack_from(buf, pos)
                pos += S_STORED.size
                keys = keys_struct(k).unpack_from(buf, pos)
                pos += 8 * k
                out.append(("BLOCKS_STORED", node, group, keys))
            elif op == BLOCKS_EVICTED:
                _, node, k = S_EVICTED.unpack_from(buf, pos)
                pos += S_EVICTED.size
                keys = keys_struct(k).unpack_from(buf, pos)
                pos += 8 * k
                out.append(("BLOCKS_EVICTED", node, keys))
            elif op == NODE_CLEARED:
                _, node = S_CLEARED.unpack_from(buf, pos)
                pos += S_CLEARED.size
                out.append(("NODE_CLEARED", node))
            elif op == SESSION_ROUTE:
                _, session, node = S_ROUTE.unpack_from(buf, pos)
                pos += S_ROUTE.size
                out.append(("SESSION_ROUTE", session, node))
            else:
                raise ValueError(f"unknown opcode {op} at payload offset {pos}")
    except (struct.error, UnicodeDecodeError) as e:
        raise ValueError(f"malformed op at payload offset {pos}: {e}") from None
    return out
