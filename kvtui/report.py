"""Headless tables: what `kvtui run` and `kvtui compare` print for design docs.

Everything here reads the result document (kvtui.sim.result), so the printed table and the
JSON written beside it always hold the same figures.
"""

from __future__ import annotations

from rich.console import Console
from rich.table import Table


def _ms(v: float) -> str:
    return f"{v:,.1f}"


def _pct(v: float) -> str:
    return f"{100 * v:.1f}%"


def run_table(doc: dict) -> Table:
    """One run: requests, cache, latency percentiles, throughput, per node."""
    r, c, lat, th = doc["requests"], doc["cache"], doc["latency_ms"], doc["throughput"]
    title = f"{doc['scenario']} · policy {doc['policy']} · seed {doc['seed']} · {doc['sim_time_s']:.2f} s simulated"
    t = Table(title=title, show_header=True, header_style="bold")
    t.add_column("metric")
    for name in ("mean", "p50", "p90", "p95", "p99", "max"):
        t.add_column(name, justify="right")
    for key, label in (("ttft", "TTFT ms"), ("tpot", "TPOT ms"), ("e2e", "E2E ms")):
        d = lat[key]
        t.add_row(label, *(_ms(d[k]) for k in ("mean", "p50", "p90", "p95", "p99", "max")))
    t.add_section()
    rejection = r["rejected"] / r["arrived"] if r["arrived"] else 0.0
    t.add_row(
        "requests",
        f"{r['arrived']} arrived",
        f"{r['completed']} done",
        f"{r['rejected']} rejected",
        f"{_pct(rejection)} rej.",
        f"{r['preempted']} preempt.",
        f"{r['failed']} failed",
    )
    t.add_row(
        "cache",
        f"hit {_pct(c['request_hit_rate'])}",
        f"{c['exact_hits']} exact",
        f"{c['prefix_hits']} prefix",
        f"{c['misses']} miss",
        f"tok {_pct(c['token_hit_rate'])}",
        f"{c['evicted_blocks']} evicted",
    )
    t.add_row(
        "throughput",
        f"{th['requests_per_s']:.2f} req/s",
        f"{th['output_tokens_per_s']:,.0f} tok/s",
        "",
        "",
        "",
        f"wall {doc['wall_time_s']:.2f} s",
    )
    t.add_section()
    for n in doc["nodes"]:
        t.add_row(
            n["name"],
            f"{n['kv_blocks']} blocks",
            f"peak {n['peak_blocks_used']}",
            f"{n['requests_served']} served",
            f"{n.get('preemptions', 0)} preempt.",
            f"{n.get('evicted_blocks', 0)} evicted",
            "",
        )
    return t


def compare_table(docs: list[dict], label: str = "policy") -> Table:
    """One row per run of the same workload."""
    first = docs[0]
    t = Table(title=f"{first['scenario']} · seed {first['seed']}", header_style="bold")
    for col, justify in (
        (label, "left"),
        ("done", "right"),
        ("rej %", "right"),
        ("hit %", "right"),
        ("tok hit %", "right"),
        ("evicted", "right"),
        ("preempt", "right"),
        ("TTFT p50", "right"),
        ("TTFT p95", "right"),
        ("E2E mean", "right"),
        ("E2E p95", "right"),
        ("tok/s", "right"),
    ):
        t.add_column(col, justify=justify)
    for d in docs:
        r, c, lat = d["requests"], d["cache"], d["latency_ms"]
        rejection = r["rejected"] / r["arrived"] if r["arrived"] else 0.0
        t.add_row(
            d.get("label", d["policy"]),
            str(r["completed"]),
            f"{100 * rejection:.1f}",
            f"{100 * c['request_hit_rate']:.1f}",
            f"{100 * c['token_hit_rate']:.1f}",
            str(c["evicted_blocks"]),
            str(r["preempted"]),
            _ms(lat["ttft"]["p50"]),
            _ms(lat["ttft"]["p95"]),
            _ms(lat["e2e"]["mean"]),
            _ms(lat["e2e"]["p95"]),
            f"{d['throughput']['output_tokens_per_s']:,.0f}",
        )
    return t


def print_table(table: Table) -> None:
    Console().print(table)
