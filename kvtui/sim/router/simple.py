"""Cache-blind policies: the baselines every KV-aware router is measured against."""

from __future__ import annotations

from typing import Sequence

from kvtui.sim.request import Request
from kvtui.sim.router.base import Context, Policy
from kvtui.sim.router.state import Decision, NodeState, candidates, least_loaded, tie_note, tie_text


class RoundRobin(Policy):
    """The next eligible node after the last one picked (skipping nodes that would refuse)."""

    def __init__(self) -> None:
        self._next = 0

    def choose(self, req: Request, ctx: Context, states: Sequence[NodeState], ok: list[NodeState]) -> Decision:
        n = len(states)
        for step in range(n):
            s = states[(self._next + step) % n]
            if s.eligible:
                self._next = (self._next + step + 1) % n
                return Decision(s.name, f"round robin: {s.name} is next in turn", candidates(states, {s.name: 1.0}))
        raise AssertionError("choose is only called with an eligible node")


class RandomPick(Policy):
    """Uniformly at random among eligible nodes, from the simulation's seeded RNG."""

    def choose(self, req: Request, ctx: Context, states: Sequence[NodeState], ok: list[NodeState]) -> Decision:
        pick = ok[int(ctx.rng.integers(len(ok)))]
        return Decision(pick.name, f"random: drew {pick.name} of {len(ok)} eligible", candidates(states, {pick.name: 1.0}))


class LeastLoaded(Policy):
    """Fewest active (running + waiting) requests; then most free blocks; then the seeded RNG."""

    def choose(self, req: Request, ctx: Context, states: Sequence[NodeState], ok: list[NodeState]) -> Decision:
        pick, margin, tied = least_loaded(ok, ctx.rng)
        scores = {s.name: -float(s.active) for s in ok}
        others = ", ".join(str(s.active) for s in ok if s is not pick) or "none"
        return Decision(
            pick.name,
            f"least loaded: {pick.name} has {pick.active} active (others {others}){tie_note(tied)}",
            candidates(states, scores),
            margin,
            tie_text(tied),
        )
