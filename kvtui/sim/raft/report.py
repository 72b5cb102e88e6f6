"""The result document's `control_plane.replication` (docs/results.md): what the group did."""

from __future__ import annotations

import numpy as np

from kvtui.sim.raft.invariants import applied_agree


def _percentiles_ms(values: list[float]) -> dict:
    if not values:
        return {"p50": None, "p99": None}
    p50, p99 = np.percentile(np.asarray(values) * 1000.0, [50, 99])
    return {"p50": round(float(p50), 6), "p99": round(float(p99), 6)}


def replication_report(cp) -> dict:
    group, rep = cp.group, cp.rep
    now = cp.env.now
    open_gap = now - group.leaderless_since if group.leaderless_since is not None else 0.0
    f = cp.figures
    return {
        "members": rep.members,
        "router_reads": rep.router_reads,
        "stream": rep.stream,
        "pre_vote": rep.pre_vote,
        "elections": group.elections,
        "terms": max(m.term for m in group.members.values()),
        "leaders": {str(term): name for term, name in sorted(group.leaders.items())},
        "time_without_leader_s": round(group.leaderless_s + open_gap, 6),
        "router_down_s": round(f["router_down_s"] + (now - cp._down_since if cp.down else 0.0), 6),
        "commit_latency_ms": _percentiles_ms(group.commit_latencies),
        "committed_entries": len(group.committed_log),
        "kv_events_held": f["kv_events_held"],
        "kv_events_lost": f["kv_events_lost"],
        "requests_delayed": f["requests_delayed"],
        "stale_reads": f["stale_reads"],
        "stale_read_prefix_tokens": f["stale_read_prefix_tokens"],
        "committed_entries_lost": group.committed_entries_lost,
        "applied_digests_equal": applied_agree(group, cp.stores),
    }
