"""The messages members exchange (Raft paper §5, Figure 2; etcd-io/raft raftpb MsgVote,
MsgPreVote, MsgApp and their responses). A heartbeat is an AppendEntries with no entries."""

from __future__ import annotations

from dataclasses import dataclass

from kvtui.sim.raft.log import Entry


@dataclass(frozen=True, slots=True)
class Message:
    src: str
    dst: str
    term: int


@dataclass(frozen=True, slots=True)
class VoteRequest(Message):
    last_index: int
    last_term: int
    pre: bool  # PreVote (thesis §9.6): `term` is the one the candidate would campaign in


@dataclass(frozen=True, slots=True)
class VoteReply(Message):
    granted: bool
    pre: bool
    reason: str


@dataclass(frozen=True, slots=True)
class Append(Message):
    prev_index: int
    prev_term: int
    entries: tuple[Entry, ...]
    commit: int


@dataclass(frozen=True, slots=True)
class AppendReply(Message):
    success: bool
    match: int  # success: the last index now known to match the leader's; else the follower's hint
