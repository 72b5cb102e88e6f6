"""What the app's control-plane panel shows of a replicated store: a row per member and the
last election, read off the Raft group (kvtui/sim/raft/) and the run's journal.

`lag` is how far a member's applied state is behind the highest commit index of the up members:
the entries a serializable read on that member would miss (the same measure as a
`MetadataStaleRead`'s `behind`, kvtui/sim/replicated_control_plane.py). `heard_s` is how long
ago a leader last reached a follower (etcd's leader heartbeats every `heartbeat_ms`; a follower
that hears nothing for its election timeout campaigns: Raft paper §5.2).
"""

from __future__ import annotations

from dataclasses import dataclass

from kvtui.events import MetadataElection
from kvtui.run.journal import Journal
from kvtui.sim.raft.member import LEADER


@dataclass(frozen=True)
class MemberRow:
    name: str
    role: str  # follower | pre-candidate | candidate | leader | down
    term: int
    last_index: int
    commit: int
    applied: int
    lag: int
    heard_s: float | None  # None: a leader, a member down, or one that never heard a leader
    cut: bool  # on the far side of a partition from some member


@dataclass(frozen=True)
class ControlPlaneView:
    headline: str
    rows: tuple[MemberRow, ...]
    last_election: MetadataElection | None  # the latest one at or before the event on show


def control_plane_view(sim, journal: Journal) -> ControlPlaneView | None:
    """The panel's content; None when the run's control plane is not a Raft group."""
    group = getattr(sim.control_plane, "group", None)
    if group is None:
        return None
    members = list(group.members.values())
    commit = max((m.commit for m in members if m.up), default=0)
    cuts = group.network.cuts
    rows = tuple(
        MemberRow(
            name=m.name,
            role=m.role if m.up else "down",
            term=m.term,
            last_index=m.log.last_index,
            commit=m.commit,
            applied=m.applied,
            lag=max(0, commit - m.applied),
            heard_s=sim.now - m.heard_at if m.up and m.role != LEADER and m.heard_at > float("-inf") else None,
            cut=any(m.name in side for side in cuts),
        )
        for m in members
    )
    return ControlPlaneView(sim.control_plane.headline(), rows, journal.last_election)
