"""A report's workload and serving settings as kvtui scenarios, one per stage.

inference-perf's shared_prefix maps one to one onto `workload.shared_prefix` (groups x users,
lengths, multi-turn); the other reports give length distributions and a rate or a concurrency
(`workload.groups` with one group of single-turn sessions). The report names the engine's
settings (TP, max_num_seqs, max_num_batched_tokens, KV blocks); what it lacks comes from the
base scenario (`--scenario`, `--set`). The knobs live in a hardware profile of the scenario's
own (`<hardware>-calibrated`), built from the cluster's hardware, so the fitted profile is
exactly what the fit simulated.

Each stage is simulated only as long as its percentiles need: a warm-up (every shared-prefix user
once, so the prefix cache is as warm as in a long run, plus two end-to-end latencies so the batch
fills) that is not measured, then a window of about `target` requests, then a tail of two
end-to-end latencies so the last measured requests finish under load.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from importlib import resources

from kvtui.calibrate.hf_config import slug
from kvtui.calibrate.knobs import Knob, hardware_figures, knobs_for
from kvtui.calibrate.report import Report, Stage
from kvtui.errors import InputError
from kvtui.scenario.loader import load_scenario
from kvtui.scenario.model import Arrival, Dist, HardwareProfile, ModelProfile, PrefixGroup, Scenario, fixed
from kvtui.scenario.serving import profile_catalog

MEASURED_REQUESTS = 800  # per stage: p50 and p90 move by ~1-2 % between seeds at this size


@dataclass(frozen=True)
class Setup:
    """The scenario every stage starts from, and the knobs to fit with their starting values."""

    scenario: Scenario
    hardware: str  # the calibrated profile's name
    figures: dict  # its other figures
    knobs: tuple[Knob, ...]
    start: dict[str, float]  # the profile's values (or the base scenario's `latency:`)
    model: str
    tp: int


def base_scenario(path: str | None, sets: list[str]) -> Scenario:
    if path is None:
        with resources.as_file(resources.files("kvtui.calibrate").joinpath("base.yaml")) as f:
            return load_scenario(f, sets)
    return load_scenario(path, sets)


def prepare(report: Report, base: Scenario, model_given: bool) -> Setup:
    """The base scenario with the report's model and engine settings, and the knobs' start."""
    s = base
    model = _model(report, base, model_given)
    if report.model_figures is not None:
        s = replace(s, models={**s.models, model: ModelProfile(**report.model_figures)})
    s = replace(s, model=model)
    sv = report.serving
    node = s.cluster.nodes[0]
    node = replace(node, tensor_parallel=None,
                   max_num_seqs=sv.max_num_seqs or node.max_num_seqs,
                   max_num_batched_tokens=sv.max_num_batched_tokens or node.max_num_batched_tokens,
                   kv_blocks=sv.kv_blocks or node.kv_blocks,
                   gpu_memory_utilization=sv.gpu_memory_utilization or node.gpu_memory_utilization)
    tp = sv.tp or s.cluster.tensor_parallel
    cluster = replace(s.cluster, nodes=(node,), tensor_parallel=tp, block_size=sv.block_size or s.cluster.block_size)
    hardware, _ = profile_catalog(s)
    hw = hardware.get(node.hardware or s.cluster.hardware)
    if hw is None:
        raise InputError.one("--scenario", None, f"hardware {s.cluster.hardware!r} is not a profile")
    lat = s.latency
    if lat.model != "roofline":
        raise InputError.one("--scenario", None, "latency.model must be roofline to calibrate (the linear model has no physics)")
    starts = {"compute_efficiency": lat.compute_efficiency, "memory_efficiency": lat.memory_efficiency,
              "iteration_overhead_us": None if lat.iteration_overhead_ms is None else lat.iteration_overhead_ms * 1000,
              "request_overhead_ms": lat.request_overhead_ms, "output_lag_steps": lat.output_lag_steps}
    knobs = knobs_for(tp)
    start = {k.name: min(k.high, max(k.low, _given(starts.get(k.name), k.of(hw)))) for k in knobs}
    name = f"{hw.name}-calibrated"
    figures = hardware_figures(hw)
    s = replace(s, cluster=replace(cluster, hardware=name, nodes=(replace(node, hardware=None),)),
                latency=replace(lat, compute_efficiency=None, memory_efficiency=None, iteration_overhead_ms=None,
                                request_overhead_ms=None, output_lag_steps=None),
                router=replace(s.router, policy="round_robin", routing_overhead_ms=0.0), events=(), metadata=None, story=())
    return Setup(s, name, figures, knobs, start, model, tp)


def _given(value: float | None, default: float) -> float:
    return float(default if value is None else value)


def _model(report: Report, base: Scenario, model_given: bool) -> str:
    if report.model_figures is not None:
        return slug(report.serving.model or "model")
    _, models = profile_catalog(base)
    if model_given or not report.serving.model:
        return base.model
    name = slug(report.serving.model)
    for known in models:
        if known == name or name.startswith(known + "-"):
            return known
    raise InputError.one(report.path, None, f"the report's model {report.serving.model!r} is not a kvtui profile "
                         f"({', '.join(models)}): put its config.json beside the report, or name one with --set model=NAME")


def with_knobs(setup: Setup, values: dict[str, float]) -> Scenario:
    """The setup's scenario with its calibrated hardware profile at these knob values."""
    figures = {**setup.figures, **values, "source": "kvtui calibrate"}
    return replace(setup.scenario, hardware={**setup.scenario.hardware, setup.hardware: HardwareProfile(**figures)})


