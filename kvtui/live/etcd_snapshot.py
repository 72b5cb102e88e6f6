"""Route mode's state as etcd keys: what a standby needs to route as the leader did.

Under the target's prefix (kvtui/live/etcd_url.py):
- `blocks/ENGINE/NN`: the blocks ENGINE holds whose engine hash falls in bucket NN of BUCKETS,
  as a msgpack list of [medium, engine hash, kvtui key]: the engine-hash map lets the next
  events' parents and removals be found (kvtui/live/state.py), the keys rebuild the index;
- `seq/ENGINE`: the seq the leader expects next from ENGINE, so the standby's subscriber asks
  the engine's replay for what came after the snapshot, not for what it already holds;
- `sessions/NN`: the session routes (session -> engine) of bucket NN of SESSION_BUCKETS;
- `block_size`: the engines' block size as their metrics said, which the standby keys its first
  requests with before its own first scrape (else it would key them by 16 tokens, and miss).

Buckets, because etcd bounds a transaction (128 operations, a 1.5 MiB request by default) and
a batch changes a few blocks: only the buckets it touched are written again. An engine at
kvtui's cap (HELD_MAX blocks) has ~4,000 blocks a bucket, some 200 kB. The bucket of a hash is
stable across processes (not Python's salted `hash`), so a new leader rewrites the same keys.

Restored blocks have no owner (the app's picture colours them "?"), and their keys all count as
possible first blocks of a prompt (KVIndex `first=-1`: a superset, which only costs the index
its shortcut for prompts nobody holds).
"""

from __future__ import annotations

import zlib
from collections import defaultdict
from dataclasses import dataclass, field
from urllib.parse import quote, unquote

import msgpack

from kvtui.live.slots import UNKNOWN_OWNER
from kvtui.live.state import TIER, LiveState

BUCKETS = 64
SESSION_BUCKETS = 16


def bucket_of(engine_hash) -> int:
    """vLLM's hashes are bytes (0.33.0) or ints (0.11.0, SGLang): both map the same in every process."""
    if isinstance(engine_hash, bytes):
        return zlib.crc32(engine_hash) % BUCKETS
    return int(engine_hash) % BUCKETS


def session_bucket(session: str) -> int:
    return zlib.crc32(session.encode()) % SESSION_BUCKETS


def blocks_key(prefix: bytes, engine: str, bucket: int) -> bytes:
    return prefix + f"blocks/{quote(engine, safe='')}/{bucket:02d}".encode()


def seq_key(prefix: bytes, engine: str) -> bytes:
    return prefix + f"seq/{quote(engine, safe='')}".encode()


def sessions_key(prefix: bytes, bucket: int) -> bytes:
    return prefix + f"sessions/{bucket:02d}".encode()


def block_size_key(prefix: bytes) -> bytes:
    return prefix + b"block_size"


def pack(value) -> bytes:
    return msgpack.packb(value, use_bin_type=True)


@dataclass
class Snapshot:
    """What etcd held: per (engine, bucket) {(medium, engine hash): key}, seqs and sessions."""

    blocks: dict[tuple[str, int], dict[tuple[str, object], int]] = field(default_factory=lambda: defaultdict(dict))
    seqs: dict[str, int] = field(default_factory=dict)
    sessions: dict[int, dict[str, str]] = field(default_factory=lambda: defaultdict(dict))
    block_size: int | None = None

    def read(self, prefix: bytes, key: bytes, value: bytes) -> None:
        """One etcd key of the layout above; keys of another shape are not kvtui's and left alone."""
        parts = key[len(prefix):].decode().split("/")
        match parts:
            case ["blocks", engine, bucket]:
                self.blocks[(unquote(engine), int(bucket))] = {(m, h): k for m, h, k in _unpack(value)}
            case ["seq", engine]:
                self.seqs[unquote(engine)] = int(value)
            case ["sessions", bucket]:
                self.sessions[int(bucket)] = dict(_unpack(value))
            case ["block_size"]:
                self.block_size = int(value)

    def held(self) -> int:
        return sum(len(b) for b in self.blocks.values())

    def routes(self) -> dict[str, str]:
        return {s: e for bucket in self.sessions.values() for s, e in bucket.items()}

    def restore(self, state: LiveState) -> None:
        """Put the blocks into a fresh state as if their stored events had been applied."""
        for (engine, _), held in self.blocks.items():
            state.engine(engine)
            blocks = state.blocks[engine]
            keys: dict[str, list[int]] = defaultdict(list)
            for (medium, engine_hash), key in held.items():
                blocks.by_medium[medium][engine_hash] = key
                state.index[key].add((engine, medium))
                keys[medium].append(key)
                if medium == "GPU":
                    blocks.gpu_cells.place(engine_hash, UNKNOWN_OWNER)
            for medium, some in keys.items():
                state.kv_index.add(engine, some, TIER[medium], -1)


def _unpack(value: bytes):
    return msgpack.unpackb(value, raw=False, strict_map_key=False) if value else []


def load(link) -> Snapshot:
    """The snapshot under the link's prefix, read key by key (one range read of every bucket
    could pass gRPC's 4 MiB message limit at kvtui's cap; the key list cannot)."""
    return link.call(lambda: _load(link.client(), link.target.prefix), timeout=120)


async def _load(client, prefix: bytes) -> Snapshot:
    snapshot = Snapshot()
    for kv in await client.get_prefix(prefix, keys_only=True):
        got = await client.get(kv.key)
        if got is not None:
            snapshot.read(prefix, kv.key, got.value)
    return snapshot
