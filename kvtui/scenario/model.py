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

from kvtui.scenario.trace_formats import TraceFormatName


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
    value: float = field(default=0.0, metadata=doc("the value of a fixed distribution", min=0, max=1e9))
    low: float = field(default=0.0, metadata=doc("uniform: lower bound", min=0, max=1e9))
    high: float = field(default=0.0, metadata=doc("uniform: upper bound", min=0, max=1e9))
    mean: float = field(default=0.0, metadata=doc("normal/lognormal: mean", min=0, max=1e9))
    std: float = field(default=0.0, metadata=doc("normal: standard deviation", min=0, max=1e9))
    sigma: float = field(default=0.5, metadata=doc("lognormal: sigma of the log", min=0, max=10))
    min: float | None = field(default=None, metadata=doc("clip below at this value", min=0, max=1e9))
    max: float | None = field(default=None, metadata=doc("clip above at this value", min=0, max=1e9))


def fixed(value: float) -> Dist:
    return Dist(dist="fixed", value=value)


@dataclass(frozen=True)
class RatePoint:
    """From sim time `at` on, the open-loop arrival rate is `rate` arrivals per second (what an
    arrival is: `Arrival`)."""

    at: float = field(default=0.0, metadata=doc("sim time in seconds", min=0, max=1e9))
    rate: float = field(default=1.0, metadata=doc("arrivals per second (see arrival.rate)", min=0, max=1e6))


@dataclass(frozen=True)
class Arrival:
    """How sessions start.

    poisson: exponential gaps at `rate`; gamma: Gamma gaps with the same mean and a squared
    coefficient of variation of `burstiness` (1 = Poisson, >1 = bursty); closed_loop: `users`
    concurrent users, each starting a new session `think_time_s` after the previous one ended.
    `schedule` (open-loop only) changes the rate over time, stepwise.

    One arrival is what the workload starts on it, so `rate` is arrivals per second and means:
    sessions per second for `groups` (each session's turns then follow at think time) and for
    weka traces (one conversation each); requests per second for `shared_prefix` (it has no
    sessions: each arrival is one request). `kvtui validate` prints which.
    """

    process: Literal["poisson", "gamma", "closed_loop"] = field(
        default="poisson", metadata=doc("arrival process")
    )
    rate: float = field(default=1.0, metadata=doc(
        "arrivals per second (open loop): sessions/s for groups and weka traces (turns follow), "
        "requests/s for shared_prefix (one request per arrival)", min=0, max=1e6))
    burstiness: float = field(
        default=1.0, metadata=doc("gamma: squared coefficient of variation of the gaps", min=0.01, max=1e4)
    )
    users: int = field(default=1, metadata=doc("closed loop: concurrent users", min=1, max=100_000))
    think_time_s: Dist = field(default_factory=lambda: fixed(0.0), metadata=doc("closed loop: pause between sessions"))
    schedule: tuple[RatePoint, ...] = field(default=(), metadata=doc("open loop: stepwise rate changes"))
    ladder: tuple[float, ...] = field(
        default=(), metadata=doc("rates for `kvtui compare --ladder`: one run per step at that constant rate", min=0, max=1e6)
    )


@dataclass(frozen=True)
class SLO:
    """Latency objectives a request carries (llm-d's `x-slo-ttft-ms` / `x-slo-tpot-ms` headers).

    Either may be absent; a request with neither has no SLO. Routers that plan by SLO
    (predicted_latency) read them, and the results count attainment and goodput against them.
    """

    ttft_ms: float | None = field(default=None, metadata=doc("time-to-first-token objective in ms; absent: none", min=0, max=1e9))
    tpot_ms: float | None = field(default=None, metadata=doc("time-per-output-token objective in ms; absent: none", min=0, max=1e9))


@dataclass(frozen=True)
class PrefixGroup:
    """A population of sessions that share a system prompt (a tenant, an app, an agent).

    Each session sends `turns` requests; turn k's prompt is the group's system prompt, then
    every earlier question and answer of the session, then a new question, so shared text
    shares token ids and the block hashes find the reuse.
    """

    name: str = field(default="group", metadata=doc("label shown on screen and in events"))
    weight: float = field(default=1.0, metadata=doc("relative share of new sessions", min=0, max=1e6))
    system_prompt_tokens: int = field(default=0, metadata=doc("tokens of the shared system prompt", min=0, max=1_048_576))
    question_tokens: Dist = field(default_factory=lambda: fixed(128), metadata=doc("new tokens a user adds each turn"))
    output_tokens: Dist = field(default_factory=lambda: fixed(128), metadata=doc("tokens generated per turn"))
    turns: Dist = field(default_factory=lambda: fixed(1), metadata=doc("requests per session"))
    think_time_s: Dist = field(default_factory=lambda: fixed(0.0), metadata=doc("pause between a reply and the next turn"))
    pin_on: tuple[str, ...] = field(
        default=(), metadata=doc("nodes that pin (preload, never evict) this group's system prompt")
    )
    slo: SLO | None = field(default=None, metadata=doc("latency objectives of this group's requests"))
    sheddable: bool = field(
        default=False, metadata=doc("priority class: may be rejected instead of queued when no node can meet its SLO")
    )


