"""The predicted-latency study of docs/routing.md: the blog's workloads A-D and the MaaS shape,
each routed by the blog's policies over several seeds, as markdown tables with 95 % intervals.

Run:  python benchmarks/routing_study.py [--seeds N] [--workers K]   (default 3 seeds, 1 worker)
      python benchmarks/routing_study.py --only predicted_latency --set router.predicted_latency.kv_buckets=10
      (one policy's rows, with extra overrides)
      python benchmarks/routing_study.py --options   (predicted_latency's prediction error per
      predictor option: llm-d's defaults, the blog's 10 KV buckets, llm-d's p90 quantile
      objective, kvtui's iteration feature, llm-d's tokens-in-flight count, llm-d's in-stream
      TPOT predictions; 6 x 5 scenarios x N seeds)

Every cell is one `kvtui sweep` over N seeds (seeds S..S+N-1, S the scenario's own), so each
figure is a mean with its 95 % Student-t half-width (kvtui.sweep.stats). The policies are the
blog's comparison: round robin, llm-d's load-aware prefix scorer with the blog's (1,1,1) and
(3,2,2) weights, and predicted_latency with upstream's XGBoost regressor (the `xgboost` extra).
Workloads A-D run at their `-small` size (the same shape on 2 nodes, so a seed takes seconds,
not minutes); the MaaS shape runs as shipped. The study is sized for a shared 2-core machine:
with 3 seeds, 5 scenarios x 4 policies x 3 seeds = 60 runs, about 15 minutes of CPU.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from kvtui.sweep.stats import estimate  # noqa: E402

SCENARIOS = (
    ("A", "workload-a-small.yaml"),
    ("B", "workload-b-small.yaml"),
    ("C", "workload-c-small.yaml"),
    ("D", "workload-d-small.yaml"),
    ("MaaS", "maas.yaml"),
)
XGB = "router.predicted_latency.regressor=xgboost"
POLICIES = (
    ("round_robin", "round_robin", ()),
    ("load_prefix (1,1,1)", "load_prefix", ("router.weights.preset=seed-111",)),
    ("load_prefix (3,2,2)", "load_prefix", ("router.weights.preset=seed-322",)),
    ("predicted_latency", "predicted_latency", (XGB,)),
)
COLUMNS = (
    ("E2E p50", "latency_ms.e2e.p50", "{:.0f}"),
    ("TTFT p50", "latency_ms.ttft.p50", "{:.0f}"),
    ("TPOT p50", "latency_ms.tpot.p50", "{:.1f}"),
    ("tok hit %", "cache.token_hit_rate", "{:.1%}"),
    ("TTFT MAPE %", "routing.prediction.ttft_mape", "{:.1f}"),
    ("TPOT MAPE %", "routing.prediction.tpot_mape", "{:.1f}"),
)
OPTIONS = (
    ("kvtui's defaults (llm-d's 20 KV buckets, relative mean)", ()),
    ("kv_buckets: 10 (the blog's tens of percent)", ("router.predicted_latency.kv_buckets=10",)),
    ("objective: quantile (llm-d's p90)", ("router.predicted_latency.objective=quantile",)),
    ("iteration_feature: true (kvtui's, beyond llm-d)", ("router.predicted_latency.iteration_feature=true",)),
    ("tokens_in_flight: epp (llm-d's count, to completion)", ("router.predicted_latency.tokens_in_flight=epp",)),
    ("in-stream TPOT at ~every 200th token (llm-d's sampler: sampling_mean 200, max_decode_token_samples 1000)",
     ("router.predicted_latency.sampling_mean=200", "router.predicted_latency.max_decode_token_samples=1000")),
)
MAPES = (("TTFT", "routing.prediction.ttft_mape"), ("TPOT", "routing.prediction.tpot_mape"))


def sweep(scenario: str, policy: str, sets: tuple[str, ...], seeds: int, workers: int, out: Path) -> list[dict]:
    """One `kvtui sweep` cell: the result documents of its seeds."""
    cmd = [sys.executable, "-m", "kvtui", "sweep", str(ROOT / "scenarios" / scenario), "--policies", policy,
           "--seeds", str(seeds), "--workers", str(workers), "--out", str(out), "--fresh"]
    for s in sets:
        cmd += ["--set", s]
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, cwd=ROOT)
    lines = [json.loads(x) for x in out.read_text().splitlines() if x.strip()]
    failed = [x for x in lines if x["status"] != "ok"]
    if failed:
        raise SystemExit(f"{scenario} {policy}: {failed[0].get('error')}")
    return [x["result"] for x in lines]


def dig(doc: dict, path: str):
    for key in path.split("."):
        if not isinstance(doc, dict) or key not in doc:
            return None
        doc = doc[key]
    return doc


def cell(docs: list[dict], path: str, fmt: str) -> str:
    """mean +/- 95 % half-width over the seeds, or a dash where the figure does not exist."""
    values = [float(v) for v in (dig(d, path) for d in docs) if v is not None]
    est = estimate(values)
    if est is None:
        return "—"
    if est.half_width is None:
        return fmt.format(est.mean)
    return f"{fmt.format(est.mean)} ± {fmt.format(est.half_width).rstrip('%')}"


def table(name: str, scenario: str, args: argparse.Namespace, tmp: Path) -> list[str]:
    out = [f"**{name}** (`scenarios/{scenario}`, {args.seeds} seeds; latencies in ms)", "",
           "| policy | " + " | ".join(c[0] for c in COLUMNS) + " |", "|---" * (len(COLUMNS) + 1) + "|"]
    for label, policy, sets in POLICIES:
        if args.only and policy != args.only:
            continue
        path = tmp / f"{scenario}-{label}.jsonl".replace(" ", "_")
        docs = sweep(scenario, policy, sets + tuple(args.set), args.seeds, args.workers, path)
        out.append(f"| {label} | " + " | ".join(cell(docs, path, fmt) for _, path, fmt in COLUMNS) + " |")
    return out + [""]


def options_table(args: argparse.Namespace, tmp: Path) -> list[str]:
    """TTFT / TPOT MAPE (%) of predicted_latency (XGBoost) per predictor option and scenario."""
    head = " | ".join(f"{name} {metric}" for name, _ in SCENARIOS for metric, _ in MAPES)
    out = [f"predicted_latency (XGBoost): TTFT and TPOT MAPE %, {args.seeds} seeds", "",
           f"| option | {head} |", "|---" * (len(SCENARIOS) * len(MAPES) + 1) + "|"]
    for label, sets in OPTIONS:
        cells = []
        for _name, scenario in SCENARIOS:
            path = tmp / f"{scenario}-{len(out)}.jsonl"
            docs = sweep(scenario, "predicted_latency", (XGB, *sets), args.seeds, args.workers, path)
            cells += [cell(docs, key, "{:.1f}") for _, key in MAPES]
        out.append(f"| {label} | " + " | ".join(cells) + " |")
    return out + [""]


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--workers", type=int, default=1)
    ap.add_argument("--only", metavar="POLICY", help="run this policy's rows only (e.g. predicted_latency)")
    ap.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="an extra override for every run")
    ap.add_argument("--options", action="store_true", help="the predictor options' MAPE table instead")
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        if args.options:
            print("\n".join(options_table(args, Path(tmp))), flush=True)
            return
        for name, scenario in SCENARIOS:
            print("\n".join(table(name, scenario, args, Path(tmp))), flush=True)


if __name__ == "__main__":
    main()
