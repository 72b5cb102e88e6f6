"""The members on the engine's loop: timers, message delivery, fsyncs, commit and apply.

Time: a message takes `link_latency_ms` one way; a member replies to an AppendEntries with
entries, or grants a vote, only after its fsync (the hardware profile's `fsync_us`): Raft
persists currentTerm, votedFor and the log before answering (paper Figure 2), and an entry
commits when a majority has appended and fsynced it. Election timeouts are drawn uniformly
from [lo, hi] from the group's own child of the run's SeedSequence; etcd draws from
[electionTimeout, 2 x electionTimeout) (etcd-io/raft v3.6.0 raft.go resetRandomizedElectionTimeout), the default.

The group starts as a running cluster does: m1 leads term 1, every member has voted for it, so
a run starts with a leader rather than with an election.

Quiet end: heartbeats would keep the loop busy forever, so the timers stop re-arming once the
loop holds nothing but the group's own events and the control plane is waiting for nothing
(`quiet()`): the run then ends as a run without a replicated store does, with "no more work".
"""

from __future__ import annotations

from typing import Callable

import numpy as np

from kvtui.events import (
    MetadataCommitted,
    MetadataElection,
    MetadataHealed,
    MetadataLeaderElected,
    MetadataMemberDown,
    MetadataMemberUp,
    MetadataPartitioned,
    MetadataStepDown,
    MetadataTermChanged,
    MetadataVote,
)
from kvtui.sim import loop
from kvtui.sim.raft.log import Entry
from kvtui.sim.raft.member import LEADER, Member
from kvtui.sim.raft.messages import Message, VoteReply, VoteRequest
from kvtui.sim.raft.network import Network

Applier = Callable[[Member, list[tuple[int, Entry]]], None]


