"""The CPU offload tier: LRU bookkeeping, the manager's load path, its cost, and what a run reports."""

from __future__ import annotations

import textwrap

import pytest

from kvtui.errors import InputError
from kvtui.events import BlocksEvicted, BlocksStored, RequestScheduled
from kvtui.run.facts import SimulationFacts
from kvtui.run.narrate import History, explain
from kvtui.scenario import load_scenario
from kvtui.scenario.plan import node_plans
from kvtui.sim.deployment import node_offload
from kvtui.sim.engine import Simulation
from kvtui.sim.kv_manager import KVCacheManager, OffloadSpec
from kvtui.sim.offload import CpuTier
from kvtui.sim.request import Request
from kvtui.run.result import result_document


class Recorder:
    def __init__(self):
        self.events: list[tuple] = []

    def stored(self, request, group, keys, parent, first, medium="gpu"):
        self.events.append(("stored", medium, keys))

    def evicted(self, keys, groups, for_request, medium="gpu"):
        self.events.append(("evicted", medium, keys))


def test_tier_is_lru_and_reports_both_ways():
    rec = Recorder()
    tier = CpuTier("n", 3, 0.5, lambda *a: rec.stored(*a, medium="cpu"), lambda *a: rec.evicted(*a, medium="cpu"))
    tier.offload((1, 2, 3), ("g", "g", "g"), "r1")
    assert rec.events == [("stored", "cpu", (1, 2, 3))]
    assert tier.load([1]) == 0.5  # 1 is now the most recently used
    tier.offload((4,), ("g",), "r2")
    assert rec.events[-2:] == [("stored", "cpu", (4,)), ("evicted", "cpu", (2,))]
    assert list(tier.entries) == [3, 1, 4]
    assert tier.lookup((9, 3, 1, 2), 1, 4) == 2  # from position 1 until the first miss
    tier.offload((3,), ("g",), "r3")  # already held: touched, not stored twice
    assert rec.events[-1] == ("evicted", "cpu", (2,)) and list(tier.entries) == [1, 4, 3]
    tier.check()


def _request(rid: str, keys: tuple[int, ...], tokens: int) -> Request:
    return Request(id=rid, session=rid, group="g", turn=1, prompt_tokens=tokens, output_tokens=1, block_keys=keys)


