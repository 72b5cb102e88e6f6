"""Headless tables: what `kvtui run` and `kvtui compare` print for design docs.

Everything here reads the result document (kvtui.run.result), so the printed table and the
JSON written beside it always hold the same figures.
"""

from __future__ import annotations

from rich import box
from rich.console import Console, Group, RenderableType
from rich.measure import Measurement
from rich.table import Table


def _ms(v: float) -> str:
    return f"{v:,.1f}"


def _pct(v: float) -> str:
    return f"{100 * v:.1f}%"


def _slo_text(slo: dict) -> str:
    if not slo.get("with_slo"):
        return "— (no SLOs)"
    return f"{_pct(slo['attainment'])} ({slo['met']}/{slo['with_slo']})"


def _flat(d: dict, prefix: str = "") -> list[tuple[str, str]]:
    """A nested dict of figures as (dotted key, text) rows; lists are summarised by length."""
    rows: list[tuple[str, str]] = []
    for k, v in d.items():
        key = f"{prefix}{k}"
        if isinstance(v, dict):
            rows.extend(_flat(v, key + "."))
        elif isinstance(v, (list, tuple)):
            rows.append((key, f"{len(v)} items"))
        elif isinstance(v, float):
            rows.append((key, f"{v:,.4g}"))
        else:
            rows.append((key, str(v)))
    return rows


