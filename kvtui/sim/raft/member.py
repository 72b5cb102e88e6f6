"""One member of the group: its state (Raft paper Figure 2) and the rules it follows on a
message or a timeout. The member decides; the group (group.py) carries out what it decides:
sends with link latency, waits for fsyncs, runs timers, applies committed entries, emits events.

Roles: follower, pre-candidate (PreVote, thesis §9.6; etcd-io/raft raft.go StatePreCandidate),
candidate, leader. Check-quorum is on, as etcd's server sets it (etcdserver/raft.go
CheckQuorum: true): a leader that has not heard from a majority within an election timeout
steps down (thesis §6.2; raft.go stepLeader MsgCheckQuorum), and a member that heard from a
leader within the election timeout ignores vote requests of a higher term (thesis §4.2.3;
raft.go Step, `inLease`).
"""

from __future__ import annotations

from typing import Protocol

from kvtui.sim.raft.log import Entry, RaftLog
from kvtui.sim.raft.messages import Append, AppendReply, Message, VoteReply, VoteRequest


class Carrier(Protocol):
    """What a member asks of its group (group.py's RaftGroup): the member decides, the group
    carries it out. A Protocol, so that member.py does not import group.py (no cycle)."""

    lo_s: float

    def draw_timeout(self) -> float: ...
    def arm_election(self, m: "Member") -> None: ...
    def send(self, msg: Message, persist: bool = False) -> None: ...
    def persist(self, m: "Member", index: int, reply: Message | None = None) -> None: ...
    def term_changed(self, m: "Member", old: int, new: int, reason: str) -> None: ...
    def election_started(self, m: "Member", term: int, pre: bool) -> None: ...
    def vote_cast(self, voter: "Member", req: VoteRequest, granted: bool, reason: str, reply: bool = True) -> None: ...
    def became_leader(self, m: "Member") -> None: ...
    def stepped_down(self, m: "Member", reason: str) -> None: ...
    def committed(self, m: "Member", old: int, new: int) -> None: ...
    def apply(self, m: "Member") -> None: ...

FOLLOWER, PRE_CANDIDATE, CANDIDATE, LEADER = "follower", "pre-candidate", "candidate", "leader"
MAX_ENTRIES_PER_APPEND = 4096  # etcd bounds a MsgApp by bytes (MaxSizePerMsg); a count does here


