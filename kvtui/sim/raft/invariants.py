"""Raft's safety properties (paper §5.2-§5.4, Figure 3), as checks over a group's state. The
property tests call `violations` after every step of random fault schedules; the result
document reports `applied_agree`.

- election safety: at most one leader per term;
- log matching: two logs with an entry of the same index and term are identical up to it;
- leader completeness: a leader's log holds every committed entry;
- state-machine safety: no two members applied different entries at the same index (and
  members that applied the same prefix hold stores with the same digest).
"""

from __future__ import annotations

from kvtui.sim.raft.member import LEADER


def violations(group) -> list[str]:
    out = []
    if group.two_leaders:
        out.append(f"election safety: {group.two_leaders} terms had two leaders")
    leaders: dict[int, str] = {}
    for m in group.members.values():
        if m.role == LEADER:
            if leaders.setdefault(m.term, m.name) != m.name:
                out.append(f"election safety: {leaders[m.term]} and {m.name} both lead term {m.term}")
    out += _log_matching(group)
    out += _leader_completeness(group)
    out += _state_machine_safety(group)
    return out


def _log_matching(group) -> list[str]:
    out = []
    members = list(group.members.values())
    for i, a in enumerate(members):
        for b in members[i + 1:]:
            common = min(a.log.last_index, b.log.last_index)
            # the highest index where both hold the same term: everything up to it must agree
            k = next((x for x in range(common, 0, -1) if a.log.term_at(x) == b.log.term_at(x)), 0)
            if a.log.entries[:k] != b.log.entries[:k]:
                out.append(f"log matching: {a.name} and {b.name} agree on index {k}'s term but differ before it")
    return out


def _leader_completeness(group) -> list[str]:
    out = []
    for m in group.members.values():
        if m.role != LEADER or not m.up:
            continue
        for index, ((term, serial), by) in enumerate(zip(group.committed_log, group.committed_by), start=1):
            if m.term <= by:  # only a leader elected after the commit must hold it
                continue
            if index > m.log.last_index or (m.log.entry(index).term, m.log.entry(index).serial) != (term, serial):
                out.append(f"leader completeness: {m.name} (term {m.term}) lacks index {index}, committed in term {by}")
                break
    return out


def _state_machine_safety(group) -> list[str]:
    out = []
    ids = group.applied_ids
    names = list(ids)
    for i, a in enumerate(names):
        for b in names[i + 1:]:
            common = min(len(ids[a]), len(ids[b]))
            if ids[a][:common] != ids[b][:common]:
                out.append(f"state-machine safety: {a} and {b} applied different entries")
    committed = group.committed_log
    for name in names:
        n = min(len(ids[name]), len(committed))
        if ids[name][:n] != committed[:n]:
            out.append(f"state-machine safety: {name} applied an entry that is not the committed one")
    return out


def applied_agree(group, stores) -> bool:
    """Every member's applied entries agree at every common index, and members that applied
    the same prefix hold stores of the same digest."""
    if _state_machine_safety(group):
        return False
    digests: dict[int, str] = {}
    for name, m in group.members.items():
        if not m.up:
            continue
        d = stores[name].digest()
        if digests.setdefault(m.applied, d) != d:
            return False
    return True
