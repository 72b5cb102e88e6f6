"""The replicated log of one member (Raft paper §5.3; etcd-io/raft log.go).

Entries are numbered from 1; index 0 is the empty prefix, of term 0. An entry carries its term,
the client's serial number (0 for a leader's no-op) and the command (a KV event or a session
route, applied to the member's store once committed).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Entry:
    term: int
    serial: int  # the publisher's serial number (Raft paper §8: duplicates are applied once); 0: no-op
    command: object = None


class RaftLog:
    __slots__ = ("entries",)

    def __init__(self) -> None:
        self.entries: list[Entry] = []

    @property
    def last_index(self) -> int:
        return len(self.entries)

    @property
    def last_term(self) -> int:
        return self.entries[-1].term if self.entries else 0

    def term_at(self, index: int) -> int | None:
        """The term of entry `index` (0 for index 0; None past the end)."""
        if index == 0:
            return 0
        if 0 < index <= len(self.entries):
            return self.entries[index - 1].term
        return None

    def entry(self, index: int) -> Entry:
        return self.entries[index - 1]

    def after(self, index: int, most: int) -> tuple[Entry, ...]:
        """Up to `most` entries after `index` (what the leader sends a follower)."""
        return tuple(self.entries[index:index + most])

    def up_to_date(self, last_term: int, last_index: int) -> bool:
        """Is a candidate's log (its last term and index) at least as up to date as this one?
        Raft paper §5.4.1: the later last term wins; with equal last terms the longer log
        (etcd-io/raft log.go isUpToDate)."""
        return last_term > self.last_term or (last_term == self.last_term and last_index >= self.last_index)

    def matches(self, prev_index: int, prev_term: int) -> bool:
        """AppendEntries' consistency check (§5.3): this log holds an entry at `prev_index` of
        `prev_term` (etcd-io/raft v3.6.0 log.go matchTerm)."""
        return self.term_at(prev_index) == prev_term

    def append_after(self, prev_index: int, entries: tuple[Entry, ...]) -> int:
        """(etcd-io/raft v3.6.0) Put `entries` after `prev_index` (the consistency check passed). An existing entry that
        conflicts (same index, another term) is deleted with all that follow it, and entries
        already present are kept (§5.3, receiver rule 3-4; log.go findConflict / maybeAppend):
        a late, reordered AppendEntries never truncates what a newer one appended. Returns the
        index the first deletion started at (None-like: past the end when nothing was cut)."""
        cut = len(self.entries) + 1
        for k, e in enumerate(entries):
            index = prev_index + 1 + k
            have = self.term_at(index)
            if have is None:
                self.entries.extend(entries[k:])
                break
            if have != e.term:
                cut = index
                del self.entries[index - 1:]
                self.entries.extend(entries[k:])
                break
        return cut

    def truncate(self, last: int) -> None:
        """Keep entries up to `last` (a restart loses what was never fsynced)."""
        del self.entries[last:]
