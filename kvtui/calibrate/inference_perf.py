"""An inference-perf results directory (kubernetes-sigs/inference-perf, v0.4.0 at e3e690b and
later): `stage_N_lifecycle_metrics.json` per load stage, `summary_lifecycle_metrics.json`, and
the run's resolved `config.yaml` (or the requested `profile.yaml`); the engine's settings from an
`exp-config.yaml` / `vllm.yaml` beside it (model, tensor_parallelism, max_num_seqs,
max_num_batched_tokens, max_model_len).

How inference-perf measures (inference_perf/reportgen/base.py and apis/completion.py at v0.4.0):
one timestamp per server-sent-events *message*, not per token. `time_to_first_token` is the
first message after the request's start; `request_latency` is start to end; `time_per_output_token`
is (last message - first) / (messages - 1), per request; `inter_token_latency` pools every gap
between messages. When a stream carries k messages per token (on the inference-sim/training
H100 runs k = 2: half the gaps are under 0.1 ms, ITL p50 31 us, the other half the decode step,
ITL p75 8.2 ms), its TPOT is 1/k of the time per token and its ITL quantile q is the token gap's
quantile 1 - k (1 - q). k is read off each stage's own means: (E2E - TTFT) / TPOT + 1 messages
over the tokens each request produced (`output_len` with `ignore_eos`, else the mean measured).
The conversion is exact for the TPOT median (k is a constant) and interpolated for ITL.

The resolved `config.yaml` is what ran: a profile that asks for `num_unique_system_prompts` or
`enable_multi_turn_chat` with a release that does not know those keys runs its defaults
(10 groups x 10 users, single turn), and the resolved file says so.
"""

from __future__ import annotations

import math
import os
import re

import numpy as np

from kvtui.calibrate.files import dig, number, optional_int, read_json, read_yaml
from kvtui.calibrate.report import Report, Serving, Stage
from kvtui.errors import InputError
from kvtui.scenario.model import SharedPrefix

STAGE_FILE = re.compile(r"^stage_(\d+)_lifecycle_metrics\.json$")
SETTINGS_FILES = ("exp-config.yaml", "vllm.yaml")
CONFIG_FILES = ("config.yaml", "profile.yaml")
HOUR = 3600.0


def is_inference_perf(path: str) -> bool:
    return os.path.isdir(path) and results_dir(path) is not None


def results_dir(path: str) -> str | None:
    """The directory holding the stage files: `path` itself or its `results/`."""
    for d in (path, os.path.join(path, "results")):
        if os.path.isdir(d) and any(STAGE_FILE.match(n) for n in os.listdir(d)):
            return d
    return None


def read(path: str) -> Report:
    results = results_dir(path)
    if results is None:
        raise InputError.one(path, None, "no stage_N_lifecycle_metrics.json: not an inference-perf results directory")
    config_path, config = _config(path, results)
    data = config.get("data") or {}
    server = config.get("server") or {}
    ignore_eos = bool(server.get("ignore_eos"))
    sp = _shared_prefix(data, config_path)
    stage_specs = (config.get("load") or {}).get("stages") or []
    names = sorted((int(m.group(1)), n) for n in os.listdir(results) if (m := STAGE_FILE.match(n)))
    stages, notes = [], []
    for index, name in names:
        spec = stage_specs[index] if index < len(stage_specs) and isinstance(stage_specs[index], dict) else {}
        stage, note = _stage(os.path.join(results, name), index, spec, sp, ignore_eos)
        stages.append(stage)
        notes += note
    if not stages:
        raise InputError.one(path, None, "no load stage in the report")
    if sp is not None:
        sp, note = _server_lengths(sp, stages)
        notes += note
    settings = _settings(path, results)
    model = settings.get("model") or server.get("model_name")
    serving = Serving(
        model=model, tp=optional_int(settings.get("tensor_parallelism") or settings.get("tensor_parallel_size")),
        max_num_seqs=optional_int(settings.get("max_num_seqs")),
        max_num_batched_tokens=optional_int(settings.get("max_num_batched_tokens")),
        max_model_len=optional_int(settings.get("max_model_len")),
        gpu_memory_utilization=settings.get("gpu_memory_utilization"),
        kv_blocks=optional_int(settings.get("num_gpu_blocks")), block_size=optional_int(settings.get("block_size")))
    if sp is not None and not sp.multi_turn:
        notes.append(f"{os.path.basename(config_path)}: single-turn shared prefix ({sp.num_groups} groups x "
                     f"{sp.num_prompts_per_group} users): every repeat of a user's prompt is a prefix-cache hit")
    arrival = "constant" if (config.get("load") or {}).get("type") == "constant" else "poisson"
    return Report("inference-perf", path, tuple(stages), serving, shared_prefix=sp, notes=tuple(notes), arrival=arrival)


