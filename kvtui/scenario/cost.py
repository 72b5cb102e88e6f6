"""What a scenario will cost to simulate, estimated from the file alone, before anything runs.

`validate` prints this and refuses a scenario over the budget (unless `--force`); `run`,
`compare` and the app refuse it the same way. Two kinds of refusal:

- limits (never overridable): the workload must end -- a request or session count, a
  duration or `until_s` on a clock that is sure to advance, a trace, or shared-prefix
  `rounds` -- and no single request may be longer than `MAX_REQUEST_TOKENS` (its token
  arrays and block keys are held in memory whole);
- the budget (`--force` overrides): the estimated peak memory and run time.

The estimate is deliberately simple and says so: requests from the stop conditions and the
arrival process (the stepwise rate schedule integrated exactly over the horizon), peak KV
blocks from each node's capacity (every block of a pool is allocated up front), memory as
blocks x `BYTES_PER_BLOCK` + requests x `BYTES_PER_REQUEST` + the prompts in flight, run time
as requests x `SECONDS_PER_REQUEST` + blocks x `SECONDS_PER_BLOCK` + the roofline model's
scheduler steps x `SECONDS_PER_ITERATION`. The four constants were
measured on this project's shipped scenarios (`pressure`, `maas`, `workload-a-small`,
`big-cluster`: 140-200 B per pool block, 5-50 kB peak per request, mostly what is in flight, 1.4-1.9 ms per request,
0.4 us per block to build) and rounded up; expect the run-time figure within a factor of a few.

Distribution bounds use the distribution's clip (`max`) when it has one, else a point six
standard deviations out (for a lognormal, in log space) -- a draw beyond that has odds below
one in a billion; a scenario that wants longer tails should say `max:`.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass, field

from kvtui.scenario.model import Arrival, Dist, Scenario
from kvtui.scenario.plan import node_plans

MAX_REQUEST_TOKENS = 4_194_304
BYTES_PER_BLOCK = 200
BYTES_PER_REQUEST = 20_000
BYTES_PER_TOKEN_IN_FLIGHT = 8  # a token id (the block keys are a sixteenth of that)
SECONDS_PER_REQUEST = 0.002
SECONDS_PER_BLOCK = 4e-7
SECONDS_PER_ITERATION = 1e-4  # roofline: one scheduler step (measured 63 us on a 400k-token prefill in 16-token chunks)
DEFAULT_SECONDS_BUDGET = 3600.0


def default_memory_budget() -> int:
    """Half the machine's physical memory, at most 8 GiB (a simulation shares the machine)."""
    try:
        physical = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        physical = 8 << 30
    return min(8 << 30, physical // 2)


@dataclass
class Cost:
    """The estimate, and what is wrong with the scenario at any budget (`limits`)."""

    requests: int = 0
    ends_by: str = ""
    peak_blocks: int = 0
    longest_request_tokens: int = 0
    memory_bytes: int = 0
    seconds: float = 0.0
    limits: list[tuple[str, str]] = field(default_factory=list)  # (key path, message)

    def summary(self) -> str:
        longest = f"longest request {self.longest_request_tokens:,} tokens, " if self.longest_request_tokens else ""
        return (f"cost estimate: {self.requests:,} requests ({self.ends_by}), peak {self.peak_blocks:,} KV blocks, "
                f"{longest}~{_mb(self.memory_bytes)} MB memory, ~{_duration(self.seconds)} to run")

    def over_budget(self, memory_bytes: int | None = None, seconds: float | None = None) -> list[str]:
        """What exceeds the budget, as sentences (empty: within it)."""
        memory_bytes = default_memory_budget() if memory_bytes is None else memory_bytes
        seconds = DEFAULT_SECONDS_BUDGET if seconds is None else seconds
        over = []
        if self.memory_bytes > memory_bytes:
            over.append(f"estimated memory ~{_mb(self.memory_bytes)} MB exceeds the budget of {_mb(memory_bytes)} MB")
        if self.seconds > seconds:
            over.append(f"estimated run time ~{_duration(self.seconds)} exceeds the budget of {_duration(seconds)}")
        return over


def estimate(scenario: Scenario, trace_requests: int | None = None) -> Cost:
    """The cost of running `scenario`; `trace_requests` is the trace's request count if known."""
    cost = Cost()
    cost.peak_blocks = sum(plan.kv_blocks for plan in node_plans(scenario))
    w = scenario.workload
    if w.trace is not None:
        requests, ends_by, longest, mean_context, mean_output = _trace(scenario, trace_requests)
    elif w.shared_prefix is not None:
        requests, ends_by, longest, mean_context, mean_output = _shared_prefix(scenario, cost)
    else:
        requests, ends_by, longest, mean_context, mean_output = _synthetic(scenario, cost)
    cost.ends_by = ends_by
    cost.requests = 0 if requests is None else int(min(requests, 1e15))
    cost.longest_request_tokens = int(min(longest, 1e15))
    if longest > MAX_REQUEST_TOKENS:
        cost.limits.append(("workload", f"a request may reach ~{cost.longest_request_tokens:,} tokens (prompt + output), "
                            f"more than the limit of {MAX_REQUEST_TOKENS:,}; lower the lengths or turns, or clip them with max:"))
    in_flight = min(cost.requests, _concurrency(scenario))
    cost.memory_bytes = int(cost.peak_blocks * BYTES_PER_BLOCK + cost.requests * BYTES_PER_REQUEST
                            + in_flight * mean_context * BYTES_PER_TOKEN_IN_FLIGHT)
    cost.seconds = cost.requests * SECONDS_PER_REQUEST + cost.peak_blocks * SECONDS_PER_BLOCK
    cost.seconds += _iterations(scenario, cost.requests, mean_context, mean_output) * SECONDS_PER_ITERATION
    return cost


def _iterations(scenario: Scenario, requests: int, mean_context: float, mean_output: float) -> float:
    """roofline: scheduler steps. A step's token budget (`max_num_batched_tokens`) is shared by
    everything in it, so prefill takes prompt tokens / budget steps whatever the batching; decode
    takes a step per output token, shared by up to `max_num_seqs` requests. The smallest node
    counts (a pessimist's choice). The linear model serves a request in one go: no steps."""
    if scenario.latency.model != "roofline" or not scenario.cluster.nodes:
        return 0.0
    budget = min(n.max_num_batched_tokens for n in scenario.cluster.nodes)
    seqs = min(n.max_num_seqs for n in scenario.cluster.nodes)
    return requests * (mean_context / budget + mean_output / seqs)


# ---------------------------------------------------------------------------------------------
# Requests, and how long one can get, per workload kind


def _horizon(scenario: Scenario) -> float | None:
    times = [t for t in (scenario.workload.duration_s, scenario.until_s) if t is not None]
    return min(times) if times else None


def _starts(scenario: Scenario, out_min: float, turns_mean: float) -> tuple[float | None, str]:
    """Sessions (or shared-prefix requests) begun within the horizon: (count, by what), or (None, why not)."""
    arrival, horizon = scenario.workload.arrival, _horizon(scenario)
    if horizon is None:
        return None, ""
    if arrival.process != "closed_loop":
        return _integral_rate(arrival, horizon), f"{_fmt(horizon)} s of arrivals"
    cycle = upper_low(arrival.think_time_s) + scenario.router.routing_overhead_ms / 1000.0
    starts = math.inf
    if not _may_reject_at_once(scenario):
        floor = service_floor(scenario, out_min)
        cycle += floor
        if floor > 0:  # the nodes serve at most max_num_seqs requests per floor each
            starts = horizon / floor * sum(n.max_num_seqs for n in scenario.cluster.nodes) / max(turns_mean, 1.0)
    if cycle <= 0:
        return None, "closed"  # the clock may never move: see the message in the caller
    starts = max(arrival.users, min(starts, arrival.users * (horizon / cycle + 1) / max(turns_mean, 1.0)))
    return starts, f"{_fmt(horizon)} s of {arrival.users} users"


def _may_reject_at_once(scenario: Scenario) -> bool:
    """Can a request end the instant it arrives (a rejection takes no sim time)? Admission
    limits, sheddable requests, scripted faults and a store that rejects while down can."""
    w = scenario.workload
    sheddable = any(g.sheddable for g in w.groups) or bool(w.shared_prefix and w.shared_prefix.sheddable)
    limits = any(n.max_active is not None or n.max_queue is not None for n in scenario.cluster.nodes)
    return sheddable or limits or bool(scenario.events)


def service_floor(scenario: Scenario, out_min: float) -> float:
    """A lower bound, in seconds, on how long a served request takes: its decode steps.

    linear: `decode_ms_per_token` per output token. roofline: every decode iteration reads the
    node's shard of the weights from HBM once (the memory-bound floor the roofline model itself
    uses, kvtui/sim/latency.py) plus the fixed iteration overhead; the fastest node counts.
    """
    lat, tokens = scenario.latency, max(1.0, out_min)
    if lat.model == "linear":
        return lat.decode_ms_per_token / 1000.0 * tokens
    from kvtui.scenario.serving import profile_catalog

    model, floors = profile_catalog(scenario)[1].get(scenario.model), []
    for plan in node_plans(scenario):
        if model is None or plan.hardware is None:
            return 0.0
        floors.append(model.weight_bytes / plan.tp / plan.hardware.hbm_bytes_per_s + lat.iteration_overhead_ms / 1000.0)
    return min(floors, default=0.0) * tokens


def _never_ends(scenario: Scenario, cost: Cost, why: str, counts: str) -> None:
    if why == "closed":
        cost.limits.append(("workload.arrival", "the workload may never end: closed-loop users with no think time "
                            "and no routing overhead can start sessions forever without the clock moving (a rejected "
                            f"request takes no time); set {counts}, or arrival.think_time_s / router.routing_overhead_ms"))
    else:
        cost.limits.append(("workload", f"the workload never ends: set {counts}, workload.duration_s or until_s"))


def _synthetic(scenario: Scenario, cost: Cost) -> tuple[float | None, str, float, float, float]:
    w = scenario.workload
    groups = w.groups or ()
    turns_mean = max((max(1.0, mean(g.turns)) for g in groups), default=1.0)
    options: list[tuple[float, str]] = []
    if w.requests is not None:
        options.append((w.requests, f"workload.requests {w.requests:,}"))
    if w.sessions is not None:
        options.append((w.sessions * turns_mean, f"{w.sessions:,} sessions"))
    out_min = min((upper_low(g.output_tokens) for g in groups), default=1.0)
    starts, by = _starts(scenario, out_min, turns_mean)
    if starts is not None:
        options.append((starts * turns_mean, by))
    longest = max((_group_longest(g) for g in groups), default=0.0)
    mean_context = max((g.system_prompt_tokens + max(1.0, mean(g.turns)) / 2 * (mean(g.question_tokens) + mean(g.output_tokens))
                        for g in groups), default=0.0)
    mean_output = max((max(1.0, mean(g.output_tokens)) for g in groups), default=1.0)
    if not options:
        _never_ends(scenario, cost, by, "workload.requests or workload.sessions")
        return None, "never ends", longest, mean_context, mean_output
    requests, ends_by = min(options)
    return requests, ends_by, longest, mean_context, mean_output


def _group_longest(g) -> float:
    """The longest request of a session: every earlier turn's question and answer, then one more."""
    turns = max(1.0, math.floor(upper(g.turns) + 0.5))
    return g.system_prompt_tokens + turns * (upper(g.question_tokens) + 1 + upper(g.output_tokens) + 1)


def _shared_prefix(scenario: Scenario, cost: Cost) -> tuple[float | None, str, float, float, float]:
    w, sp = scenario.workload, scenario.workload.shared_prefix
    users = sp.num_groups * sp.num_prompts_per_group
    options: list[tuple[float, str]] = []
    if w.requests is not None:
        options.append((w.requests, f"workload.requests {w.requests:,}"))
    if sp.rounds is not None:
        options.append((sp.rounds * users, f"{sp.rounds} rounds of {users:,} users"))
    out_min = upper_low(sp.output_dist) if sp.output_dist else sp.output_len * (1 - sp.output_spread)
    starts, by = _starts(scenario, out_min, 1.0)
    if starts is not None:
        options.append((starts, by))
    system = sp.system_prompt_len * (1 + sp.system_prompt_spread)
    question = upper(sp.question_dist) if sp.question_dist else sp.question_len * (1 + sp.question_spread)
    output = upper(sp.output_dist) if sp.output_dist else sp.output_len * (1 + sp.output_spread)
    q_mean = mean(sp.question_dist) if sp.question_dist else sp.question_len
    o_mean = mean(sp.output_dist) if sp.output_dist else sp.output_len
    if not options:
        _never_ends(scenario, cost, by, "workload.requests or shared_prefix.rounds")
        return None, "never ends", system + question + output, system + question, o_mean
    requests, ends_by = min(options)
    rounds = max(1.0, requests / users) if sp.multi_turn else 1.0
    longest = system + rounds * (question + output + 2)
    if sp.max_context_tokens is not None:
        longest = min(longest, sp.max_context_tokens + question + output + 2)
    return requests, ends_by, longest, min(longest, sp.system_prompt_len + q_mean + rounds / 2 * (q_mean + o_mean)), o_mean


def _trace(scenario: Scenario, trace_requests: int | None) -> tuple[float | None, str, float, float, float]:
    """A trace ends by itself; lengths are the trace reader's to bound (it checks each line)."""
    trace = scenario.workload.trace
    counts = [n for n in (trace.limit, trace_requests, scenario.workload.requests) if n is not None]
    requests = min(counts) if counts else 0
    return requests, "the trace's end" if counts else "the trace's end (length unknown)", 0.0, 0.0, 0.0


def _concurrency(scenario: Scenario) -> int:
    """Requests in flight at once: closed-loop users; open loop, two batches' worth per node
    (more only when the cluster is overloaded and queues grow, which the estimate ignores)."""
    arrival = scenario.workload.arrival
    if arrival.process == "closed_loop":
        return arrival.users
    return 2 * sum(spec.max_num_seqs for spec in scenario.cluster.nodes)


def _integral_rate(arrival: Arrival, horizon: float) -> float:
    """Expected arrivals in [0, horizon]: the stepwise rate schedule integrated exactly."""
    points = sorted(arrival.schedule, key=lambda p: p.at)
    total, t, rate = 0.0, 0.0, arrival.rate
    for p in points:
        if p.at >= horizon:
            break
        total += rate * (p.at - t)
        t, rate = max(t, p.at), p.rate
    return total + rate * (horizon - t) + 1


# ---------------------------------------------------------------------------------------------
# Distributions


def mean(d: Dist) -> float:
    """The mean of a draw, clipped like a draw (kvtui.sim.distributions.sample)."""
    if d.dist == "fixed":
        x = d.value
    elif d.dist == "uniform":
        x = (d.low + d.high) / 2
    else:
        x = d.mean
    return _clip(d, x)


def upper(d: Dist) -> float:
    """A draw's practical maximum: the clip `max`, else six standard deviations out."""
    if d.dist == "fixed":
        x = d.value
    elif d.dist == "uniform":
        x = d.high
    elif d.dist == "normal":
        x = d.mean + 6 * d.std
    else:
        x = d.mean * math.exp(min(6 * d.sigma - d.sigma * d.sigma / 2, 700)) if d.mean > 0 else 0.0
    return _clip(d, x)


def upper_low(d: Dist) -> float:
    """A draw's smallest possible value (a lower bound; 0 when a family can reach 0)."""
    if d.dist == "fixed":
        x = d.value
    elif d.dist == "uniform":
        x = d.low
    else:
        x = 0.0
    return _clip(d, x)


def _clip(d: Dist, x: float) -> float:
    if d.min is not None:
        x = max(x, d.min)
    if d.max is not None:
        x = min(x, d.max)
    return max(x, 0.0)


def _mb(n: float) -> str:
    return f"{n / 1e6:,.0f}" if n >= 1e6 else f"{n / 1e6:.1f}"


def _duration(s: float) -> str:
    if s < 60:
        return f"{s:.1f} s"
    if s < 3600:
        return f"{s / 60:.0f} min"
    return f"{s / 3600:,.1f} h"


def _fmt(x: float) -> str:
    return f"{x:g}"
