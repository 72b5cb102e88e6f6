"""The belief view of a simulation (kvtui/run/belief.py): with KV events delivered late the index
and the pools disagree mid-run, and each tier's figures are what the index's and the pool's own
key sets say (in both directions); with a CPU tier, a row for it; an approximate index compared
with both tiers at once."""

from __future__ import annotations

from kvtui.run.belief import simulated_belief, why
from kvtui.scenario import load_scenario
from kvtui.sim.engine import Simulation


def _belief_while_running(path: str, overrides: list[str], until: float):
    sim = Simulation(load_scenario(path, overrides))
    sim.run_until(until)
    return sim, simulated_belief(sim)


def test_a_late_index_is_credited_with_blocks_gone_and_misses_blocks_new_in_both_tiers():
    sim, view = _belief_while_running("scenarios/offload.yaml", ["router.index.delay_ms=400"], 30.0)
    try:
        index = sim.router.index
        seen_wrong = seen_unknown = 0
        for node, e in zip(sim.nodes, view.engines):
            assert [t.tier for t in e.tiers] == ["gpu", "cpu"]
            for t, held in zip(e.tiers, (set(node.kv.pool.cached), set(node.kv.cpu.entries))):
                credited = index.keys_on(node.name, t.tier)
                assert (t.credited, t.holds, t.wrong, t.unknown) == (
                    len(credited), len(held), len(credited - held), len(held - credited))
                seen_wrong += t.wrong
                seen_unknown += t.unknown
        assert seen_wrong and seen_unknown  # 400 ms late: both kinds of gap show mid-run
        assert view.headline.startswith("precise index: KV events 400 ms late")
        late = next(e for e in view.engines if any(t.unknown for t in e.tiers))
        assert "held that the index has not heard of" in why(view, late.name)
    finally:
        sim.close()


def test_an_approximate_index_is_compared_with_every_tier_at_once():
    sim, view = _belief_while_running("scenarios/pressure.yaml", ["router.index.mode=approximate"], 40.0)
    try:
        for node, e in zip(sim.nodes, view.engines):
            (t,) = e.tiers
            credited, held = sim.router.approx.keys_on(node.name), set(node.kv.pool.cached)
            assert (t.tier, t.credited, t.holds, t.wrong, t.unknown) == (
                "any", len(credited), len(held), len(credited - held), len(held - credited))
        assert view.headline.startswith("approximate index")
    finally:
        sim.close()
