"""The control plane replicated: the router's metadata in a Raft group (kvtui/sim/raft/).

Every write — a KV event, a session route, a node going down or up — is a command the
publisher proposes to the leader; each member applies committed commands, in log order, to its
own WAL-backed `MetadataStore` (one directory per member). Commands carry the publisher's
serial number and a member applies each serial once (Raft paper §8), so a command re-sent to a
new leader is never applied twice.

Where the router reads its KV index (`router_reads`, thesis §6.4; etcd's ReadOnlySafe and
ReadOnlyLeaseBased in etcd-io/raft read_only.go, and serializable reads in etcd's API):
- leader: what the leader has applied; the router routes only while a leader reaches a majority
  and has committed an entry of its term (a ReadIndex could be confirmed), else it holds requests
  (or rejects them, `while_down: reject`);
- lease: the leader answers alone while it leads (check-quorum deposes a cut leader within an
  election timeout): no quorum round, so a cut leader may answer stale until then;
- follower_serializable: the router's own member (`read_member`), whatever it has applied, as
  long as it is up: never refused, maybe stale — each decision taken on a member behind the
  commit index is a stale read (a `MetadataStaleRead`).

The KV-event stream while no leader takes commands (`stream`): durable holds them and the
publisher re-sends whatever a new leader's log lacks (JetStream; patterns A and B); lossy drops
them (a pub/sub socket; pattern C), and the index misses them for good.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from typing import TYPE_CHECKING, Sequence

import numpy as np

from kvtui.events import Event, MetadataStaleRead, NodeDown, NodeUp
from kvtui.scenario.model import Metadata, Replication
from kvtui.scenario.replication import member_names
from kvtui.sim.metadata_ops import to_index, to_store
from kvtui.sim.raft.group import RaftGroup
from kvtui.sim.raft.log import Entry
from kvtui.sim.raft.member import LEADER, Member
from kvtui.sim.raft.report import replication_report
from kvtui.store.metadata import MetadataStore

if TYPE_CHECKING:
    from kvtui.sim.bus import Bus
    from kvtui.sim.node import Node
    from kvtui.sim.router.router import Router

KILL_RESTART_S = 5.0
"""`c` in the app kills the leader; its process restarts this long after (a supervisor's restart)."""


class ReplicatedControlPlane:
    NODE_EVENTS = (NodeUp, NodeDown)

    def __init__(self, bus: "Bus", router: "Router", nodes: Sequence["Node"], spec: Metadata,
                 rep: Replication, rng: np.random.Generator, fsync_s: float):
        """`rep` is `spec.replication`, given apart so that it is known not to be None."""
        self.bus = bus
        self.env = bus.env
        self.router = router
        self.spec = spec
        self.rep = rep
        self.names = member_names(rep.members)
        self._tmp = None
        root = spec.dir
        if root is None:
            root = self._tmp = tempfile.mkdtemp(prefix="kvtui-raft-")
        # fsync="never": a member's crash is a process crash, which loses nothing flushed under any
        # policy (kvtui/store/metadata.py); its disk's fsync is paid in sim time (fsync_s), not on this one.
        self.stores = {n: MetadataStore.open(os.path.join(root, n), fsync="never", snapshot_every=spec.snapshot_every)
                       for n in self.names}
        self.read_member = rep.read_member or self.names[-1]
        self.serial = 0
        self.router_serial = 0
        self.unacked: dict[int, object] = {}  # serial -> command, proposed and not yet applied by a leader
        self.held: list[tuple[int, object]] = []  # durable stream: published while no leader took them
        self.down = False
        self._down_since = 0.0
        self.figures = {"kv_events_held": 0, "kv_events_lost": 0, "requests_delayed": 0,
                        "stale_reads": 0, "stale_read_prefix_tokens": 0, "router_down_s": 0.0}
        self.group = RaftGroup(self.env, self.names, rep, fsync_s, rng, bus.emit, self._apply_batch,
                               self._update, self._quiet)
        self._leader_seen = self.group.leader()
        for node in nodes:
            self._publish(("register", node.name, node.pool.num_blocks))
        router.kv_sink = self.on_event
        router.session_sink = self.on_session
        bus.listen(self.on_event, self.NODE_EVENTS)

    # ------------------------------------------------------------------ writes
    def on_event(self, ev: Event) -> None:
        self._publish(ev)

    def on_session(self, session: str, node: str) -> None:
        self._check_stale(session, node)
        self._publish(("session", session, node))

    def _publish(self, cmd: object) -> None:
        self.serial += 1
        if self.group.propose(self.serial, cmd):
            self.unacked[self.serial] = cmd
        elif self.rep.stream == "durable":
            self.held.append((self.serial, cmd))
            self.figures["kv_events_held"] += 1
        else:
            self.figures["kv_events_lost"] += 1

    def _new_leader(self, m: Member) -> None:
        """A new leader takes commands: re-send what its log lacks (durable) or count it lost
        (lossy), then the held ones, in serial order."""
        in_log = next((e.serial for e in reversed(m.log.entries) if e.serial), 0)
        missing = [s for s in self.unacked if s > in_log]
        if self.rep.stream == "durable":
            for s in missing:
                self.group.propose(s, self.unacked[s])
            for s, cmd in self.held:
                self.group.propose(s, cmd)
                self.unacked[s] = cmd
        else:
            self.figures["kv_events_lost"] += len(missing)
            for s in missing:
                del self.unacked[s]
        self.held = []

    # ------------------------------------------------------------------ apply
    def _apply_batch(self, m: Member, batch: list[tuple[int, Entry]]) -> None:
        store = self.stores[m.name]
        feed = m.name == self._read_source()
        index = self.router.index
        for _i, e in batch:
            if e.serial == 0 or e.serial <= m.max_serial:
                continue
            m.max_serial = e.serial
            to_store(store, e.command)
            if feed and e.serial > self.router_serial:
                self.router_serial = e.serial
                to_index(index, e.command)
            if m.role == LEADER:
                self.unacked.pop(e.serial, None)
        store.flush()
        m.durable_applied = m.applied

    def _read_source(self) -> str | None:
        if self.rep.router_reads == "follower_serializable":
            return self.read_member
        leader = self.group.leader()
        return leader.name if leader is not None else None

    # ------------------------------------------------------------------ reads
    def readable(self) -> bool:
        """Can the router read now (module docstring)?"""
        group = self.group
        if self.rep.router_reads == "follower_serializable":
            return group.members[self.read_member].up
        m = group.leader()
        if m is None or m.log.term_at(m.commit) != m.term:
            return False
        if self.rep.router_reads == "lease":
            return True
        ups = [n for n in self.names if group.members[n].up]
        return len(group.network.reachable(m.name, tuple(ups))) >= group.quorum

    def _check_stale(self, session: str, node: str) -> None:
        if self.rep.router_reads != "follower_serializable":
            return
        m = self.group.members[self.read_member]
        commit = max(x.commit for x in self.group.members.values() if x.up)
        behind = commit - m.applied
        if behind <= 0:
            return
        router = self.router
        self.figures["stale_reads"] += 1
        self.figures["stale_read_prefix_tokens"] += router.last_stale_blocks * router.block_size
        self.bus.emit(MetadataStaleRead, member=m.name, session=session, node=node, behind=behind,
                      stale_blocks=router.last_stale_blocks, stale=router.last_stale)

    def _update(self) -> None:
        """After any change in the group: a new leader takes commands; the router holds or routes."""
        leader = self.group.leader()
        if leader is not None and leader is not self._leader_seen:
            self._new_leader(leader)
        self._leader_seen = leader
        ok = self.readable()
        router = self.router
        if not ok and not self.down:
            self.down = True
            self._down_since = self.env.now
            router.hold(reject=self.spec.while_down == "reject")
        elif ok and self.down:
            self.down = False
            self.figures["router_down_s"] += self.env.now - self._down_since
            self.figures["requests_delayed"] += len(router.held)
            router.release()

    def _quiet(self) -> bool:
        return not self.down and not self.held and not self.unacked

    # ------------------------------------------------------------------ faults
    def kill_leader(self, restart_after: float | None = KILL_RESTART_S) -> str | None:
        m = self.group.leader()
        if m is None:
            return None
        self.member_down(m.name, restart_after)
        return m.name

    def member_down(self, name: str, restart_after: float | None = None) -> None:
        self.stores[name].crash()
        self.group.member_down(name)
        if restart_after is not None:
            self.env.call_later(restart_after, lambda _ev: self.member_up(name))

    def member_up(self, name: str) -> None:
        self.group.member_up(name, self._recover)

    def _recover(self, m: Member) -> None:
        """The member's store replays its WAL: the state as of its last applied batch."""
        self.stores[m.name].recover()

    def partition(self, members: tuple[str, ...], duration_s: float) -> None:
        self.group.partition(members, duration_s)

    # ------------------------------------------------------------------ figures and lifecycle
    def headline(self) -> str:
        """The app's header part: who leads which term, how many members are up, and whether the
        router can read."""
        members = self.group.members.values()
        up = sum(m.up for m in members)
        leader = self.group.leader()
        who = f"{leader.name} leads term {leader.term}" if leader is not None else \
            f"no leader, term {max(m.term for m in members)}"
        return f"metadata {who} ({up}/{len(self.names)} up{'' if not self.down else ', router cannot read'})"

    def end_of_step(self) -> None:
        """Members flush as they apply: nothing waits for the end of an instant."""

    def counters(self) -> dict:
        """The result document's `wal` section: the members' stores together."""
        stats = [s.wal_stats() for s in self.stores.values()]
        return {k: sum(st[k] for st in stats) for k in stats[0]}

    def report(self) -> dict:
        """The result document's `control_plane.replication` (kvtui/run/result.py)."""
        return replication_report(self)

    def close(self) -> None:
        try:
            for s in self.stores.values():
                s.close()
        finally:
            if self._tmp is not None:
                shutil.rmtree(self._tmp, ignore_errors=True)
                self._tmp = None