@dataclass(frozen=True)
class Trace:
    """Replay of a recorded workload instead of synthetic groups."""

    format: TraceFormatName = field(default="mooncake", metadata=doc("trace file format"))
    path: str = field(default="", metadata=doc("trace file (or directory of weka sessions), relative to the scenario"))
    limit: int | None = field(default=None, metadata=doc("replay at most this many requests", min=1, max=10_000_000))
    time_scale: float = field(default=1.0, metadata=doc("multiply inter-arrival gaps by this", min=0.0001, max=1e6))
    start_s: float = field(default=0.0, metadata=doc("skip the trace's first seconds", min=0, max=1e9))
    skip_invalid: bool = field(
        default=False, metadata=doc("skip invalid records (and say how many) instead of stopping with their lines")
    )
    copies: int = field(
        default=1,
        metadata=doc("weka: play each conversation this many times; copies get keys of their own", min=1, max=1000),
    )
    slo: SLO | None = field(default=None, metadata=doc("latency objectives of every replayed request"))
    sheddable: bool = field(
        default=False, metadata=doc("priority class: may be rejected instead of queued when no node can meet its SLO")
    )


@dataclass(frozen=True)
class SharedPrefix:
    """inference-perf's shared-prefix workload (its `data: {type: shared_prefix}` generator).

    `num_groups` system prompts, each shared by `num_prompts_per_group` users; a user's prompt
    is its group's system prompt then its own question. Lengths are drawn once, as
    inference-perf does: a system prompt length per group, a question and an output length per
    user, each `len x (1 +/- spread)` (uniform, or a normal with std = spread x len clipped to
    those bounds); `question_dist` / `output_dist` replace the spread with any distribution.
    Every arrival of `workload.arrival` (so its `rate` is requests per second, its `users` the
    concurrency) sends the next request of a fixed shuffled user order
    (user i mod users, round i div users). With `multi_turn` a user's next round appends the
    previous question and answer to its context and waits for the previous round to finish.
    """

    num_groups: int = field(default=10, metadata=doc("distinct system prompts (inference-perf num_groups)", min=1, max=100_000))
    num_prompts_per_group: int = field(
        default=10, metadata=doc("users (prompts) sharing each system prompt", min=1, max=1_000_000)
    )
    system_prompt_len: int = field(default=100, metadata=doc("tokens of each group's system prompt", min=0, max=1_048_576))
    question_len: int = field(default=50, metadata=doc("tokens of each user's question", min=0, max=1_048_576))
    output_len: int = field(default=50, metadata=doc("tokens generated per request", min=1, max=1_048_576))
    system_prompt_spread: float = field(
        default=0.0, metadata=doc("system prompt lengths vary by +/- this share (the blog fixes them: 0)", min=0, max=1)
    )
    question_spread: float = field(default=0.3, metadata=doc("question lengths vary by +/- this share", min=0, max=1))
    output_spread: float = field(default=0.3, metadata=doc("output lengths vary by +/- this share", min=0, max=1))
    spread_dist: Literal["uniform", "normal"] = field(
        default="uniform",
        metadata=doc("uniform over len x (1 +/- spread), or normal with std = spread x len clipped to those bounds"),
    )
    question_dist: Dist | None = field(
        default=None, metadata=doc("draw question lengths from this instead of question_len/question_spread")
    )
    output_dist: Dist | None = field(
        default=None, metadata=doc("draw output lengths from this instead of output_len/output_spread")
    )
    multi_turn: bool = field(
        default=True, metadata=doc("each round appends the previous question and answer (inference-perf enable_multi_turn_chat)")
    )
    rounds: int | None = field(default=None, metadata=doc("stop after every user has sent this many requests", min=1, max=1_000_000))
    max_context_tokens: int | None = field(
        default=None, metadata=doc("multi_turn: drop the oldest rounds while prompt + output exceed this", min=1, max=4_194_304)
    )
    slo: SLO | None = field(default=None, metadata=doc("latency objectives of every request"))
    sheddable: bool = field(
        default=False, metadata=doc("priority class: may be rejected instead of queued when no node can meet its SLO")
    )


