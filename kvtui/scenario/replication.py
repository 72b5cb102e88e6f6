"""The loader's checks of a replicated metadata store (`metadata.replication`) and of the scripted
events that fault its members: the timeouts must make sense as Raft's (an election timeout above
the heartbeat: Raft paper §5.6, broadcastTime << electionTimeout), and every member an event or
`read_member` names must exist (m1 .. m<members>)."""

from __future__ import annotations

from typing import Callable

from kvtui.scenario.model import Scenario

Report = Callable[[str, str], None]

MEMBER_EVENTS = ("metadata_leader_down", "metadata_member_down", "metadata_member_up", "metadata_partition")


def member_names(members: int) -> tuple[str, ...]:
    """m1 .. m<members>: the names the app, the events and the scenario use."""
    return tuple(f"m{i}" for i in range(1, members + 1))


def check_replication(scenario: Scenario, report: Report) -> None:
    meta = scenario.metadata
    rep = meta.replication if meta is not None else None
    members = rep.members if rep is not None else 0
    if rep is not None:
        _check_timeouts(rep, report)
        if rep.read_member is not None and rep.read_member not in member_names(members):
            path = "metadata.replication.read_member"
            report(path, f"{path}: unknown member {rep.read_member!r}; members: {', '.join(member_names(members))}")
    for e, event in enumerate(scenario.events):
        if event.action in MEMBER_EVENTS:
            _check_member_event(e, event, members, report)


def _check_timeouts(rep, report: Report) -> None:
    path = "metadata.replication.election_timeout_ms"
    bounds = rep.election_timeout_ms
    if len(bounds) != 2:
        report(path, f"{path}: give two values [lo, hi], not {len(bounds)}")
        return
    lo, hi = bounds
    if lo > hi:
        report(path, f"{path}: lo {lo:g} is above hi {hi:g}")
    elif lo <= rep.heartbeat_ms:
        report(path, f"{path}: lo {lo:g} ms must be above heartbeat_ms {rep.heartbeat_ms:g} "
                     "(a follower would time out between two heartbeats; etcd asks for 5x)")


def _check_member_event(e: int, event, members: int, report: Report) -> None:
    where = f"events[{e}]"
    if members < 2:
        report(f"{where}.action", f"{where}.action: {event.action} needs metadata.replication.members of 2 or more")
        return
    names = member_names(members)
    if event.action in ("metadata_member_down", "metadata_member_up"):
        if event.member is None:
            report(where, f"{where}: {event.action} needs a member ({', '.join(names)})")
        elif event.member not in names:
            report(f"{where}.member", f"{where}.member: unknown member {event.member!r}; members: {', '.join(names)}")
    if event.action == "metadata_partition":
        if not event.members:
            report(where, f"{where}: metadata_partition needs members (the side cut from the others)")
        for k, name in enumerate(event.members):
            if name not in names:
                report(f"{where}.members[{k}]", f"{where}.members[{k}]: unknown member {name!r}; members: {', '.join(names)}")
        if event.members and set(event.members) >= set(names):
            report(f"{where}.members", f"{where}.members: every member is on one side; nothing is cut")
        if event.duration_s is None:
            report(where, f"{where}: metadata_partition needs duration_s (how long the cut lasts)")
