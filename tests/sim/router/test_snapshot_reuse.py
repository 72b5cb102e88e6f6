"""The Router reuses a node's routing snapshot while nothing it holds has changed (router.py's
`observe`): every reused snapshot must be the one a rebuild would give. Through runs with node
failures, admission limits (pressure.yaml: max_active, max_queue), pinned prefixes and a big cluster, the
snapshots `observe` returns are compared, at many instants and for requests of several
shapes, with snapshots built afresh (the reuse table emptied, then restored)."""

from __future__ import annotations

from pathlib import Path

import pytest

from kvtui.scenario import load_scenario
from kvtui.sim.engine import Simulation
from kvtui.sim.request import Request
from kvtui.sim.router.router import Router

SCENARIOS = Path(__file__).resolve().parents[3] / "scenarios"
STANDARD = SCENARIOS.parent / "benchmarks" / "standard.yaml"
CASES = [
    ("pressure.yaml", "cache_aware", ["until_s=40"]),
    ("pressure.yaml", "dynamo", ["until_s=40"]),
    ("pressure.yaml", "load_prefix", ["until_s=40"]),
    ("big-cluster.yaml", None, ["until_s=8"]),
]


def fresh(router: Router, req, keys) -> list:
    """`observe` with nothing to reuse, leaving the reuse table as it was."""
    kept = router._idle_shape, router._idle
    router._idle_shape = None
    try:
        return router.observe(req, keys)
    finally:
        router._idle_shape, router._idle = kept


def in_flight(sim: Simulation) -> list:
    return [r for n in sim.nodes for r in list(n.running) + list(n.waiting)]


@pytest.mark.parametrize("scenario,policy,overrides", CASES)
def test_reused_snapshots_equal_rebuilt_ones(scenario, policy, overrides):
    sim = Simulation(load_scenario(SCENARIOS / scenario, overrides + ["metadata=null"]), policy=policy)
    router, compared, reused, step = sim.router, 0, 0, 0
    while sim.step() is not None:
        step += 1
        if step % 5:
            continue
        for req in in_flight(sim)[:1]:
            keys = req.block_keys[: req.prompt_tokens // router.block_size]
            before = list(router._idle)
            got, want = router.observe(req, keys), fresh(router, req, keys)
            assert got == want, f"{scenario} at t={sim.env.now}: a reused snapshot differs from a rebuilt one"
            compared += len(got)
            reused += sum(any(s is b for b in before) for s in got)
    sim.close()
    assert compared > 1000 and reused > 300  # the check ran, and reuse happened


def idle_cluster_and_request() -> tuple[Simulation, Request, list[int]]:
    """The standard benchmark's 4 idle nodes (nothing run yet) and a request of 512 + 256 tokens."""
    sim = Simulation(load_scenario(STANDARD))
    req = Request("r", "s", "g", 0, 512, 256, tuple(range(1, 49)))
    return sim, req, list(req.block_keys[:32])


def test_a_node_that_went_down_is_not_reused():
    """An idle node that goes down keeps its counts and free blocks: only `up` tells."""
    sim, req, keys = idle_cluster_and_request()
    assert sim.router.observe(req, keys)[0].problem is None
    sim.node_down(sim.nodes[0].name)
    assert sim.router.observe(req, keys)[0] == fresh(sim.router, req, keys)[0]
    assert sim.router.observe(req, keys)[0].problem is not None


def test_a_node_whose_capacity_fell_below_the_request_is_not_reused():
    """Pinning a prefix lowers what a request may hold (kv.capacity) without moving the counts
    the snapshot holds."""
    sim, req, keys = idle_cluster_and_request()
    node = sim.nodes[0]
    assert sim.router.observe(req, keys)[0].problem is None
    node.kv.capacity = 10  # as `pin` leaves it after pinning all but 10 blocks
    assert sim.router.observe(req, keys)[0] == fresh(sim.router, req, keys)[0]
    assert sim.router.observe(req, keys)[0].problem is not None
