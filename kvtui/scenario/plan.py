"""Each node of a scenario as it will be served, resolved once: the node plan.

A node's hardware, tensor-parallel degree and KV dtype (its own setting, else the cluster's),
how its GPUs' memory divides (`kvtui.profiles.memory_fit`), the KV blocks it gets and the time
one block takes over its CPU tier's link. The loader's fit check, the cost estimate and the
engine's deployment all read this plan, so the three cannot disagree about a node.

The plan is a thin consumer of `kvtui.profiles`: the memory model (usable memory, activation
peak) lives there, and a change to it reaches every reader through `memory_fit`.

`node_plans` is forgiving: a node whose model or hardware is unknown, or whose TP degree does
not divide the model, gets `fit = None` (the loader reports why; the engine never sees one).
"""

from __future__ import annotations

from dataclasses import dataclass

from kvtui.profiles import Hardware, MemoryFit, Model, memory_fit, tp_problem
from kvtui.scenario.model import NodeSpec, Offload, Scenario
from kvtui.scenario.serving import node_serving, profile_catalog


@dataclass(frozen=True)
class NodePlan:
    """One node as served; `fit` is None when its profiles are unknown or TP does not fit."""

    spec: NodeSpec
    hardware: Hardware | None
    tp: int
    kv_dtype: str
    fit: MemoryFit | None
    offload: Offload | None
    block_load_s: float  # one block over one GPU's host link (0 without a CPU tier)

    @property
    def kv_blocks(self) -> int:
        """The node's KV blocks: explicit, else what its GPUs' memory leaves (0 if unknown)."""
        if self.spec.kv_blocks is not None:
            return self.spec.kv_blocks
        return self.fit.blocks if self.fit is not None else 0

    @property
    def cpu_blocks(self) -> int:
        return self.offload.cpu_blocks if self.offload is not None else 0


def node_plans(scenario: Scenario) -> list[NodePlan]:
    """Every node's plan, in cluster order."""
    hardware, models = profile_catalog(scenario)
    model = models.get(scenario.model)
    return [_plan(scenario, spec, hardware, model) for spec in scenario.cluster.nodes]


def _plan(scenario: Scenario, spec: NodeSpec, hardware: dict[str, Hardware], model: Model | None) -> NodePlan:
    serving = node_serving(scenario, spec)
    hw = hardware.get(serving.hardware)
    offload = spec.offload or scenario.cluster.offload
    return NodePlan(spec, hw, serving.tp, serving.kv_dtype, _fit(scenario, spec, hw, model, serving.tp, serving.kv_dtype),
                    offload, _block_load_s(scenario, model, offload, serving.tp, serving.kv_dtype))


def _fit(scenario: Scenario, spec: NodeSpec, hw: Hardware | None, model: Model | None, tp: int, kv_dtype: str) -> MemoryFit | None:
    if hw is None or model is None or tp_problem(model, tp):
        return None
    return memory_fit(hw, model, block_size=scenario.cluster.block_size, utilization=spec.gpu_memory_utilization,
                      tp=tp, kv_dtype=kv_dtype, batched_tokens=spec.max_num_batched_tokens)


def _block_load_s(scenario: Scenario, model: Model | None, offload: Offload | None, tp: int, kv_dtype: str) -> float:
    """Each GPU of a tensor-parallel group loads its shard of a block over its own host link, so
    the time is the per-GPU shard's bytes over one link's bandwidth."""
    if offload is None or model is None:
        return 0.0
    shard_bytes = model.kv_bytes_per_token_per_gpu(tp, kv_dtype) * scenario.cluster.block_size
    return shard_bytes / (offload.bandwidth_gbps * 1e9)
