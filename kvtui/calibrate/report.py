"""What a benchmark report says, whatever tool wrote it: the common shape every reader returns.

Times are seconds. A stage is one load level (inference-perf's load stage, one `vllm bench
serve` run, one GuideLLM benchmark): its rate or concurrency, how long it ran, and the measured
percentiles of each metric *as kvtui defines it* (kvtui/sim/metrics.py): the readers convert a
tool's own definition where it differs (inference-perf's TPOT counts stream messages, not
tokens: inference_perf.py), so a real and a simulated figure are the same quantity.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from kvtui.scenario.model import SharedPrefix

METRICS = ("ttft", "tpot", "itl", "e2e")
QUANTILES = ("p50", "p90")


@dataclass(frozen=True)
class Requests:
    """Per-request measurements of one stage (seconds; tpot NaN for a 1-token output)."""

    ttft: np.ndarray
    e2e: np.ndarray
    prompt_tokens: np.ndarray
    output_tokens: np.ndarray

    @property
    def tpot(self) -> np.ndarray:
        out = self.output_tokens.astype(float)
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.where(out > 1, (self.e2e - self.ttft) / (out - 1), np.nan)


@dataclass(frozen=True)
class Stage:
    """One load level and what was measured at it."""

    index: int
    rate: float | None  # requests per second, open loop (None: closed loop)
    concurrency: int | None  # closed loop: requests in flight (None: open loop)
    duration_s: float
    count: int  # requests that succeeded
    measured: dict[str, dict[str, float]]  # metric -> quantile -> seconds (only what the report has)
    requests: Requests | None = None
    hit_rate: float | None = None  # prompt tokens served from the prefix cache, when the report counts them
    prompt_mean: float | None = None  # tokens, as the report measured them
    output_mean: float | None = None


@dataclass(frozen=True)
class Serving:
    """The engine's settings, as far as the report states them."""

    model: str | None = None
    tp: int | None = None
    max_num_seqs: int | None = None
    max_num_batched_tokens: int | None = None
    max_model_len: int | None = None
    gpu_memory_utilization: float | None = None
    kv_blocks: int | None = None
    block_size: int | None = None


@dataclass(frozen=True)
class Lengths:
    """A length distribution, from a report's summary (tokens)."""

    mean: float
    std: float = 0.0
    low: float | None = None
    high: float | None = None


@dataclass(frozen=True)
class Report:
    """A benchmark report: its stages, its workload and the serving settings it names."""

    format: str
    path: str
    stages: tuple[Stage, ...]
    serving: Serving = Serving()
    shared_prefix: SharedPrefix | None = None  # inference-perf's generator, one to one
    prompt: Lengths | None = None  # otherwise: length distributions
    output: Lengths | None = None
    model_figures: dict | None = None  # a models.yaml entry from a config.json beside the report
    arrival: str = "poisson"  # how the stage's requests were spaced: poisson, or constant (fixed gaps)
    notes: tuple[str, ...] = field(default=())
