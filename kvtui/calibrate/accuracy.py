"""How well simulated figures match measured ones, and against what a model that ignores load
would say.

- err = simulated / real - 1 per stage, metric and percentile (BLIS's per-percentile table);
- the naive baseline: every later stage predicted by the first stage's measured figures carried
  over unchanged (a model that ignores load; on the inference-sim/training runs it misses the
  second stage's TTFT median by 5-48 % and its TPOT median by 5-50 %);
- per request, when the report has them: each real request's E2E predicted from the simulated
  stage as TTFT p50 + (its output tokens - 1) x TPOT p50, scored by MAPE and Pearson correlation
  (how much of the request-to-request spread the model's per-token time explains).
"""

from __future__ import annotations

import numpy as np

from kvtui.calibrate.report import METRICS, QUANTILES, Requests

Figures = dict[str, dict[str, float]]


def errors(real: Figures, sim: Figures) -> dict:
    """metric -> quantile -> {real, sim, err} for every figure both have (ms, err a share)."""
    out: dict = {}
    for m in METRICS:
        if m in real and m in sim:
            out[m] = {q: {"real": real[m][q] * 1e3, "sim": sim[m][q] * 1e3, "err": sim[m][q] / real[m][q] - 1.0}
                      for q in QUANTILES if q in real[m] and q in sim[m] and real[m][q] > 0}
    return out


def per_request(real: Requests, sim: Figures) -> dict | None:
    """MAPE and correlation of each real request's E2E against the simulated stage's prediction."""
    if real is None or "ttft" not in sim or "tpot" not in sim or len(real.e2e) < 3:
        return None
    predicted = sim["ttft"]["p50"] + np.maximum(real.output_tokens - 1, 0) * sim["tpot"]["p50"]
    ok = real.e2e > 0
    mape = float(np.mean(np.abs(predicted[ok] / real.e2e[ok] - 1.0)))
    corr = float(np.corrcoef(predicted[ok], real.e2e[ok])[0, 1]) if np.std(predicted[ok]) > 0 and np.std(real.e2e[ok]) > 0 else None
    return {"e2e_mape": mape, "e2e_correlation": corr, "requests": int(ok.sum())}


def residuals(real: Figures, sim: Figures) -> list[float]:
    """log(sim / real) of every figure, weighted (fit.py); a missing simulated figure counts as
    a factor of e^3 off, so a knob setting that starves a stage is never the best."""
    out = []
    for m in METRICS:
        for q in QUANTILES:
            if m not in real or q not in real[m] or real[m][q] <= 0:
                continue
            w = (1.0 if m in ("ttft", "tpot") else 0.5) * (1.0 if q == "p50" else 0.25)
            s = sim.get(m, {}).get(q)
            out.append(w * (float(np.log(s / real[m][q])) if s and s > 0 else 3.0))
    return out