class RaftGroup:
    def __init__(self, env: loop.Environment, names: tuple[str, ...], rep, fsync_s: float,
                 rng: np.random.Generator, emit: Callable, apply_batch: Applier,
                 on_change: Callable[[], None], quiet: Callable[[], bool]):
        self.env = env
        self.names = names
        self.rep = rep
        self.fsync_s = fsync_s
        self.lo_s, self.hi_s = (v / 1000.0 for v in rep.election_timeout_ms)
        self.heartbeat_s = rep.heartbeat_ms / 1000.0
        self.rng = rng
        self.emit = emit
        self.apply_batch = apply_batch
        self.on_change = on_change
        self.quiet = quiet
        self.network = Network(rep.link_latency_ms / 1000.0)
        self.members = {n: Member(n, names, self) for n in names}
        self.quorum = len(names) // 2 + 1
        self._armed: dict[str, float | None] = dict.fromkeys(names)
        self._lives = dict.fromkeys(names, 0)  # a restart's number: fsyncs of a past life are void
        self._ours = 0  # the group's events in the loop (for the quiet end)
        self._stopped = False
        self._flush_due = False
        self.two_leaders = 0  # terms that saw a second leader (election safety; must stay 0)
        # figures
        self.elections = 0
        self.leaders: dict[int, str] = {}  # term -> its leader (election safety)
        self.committed_log: list[tuple[int, int]] = []  # (term, serial) of each committed index
        self.committed_by: list[int] = []  # the term of the leader that committed it
        self.applied_ids: dict[str, list[tuple[int, int]]] = {n: [] for n in names}
        self.commit_latencies: list[float] = []
        self.proposed_at: dict[tuple[int, int], float] = {}  # (term, index) -> when proposed
        self.leaderless_since: float | None = None
        self.leaderless_s = 0.0
        self.committed_entries_lost = 0
        self._bootstrap()

    # ------------------------------------------------------------------ start
    def _bootstrap(self) -> None:
        """m1 has led term 1 long enough that every member holds and applied its no-op."""
        first = self.members[self.names[0]]
        for m in self.members.values():
            m.term, m.voted_for, m.leader, m.heard_at = 1, first.name, first.name, 0.0
            m.log.entries.append(Entry(1, 0, None))
            m.durable = m.commit = m.applied = m.durable_applied = 1
            self.applied_ids[m.name].append((1, 0))
            m.reset_timer(0.0, redraw=True)
        self.committed_log.append((1, 0))
        self.committed_by.append(1)
        first.role = LEADER
        first.next_index = {p: 2 for p in first.peers}
        first.match_index = {p: 1 for p in first.peers}
        self.leaders[1] = first.name
        self._lead(first)

    def _lead(self, m: Member) -> None:
        self._later(0.0, lambda: self._heartbeat(m, m.term))
        self._later(self.lo_s, lambda: self._check_quorum(m, m.term))

    # ------------------------------------------------------------------ the loop
    def _later(self, delay: float, fn: Callable[[], None]) -> None:
        self._ours += 1

        def fire(_ev) -> None:
            self._ours -= 1
            fn()

        self.env.call_later(delay, fire)

    def _idle(self) -> bool:
        """Nothing but the group's own events is left, and nobody waits on it: stop ticking."""
        if not self._stopped and self.env.pending() <= self._ours and self.quiet():
            self._stopped = True
        return self._stopped

    def draw_timeout(self) -> float:
        return float(self.rng.uniform(self.lo_s, self.hi_s))

    def arm_election(self, m: Member) -> None:
        """One pending timer per member: armed at its deadline, re-armed when a heartbeat moved
        the deadline on (instead of one loop event per heartbeat)."""
        armed = self._armed[m.name]
        if armed is None or armed > m.deadline:
            self._armed[m.name] = at = m.deadline
            life = self._lives[m.name]
            self._later(max(0.0, at - self.env.now), lambda: self._election_timer(m, at, life))

    def _election_timer(self, m: Member, at: float, life: int) -> None:
        if self._armed[m.name] != at or self._lives[m.name] != life:
            return
        self._armed[m.name] = None
        if not m.up or m.role == LEADER or self._idle():
            return
        if self.env.now < m.deadline:
            self.arm_election(m)
            return
        m.campaign(self.env.now, pre=self.rep.pre_vote)
        self.on_change()

    def _heartbeat(self, m: Member, term: int) -> None:
        if not (m.up and m.role == LEADER and m.term == term) or self._idle():
            return
        m.broadcast()
        self._later(self.heartbeat_s, lambda: self._heartbeat(m, term))

    def _check_quorum(self, m: Member, term: int) -> None:
        if not (m.up and m.role == LEADER and m.term == term) or self._idle():
            return
        m.check_quorum(self.env.now)
        if m.role == LEADER:
            self._later(self.lo_s, lambda: self._check_quorum(m, term))
        else:
            self.on_change()

    # ------------------------------------------------------------------ messages and disks
    def send(self, msg: Message, persist: bool = False) -> None:
        delay = self.network.latency_s + (self.fsync_s if persist else 0.0)
        self._later(delay, lambda: self._deliver(msg))

    def _deliver(self, msg: Message) -> None:
        dst = self.members[msg.dst]
        if dst.up and self.members[msg.src].up and self.network.linked(msg.src, msg.dst):
            dst.receive(msg, self.env.now)
            self.on_change()

    def persist(self, m: Member, index: int, reply: Message | None = None) -> None:
        """Entries up to `index` reach `m`'s disk after one fsync; then it answers (a follower)
        or counts itself towards the majority (the leader)."""
        life = self._lives[m.name]

        def done() -> None:
            if self._lives[m.name] != life or not m.up:
                return
            m.durable = min(max(m.durable, index), m.log.last_index)
            if m.role == LEADER:
                m.maybe_commit()
            if reply is not None:
                self.send(reply)

        self._later(self.fsync_s, done)

    # ------------------------------------------------------------------ what members report
    def term_changed(self, m: Member, old: int, new: int, reason: str) -> None:
        self.emit(MetadataTermChanged, member=m.name, old_term=old, new_term=new, reason=reason)

    def election_started(self, m: Member, term: int, pre: bool) -> None:
        if not pre:
            self.elections += 1
        self.emit(MetadataElection, member=m.name, term=term, pre_vote=pre, timeout_s=round(m.timeout_s, 6),
                  lo_s=self.lo_s, hi_s=self.hi_s, last_term=m.log.last_term, last_index=m.log.last_index)

    def vote_cast(self, voter: Member, req: VoteRequest, granted: bool, reason: str, reply: bool = True) -> None:
        self.emit(MetadataVote, voter=voter.name, candidate=req.src, term=req.term, granted=granted,
                  pre_vote=req.pre, reason=reason)
        if reply:
            term = req.term if granted else voter.term
            self.send(VoteReply(voter.name, req.src, term, granted, req.pre, reason), persist=granted and not req.pre)

    def became_leader(self, m: Member) -> None:
        now = self.env.now
        without = now - self.leaderless_since if self.leaderless_since is not None else 0.0
        if self.leaderless_since is not None:
            self.leaderless_s += without
            self.leaderless_since = None
        if self.leaders.setdefault(m.term, m.name) != m.name:
            self.two_leaders += 1
        self._check_completeness(m)
        self.emit(MetadataLeaderElected, member=m.name, term=m.term, votes=sum(m.votes.values()),
                  members=len(self.names), last_index=m.log.last_index, without_leader_s=round(without, 6))
        self._lead(m)

    def _check_completeness(self, m: Member) -> None:
        """Leader completeness (§5.4): every committed entry is in the new leader's log; a miss
        would be a committed entry lost (the result document's `committed_entries_lost`)."""
        for index, (term, _serial) in enumerate(self.committed_log, start=1):
            if m.log.term_at(index) != term:
                self.committed_entries_lost += 1

    def stepped_down(self, m: Member, reason: str) -> None:
        self.emit(MetadataStepDown, member=m.name, term=m.term, reason=reason)
        self._note_leaderless()

    def _note_leaderless(self) -> None:
        if self.leader() is None and self.leaderless_since is None:
            self.leaderless_since = self.env.now

    def committed(self, m: Member, old: int, new: int) -> None:
        now = self.env.now
        for index in range(len(self.committed_log) + 1, new + 1):
            e = m.log.entry(index)
            self.committed_log.append((e.term, e.serial))
            self.committed_by.append(m.term)
        waited = [now - at for index in range(old + 1, new + 1)
                  if (at := self.proposed_at.pop((m.term, index), None)) is not None]
        self.commit_latencies.extend(waited)
        self.emit(MetadataCommitted, member=m.name, term=m.term, index=new, entries=new - old,
                  latency_ms=round(max(waited, default=0.0) * 1000, 6))
        self.apply(m)
        m.broadcast()  # followers learn the commit now, not at the next heartbeat (etcd-io/raft v3.6.0 etcd-io/raft v3.6.0 raft.go stepLeader: bcastAppend)
        self.on_change()

    def apply(self, m: Member) -> None:
        """Apply committed entries in order, each once (§5.3); the store flushes once per batch."""
        if m.commit <= m.applied:
            return
        ids = self.applied_ids[m.name]
        del ids[m.applied:]  # a restarted member re-applies from what its store recovered
        batch = [(index, m.log.entry(index)) for index in range(m.applied + 1, m.commit + 1)]
        ids.extend((e.term, e.serial) for _index, e in batch)
        m.applied = m.commit
        self.apply_batch(m, batch)

    # ------------------------------------------------------------------ clients
    def leader(self) -> Member | None:
        """The up leader of the highest term (a client is redirected there)."""
        best = None
        for m in self.members.values():
            if m.up and m.role == LEADER and (best is None or m.term > best.term):
                best = m
        return best

    def propose(self, serial: int, command: object) -> bool:
        """A client's command to the leader; False when there is none."""
        m = self.leader()
        if m is None:
            return False
        index = m.propose(Entry(m.term, serial, command))
        self.proposed_at[(m.term, index)] = self.env.now
        if not self._flush_due:
            self._flush_due = True
            self._later(0.0, lambda: self._flush(m, m.term))
        return True

    def _flush(self, m: Member, term: int) -> None:
        """One AppendEntries per follower for everything proposed this instant (etcd batches
        proposals into one Ready)."""
        self._flush_due = False
        if m.up and m.role == LEADER and m.term == term:
            m.broadcast()

    # ------------------------------------------------------------------ faults
    def member_down(self, name: str) -> None:
        m = self.members[name]
        if not m.up:
            return
        was_leader = m.role == LEADER
        m.crash()
        self._lives[name] += 1
        self._armed[name] = None
        self.emit(MetadataMemberDown, member=name, was_leader=was_leader, term=m.term)
        self._note_leaderless()
        self.on_change()

    def member_up(self, name: str, recovered: Callable[[Member], None]) -> None:
        m = self.members[name]
        if m.up:
            return
        recovered(m)
        m.restart(self.env.now)
        self.emit(MetadataMemberUp, member=name, term=m.term, last_index=m.log.last_index, applied=m.applied)
        self.on_change()

    def partition(self, side: tuple[str, ...], duration_s: float) -> None:
        cut = frozenset(side)
        self.network.cut(cut)
        others = tuple(n for n in self.names if n not in cut)
        self.emit(MetadataPartitioned, members=tuple(side), others=others, duration_s=duration_s)
        self.on_change()
        self._later(duration_s, lambda: self._heal(cut))

    def _heal(self, cut: frozenset[str]) -> None:
        self.network.heal(cut)
        self.emit(MetadataHealed, members=tuple(sorted(cut)))
        self.on_change()