@dataclass(frozen=True)
class Workload:
    """What arrives: synthetic `groups`, a `trace`, or a `shared_prefix` generator."""

    arrival: Arrival = field(default_factory=Arrival, metadata=doc("how sessions start"))
    groups: tuple[PrefixGroup, ...] = field(default=(PrefixGroup(),), metadata=doc("prefix groups"))
    group_order: Literal["weighted", "cycle"] = field(
        default="weighted", metadata=doc("pick each new session's group at random by weight, or cycle through them")
    )
    sessions: int | None = field(default=None, metadata=doc("stop after starting this many sessions", min=1, max=10_000_000))
    requests: int | None = field(default=None, metadata=doc("stop after this many requests arrived", min=1, max=10_000_000))
    duration_s: float | None = field(default=None, metadata=doc("no new sessions after this sim time", min=0, max=1e9))
    trace: Trace | None = field(default=None, metadata=doc("replay a trace instead of synthetic groups"))
    shared_prefix: SharedPrefix | None = field(
        default=None, metadata=doc("inference-perf's shared-prefix generator instead of synthetic groups")
    )


@dataclass(frozen=True)
class Offload:
    """A CPU tier under the node's GPU memory (vLLM's OffloadingConnector / LMCache, Dynamo's KVBM
    host tier): blocks evicted from the GPU are kept here, LRU, and loaded back over the host link."""

    cpu_blocks: int = field(metadata=doc("blocks the CPU tier holds (same block size as the GPU pool)", min=1, max=100_000_000))
    bandwidth_gbps: float = field(
        default=50.0,
        metadata=doc("host-to-GPU bandwidth per GPU in GB/s (gigabytes); PCIe 5.0 x16 peaks at 64", min=0.1, max=10_000),
    )


@dataclass(frozen=True)
class NodeSpec:
    """One model server (one GPU, or one tensor-parallel group treated as one)."""

    name: str = field(default="node", metadata=doc("unique node name"))
    hardware: str | None = field(default=None, metadata=doc("hardware profile; defaults to the cluster's"))
    kv_blocks: int | None = field(
        default=None, metadata=doc("KV capacity in blocks; derived from GPU memory when absent", min=1, max=100_000_000)
    )
    gpu_memory_utilization: float = field(
        default=0.9, metadata=doc("share of GPU memory vLLM may use (weights + KV)", min=0.05, max=1.0)
    )
    tensor_parallel: int | None = field(
        default=None, metadata=doc("GPUs in this node's tensor-parallel group; defaults to the cluster's", min=1, max=64)
    )
    kv_cache_dtype: Literal["bf16", "fp8"] | None = field(
        default=None, metadata=doc("KV cache element type (fp8 halves the bytes per token); defaults to the cluster's")
    )
    max_num_seqs: int = field(default=64, metadata=doc("most requests running in one batch", min=1, max=100_000))
    max_num_batched_tokens: int = field(default=8192, metadata=doc("token budget of one iteration", min=1, max=4_194_304))
    chunked_prefill: bool = field(default=True, metadata=doc("split long prefills across iterations"))
    max_active: int | None = field(default=None, metadata=doc("reject when running+waiting reach this", min=1, max=10_000_000))
    max_queue: int | None = field(default=None, metadata=doc("reject when this many are waiting", min=0, max=10_000_000))
    offload: Offload | None = field(default=None, metadata=doc("a CPU KV tier under GPU memory; defaults to the cluster's"))
    role: Literal["prefill", "decode", "both"] = field(default="both", metadata=doc(
        "prefill/decode disaggregation: a prefill node only prefills and sends the KV to a decode node, a decode "
        "node only decodes what it received; both (the default) does either, colocated"))
    host: str | None = field(default=None, metadata=doc(
        "the server this node sits in: KV moves over NVLink between nodes of one host, over RDMA between hosts "
        "(absent: a host of its own)"))


@dataclass(frozen=True)
class Cluster:
    block_size: int = field(default=16, metadata=doc("tokens per KV block", min=1, max=4096))
    hardware: str = field(default="h100-80gb", metadata=doc("default hardware profile of the nodes"))
    tensor_parallel: int = field(default=1, metadata=doc("default GPUs per node (one tensor-parallel group, one scheduler)", min=1, max=64))
    kv_cache_dtype: Literal["bf16", "fp8"] = field(default="bf16", metadata=doc("default KV cache element type"))
    offload: Offload | None = field(default=None, metadata=doc("default CPU KV tier of the nodes (none: GPU only)"))
    nodes: tuple[NodeSpec, ...] = field(default=(NodeSpec(),), metadata=doc("the model servers"))


