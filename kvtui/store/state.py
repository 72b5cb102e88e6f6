"""The control plane's metadata as an in-memory value: a pure function of the ops applied.

What it holds (names are interned to small ids; see `ops.py`):
- cache entries: block key (uint64) -> the set of nodes caching it, as a bitmask over node
  ids, plus the group (prefix owner) the key was first stored for;
- the node registry: node -> (kv_blocks, up);
- eviction counters: node -> blocks evicted;
- session routes: session -> node.

Two views of the same value:
- `plain()` — dicts of names, the form tests compare against an independent model;
- `digest_of(plain)` — sha256 over a canonical serialisation of the plain form: every table
  sorted (names by their strings, keys numerically), so neither dict insertion order nor the
  log's interning order changes it. Equal states have equal digests, whatever history led
  there (e.g. replay from a snapshot vs from the first record).

Snapshots (`encode_snapshot` / `MetaState.decode_snapshot`) are binary: name tables, the
registry, counters, then the cache entries as three packed arrays (keys, masks, groups) —
loading is a few `array.frombytes` and one `dict(zip(...))`, which is why a snapshot makes
recovery cost depend on the state's size, not on the history's length.
"""

from __future__ import annotations

import hashlib
import struct
import sys
from array import array
from collections import Counter

from kvtui.store import ops as o

_BIG = sys.byteorder == "big"
_U32 = struct.Struct("<I")
_U64 = struct.Struct("<Q")
SNAP_MAGIC = b"KVMETA01"


