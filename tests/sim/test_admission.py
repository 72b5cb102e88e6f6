"""Admission control: what a node refuses up front, and why."""

from __future__ import annotations

from kvtui.events import RequestRejected
from kvtui.scenario.model import (
    Arrival,
    Cluster,
    Latency,
    NodeSpec,
    PrefixGroup,
    Router,
    Scenario,
    Workload,
    fixed,
)
from kvtui.sim.engine import Simulation


def one_node(**node) -> Scenario:
    return Scenario(
        cluster=Cluster(block_size=16, nodes=(NodeSpec(**{"name": "n", "kv_blocks": 64, **node}),)),
        latency=Latency(model="roofline"),
        router=Router(policy="least_loaded"),
        workload=Workload(
            arrival=Arrival(process="closed_loop", users=1),
            groups=(PrefixGroup(name="g", question_tokens=fixed(300), output_tokens=fixed(100)),),
            sessions=3,
        ),
    )


def rejections(scenario) -> list[str]:
    sim = Simulation(scenario)
    out = []
    sim.subscribe(lambda ev: out.append(ev.reason), (RequestRejected,))
    sim.run()
    return out


def test_without_chunked_prefill_the_whole_sequence_must_fit_one_iteration():
    reasons = rejections(one_node(chunked_prefill=False, max_num_batched_tokens=350))
    assert len(reasons) == 3
    assert "300+100 tokens exceed max_num_batched_tokens 350 with chunked prefill off" in reasons[0]
    assert rejections(one_node(chunked_prefill=False, max_num_batched_tokens=512)) == []


def test_a_request_larger_than_the_pool_is_rejected_with_the_numbers():
    reasons = rejections(one_node(kv_blocks=20))
    assert len(reasons) == 3
    assert "needs 25 blocks for 300+100 tokens; n can hold at most 19 of its 20 blocks" in reasons[0]
