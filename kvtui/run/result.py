"""The result document of one run (../shared/DESIGN.md section 5, a contract for scripts and notebooks).

Schema version 5 added `control_plane`: null without a metadata store, else
{"replication": null for one store, or the Raft group's figures (members, elections, terms,
time_without_leader_s, commit_latency_ms {p50, p99}, kv_events_held / _lost, requests_delayed,
stale_reads, stale_read_prefix_tokens, committed_entries_lost, applied_digests_equal, ...)}
(kvtui/sim/raft/report.py, docs/results.md). `wal` then sums the members' stores. Added within
version 5, a key more that readers of version 5 can ignore: `routing.available` (available
against achieved: the longest prefix any node held at each decision against the chosen node's,
kvtui/sim/router/router.py `available_report`).
Schema version 4 (this file) added `disaggregation`: per-pool utilisation and work, the KV
transfers (count, blocks, bytes, time on the wire, queueing, prefill-to-decode handoff) and
how requests were split, for a run where a node has a prefill/decode role or the policy is a
prefill/decode one; null otherwise (docs/results.md); added within version 4, a key more that
readers of version 4 can ignore: `latency_ms.ntpot` (E2E / output tokens, the blog's NTPOT). Schema version 3 added `requests.turns_cut`: the turns of sessions (synthetic groups,
weka conversations) never sent because an earlier turn of theirs was rejected or failed, so a
trace's requests are all accounted for (issue 25). Schema version 2 added, over version 1: `requests.shed`, `requests.success_rate`,
`requests.rejected_reasons`, `latency_ms.itl`, the `slo` object, and `routing` (the router's own
report: index staleness, prediction error, ...). TPOT changed meaning on purpose: it now skips
1-token outputs, as vLLM's benchmark does (see kvtui.sim.metrics for every definition).
Added within version 2 (optional keys, present only when a node has a CPU tier): `cache.offload`
and each node's `offload`.
"""

from __future__ import annotations

from kvtui import __version__

RESULT_SCHEMA_VERSION = 5


def _control_plane(sim) -> dict | None:
    """`control_plane`: null without a store; `replication` null for one store (members: 1)."""
    cp = sim.control_plane
    if cp is None:
        return None
    report = getattr(cp, "report", None)
    return {"replication": report() if report is not None else None}


def _routing_report(sim) -> dict:
    """The router's report (a plain dict), or {} before a router object exists."""
    router = getattr(sim, "router", None)
    report = getattr(router, "report", None)
    if not callable(report):
        return {}
    out = report()
    return dict(out) if out else {}


def _tiers(sim) -> list:
    return [n.kv.cpu for n in sim.nodes if n.kv.cpu is not None]


def _offload_summary(sim) -> dict:
    """The CPU tiers together: what they took in, dropped, and gave back (as tokens of prompts)."""
    m, tiers = sim.metrics, _tiers(sim)
    return {
        "loaded_tokens": m.loaded_tokens,
        "loaded_token_rate": round(m.loaded_tokens / m.prompt_tokens, 6) if m.prompt_tokens else 0.0,
        "gpu_token_hit_rate": round((m.cached_tokens - m.loaded_tokens) / m.prompt_tokens, 6) if m.prompt_tokens else 0.0,
        "stored_blocks": sum(t.stored_total for t in tiers),
        "evicted_blocks": sum(t.evicted_total for t in tiers),
        "loaded_blocks": sum(t.loaded_total for t in tiers),
        "load_s": round(sum(t.load_s_total for t in tiers), 6),
    }


def _node_offload(tier) -> dict:
    return {
        "cpu_blocks": tier.capacity,
        "held_blocks": len(tier),
        "stored_blocks": tier.stored_total,
        "evicted_blocks": tier.evicted_total,
        "loaded_blocks": tier.loaded_total,
    }


def _disaggregation(sim, sim_time: float) -> dict | None:
    pools = getattr(sim, "pools", None)
    if pools is None:
        return None
    handoffs = sim.handoffs
    return pools.report(sim_time, handoffs.links if handoffs is not None else None)


def result_document(sim, wall_time_s: float) -> dict:
    """Everything a notebook needs about a finished run, as plain JSON-able values."""
    m = sim.metrics
    sim_time = sim.now
    cp = sim.control_plane
    wal = cp.counters() if cp is not None else {"records": 0, "bytes": 0, "snapshots": 0, "recoveries": 0}
    in_flight = sim.in_flight()
    finished = m.arrived - in_flight
    attainment = m.slo_attainment
    return {
        "kvtui_version": __version__,
        "schema_version": RESULT_SCHEMA_VERSION,
        "scenario": sim.scenario.name,
        "policy": sim.policy_name,
        "seed": sim.seed,
        "sim_time_s": round(sim_time, 6),
        "wall_time_s": round(wall_time_s, 6),
        "requests": {
            "arrived": m.arrived,
            "completed": m.completed,
            "rejected": m.rejected,
            "shed": m.shed,
            "preempted": m.preempted,
            "failed": m.failed,
            "rerouted": m.rerouted,
            "in_flight": in_flight,
            "success_rate": round(m.completed / finished, 6) if finished > 0 else 0.0,
            "rejected_reasons": dict(sorted(m.rejected_reasons.items())),
            "turns_cut": getattr(sim.workload, "turns_cut", 0),
        },
        "cache": {
            "token_hit_rate": round(m.token_hit_rate, 6),
            "request_hit_rate": round(m.request_hit_rate, 6),
            "exact_hits": m.exact_hits,
            "prefix_hits": m.prefix_hits,
            "misses": m.misses,
            "evicted_blocks": m.evicted_blocks,
            **({"offload": _offload_summary(sim)} if _tiers(sim) else {}),
        },
        "latency_ms": m.latency_ms(),
        "throughput": {
            "requests_per_s": round(m.completed / sim_time, 6) if sim_time else 0.0,
            "output_tokens_per_s": round(m.output_tokens / sim_time, 6) if sim_time else 0.0,
        },
        "slo": {
            "with_slo": m.with_slo,
            "met": m.slo_met,
            "attainment": round(attainment, 6) if attainment is not None else None,
            "goodput_rps": round(m.goodput_rps(sim_time), 6),
        },
        "nodes": [
            {
                "name": n.name,
                "kv_blocks": n.pool.num_blocks,
                "peak_blocks_used": n.peak_used,
                "requests_served": n.served,
                "preemptions": n.preemptions,
                "evicted_blocks": m.evicted_by_node.get(n.name, 0),
                **({"offload": _node_offload(n.kv.cpu)} if n.kv.cpu is not None else {}),
            }
            for n in sim.nodes
        ],
        "routing": _routing_report(sim),
        "disaggregation": _disaggregation(sim, sim_time),
        "wal": wal,
        "control_plane": _control_plane(sim),
    }