@dataclass(frozen=True)
class Latency:
    """How long work takes.

    linear: the seed model, one request at a time per node: prefill cost per uncached prompt
    token plus decode cost per output token. roofline: iteration-level continuous batching
    timed from the hardware and model profiles.
    """

    model: Literal["linear", "roofline"] = field(default="roofline", metadata=doc("latency model"))
    prefill_ms_per_token: float = field(default=1.0, metadata=doc("linear: ms per uncached prompt token", min=0, max=1e6))
    decode_ms_per_token: float = field(default=1.0, metadata=doc("linear: ms per output token", min=0, max=1e6))
    compute_efficiency: float | None = field(
        default=None, metadata=doc("roofline: achieved share of peak FLOP/s; default the hardware profile's (calibrated)", min=0.01, max=1)
    )
    memory_efficiency: float | None = field(
        default=None, metadata=doc("roofline: achieved share of HBM bandwidth; default the hardware profile's (calibrated)", min=0.01, max=1)
    )
    iteration_overhead_ms: float | None = field(
        default=None, metadata=doc("roofline: fixed CPU cost per iteration; default the hardware profile's (0.5)", min=0, max=1e6)
    )
    request_overhead_ms: float | None = field(default=None, metadata=doc(
        "roofline: the API server's cost per request before the scheduler sees it (HTTP, tokenising); "
        "default the cluster hardware profile's (0)", min=0, max=1e6))
    output_lag_steps: float | None = field(default=None, metadata=doc(
        "roofline: scheduler steps a token takes to reach the client after it is computed (the API server's output "
        "processing, pipelined with the next step): added to TTFT and E2E; default the hardware profile's (0)", min=0, max=100))


@dataclass(frozen=True)
class MediumWeights:
    """How much a cached block counts by where it is held (llm-d's per-tier backend weights)."""

    gpu: float = field(default=1.0, metadata=doc("weight of a block cached in GPU memory", min=0, max=1))
    cpu: float = field(default=0.8, metadata=doc("weight of a block held in the CPU offload tier", min=0, max=1))


@dataclass(frozen=True)
class KVIndexConfig:
    """The router's global KV-block index (llm-d's kvcache.Indexer).

    precise: block key -> nodes, fed only by the nodes' KV events, `delay_ms` late;
    approximate: what the router itself sent to each node (no KV events), bounded per node.
    """

    mode: Literal["precise", "approximate"] = field(default="precise", metadata=doc("where the index learns what is cached"))
    scorer: Literal["longest_prefix", "highest_hit", "coverage"] = field(
        default="longest_prefix",
        metadata=doc("longest_prefix: consecutive blocks from the first; highest_hit: position of the last block hit; coverage: blocks hit"),
    )
    delay_ms: float = field(default=0.0, metadata=doc("KV events reach the index this late (a stale index)", min=0, max=3_600_000))
    medium_weights: MediumWeights = field(default_factory=MediumWeights, metadata=doc("per-tier block weights"))
    approx_blocks_per_node: int | None = field(
        default=None,
        metadata=doc("approximate mode: block keys remembered per node (LRU); default the node's KV capacity", min=1, max=100_000_000),
    )
    pods_per_key: int | None = field(
        default=None,
        metadata=doc("precise mode: (node, tier) entries kept per block key, least recently stored dropped (llm-d: 10); unset: all", min=1, max=1_000_000),
    )
    approx_max_prefix_tokens: int = field(
        default=4096,
        metadata=doc("approximate mode: prompt tokens matched at most (llm-d: 256 blocks of 64 characters, ~4 characters a token)", min=1, max=100_000_000),
    )


@dataclass(frozen=True)
class ScorerWeights:
    """load_prefix: the weights of the llm-d scheduler profile's scorers.

    Presets, each as it ships: llm-d-approximate (prefix 3, queue 2, kv 2: the InferencePool
    chart's default profile, approximate prefix scorer), llm-d-precise (2, 1, 1: llm-d's sample
    configuration for the precise scorer), llm-d (whichever of the two goes with
    `index.mode`), seed-111 and seed-322 (the seed's: the predicted-latency blog's (1,1,1) and
    (3,2,2) baselines). A weight given here overrides the preset's.
    """

    preset: Literal["llm-d", "llm-d-approximate", "llm-d-precise", "seed-111", "seed-322"] = field(
        default="llm-d", metadata=doc("weight preset (llm-d: the one llm-d ships with index.mode)")
    )
    prefix: float | None = field(default=None, metadata=doc("weight of the prefix-cache scorer", min=0, max=1e6))
    queue: float | None = field(default=None, metadata=doc("weight of the queue scorer", min=0, max=1e6))
    kv: float | None = field(default=None, metadata=doc("weight of the KV-cache-utilisation scorer", min=0, max=1e6))


@dataclass(frozen=True)
class DynamoConfig:
    """dynamo: NVIDIA Dynamo KV router's cost function (defaults: Dynamo 1.6.1's KvRouterConfig)."""

    prefill_load_scale: float = field(
        default=1.0, metadata=doc("weight of credited prefill blocks against decode blocks (Dynamo --router-prefill-load-scale)", min=0, max=1000)
    )
    overlap_score_weight: float | None = field(
        default=None,
        metadata=doc("deprecated alias of prefill_load_scale (Dynamo's old --kv-overlap-score-weight); wins when given, 0 also zeroes the credit", min=0, max=1000),
    )
    overlap_score_credit: float = field(
        default=1.0, metadata=doc("prefill blocks credited per prompt block cached in GPU memory (Dynamo overlap_score_credit)", min=0, max=1000)
    )
    host_cache_hit_weight: float = field(
        default=0.75, metadata=doc("credit per block after the GPU run held in the CPU tier (Dynamo host_cache_hit_weight)", min=0, max=1000)
    )
    temperature: float = field(
        default=0.0,
        metadata=doc("0: lowest cost wins; >0: softmax sampling over min-max normalised costs (Dynamo --router-temperature)", min=0, max=1000),
    )


