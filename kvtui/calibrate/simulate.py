"""One engine run of one stage, measured as kvtui defines each metric (kvtui/sim/metrics.py):
TTFT, TPOT ((E2E - TTFT) / (tokens - 1), outputs of more than one token), E2E per request whose
arrival falls in the stage's measured window; ITL pooled over tokens, from the decode steps that
ran while the window's requests were in flight."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from kvtui.calibrate.rebuild import StageRun
from kvtui.calibrate.report import METRICS, Requests
from kvtui.events import BatchStepped, Event, RequestCompleted
from kvtui.run import run_to_end


@dataclass(frozen=True)
class Simulated:
    """A stage's simulated figures: metric -> quantile -> seconds, per-request arrays, hit rate."""

    figures: dict[str, dict[str, float]]
    requests: Requests
    hit_rate: float


class _Collector:
    def __init__(self, start: float, end: float):
        self.start, self.end = start, end
        self.rows: list[tuple[float, float, int, int, int]] = []  # ttft, e2e, prompt, output, cached
        self.steps: dict[float, int] = {}
        self.last_arrival = end

    def on_event(self, ev: Event) -> None:
        match ev:
            case RequestCompleted(t=t, ttft=ttft, e2e=e2e, prompt_tokens=p, output_tokens=o, cached_tokens=c):
                if self.start <= t - e2e < self.end:
                    self.rows.append((ttft, e2e, p, o, c))
            case BatchStepped(t=t, iterations=n, decode_seqs=d, duration=dur) if d and n and self.start <= t < self.end:
                step = round(dur / n, 7)
                self.steps[step] = self.steps.get(step, 0) + d * n


def simulate(run: StageRun, seed: int) -> Simulated:
    c = _Collector(run.start, run.end)
    run_to_end(run.scenario, seed=seed, on_event=c.on_event, event_types=(RequestCompleted, BatchStepped))
    rows = np.array(c.rows, dtype=float).reshape(-1, 5)
    req = Requests(ttft=rows[:, 0], e2e=rows[:, 1], prompt_tokens=rows[:, 2], output_tokens=rows[:, 3])
    figures: dict[str, dict[str, float]] = {}
    if len(rows):
        tpot = req.tpot[~np.isnan(req.tpot)]
        for name, values in (("ttft", req.ttft), ("e2e", req.e2e), ("tpot", tpot)):
            if len(values):
                p50, p90 = np.percentile(values, [50, 90])
                figures[name] = {"p50": float(p50), "p90": float(p90)}
    if c.steps:
        v = np.array(list(c.steps), dtype=float)
        w = np.array(list(c.steps.values()), dtype=np.int64)
        p50, p90 = np.percentile(np.repeat(v, w), [50, 90])  # one sample per token (a few 1e5)
        figures["itl"] = {"p50": float(p50), "p90": float(p90)}
    hit = float(rows[:, 4].sum() / rows[:, 2].sum()) if len(rows) and rows[:, 2].sum() else 0.0
    return Simulated({m: figures[m] for m in METRICS if m in figures}, req, hit)
