"""DistServe's placement search, colocated against disaggregated, on the same GPUs, as markdown.

Run:  python benchmarks/disagg_study.py

DistServe (Zhong et al., OSDI 2024) compares the *best* disaggregated placement with the *best*
colocated one, per GPU. Its parameters are taken from its own repository, LLMServe/DistServe at
commit 82831f1604cc6b10bebd360f6c437a07790dde9f (nothing here is quoted from memory):

- goodput: the highest per-GPU arrival rate at which >= 90 % of requests meet both the TTFT and
  the TPOT SLO (evaluation/ae-scripts/e2e/_plot.py: `get_attainment` counts a request when
  `ftl <= ttft_slo and tpot <= tpot_slo`, `atta_target` 90; evaluation/2-benchmark-serving/
  structs.py: TPOT = (last token - first token) / (output_len - 1), 0 for one output token);
- the chatbot workload of its Figure 8: OPT-13B on ShareGPT, TTFT SLO 0.25 s and TPOT SLO 0.1 s
  (_plot.py `plot_fig8_upper`, "opt-13b-sharegpt", 0.25, 0.1, 90);
- the cluster: one node of 4 x A100-80GB SXM (simdistserve/README.md, whose expected result for
  this workload is "Best per GPU rate: 1.56", "tp_prefill=2, pp_prefill=1, tp_decode=1" with a
  200 ms prefill and 100 ms decode target at 90 % each, 300 requests);
- the search: every (prefill TP, decode TP) whose GPUs fit the node (simdistserve/benchmarks/
  search_configs.py `get_distserve_configs`), each bisected for its highest per-GPU rate
  (search_binary.py `run_binary_search`, bounded by `max_per_gpu_rate`, stopping at `esp`);
  its vLLM baseline searched the same way over (tp, pp);
- the engines' limits (evaluation/2-benchmark-serving/2-start-api-server.py): vLLM with block
  16, --gpu-memory-utilization 0.95, --max-num-batched-tokens 16384, --max-num-seqs 1024 (vLLM of
  that time: no chunked prefill); DistServe's context stage --context-max-tokens-per-batch 8192,
  --context-max-batch-size 128, decoding stage --decoding-max-batch-size 1024.

kvtui's search is the same on 4 GPUs, widened to several instances per pool as DistServe's
paper places them: colocated, n instances of TP t (`load_prefix` routes; every node serves both
phases); disaggregated, nP prefill instances of TP tp and nD decode instances of TP td
(`llm_d_pd` routes; KV over NVLink, one host), every combination with nP*tp + nD*td <= 4 GPUs.
Each placement's per-GPU goodput is bisected on seeded Poisson runs of the scenario's 30 s of
arrivals (not DistServe's 300 requests: on these lengths kvtui's placements serve about ten times
the 1.56 req/s per GPU DistServe's simulator expects on its data, so 300 requests would arrive in
a few seconds, a burst the run drains with no steady state; measured, a 300-request bisection
let four colocated placements reach the search's upper bound, 32 req/s per GPU).

What kvtui cannot take from DistServe: its ShareGPT file (DistServe's 0-prepare-dataset.py joins
a random number of earlier turns into each prompt, so its prompts are longer than a first turn;
no copy is stored here). The chatbot lengths are scenarios/sharegpt.yaml's single-turn ones
(lognormal, means 161 and 338), clipped as DistServe prunes (prompt + output < 2048). The second
workload is the shipped scenario's own: long prompts, short answers, kvtui's SLOs.
"""

from __future__ import annotations

import argparse
import functools
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from kvtui.events import KVTransferDone, RequestCompleted  # noqa: E402
from kvtui.scenario import load_scenario  # noqa: E402
from kvtui.scenario.plan import node_plans  # noqa: E402
from kvtui.sim.deployment import build_latency  # noqa: E402
from kvtui.sim.engine import Simulation  # noqa: E402
from kvtui.sim.latency import Batch, prefill_seconds  # noqa: E402

