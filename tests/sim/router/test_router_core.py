"""The Router, its KV index (scorers, tiers, delay), the approximate index, load_prefix, ties."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from kv_replay import KVReplay
from router_support import state

from kvtui.events import RouteDecided
from kvtui.scenario import load_scenario
from kvtui.scenario.model import Router as RouterConfig
from kvtui.scenario.model import KVIndexConfig, ScorerWeights
from kvtui.sim.engine import Simulation
from kvtui.sim.router.approx import ApproxIndex
from kvtui.sim.request import Request
from kvtui.sim.router.base import Context
from kvtui.sim.router.index import KVIndex, Match
from kvtui.sim.router.load_prefix import LoadPrefix, queue_scores
from kvtui.sim.router.registry import make_policy
from kvtui.sim.router.state import pick_best

SCENARIOS = Path(__file__).resolve().parents[3] / "scenarios"


def ctx(seed=0):
    return Context(rng=np.random.default_rng(seed), block_size=16, sessions={})


def a_request() -> Request:
    """A real Request (a duck-typed stand-in fails the compiled engine's type checks)."""
    return Request(id="r", session="s", group="g", turn=1, prompt_tokens=160, output_tokens=10, block_keys=())


# ---------------------------------------------------------------------- the index and its scorers
def index_with(scorer, weights=None):
    idx = KVIndex(scorer, weights)
    idx.add("a", [1, 2, 3])  # a holds the first three blocks
    idx.add("b", [1, 3, 4, 5])  # b has a hole at block 2
    idx.add("c", [5])  # c holds only the last one
    return idx


def test_longest_prefix_counts_consecutive_blocks_from_the_first():
    m = index_with("longest_prefix").match([1, 2, 3, 4, 5])
    assert m == {"a": Match(3, 3.0), "b": Match(1, 1.0)}


def test_highest_hit_scores_the_position_of_the_last_block_held():
    m = index_with("highest_hit").match([1, 2, 3, 4, 5])
    assert {n: x.weighted for n, x in m.items()} == {"a": 3.0, "b": 5.0, "c": 5.0}
    assert m["b"].consecutive == 1 and m["c"].consecutive == 0


def test_coverage_counts_every_block_held():
    m = index_with("coverage").match([1, 2, 3, 4, 5])
    assert {n: x.weighted for n, x in m.items()} == {"a": 3.0, "b": 4.0, "c": 1.0}


def test_medium_weights_take_the_best_tier_per_block():
    idx = KVIndex("longest_prefix", {"gpu": 1.0, "cpu": 0.8})
    idx.add("a", [1, 2], "cpu")
    idx.add("a", [2], "gpu")  # block 2 in both tiers: counts as gpu
    assert idx.match([1, 2]) == {"a": Match(2, 1.8)}
    idx.remove("a", [2], "gpu")  # back to cpu only
    assert idx.match([1, 2])["a"].weighted == pytest.approx(1.6)
    idx.remove("a", [1, 2], "cpu")
    assert idx.match([1, 2]) == {} and idx.keys_on("a") == set()


def test_clear_drops_every_tier_of_one_node():
    idx = index_with("longest_prefix")
    idx.clear("a")
    assert idx.keys_on("a") == set() and idx.keys_on("b") == {1, 3, 4, 5}


# ---------------------------------------------------------------------- the approximate index
def test_approximate_index_is_bounded_and_evicts_least_recent():
    ap = ApproxIndex({"a": 4, "b": 4})
    ap.routed("a", [1, 2, 3])
    ap.routed("a", [1, 9, 10])  # touches 1, adds 9 and 10: 2 is the least recent and leaves
    assert ap.keys_on("a") == {1, 3, 9, 10}
    assert ap.match([1, 2, 3]) == {"a": Match(1, 1.0)}
    ap.forget("a")
    assert ap.match([1]) == {}


def test_approximate_match_counts_as_upstream_walks_past_a_servers_hole():
    """gateway-api-inference-extension v1.2.0 `matchLongestPrefix`: while any server holds the
    key, every server holding it gets one more; a's LRU lost key 1 but keeps 2 and 3."""
    ap = ApproxIndex({"a": 2, "b": 8})
    ap.routed("a", [1, 2, 3])  # capacity 2: 1, the least recent, leaves
    ap.routed("b", [1, 5])
    assert ap.match([1, 2, 3]) == {"a": Match(2, 2.0), "b": Match(1, 1.0)}
    assert ap.match([2, 3]) == {"a": Match(2, 2.0)}
    assert ap.match([7, 2, 3]) == {}  # nobody holds the first key: the walk stops there


# ---------------------------------------------------------------------- load_prefix
def test_queue_scorer_normalises_and_is_neutral_when_equal():
    assert queue_scores([state("a", waiting=2), state("b", waiting=6), state("c", waiting=4)]) == {
        "a": 1.0,
        "b": 0.0,
        "c": 0.5,
    }
    assert queue_scores([state("a", waiting=3), state("b", waiting=3)]) == {"a": 1.0, "b": 1.0}


def test_load_prefix_is_the_weighted_sum_of_clamped_scores():
    policy = LoadPrefix(prefix=3, queue=2, kv=2)
    a = state("a", prefix=8, waiting=4, free=20)  # prefix .8, queue 0, kv .2
    b = state("b", prefix=0, waiting=0, free=90)  # prefix 0, queue 1, kv .9
    d = policy.decide(a_request(), ctx(), [a, b])
    scores = {c.node: c.score for c in d.candidates}
    assert scores["a"] == pytest.approx(3 * 0.8 + 2 * 0.0 + 2 * 0.2)
    assert scores["b"] == pytest.approx(3 * 0.0 + 2 * 1.0 + 2 * 0.9)
    assert d.node == "b" and d.margin == pytest.approx(3.8 - 2.8)
    assert "queue 1.00x2" in d.reason


def weights_of(cfg: RouterConfig) -> tuple[float, float, float]:
    p = make_policy("load_prefix", cfg)
    return (p.w_prefix, p.w_queue, p.w_kv)


def test_load_prefix_presets_and_overrides():
    assert weights_of(RouterConfig()) == (2.0, 1.0, 1.0)  # precise index: llm-d's precise sample config
    approximate = RouterConfig(index=KVIndexConfig(mode="approximate"))
    assert weights_of(approximate) == (3.0, 2.0, 2.0)  # approximate: the InferencePool chart's profile
    assert weights_of(RouterConfig(weights=ScorerWeights(preset="llm-d-approximate"))) == (3.0, 2.0, 2.0)
    assert weights_of(RouterConfig(weights=ScorerWeights(preset="seed-322"))) == (3.0, 2.0, 2.0)
    assert weights_of(RouterConfig(weights=ScorerWeights(preset="seed-111", kv=5.0))) == (1.0, 1.0, 5.0)


def test_approximate_index_matches_only_the_first_blocks_it_would_hash():
    s = load_scenario(SCENARIOS / "pressure.yaml", ["until_s=5", "metadata=null", "router.index.mode=approximate",
                                                     "router.index.approx_max_prefix_tokens=32"])
    sim = Simulation(s, policy="load_prefix")
    decisions = []
    sim.subscribe(decisions.append, (RouteDecided,))
    sim.run()
    sim.close()
    assert decisions and max(c.feature("prefix") for d in decisions for c in d.candidates) <= 32 // s.cluster.block_size


def test_ineligible_nodes_are_candidates_but_never_picked():
    policy = LoadPrefix()
    d = policy.decide(a_request(), ctx(), [state("a", prefix=10, problem="a is down"), state("b")])
    assert d.node == "b"
    assert [c.eligible for c in d.candidates] == [False, True]
    d = policy.decide(a_request(), ctx(), [state("a", problem="a is down")])
    assert d.node is None and "a is down" in d.reason


# ---------------------------------------------------------------------- ties
def test_ties_are_broken_by_the_seeded_rng_not_by_order():
    states = [state(n) for n in "abcdefgh"]
    picks = {pick_best(states, lambda s: 0.0, np.random.default_rng(seed))[0].name for seed in range(40)}
    assert len(picks) > 4  # not always the first
    again = [pick_best(states, lambda s: 0.0, np.random.default_rng(7))[0].name for _ in range(3)]
    assert len(set(again)) == 1  # same seed, same pick


def test_no_rng_draw_without_a_tie():
    rng = np.random.default_rng(3)
    before = rng.bit_generator.state
    pick, margin, tied = pick_best([state("a", prefix=2), state("b")], lambda s: s.prefix, rng)
    assert (pick.name, margin, tied) == ("a", 2.0, 1)
    assert rng.bit_generator.state == before


@pytest.mark.parametrize("policy", ["least_loaded", "cache_aware", "load_prefix", "session_affinity"])
def test_every_tie_breaking_policy_is_reproducible(policy):
    s = load_scenario(SCENARIOS / "pressure.yaml", ["until_s=30", "metadata=null"])

    def picks():
        sim = Simulation(s, policy=policy)
        out = []
        sim.subscribe(lambda ev: out.append(ev.node), (RouteDecided,))
        sim.run()
        sim.close()
        return out

    assert picks() == picks()


# ---------------------------------------------------------------------- the Router on the engine
def test_index_agrees_with_the_pools_at_delay_zero():
    s = load_scenario(SCENARIOS / "pressure.yaml", ["until_s=40", "metadata=null"])
    sim = Simulation(s)
    replay = KVReplay(sim)
    sim.run()
    for node in sim.nodes:
        assert sim.router.index.keys_on(node.name) == replay.indexed(node.name)
        assert replay.pool_matches(node)
        assert replay.indexed(node.name) <= set(node.pool.cached)
    assert sim.router.report()["index"]["stale_decisions"] == 0
    sim.close()


def test_a_delayed_index_is_stale_and_the_router_counts_it():
    s = load_scenario(SCENARIOS / "pressure.yaml", ["until_s=60", "metadata=null", "router.index.delay_ms=2000"])
    sim = Simulation(s)
    stale = []
    sim.subscribe(lambda ev: ev.stale and stale.append(ev.stale), (RouteDecided,))
    sim.run()
    idx = sim.router.report()["index"]
    sim.close()
    assert idx["stale_decisions"] > 0
    assert idx["stale_decisions"] == idx["stale_said_cached"] + idx["stale_said_missing"] == len(stale)
    assert idx["stale_said_missing"] > 0  # blocks stored but not yet reported


def test_approximate_mode_shows_both_views():
    s = load_scenario(SCENARIOS / "pressure.yaml", ["until_s=40", "metadata=null", "router.index.mode=approximate"])
    sim = Simulation(s, policy="load_prefix")
    decisions = []
    sim.subscribe(decisions.append, (RouteDecided,))
    sim.run()
    sim.close()
    feats = [dict(c.features) for d in decisions for c in d.candidates if c.eligible]
    assert all("precise" in f for f in feats)
    assert any(f["prefix"] != f["precise"] for f in feats), "the approximate view never disagreed"


def test_load_prefix_leaves_no_node_idle_while_another_queues_on_big_cluster():
    """A request that arrives while a node is mid-iteration waits for the next iteration on any
    policy; what must not happen is a queue that has stood for a second while a node idles."""
    s = load_scenario(SCENARIOS / "big-cluster.yaml", ["until_s=50", "router.policy=load_prefix"])
    sim = Simulation(s)
    bad = []

    def check(ev):
        up = [n for n in sim.nodes if n.up]
        queued = [n for n in up if n.waiting and ev.t - n.waiting[0].arrival > 1.0]
        if queued and any(n.active == 0 for n in up):
            bad.append((ev.t, {n.name: (len(n.running), len(n.waiting)) for n in up}))

    sim.subscribe(check, (RouteDecided,))
    sim.run()
    sim.close()
    assert bad == []


def test_router_config_reaches_the_policy():
    s = load_scenario(SCENARIOS / "pressure.yaml", ["router.policy=cache_aware", "router.fill=best_fit"])
    sim = Simulation(s)
    assert sim.router.policy.fill == "best_fit"
    sim.close()
    s2 = replace(s, router=replace(s.router, weights=ScorerWeights(prefix=7)))
    sim = Simulation(s2, policy="load_prefix")
    assert sim.router.policy.w_prefix == 7
    sim.close()


def test_big_cluster_default_policy_spreads_requests():
    """The routing issue's bar: with the scenario's own policy no node serves more than twice the mean."""
    sim = Simulation(load_scenario(SCENARIOS / "big-cluster.yaml"))
    sim.run()
    served = [n.served for n in sim.nodes]
    sim.close()
    assert max(served) <= 2 * sum(served) / len(served)


def test_gpu_run_is_the_gpu_part_of_a_consecutive_match():
    idx = KVIndex()
    idx.add("a", [1, 2], "gpu")
    idx.add("a", [3, 4], "cpu")
    assert idx.match([1, 2, 3, 4, 5])["a"].consecutive == 4
    assert idx.gpu_run("a", [1, 2, 3, 4, 5], 4) == 2
    idx.add("b", [1, 2, 3], "gpu")
    assert idx.gpu_run("b", [1, 2, 3], 3) == 3 and idx.gpu_run("nobody", [1], 0) == 0


def test_pods_per_key_forgets_the_least_recently_stored_entry_as_llm_d_does():
    idx = KVIndex(pods_per_key=2)
    idx.add("a", [1, 2])
    idx.add("b", [1])
    idx.add("a", [1], "cpu")  # a third (node, tier) entry for key 1: a's GPU entry, the oldest, goes
    assert idx.keys_on("a", "gpu") == {2} and idx.keys_on("a", "cpu") == {1} and idx.keys_on("b") == {1}
    idx.add("b", [1])  # re-storing moves b's entry to the front: a's CPU entry is now the oldest
    idx.add("c", [1])
    assert idx.keys_on("a", "cpu") == set() and idx.keys_on("b") == {1} and idx.keys_on("c") == {1}
    idx.remove("b", [1])
    idx.add("d", [1])  # room again: nothing is dropped
    assert idx.keys_on("c") == {1} and idx.keys_on("d") == {1}
    idx.clear("c")
    idx.add("e", [1])
    assert idx.keys_on("d") == {1} and idx.keys_on("e") == {1}
    assert KVIndex().keys_on("a") == set()  # unset: no bound (and no bookkeeping)


def test_pods_per_key_reaches_the_routers_index():
    s = load_scenario(SCENARIOS / "pressure.yaml", ["until_s=20", "metadata=null", "router.index.pods_per_key=1"])
    sim = Simulation(s, policy="load_prefix")
    sim.run()
    held = [sim.router.index.keys_on(n.name) for n in sim.nodes]
    sim.close()
    assert all(not (a & b) for i, a in enumerate(held) for b in held[i + 1 :])  # one node per key at most
