"""Helpers for the store's fault-injection tests: an independent model, random ops, file surgery.

The model is deliberately naive (dicts of sets of names) and shares no code with
`kvtui.store.state` except the canonical digest of the plain form: P3 ("recovered state equals
a model of the replayed prefix") compares the store with *this*.

Campaign sizes scale with KVTUI_FAULT_SCALE (default 1, the CI setting: the whole store suite
runs in well under a minute on 2 cores). For a long campaign by hand:

    KVTUI_FAULT_SCALE=20 /tmp/venv/bin/pytest tests/store -q
"""

from __future__ import annotations

import copy
import os
import random
import shutil
import struct

from kvtui.store import frame as fr
from kvtui.store import segment as sg
from kvtui.store.state import digest_of

SCALE = max(1, int(os.environ.get("KVTUI_FAULT_SCALE", "1")))

NODES = ("node-a", "node-b", "node-c", "node-d")
GROUPS = ("chat", "rag", "code", "")


class Model:
    """The metadata semantics, written as plainly as possible."""

    def __init__(self) -> None:
        self.nodes: dict[str, tuple[int, bool]] = {}
        self.evictions: dict[str, int] = {}
        self.holders: dict[int, set[str]] = {}
        self.group: dict[int, str] = {}
        self.sessions: dict[str, str] = {}

    def apply(self, op: tuple) -> None:
        kind = op[0]
        if kind == "register":
            self.nodes[op[1]] = (op[2], True)
        elif kind == "state":
            self.nodes[op[1]] = (self.nodes[op[1]][0], op[2])
        elif kind == "stored":
            _, node, keys, group = op
            for k in keys:
                if k not in self.holders:
                    self.holders[k] = set()
                    self.group[k] = group
                self.holders[k].add(node)
        elif kind == "evicted":
            _, node, keys = op
            for k in keys:
                if node in self.holders.get(k, ()):
                    self._drop(k, node)
                    self.evictions[node] = self.evictions.get(node, 0) + 1
        elif kind == "cleared":
            for k in [k for k, h in self.holders.items() if op[1] in h]:
                self._drop(k, op[1])
        elif kind == "route":
            self.sessions[op[1]] = op[2]
        else:
            raise AssertionError(op)

    def _drop(self, k: int, node: str) -> None:
        self.holders[k].discard(node)
        if not self.holders[k]:
            del self.holders[k]
            del self.group[k]

    def plain(self) -> dict:
        return {
            "nodes": dict(self.nodes),
            "evictions": {n: c for n, c in self.evictions.items() if c},
            "entries": {k: (tuple(sorted(h)), self.group[k]) for k, h in self.holders.items()},
            "sessions": dict(self.sessions),
        }

    def digest(self) -> str:
        return digest_of(self.plain())

    def copy(self) -> "Model":
        return copy.deepcopy(self)


def random_op(rng: random.Random, model: Model, keyspace: int = 400) -> tuple:
    """A random op valid in `model`'s state (NODE_STATE needs a registered node)."""
    r = rng.random()
    node = rng.choice(NODES)
    if r < 0.04 or not model.nodes:
        return ("register", node, rng.choice((64, 128, 4096)))
    if r < 0.08:
        return ("state", rng.choice(sorted(model.nodes)), rng.random() < 0.5)
    if r < 0.50:
        base = rng.randrange(keyspace)
        keys = tuple((0x9E3779B97F4A7C15 * (base + i)) % (1 << 64)
                     for i in range(rng.randint(1, 12)))
        return ("stored", node, keys, rng.choice(GROUPS))
    if r < 0.82:
        base = rng.randrange(keyspace)
        keys = tuple((0x9E3779B97F4A7C15 * (base + i)) % (1 << 64)
                     for i in range(rng.randint(1, 8)))
        return ("evicted", node, keys)
    if r < 0.84:
        return ("cleared", node)
    return ("route", f"session-{rng.randrange(60)}", node)


def do(store, op: tuple) -> None:
    """Apply a model op through the store's public API."""
    kind = op[0]
    if kind == "register":
        store.register_node(op[1], op[2])
    elif kind == "state":
        store.set_node_up(op[1], op[2])
    elif kind == "stored":
        store.blocks_stored(op[1], op[2], group=op[3])
    elif kind == "evicted":
        store.blocks_evicted(op[1], op[2])
    elif kind == "cleared":
        store.node_cleared(op[1])
    elif kind == "route":
        store.route_session(op[1], op[2])
    else:
        raise AssertionError(op)