def _config(path: str, results: str) -> tuple[str, dict]:
    for d in (results, path, os.path.dirname(results)):
        for name in CONFIG_FILES:
            f = os.path.join(d, name)
            if os.path.isfile(f):
                doc = read_yaml(f)
                if not isinstance(doc, dict):
                    raise InputError.one(f, None, "not an inference-perf config (a mapping with data:, load:)")
                return f, doc
    raise InputError.one(path, None, "no config.yaml or profile.yaml: the workload cannot be rebuilt")


def _settings(path: str, results: str) -> dict:
    for d in (path, os.path.dirname(results), results):
        for name in SETTINGS_FILES:
            f = os.path.join(d, name)
            if os.path.isfile(f):
                doc = read_yaml(f)
                return doc if isinstance(doc, dict) else {}
    return {}


def _first(d: dict, *keys: str):
    return next((d[k] for k in keys if d.get(k) is not None), None)


def _shared_prefix(data: dict, file: str) -> SharedPrefix | None:
    """inference-perf's `data.shared_prefix` as kvtui's generator (both spellings of its keys)."""
    if data.get("type") != "shared_prefix":
        return None
    sp = data.get("shared_prefix") or {}
    groups = _first(sp, "num_groups", "num_unique_system_prompts") or 10
    users = _first(sp, "num_prompts_per_group", "num_users_per_system_prompt") or 10
    lens = {k: number(_first(sp, k) if _first(sp, k) is not None else default, file, f"data.shared_prefix.{k}", 0, 1e7)
            for k, default in (("system_prompt_len", 100), ("question_len", 50), ("output_len", 50))}
    return SharedPrefix(
        num_groups=int(number(groups, file, "data.shared_prefix.num_groups", 1, 1e5)),
        num_prompts_per_group=int(number(users, file, "data.shared_prefix.num_prompts_per_group", 1, 1e6)),
        system_prompt_len=int(lens["system_prompt_len"]), question_len=int(lens["question_len"]),
        output_len=max(1, int(lens["output_len"])), system_prompt_spread=0.0, question_spread=0.0, output_spread=0.0,
        multi_turn=bool(sp.get("enable_multi_turn_chat")))


def _server_lengths(sp: SharedPrefix, stages: list[Stage]) -> tuple[SharedPrefix, list[str]]:
    """The prompt as the server tokenised it: inference-perf draws token ids, decodes them to text,
    and the server re-tokenises that text (plus a BOS), so the measured prompt is a few per cent
    longer than configured; system prompt and question are scaled by that share."""
    measured = [s.prompt_mean for s in stages if s.prompt_mean]
    asked = sp.system_prompt_len + sp.question_len
    if not measured or asked <= 0 or sp.multi_turn:
        return sp, []
    scale = float(np.mean(measured)) / asked
    if not 0.8 <= scale <= 1.25:
        return sp, [f"measured prompts ({np.mean(measured):.0f} tokens) far from configured ({asked}): configured kept"]
    from dataclasses import replace

    return replace(sp, system_prompt_len=round(sp.system_prompt_len * scale), question_len=round(sp.question_len * scale)), [
        f"prompts as the server tokenised them: {np.mean(measured):.0f} tokens measured for {asked} configured (x{scale:.3f})"]


_PCT = {"median": 50.0}


def _percentiles(summary: dict) -> dict[float, float]:
    out = {}
    for key, value in summary.items():
        if key in _PCT:
            out[_PCT[key]] = value
        elif key.startswith("p") and isinstance(value, (int, float)):
            try:
                out[float(key[1:])] = value
            except ValueError:
                continue
    return dict(sorted(out.items()))


def _at(summary: dict, q: float, file: str, what: str) -> float:
    """The summary's value at percentile q (interpolated between the ones it lists)."""
    pts = _percentiles(summary)
    if not pts:
        raise InputError.one(file, None, f"{what}: no percentiles")
    qs, vs = np.array(list(pts)), np.array([number(v, file, what, 0, HOUR) for v in pts.values()])
    return float(np.interp(q, qs, vs))


