"""Splitwise's comparison in kvtui: Splitwise-HH against Baseline-H100 on Azure's traces, as markdown.

Run:  python benchmarks/splitwise_study.py [--machines N] [--requests N]

Splitwise (Patel et al., "Splitwise: Efficient Generative LLM Inference Using Phase Splitting",
ISCA 2024) splits each request's prompt phase and token phase over two pools of DGX machines and
sizes the pools by simulation. Its simulator is public, Mutinifni/splitwise-sim at commit
8f99e7dc9b407f4ce2488d03dd44c0b8b946dab0; every parameter below is read from that commit
(nothing is quoted from memory):

- the systems: Baseline-H100 is DGX-H100 machines each serving both phases
  (configs/start_state/baseline.yaml: one instance of tensor parallelism 8 per machine,
  max_batch_size 512, max_batch_tokens 2048; scheduler token_jsq, the machine with the fewest
  pending tokens: scheduler.py TokenJSQScheduler); Splitwise-HH is the same machines split into
  a prompt and a token pool (configs/start_state/splitwise.yaml, split_type homogeneous;
  scheduler mixed_pool: the prompt machine with the fewest pending tokens, the token machine
  with the least memory booked, KV shipped between them: scheduler.py MixedPoolScheduler);
- the machines: 8 x H100-80GB (configs/hardware_repo/skus/dgx-h100.yaml);
- the SLOs: nine, each a percentile of a request's slowdown against the same request alone on
  a DGX-A100 (notebooks/plots.ipynb `get_slo` and `get_data`, notebooks/perf_model.py
  `add_baseline_perf` with hardware a100-80gb, tensor parallelism 8): TTFT p50 < 2, p90 < 3,
  p99 < 6; TBT and E2E p50 < 1.25, p90 < 1.5, p99 < 5. TBT is (E2E - TTFT) / output tokens
  (scheduler.py `get_results`); the unloaded E2E is TTFT + TBT x (output - 1);
- the search: a system's throughput is the highest request rate at which every SLO holds
  (notebooks/utils.py `find_within_slo`, `find_max_throughput`); Splitwise-HH is searched over
  its prompt:token split (configs/experiment/splitwise_hh_isopower.yaml sweeps the token
  machines of 40 over range(5, 40, 5)); iso-count here: both systems get the same machines.

The comparison kvtui can express with its own parameters is that one: Splitwise-HH against
Baseline-H100 on the same number of DGX-H100s, on the coding and the conversation traces, each
system's best throughput within all nine SLOs. kvtui's pieces: `least_loaded` for the baseline
(fewest active requests: kvtui has no pending-token JSQ), `llm_d_pd` for the split (queue and KV
scorers per pool: with no shared prefixes in these traces its prefix scorer is zero everywhere),
Llama-3.1-70B's shape (80 layers, hidden 8192, 8 KV heads) for Splitwise's Llama2-70B (80
layers, hidden 8192: configs/model_repo/architectures/llama2-70b.yaml), KV over the H100's RDMA
cards between machines.

Scaled down to keep the study to a few CPU minutes: MACHINES DGX-H100s rather than Splitwise's
40, and the lengths of the first REQUESTS requests of each trace (Azure/AzurePublicDataset's 2023
traces, the ones the Splitwise authors released), in order, arriving as a seeded Poisson process
at each rate, as splitwise-sim's generate_trace.py makes its traces (exponential gaps; it also
resamples the lengths, with replacement). The recorded arrivals are not used: the coding trace's
first requests come in bursts (gaps with a coefficient of variation near 12) that no system here
absorbs at any rate. benchmarks/splitwise_sim_check.py replays this very slice through
splitwise-sim.

Two prefill regimes, because kvtui cannot take Splitwise's exactly: splitwise-sim never chunks a
prompt, caps a batch at 2,048 tokens but lets one longer prompt run alone (instance.py
SplitwiseInstance.select_batch). kvtui's "whole prefills" never chunk either, but a
non-chunked iteration must hold the longest request (vLLM's rule), so its budget is 16,384 tokens
and several prompts can share one long iteration; "chunked 2,048" keeps every iteration at
2,048 tokens by splitting long prompts, as vLLM's chunked prefill does.
"""