def random_batches(seed, n_batches: int, model: Model, max_ops: int = 12) -> list[list[tuple]]:
    """Batches of ops, each valid after the previous ones (advances a copy of `model`)."""
    rng = random.Random(seed)
    m = model.copy()
    out = []
    for _ in range(n_batches):
        batch = []
        for _ in range(rng.randint(1, max_ops)):
            op = random_op(rng, m)
            m.apply(op)
            batch.append(op)
        out.append(batch)
    return out


class History:
    """The digests of the model after every frame: which prefixes are legal outcomes."""

    def __init__(self) -> None:
        self.model = Model()
        self.digests = [self.model.digest()]  # digests[seq] = state after frame seq
        self.models = [self.model.copy()]  # models[seq] = the model after frame seq

    def add_frame(self, ops: list[tuple]) -> None:
        for op in ops:
            self.model.apply(op)
        self.sealed()

    def sealed(self) -> None:
        """The ops applied to `model` since the last call became one frame."""
        self.digests.append(self.model.digest())
        self.models.append(self.model.copy())

    def seq_of(self, digest: str) -> int | None:
        try:
            return len(self.digests) - 1 - self.digests[::-1].index(digest)
        except ValueError:
            return None


def build_log(store, rng: random.Random, frames: int, history: History, *,
              snapshot_at: tuple[int, ...] = ()) -> None:
    """Append `frames` random frames (one flush each), snapshotting after the given ones."""
    for i in range(frames):
        batch = []
        for _ in range(rng.randint(1, 10)):
            op = random_op(rng, history.model)
            history.model.apply(op)
            batch.append(op)
            do(store, op)
        store.flush()
        history.sealed()
        if i + 1 in snapshot_at:
            store.snapshot()


def frame_offsets(path: str) -> list[tuple[int, int, int]]:
    """(offset, end, seq) of every valid frame in a segment file."""
    data = open(path, "rb").read()
    hdr = sg.decode_header(data)
    stop = fr.scan(data, sg.HEADER_SIZE, hdr.first_seq, None)
    return [(off, off + fr.HEADER_SIZE + len(p), seq)
            for off, seq, _, p in fr.iter_frames(data, sg.HEADER_SIZE, stop.offset)]


def data_end(path: str) -> int:
    """Where a segment's frames end (the rest of the file, if any, is preallocation fill)."""
    fs = frame_offsets(path)
    return fs[-1][1] if fs else sg.HEADER_SIZE


def write_at(path: str, offset: int, data: bytes, *, truncate: bool = False) -> None:
    with open(path, "r+b") as f:
        f.seek(offset)
        f.write(data)
        if truncate:
            f.truncate()


def segments(d: str) -> list[str]:
    return sorted(n for n in os.listdir(d) if sg.parse_segment_name(n) is not None)


def snapshots(d: str) -> list[str]:
    return sorted(n for n in os.listdir(d) if n.startswith("snap-") and n.endswith(".snap"))


def flip_bit(path: str, offset: int, bit: int) -> None:
    with open(path, "r+b") as f:
        f.seek(offset)
        b = f.read(1)[0]
        f.seek(offset)
        f.write(bytes((b ^ (1 << bit),)))


def clone(src: str, dst: str) -> str:
    if os.path.exists(dst):
        shutil.rmtree(dst)
    shutil.copytree(src, dst, ignore=shutil.ignore_patterns("LOCK"))
    return dst


def u64(x: int) -> bytes:
    return struct.pack("<Q", x)


def cycle_batches(seed: int, cycle: int):
    """The ops a SIGKILL-test writer appends in one cycle (an endless generator of batches),
    independent of the store's state: the first batch (re)registers every node, so later
    NODE_STATE ops are always valid."""
    m = Model()
    first = [("register", node, 256) for node in NODES]
    for op in first:
        m.apply(op)
    yield first
    rng = random.Random(f"{seed}-{cycle}")
    while True:
        batch = []
        for _ in range(rng.randint(1, 8)):
            op = random_op(rng, m)
            m.apply(op)
            batch.append(op)
        yield batch
