"""A replicated control plane in words: elections, votes and their reasons, terms, commits,
stale reads (kvtui/run/narrate.py dispatches these events here; same rules: pure text, numbers
from the event itself). The rules quoted are the Raft paper's (§5.2 elections, §5.4.1 the vote
restriction) and Ongaro's thesis (§9.6 PreVote, §6.2 check-quorum)."""

from __future__ import annotations

from kvtui.events import (
    Event,
    MetadataCommitted,
    MetadataElection,
    MetadataHealed,
    MetadataLeaderElected,
    MetadataMemberDown,
    MetadataMemberUp,
    MetadataPartitioned,
    MetadataStaleRead,
    MetadataStepDown,
    MetadataTermChanged,
    MetadataVote,
)

TYPES = (MetadataElection, MetadataVote, MetadataLeaderElected, MetadataTermChanged, MetadataStepDown,
         MetadataCommitted, MetadataStaleRead, MetadataMemberDown, MetadataMemberUp, MetadataPartitioned,
         MetadataHealed)


def _s(seconds: float) -> str:
    return f"{seconds:.2f} s"


def summary(ev: Event) -> str:
    match ev:
        case MetadataElection():
            what = "asks whether it could win" if ev.pre_vote else "asks for votes"
            return (f"{ev.member} timed out ({_s(ev.timeout_s)}, drawn from [{ev.lo_s:g}, {ev.hi_s:g}]); "
                    f"{what}, term {ev.term}")
        case MetadataVote():
            verb = "votes" if ev.granted else "refuses"
            pre = " (pre-vote)" if ev.pre_vote else ""
            return f"{ev.voter} {verb} {ev.candidate}{pre}: {ev.reason}"
        case MetadataLeaderElected():
            return f"LEADER {ev.member} for term {ev.term} ({ev.votes} of {ev.members} votes), no leader for {_s(ev.without_leader_s)}"
        case MetadataTermChanged():
            return f"{ev.member} term {ev.old_term} -> {ev.new_term}: {ev.reason}"
        case MetadataStepDown():
            return f"{ev.member} steps down in term {ev.term}: {ev.reason}"
        case MetadataCommitted():
            return f"{ev.member} commits to index {ev.index} ({ev.entries} new, {ev.latency_ms:.2f} ms)"
        case MetadataStaleRead():
            return f"STALE READ the router read {ev.member} (serializable), {ev.behind} entries behind"
        case MetadataMemberDown():
            return f"DOWN {ev.member}{' (the leader)' if ev.was_leader else ''}, term {ev.term}"
        case MetadataMemberUp():
            return f"UP {ev.member}: term {ev.term}, log to {ev.last_index}, store applied to {ev.applied}"
        case MetadataPartitioned():
            return f"CUT {', '.join(ev.members)} from {', '.join(ev.others)} for {_s(ev.duration_s)}"
        case MetadataHealed():
            return f"HEALED {', '.join(ev.members)}"
    return ev.kind


def explain(ev: Event) -> str:
    match ev:
        case MetadataElection(pre_vote=True):
            return (summary(ev) + f". With PreVote it first asks whether a majority would vote for it, without "
                    f"raising its own term: a member that cannot win never disturbs a working leader (thesis §9.6). "
                    f"Its log ends at term {ev.last_term}, index {ev.last_index}.")
        case MetadataElection():
            return (summary(ev) + f". It heard no heartbeat for a whole election timeout, so it becomes a candidate, "
                    f"votes for itself and asks the others (Raft §5.2). Its log ends at term {ev.last_term}, "
                    f"index {ev.last_index}; a voter grants only a log at least as up to date as its own (§5.4.1).")
        case MetadataVote(granted=True):
            return f"{ev.voter} votes {ev.candidate} in term {ev.term}: {ev.reason}. One vote per term, first come (§5.2)."
        case MetadataVote():
            return f"{ev.voter} refuses {ev.candidate} in term {ev.term}: {ev.reason}."
        case MetadataLeaderElected():
            return (summary(ev) + ". It appends a no-op of its term, so entries of earlier terms commit with it "
                    "(§5.4.2); the router reads through it once that commits.")
        case MetadataStepDown():
            return summary(ev) + ". A leader that sees a higher term, or hears from no majority within an election timeout (thesis §6.2), follows."
        case MetadataCommitted():
            return summary(ev) + ": a majority appended and fsynced these entries, so no later leader can lack them (§5.4)."
        case MetadataStaleRead():
            said = f": {ev.stale}" if ev.stale else ": this decision's prefix matched the pool anyway"
            return (f"The router read {ev.member} (serializable), {ev.behind} entries behind the commit index, "
                    f"and routed {ev.session} to {ev.node}{said}. A serializable read answers from the member's own "
                    f"applied state, never refused, maybe stale.")
        case MetadataPartitioned():
            return (summary(ev) + ". Peer links only: clients still reach every member, so a cut member still answers "
                    "serializable reads, from a state that stops moving.")
    return summary(ev)