from __future__ import annotations

import argparse
import functools
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from kvtui.events import RequestCompleted  # noqa: E402
from kvtui.scenario import load_scenario  # noqa: E402
from kvtui.scenario.plan import node_plans  # noqa: E402
from kvtui.sim.deployment import build_latency  # noqa: E402
from kvtui.sim.engine import Simulation  # noqa: E402
from kvtui.sim.latency import Batch, prefill_seconds  # noqa: E402
from kvtui.sim.workload.trace import line_reader, selected  # noqa: E402

TRACES = {"coding": "azure-code.yaml", "conversation": "azure-conv.yaml"}
MACHINES = 6
REQUESTS = 1000
MODEL = "llama-3.1-70b"
TP = 8  # a DGX machine is one instance of tensor parallelism 8 (start_state/*.yaml)
MAX_PER_MACHINE = 16.0  # the rate search's upper bound, req/s per machine
SEED = 0  # the arrivals' seed (splitwise-sim's run.py default seed)
EPOCH = datetime(2023, 11, 16)
WORKDIR = tempfile.TemporaryDirectory(prefix="kvtui-splitwise-")
STEP = 0.25  # its resolution: splitwise-sim's traces step by 10 req/s on 40 machines
# (percentile, TTFT, TBT, E2E slowdown bounds): notebooks/plots.ipynb get_slo
SLOS = ((50, 2.0, 1.25, 1.25), (90, 3.0, 1.5, 1.5), (99, 6.0, 5.0, 5.0))
REGIMES = {
    "whole prefills": "chunked_prefill: false, max_num_batched_tokens: 16384",
    "chunked 2,048": "chunked_prefill: true, max_num_batched_tokens: 2048",
}
# Splitwise's own measurements, Llama2-70B on a DGX (tensor parallelism 8), batch 1, medians in
# ms of data/perf_model.csv at the commit above: {hardware: {prompt tokens: (prompt, per token)}}
SPLITWISE_DB = {
    "h100-80gb": {512: (53.86, 30.56), 2048: (136.8, 31.05), 8192: (844.89, 31.41)},
    "a100-80gb": {512: (93.02, 45.03), 2048: (274.22, 45.44), 8192: (1549.82, 46.51)},
}


@dataclass(frozen=True)
class Cluster:
    """MACHINES DGX-H100s: all colocated (prompt 0) or `prompt` of them prefilling, the rest decoding."""

    machines: int
    prompt: int = 0

    @property
    def policy(self) -> str:
        return "llm_d_pd" if self.prompt else "least_loaded"

    def label(self) -> str:
        if not self.prompt:
            return f"Baseline-H100 ({self.machines})"
        return f"Splitwise-HH ({self.prompt}P, {self.machines - self.prompt}T)"

    def nodes(self, regime: str) -> str:
        """The scenario's `cluster.nodes`, as an override value."""
        limits = f"tensor_parallel: {TP}, max_num_seqs: 512, {REGIMES[regime]}"
        roles = ["both"] * self.machines if not self.prompt else (
            ["prefill"] * self.prompt + ["decode"] * (self.machines - self.prompt))
        return ", ".join(f"{{name: m{i}, role: {r}, {limits}}}" for i, r in enumerate(roles))


def scenario_path(trace: str) -> Path:
    return ROOT / "scenarios" / TRACES[trace]


