"""A node publishes a step's KV events when the step ends, as vLLM does (kvtui/sim/node.py): vLLM
0.33.0's `Scheduler.update_from_output` ends with `kv_cache_manager.take_events()` and
`kv_event_publisher.publish(...)` (vllm/v1/core/sched/scheduler.py), so the blocks a step
allocates and caches in `schedule()` reach a router only once the model has run it."""

from __future__ import annotations

import dataclasses

from kvtui.events import BatchStepped, BlocksEvicted, BlocksStored, RequestScheduled
from kvtui.scenario.model import Arrival, Cluster, Dist, NodeSpec, PrefixGroup, Router, Scenario, Workload
from kvtui.sim.engine import Simulation


def fixed(n: int) -> Dist:
    return Dist(dist="uniform", low=n, high=n)


def scenario(requests: int, kv_blocks: int = 200) -> Scenario:
    group = PrefixGroup(name="g", system_prompt_tokens=256, question_tokens=fixed(40), output_tokens=fixed(40))
    return Scenario(name="publish", seed=3, cluster=Cluster(block_size=16, nodes=(NodeSpec(name="n0", kv_blocks=kv_blocks),)),
                    router=Router(policy="load_prefix"),
                    workload=Workload(arrival=Arrival(process="poisson", rate=20.0), groups=(group,), requests=requests),
                    until_s=60.0)


def test_the_index_learns_a_steps_blocks_when_the_step_ends():
    sim = Simulation(scenario(1))
    node = sim.nodes[0]
    try:
        while (ev := sim.step()) is not None and not isinstance(ev, RequestScheduled):
            pass
        assert ev is not None
        assert node.pool.cached_count > 0, "the step caches its prompt's full blocks as it allocates them"
        assert not sim.router.index.keys_on("n0"), "the router learns of them before the step ran"
        assert node.unpublished, "the step's events wait for its end"
        planned = sim.now
        while (ev := sim.step()) is not None and not isinstance(ev, BatchStepped):
            if isinstance(ev, BlocksStored):
                assert ev.t > planned, "published when the step was planned, not when it ended"
        assert ev is not None and ev.t > planned
        assert sim.router.index.keys_on("n0") == set(node.pool.cached)
    finally:
        sim.close()


def test_every_kv_event_comes_at_the_end_of_a_step_of_its_node():
    """Single iterations (segments off): each KV event is stamped with its step's end and comes
    before that step's BatchStepped; under pressure, evictions too."""
    sim = Simulation(scenario(40, kv_blocks=60))
    for node in sim.nodes:
        node.segments = False
    seen: list = []
    sim.subscribe(seen.append, (BlocksStored, BlocksEvicted, BatchStepped))
    try:
        sim.run()
    finally:
        sim.close()
    assert any(isinstance(e, BlocksEvicted) for e in seen) and sim.metrics.completed == 40
    waiting: list = []
    for ev in seen:
        if isinstance(ev, BatchStepped):
            assert all(w.t == ev.t for w in waiting), "a KV event was published before its step ended"
            waiting = []
        else:
            waiting.append(ev)
    assert not waiting


def test_reading_a_node_twice_in_one_iteration_publishes_nothing_early():
    """A decode segment's node read twice inside each of its iterations (the router reads every
    node per decision): the first read does the iteration's block work, and its KV events wait
    for the iteration's end, however often the node is read. Before, the second read published
    them: when the index learned a block depended on how busy the router was."""
    base = scenario(1)
    group = PrefixGroup(name="g", system_prompt_tokens=256, question_tokens=fixed(40), output_tokens=fixed(200))
    sim = Simulation(dataclasses.replace(base, workload=dataclasses.replace(base.workload, groups=(group,))))
    node = sim.nodes[0]
    stored: list = []
    sim.subscribe(stored.append, (BlocksStored,))
    reads: dict[int, list] = {}

    def read(iteration: int) -> None:
        node.settle()
        reads.setdefault(iteration, []).append((len(stored), len(node.unpublished)))

    try:
        while sim.step() is not None and node._segment_plan is None:
            pass
        start, durations = node._segment
        assert len(durations) > 2, "no decode segment ran"
        begun = start
        for i, d in enumerate(durations):
            for at in (begun + d / 2, begun + 3 * d / 4):
                sim.env.call_later(at - sim.now, lambda _t, i=i: read(i))
            begun += d
        sim.run()
    finally:
        sim.close()
    assert any(first[1] for first, _ in reads.values()), "no iteration read allocated a block: the test shows nothing"
    for iteration, (first, second) in reads.items():
        assert second == first, f"iteration {iteration}: the second read published (or did) more"