@dataclass(frozen=True)
class SGLangConfig:
    """sglang_cache_aware: SGLang model gateway's cache-aware policy (defaults: its CLI's; sources in kvtui.sim.router.sglang)."""

    balance_abs_threshold: int = field(default=64, metadata=doc("imbalanced when max-min load exceeds this", min=0, max=1_000_000_000))
    balance_rel_threshold: float = field(default=1.5, metadata=doc("... and max load exceeds this x min load", min=1, max=1e6))
    cache_threshold: float = field(default=0.3, metadata=doc("route by tree match only above this match rate", min=0, max=1))
    eviction_interval_s: float = field(
        default=120.0, metadata=doc("sim seconds between LRU eviction passes over the approximate tree; 0: never", min=0, max=1e9)
    )
    max_tree_size: int = field(
        default=1_048_576,
        metadata=doc("blocks each node may hold in the approximate tree before LRU eviction (SGLang: 2^26 characters)", min=1, max=1_000_000_000),
    )
    fallback: Literal["least_loaded", "smallest_tree"] = field(
        default="least_loaded",
        metadata=doc("below cache_threshold: least loaded (sgl-model-gateway) or smallest tree (older sgl-router)"),
    )
    tie_break: Literal["deterministic", "random"] = field(
        default="deterministic",
        metadata=doc("deterministic: the gateway's (first in cluster order; on a hit, the first node to cache it); random: the seeded RNG"),
    )


@dataclass(frozen=True)
class PredictedLatencyConfig:
    """predicted_latency: llm-d's predicted-latency scheduler (seed 002)."""

    affinity_threshold: float = field(default=0.80, metadata=doc("prefix score that makes a node sticky", min=0, max=1))
    explore_probability: float = field(default=0.01, metadata=doc("chance to ignore the affinity gate", min=0, max=1))
    load_gate_ms: float = field(default=5000.0, metadata=doc("break affinity when the sticky node's TTFT is this much worse", min=0, max=1e9))
    positive_tier_probability: float = field(default=0.99, metadata=doc("chance to choose among nodes with headroom", min=0, max=1))
    ttft_weight: float = field(default=0.8, metadata=doc("share of TTFT headroom in the blend (TPOT gets the rest)", min=0, max=1))
    regressor: Literal["linear", "xgboost"] = field(default="linear", metadata=doc("online regressor (xgboost needs kvtui[xgboost])"))
    strict_affinity_threshold: float = field(
        default=0.0,
        metadata=doc("a second affinity gate before the SLO tiers (llm-d's chart profile uses 0.99); 0: off", min=0, max=1),
    )
    picker: Literal["max", "weighted_random"] = field(
        default="max",
        metadata=doc("max: greedy best score (the blog); weighted_random: sample by score (llm-d's chart profile)"),
    )
    bucket_size: int = field(default=500, metadata=doc("training samples kept per stratification bucket (newest)", min=1, max=1_000_000))
    kv_buckets: int = field(default=20, metadata=doc("KV-usage buckets of the training window (20: llm-d's steps of 5 %)", min=1, max=100))
    objective: Literal["relative", "quantile"] = field(
        default="relative",
        metadata=doc("xgboost: relative (squared error of log latency, kvtui's) or quantile (llm-d's default, at quantile_alpha)"),
    )
    quantile_alpha: float = field(default=0.9, metadata=doc("objective quantile: the quantile trained (llm-d: 0.9)", min=0.01, max=0.99))
    iteration_feature: bool = field(
        default=False, metadata=doc("kvtui's option beyond llm-d: the time left in the node's running iteration as a feature")
    )
    tokens_in_flight: Literal["node", "epp"] = field(
        default="node",
        metadata=doc("node: prompt tokens queued or not yet prefilled on the node (kvtui's); epp: llm-d's EPP count, "
                     "prompts routed there until they complete"),
    )
    min_samples: int = field(default=10, metadata=doc("samples before the first fit (cold fallback until then)", min=2, max=1_000_000))
    retrain_interval_s: float = field(default=1.0, metadata=doc("sim seconds between retrains (when new samples came)", min=0, max=1e9))
    retrain_samples: int = field(default=0, metadata=doc("also retrain after this many new samples; 0: only by time", min=0, max=1_000_000_000))
    ensemble_split: int = field(
        default=200, metadata=doc("separate queued / not-queued models once each has this many samples; 0: never", min=0, max=1_000_000_000)
    )
    max_decode_token_samples: int = field(default=0, metadata=doc(
        "llm-d's maxDecodeTokenSamplesForPrediction: TPOT re-predicted at up to this many sampled decode tokens, "
        "averaged into the reported TPOT prediction; 0: never (llm-d's default)", min=0, max=1_000_000))
    sampling_mean: float = field(default=1000.0, metadata=doc(
        "llm-d's samplingMean: mean Poisson gap, in tokens, between sampled decode tokens", min=0.001, max=1e9))
    mape_window: int = field(default=100, metadata=doc("predictions per MAPE window in the report", min=1, max=1_000_000))


