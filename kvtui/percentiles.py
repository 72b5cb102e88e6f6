"""The one percentile rule: numpy's default, `linear` (Hyndman and Fan's definition 7: the value
at rank q/100 x (n - 1) of the sorted samples, interpolated between the two closest ranks), which
is also what vLLM's serving benchmark reports (vLLM 0.33.0 vllm/benchmarks/serve.py,
`np.percentile(ttfts or 0, p)`).

Every percentile kvtui shows goes through here: the app's histograms and its split screen,
`kvtui run` and `compare` (kvtui/sim/metrics.py), sweeps (which read those results) and the
docs' tables (made by those commands). Issue 35 found the split screen taking the nearest rank
while the single view interpolated: the same TTFT p95 read 424 ms in one and 395 ms in the other.
"""

from __future__ import annotations

from typing import Final, Sequence

import numpy as np

METHOD: Final = "linear"
"""numpy's `method` for every percentile (numpy's default; vLLM's benchmark uses the default)."""


def percentiles(values: Sequence[float] | np.ndarray, qs: Sequence[float]) -> np.ndarray:
    """The `qs` percentiles (0-100) of non-empty `values`."""
    return np.percentile(np.asarray(values, dtype=float), qs, method=METHOD)


def percentile(values: Sequence[float], q: float) -> float | None:
    """The `q` percentile of `values`, None when there are none."""
    if len(values) == 0:
        return None
    return float(percentiles(values, (q,))[0])
