"""From a scenario's node specs to what a node is built with: its latency model and KV capacity.

Kept apart from the engine so the serving model (hardware, model, tensor parallelism, memory
fit) has one home that the engine and the reports can ask; the profiles and the memory
arithmetic themselves live in `kvtui.profiles`, which the scenario loader shares.

A tensor-parallel node stays one server: one scheduler and one block pool whose blocks are
sharded over its GPUs, as a vLLM engine with `--tensor-parallel-size` is.
"""

from __future__ import annotations

from kvtui.profiles import memory_fit
from kvtui.scenario.model import NodeSpec, Scenario
from kvtui.scenario.serving import node_serving, profile_catalog
from kvtui.sim.kv_manager import OffloadSpec
from kvtui.sim.latency import LinearModel, RooflineModel


def build_latency(scenario: Scenario, spec: NodeSpec):
    """The latency model of one node (nodes may differ in hardware, TP degree and KV dtype)."""
    lat = scenario.latency
    if lat.model == "linear":
        return LinearModel(lat.prefill_ms_per_token / 1000.0, lat.decode_ms_per_token / 1000.0)
    hardware, models = profile_catalog(scenario)
    serving = node_serving(scenario, spec)
    return RooflineModel(
        hardware[serving.hardware],
        models[scenario.model],
        lat.compute_efficiency,  # None: the hardware profile's calibrated share
        lat.memory_efficiency,
        lat.iteration_overhead_ms / 1000.0,
        tensor_parallel=serving.tp,
        kv_dtype=serving.kv_dtype,
    )


def node_capacity(scenario: Scenario, spec: NodeSpec) -> int:
    """KV blocks of one node: explicit, or what its GPUs' memory leaves (see kvtui.profiles)."""
    if spec.kv_blocks is not None:
        return spec.kv_blocks
    hardware, models = profile_catalog(scenario)
    serving = node_serving(scenario, spec)
    fit = memory_fit(
        hardware[serving.hardware],
        models[scenario.model],
        block_size=scenario.cluster.block_size,
        utilization=spec.gpu_memory_utilization,
        tp=serving.tp,
        kv_dtype=serving.kv_dtype,
        batched_tokens=spec.max_num_batched_tokens,
    )
    return fit.blocks


def node_offload(scenario: Scenario, spec: NodeSpec) -> OffloadSpec | None:
    """The node's CPU tier (its own `offload:`, else the cluster's), with the time one block takes
    to load: each GPU of a tensor-parallel group loads its shard of the block over its own host
    link, so the time is the per-GPU shard's bytes over one link's bandwidth."""
    offload = spec.offload or scenario.cluster.offload
    if offload is None:
        return None
    _, models = profile_catalog(scenario)
    serving = node_serving(scenario, spec)
    shard_bytes = models[scenario.model].kv_bytes_per_token_per_gpu(serving.tp, serving.kv_dtype) * scenario.cluster.block_size
    return OffloadSpec(offload.cpu_blocks, shard_bytes / (offload.bandwidth_gbps * 1e9))