class MetaState:
    """Mutable metadata; every mutation is one op. Callers go through MetadataStore."""

    __slots__ = ("names", "ids", "registry", "where", "group", "sessions", "evicted", "held")

    def __init__(self) -> None:
        self.names: tuple[list[str], list[str], list[str]] = ([], [], [])
        self.ids: tuple[dict[str, int], dict[str, int], dict[str, int]] = ({}, {}, {})
        self.registry: dict[int, tuple[int, bool]] = {}
        self.where: dict[int, int] = {}
        self.group: dict[int, int] = {}
        self.sessions: dict[int, int] = {}
        self.evicted: dict[int, int] = {}
        self.held: dict[int, int] = {}

    # -- ops ---------------------------------------------------------------------------------

    def define(self, kind: int, ident: int, name: str) -> None:
        names = self.names[kind]
        if ident != len(names) or name in self.ids[kind]:
            raise ValueError(f"DEFINE {o.KINDS[kind]} {ident} {name!r} out of order or repeated")
        names.append(name)
        self.ids[kind][name] = ident

    def stored(self, nid: int, gid: int, keys) -> int:
        where, group = self.where, self.group
        bit = 1 << nid
        added = 0
        for k in keys:
            m = where.get(k, 0)
            if not m & bit:
                if not m:
                    group[k] = gid
                where[k] = m | bit
                added += 1
        if added:
            self.held[nid] = self.held.get(nid, 0) + added
        return added

    def evict(self, nid: int, keys, count: bool = True) -> int:
        where, group = self.where, self.group
        bit = 1 << nid
        removed = 0
        for k in keys:
            m = where.get(k, 0)
            if m & bit:
                m ^= bit
                if m:
                    where[k] = m
                else:
                    del where[k]
                    del group[k]
                removed += 1
        if removed:
            self.held[nid] -= removed
            if count:
                self.evicted[nid] = self.evicted.get(nid, 0) + removed
        return removed

    def cleared(self, nid: int) -> int:
        bit = 1 << nid
        if not self.held.get(nid):
            return 0
        return self.evict(nid, [k for k, m in self.where.items() if m & bit], count=False)

    def apply_payload(self, buf) -> int:
        """Apply one frame's ops; returns how many (DEFINEs not counted). ValueError if bad."""
        pos, n, count = 0, len(buf), 0
        nodes = len(self.names[o.NODE])
        keys_struct = o.keys_struct
        where, group, held, evicted = self.where, self.group, self.held, self.evicted
        stored_unpack, evicted_unpack = o.S_STORED.unpack_from, o.S_EVICTED.unpack_from
        where_get = where.get
        try:
            while pos < n:
                op = buf[pos]
                # the two hot ops are inlined copies of stored() / evict()
                if op == 4:  # BLOCKS_STORED
                    _, nid, gid, k = stored_unpack(buf, pos)
                    pos += 11
                    keys = keys_struct(k).unpack_from(buf, pos)
                    pos += 8 * k
                    if nid >= nodes or gid >= len(self.names[o.GROUP]):
                        raise ValueError("undefined node or group id")
                    bit = 1 << nid
                    added = 0
                    for key in keys:
                        m = where_get(key, 0)
                        if not m & bit:
                            if not m:
                                group[key] = gid
                            where[key] = m | bit
                            added += 1
                    if added:
                        held[nid] = held.get(nid, 0) + added
                elif op == 5:  # BLOCKS_EVICTED
                    _, nid, k = evicted_unpack(buf, pos)
                    pos += 7
                    keys = keys_struct(k).unpack_from(buf, pos)
                    pos += 8 * k
                    if nid >= nodes:
                        raise ValueError("undefined node id")
                    bit = 1 << nid
                    removed = 0
                    for key in keys:
                        m = where_get(key, 0)
                        if m & bit:
                            m ^= bit
                            if m:
                                where[key] = m
                            else:
                                del where[key]
                                del group[key]
                            removed += 1
                    if removed:
                        held[nid] -= removed
                        evicted[nid] = evicted.get(nid, 0) + removed
                elif op == o.SESSION_ROUTE:
                    _, sid, nid = o.S_ROUTE.unpack_from(buf, pos)
                    pos += 7
                    if nid >= nodes or sid >= len(self.names[o.SESSION]):
                        raise ValueError("undefined session or node id")
                    self.sessions[sid] = nid
                elif op == o.DEFINE:
                    _, kind, ident, ln = o.S_DEFINE.unpack_from(buf, pos)
                    pos += 8
                    if kind > o.SESSION or pos + ln > n:
                        raise ValueError("bad DEFINE")
                    self.define(kind, ident, bytes(buf[pos:pos + ln]).decode("utf-8"))
                    pos += ln
                    nodes = len(self.names[o.NODE])
                    count -= 1
                elif op == o.NODE_REGISTER:
                    _, nid, kv = o.S_REGISTER.unpack_from(buf, pos)
                    pos += 7
                    if nid >= nodes:
                        raise ValueError("undefined node id")
                    self.registry[nid] = (kv, True)
                elif op == o.NODE_STATE:
                    _, nid, up = o.S_STATE.unpack_from(buf, pos)
                    pos += 4
                    if nid not in self.registry:
                        raise ValueError("NODE_STATE for an unregistered node")
                    self.registry[nid] = (self.registry[nid][0], bool(up))
                elif op == o.NODE_CLEARED:
                    _, nid = o.S_CLEARED.unpack_from(buf, pos)
                    pos += 3
                    if nid >= nodes:
                        raise ValueError("undefined node id")
                    self.cleared(nid)
                else:
                    raise ValueError(f"unknown opcode {op}")
                count += 1
        except (struct.error, UnicodeDecodeError) as e:
            raise ValueError(f"malformed op at payload offset {pos}: {e}") from None
        return count

    # -- views -------------------------------------------------------------------------------

    def node_names(self, mask: int) -> list[str]:
        names = self.names[o.NODE]
        out = []
        i = 0
        while mask:
            if mask & 1:
                out.append(names[i])
            mask >>= 1
            i += 1
        return out

    def plain(self) -> dict:
        """The state as plain dicts of names (see the module docstring)."""
        nn, gn, sn = self.names
        masks: dict[int, tuple[str, ...]] = {}
        entries = {}
        for k, m in self.where.items():
            t = masks.get(m)
            if t is None:
                t = masks[m] = tuple(sorted(self.node_names(m)))
            entries[k] = (t, gn[self.group[k]])
        return {
            "nodes": {nn[i]: (kv, up) for i, (kv, up) in self.registry.items()},
            "evictions": {nn[i]: c for i, c in self.evicted.items() if c},
            "entries": entries,
            "sessions": {sn[s]: nn[n] for s, n in self.sessions.items()},
        }

    # -- snapshots ---------------------------------------------------------------------------

    def encode_snapshot(self) -> bytes:
        out = bytearray(SNAP_MAGIC)
        for kind in (o.NODE, o.GROUP, o.SESSION):
            names = self.names[kind]
            out += _U32.pack(len(names))
            for name in names:
                b = name.encode("utf-8")
                out += struct.pack("<H", len(b)) + b
        out += _U32.pack(len(self.registry))
        for nid, (kv, up) in self.registry.items():
            out += struct.pack("<HIB", nid, kv, up)
        out += _U32.pack(len(self.evicted))
        for nid, c in self.evicted.items():
            out += struct.pack("<HQ", nid, c)
        n = len(self.where)
        width = max(1, (len(self.names[o.NODE]) + 7) // 8)
        out += _U64.pack(n) + struct.pack("<H", width)
        keys = array("Q", self.where.keys())
        groups = array("I", (self.group[k] for k in keys))
        if width <= 8:
            masks = array("Q", self.where.values())
            if _BIG:
                masks.byteswap()
            mbytes = masks.tobytes()
        else:
            mbytes = b"".join(m.to_bytes(width, "little") for m in self.where.values())
        if _BIG:
            keys.byteswap()
            groups.byteswap()
        out += keys.tobytes() + mbytes + groups.tobytes()
        out += _U32.pack(len(self.sessions))
        sids = array("I", self.sessions.keys())
        nids = array("H", self.sessions.values())
        if _BIG:
            sids.byteswap()
            nids.byteswap()
        out += sids.tobytes() + nids.tobytes()
        return bytes(out)

    @classmethod
    def decode_snapshot(cls, payload) -> "MetaState":
        """The state a snapshot holds; ValueError if the payload is not one."""
        buf = memoryview(payload)
        st = cls()
        try:
            if bytes(buf[:8]) != SNAP_MAGIC:
                raise ValueError("not a metadata snapshot")
            pos = 8
            for kind in (o.NODE, o.GROUP, o.SESSION):
                (cnt,) = _U32.unpack_from(buf, pos)
                pos += 4
                for i in range(cnt):
                    (ln,) = struct.unpack_from("<H", buf, pos)
                    pos += 2
                    st.define(kind, i, bytes(buf[pos:pos + ln]).decode("utf-8"))
                    pos += ln
            nodes = len(st.names[o.NODE])
            (cnt,) = _U32.unpack_from(buf, pos)
            pos += 4
            for _ in range(cnt):
                nid, kv, up = struct.unpack_from("<HIB", buf, pos)
                pos += 7
                st.registry[nid] = (kv, bool(up))
            (cnt,) = _U32.unpack_from(buf, pos)
            pos += 4
            for _ in range(cnt):
                nid, c = struct.unpack_from("<HQ", buf, pos)
                pos += 10
                st.evicted[nid] = c
            (n,) = _U64.unpack_from(buf, pos)
            (width,) = struct.unpack_from("<H", buf, pos + 8)
            pos += 10
            keys = _arr("Q", buf, pos, n)
            pos += 8 * n
            if width <= 8:
                masks = _arr("Q", buf, pos, n)
                pos += 8 * n
            else:
                masks = [int.from_bytes(buf[pos + i * width:pos + (i + 1) * width], "little")
                         for i in range(n)]
                pos += width * n
            groups = _arr("I", buf, pos, n)
            pos += 4 * n
            st.where = dict(zip(keys, masks))
            st.group = dict(zip(keys, groups))
            if len(st.where) != n or (n and (max(groups) >= len(st.names[o.GROUP])
                                             or max(masks) >> nodes or min(masks) == 0)):
                raise ValueError("inconsistent cache entries")
            (cnt,) = _U32.unpack_from(buf, pos)
            pos += 4
            sids = _arr("I", buf, pos, cnt)
            pos += 4 * cnt
            nids = _arr("H", buf, pos, cnt)
            pos += 2 * cnt
            st.sessions = dict(zip(sids, nids))
            if pos != len(buf):
                raise ValueError(f"{len(buf) - pos} trailing bytes")
            if any(i >= nodes for i in st.registry) or any(i >= nodes for i in st.evicted) or \
                    (cnt and (max(nids) >= nodes or max(sids) >= len(st.names[o.SESSION]))):
                raise ValueError("snapshot refers to undefined names")
        except (struct.error, UnicodeDecodeError, IndexError) as e:
            raise ValueError(f"malformed metadata snapshot: {e}") from None
        held: dict[int, int] = {}
        for m, c in Counter(st.where.values()).items():
            i = 0
            while m:
                if m & 1:
                    held[i] = held.get(i, 0) + c
                m >>= 1
                i += 1
        st.held = held
        return st


def _arr(code: str, buf, pos: int, n: int) -> array:
    a = array(code)
    end = pos + a.itemsize * n
    if end > len(buf):
        raise ValueError("snapshot array runs past the end")
    a.frombytes(buf[pos:end])
    if _BIG:
        a.byteswap()
    return a


def digest_of(plain: dict) -> str:
    """sha256 of the canonical serialisation of a plain state (see the module docstring)."""
    out = bytearray(b"kvtui-metadata-v1\n")

    def s(x: str) -> None:
        b = x.encode("utf-8")
        out.extend(_U32.pack(len(b)))
        out.extend(b)

    nodes = plain["nodes"]
    out += _U32.pack(len(nodes))
    for name in sorted(nodes):
        kv, up = nodes[name]
        s(name)
        out += struct.pack("<IB", kv, bool(up))
    ev = {k: v for k, v in plain["evictions"].items() if v}
    out += _U32.pack(len(ev))
    for name in sorted(ev):
        s(name)
        out += _U64.pack(ev[name])
    entries = plain["entries"]
    out += _U64.pack(len(entries))
    for k in sorted(entries):
        holders, group = entries[k]
        out += _U64.pack(k)
        out += _U32.pack(len(holders))
        for h in sorted(holders):
            s(h)
        s(group)
    sess = plain["sessions"]
    out += _U32.pack(len(sess))
    for name in sorted(sess):
        s(name)
        s(sess[name])
    return hashlib.sha256(out).hexdigest()