@functools.cache
def poisson_slice(trace: str, requests: int) -> tuple[tuple[float, int, int], ...]:
    """(arrival s, prompt, output) of the first `requests` requests, their lengths in the trace's
    order, arriving as a Poisson process of 1 req/s (seeded): splitwise-sim's generate_trace.py
    likewise draws exponential gaps (it resamples the lengths instead of keeping their order)."""
    sc = load_scenario(scenario_path(trace))
    records = list(selected(line_reader(sc.workload.trace).records(), 0.0, requests))
    gaps = np.random.default_rng(SEED).exponential(1.0, len(records))
    gaps[0] = 0.0
    return tuple((float(t), rec.prompt, rec.output) for t, rec in zip(np.cumsum(gaps), records))


@functools.cache
def slice_file(trace: str, requests: int) -> Path:
    """The slice in the Azure trace's own CSV format, for kvtui's reader."""
    path = Path(WORKDIR.name) / f"{trace}-{requests}.csv"
    with path.open("w") as f:
        f.write("TIMESTAMP,ContextTokens,GeneratedTokens\n")
        for t, prompt, output in poisson_slice(trace, requests):
            f.write(f"{(EPOCH + timedelta(seconds=t)).isoformat(sep=' ')},{prompt},{output}\n")
    return path


def trace_sets(trace: str, requests: int, rate: float) -> list[str]:
    """Overrides replaying the slice at `rate` req/s on Llama-70B."""
    return [f"model={MODEL}", f"workload.trace.path={slice_file(trace, requests)}",
            f"workload.trace.time_scale={1 / rate:.9g}"]


@functools.cache
def run(trace: str, requests: int, cluster: Cluster, regime: str, rate: float) -> tuple[RequestCompleted, ...] | None:
    """The completed requests of one run; None when any was rejected or left unfinished."""
    sets = [*trace_sets(trace, requests, rate), f"router.policy={cluster.policy}",
            f"cluster.nodes=[{cluster.nodes(regime)}]"]
    sim = Simulation(load_scenario(scenario_path(trace), sets), policy=cluster.policy)
    done: list[RequestCompleted] = []
    sim.subscribe(done.append, (RequestCompleted,))
    sim.run()
    return tuple(done) if len(done) == sim.metrics.arrived else None


@functools.cache
def a100_model():
    """kvtui's latency model of one DGX-A100 (tensor parallelism 8): Splitwise's yardstick."""
    sc = load_scenario(scenario_path("coding"), [f"model={MODEL}", "cluster.hardware=a100-80gb",
                                                 f"cluster.nodes=[{{name: a, tensor_parallel: {TP}}}]"])
    return build_latency(sc, node_plans(sc)[0])


@functools.cache
def alone(prompt: int) -> tuple[float, float]:
    """(TTFT, TBT) of a request with this prompt alone on a DGX-A100, in kvtui's model."""
    model = a100_model()
    return prefill_seconds(model, prompt, 0), model.iteration(Batch(decode_seqs=1, decode_context=prompt, tokens_out=1))


def slowdowns(prompt, output, ttft, e2e, alone_ttft, alone_tbt) -> dict[str, np.ndarray]:
    """Each request's TTFT, TBT and E2E over its unloaded ones (notebooks/plots.ipynb get_data);
    arrays of seconds and tokens, one entry a request."""
    out = np.maximum(output, 1)
    return {"TTFT": ttft / alone_ttft, "TBT": (e2e - ttft) / out / alone_tbt,
            "E2E": e2e / (alone_ttft + alone_tbt * (out - 1))}


def missed(slow: dict[str, np.ndarray]) -> list[str]:
    """The SLOs these slowdowns miss."""
    return [f"{name} p{q}" for q, *bounds in SLOS for name, bound in zip(("TTFT", "TBT", "E2E"), bounds)
            if np.percentile(slow[name], q) >= bound]


def misses(done: tuple[RequestCompleted, ...] | None) -> list[str]:
    """The SLOs a kvtui run misses ("unfinished" when requests were rejected or left over)."""
    if done is None:
        return ["unfinished"]
    base = np.array([alone(e.prompt_tokens) for e in done])
    cols = np.array([(e.prompt_tokens, e.output_tokens, e.ttft, e.e2e) for e in done]).T
    return missed(slowdowns(*cols, base[:, 0], base[:, 1]))