@dataclass(frozen=True)
class Disaggregation:
    """How a prefill/decode router splits a request (docs/disaggregation.md)."""

    local_prefill_tokens: int = field(default=0, metadata=doc(
        "conditional disaggregation: a request whose uncached prompt on the chosen decode node is under this many "
        "tokens prefills there instead of on a prefill node (llm-d's nonCachedTokens, Dynamo's "
        "max_local_prefill_length); 0 always disaggregates", min=0, max=10_000_000))
    when_decode_full: Literal["wait", "reject"] = field(default="wait", metadata=doc(
        "a prefilled request whose decode node has no room now: wait for room (its blocks stay on the prefill "
        "node) or be rejected with the reason"))


@dataclass(frozen=True)
class MooncakeConfig:
    """mooncake: the conductor's SLO check (Mooncake, FAST'25, Algorithm 1; kvtui/sim/router/mooncake.py)."""

    ttft_slo_ms: float = field(default=0.0, metadata=doc(
        "TTFT_SLO the estimated TTFT is checked against; 0: each request's own TTFT SLO (none: no check)", min=0, max=1e9))
    tbt_slo_ms: float = field(default=0.0, metadata=doc(
        "TBT_SLO the chosen decode node's estimated time between tokens is checked against; 0: each request's own TPOT "
        "SLO (none: no check)", min=0, max=1e9))
    early_rejection: bool = field(default=True, metadata=doc(
        "reject a request at arrival when an estimate exceeds its SLO (Mooncake's early rejection); false: only record the estimates"))


@dataclass(frozen=True)
class Router:
    policy: str = field(default="load_prefix", metadata=doc("routing policy name (see `kvtui run --help`)"))
    routing_overhead_ms: float = field(default=0.0, metadata=doc("time the router takes per request", min=0, max=1e6))
    fill: Literal["least_loaded", "best_fit"] = field(
        default="least_loaded", metadata=doc("cache_aware: where a miss goes")
    )
    index: KVIndexConfig = field(default_factory=KVIndexConfig, metadata=doc("the global KV-block index"))
    weights: ScorerWeights = field(default_factory=ScorerWeights, metadata=doc("load_prefix: scorer weights"))
    dynamo: DynamoConfig = field(default_factory=DynamoConfig, metadata=doc("dynamo policy knobs"))
    sglang: SGLangConfig = field(default_factory=SGLangConfig, metadata=doc("sglang_cache_aware policy knobs"))
    predicted_latency: PredictedLatencyConfig = field(
        default_factory=PredictedLatencyConfig, metadata=doc("predicted_latency policy knobs")
    )
    disaggregation: Disaggregation = field(
        default_factory=Disaggregation, metadata=doc("prefill/decode policies: when to prefill locally, what a full decode node does")
    )
    mooncake: MooncakeConfig = field(default_factory=MooncakeConfig, metadata=doc("mooncake policy: its SLO check"))


@dataclass(frozen=True)
class ScriptedEvent:
    """Something that happens at a given sim time: a fault or a recovery."""

    at: float = field(default=0.0, metadata=doc("sim time in seconds", min=0, max=1e9))
    action: Literal[
        "node_down", "node_up", "control_plane_crash",
        "metadata_leader_down", "metadata_member_down", "metadata_member_up", "metadata_partition",
    ] = field(default="node_down", metadata=doc(
        "what happens; the metadata_* ones need metadata.replication.members > 1 (a Raft group)"))
    node: str | None = field(default=None, metadata=doc("the node, for node_down / node_up"))
    in_flight: Literal["reroute", "fail"] = field(
        default="reroute", metadata=doc("node_down: what happens to the node's requests")
    )
    member: str | None = field(default=None, metadata=doc(
        "metadata_member_down / metadata_member_up: the member (m1, m2, ... in order)"))
    members: tuple[str, ...] = field(default=(), metadata=doc(
        "metadata_partition: the members cut from the others (clients still reach every member)"))
    duration_s: float | None = field(default=None, metadata=doc(
        "metadata_partition: how long the cut lasts (required); metadata_leader_down / metadata_member_down: "
        "back up after this long (absent: stays down until a metadata_member_up)", min=0.001, max=1e9))


