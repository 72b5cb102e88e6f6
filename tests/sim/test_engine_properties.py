"""Invariants that must hold after every single event, on randomly drawn small clusters."""

from __future__ import annotations

import os

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kv_replay import KVReplay
from kvtui.events import RequestArrived
from kvtui.scenario.model import (
    Arrival,
    Cluster,
    Dist,
    Latency,
    Metadata,
    NodeSpec,
    Offload,
    PrefixGroup,
    Router,
    Scenario,
    ScriptedEvent,
    Workload,
)
from kvtui.sim.engine import Simulation
from kvtui.scenario.policies import POLICY_NAMES


def dist(lo: int, hi: int) -> Dist:
    return Dist(dist="uniform", low=lo, high=hi)


@st.composite
def scenarios(draw):
    n_nodes = draw(st.integers(1, 3))
    block_size = draw(st.sampled_from([4, 16]))
    kv_blocks = draw(st.integers(24, 120))
    offload = draw(st.sampled_from([None, Offload(cpu_blocks=8), Offload(cpu_blocks=200, bandwidth_gbps=5.0)]))
    nodes = tuple(
        NodeSpec(
            name=f"n{i}",
            kv_blocks=kv_blocks,
            max_num_seqs=draw(st.integers(1, 8)),
            max_num_batched_tokens=draw(st.sampled_from([64, 256, 2048])),
            chunked_prefill=draw(st.booleans()),
            max_queue=draw(st.sampled_from([None, 2, 8])),
            offload=offload,
        )
        for i in range(n_nodes)
    )
    groups = tuple(
        PrefixGroup(
            name=f"g{i}",
            system_prompt_tokens=draw(st.integers(0, 96)),
            question_tokens=dist(1, 40),
            output_tokens=dist(1, 60),
            turns=dist(1, 3),
            pin_on=("n0",) if draw(st.booleans()) and i == 0 else (),
        )
        for i in range(draw(st.integers(1, 3)))
    )
    events = ()
    if n_nodes > 1 and draw(st.booleans()):
        events = (
            ScriptedEvent(at=0.5, action="node_down", node="n1", in_flight=draw(st.sampled_from(["reroute", "fail"]))),
            ScriptedEvent(at=1.5, action="node_up", node="n1"),
        )
    metadata = None
    if draw(st.booleans()):
        metadata = Metadata(fsync="never", snapshot_every=50)
        events = events + (ScriptedEvent(at=draw(st.sampled_from([0.2, 1.0])), action="control_plane_crash"),)
    return Scenario(
        name="prop",
        metadata=metadata,
        seed=draw(st.integers(0, 2**16)),
        cluster=Cluster(block_size=block_size, nodes=nodes),
        latency=Latency(model=draw(st.sampled_from(["roofline", "linear"]))),
        router=Router(policy=draw(st.sampled_from(POLICY_NAMES))),
        workload=Workload(
            arrival=Arrival(process="poisson", rate=draw(st.sampled_from([5.0, 40.0]))),
            groups=groups,
            requests=draw(st.integers(5, 40)),
        ),
        events=events,
        until_s=30.0,
    )


def check_invariants(sim: Simulation, arrived: int, replay: KVReplay) -> None:
    recovering = sim.control_plane is not None and sim.control_plane.down
    for node in sim.nodes:
        node.pool.check()  # used + free = usable, no negative count, free queue holds only idle blocks
        assert replay.pool_matches(node), "the pool's cached copies disagree with its KV events"
        index = sim.router.index
        if not recovering:  # while the control plane recovers, the router has no index at all
            on_gpu = index.keys_on(node.name, "gpu")
            assert on_gpu == replay.indexed(node.name, "gpu"), "KV index disagrees with the KV events"
            assert replay.held_after(node, "gpu") <= set(node.pool.cached), "KV events list blocks the pool does not hold"
        cpu = node.kv.cpu
        if cpu is not None:
            cpu.check()
            on_cpu = index.keys_on(node.name, "cpu")
            # The CPU tier is not persisted by the control plane: after a recovery the index
            # knows only what the tier stored since, never more than it holds.
            crashed = sim.control_plane is not None and sim.control_plane.crashes > 0
            after = replay.held_after(node, "cpu")  # the step's unpublished events counted
            if not recovering:
                assert on_cpu == replay.indexed(node.name, "cpu") or crashed, "KV index disagrees with the KV events"
                assert after <= set(cpu.entries), "KV events list CPU blocks the tier does not hold"
                assert crashed or after == set(cpu.entries), "KV events disagree with the CPU tier"
        for req in node.running:
            assert len(req.blocks) * sim.block_size >= req.computed
    m = sim.metrics
    assert m.arrived == arrived
    assert arrived == m.completed + m.rejected + m.failed + sim.in_flight(), "a request was lost"


# KVTUI_PROPERTY_SCALE=20 runs a 500-scenario campaign by hand (CI runs 25).
EXAMPLES = 25 * max(1, int(os.environ.get("KVTUI_PROPERTY_SCALE", "1")))


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(scenarios())
def test_invariants_hold_after_every_event(scenario):
    sim = Simulation(scenario)
    replay = KVReplay(sim)
    arrived = 0
    try:
        while (ev := sim.step()) is not None:
            if isinstance(ev, RequestArrived):
                arrived += 1
            check_invariants(sim, arrived, replay)
    finally:
        sim.close()
    assert sim.ended
