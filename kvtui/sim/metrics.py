"""Counters and latency distributions, computed once from the event stream.

The app's panels and the headless reports both read a `Metrics` fed by the engine's bus, so a
figure on screen and the same figure in a JSON result cannot disagree.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from kvtui.events import (
    BlocksEvicted,
    Event,
    NodeDown,
    RequestArrived,
    RequestCompleted,
    RequestPreempted,
    RequestRejected,
)

PERCENTILES = (50, 90, 95, 99)


def summarize(values_s: list[float]) -> dict[str, float]:
    """mean / p50 / p90 / p95 / p99 / max in milliseconds (zeros when empty)."""
    if not values_s:
        return {"mean": 0.0, "p50": 0.0, "p90": 0.0, "p95": 0.0, "p99": 0.0, "max": 0.0}
    a = np.asarray(values_s, dtype=float) * 1000.0
    p = np.percentile(a, PERCENTILES)
    out = {"mean": float(a.mean())}
    for q, v in zip(PERCENTILES, p):
        out[f"p{q}"] = float(v)
    out["max"] = float(a.max())
    return {k: round(v, 6) for k, v in out.items()}


@dataclass
class Metrics:
    EVENT_TYPES = (RequestCompleted, RequestArrived, BlocksEvicted, RequestRejected, RequestPreempted, NodeDown)

    arrived: int = 0
    completed: int = 0
    rejected: int = 0
    failed: int = 0
    preempted: int = 0
    rerouted: int = 0
    exact_hits: int = 0
    prefix_hits: int = 0
    misses: int = 0
    prompt_tokens: int = 0
    cached_tokens: int = 0
    output_tokens: int = 0
    evicted_blocks: int = 0
    ttft: list[float] = field(default_factory=list)
    tpot: list[float] = field(default_factory=list)
    e2e: list[float] = field(default_factory=list)
    served: dict[str, int] = field(default_factory=dict)
    evicted_by_node: dict[str, int] = field(default_factory=dict)

    def set_nodes(self, names: list[str]) -> None:
        """Give every node a row from the start, so a node that served nothing still shows 0."""
        for name in names:
            self.served.setdefault(name, 0)
            self.evicted_by_node.setdefault(name, 0)

    def on_event(self, ev: Event) -> None:
        if isinstance(ev, RequestCompleted):
            self.completed += 1
            self.ttft.append(ev.ttft)
            self.tpot.append(ev.tpot)
            self.e2e.append(ev.e2e)
            self.prompt_tokens += ev.prompt_tokens
            self.cached_tokens += ev.cached_tokens
            self.output_tokens += ev.output_tokens
            self.served[ev.node] = self.served.get(ev.node, 0) + 1
            if ev.hit == "exact":
                self.exact_hits += 1
            elif ev.hit == "prefix":
                self.prefix_hits += 1
            else:
                self.misses += 1
        elif isinstance(ev, RequestArrived):
            self.arrived += 1
        elif isinstance(ev, BlocksEvicted):
            self.evicted_blocks += len(ev.keys)
            self.evicted_by_node[ev.node] = self.evicted_by_node.get(ev.node, 0) + len(ev.keys)
        elif isinstance(ev, RequestRejected):
            self.rejected += 1
        elif isinstance(ev, RequestPreempted):
            self.preempted += 1
        elif isinstance(ev, NodeDown):
            self.failed += len(ev.failed)
            self.rerouted += len(ev.rerouted)

    # ------------------------------------------------------------------ derived figures
    @property
    def request_hit_rate(self) -> float:
        done = self.exact_hits + self.prefix_hits + self.misses
        return (self.exact_hits + self.prefix_hits) / done if done else 0.0

    @property
    def token_hit_rate(self) -> float:
        return self.cached_tokens / self.prompt_tokens if self.prompt_tokens else 0.0

    @property
    def rejection_rate(self) -> float:
        return self.rejected / self.arrived if self.arrived else 0.0

    def latency_ms(self) -> dict[str, dict[str, float]]:
        return {"ttft": summarize(self.ttft), "tpot": summarize(self.tpot), "e2e": summarize(self.e2e)}
