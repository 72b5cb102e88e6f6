"""An engine's Prometheus `/metrics`, read for the few figures KV events do not carry.

The names and labels are vLLM 0.33.0's (`vllm/v1/metrics/loggers.py`, `PrometheusStatLogger`):
- `vllm:cache_config_info`, a gauge set to 1 whose labels are the cache config's fields
  (`CacheConfig.metrics_info` in `vllm/config/cache.py`): `num_gpu_blocks`, `block_size`, ...;
- `vllm:kv_cache_usage_perc` (1 means 100 percent), `vllm:num_requests_running`,
  `vllm:num_requests_waiting`, gauges labelled `model_name` and `engine`;
- `vllm:prefix_cache_queries` and `vllm:prefix_cache_hits`, counters of tokens, exposed with
  Prometheus's `_total` suffix.

With several engine cores behind one server (data parallelism) the server reports each under
its `engine` label; kvtui adds their requests and prefix-cache counters up (usage: their mean;
GPU blocks: one core's, each has its own pool of that size), so every rank of an engine shows
the whole server's figures. The text format is read here (a line is `name{labels} value
[timestamp]`), so no Prometheus client library is needed; what is not a sample is skipped, and
so is a sample kvtui cannot use (a value that is NaN or infinite, a count that is not ASCII
digits, a label value like `"²"`): those are counted (`EngineFigures.skipped`) and shown, and
one bad sample never costs the rest of the page.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

_SAMPLE = re.compile(r'^([A-Za-z_:][A-Za-z0-9_:]*)(?:\{(.*)\})?\s+(\S+)')
_LABEL = re.compile(r'([A-Za-z_][A-Za-z0-9_]*)="((?:[^"\\]|\\.)*)"')

RUNNING, WAITING, USAGE = "vllm:num_requests_running", "vllm:num_requests_waiting", "vllm:kv_cache_usage_perc"
QUERIES, HITS, CACHE_INFO = "vllm:prefix_cache_queries_total", "vllm:prefix_cache_hits_total", "vllm:cache_config_info"


@dataclass(frozen=True)
class EngineFigures:
    """One scrape of one engine; None where its metrics did not say."""

    num_gpu_blocks: int | None = None
    block_size: int | None = None
    kv_usage: float | None = None  # 0..1
    running: int | None = None
    waiting: int | None = None
    prefix_queries: int | None = None  # tokens
    prefix_hits: int | None = None
    error: str | None = None  # the scrape failed: why (the figures above are then all None)
    skipped: int = 0  # samples of the page that could not be used (NaN, infinite, unreadable)

    @property
    def hit_rate(self) -> float | None:
        if not self.prefix_queries:
            return None
        return self.prefix_hits / self.prefix_queries if self.prefix_hits is not None else None


_COUNT = re.compile(r"[0-9]{1,12}", re.ASCII)
KNOWN = (RUNNING, WAITING, USAGE, QUERIES, HITS, CACHE_INFO)


def samples(text: str) -> tuple[list[tuple[str, dict[str, str], float]], int]:
    """Every usable sample of a Prometheus text exposition, (name, labels, value), and how many
    samples of the metrics kvtui reads were skipped (a value that is not a finite number);
    a bad sample of another metric costs nothing."""
    out, skipped = [], 0
    for line in text.splitlines():
        match = _SAMPLE.match(line.strip())
        if match is None or line.startswith("#"):
            continue
        try:
            value = float(match.group(3))
        except ValueError:
            value = math.nan
        if not math.isfinite(value):
            skipped += match.group(1) in KNOWN
            continue
        out.append((match.group(1), dict(_LABEL.findall(match.group(2) or "")), value))
    return out, skipped


def engine_figures(text: str) -> EngineFigures:
    by_name: dict[str, list[tuple[dict, float]]] = {}
    found, skipped = samples(text)
    for name, labels, value in found:
        if name in (RUNNING, WAITING, QUERIES, HITS) and not 0 <= value < 1e18:  # a count below 0 or past int64
            skipped += 1
            continue
        by_name.setdefault(name, []).append((labels, value))
    info = by_name.get(CACHE_INFO, [])
    usage = [v for _, v in by_name.get(USAGE, []) if 0 <= v <= 1]
    skipped += len(by_name.get(USAGE, [])) - len(usage)
    blocks, bad_blocks = _info_first(info, "num_gpu_blocks")
    size, bad_size = _info_first(info, "block_size")
    return EngineFigures(
        num_gpu_blocks=blocks, block_size=size,
        kv_usage=sum(usage) / len(usage) if usage else None,
        running=_sum(by_name, RUNNING), waiting=_sum(by_name, WAITING),
        prefix_queries=_sum(by_name, QUERIES), prefix_hits=_sum(by_name, HITS),
        skipped=skipped + bad_blocks + bad_size)


def _sum(by_name: dict, name: str) -> int | None:
    values = [v for _, v in by_name.get(name, [])]
    return int(sum(values)) if values else None


def _info_first(info: list, label: str) -> tuple[int | None, int]:
    """The first readable count `label` of the info samples, and how many were unreadable."""
    values = [labels[label] for labels, _ in info if label in labels]
    good = [int(v) for v in values if _COUNT.fullmatch(v) and int(v) > 0]
    return (good[0] if good else None), len(values) - len(good)
