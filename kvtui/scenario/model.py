"""The typed, immutable shape of a scenario file.

Every class here is a frozen dataclass; the loader (`kvtui.scenario.loader`) builds them from
YAML generically by walking the field type hints, so adding a field here is all it takes to
make it loadable, validated, overridable with `--set` and present in the JSON Schema.

Conventions the loader relies on:
- `field(metadata={"doc": ..., "min": ..., "max": ..., "choices": ...})` documents and bounds a
  field; `min`/`max` are inclusive.
- A `Dist` field also accepts a bare number, meaning `{dist: fixed, value: N}`.
- Times in scenario files are seconds unless the key says `_ms`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal


def doc(text: str, **bounds) -> dict:
    """Metadata for a field: its documentation and optional inclusive bounds / choices."""
    return {"doc": text, **bounds}


@dataclass(frozen=True)
class Dist:
    """A distribution of non-negative numbers, clipped to [min, max] when those are given.

    fixed: always `value`; uniform: [low, high]; normal: mean/std; lognormal: mean/sigma of
    the *result* (the underlying normal is derived so that E[X] = mean).
    """

    dist: Literal["fixed", "uniform", "normal", "lognormal"] = field(
        default="fixed", metadata=doc("distribution family")
    )
    value: float = field(default=0.0, metadata=doc("the value of a fixed distribution", min=0))
    low: float = field(default=0.0, metadata=doc("uniform: lower bound", min=0))
    high: float = field(default=0.0, metadata=doc("uniform: upper bound", min=0))
    mean: float = field(default=0.0, metadata=doc("normal/lognormal: mean", min=0))
    std: float = field(default=0.0, metadata=doc("normal: standard deviation", min=0))
    sigma: float = field(default=0.5, metadata=doc("lognormal: sigma of the log", min=0))
    min: float | None = field(default=None, metadata=doc("clip below at this value", min=0))
    max: float | None = field(default=None, metadata=doc("clip above at this value", min=0))


def fixed(value: float) -> Dist:
    return Dist(dist="fixed", value=value)


@dataclass(frozen=True)
class RatePoint:
    """From sim time `at` on, the open-loop arrival rate is `rate` sessions per second."""

    at: float = field(default=0.0, metadata=doc("sim time in seconds", min=0))
    rate: float = field(default=1.0, metadata=doc("sessions per second", min=0))


@dataclass(frozen=True)
class Arrival:
    """How sessions start.

    poisson: exponential gaps at `rate`; gamma: Gamma gaps with the same mean and a squared
    coefficient of variation of `burstiness` (1 = Poisson, >1 = bursty); closed_loop: `users`
    concurrent users, each starting a new session `think_time_s` after the previous one ended.
    `schedule` (open-loop only) changes the rate over time, stepwise.
    """

    process: Literal["poisson", "gamma", "closed_loop"] = field(
        default="poisson", metadata=doc("arrival process")
    )
    rate: float = field(default=1.0, metadata=doc("sessions per second (open loop)", min=0))
    burstiness: float = field(
        default=1.0, metadata=doc("gamma: squared coefficient of variation of the gaps", min=0.01)
    )
    users: int = field(default=1, metadata=doc("closed loop: concurrent users", min=1))
    think_time_s: Dist = field(default_factory=lambda: fixed(0.0), metadata=doc("closed loop: pause between sessions"))
    schedule: tuple[RatePoint, ...] = field(default=(), metadata=doc("open loop: stepwise rate changes"))


@dataclass(frozen=True)
class PrefixGroup:
    """A population of sessions that share a system prompt (a tenant, an app, an agent).

    Each session sends `turns` requests; turn k's prompt is the group's system prompt, then
    every earlier question and answer of the session, then a new question, so shared text
    shares token ids and the block hashes find the reuse.
    """

    name: str = field(default="group", metadata=doc("label shown on screen and in events"))
    weight: float = field(default=1.0, metadata=doc("relative share of new sessions", min=0))
    system_prompt_tokens: int = field(default=0, metadata=doc("tokens of the shared system prompt", min=0))
    question_tokens: Dist = field(default_factory=lambda: fixed(128), metadata=doc("new tokens a user adds each turn"))
    output_tokens: Dist = field(default_factory=lambda: fixed(128), metadata=doc("tokens generated per turn"))
    turns: Dist = field(default_factory=lambda: fixed(1), metadata=doc("requests per session"))
    think_time_s: Dist = field(default_factory=lambda: fixed(0.0), metadata=doc("pause between a reply and the next turn"))
    pin_on: tuple[str, ...] = field(
        default=(), metadata=doc("nodes that pin (preload, never evict) this group's system prompt")
    )


@dataclass(frozen=True)
class Trace:
    """Replay of a recorded workload instead of synthetic groups."""

    format: Literal["mooncake", "azure", "weka"] = field(default="mooncake", metadata=doc("trace file format"))
    path: str = field(default="", metadata=doc("trace file (or directory of weka sessions), relative to the scenario"))
    limit: int | None = field(default=None, metadata=doc("replay at most this many requests", min=1))
    time_scale: float = field(default=1.0, metadata=doc("multiply inter-arrival gaps by this", min=0.0001))
    start_s: float = field(default=0.0, metadata=doc("skip the trace's first seconds", min=0))


@dataclass(frozen=True)
class Workload:
    """What arrives. Either synthetic `groups` or a `trace`."""

    arrival: Arrival = field(default_factory=Arrival, metadata=doc("how sessions start"))
    groups: tuple[PrefixGroup, ...] = field(default=(PrefixGroup(),), metadata=doc("prefix groups"))
    group_order: Literal["weighted", "cycle"] = field(
        default="weighted", metadata=doc("pick each new session's group at random by weight, or cycle through them")
    )
    sessions: int | None = field(default=None, metadata=doc("stop after starting this many sessions", min=1))
    requests: int | None = field(default=None, metadata=doc("stop after this many requests arrived", min=1))
    duration_s: float | None = field(default=None, metadata=doc("no new sessions after this sim time", min=0))
    trace: Trace | None = field(default=None, metadata=doc("replay a trace instead of synthetic groups"))


@dataclass(frozen=True)
class NodeSpec:
    """One model server (one GPU, or one tensor-parallel group treated as one)."""

    name: str = field(default="node", metadata=doc("unique node name"))
    hardware: str | None = field(default=None, metadata=doc("hardware profile; defaults to the cluster's"))
    kv_blocks: int | None = field(
        default=None, metadata=doc("KV capacity in blocks; derived from GPU memory when absent", min=1)
    )
    gpu_memory_utilization: float = field(
        default=0.9, metadata=doc("share of GPU memory vLLM may use (weights + KV)", min=0.05, max=1.0)
    )
    max_num_seqs: int = field(default=64, metadata=doc("most requests running in one batch", min=1))
    max_num_batched_tokens: int = field(default=8192, metadata=doc("token budget of one iteration", min=1))
    chunked_prefill: bool = field(default=True, metadata=doc("split long prefills across iterations"))
    max_active: int | None = field(default=None, metadata=doc("reject when running+waiting reach this", min=1))
    max_queue: int | None = field(default=None, metadata=doc("reject when this many are waiting", min=0))


@dataclass(frozen=True)
class Cluster:
    block_size: int = field(default=16, metadata=doc("tokens per KV block", min=1, max=4096))
    hardware: str = field(default="h100-80gb", metadata=doc("default hardware profile of the nodes"))
    nodes: tuple[NodeSpec, ...] = field(default=(NodeSpec(),), metadata=doc("the model servers"))


@dataclass(frozen=True)
class Latency:
    """How long work takes.

    linear: the seed model, one request at a time per node: prefill cost per uncached prompt
    token plus decode cost per output token. roofline: iteration-level continuous batching
    timed from the hardware and model profiles.
    """

    model: Literal["linear", "roofline"] = field(default="roofline", metadata=doc("latency model"))
    prefill_ms_per_token: float = field(default=1.0, metadata=doc("linear: ms per uncached prompt token", min=0))
    decode_ms_per_token: float = field(default=1.0, metadata=doc("linear: ms per output token", min=0))
    compute_efficiency: float = field(default=0.5, metadata=doc("roofline: achieved share of peak FLOP/s", min=0.01, max=1))
    memory_efficiency: float = field(default=0.8, metadata=doc("roofline: achieved share of HBM bandwidth", min=0.01, max=1))
    iteration_overhead_ms: float = field(default=0.5, metadata=doc("roofline: fixed CPU cost per iteration", min=0))


@dataclass(frozen=True)
class Router:
    policy: str = field(default="cache_aware", metadata=doc("routing policy name (see `kvtui run --help`)"))
    routing_overhead_ms: float = field(default=0.0, metadata=doc("time the router takes per request", min=0))
    fill: Literal["least_loaded", "best_fit"] = field(
        default="least_loaded", metadata=doc("cache_aware: where a miss goes")
    )


@dataclass(frozen=True)
class ScriptedEvent:
    """Something that happens at a given sim time: a fault or a recovery."""

    at: float = field(default=0.0, metadata=doc("sim time in seconds", min=0))
    action: Literal["node_down", "node_up", "control_plane_crash"] = field(
        default="node_down", metadata=doc("what happens")
    )
    node: str | None = field(default=None, metadata=doc("the node, for node_down / node_up"))
    in_flight: Literal["reroute", "fail"] = field(
        default="reroute", metadata=doc("node_down: what happens to the node's requests")
    )


@dataclass(frozen=True)
class Metadata:
    """The WAL-backed control-plane store."""

    dir: str | None = field(default=None, metadata=doc("log directory; a fresh temporary one when absent"))
    fsync: Literal["always", "batch", "never"] = field(default="batch", metadata=doc("fsync policy"))
    snapshot_every: int = field(default=5000, metadata=doc("records between snapshots", min=1))
    while_down: Literal["wait", "reject"] = field(
        default="wait", metadata=doc("what arriving requests do while the control plane recovers")
    )


@dataclass(frozen=True)
class Scenario:
    name: str = field(default="scenario", metadata=doc("short name shown in the header"))
    description: str = field(default="", metadata=doc("what this scenario teaches"))
    seed: int = field(default=0, metadata=doc("seed of the one RNG", min=0))
    model: str = field(default="llama-3.1-8b", metadata=doc("model profile"))
    cluster: Cluster = field(default_factory=Cluster, metadata=doc("the nodes"))
    latency: Latency = field(default_factory=Latency, metadata=doc("latency model"))
    router: Router = field(default_factory=Router, metadata=doc("routing"))
    workload: Workload = field(default_factory=Workload, metadata=doc("what arrives"))
    events: tuple[ScriptedEvent, ...] = field(default=(), metadata=doc("scripted faults"))
    metadata: Metadata | None = field(
        default=None, metadata=doc("the WAL-backed control-plane store; absent = no store")
    )
    until_s: float | None = field(default=None, metadata=doc("stop the simulation at this sim time", min=0))