GPUS = 4  # simdistserve/README.md: one node, 4 x A100-80GB
TARGET = 0.9  # _plot.py atta_target 90
MAX_PER_GPU_RATE = 32.0  # the bisection's upper bound (search_binary.py max_per_gpu_rate)
ESP = 0.25  # bisection stops when high - low < ESP (search_binary.py esp; simdistserve/README.md --esp 0.25)
TPS = (1, 2, 4)  # OPT-13B's 40 heads split over 1, 2 or 4 GPUs
VLLM = "chunked_prefill: false, gpu_memory_utilization: 0.95, max_num_batched_tokens: 16384, max_num_seqs: 1024"
PREFILL = "chunked_prefill: false, gpu_memory_utilization: 0.95, max_num_batched_tokens: 8192, max_num_seqs: 128"
# DistServe's fit of vLLM on one A100-80GB for OPT-13B, TP 1, in ms (simdistserve/estimators/
# profile_data/profiler-a100-80g.vllm.json, "facebook/opt-13b" "1"; time_estimator.py applies it):
# prefill a + b x tokens + c x sum(len^2); decode a + b x sum(context + 1) + c x batch, with the
# "decoding_smallbs" fit below 95 requests and "decoding_largebs" from 95 on.
DISTSERVE_VLLM_PREFILL = (22.052204789310185, 0.14050923870128956, 8.076584822611088e-06)
DISTSERVE_VLLM_DECODE_SMALL = (23.475041008414784, 0.000592934466077393, 0.060726861260369455)
DISTSERVE_VLLM_DECODE_LARGE = (20.206356173691958, 0.0004907727036234946, 0.1200031385587413)
DECODE = "chunked_prefill: false, gpu_memory_utilization: 0.95, max_num_batched_tokens: 65536, max_num_seqs: 1024"
WORKLOADS = (
    ("DistServe's chatbot: OPT-13B, ShareGPT-like lengths, TTFT 250 ms / TPOT 100 ms (its Figure 8)", (
        "workload.groups.0.question_tokens={dist: lognormal, mean: 161, sigma: 1.0, min: 4, max: 1024}",
        "workload.groups.0.output_tokens={dist: lognormal, mean: 338, sigma: 1.0, min: 4, max: 1023}",
        "workload.groups.0.slo={ttft_ms: 250, tpot_ms: 100}",
    )),
    ("the shipped scenario's long prompts, TTFT 1 s / TPOT 50 ms (kvtui's SLOs)", ()),
)


@dataclass(frozen=True)
class Placement:
    """Instances on the GPUs: colocated (`decode` empty) or prefill + decode pools."""

    prefill: tuple[int, int]  # (instances, TP); colocated: the instances serving both phases
    decode: tuple[int, int] | None = None

    @property
    def gpus(self) -> int:
        return sum(n * tp for n, tp in (self.prefill, self.decode or (0, 0)))

    @property
    def policy(self) -> str:
        return "llm_d_pd" if self.decode else "load_prefix"

    def label(self) -> str:
        (n, tp), d = self.prefill, self.decode
        return f"{n}P x TP{tp} + {d[0]}D x TP{d[1]}" if d else f"{n} x TP{tp}"

    def nodes(self) -> str:
        """The scenario's `cluster.nodes`, as an override value."""
        if not self.decode:
            return _pool("c", "both", *self.prefill, VLLM)
        return _pool("p", "prefill", *self.prefill, PREFILL) + ", " + _pool("d", "decode", *self.decode, DECODE)


def _pool(prefix: str, role: str, count: int, tp: int, limits: str) -> str:
    return ", ".join(f"{{name: {prefix}{i}, role: {role}, tensor_parallel: {tp}, host: node-1, {limits}}}"
                     for i in range(count))