@dataclass(frozen=True)
class Chapter:
    """One chapter of the scenario's story: what to watch from a sim time on (the app shows
    the current chapter and marks each one on its timeline)."""

    at: float = field(metadata=doc("sim time in seconds the chapter starts", min=0, max=1e9))
    title: str = field(metadata=doc("a few words, shown in the header and on the timeline"))
    text: str = field(default="", metadata=doc("what to look at and why"))


@dataclass(frozen=True)
class Replication:
    """metadata.replication: the store as a Raft group of `members`, each with its own WAL-backed
    store (kvtui/sim/raft/; docs/control-plane.md). Defaults are etcd's (3.4: --heartbeat-interval
    100, --election-timeout 1000, drawn in [1000, 2000) by etcd-io/raft raft.go's
    resetRandomizedElectionTimeout; --pre-vote off)."""

    members: int = field(default=1, metadata=doc(
        "members of the group; 1 is one store that crashes and recovers (no Raft)", min=1, max=9))
    heartbeat_ms: float = field(default=100.0, metadata=doc("the leader's heartbeat interval", min=0.1, max=1e6))
    election_timeout_ms: tuple[float, ...] = field(default=(1000.0, 2000.0), metadata=doc(
        "[lo, hi]: each election timeout is drawn uniformly from it, from the run's seed", min=0.1, max=1e7))
    pre_vote: bool = field(default=False, metadata=doc(
        "PreVote (Ongaro's thesis 9.6): a candidate first asks whether it could win, so a member cut off "
        "and back does not raise its term and depose a working leader"))
    router_reads: Literal["leader", "follower_serializable", "lease"] = field(default="leader", metadata=doc(
        "leader: linearizable reads through the leader (none without a leader that reaches a majority); "
        "follower_serializable: the router's own member, maybe stale, never refused while it is up; "
        "lease: the leader answers alone while its lease (the election timeout's lo) holds"))
    read_member: str | None = field(default=None, metadata=doc(
        "follower_serializable: the member the router reads (default the last, m<members>)"))
    link_latency_ms: float = field(default=0.5, metadata=doc(
        "one-way latency between two members; a disk write costs the hardware profile's fsync_us", min=0, max=1e6))
    stream: Literal["durable", "lossy"] = field(default="durable", metadata=doc(
        "KV events published while no leader takes them: durable holds and re-sends them (JetStream, "
        "patterns A and B); lossy drops them (a pub/sub socket, pattern C)"))


@dataclass(frozen=True)
class Metadata:
    """The WAL-backed control-plane store."""

    dir: str | None = field(default=None, metadata=doc(
        "log directory (relative to the working directory); a fresh temporary one when absent. Give one to "
        "keep the log for `kvtui wal inspect DIR`; it must be empty or new unless `resume`"))
    resume: bool = field(default=False, metadata=doc(
        "continue the log already in `dir`: recover its state first (otherwise a non-empty `dir` is refused)"))
    fsync: Literal["always", "batch", "never"] = field(default="batch", metadata=doc("fsync policy"))
    snapshot_every: int = field(default=5000, metadata=doc("records between snapshots", min=1, max=1_000_000_000))
    while_down: Literal["wait", "reject"] = field(
        default="wait", metadata=doc("what arriving requests do while the control plane recovers")
    )
    replication: Replication | None = field(default=None, metadata=doc(
        "the store replicated as a Raft group (absent: one store)"))


@dataclass(frozen=True)
class HardwareProfile:
    """A GPU's figures, under the top-level `hardware:` mapping (name -> figures).

    Same keys as the shipped kvtui/profiles/hardware.yaml; a name that is shipped is replaced.
    """

    memory_gb: float = field(metadata=doc("GPU memory in GB (1e9 bytes)", min=0.1, max=100_000))
    bf16_tflops: float = field(metadata=doc("dense BF16 tensor TFLOP/s (data sheet, no sparsity)", min=0.001, max=1_000_000))
    hbm_tb_s: float = field(metadata=doc("memory bandwidth in TB/s", min=0.001, max=10_000))
    interconnect: str = field(default="none", metadata=doc("name of the GPU-to-GPU link, for display"))
    interconnect_gb_s: float = field(default=0.0, metadata=doc("GPU-to-GPU bandwidth per direction in GB/s (needed for tensor_parallel > 1)", min=0, max=1e6))
    interconnect_latency_us: float = field(default=0.0, metadata=doc("latency of one ring all-reduce step in microseconds", min=0, max=1e9))
    allreduce_launch_us: float = field(default=0.0, metadata=doc("fixed cost of one all-reduce call in microseconds, whatever its size", min=0, max=1e9))
    eager_layer_floor_us: float = field(
        default=0.0, metadata=doc("least time per layer of a tensor-parallel iteration run eagerly (beyond CUDA graphs), microseconds", min=0, max=1e9)
    )
    usable_memory_gib: float | None = field(
        default=None, metadata=doc("memory the driver reports (torch.cuda.mem_get_info) in GiB; default memory_gb", min=0.01, max=100_000)
    )
    rdma_gb_s: float = field(default=0.0, metadata=doc("per-GPU network (RDMA) bandwidth per direction in GB/s, for KV moved between hosts", min=0, max=1e6))
    rdma_latency_us: float = field(default=0.0, metadata=doc("fixed cost of one KV transfer between hosts in microseconds", min=0, max=1e9))
    fsync_us: float | None = field(default=None, metadata=doc(
        "one fdatasync of the host's disk in microseconds (a replicated store's append); default 100", min=0, max=1e9))
    compute_efficiency: float | None = field(default=None, metadata=doc("default achieved share of peak FLOP/s", min=0.01, max=1))
    memory_efficiency: float | None = field(default=None, metadata=doc("default achieved share of memory bandwidth", min=0.01, max=1))
    iteration_overhead_us: float | None = field(
        default=None, metadata=doc("default fixed CPU cost per scheduler iteration in microseconds (500)", min=0, max=1e9))
    request_overhead_ms: float | None = field(
        default=None, metadata=doc("default API server cost per request before scheduling, in ms (0)", min=0, max=1e6))
    output_lag_steps: float | None = field(default=None, metadata=doc(
        "default scheduler steps a token takes to reach the client after it is computed (0)", min=0, max=100))
    source: str = field(default="", metadata=doc("where the figures come from"))
    calibrated_from: str = field(default="", metadata=doc("the benchmark report these figures were fitted to, and when (kvtui calibrate)"))


