"""From a scenario's node specs to what a node is built with: its latency model and KV capacity.

What each node is served with (hardware, TP degree, KV dtype, memory fit, KV blocks, CPU link
time) is resolved once in the node plan (`kvtui.scenario.plan`), which the loader's check and
the cost estimate read too; this module only turns a plan into the engine's objects.

A tensor-parallel node stays one server: one scheduler and one block pool whose blocks are
sharded over its GPUs, as a vLLM engine with `--tensor-parallel-size` is.
"""

from __future__ import annotations

from typing import Sequence

from kvtui.scenario.model import Scenario
from kvtui.scenario.plan import NodePlan
from kvtui.scenario.serving import iteration_overhead_s, output_lag_steps, profile_catalog
from kvtui.sim.kv_manager import OffloadSpec
from kvtui.sim.latency import LinearModel, RooflineModel
from kvtui.sim.transfer import Link, build_links


def build_latency(scenario: Scenario, plan: NodePlan):
    """The latency model of one node (nodes may differ in hardware, TP degree and KV dtype)."""
    lat = scenario.latency
    if lat.model == "linear":
        return LinearModel(lat.prefill_ms_per_token / 1000.0, lat.decode_ms_per_token / 1000.0)
    _, models = profile_catalog(scenario)
    assert plan.hardware is not None  # the loader refuses a roofline node with unknown hardware
    return RooflineModel(
        plan.hardware,
        models[scenario.model],
        lat.compute_efficiency,  # None: the hardware profile's calibrated share
        lat.memory_efficiency,
        iteration_overhead_s(scenario, plan.hardware),
        tensor_parallel=plan.tp,
        kv_dtype=plan.kv_dtype,
        output_lag_steps=output_lag_steps(scenario, plan.hardware),
    )


def node_offload(plan: NodePlan) -> OffloadSpec | None:
    """The node's CPU tier, with the time one block takes to load (resolved in the plan)."""
    if plan.offload is None:
        return None
    return OffloadSpec(plan.cpu_blocks, plan.block_load_s)


def node_links(scenario: Scenario, plans: Sequence[NodePlan]) -> tuple[dict[tuple[str, str], Link], dict[str, int]]:
    """The KV links of a disaggregated cluster and each decode node's bytes per block."""
    _, models = profile_catalog(scenario)
    return build_links(plans, models[scenario.model], scenario.cluster.block_size)