def placements() -> tuple[list[Placement], list[Placement]]:
    """Every colocated and every disaggregated placement that fits GPUS."""
    shapes = [(n, tp) for tp in TPS for n in range(1, GPUS // tp + 1)]
    colocated = [Placement(s) for s in shapes]
    split = [Placement(p, d) for p in shapes for d in shapes if Placement(p, d).gpus <= GPUS]
    return colocated, split


def attainment(path: Path, case: tuple[str, ...], placement: Placement, per_gpu_rate: float, count: int = 0) -> float:
    """Share of the arrivals at `per_gpu_rate` x GPUs, over the scenario's 30 s, within both SLOs
    (count 0: as kvtui and vLLM's connector count TTFT; 3: as DistServe counts it)."""
    return attainments(path, case, placement, per_gpu_rate)[count]


@functools.cache
def attainments(path: Path, case: tuple[str, ...], placement: Placement, per_gpu_rate: float) -> tuple[float, ...]:
    """Shares of the arrivals within both SLOs, within the TTFT SLO, within the TPOT SLO, and
    within both as DistServe counts them (`distserve_latencies`)."""
    sets = [*case, f"workload.arrival.rate={per_gpu_rate * placement.gpus}", f"cluster.nodes=[{placement.nodes()}]"]
    sim = Simulation(load_scenario(path, sets), policy=placement.policy)
    done: list[RequestCompleted] = []
    prefilled: dict[str, float] = {}
    sim.subscribe(done.append, (RequestCompleted,))
    sim.subscribe(lambda e: prefilled.__setitem__(e.request, e.t - e.waited_s), (KVTransferDone,))
    sim.run()
    ttft = [e.ttft <= e.slo_ttft for e in done]
    tpot = [e.output_tokens <= 1 or e.tpot <= e.slo_tpot for e in done]
    theirs = [within(e, *distserve_latencies(e, prefilled.get(e.request))) for e in done]
    met = (sum(a and b for a, b in zip(ttft, tpot)), sum(ttft), sum(tpot), sum(theirs))
    return tuple(m / sim.metrics.arrived if sim.metrics.arrived else 0.0 for m in met)


def distserve_latencies(e: RequestCompleted, prefill_end: float | None) -> tuple[float, float]:
    """(TTFT, TPOT) with the first token at the end of the prefill, as DistServe's prefill
    instance returns it (distserve/single_stage_engine.py: ContextStageLLMEngine emits the
    StepOutput of the prompt's token); the handoff then
    falls into TPOT = (last - first) / (output - 1) (structs.py). Colocated: kvtui's own."""
    if prefill_end is None:
        return e.ttft, e.tpot
    arrival = e.t - e.e2e
    ttft = prefill_end - arrival
    return ttft, (e.e2e - ttft) / (e.output_tokens - 1) if e.output_tokens > 1 else 0.0


def within(e: RequestCompleted, ttft: float, tpot: float) -> bool:
    return ttft <= e.slo_ttft and (e.output_tokens <= 1 or tpot <= e.slo_tpot)


def goodput(path: Path, case: tuple[str, ...], placement: Placement, count: int = 0) -> float:
    """The highest per-GPU rate meeting TARGET, bisected as DistServe's run_binary_search does."""
    low, high = 0.0, MAX_PER_GPU_RATE
    while high - low >= ESP:
        mid = (low + high) / 2
        low, high = (mid, high) if attainment(path, case, placement, mid, count) >= TARGET else (low, mid)
    return low


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--scenario", default=str(ROOT / "scenarios" / "disaggregation.yaml"))
    path = Path(p.parse_args(argv).scenario)
    step_times(path)
    for title, case in WORKLOADS:
        print(f"**{title}**\n")
        study(path, case)
        print()
    return 0


def distserve_prefill_ms(tokens: int) -> float:
    a, b, c = DISTSERVE_VLLM_PREFILL
    return a + b * tokens + c * tokens**2


def distserve_decode_ms(batch: int, context: int) -> float:
    a, b, c = DISTSERVE_VLLM_DECODE_SMALL if batch < 95 else DISTSERVE_VLLM_DECODE_LARGE
    return a + b * batch * (context + 1) + c * batch


def step_times(path: Path) -> None:
    """kvtui's iteration times for OPT-13B on one A100 beside DistServe's profile of vLLM there."""
    one_gpu = load_scenario(path, ["cluster.nodes=[{name: c0, tensor_parallel: 1}]", "router.policy=load_prefix"])
    model = build_latency(one_gpu, node_plans(one_gpu)[0])
    print("Iteration times, OPT-13B on one A100-80GB (ms): kvtui's roofline beside DistServe's fit of vLLM\n")
    print("| iteration | kvtui | DistServe's vLLM profile | DistServe / kvtui |")
    print("|---|---|---|---|")
    for tokens in (161, 1500):
        k, d = 1000 * prefill_seconds(model, tokens, 0), distserve_prefill_ms(tokens)
        print(f"| prefill of one {tokens}-token prompt | {k:.1f} | {d:.1f} | {d / k:.1f}x |")
    for batch, context in ((1, 500), (64, 500), (256, 500)):
        k = 1000 * model.iteration(Batch(decode_seqs=batch, decode_context=batch * context, tokens_out=batch))
        d = distserve_decode_ms(batch, context)
        print(f"| decode step of {batch} x {context}-token contexts | {k:.1f} | {d:.1f} | {d / k:.1f}x |")
    print()


def study(path: Path, case: tuple[str, ...]) -> None:
    colocated, split = placements()
    found = {pl: goodput(path, case, pl) for pl in (*colocated, *split)}
    theirs = {pl: goodput(path, case, pl, 3) for pl in split}
    print(f"Per-GPU goodput (req/s per GPU, >= {100 * TARGET:.0f} % within both SLOs) of every placement on {GPUS} GPUs;")
    print("the last column counts a disaggregated request's first token at the end of its prefill, as DistServe does:\n")
    print("| placement | GPUs | per-GPU goodput | first token at prefill end |")
    print("|---|---|---|---|")
    for pl, g in sorted(found.items(), key=lambda kv: -kv[1]):
        print(f"| {pl.label()} | {pl.gpus} | {g:.2f} | {theirs[pl]:.2f} |" if pl in theirs else f"| {pl.label()} | {pl.gpus} | {g:.2f} | = |")
    best_c = max(colocated, key=found.__getitem__)
    best_s, best_t = max(split, key=found.__getitem__), max(split, key=theirs.__getitem__)
    print(f"\nBest colocated, {best_c.label()}: {found[best_c]:.2f}. Best disaggregated, {best_s.label()}: "
          f"{found[best_s]:.2f}, gain {ratio(found[best_s], found[best_c])}; counted as DistServe does, "
          f"{best_t.label()}: {theirs[best_t]:.2f}, gain {ratio(theirs[best_t], found[best_c])}.\n")
    print(f"What binds each best placement, one bisection step ({ESP:g} req/s per GPU) above its goodput:\n")
    print("| placement | per-GPU rate | both SLOs met | TTFT met | TPOT met | both, first token at prefill end |")
    print("|---|---|---|---|---|---|")
    for pl in (best_c, best_s):
        rate = found[pl] + ESP
        met = attainments(path, case, pl, rate)
        print(f"| {pl.label()} | {rate:.2f} | " + " | ".join(f"{100 * m:.0f} %" for m in met) + " |")


def ratio(a: float, b: float) -> str:
    return f"{a / b:.2f}x" if b else "—"


if __name__ == "__main__":
    raise SystemExit(main())
