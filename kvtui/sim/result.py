"""The result document of one run (DESIGN.md section 5, a contract for scripts and notebooks)."""

from __future__ import annotations

from kvtui import __version__

RESULT_SCHEMA_VERSION = 1


def result_document(sim, wall_time_s: float) -> dict:
    """Everything a notebook needs about a finished run, as plain JSON-able values."""
    m = sim.metrics
    sim_time = sim.now
    cp = sim.control_plane
    wal = cp.counters() if cp is not None else {"records": 0, "bytes": 0, "snapshots": 0, "recoveries": 0}
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
            "preempted": m.preempted,
            "failed": m.failed,
            "rerouted": m.rerouted,
            "in_flight": sim.in_flight(),
        },
        "cache": {
            "request_hit_rate": round(m.request_hit_rate, 6),
            "exact_hits": m.exact_hits,
            "prefix_hits": m.prefix_hits,
            "misses": m.misses,
            "token_hit_rate": round(m.token_hit_rate, 6),
            "evicted_blocks": m.evicted_blocks,
        },
        "latency_ms": m.latency_ms(),
        "throughput": {
            "requests_per_s": round(m.completed / sim_time, 6) if sim_time else 0.0,
            "output_tokens_per_s": round(m.output_tokens / sim_time, 6) if sim_time else 0.0,
        },
        "nodes": [
            {
                "name": n.name,
                "kv_blocks": n.pool.num_blocks,
                "peak_blocks_used": n.peak_used,
                "requests_served": n.served,
                "preemptions": n.preemptions,
                "evicted_blocks": m.evicted_by_node.get(n.name, 0),
            }
            for n in sim.nodes
        ],
        "wal": wal,
    }
