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