class Member:
    def __init__(self, name: str, names: tuple[str, ...], group: Carrier):
        self.name = name
        self.peers = tuple(n for n in names if n != name)
        self.quorum = len(names) // 2 + 1
        self.group = group
        # persistent (Figure 2): survives a restart once fsynced
        self.term = 0
        self.voted_for: str | None = None
        self.log = RaftLog()
        self.durable = 0  # the last index fsynced
        self.durable_applied = 0  # the applied index the store's WAL holds (flushed with each apply)
        # volatile
        self.up = True
        self.role = FOLLOWER
        self.leader: str | None = None
        self.commit = 0
        self.applied = 0
        self.votes: dict[str, bool] = {}
        self.next_index: dict[str, int] = {}
        self.match_index: dict[str, int] = {}
        self.recent_active: set[str] = set()
        self.heard_at = float("-inf")  # when a leader of this term last reached it
        self.timeout_s = 0.0  # the election timeout drawn at the last reset
        self.timer_start = 0.0
        self.max_serial = 0  # the highest client serial applied (Raft paper §8)

    # ------------------------------------------------------------------ views
    @property
    def deadline(self) -> float:
        return self.timer_start + self.timeout_s

    def in_lease(self, now: float) -> bool:
        """Heard from a leader within the (base) election timeout: etcd-io/raft v3.6.0 raft.go's `inLease`."""
        if self.role == LEADER:
            return True
        return self.leader is not None and now - self.heard_at < self.group.lo_s

    def tail(self) -> str:
        return f"term {self.log.last_term}, index {self.log.last_index}"

    # ------------------------------------------------------------------ role changes
    def reset_timer(self, now: float, redraw: bool) -> None:
        """Restart the election timer; a role or term change draws a new timeout (etcd-io/raft v3.6.0 raft.go reset
        -> resetRandomizedElectionTimeout), a heartbeat only restarts the count."""
        if redraw:
            self.timeout_s = self.group.draw_timeout()
        self.timer_start = now
        self.group.arm_election(self)

    def set_term(self, term: int, reason: str) -> None:
        if term != self.term:
            self.group.term_changed(self, self.term, term, reason)
            self.term = term
            self.voted_for = None

    def become_follower(self, now: float, term: int, leader: str | None, reason: str) -> None:
        """§5.1: a member that sees a higher term, or a leader of its own term, follows."""
        was_leader = self.role == LEADER
        self.set_term(term, reason)
        self.role = FOLLOWER
        self.leader = leader
        self.votes = {}
        if was_leader:
            self.group.stepped_down(self, reason)
        self.reset_timer(now, redraw=True)

    def campaign(self, now: float, pre: bool) -> None:
        """§5.2 (etcd-io/raft v3.6.0): a follower whose timeout ran out asks for votes (thesis §9.6: first, with
        PreVote, whether it could win, at term + 1 without moving its own term;
        raft.go campaign(campaignPreElection))."""
        if pre:
            self.role = PRE_CANDIDATE
            term = self.term + 1
        else:
            self.set_term(self.term + 1, "campaigns")
            self.role = CANDIDATE
            self.voted_for = self.name
            term = self.term
        self.leader = None
        self.votes = {self.name: True}
        self.group.election_started(self, term, pre)
        self.reset_timer(now, redraw=True)
        for peer in self.peers:
            msg = VoteRequest(self.name, peer, term, self.log.last_index, self.log.last_term, pre)
            self.group.send(msg, persist=not pre)  # a real campaign fsyncs its term and vote first

    def become_leader(self, now: float) -> None:
        """§5.2/§5.3 (etcd-io/raft v3.6.0): lead; every follower's next index starts after the leader's last entry.
        The first entry is a no-op of the new term (§8; raft.go becomeLeader appends an empty
        entry), so entries of earlier terms commit with it (§5.4.2)."""
        self.role = LEADER
        self.leader = self.name
        self.next_index = {p: self.log.last_index + 1 for p in self.peers}
        self.match_index = {p: 0 for p in self.peers}
        self.recent_active = set()
        self.group.became_leader(self)
        self.votes = {}
        self.propose(Entry(self.term, 0, None))

    def propose(self, entry: Entry) -> int:
        """The leader appends a client's entry and sends it on; its own fsync runs meanwhile
        (thesis §10.2.1: the leader may write its disk in parallel with replication)."""
        self.log.entries.append(entry)
        index = self.log.last_index
        self.group.persist(self, index)
        return index

    # ------------------------------------------------------------------ the leader's side
    def send_append(self, peer: str) -> None:
        """AppendEntries from nextIndex (§5.3); entries in flight advance nextIndex at once
        (etcd's replicate state, tracker/progress.go), a rejection brings it back."""
        nxt = self.next_index[peer]
        prev = nxt - 1
        entries = self.log.after(prev, MAX_ENTRIES_PER_APPEND)
        prev_term = self.log.term_at(prev)
        msg = Append(self.name, peer, self.term, prev, prev_term or 0, entries, self.commit)
        self.next_index[peer] = nxt + len(entries)
        self.group.send(msg)

    def broadcast(self) -> None:
        for peer in self.peers:
            self.send_append(peer)

    def maybe_commit(self) -> None:
        """§5.3/§5.4.2: commit the highest index a majority has fsynced, if it is of this term
        (etcd-io/raft quorum/majority.go CommittedIndex, raft.go maybeCommit)."""
        matched = sorted([self.durable, *self.match_index.values()], reverse=True)
        n = matched[self.quorum - 1]
        if n > self.commit and self.log.term_at(n) == self.term:
            old, self.commit = self.commit, n
            self.group.committed(self, old, n)

    def check_quorum(self, now: float) -> None:
        """Thesis §6.2: a leader that heard from fewer than a majority within an election timeout
        steps down (etcd-io/raft v3.6.0 raft.go MsgCheckQuorum), so a cut leader stops answering reads."""
        active = len(self.recent_active) + 1
        self.recent_active = set()
        if active < self.quorum:
            self.become_follower(now, self.term, None,
                                 f"heard from {active} of {len(self.peers) + 1} members within the election timeout (check-quorum)")

    # ------------------------------------------------------------------ receiving
    def receive(self, m: Message, now: float) -> None:
        """etcd-io/raft v3.6.0 raft.go Step: terms first (§5.1), then the message by its type."""
        if m.term > self.term:
            if isinstance(m, VoteRequest) and self.in_lease(now):
                self.group.vote_cast(self, m, False, f"heard from leader {self.leader} {self._since(now)} ago, "
                                     "within the election timeout: ignores it (check-quorum lease)", reply=False)
                return
            pre_granted = isinstance(m, VoteReply) and m.pre and m.granted
            if not (isinstance(m, VoteRequest) and m.pre) and not pre_granted:
                leader = m.src if isinstance(m, Append) else None
                self.become_follower(now, m.term, leader, f"saw term {m.term} from {m.src}")
        elif m.term < self.term:
            self._stale(m)
            return
        match m:
            case VoteRequest():
                self._on_vote_request(m, now)
            case VoteReply():
                self._on_vote_reply(m, now)
            case Append():
                self._on_append(m, now)
            case AppendReply():
                self._on_append_reply(m)

    def _since(self, now: float) -> str:
        return f"{(now - self.heard_at) * 1000:.0f} ms" if self.role != LEADER else "0 ms"

    def _stale(self, m: Message) -> None:
        """A message of an older term: a stale leader learns the newer term from the reply
        (etcd-io/raft v3.6.0 raft.go Step, with check-quorum or PreVote on); a stale pre-vote is refused."""
        if isinstance(m, Append):
            self.group.send(AppendReply(self.name, m.src, self.term, False, self.log.last_index))
        elif isinstance(m, VoteRequest):
            self.group.vote_cast(self, m, False, f"its term {m.term} is behind mine ({self.term})", reply=m.pre)

    def _on_vote_request(self, m: VoteRequest, now: float) -> None:
        """§5.2 one vote per term, §5.4.1 only for a log at least as up to date (etcd-io/raft v3.6.0 raft.go Step,
        `canVote`)."""
        free = self.voted_for == m.src or (self.voted_for is None and self.leader is None) or (m.pre and m.term > self.term)
        if not free:
            why = (f"already voted for {self.voted_for} in term {self.term}" if self.voted_for
                   else f"follows leader {self.leader} in term {self.term}")
            self.group.vote_cast(self, m, False, why)
            return
        if not self.log.up_to_date(m.last_term, m.last_index):
            self.group.vote_cast(self, m, False, f"its log (term {m.last_term}, index {m.last_index}) is behind "
                                                 f"mine ({self.tail()})")
            return
        if not m.pre:
            self.voted_for = m.src
            self.reset_timer(now, redraw=False)
        self.group.vote_cast(self, m, True, f"its log (term {m.last_term}, index {m.last_index}) is at least as "
                                            f"up to date as mine ({self.tail()})")

    def _on_vote_reply(self, m: VoteReply, now: float) -> None:
        wanted = PRE_CANDIDATE if m.pre else CANDIDATE
        term = self.term + 1 if m.pre else self.term
        if self.role != wanted or (m.granted and m.term != term):
            return
        self.votes[m.src] = m.granted
        granted = sum(self.votes.values())
        if granted >= self.quorum:
            if m.pre:
                self.campaign(now, pre=False)
            else:
                self.become_leader(now)
        elif len(self.votes) - granted >= self.quorum:
            self.become_follower(now, self.term, None, "lost the election")

    def _on_append(self, m: Append, now: float) -> None:
        """§5.3: follow the leader of this term, check the log, append, advance the commit."""
        if self.role != FOLLOWER:
            self.become_follower(now, m.term, m.src, f"heard from leader {m.src}")
        self.leader = m.src
        self.heard_at = now
        self.reset_timer(now, redraw=False)
        if not self.log.matches(m.prev_index, m.prev_term):
            hint = min(m.prev_index - 1, self.log.last_index)
            self.group.send(AppendReply(self.name, m.src, self.term, False, hint))
            return
        cut = self.log.append_after(m.prev_index, m.entries)
        self.durable = min(self.durable, cut - 1)
        last_new = m.prev_index + len(m.entries)
        if min(m.commit, last_new) > self.commit:
            self.commit = min(m.commit, last_new)
            self.group.apply(self)
        reply = AppendReply(self.name, m.src, self.term, True, last_new)
        if m.entries:
            self.group.persist(self, last_new, reply)
        else:
            self.group.send(reply)

    def _on_append_reply(self, m: AppendReply) -> None:
        if self.role != LEADER:
            return
        self.recent_active.add(m.src)
        if m.success:
            if m.match > self.match_index[m.src]:
                self.match_index[m.src] = m.match
                self.maybe_commit()
            if self.next_index[m.src] <= m.match:
                self.next_index[m.src] = m.match + 1
            if self.next_index[m.src] <= self.log.last_index:
                self.send_append(m.src)
            return
        # rejected: back off to the hint, never below what is known to match (etcd-io/raft v3.6.0 raft.go
        # stepLeader MsgAppResp Reject -> MaybeDecrTo)
        self.next_index[m.src] = max(self.match_index[m.src] + 1, min(self.next_index[m.src] - 1, m.match + 1))
        self.send_append(m.src)

    # ------------------------------------------------------------------ crash and restart
    def crash(self) -> None:
        """A process crash: volatile state is gone; the log keeps what was fsynced."""
        self.up = False
        self.log.truncate(self.durable)
        self.role = FOLLOWER
        self.leader = None
        self.votes = {}

    def restart(self, now: float) -> None:
        """Back with its persistent state; the store replayed its WAL up to `durable_applied`."""
        self.up = True
        self.commit = self.applied = self.durable_applied
        self.heard_at = float("-inf")
        self.become_follower(now, self.term, None, "restarted")
