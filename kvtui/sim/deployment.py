"""From a scenario's node specs to what a node is built with: its latency model and KV capacity.

Kept apart from the engine so the serving model (hardware, model, tensor parallelism, memory
fit) has one home that the engine, the validator and the reports can all ask.
"""

from __future__ import annotations

from kvtui.scenario.model import NodeSpec, Scenario
from kvtui.sim.latency import LinearModel, RooflineModel
from kvtui.sim.profiles import HARDWARE, MODELS, derived_kv_blocks


def build_latency(scenario: Scenario, spec: NodeSpec):
    """The latency model of one node (nodes may differ in hardware)."""
    lat = scenario.latency
    if lat.model == "linear":
        return LinearModel(lat.prefill_ms_per_token / 1000.0, lat.decode_ms_per_token / 1000.0)
    return RooflineModel(
        HARDWARE[spec.hardware or scenario.cluster.hardware],
        MODELS[scenario.model],
        lat.compute_efficiency,
        lat.memory_efficiency,
        lat.iteration_overhead_ms / 1000.0,
    )


def node_capacity(scenario: Scenario, spec: NodeSpec) -> int:
    """KV blocks of one node: explicit, or derived from its GPU memory."""
    if spec.kv_blocks is not None:
        return spec.kv_blocks
    hw = HARDWARE[spec.hardware or scenario.cluster.hardware]
    return derived_kv_blocks(hw, MODELS[scenario.model], scenario.cluster.block_size, spec.gpu_memory_utilization)
