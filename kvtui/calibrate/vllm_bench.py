"""`vllm bench serve --save-result` JSON (read at vLLM 0.33.0: vllm/benchmarks/serve.py of its
wheel, whose keys the older benchmark_serving.py script wrote too): one file is one stage (one
request rate or concurrency); a directory of them is a run of stages, ordered by load.

Its definitions are kvtui's (kvtui/sim/metrics.py cites them): TTFT per request, TPOT
(E2E - TTFT) / (tokens - 1) over outputs of more than one token, ITL pooled over every token gap,
E2E (`e2el`). Aggregates are `median_<m>_ms` and `p<q>_<m>_ms` for the `--metric-percentiles`
asked (default 99: a p90 is then taken from the per-request lists when `--save-detailed` kept
them: `ttfts`, `itls` and `latencies` in seconds, `input_lens`, `output_lens`, `errors`).
"""

from __future__ import annotations

import math
import os

import numpy as np

from kvtui.calibrate.files import number, optional_int, read_json
from kvtui.calibrate.report import Lengths, Report, Requests, Serving, Stage
from kvtui.errors import InputError

KEYS = ("median_ttft_ms", "request_throughput")
NAMES = {"ttft": "ttft", "tpot": "tpot", "itl": "itl", "e2e": "e2el"}


def is_vllm_bench(doc) -> bool:
    return isinstance(doc, dict) and all(k in doc for k in KEYS)


def files_in(path: str) -> list[str]:
    """The `vllm bench` result files of a directory (every *.json with its keys)."""
    out = []
    for name in sorted(os.listdir(path)):
        f = os.path.join(path, name)
        if name.endswith(".json") and os.path.isfile(f) and is_vllm_bench(read_json(f)):
            out.append(f)
    return out


def read(path: str) -> Report:
    files = files_in(path) if os.path.isdir(path) else [path]
    if not files:
        raise InputError.one(path, None, "no vllm bench serve result in it")
    docs = [(f, read_json(f)) for f in files]
    for f, d in docs:
        if not is_vllm_bench(d):
            raise InputError.one(f, None, f"not a vllm bench serve result (no {' or '.join(KEYS)})")
    docs.sort(key=lambda fd: (_rate(fd[1]) or math.inf, fd[1].get("max_concurrency") or 0))
    stages = [_stage(i, f, d) for i, (f, d) in enumerate(docs)]
    first = docs[0][1]
    prompts = np.concatenate([s.requests.prompt_tokens for s in stages if s.requests is not None] or [np.zeros(0)])
    outputs = np.concatenate([s.requests.output_tokens for s in stages if s.requests is not None] or [np.zeros(0)])
    prompt = _lengths(prompts, [(d.get("total_input_tokens"), d.get("completed")) for _, d in docs])
    output = _lengths(outputs, [(d.get("total_output_tokens"), d.get("completed")) for _, d in docs])
    notes = [] if len(prompts) else ["no per-request lengths (--save-detailed): prompts and outputs taken at their means"]
    serving = Serving(model=first.get("model_id"), max_num_seqs=None)
    return Report("vllm-bench", path, tuple(stages), serving, prompt=prompt, output=output, notes=tuple(notes))


def _rate(d: dict) -> float | None:
    r = d.get("request_rate")
    return float(r) if isinstance(r, (int, float)) and math.isfinite(r) and r > 0 else None


def _lengths(values: np.ndarray, totals: list) -> Lengths:
    if len(values):
        return Lengths(float(values.mean()), float(values.std()), float(values.min()), float(values.max()))
    pairs = [(t, n) for t, n in totals if isinstance(t, (int, float)) and isinstance(n, (int, float)) and n > 0]
    if not pairs:
        return Lengths(128.0)
    return Lengths(sum(t for t, _ in pairs) / sum(n for _, n in pairs))


def _stage(index: int, file: str, d: dict) -> Stage:
    completed = int(number(d.get("completed", 0), file, "completed", 0, 1e9))
    if completed == 0:
        raise InputError.one(file, None, "no completed request to measure")
    duration = number(d.get("duration", 0.0), file, "duration (s)", 0, 1e7)
    rate, conc = _rate(d), optional_int(d.get("max_concurrency"))
    if rate is None and conc is None:
        rate = completed / duration if duration else None  # all at once: the achieved rate
    requests = _requests(file, d)
    measured = {}
    for m, key in NAMES.items():
        if f"median_{key}_ms" not in d:
            continue
        p50 = number(d[f"median_{key}_ms"], file, f"median_{key}_ms", 0, 3.6e6) / 1e3
        p90 = d.get(f"p90_{key}_ms")
        if p90 is not None:
            p90 = number(p90, file, f"p90_{key}_ms", 0, 3.6e6) / 1e3
        elif requests is not None and m != "itl":
            values = {"ttft": requests.ttft, "e2e": requests.e2e, "tpot": requests.tpot}[m]
            values = values[~np.isnan(values)]
            p90 = float(np.percentile(values, 90)) if len(values) else None
        measured[m] = {"p50": p50, **({"p90": p90} if p90 is not None else {})}
    if "ttft" not in measured:
        raise InputError.one(file, None, "no median_ttft_ms")
    prompt_mean = d["total_input_tokens"] / completed if isinstance(d.get("total_input_tokens"), (int, float)) else None
    return Stage(index, rate, conc if rate is None or conc else None, duration, completed, measured, requests,
                 prompt_mean=prompt_mean)


def _requests(file: str, d: dict) -> Requests | None:
    lists = [d.get(k) for k in ("ttfts", "itls", "input_lens", "output_lens")]
    if not all(isinstance(x, list) for x in lists) or not lists[0]:
        return None
    ttfts, itls, ins, outs = (x for x in lists if isinstance(x, list))
    if not len(ttfts) == len(itls) == len(ins) == len(outs):
        raise InputError.one(file, None, "ttfts, itls, input_lens and output_lens differ in length")
    errors = d.get("errors") or [""] * len(ttfts)
    keep = [i for i in range(len(ttfts)) if not errors[i] and isinstance(ttfts[i], (int, float)) and ttfts[i] > 0]
    ttft = np.array([ttfts[i] for i in keep], dtype=float)
    latencies = d.get("latencies")
    if isinstance(latencies, list) and len(latencies) == len(ttfts):
        e2e = np.array([latencies[i] for i in keep], dtype=float)
    else:  # releases before `latencies`: the first token and every gap after it
        e2e = ttft + np.array([sum(itls[i]) for i in keep], dtype=float)
    median = d.get("median_ttft_ms")
    if len(ttft) and isinstance(median, (int, float)) and median > 0 and not 0.5 < np.median(ttft) * 1e3 / median < 2:
        raise InputError.one(file, None, f"ttfts (median {np.median(ttft):g}) are not the seconds of median_ttft_ms "
                             f"({median:g} ms): units that cannot be right")
    if len(ttft) and (ttft.max() > 3600 or np.median(ttft) > np.median(e2e)):
        raise InputError.one(file, None, "ttfts are not seconds: units that cannot be right")
    return Requests(ttft, e2e, np.array([ins[i] for i in keep], dtype=float), np.array([outs[i] for i in keep], dtype=float))
