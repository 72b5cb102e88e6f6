"""Which tool wrote a report, by its content (never its name), and the reader for it; a model's
config.json beside the report is read along."""

from __future__ import annotations

import os
import re
from dataclasses import replace

from kvtui.calibrate import guidellm, hf_config, inference_perf, recording, vllm_bench
from kvtui.calibrate.files import read_json
from kvtui.calibrate.report import Report
from kvtui.errors import InputError

_WAL = re.compile(r"^wal-\d{8}\.log$")


def read_report(path: str) -> Report:
    """The report at `path`, with a config.json beside it as its model; InputError otherwise."""
    report = _read(path)
    config = hf_config.find_config(path)
    if config is not None:
        report = replace(report, model_figures=hf_config.model_figures(config))
    return report


def _read(path: str) -> Report:
    if not os.path.exists(path):
        raise InputError.one(path, None, "no such file or directory")
    if os.path.isdir(path):
        if inference_perf.is_inference_perf(path):
            return inference_perf.read(path)
        if any(_WAL.match(n) for n in os.listdir(path)):
            return recording.read(path)
        if vllm_bench.files_in(path):
            return vllm_bench.read(path)
        raise InputError.one(path, None, "not a report: no inference-perf stage files, kvtui recording or vllm bench results in it")
    doc = read_json(path)
    if vllm_bench.is_vllm_bench(doc):
        return vllm_bench.read(path)
    if guidellm.is_guidellm(doc):
        return guidellm.read(path)
    raise InputError.one(path, None, "not a report kvtui reads (vllm bench serve --save-result JSON, GuideLLM "
                         "benchmarks JSON, an inference-perf results directory, a kvtui live recording)")
