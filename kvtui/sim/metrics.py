"""Counters and latency distributions, computed once from the event stream.

The app's panels and the headless reports both read a `Metrics` fed by the engine's bus, so a
figure on screen and the same figure in a JSON result cannot disagree.

How the serving figures are defined (each matches a named source):

- **TPOT** is (E2E - TTFT) / (output tokens - 1), over requests with *more than one* output
  token only, as vLLM's serving benchmark computes it (vllm/benchmarks/serve.py,
  `calculate_metrics`: `if output_len > 1: tpot = (latency - ttft) / (output_len - 1);
  tpots.append(tpot)`). A 1-token output has no decode phase, so counting it as 0 ms would halve
  the TPOT of a workload that alternates 1- and 100-token outputs.
- **ITL** (inter-token latency) is, as in the same function, a distribution over *tokens*, not
  requests: vLLM concatenates every request's per-token gaps (`itls += outputs[i].itl`) and
  takes percentiles over all of them. Here a decoding request's gaps are the durations of the
  decode iterations it took part in: each `BatchStepped` segment of `iterations` steps with
  `decode_seqs` decoding requests contributes `decode_seqs x iterations` samples of
  `duration / iterations` (a segment's steps are priced together, so within one segment each
  step gets the segment's mean). A step that also ran prefill chunks is longer, so prefill
  interference shows in the tail. Not counted: the gap a preempted request spends waiting and
  recomputing (its next token comes out of a prefill step), which a client would see as one
  long gap.
- **NTPOT** (normalised time per output token) is E2E / output tokens, per completed request
  with at least one output token: the predicted-latency blog's (seed 002) headline metric, "E2E
  latency divided by output length to make it comparable across requests of different output
  lengths"). Unlike TPOT it carries the queueing and the prefill, so it rises first when a
  server saturates.
- **Token hit rate** (the headline) is the share of prompt tokens served from the prefix cache;
  **request hit rate** counts a request with any cached block as a hit.
- **SLO attainment** is the share of completed requests that carry an SLO and meet all of
  theirs: TTFT <= slo_ttft, and TPOT <= slo_tpot where the request has more than one output
  token (a 1-token output has no TPOT and is judged on TTFT alone; a request with one SLO is
  judged on that one). vLLM's benchmark judges a request the same way (`is_good_req = all(slo
  >= measured)`), with TPOT regarded as 0 for 1-token outputs.
- **Goodput** is the number of completed requests per second that met their SLOs: the notion
  of DistServe (Zhong et al., OSDI 2024, arXiv:2401.09670, and the hao-ai-lab DistServe blog),
  computed as vLLM's benchmark does (`request_goodput = good_completed / dur_s`, whose
  `--goodput` help points to DistServe for the definition). DistServe's capacity figure is the
  highest request rate at which a target attainment (e.g. 90 %) still holds; `kvtui compare
  --ladder` shows that search step by step.
- **Shed** requests are rejections whose reason starts with "shed:" (sheddable requests the
  router refused because no node could meet their SLO, as llm-d's admitter does); every
  rejection is also counted under a short reason class (`rejected_reasons`).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from kvtui.percentiles import percentiles
from kvtui.events import (
    BatchStepped,
    BlocksEvicted,
    Event,
    NodeDown,
    RequestArrived,
    RequestCompleted,
    RequestPreempted,
    RequestRejected,
)

PERCENTILES = (50, 90, 95, 99)

_ZERO = {"mean": 0.0, "p50": 0.0, "p90": 0.0, "p95": 0.0, "p99": 0.0, "max": 0.0}


def summarize(values_s: list[float]) -> dict[str, float]:
    """mean / p50 / p90 / p95 / p99 / max in milliseconds (zeros when empty)."""
    if not values_s:
        return dict(_ZERO)
    a = np.asarray(values_s, dtype=float) * 1000.0
    p = percentiles(a, PERCENTILES)
    out = {"mean": float(a.mean())}
    for q, v in zip(PERCENTILES, p):
        out[f"p{q}"] = float(v)
    out["max"] = float(a.max())
    return {k: round(v, 6) for k, v in out.items()}


def weighted_percentiles(values: np.ndarray, weights: np.ndarray, qs) -> np.ndarray:
    """Percentiles of `values` each repeated `weights` times (integer weights), computed
    without materialising the repetition; equal to `percentiles(np.repeat(values, weights), qs)`
    (kvtui/percentiles.py's rule, numpy's linear interpolation between closest ranks)."""
    order = np.argsort(values, kind="stable")
    v = values[order]
    cum = np.cumsum(weights[order])  # cum[i] - 1 = rank of the last copy of v[i]
    n = int(cum[-1])
    pos = np.asarray(qs, dtype=float) / 100.0 * (n - 1)
    lo = np.floor(pos).astype(np.int64)
    hi = np.minimum(lo + 1, n - 1)
    v_lo = v[np.searchsorted(cum, lo, side="right")]
    v_hi = v[np.searchsorted(cum, hi, side="right")]
    return v_lo + (v_hi - v_lo) * (pos - lo)


def summarize_weighted(samples: dict[float, int]) -> dict[str, float]:
    """`summarize` over a histogram {value in seconds: count}: mean / percentiles / max in ms."""
    items = [(v, w) for v, w in samples.items() if w > 0]
    if not items:
        return dict(_ZERO)
    values = np.asarray([v for v, _ in items], dtype=float) * 1000.0
    weights = np.asarray([w for _, w in items], dtype=np.int64)
    p = weighted_percentiles(values, weights, PERCENTILES)
    out = {"mean": float(np.average(values, weights=weights))}
    for q, v in zip(PERCENTILES, p):
        out[f"p{q}"] = float(v)
    out["max"] = float(values.max())
    return {k: round(v, 6) for k, v in out.items()}


def rejection_class(reason: str) -> str:
    """A short, stable class for a free-text rejection reason (the text carries numbers)."""
    r = reason.lower()
    if r.startswith("shed"):
        return "shed"
    if "no node" in r:
        return "no_node"  # the router found every candidate refusing (reasons in the text)
    if "is down" in r:
        return "node_down"
    if "can hold at most" in r or "max_num_batched_tokens" in r:
        return "too_large"
    if "max_active" in r:
        return "max_active"
    if "queue full" in r or "max_queue" in r:
        return "queue_full"
    if "cannot be scheduled" in r:
        return "unschedulable"
    return "other"


def meets_slo(ttft: float, tpot: float, output_tokens: int, slo_ttft: float | None, slo_tpot: float | None) -> bool | None:
    """Did a completed request meet its SLOs? None when it has none to meet.

    TTFT is judged when `slo_ttft` is set; TPOT when `slo_tpot` is set and the request has more
    than one output token (a 1-token output has no time per output token)."""
    if slo_ttft is None and slo_tpot is None:
        return None
    if slo_ttft is not None and ttft > slo_ttft:
        return False
    if slo_tpot is not None and output_tokens > 1 and tpot > slo_tpot:
        return False
    return True


# The events Metrics counts. Beside the class, not in it: a compiled dataclass (mypyc) reads
# a ClassVar as one more field.
METRICS_EVENT_TYPES: tuple[type[Event], ...] = (
    RequestCompleted,
    RequestArrived,
    BlocksEvicted,
    RequestRejected,
    RequestPreempted,
    NodeDown,
    BatchStepped,
)


@dataclass
class Metrics:
    arrived: int = 0
    completed: int = 0
    rejected: int = 0
    shed: int = 0
    failed: int = 0
    preempted: int = 0
    rerouted: int = 0
    exact_hits: int = 0
    prefix_hits: int = 0
    misses: int = 0
    prompt_tokens: int = 0
    cached_tokens: int = 0
    output_tokens: int = 0
    evicted_blocks: int = 0  # GPU evictions (blocks whose keys left GPU memory)
    loaded_tokens: int = 0  # prompt tokens loaded from a node's CPU tier (among cached_tokens)
    with_slo: int = 0  # completed requests that carried a TTFT and/or TPOT SLO
    slo_met: int = 0  # ... and met every one of them
    ttft: list[float] = field(default_factory=list)
    tpot: list[float] = field(default_factory=list)  # requests with > 1 output token only
    e2e: list[float] = field(default_factory=list)
    ntpot: list[float] = field(default_factory=list)  # E2E / output tokens, requests with >= 1
    itl: dict[float, int] = field(default_factory=dict)  # decode step seconds -> token count
    served: dict[str, int] = field(default_factory=dict)
    evicted_by_node: dict[str, int] = field(default_factory=dict)
    rejected_reasons: dict[str, int] = field(default_factory=dict)

    def set_nodes(self, names: list[str]) -> None:
        """Give every node a row from the start, so a node that served nothing still shows 0."""
        for name in names:
            self.served.setdefault(name, 0)
            self.evicted_by_node.setdefault(name, 0)

    def on_event(self, ev: Event) -> None:
        if isinstance(ev, BatchStepped):
            self.stepped(ev.node, ev.iterations, ev.prefill_tokens, ev.decode_seqs, ev.duration)
        elif isinstance(ev, RequestCompleted):
            self.completed += 1
            self.ttft.append(ev.ttft)
            if ev.output_tokens > 1:
                self.tpot.append(ev.tpot)
            self.e2e.append(ev.e2e)
            if ev.output_tokens > 0:
                self.ntpot.append(ev.e2e / ev.output_tokens)
            self.prompt_tokens += ev.prompt_tokens
            self.cached_tokens += ev.cached_tokens
            self.loaded_tokens += ev.loaded_tokens
            self.output_tokens += ev.output_tokens
            self.served[ev.node] = self.served.get(ev.node, 0) + 1
            if ev.hit == "exact":
                self.exact_hits += 1
            elif ev.hit == "prefix":
                self.prefix_hits += 1
            else:
                self.misses += 1
            met = meets_slo(ev.ttft, ev.tpot, ev.output_tokens, getattr(ev, "slo_ttft", None), getattr(ev, "slo_tpot", None))
            if met is not None:
                self.with_slo += 1
                self.slo_met += met
        elif isinstance(ev, RequestArrived):
            self.arrived += 1
        elif isinstance(ev, BlocksEvicted):
            self.evicted(ev.node, ev.keys, ev.groups, ev.for_request, ev.medium)
        elif isinstance(ev, RequestRejected):
            self.rejected += 1
            cls = rejection_class(ev.reason)
            self.rejected_reasons[cls] = self.rejected_reasons.get(cls, 0) + 1
            if cls == "shed":
                self.shed += 1
        elif isinstance(ev, RequestPreempted):
            self.preempted += 1
        elif isinstance(ev, NodeDown):
            self.failed += len(ev.failed)
            self.rerouted += len(ev.rerouted)

    def stepped(self, _node: str, iterations: int, _prefill_tokens: int, decode_seqs: int, duration: float, *_rest) -> None:
        """A BatchStepped, from the event or from the bus's direct path (its fields): the
        inter-token histogram. ~3 a request, so a headless run never builds the event."""
        if decode_seqs and iterations:
            # Rounded to 0.1 us so equal steps share one histogram bin.
            step = round(duration / iterations, 7)
            self.itl[step] = self.itl.get(step, 0) + decode_seqs * iterations

    def evicted(self, node: str, keys, _groups, _for_request, medium: str) -> None:
        """A BlocksEvicted, from the event or from the bus's direct path (its fields)."""
        if medium != "gpu":
            return  # the CPU tiers count their own (see the result's `offload`)
        self.evicted_blocks += len(keys)
        self.evicted_by_node[node] = self.evicted_by_node.get(node, 0) + len(keys)

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

    @property
    def slo_attainment(self) -> float | None:
        """Share of completed requests with an SLO that met it; None when none had one."""
        return self.slo_met / self.with_slo if self.with_slo else None

    def goodput_rps(self, duration_s: float) -> float:
        """Requests per second that met their SLOs (DistServe's goodput; see the module doc)."""
        return self.slo_met / duration_s if duration_s > 0 else 0.0

    def latency_ms(self) -> dict[str, dict[str, float]]:
        return {
            "ttft": summarize(self.ttft),
            "tpot": summarize(self.tpot),
            "itl": summarize_weighted(self.itl),
            "e2e": summarize(self.e2e),
            "ntpot": summarize(self.ntpot),
        }