def search(meets: Callable[[float], bool], machines: int) -> float:
    """The highest rate (req/s, a multiple of STEP x machines) at which `meets`, bisected."""
    unit = STEP * machines
    low, high = 0, round(MAX_PER_MACHINE / STEP)
    while high - low > 1:
        mid = (low + high) // 2
        low, high = (mid, high) if meets(mid * unit) else (low, mid)
    return low * unit


def throughput(trace: str, requests: int, cluster: Cluster, regime: str) -> float:
    """kvtui's highest rate within every SLO."""
    return search(lambda rate: not misses(run(trace, requests, cluster, regime, rate)), cluster.machines)


def step_times() -> None:
    """kvtui's iteration times for the 70B model on a DGX beside Splitwise's measurements."""
    print("Iteration times, a 70B model on one DGX (tensor parallelism 8), batch 1, ms: kvtui's roofline beside")
    print("Splitwise's measurements of Llama2-70B (splitwise-sim data/perf_model.csv, medians)\n")
    print("| DGX | prompt tokens | prompt: kvtui | prompt: Splitwise | per output token: kvtui | per output token: Splitwise |")
    print("|---|---|---|---|---|---|")
    for hw, rows in SPLITWISE_DB.items():
        sc = load_scenario(scenario_path("coding"), [f"model={MODEL}", f"cluster.hardware={hw}",
                                                     f"cluster.nodes=[{{name: a, tensor_parallel: {TP}}}]"])
        model = build_latency(sc, node_plans(sc)[0])
        for prompt, (p_ms, t_ms) in rows.items():
            k_p = 1000 * prefill_seconds(model, prompt, 0)
            k_t = 1000 * model.iteration(Batch(decode_seqs=1, decode_context=prompt, tokens_out=1))
            print(f"| {hw.split('-')[0].upper()} | {prompt} | {k_p:.1f} | {p_ms:.1f} | {k_t:.1f} | {t_ms:.1f} |")
    print()


def study(trace: str, requests: int, machines: int) -> None:
    """Every system's throughput within the SLOs, per prefill regime, and the best split's gain."""
    clusters = [Cluster(machines)] + [Cluster(machines, p) for p in range(1, machines)]
    found = {(c, r): throughput(trace, requests, c, r) for r in REGIMES for c in clusters}
    print(f"Highest rate (req/s) within all nine SLOs, {machines} DGX-H100s, the first {requests:,} requests:\n")
    print("| system | " + " | ".join(REGIMES) + " |")
    print("|---|" + "---|" * len(REGIMES))
    for c in clusters:
        print(f"| {c.label()} | " + " | ".join(f"{found[c, r]:g}" for r in REGIMES) + " |")
    print()
    for r in REGIMES:
        base, best = found[clusters[0], r], max(clusters[1:], key=lambda c: found[c, r])
        gain = f"{found[best, r] / base:.2f}x" if base else "—"
        print(f"- {r}: Baseline-H100 {base:g} req/s; best split {best.label()} {found[best, r]:g} req/s, {gain}; "
              f"one step above, the baseline misses {', '.join(binds(trace, requests, clusters[0], r, base))}, "
              f"the split {', '.join(binds(trace, requests, best, r, found[best, r]))}.")
    print()


def binds(trace: str, requests: int, cluster: Cluster, regime: str, rate: float) -> list[str]:
    """What a system misses one search step above its throughput."""
    return misses(run(trace, requests, cluster, regime, rate + STEP * cluster.machines)) or ["nothing"]


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--machines", type=int, default=MACHINES, help="DGX-H100s in each system")
    p.add_argument("--requests", type=int, default=REQUESTS, help="requests from the start of each trace")
    args = p.parse_args(argv)
    step_times()
    for trace in TRACES:
        print(f"**The {trace} trace**\n")
        study(trace, args.requests, args.machines)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
