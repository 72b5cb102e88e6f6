"""Headless tables: what `kvtui run` and `kvtui compare` print for design docs.

Everything here reads the result document (kvtui.sim.result), so the printed table and the
JSON written beside it always hold the same figures.
"""

from __future__ import annotations

from rich import box
from rich.console import Console, Group, RenderableType
from rich.table import Table


def _ms(v: float) -> str:
    return f"{v:,.1f}"


def _pct(v: float) -> str:
    return f"{100 * v:.1f}%"


def run_table(doc: dict) -> Group:
    """One run: latency percentiles, then requests and cache, then one row per node."""
    r, c, lat, th = doc["requests"], doc["cache"], doc["latency_ms"], doc["throughput"]
    title = f"{doc['scenario']} · policy {doc['policy']} · seed {doc['seed']} · {doc['sim_time_s']:.2f} s simulated"

    latency = Table(title=title, header_style="bold", title_justify="left")
    latency.add_column("latency (ms)")
    for name in ("mean", "p50", "p90", "p95", "p99", "max"):
        latency.add_column(name, justify="right")
    for key, label in (("ttft", "TTFT"), ("tpot", "TPOT"), ("e2e", "E2E")):
        d = lat[key]
        latency.add_row(label, *(_ms(d[k]) for k in ("mean", "p50", "p90", "p95", "p99", "max")))

    rejection = r["rejected"] / r["arrived"] if r["arrived"] else 0.0
    totals = Table(show_header=False, box=None, padding=(0, 2))
    for _ in range(2):
        totals.add_column(style="bold")
        totals.add_column(justify="right")
    pairs = [
        ("arrived", str(r["arrived"])),
        ("request hit rate", _pct(c["request_hit_rate"])),
        ("completed", str(r["completed"])),
        ("token hit rate", _pct(c["token_hit_rate"])),
        ("rejected", f"{r['rejected']} ({_pct(rejection)})"),
        ("exact/prefix/miss", f"{c['exact_hits']}/{c['prefix_hits']}/{c['misses']}"),
        ("preempted", str(r["preempted"])),
        ("evicted blocks", str(c["evicted_blocks"])),
        ("failed/rerouted", f"{r['failed']}/{r['rerouted']}"),
        ("requests/s", f"{th['requests_per_s']:.2f}"),
        ("in flight at end", str(r.get("in_flight", 0))),
        ("output tokens/s", f"{th['output_tokens_per_s']:,.0f}"),
    ]
    for i in range(0, len(pairs), 2):
        totals.add_row(*pairs[i], *pairs[i + 1])

    nodes = Table(header_style="bold")
    for col, justify in (("node", "left"), ("KV blocks", "right"), ("peak used", "right"), ("served", "right"), ("preempted", "right"), ("evicted", "right")):
        nodes.add_column(col, justify=justify)
    for n in doc["nodes"]:
        nodes.add_row(
            n["name"],
            str(n["kv_blocks"]),
            str(n["peak_blocks_used"]),
            str(n["requests_served"]),
            str(n.get("preemptions", 0)),
            str(n.get("evicted_blocks", 0)),
        )
    return Group(latency, totals, nodes, f"wall time {doc['wall_time_s']:.2f} s")


def compare_table(docs: list[dict], label: str = "policy") -> Table:
    """One row per run of the same workload; fits 80 columns (latencies in whole ms)."""
    first = docs[0]
    t = Table(
        title=f"{first['scenario']} · seed {first['seed']} · latencies in ms",
        header_style="bold",
        box=box.SIMPLE_HEAD,
        padding=(0, 1),
    )
    t.add_column(label, no_wrap=True)
    for col in ("done", "rej%", "hit%", "tokhit%", "evicted", "preempt", "TTFT p50", "TTFT p95", "E2E avg", "E2E p95", "req/s"):
        t.add_column(col, justify="right")
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
            f"{lat['ttft']['p50']:.0f}",
            f"{lat['ttft']['p95']:.0f}",
            f"{lat['e2e']['mean']:.0f}",
            f"{lat['e2e']['p95']:.0f}",
            f"{d['throughput']['requests_per_s']:.2f}",
        )
    return t


def print_table(table: RenderableType) -> None:
    """Print to the terminal; when piped (into a doc or a file) use 120 columns, not Rich's 80,
    so wide comparisons are not squeezed into ellipses."""
    import os
    import sys

    width = None if sys.stdout.isatty() or "COLUMNS" in os.environ else 120
    Console(width=width).print(table)
