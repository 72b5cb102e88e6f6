"""A GuideLLM benchmarks JSON (`guidellm benchmark --output-path X.json`; read at
vllm-project/guidellm commit 47ce292, src/guidellm/benchmark/benchmark.py): a list of
`benchmarks`, one per strategy (synchronous, constant or poisson rate, concurrent streams,
throughput), each with `metrics` as status distribution summaries (`successful`: median,
percentiles) and, unless sampled away, its `requests.successful` one by one.

GuideLLM's names differ from kvtui's: its `inter_token_latency_ms` is (last token - first) /
(tokens - 1), kvtui's TPOT (weighted by tokens - 1 in the summary); its
`time_per_output_token_ms` divides the same span by all tokens, a different quantity, not
compared; it has no pooled token-gap distribution, so no ITL. `request_latency` is in seconds,
the others in milliseconds.
"""

from __future__ import annotations

import numpy as np

from kvtui.calibrate.files import dig, number, optional_int, read_json
from kvtui.calibrate.report import Lengths, Report, Requests, Serving, Stage
from kvtui.errors import InputError

MEASURES = {"ttft": ("time_to_first_token_ms", 1e-3), "tpot": ("inter_token_latency_ms", 1e-3), "e2e": ("request_latency", 1.0)}


def is_guidellm(doc) -> bool:
    return isinstance(doc, dict) and isinstance(doc.get("benchmarks"), list) and all(
        isinstance(b, dict) and "metrics" in b for b in doc["benchmarks"])


def read(path: str) -> Report:
    doc = read_json(path)
    if not is_guidellm(doc) or not doc["benchmarks"]:
        raise InputError.one(path, None, "not a GuideLLM benchmarks report (no benchmarks with metrics)")
    stages = [_stage(i, path, b) for i, b in enumerate(doc["benchmarks"])]
    stages.sort(key=lambda s: (s.rate or 0, s.concurrency or 0))
    stages = [Stage(i, s.rate, s.concurrency, s.duration_s, s.count, s.measured, s.requests) for i, s in enumerate(stages)]
    m = doc["benchmarks"][0]["metrics"]
    prompt, output = _lengths(m.get("prompt_token_count")), _lengths(m.get("output_token_count"))
    model = (doc["benchmarks"][0].get("args") or {}).get("model") or (doc["benchmarks"][0].get("worker") or {}).get("backend_model")
    return Report("guidellm", path, tuple(stages), Serving(model=model), prompt=prompt, output=output)


def _successful(summary) -> dict:
    return summary.get("successful", summary) if isinstance(summary, dict) else {}


def _lengths(summary) -> Lengths | None:
    s = _successful(summary)
    if not isinstance(s.get("mean"), (int, float)):
        return None
    return Lengths(float(s["mean"]), float(s.get("std_dev") or 0.0), s.get("min"), s.get("max"))


def _stage(index: int, file: str, b: dict) -> Stage:
    strategy = ((b.get("args") or {}).get("strategy")) or {}
    kind = strategy.get("type_") or strategy.get("type")
    metrics = dig(b, f"benchmarks[{index}]", file, "metrics")
    measured = {}
    for m, (key, unit) in MEASURES.items():
        s = _successful(metrics.get(key))
        if "median" not in s:
            continue
        p50 = number(s["median"], file, f"benchmarks[{index}].metrics.{key}.median", 0, 3.6e6) * unit
        p90 = (s.get("percentiles") or {}).get("p90")
        measured[m] = {"p50": p50} | ({"p90": number(p90, file, f"{key} p90", 0, 3.6e6) * unit} if p90 is not None else {})
    if "ttft" not in measured:
        raise InputError.one(file, None, f"benchmarks[{index}]: no time_to_first_token_ms median")
    count = _successful(metrics.get("request_latency")).get("count") or 0
    run = b.get("run_stats") or {}
    duration = float(run.get("end_time", 0) - run.get("start_time", 0)) if run.get("end_time") else 0.0
    rate = strategy.get("rate") if kind in ("constant", "poisson") else None
    concurrency = optional_int(strategy.get("streams")) if kind == "concurrent" else (1 if kind == "synchronous" else None)
    if rate is None and concurrency is None:
        rps = _successful(metrics.get("requests_per_second")).get("mean")
        rate = rps if isinstance(rps, (int, float)) and rps > 0 else None
        if rate is None:
            raise InputError.one(file, None, f"benchmarks[{index}]: neither a rate nor a concurrency ({kind})")
    return Stage(index, float(rate) if rate is not None else None, concurrency, max(duration, 0.0), int(count), measured,
                 _requests(b))


def _requests(b: dict) -> Requests | None:
    """The successful requests one by one (start, first token, end times in seconds), if kept."""
    rows = [r for r in ((b.get("requests") or {}).get("successful") or []) if isinstance(r, dict)]
    keys = ("start_time", "first_token_time", "end_time", "prompt_tokens", "output_tokens")
    rows = [r for r in rows if all(isinstance(r.get(k), (int, float)) for k in keys)]
    if len(rows) < 3:
        return None
    a = np.array([[r[k] for k in keys] for r in rows], dtype=float)
    return Requests(a[:, 1] - a[:, 0], a[:, 2] - a[:, 0], a[:, 3], a[:, 4])
