"""The inference-sim/training runs of inference_sim_runs.yaml (figures transcribed, with their
source) rebuilt as inference-perf results directories in inference-perf's own schema, with the
model's config.json beside them: what `kvtui calibrate` reads from a real run, made from the
numbers alone. Used by the tests and by benchmarks/calibration_table.py (the docs table)."""

from __future__ import annotations

import json
from pathlib import Path

import yaml

RUNS_FILE = Path(__file__).with_name("inference_sim_runs.yaml")


def runs() -> dict:
    return yaml.safe_load(RUNS_FILE.read_text())["runs"]


def commit() -> str:
    return yaml.safe_load(RUNS_FILE.read_text())["commit"]


def _summary(figures: dict) -> dict:
    return {"median" if k == "median" else k: v for k, v in figures.items()}


def write_run(run: dict, directory: Path) -> Path:
    """An inference-perf results directory for `run` under `directory` (returned)."""
    results = directory / "results"
    results.mkdir(parents=True, exist_ok=True)
    (directory / "exp-config.yaml").write_text(yaml.safe_dump({**run["vllm"], "app": "inference-perf"}))
    (directory / "config.json").write_text(json.dumps(run["config_json"]))
    config = {"api": {"type": "completion", "streaming": True},
              "data": {"type": "shared_prefix", "shared_prefix": run["shared_prefix"]},
              "load": {"type": run["load_type"], "stages": [{"rate": s["rate"], "duration": s["duration"]} for s in run["stages"]]},
              "server": {"type": "vllm", "model_name": run["vllm"]["model"], "ignore_eos": run["ignore_eos"]}}
    (results / "config.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    for i, s in enumerate(run["stages"]):
        doc = {"load_summary": {"count": s["count"], "requested_rate": s["rate"], "send_duration": s["duration"]},
               "successes": {"count": s["count"], "latency": {k: _summary(s[k]) for k in (
                   "time_to_first_token", "request_latency", "time_per_output_token", "inter_token_latency")},
                   "prompt_len": {"mean": s["prompt_len_mean"]}, "output_len": {"mean": s["output_len_mean"]}},
               "failures": {"count": 0}}
        (results / f"stage_{i}_lifecycle_metrics.json").write_text(json.dumps(doc, indent=1))
    return directory