def run_table(doc: dict) -> Group:
    """One run: latency percentiles, then requests, cache and SLOs, then one row per node."""
    r, c, lat, th = doc["requests"], doc["cache"], doc["latency_ms"], doc["throughput"]
    slo = doc.get("slo", {})
    title = f"{doc['scenario']} · policy {doc['policy']} · seed {doc['seed']} · {doc['sim_time_s']:.2f} s simulated"

    latency = Table(title=title, header_style="bold", title_justify="left")
    latency.add_column("latency (ms)")
    for name in ("mean", "p50", "p90", "p95", "p99", "max"):
        latency.add_column(name, justify="right")
    for key, label in (("ttft", "TTFT"), ("tpot", "TPOT (>1 token)"), ("itl", "ITL (per token)"), ("e2e", "E2E")):
        if key not in lat:
            continue
        d = lat[key]
        latency.add_row(label, *(_ms(d[k]) for k in ("mean", "p50", "p90", "p95", "p99", "max")))

    rejection = r["rejected"] / r["arrived"] if r["arrived"] else 0.0
    rejected = f"{r['rejected']} ({_pct(rejection)})"
    if r.get("shed"):
        rejected += f", {r['shed']} shed"
    if r.get("turns_cut"):
        rejected += f", {r['turns_cut']} later turns cut"
    totals = Table(show_header=False, box=None, padding=(0, 2))
    for _ in range(2):
        totals.add_column(style="bold")
        totals.add_column(justify="right")
    pairs = [
        ("arrived", str(r["arrived"])),
        ("token hit rate", _pct(c["token_hit_rate"])),
        ("completed", f"{r['completed']} ({_pct(r.get('success_rate', 0.0))} success)"),
        ("request hit rate", _pct(c["request_hit_rate"])),
        ("rejected", rejected),
        ("exact/prefix/miss", f"{c['exact_hits']}/{c['prefix_hits']}/{c['misses']}"),
        ("preempted", str(r["preempted"])),
        ("evicted blocks", str(c["evicted_blocks"])),
        ("failed/rerouted", f"{r['failed']}/{r['rerouted']}"),
        ("requests/s", f"{th['requests_per_s']:.2f}"),
        ("in flight at end", str(r.get("in_flight", 0))),
        ("output tokens/s", f"{th['output_tokens_per_s']:,.0f}"),
        ("SLO attainment", _slo_text(slo)),
        ("goodput", f"{slo.get('goodput_rps', 0.0):.2f} req/s" if slo.get("with_slo") else "—"),
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
    parts: list[RenderableType] = [latency, totals, nodes]
    routing = doc.get("routing") or {}
    if routing:
        rows = _flat({k: v for k, v in routing.items() if k != "available"})
        parts.append("routing: " + " · ".join(f"{key} {text}" for key, text in rows))
    if (line := available_line(doc)) is not None:
        parts.append(line)
    offload = c.get("offload")
    if offload:
        parts.append(
            f"CPU tier: {offload['loaded_tokens']:,} prompt tokens loaded back ({_pct(offload['loaded_token_rate'])} of "
            f"prompt tokens; GPU hits {_pct(offload['gpu_token_hit_rate'])}) in {offload['load_s'] * 1000:,.1f} ms of "
            f"transfers · {offload['stored_blocks']:,} evicted blocks kept, {offload['evicted_blocks']:,} dropped"
        )
    if doc.get("disaggregation"):
        parts.append(_disaggregation_line(doc))
    reasons = r.get("rejected_reasons") or {}
    if reasons:
        parts.append("rejections by reason: " + ", ".join(f"{k} {v}" for k, v in reasons.items()))
    parts.append(f"wall time {doc['wall_time_s']:.2f} s")
    return Group(*parts)


def available_line(doc: dict, label: str = "available vs achieved") -> str | None:
    """Part of the hit rate the router gave away: the longest prefix any node held at each
    decision against what the chosen node held (`routing.available`), and how often the index
    disagreed with the chosen node's pool; None when the run routed no prompt block."""
    routing = doc.get("routing") or {}
    a = routing.get("available") or {}
    if not a.get("prompt_blocks"):
        return None
    index = routing.get("index") or {}
    stale = f" · index stale at {index['stale_decisions']:,}/{index['decisions']:,} decisions" if "decisions" in index else ""
    return (f"{label}: best node held {_pct(a['available_hit_rate'])} of prompt blocks, the chosen one "
            f"{_pct(a['chosen_hit_rate'])}: {100 * a['given_away']:.1f} pp given away{stale}")


# The compare table's columns: (header, cell from one result document). Two-line headers keep
# it within 120 columns (what print_table uses when piped) with a policy name of 12 characters;
# 18 (sglang_cache_aware) make it 126, printed whole (print_table takes the width it needs).
def _node_spread(d: dict) -> str:
    served = [n["requests_served"] for n in d["nodes"]]
    if not served:
        return "—"
    mean = sum(served) / len(served)
    return f"{max(served)}/{mean:.0f}"


def _given_away_cell(d: dict) -> str:
    a = (d.get("routing") or {}).get("available") or {}
    return f"{100 * a['given_away']:.1f}" if a.get("prompt_blocks") else "—"


def _slo_cell(d: dict) -> str:
    slo = d.get("slo") or {}
    return f"{100 * slo['attainment']:.1f}" if slo.get("with_slo") else "—"


def _goodput_cell(d: dict) -> str:
    slo = d.get("slo") or {}
    return f"{slo['goodput_rps']:.2f}" if slo.get("with_slo") else "—"


def _lat(d: dict, key: str, q: str, digits: int = 0) -> str:
    return f"{d['latency_ms'][key][q]:.{digits}f}"


COMPARE_COLUMNS: tuple[tuple[str, object], ...] = (
    ("ok\n%", lambda d: f"{100 * d['requests'].get('success_rate', 0.0):.1f}"),
    ("E2E\np50", lambda d: _lat(d, "e2e", "p50")),
    ("E2E\np95", lambda d: _lat(d, "e2e", "p95")),
    ("TTFT\np50", lambda d: _lat(d, "ttft", "p50")),
    ("TTFT\np95", lambda d: _lat(d, "ttft", "p95")),
    ("TPOT\np50", lambda d: _lat(d, "tpot", "p50", 1)),
    ("TPOT\np99", lambda d: _lat(d, "tpot", "p99", 1)),
    ("out\ntok/s", lambda d: f"{d['throughput']['output_tokens_per_s']:.0f}"),
    ("tok\nhit%", lambda d: f"{100 * d['cache']['token_hit_rate']:.1f}"),
    ("req\nhit%", lambda d: f"{100 * d['cache']['request_hit_rate']:.1f}"),
    ("lost\nhit%", lambda d: _given_away_cell(d)),
    ("req/node\nmax/avg", _node_spread),
    ("SLO\nmet%", _slo_cell),
    ("good\nreq/s", _goodput_cell),
)


def compare_table(docs: list[dict], label: str = "policy", title: str | None = None) -> Table:
    """One row per run of the same workload, within 120 columns; latencies in ms.

    ok% = completed / (arrived - in flight at the end); TPOT over requests with more than one
    output token; tok hit% (the headline) = prompt tokens from cache, req hit% = requests with
    any cached block; lost hit% = the hit rate given away, points of prompt blocks some node held
    and the chosen one did not (`routing.available`); req/node = the most and the mean requests served per node; SLO met% and
    good req/s are over requests with an SLO ("—" when the workload sets none)."""
    first = docs[0]
    return _runs_table(docs, COMPARE_COLUMNS, label, title or f"{first['scenario']} · seed {first['seed']} · latencies in ms")


def _runs_table(docs: list[dict], columns, label: str, title: str) -> Table:
    """One row per run, a column per (header, cell) of `columns`."""
    t = Table(title=title, header_style="bold", box=box.SIMPLE_HEAD, padding=(0, 1))
    t.add_column(label, no_wrap=True)
    for header, _ in columns:
        t.add_column(header, justify="right", no_wrap=True)
    for d in docs:
        t.add_row(d.get("label", d["policy"]), *(cell(d) for _, cell in columns))
    return t


def _disaggregation_line(doc: dict) -> str:
    """The run report's prefill/decode line: pools busy, KV moved, the handoff's tail."""
    d = doc["disaggregation"]
    pools = ", ".join(f"{role} busy {100 * p['utilisation']:.0f}%" for role, p in d["pools"].items())
    t = d["transfers"]
    moved = (f" · {t['count']:,} KV moves, {t['bytes'] / 1e9:,.2f} GB, wire p50 {t['wire_ms']['p50']:.1f} ms, "
             f"handoff p95 {t['handoff_ms']['p95']:.1f} ms" if t["count"] else "")
    return f"prefill/decode: {pools}{moved} · prefilled remotely {d['requests']['remote']}, locally {d['requests']['local']}"


def _pool_util(d: dict, role: str) -> str:
    pool = d["disaggregation"]["pools"].get(role)
    return f"{100 * pool['utilisation']:.0f}" if pool else "—"


def _transfer_ms(d: dict, key: str, q: str) -> str:
    t = d["disaggregation"]["transfers"]
    return f"{t[key][q]:.1f}" if t["count"] else "—"


POOL_COLUMNS: tuple[tuple[str, object], ...] = (
    ("prefill\nbusy%", lambda d: _pool_util(d, "prefill")),
    ("decode\nbusy%", lambda d: _pool_util(d, "decode")),
    ("both\nbusy%", lambda d: _pool_util(d, "both")),
    ("remote/\nlocal", lambda d: "{remote}/{local}".format(**d["disaggregation"]["requests"])),
    ("KV\nmoves", lambda d: str(d["disaggregation"]["transfers"]["count"])),
    ("KV\nGB", lambda d: f"{d['disaggregation']['transfers']['bytes'] / 1e9:.2f}"),
    ("wire\np50", lambda d: _transfer_ms(d, "wire_ms", "p50")),
    ("queued\np95", lambda d: _transfer_ms(d, "queued_ms", "p95")),
    ("handoff\np95", lambda d: _transfer_ms(d, "handoff_ms", "p95")),
    ("good\nreq/s", _goodput_cell),
)


def pool_table(docs: list[dict], label: str = "policy") -> Table | None:
    """Per-pool figures of runs with prefill/decode roles or a P/D policy (None when no run has
    any): busy% = a pool's node-seconds running iterations over its node-seconds; remote/local
    = requests prefilled on another node / on their decode node; KV moves and GB, and in ms the
    time on the wire, the queue behind other transfers on the link, and the whole handoff from
    the end of the prefill to the decode node running it (room, queue, wire)."""
    runs = [d for d in docs if d.get("disaggregation")]
    return _runs_table(runs, POOL_COLUMNS, label, "prefill/decode pools · times in ms") if runs else None


def ladder_tables(docs: list[dict], unit: str = "sessions") -> Group:
    """`compare --ladder`: one block per rate step (runs tagged `ladder: {"rate": R}`); `unit`
    is what the rate counts (sessions or requests, `kvtui.cli.validate.rate_unit`)."""
    steps: dict[float, list[dict]] = {}
    for d in docs:
        steps.setdefault(d["ladder"]["rate"], []).append(d)
    first = docs[0]
    blocks: list[RenderableType] = []
    for rate, runs in steps.items():
        blocks.append(
            compare_table(runs, title=f"{first['scenario']} · seed {first['seed']} · rate {rate:g} {unit}/s · latencies in ms")
        )
    return Group(*blocks)


CAPACITY_ATTAINMENT = 0.9
"""`compare --ladder`'s capacity: the highest rate step up to which every step met its SLOs for at
least this share of its requests (the predicted-latency blog's reading of a QPS ladder: the
step where attainment falls below target is the capacity)."""


def ladder_capacity(docs: list[dict], unit: str = "sessions", target: float = CAPACITY_ATTAINMENT) -> str:
    """One line: each policy's capacity on the ladder (runs tagged `ladder: {"rate": R}`), or
    why there is none (no SLO in the workload; the first step already below target)."""
    by_policy: dict[str, list[tuple[float, float | None]]] = {}
    for d in docs:
        by_policy.setdefault(d["policy"], []).append((d["ladder"]["rate"], d["slo"]["attainment"]))
    if all(a is None for steps in by_policy.values() for _, a in steps):
        return ("capacity: none measured, the workload sets no SLO (e.g. --set "
                "'workload.shared_prefix.slo={ttft_ms: 200, tpot_ms: 50}', or a group's slo)")
    parts = []
    for policy, steps in by_policy.items():
        met = None
        for rate, attainment in sorted(steps):
            if attainment is None or attainment < target:
                break
            met = rate
        parts.append(f"{policy} {met:g}" if met is not None else f"{policy} below the first step")
    return (f"capacity ({unit}/s, the highest step up to which SLO attainment stayed at or above "
            f"{target:.0%}): " + ", ".join(parts))


def print_table(table: RenderableType) -> None:
    """Print to the terminal; when piped (into a doc or a file) use 120 columns, not Rich's 80,
    so wide comparisons are not squeezed into ellipses."""
    import os
    import sys

    width = None if sys.stdout.isatty() or "COLUMNS" in os.environ else 120
    console = Console(width=width)
    # A terminal narrower than the table would squeeze figures into ellipses ("9…"); print at
    # the width the table needs instead and let the terminal wrap (numbers stay whole).
    tables = [r for r in getattr(table, "renderables", [table]) if isinstance(r, Table)]
    wide = console.options.update_width(1000)
    need = max((Measurement.get(console, wide, t).maximum for t in tables), default=0)
    if need > console.width:
        console = Console(width=need)
    console.print(table)