@dataclass(frozen=True)
class StageRun:
    """One stage as a scenario, and the arrivals it measures: [start, end) in sim seconds."""

    scenario: Scenario
    start: float
    end: float


def stage_run(report: Report, stage: Stage, scenario: Scenario, target: int = MEASURED_REQUESTS) -> StageRun:
    """The stage's load on `scenario`, simulated only as long as its percentiles need."""
    e2e = stage.measured.get("e2e", {}).get("p90") or stage.measured.get("ttft", {}).get("p90", 1.0)
    sp = report.shared_prefix
    users = sp.num_groups * sp.num_prompts_per_group if sp is not None else 0
    if stage.rate is not None:
        rate = stage.rate
        warm = users / rate + 2 * e2e
        window = max(10.0, target / rate)
        if stage.duration_s:
            window = min(window, stage.duration_s)
        arrival = replace(scenario.workload.arrival, process="gamma" if report.arrival == "constant" else "poisson",
                          rate=rate, burstiness=0.01, schedule=())
        workload = replace(scenario.workload, arrival=arrival, duration_s=warm + window, requests=None, sessions=None)
    else:
        c = stage.concurrency or 1
        per = e2e  # one user sends about one request per end-to-end latency
        warm = max(users, 2 * c) * per / c + 2 * e2e
        window = max(10.0 * per, target * per / c)
        arrival = Arrival(process="closed_loop", users=c)
        workload = replace(scenario.workload, arrival=arrival, duration_s=warm + window, requests=None, sessions=None)
    if sp is not None:
        if sp.multi_turn and report.serving.max_model_len and sp.max_context_tokens is None:
            sp = replace(sp, max_context_tokens=report.serving.max_model_len)  # inference-perf trims history to it
        workload = replace(workload, shared_prefix=sp, trace=None)
    else:
        workload = replace(workload, shared_prefix=None, trace=None, groups=(_group(report),))
    return StageRun(replace(scenario, workload=workload), warm, warm + window)


def _group(report: Report) -> PrefixGroup:
    """Single-turn sessions with the report's length distributions (no shared prefix)."""
    return PrefixGroup(name="report", question_tokens=_dist(report.prompt, 1), output_tokens=_dist(report.output, 1))


def _dist(lengths, minimum: int) -> Dist:
    if lengths is None:
        return fixed(128)
    if lengths.std <= 0:
        return fixed(max(minimum, round(lengths.mean)))
    return Dist(dist="normal", mean=lengths.mean, std=lengths.std, min=max(minimum, lengths.low or minimum),
                max=lengths.high if lengths.high is not None else lengths.mean + 4 * lengths.std)