@dataclass(frozen=True)
class ModelProfile:
    """A dense transformer's figures, under the top-level `models:` mapping (name -> figures).

    Same keys as the shipped kvtui/profiles/models.yaml (config.json names in the docs).
    """

    params_b: float = field(metadata=doc("parameters in billions (weights are BF16)", min=0.001, max=100_000))
    layers: int = field(metadata=doc("num_hidden_layers", min=1, max=10_000))
    hidden: int = field(metadata=doc("hidden_size", min=1, max=1_000_000))
    intermediate: int = field(metadata=doc("intermediate_size (the MLP width)", min=1, max=1_000_000))
    attention_heads: int = field(metadata=doc("num_attention_heads", min=1, max=1_000_000))
    kv_heads: int = field(metadata=doc("num_key_value_heads", min=1, max=1_000_000))
    head_dim: int | None = field(default=None, metadata=doc("head_dim; default hidden / attention_heads", min=1, max=1_000_000))
    activation_peak_gib: float | None = field(
        default=None, metadata=doc("vLLM's measured profiling peak on one GPU in GiB; default kvtui's estimate", min=0.001, max=100_000)
    )
    activation_peak_tokens: int | None = field(
        default=None, metadata=doc("batched tokens the peak was measured at (default 8192)", min=1, max=100_000_000)
    )
    active_params_b: float | None = field(
        default=None, metadata=doc("mixture of experts: parameters (billions) one token computes with; default params_b", min=0.001, max=100_000)
    )
    source: str = field(default="", metadata=doc("where the figures come from"))
    calibrated_from: str = field(default="", metadata=doc("the benchmark report these figures were fitted to, and when (kvtui calibrate)"))


@dataclass(frozen=True)
class Scenario:
    name: str = field(default="scenario", metadata=doc("short name shown in the header"))
    description: str = field(default="", metadata=doc("what this scenario teaches"))
    seed: int = field(default=0, metadata=doc("seed of the one RNG", min=0, max=2**63 - 1))
    model: str = field(default="llama-3.1-8b", metadata=doc("model profile (shipped, or one under `models:`)"))
    hardware: dict[str, HardwareProfile] = field(
        default_factory=dict, metadata=doc("your own GPU profiles, name -> figures (add to or replace the shipped ones)")
    )
    models: dict[str, ModelProfile] = field(
        default_factory=dict, metadata=doc("your own model profiles, name -> figures (add to or replace the shipped ones)")
    )
    profiles: tuple[str, ...] = field(default=(), metadata=doc(
        "profile files (YAML with hardware: / models:, e.g. what `kvtui calibrate --out` writes), relative to the "
        "scenario (to the working directory with --set); their profiles add to the shipped ones, the scenario's own win"))
    cluster: Cluster = field(default_factory=Cluster, metadata=doc("the nodes"))
    latency: Latency = field(default_factory=Latency, metadata=doc("latency model"))
    router: Router = field(default_factory=Router, metadata=doc("routing"))
    workload: Workload = field(default_factory=Workload, metadata=doc("what arrives"))
    events: tuple[ScriptedEvent, ...] = field(default=(), metadata=doc("scripted faults"))
    story: tuple[Chapter, ...] = field(default=(), metadata=doc("what the scenario teaches, in order: chapters at sim times"))
    metadata: Metadata | None = field(
        default=None, metadata=doc("the WAL-backed control-plane store; absent = no store")
    )
    until_s: float | None = field(default=None, metadata=doc("stop the simulation at this sim time", min=0, max=1e9))
