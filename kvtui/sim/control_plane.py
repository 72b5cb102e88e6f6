"""The control plane: the router's metadata, kept durable in the WAL-backed store.

What the router knows — which node caches which block keys (the KV index), which session
lives on which node, which nodes are registered and up — is written to a `MetadataStore` as
the simulation runs, and the in-memory index and session table are what the store says. The
nodes keep serving through a control-plane crash (the data plane does not depend on it):

- `crash()` drops the in-memory state (the store's memory, the KV index, the session table),
  reopens the log and replays it, checks that the recovered digest equals the digest of the
  last acknowledged record, and rebuilds the index and session table from the recovered state.
- Recovery takes simulated time derived from what was replayed (`RECOVERY_BASE_S` plus
  `RECOVERY_S_PER_RECORD` per record), never from the wall clock, so runs stay reproducible.
- While it recovers the router cannot route: arriving requests wait and are routed when it is
  back (`while_down: wait`), or are rejected (`while_down: reject`); either shows in the
  latency figures. KV events published meanwhile are held, as a durable event stream (NATS
  JetStream in Dynamo) would hold them, and applied after the replay.

Acknowledgement: the engine flushes the store whenever sim time is about to advance and records
were written (one write, plus an fsync under the `batch` policy): a group commit per sim
instant. A crash takes effect after the commit of the instant it happens in, so it loses
nothing acknowledged and the digests must match.

The store is the directory of GPU-resident blocks. A node's CPU tier (`offload:`) is reported
with `medium="cpu"` to the router's index only, not persisted: an index entry for a host-memory
block is a routing hint that is cheap to lose. After a recovery the router knows a node's CPU
tier only from what the tier stored since (the staleness counts show the gap).
"""

from __future__ import annotations

import shutil
import tempfile
from typing import TYPE_CHECKING, Sequence

from kvtui.events import ControlPlaneCrashed, ControlPlaneRecovered, Event, NodeDown, NodeUp
from kvtui.sim.metadata_ops import to_index, to_store
from kvtui.scenario.model import Metadata
from kvtui.store.metadata import MetadataStore

if TYPE_CHECKING:
    from kvtui.sim.bus import Bus
    from kvtui.sim.node import Node
    from kvtui.sim.router.router import Router

# A restart costs a fixed part (process start, opening the log) plus replay. The replay rate
# is the store's measured recovery speed on this kind of machine, ~0.7 M ops/s
# (benchmarks/wal_bench.py), rounded to 1.5 us per record.
RECOVERY_BASE_S = 0.25
RECOVERY_S_PER_RECORD = 1.5e-6


class ControlPlane:
    """The router's metadata on the WAL store. It talks to the Router only (never the
    Simulation): it becomes the sink of the Router's KV events, records session routes, and
    across a crash drops and rebuilds the Router's index and session table."""

    NODE_EVENTS = (NodeUp, NodeDown)

    def __init__(self, bus: "Bus", router: "Router", nodes: Sequence["Node"], spec: Metadata):
        self.bus = bus
        self.env = bus.env
        self.router = router
        self.spec = spec
        self._tmp = None
        directory = spec.dir
        if directory is None:
            self._tmp = tempfile.mkdtemp(prefix="kvtui-wal-")
            directory = self._tmp
        self.directory = directory
        self.store = MetadataStore.open(directory, fsync=spec.fsync, snapshot_every=spec.snapshot_every)
        self.down = False
        self.held_events: list[Event] = []
        self.crashes = 0
        for node in nodes:
            self.store.register_node(node.name, node.pool.num_blocks)
        self.store.flush()
        router.kv_sink = self.on_event
        router.session_sink = self.store.route_session
        bus.listen(self.on_event, self.NODE_EVENTS)

    # ------------------------------------------------------------------ recording
    def on_event(self, ev: Event) -> None:
        if self.down:
            self.held_events.append(ev)
            return
        self._apply(ev)

    def _apply(self, ev: Event) -> None:
        to_store(self.store, ev)
        to_index(self.router.index, ev)

    def end_of_step(self) -> None:
        """Acknowledge what this sim instant wrote: one group commit when the clock is about to
        move on (several engine steps often share an instant: an arrival, its routing, its
        scheduling), so the `batch` policy pays one write + fsync per instant."""
        if not self.down and self.store.pending_records and self.env.peek() > self.env.now:
            self.store.flush()

    # ------------------------------------------------------------------ crash and recovery
    def crash(self) -> None:
        if self.down:
            return
        router = self.router
        self.store.flush()  # a no-op between steps: everything is already acknowledged
        digest_before = self.store.digest()
        records = self.store.wal_stats()["records"]
        self.store.crash()
        router.index.reset({})
        router.sessions.clear()
        router.hold(reject=self.spec.while_down == "reject")
        self.down = True
        self.crashes += 1
        self.bus.emit(ControlPlaneCrashed, records=records, digest=digest_before)
        report = self.store.recover()
        downtime = RECOVERY_BASE_S + RECOVERY_S_PER_RECORD * report.records_replayed
        self.env.call_later(downtime, lambda _ev: self._recovered(digest_before, report, downtime))

    def _recovered(self, digest_before: str, report, downtime: float) -> None:
        """Replay is done: rebuild the router's view, catch up on held KV events, route."""
        router = self.router
        state = self.store.state()
        digest_after = self.store.digest()
        router.index.reset({key: nodes for key, (nodes, _group) in state["entries"].items()})
        router.sessions.update(state["sessions"])
        self.down = False
        held, self.held_events = self.held_events, []
        for ev in held:
            self._apply(ev)
        self.bus.emit(
            ControlPlaneRecovered,
            records=report.records_replayed,
            digest_before=digest_before,
            digest_after=digest_after,
            downtime=downtime,
            report=report.as_items() + (("held_events_applied", len(held)),),
        )
        router.release()

    # ------------------------------------------------------------------ lifecycle
    def counters(self) -> dict:
        return self.store.wal_stats()

    def close(self) -> None:
        try:
            self.store.close()
        finally:
            if self._tmp is not None:
                shutil.rmtree(self._tmp, ignore_errors=True)
                self._tmp = None