def _stage(file: str, index: int, spec: dict, sp: SharedPrefix | None, ignore_eos: bool) -> tuple[Stage, list[str]]:
    doc = read_json(file)
    if not isinstance(doc, dict):
        raise InputError.one(file, None, "not an inference-perf lifecycle report (a JSON object)")
    ok = dig(doc, "", file, "successes")
    count = int(number(dig(ok, "successes", file, "count"), file, "successes.count", 0, 1e9))
    lat = dig(ok, "successes", file, "latency")
    if count == 0 or not isinstance(lat, dict) or not lat.get("time_to_first_token"):
        raise InputError.one(file, None, f"stage {index}: no successful streamed request to measure")
    load = doc.get("load_summary") or {}
    rate = spec.get("rate", load.get("requested_rate"))
    rate = number(rate, file, "the stage's rate (requests/s)", 1e-6, 1e6) if rate is not None else None
    duration = number(spec.get("duration", load.get("send_duration") or 0.0), file, "the stage's duration (s)", 0, 1e7)
    prompt = ok.get("prompt_len") or {}
    out_len = ok.get("output_len") or {}
    tokens = float(sp.output_len) if (ignore_eos and sp is not None) else float(out_len.get("mean") or 0.0)
    ttft, e2e, tpot = (dig(lat, "latency", file, k) for k in ("time_to_first_token", "request_latency", "time_per_output_token"))
    itl = lat.get("inter_token_latency") or {}
    k, notes = _messages_per_token(ttft, e2e, tpot, tokens, file, index)
    measured = {
        "ttft": {"p50": _at(ttft, 50, file, "time_to_first_token"), "p90": _at(ttft, 90, file, "time_to_first_token")},
        "e2e": {"p50": _at(e2e, 50, file, "request_latency"), "p90": _at(e2e, 90, file, "request_latency")},
        "tpot": {"p50": k * _at(tpot, 50, file, "time_per_output_token"), "p90": k * _at(tpot, 90, file, "time_per_output_token")},
    }
    if _percentiles(itl):
        measured["itl"] = {q: _at(itl, 100 - (100 - p) / k, file, "inter_token_latency") for q, p in (("p50", 50), ("p90", 90))}
    if measured["ttft"]["p50"] > measured["e2e"]["p50"]:
        raise InputError.one(file, None, f"stage {index}: TTFT p50 above E2E p50: units that cannot be right")
    hit = _hit_rate(doc)
    return Stage(index, rate, None, duration, count, measured, hit_rate=hit,
                 prompt_mean=prompt.get("mean"), output_mean=tokens or None), notes


def _messages_per_token(ttft: dict, e2e: dict, tpot: dict, tokens: float, file: str, index: int) -> tuple[int, list[str]]:
    """Stream messages per output token, from the stage's means (module docstring)."""
    means = [m for s in (ttft, e2e, tpot) if isinstance(m := s.get("mean"), (int, float)) and m > 0]
    if tokens <= 1 or len(means) < 3:
        return 1, []
    messages = (means[1] - means[0]) / means[2] + 1
    ratio = messages / tokens
    k = max(1, round(ratio))
    if abs(ratio - k) > 0.1 * k:
        return 1, [f"{os.path.basename(file)}: {ratio:.2f} stream messages per token, not a whole number: TPOT taken as is"]
    if k > 1:
        return k, [f"{os.path.basename(file)}: {messages:.0f} stream messages for {tokens:.0f} tokens: "
                   f"inference-perf's TPOT x {k} is the time per token, its ITL quantile 1-(1-q)/{k} the token gap's q"]
    return 1, []


def _hit_rate(doc: dict) -> float | None:
    """vLLM's prefix-cache hit rate when the report carries its counters (`prefix_cache_hit_percent`)."""
    stack = [doc]
    while stack:
        d = stack.pop()
        if isinstance(d, dict):
            v = d.get("prefix_cache_hit_percent")
            if isinstance(v, dict) and isinstance(v.get("mean"), (int, float)) and math.isfinite(v["mean"]):
                x = float(v["mean"])
                return x / 100.0 if x > 1 else x
            stack.extend(d.values())
    return None
