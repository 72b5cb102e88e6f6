"""The leader's writes: route mode's state into etcd, one transaction per batch.

A source of the session (kvtui/live/session.py polls it after the subscribers and the proxy,
so it sees everything a poll delivered). On each poll it takes what changed, under the
session's lock: the blocks the state marked touched, the sessions the router routed, the seq
each subscriber expects next; it turns them into the snapshot keys they fall in
(kvtui/live/etcd_snapshot.py), serialised from a mirror of the buckets it keeps (so a batch
costs the size of the buckets it touched, not of the whole state), and sends them as one
transaction without waiting for it. What changes while a transaction is out waits and goes
in the next one, the newest value of a key winning: under load batches merge, they never
queue. A batch larger than etcd's limits for one transaction (MAX_OPS operations, MAX_BYTES)
goes out in as many as it takes, one per poll.

Every transaction is fenced: it applies only if the leader key still has the create_revision
this process won it at (kvtui/live/etcd_election.py). If it does not, another process leads:
this one loses leadership, writes nothing more, and its proxy refuses to route (503). A
transaction that fails to reach etcd is retried with the next one (its keys go back into the
waiting set unless a newer value is already there).
"""

from __future__ import annotations

import threading
from functools import partial

from kvtui.live.etcd_election import Leadership, leader_key
from kvtui.live.etcd_link import EtcdLink
from kvtui.live.etcd_snapshot import (
    BUCKETS, Snapshot, block_size_key, blocks_key, bucket_of, pack, seq_key, session_bucket, sessions_key)

MAX_OPS = 120  # etcd's --max-txn-ops is 128 by default
MAX_BYTES = 1 << 20  # its --max-request-bytes is 1.5 MiB by default


class EtcdKeeper:
    def __init__(self, link: EtcdLink, leadership: Leadership, session, router, restored: Snapshot):
        self.link, self.leadership, self.session, self.router = link, leadership, session, router
        self.prefix = link.target.prefix
        self.blocks = restored.blocks  # the mirror: (engine, bucket) -> {(medium, hash): key}
        self.routes = restored.sessions  # bucket -> {session: engine}
        self.seqs = dict(restored.seqs)
        self.block_size = restored.block_size
        self.waiting: dict[bytes, bytes] = {}
        self.out: dict[bytes, bytes] | None = None  # the transaction in flight
        self.idle = threading.Event()  # no transaction out
        self.idle.set()
        self.lock = threading.Lock()  # `waiting` and `out`: the poll thread's and the link's
        self.txns = self.keys = self.bytes = self.failures = 0
        session.state.touched, router.touched = set(), set()

    def take(self) -> list:
        """Collect this poll's changes and send them if no transaction is out; delivers nothing."""
        if self.leadership.lost.is_set():
            return []
        with self.session.lock:
            changed = self._changed()
        with self.lock:
            self.waiting.update(changed)
            if self.out is None and self.waiting:
                self._send()
        return []

    def _changed(self) -> dict[bytes, bytes]:
        state, dirty = self.session.state, set()
        for engine, medium, engine_hash in state.touched:
            if medium is None:  # all of it went: every bucket is written again (empty, or refilled)
                dirty |= self._forget(engine)
                continue
            bucket = bucket_of(engine_hash)
            key = state.blocks[engine].by_medium[medium].get(engine_hash)
            held = self.blocks.setdefault((engine, bucket), {})
            if key is None:
                held.pop((medium, engine_hash), None)
            else:
                held[(medium, engine_hash)] = key
            dirty.add((engine, bucket))
        state.touched = set()
        out = {blocks_key(self.prefix, e, b): pack([[m, h, k] for (m, h), k in self.blocks.get((e, b), {}).items()])
               for e, b in dirty}
        out.update(self._sessions())
        size = next((f.block_size for f in state.figures.values() if f.block_size), None)
        if size is not None and size != self.block_size:
            self.block_size = size
            out[block_size_key(self.prefix)] = str(size).encode()
        for s in self.session.subscribers:
            if self.seqs.get(s.name) != s.expected:
                self.seqs[s.name] = s.expected
                out[seq_key(self.prefix, s.name)] = str(s.expected).encode()
        return out

    def _forget(self, engine: str) -> set[tuple[str, int]]:
        for b in range(BUCKETS):
            self.blocks[(engine, b)] = {}
        return {(engine, b) for b in range(BUCKETS)}

    def _sessions(self) -> dict[bytes, bytes]:
        buckets = set()
        for s in self.router.touched:
            b = session_bucket(s)
            self.routes.setdefault(b, {})[s] = self.router.sessions[s]
            buckets.add(b)
        self.router.touched = set()
        return {sessions_key(self.prefix, b): pack(self.routes[b]) for b in buckets}

    def _send(self) -> None:
        """One transaction of what waits, up to etcd's limits, fenced on the leader key (under `lock`)."""
        out: dict[bytes, bytes] = {}
        size = 0
        for key in list(self.waiting):
            if out and (len(out) >= MAX_OPS or size + len(self.waiting[key]) > MAX_BYTES):
                break
            out[key] = self.waiting.pop(key)
            size += len(key) + len(out[key])
        self.out = out
        self.idle.clear()
        self.link.submit(partial(self._txn, out), self._sent)

    async def _txn(self, out: dict[bytes, bytes]) -> bool:
        client = self.link.client()
        tx = client.transactions
        fence = tx.create(leader_key(self.link)) == self.leadership.revision
        won, _ = await client.transaction(compare=[fence], success=[tx.put(k, v) for k, v in out.items()], failure=[])
        return won

    def _sent(self, future) -> None:
        """On the link's thread: count it, or put its keys back, or step down."""
        with self.lock:
            out, self.out = self.out or {}, None
            if future.exception() is not None:
                self.failures += 1
                for k, v in out.items():
                    self.waiting.setdefault(k, v)
            elif not future.result():
                self.leadership.lose("another kvtui holds the routing lease")
            else:
                self.txns += 1
                self.keys += len(out)
                self.bytes += sum(len(k) + len(v) for k, v in out.items())
            self.idle.set()

    def flush(self, seconds: float = 5.0) -> None:
        """Send what waits and wait for it (a clean exit), for at most `seconds`."""
        for _ in range(int(seconds / 0.05)):
            if not self.idle.wait(0.05):
                continue
            with self.lock:
                if not self.waiting or self.leadership.lost.is_set():
                    return
                if self.out is None:
                    self._send()

    def line(self) -> str:
        return (f"etcd: {self.txns} transactions, {self.keys} keys written ({self.bytes:,} bytes), "
                f"{self.failures} failed to reach etcd" + (f"; not the leader: {self.leadership.why}"
                                                           if self.leadership.lost.is_set() else ""))

    def close(self) -> None:
        if not self.leadership.lost.is_set():
            self.take()
            self.flush()
