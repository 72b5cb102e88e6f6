"""What a scenario will cost to simulate, estimated from the file alone, before anything runs.

`validate` prints this and refuses a scenario over the budget (unless `--force`); `run`,
`compare` and the app refuse it the same way. Two kinds of refusal:

- limits (never overridable): the workload must end -- a request or session count, a
  duration or `until_s` on a clock that is sure to advance, a trace, or shared-prefix
  `rounds` -- and no single request may be longer than `MAX_REQUEST_TOKENS` (its token
  arrays and block keys are held in memory whole);
- the budget (`--force` overrides): the estimated peak memory and run time.

The estimate is a sum of terms, one per thing a run does, each with a constant measured on
this machine's kind (tests/scenario/test_cost_model.py checks every term against measured runs: CPU
time and peak traced memory stay within `FACTOR` of the estimate, at a small size):

- per run and per node: loading, building and reporting (`SECONDS_PER_RUN`, `SECONDS_PER_NODE`);
- per request: arrival, routing over every node, metrics (`SECONDS_PER_REQUEST`,
  `SECONDS_PER_NODE_CHOICE` x nodes);
- per block a request touches (tokens / `block_size`, so `block_size: 1` costs what it should):
  keys, allocation, index updates (`SECONDS_PER_REQUEST_BLOCK`, `BYTES_PER_KEY`);
- per pool block, built up front (`SECONDS_PER_BLOCK`, `BYTES_PER_BLOCK`);
- per engine step (`SECONDS_PER_STEP`) and per iteration within one (`SECONDS_PER_ITERATION`),
  both models: `_steps`. At `block_size: 1`, or when the KV pool (not `max_num_seqs`) bounds
  the batch, every iteration is a step; a batch holds no more requests than fit the pool;
- shared_prefix: per user (num_groups x prompts per group), whose prompt is drawn and held;
- the control-plane store (`metadata:`): its records (a few per request, more as requests span
  more blocks: `BLOCKS_PER_RECORD`, and one per step that fills a block), an fsync per record
  (`always`) or per sim instant with records (`batch`: one per such step), a snapshot of the
  cached blocks each `snapshot_every` records (`SECONDS_PER_SNAPSHOT_BLOCK`), and per
  `control_plane_crash` the recovery's passes over the cached entries (`SECONDS_PER_CRASH_ENTRY`);
- traces: the scan that validates one reads every request, so a trace's requests, their
  lengths and the weka `copies` are known exactly (`TraceShape`), not guessed.

Memory: pool blocks, requests (what each keeps for the report), the prompts and keys in
flight, the users' prompts and the store's state.

Distribution bounds use the distribution's clip (`max`) when it has one, else a point six
standard deviations out (for a lognormal, in log space) -- a draw beyond that has odds below
one in a billion; a scenario that wants longer tails should say `max:`.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from kvtui.scenario.model import Arrival, Dist, Scenario
from kvtui.scenario.plan import node_plans

if TYPE_CHECKING:
    from kvtui.scenario.trace_shape import TraceShape

MAX_REQUEST_TOKENS = 4_194_304
FACTOR = 3.0  # a run's CPU time and peak memory stay within this factor of the estimate (tested)

SECONDS_PER_RUN = 0.05  # loading, building and reporting a run of one node
SECONDS_PER_NODE = 0.01  # building a node and reporting it (64 nodes x 12 requests: 0.56 s measured)
SECONDS_PER_REQUEST = 0.002
SECONDS_PER_NODE_CHOICE = 2e-5  # a router scores every node for every request
SECONDS_PER_REQUEST_BLOCK = 2e-6
SECONDS_PER_BLOCK = 4e-7
SECONDS_PER_STEP = 2e-5  # a node's step: plan, commit, publish (measured 12 us a step, weka at 3 requests a batch)
SECONDS_PER_ITERATION = 2e-6  # one more decode iteration inside a step (its timing and block work)
SECONDS_PER_USER = 2e-5
SECONDS_PER_RECORD = 3e-5
BLOCKS_PER_RECORD = 64  # measured: ~5 records per request of ~380 blocks, ~51 at ~6,000
SECONDS_PER_FSYNC = 2e-3  # measured 0.13 ms alone, 5-10 ms with the disk shared: a pessimist's figure
SECONDS_PER_SNAPSHOT = 5e-4  # a snapshot file written (and fsynced): 3.1x under at 1e-4 with fsync always, snapshot_every 1
SECONDS_PER_SNAPSHOT_BLOCK = 1.5e-7
SECONDS_PER_CRASH_ENTRY = 1e-6  # a crash's passes over the stored state (five, see _store_seconds)

BYTES_PER_RUN = 500_000  # a tiny weka run peaked at 1.1 MB (its files parsed)
BYTES_PER_BLOCK = 200
BYTES_PER_REQUEST = 20_000
BYTES_PER_TOKEN_IN_FLIGHT = 8  # a token id
BYTES_PER_KEY = 60  # a block key held by a request, the index and the store
BYTES_PER_USER_TOKEN = 8  # shared_prefix: each user's prompt is drawn up front

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
    smallest_pool_blocks: int = 0  # the smallest node's KV pool: what bounds a batch (`_steps`)
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


@dataclass
class Load:
    """What the workload asks of a run, as far as the file (and a trace's scan) tells."""

    requests: float | None
    ends_by: str
    longest: float
    mean_context: float
    mean_output: float
    users: float = 0.0  # shared_prefix users, whose prompts are held from the start
    user_tokens: float = 0.0  # the tokens of one user's prompt


def estimate(scenario: Scenario, trace: TraceShape | None = None) -> Cost:
    """The cost of running `scenario`; `trace` is what the trace's scan saw (None: unread)."""
    cost = Cost()
    plans = node_plans(scenario)
    cost.peak_blocks = sum(plan.kv_blocks for plan in plans)
    cost.smallest_pool_blocks = min((plan.kv_blocks for plan in plans), default=0)
    load = _load(scenario, cost, trace)
    cost.ends_by = load.ends_by
    cost.requests = 0 if load.requests is None else int(min(load.requests, 1e15))
    cost.longest_request_tokens = int(min(load.longest, 1e15))
    if load.longest > MAX_REQUEST_TOKENS:
        cost.limits.append(("workload", f"a request may reach ~{cost.longest_request_tokens:,} tokens (prompt + output), "
                            f"more than the limit of {MAX_REQUEST_TOKENS:,}; lower the lengths or turns, or clip them with max:"))
    cost.memory_bytes = int(min(_memory(scenario, cost, load), 1e18))
    cost.seconds = min(_seconds(scenario, cost, load), 1e18)
    return cost


def _load(scenario: Scenario, cost: Cost, trace: TraceShape | None) -> Load:
    w = scenario.workload
    if w.trace is not None:
        return _trace(scenario, trace)
    if w.shared_prefix is not None:
        return _shared_prefix(scenario, cost)
    return _synthetic(scenario, cost)


def _request_blocks(scenario: Scenario, cost: Cost, load: Load) -> float:
    """Blocks the requests touch, all told: each request's prompt and output, in blocks."""
    return cost.requests * (load.mean_context + load.mean_output) / scenario.cluster.block_size


def _seconds(scenario: Scenario, cost: Cost, load: Load) -> float:
    nodes = len(scenario.cluster.nodes)
    steps = _steps(scenario, cost, load)
    return (SECONDS_PER_RUN + nodes * SECONDS_PER_NODE + cost.requests * (SECONDS_PER_REQUEST + nodes * SECONDS_PER_NODE_CHOICE)
            + _request_blocks(scenario, cost, load) * SECONDS_PER_REQUEST_BLOCK
            + cost.peak_blocks * SECONDS_PER_BLOCK + load.users * SECONDS_PER_USER
            + steps.iterations * SECONDS_PER_ITERATION + steps.steps * SECONDS_PER_STEP
            + _store_seconds(scenario, cost, load, steps))


def _store_seconds(scenario: Scenario, cost: Cost, load: Load, steps: Steps) -> float:
    """The control-plane store: a record per KV event (a few per request, more as requests span
    more blocks, and one per engine step that stores blocks: at `block_size: 1` every decode
    iteration fills one), fsyncs by the policy (`batch`: one group commit per sim instant with
    records, so one per storing step), a snapshot of the cached blocks every `snapshot_every`
    records (taken at a group commit), and per `control_plane_crash` the recovery's passes over
    the cached entries (kvtui/sim/control_plane.py: the digest before, the replay, the state read
    back, the digest after, the router's index rebuilt)."""
    meta = scenario.metadata
    if meta is None:
        return 0.0
    records = 2 * cost.requests + _request_blocks(scenario, cost, load) / BLOCKS_PER_RECORD + steps.storing
    fsyncs = {"always": records, "batch": 2 * cost.requests + steps.storing, "never": 0.0}[meta.fsync]
    fsyncs += records / meta.snapshot_every if meta.fsync == "always" else 0.0  # each snapshot synced too
    cached = min(cost.peak_blocks, _request_blocks(scenario, cost, load))
    snapshots = records / meta.snapshot_every
    crashes = sum(1 for ev in scenario.events if ev.action == "control_plane_crash")
    return (records * SECONDS_PER_RECORD + fsyncs * SECONDS_PER_FSYNC
            + snapshots * (SECONDS_PER_SNAPSHOT + cached * SECONDS_PER_SNAPSHOT_BLOCK)
            + crashes * cached * SECONDS_PER_CRASH_ENTRY)


def _memory(scenario: Scenario, cost: Cost, load: Load) -> float:
    in_flight = min(cost.requests, _concurrency(scenario))
    held_keys = min(cost.peak_blocks, _request_blocks(scenario, cost, load)) * (2 if scenario.metadata else 1)
    return (BYTES_PER_RUN + cost.peak_blocks * BYTES_PER_BLOCK + cost.requests * BYTES_PER_REQUEST
            + in_flight * (load.mean_context + load.mean_output) * (BYTES_PER_TOKEN_IN_FLIGHT + BYTES_PER_KEY / scenario.cluster.block_size)
            + held_keys * BYTES_PER_KEY + load.users * load.user_tokens * BYTES_PER_USER_TOKEN)


@dataclass(frozen=True)
class Steps:
    """The engine's work in steps, all nodes together: `iterations` (scheduler iterations),
    `steps` (turns of a node's loop: one iteration, or a segment of up to `block_size` decode
    iterations) and `storing` (steps that fill a block: a KV event, a store record)."""

    iterations: float = 0.0
    steps: float = 0.0
    storing: float = 0.0


def _steps(scenario: Scenario, cost: Cost, load: Load) -> Steps:
    """Scheduler iterations and engine steps (kvtui/sim/node.py).

    Prefill takes prompt tokens / `max_num_batched_tokens` iterations whatever the batching;
    decode takes an iteration per output token, shared by the batch: at most `max_num_seqs`
    requests (1 for the linear model, which serves one request at a time), and at most the
    requests whose whole sequences fit the node's KV pool (vLLM admits a request only when its
    whole sequence fits: a weka replay of 130k-token conversations batches 3 per node, not 64).
    The smallest node counts (a pessimist's choice).

    A step runs up to `block_size` decode iterations only while nothing can change in it; at
    `block_size: 1`, or when the pool bounds the batch (requests wait for blocks and every
    iteration may admit one), each iteration is a step. Arrivals and completions cut segments
    (two per request). A step stores blocks when it fills one: every prefill chunk, and a decode
    step per `block_size` iterations."""
    nodes = scenario.cluster.nodes
    if not nodes or not cost.requests:
        return Steps()
    bs = scenario.cluster.block_size
    budget = min(n.max_num_batched_tokens for n in nodes)
    seqs = 1 if scenario.latency.model == "linear" else min(n.max_num_seqs for n in nodes)
    sequence_blocks = max(1.0, (load.mean_context + load.mean_output) / bs)
    fit = max(1.0, math.floor(cost.smallest_pool_blocks / sequence_blocks))
    batch = min(seqs, fit)
    prefill = cost.requests * max(1.0, math.ceil(load.mean_context / budget))
    decode = cost.requests * load.mean_output / batch
    every_iteration = bs == 1 or fit < seqs
    steps = prefill + (decode if every_iteration else decode / bs + 2 * cost.requests)
    storing = prefill + min(decode / bs + cost.requests, steps - prefill)
    return Steps(prefill + decode, steps, storing)


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
    from kvtui.scenario.serving import iteration_overhead_s, profile_catalog

    model, floors = profile_catalog(scenario)[1].get(scenario.model), []
    for plan in node_plans(scenario):
        if model is None or plan.hardware is None:
            return 0.0
        floors.append(model.weight_bytes / plan.tp / plan.hardware.hbm_bytes_per_s + iteration_overhead_s(scenario, plan.hardware))
    return min(floors, default=0.0) * tokens


def _never_ends(scenario: Scenario, cost: Cost, why: str, counts: str) -> None:
    if why == "closed":
        cost.limits.append(("workload.arrival", "the workload may never end: closed-loop users with no think time "
                            "and no routing overhead can start sessions forever without the clock moving (a rejected "
                            f"request takes no time); set {counts}, or arrival.think_time_s / router.routing_overhead_ms"))
    else:
        cost.limits.append(("workload", f"the workload never ends: set {counts}, workload.duration_s or until_s"))


def _synthetic(scenario: Scenario, cost: Cost) -> Load:
    w = scenario.workload
    groups = w.groups or ()
    shares = _session_shares(w)
    turns_mean = sum(share * _turns(g) for share, g in zip(shares, groups)) or 1.0
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
    per_request = [share * _turns(g) / turns_mean for share, g in zip(shares, groups)]  # each group's share of the requests
    mean_context = sum(r * (g.system_prompt_tokens + _turns(g) / 2 * (mean(g.question_tokens) + mean(g.output_tokens)))
                       for r, g in zip(per_request, groups))
    mean_output = sum(r * max(1.0, mean(g.output_tokens)) for r, g in zip(per_request, groups)) or 1.0
    if not options:
        _never_ends(scenario, cost, by, "workload.requests or workload.sessions")
        return Load(None, "never ends", longest, mean_context, mean_output)
    requests, ends_by = min(options)
    return Load(requests, ends_by, longest, mean_context, mean_output)


def _session_shares(w) -> list[float]:
    """Each group's share of the sessions, as the workload draws them
    (kvtui/sim/workload/synthetic.py): by weight, or `cycle`'s round(weight) places a cycle
    (each group once when that leaves none); alike when no weight is positive. The means the
    estimate takes are over this mix, not the heaviest group's (QA: pressure.yaml's agent
    group, 8 % of the sessions with 5 turns, made it count 5 turns for every session)."""
    groups = w.groups or ()
    if w.group_order == "cycle":
        weights = [float(math.floor(g.weight + 0.5)) for g in groups]
    else:
        weights = [max(g.weight, 0.0) for g in groups]
    if sum(weights) <= 0:
        weights = [1.0] * len(groups)
    total = sum(weights) or 1.0
    return [x / total for x in weights]


def _turns(g) -> float:
    return max(1.0, mean(g.turns))


def _group_longest(g) -> float:
    """The longest request of a session: every earlier turn's question and answer, then one more."""
    turns = max(1.0, math.floor(upper(g.turns) + 0.5))
    return g.system_prompt_tokens + turns * (upper(g.question_tokens) + 1 + upper(g.output_tokens) + 1)


def _shared_prefix(scenario: Scenario, cost: Cost) -> Load:
    w, sp = scenario.workload, scenario.workload.shared_prefix
    assert sp is not None  # _load dispatches here only for a shared_prefix workload
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
        return Load(None, "never ends", system + question + output, system + question, o_mean)
    requests, ends_by = min(options)
    rounds = max(1.0, requests / users) if sp.multi_turn else 1.0
    longest = system + rounds * (question + output + 2)
    if sp.max_context_tokens is not None:
        longest = min(longest, sp.max_context_tokens + question + output + 2)
    context = min(longest, sp.system_prompt_len + q_mean + rounds / 2 * (q_mean + o_mean))
    return Load(requests, ends_by, longest, context, o_mean, users, sp.system_prompt_len + q_mean)


def _trace(scenario: Scenario, shape: TraceShape | None) -> Load:
    """A trace ends by itself; its scan (`shape`) knows its requests and their lengths. Without
    the scan (a library caller), only the counts the file states are known."""
    trace = scenario.workload.trace
    assert trace is not None  # _load dispatches here only for a trace workload
    copies = trace.copies if trace.format == "weka" else 1
    scanned = shape.times(copies) if shape is not None else None
    counts = [n for n in (trace.limit, scanned.requests if scanned else None) if n is not None]  # workload.requests: not for traces
    requests = min(counts) if counts else 0
    ends_by = "the trace's end" if counts else "the trace's end (length unknown)"
    if not scanned or not scanned.requests:
        return Load(requests, ends_by, 0.0, 0.0, 0.0)
    mean_prompt, mean_output = scanned.prompt_tokens / scanned.requests, scanned.output_tokens / scanned.requests
    return Load(requests, ends_by, scanned.longest, mean_prompt, mean_output)


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
    if s < 1:
        return f"{s:.2f} s"
    if s < 60:
        return f"{s:.1f} s"
    if s < 3600:
        return f"{s / 60:.0f} min"
    return f"{s / 3600:,.1f} h"


def _fmt(x: float) -> str:
    return f"{x:g}"
