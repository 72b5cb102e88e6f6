"""How a scenario's node is served: its hardware, tensor-parallel degree and KV dtype.

A node's own setting wins, else the cluster's default. Shared by the loader (fit check) and
the engine's deployment (latency model, KV capacity), so both read a node the same way.
"""

from __future__ import annotations

from dataclasses import dataclass

from kvtui.profiles import Hardware, Model, catalog
from kvtui.scenario.model import NodeSpec, Scenario


@dataclass(frozen=True)
class NodeServing:
    hardware: str  # profile name
    tp: int  # GPUs in the node's tensor-parallel group
    kv_dtype: str  # "bf16" or "fp8"


def node_serving(scenario: Scenario, spec: NodeSpec) -> NodeServing:
    """The node's effective hardware, TP degree and KV dtype (node setting, else cluster's)."""
    cluster = scenario.cluster
    return NodeServing(
        hardware=spec.hardware or cluster.hardware,
        tp=spec.tensor_parallel or cluster.tensor_parallel,
        kv_dtype=spec.kv_cache_dtype or cluster.kv_cache_dtype,
    )


def profile_catalog(scenario: Scenario) -> tuple[dict[str, Hardware], dict[str, Model]]:
    """The shipped profiles with the scenario's own `hardware:` / `models:` on top."""
    return catalog(scenario.hardware, scenario.models)


def iteration_overhead_s(scenario: Scenario, hw: Hardware) -> float:
    """The fixed CPU cost of one scheduler iteration: the scenario's `latency:`, else the
    hardware profile's (a calibrated profile carries its own: `kvtui calibrate`)."""
    ms = scenario.latency.iteration_overhead_ms
    return hw.iteration_overhead_s if ms is None else ms / 1000.0


def output_lag_steps(scenario: Scenario, hw: Hardware) -> float:
    """Steps a token takes to reach the client: the scenario's `latency:`, else the profile's."""
    lag = scenario.latency.output_lag_steps
    return hw.output_lag_steps if lag is None else lag


def request_overhead_s(scenario: Scenario) -> float:
    """The API server's cost per request before scheduling: the scenario's `latency:`, else the
    cluster's hardware profile's (0 for the shipped ones)."""
    ms = scenario.latency.request_overhead_ms
    if ms is not None or scenario.latency.model != "roofline":
        return (ms or 0.0) / 1000.0
    hw = profile_catalog(scenario)[0].get(scenario.cluster.hardware)
    return hw.request_overhead_s if hw is not None else 0.0
