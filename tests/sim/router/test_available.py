"""Available against achieved (`routing.available` in the result document): per decision, the
longest prompt prefix any up node held against what the chosen node held.

At `router.index.delay_ms: 0` the index agrees with the pools (test_router_core.py), so the
candidates' `prefix` features of each decision are the pools' holdings: the router's sums must
be their maximum and the chosen one's, summed. And the figure separates policies: round robin
gives away what load_prefix takes."""

from __future__ import annotations

from pathlib import Path

import pytest

from kvtui.events import RouteDecided
from kvtui.report import available_line
from kvtui.run import run_to_end
from kvtui.scenario.loader import load_scenario
from kvtui.sim.engine import Simulation

SCENARIOS = Path(__file__).resolve().parents[3] / "scenarios"


def _run(scenario, policy: str, index_is_truth: bool = True):
    sim = Simulation(scenario, policy=policy)
    sim.router.index_is_truth = index_is_truth
    decided: list[RouteDecided] = []
    sim.subscribe(decided.append, (RouteDecided,))
    sim.run()
    a = sim.router.report()["available"]
    sim.close()
    return a, [ev for ev in decided if ev.node is not None]


def test_the_router_sums_the_best_and_the_chosen_prefix_of_every_decision():
    s = load_scenario(SCENARIOS / "pressure.yaml", ["until_s=40", "metadata=null"])
    a, routed = _run(s, "round_robin", index_is_truth=False)  # every pool asked at every decision
    best = sum(max(c.feature("prefix") for c in ev.candidates) for ev in routed)
    chosen = sum(next(c.feature("prefix") for c in ev.candidates if c.node == ev.node) for ev in routed)
    assert a["prompt_blocks"] == sum(ev.prompt_blocks for ev in routed)
    assert (a["available_blocks"], a["chosen_blocks"]) == (best, chosen)
    assert a["available_blocks"] > a["chosen_blocks"] > 0  # round robin leaves hits on other nodes


@pytest.mark.parametrize("name, sets", [("pressure.yaml", ["metadata=null"]), ("offload.yaml", [])])
def test_the_undelayed_index_answers_as_the_pools_would(name, sets):
    """The shortcut (the decision's own index match) against asking every pool, CPU tier included."""
    s = load_scenario(SCENARIOS / name, ["until_s=40", *sets])
    fast, _ = _run(s, "load_prefix")
    slow, _ = _run(s, "load_prefix", index_is_truth=False)
    assert fast == slow and fast["available_blocks"] > 0


def test_a_delayed_index_is_not_taken_for_the_pools():
    s = load_scenario(SCENARIOS / "pressure.yaml", ["until_s=40", "metadata=null", "router.index.delay_ms=2000"])
    a, routed = _run(s, "load_prefix")
    said = sum(max(c.feature("prefix") for c in ev.candidates) for ev in routed)
    assert a["available_blocks"] != said  # the index lags the pools; the figure follows the pools
    assert a == _run(s, "load_prefix", index_is_truth=False)[0]


def test_round_robin_gives_away_what_load_prefix_takes():
    s = load_scenario(SCENARIOS / "pressure.yaml", ["until_s=60", "metadata=null"])
    rr, lp = (run_to_end(s, policy=p).document for p in ("round_robin", "load_prefix"))
    assert rr["routing"]["available"]["given_away"] > 3 * lp["routing"]["available"]["given_away"]
    line = available_line(rr)
    assert line is not None and line.startswith("available vs achieved: best node held")
    assert f"{100 * rr['routing']['available']['given_away']:.1f} pp given away" in line