def _run(kv: KVCacheManager, req: Request) -> float:
    """Admit a whole prompt, compute it, and release it (as a finished 1-token request)."""
    target = req.prompt_tokens
    hit = kv.computed(req, target)
    need = kv.need(req, hit, target - hit.tokens)
    assert kv.fits(hit, need)
    seconds = kv.admit(req, hit, need)
    kv.cache(req, len(hit.gpu), target // kv.block_size)
    kv.free(req)
    return seconds


def test_evicted_prefix_is_loaded_back_instead_of_recomputed():
    rec = Recorder()
    kv = KVCacheManager("n", 5, 4, True, rec.stored, rec.evicted, OffloadSpec(cpu_blocks=8, seconds_per_block=0.001))
    assert _run(kv, _request("a", (1, 2, 3), 12)) == 0.0
    _run(kv, _request("b", (5, 6, 7, 8), 16))  # needs all 4 blocks: a's three are evicted to the tier
    # tail first, as the GPU freed them: the tier's LRU end is then the prefix's tail too
    assert rec.events[1:3] == [("evicted", "gpu", (3, 2, 1)), ("stored", "cpu", (3, 2, 1))]
    c = _request("c", (1, 2, 3, 9), 16)
    hit = kv.computed(c, 16)
    # nothing on the GPU; the last-token rule caps the hit at 3 blocks, all three in the CPU tier
    assert (len(hit.gpu), hit.matched, hit.loaded, hit.tokens) == (0, 0, 3, 12)
    assert _run(kv, c) == pytest.approx(0.003)
    assert kv.pool.lookup((1, 2, 3), 3)  # registered on the GPU again
    assert kv.held_prefix((1, 2, 3, 9)) == 4


def test_without_a_tier_nothing_is_kept():
    rec = Recorder()
    kv = KVCacheManager("n", 5, 4, True, rec.stored, rec.evicted)
    _run(kv, _request("a", (1, 2, 3), 12))
    _run(kv, _request("b", (5, 6, 7, 8), 16))
    assert kv.computed(_request("c", (1, 2, 3, 9), 16), 16).tokens == 0
    assert not [e for e in rec.events if e[1] == "cpu"]


def test_load_time_is_a_per_gpu_shard_over_its_own_link():
    """Llama-3.1-8B bf16 holds 128 KiB of KV per token; a 16-token block over 50 GB/s takes 41.9 us,
    and with TP=2 each GPU moves half the block over its own link."""
    one = load_scenario("scenarios/pressure.yaml", ["cluster.offload.cpu_blocks=64"])
    spec = node_offload(node_plans(one)[0])
    assert spec.cpu_blocks == 64
    assert spec.seconds_per_block == pytest.approx(16 * 131072 / 50e9)
    two = load_scenario("scenarios/pressure.yaml", ["cluster.offload.cpu_blocks=64", "cluster.tensor_parallel=2"])
    assert node_offload(node_plans(two)[0]).seconds_per_block == pytest.approx(spec.seconds_per_block / 2)


def _doc(overrides):
    sim = Simulation(load_scenario("scenarios/pressure.yaml", overrides))
    try:
        sim.run()
        return sim, result_document(sim, 0.0)
    finally:
        sim.close()


def test_pressure_with_a_tier_hits_more_and_reports_it():
    _, base = _doc([])
    sim, doc = _doc(["cluster.offload.cpu_blocks=1024"])
    off = doc["cache"]["offload"]
    assert "offload" not in base["cache"]
    assert off["loaded_tokens"] > 0 and off["loaded_blocks"] > 0 and off["load_s"] > 0
    assert doc["cache"]["token_hit_rate"] > base["cache"]["token_hit_rate"]
    assert off["gpu_token_hit_rate"] + off["loaded_token_rate"] == pytest.approx(doc["cache"]["token_hit_rate"], abs=2e-6)
    assert all(n["offload"]["held_blocks"] <= 1024 for n in doc["nodes"])


def test_index_sees_the_tier_and_the_why_panel_explains_a_load():
    sim = Simulation(load_scenario("scenarios/pressure.yaml", ["cluster.offload.cpu_blocks=256"]))
    history = History()
    texts = {}
    try:
        while (ev := sim.step()) is not None:
            history.on_event(ev)
            if isinstance(ev, RequestScheduled) and ev.loaded_blocks and "load" not in texts:
                texts["load"] = explain(ev, SimulationFacts(sim), history)
            if isinstance(ev, BlocksStored) and ev.medium == "cpu" and "index" not in texts:
                texts["index"] = sim.router.index.keys_on(ev.node, "cpu") >= set(ev.keys)
            if isinstance(ev, BlocksEvicted) and ev.medium == "cpu" and "drop" not in texts:
                texts["drop"] = explain(ev, SimulationFacts(sim), history)
    finally:
        sim.close()
    assert texts["index"] is True
    assert "CPU tier" in texts["load"] and "loaded over the host link" in texts["load"]
    assert "prefilling them instead would take" in texts["load"]
    assert "least recently used" in texts["drop"]


def test_offload_section_is_validated(tmp_path):
    path = tmp_path / "bad.yaml"
    path.write_text(
        textwrap.dedent(
            """\
            name: bad
            cluster:
              nodes:
                - name: a
                  kv_blocks: 64
                  offload: {cpu_blocks: 0, bandwidth_gbps: 50}
            workload: {requests: 3}
            """
        )
    )
    with pytest.raises(InputError) as err:
        load_scenario(str(path))
    assert "bad.yaml:6" in err.value.render() and "cpu_blocks" in err.value.render()
