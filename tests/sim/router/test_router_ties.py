"""Issue 20: only a real tie says "tie". Every policy on a run where ties and rule-based picks
happen; a decision whose line or explanation says "tie" must have had its top score shared."""

from __future__ import annotations

from pathlib import Path

import pytest

from kvtui.events import RouteDecided
from kvtui.run.narrate import explain
from kvtui.scenario import load_scenario
from kvtui.scenario.policies import POLICY_NAMES
from kvtui.sim.engine import Simulation
from kvtui.tui.widgets.candidates import decision_line

SCENARIOS = Path(__file__).resolve().parents[3] / "scenarios"
RULE_BASED = {"round_robin", "random"}


def decisions(policy: str) -> list[RouteDecided]:
    s = load_scenario(SCENARIOS / "pressure.yaml", ["until_s=20", "metadata=null"])
    sim = Simulation(s, policy=policy)
    out: list[RouteDecided] = []
    sim.subscribe(out.append, (RouteDecided,))
    sim.run()
    sim.close()
    return [d for d in out if d.node is not None and sum(c.eligible for c in d.candidates) > 1]


def shares_top_score(d: RouteDecided) -> bool:
    pick = next(c.score for c in d.candidates if c.node == d.node)
    return sum(1 for c in d.candidates if c.eligible and c.score == pick) > 1


@pytest.mark.parametrize("policy", POLICY_NAMES)
def test_no_decision_says_tie_unless_its_top_score_was_shared(policy):
    seen = decisions(policy)
    assert seen
    for d in seen:
        said = "tie" in decision_line(d) or "tied" in explain(d)
        assert said == bool(d.tie), (d.reason, d.tie)
        if d.tie:
            assert shares_top_score(d), d


@pytest.mark.parametrize("policy", sorted(RULE_BASED))
def test_rule_based_picks_never_say_tie(policy):
    assert not any(d.tie or "tie" in decision_line(d) for d in decisions(policy))


@pytest.mark.parametrize("policy", ["cache_aware", "session_affinity"])
def test_session_affinity_picks_are_not_ties(policy):
    sticky = [d for d in decisions(policy) if d.reason.startswith("session affinity")]
    assert sticky and not any(d.tie or "tie" in decision_line(d) for d in sticky)


def test_real_ties_still_say_so():
    assert any(d.tie.startswith("tie of") and "tie of" in decision_line(d) for d in decisions("least_loaded"))
