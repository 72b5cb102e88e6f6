"""Session affinity: a conversation's turns go where its earlier turns went.

This is the sticky-session routing of classic load balancers (and the first rule of the seed's
cache-aware lifecycle): the node that served turn k holds turn k's blocks, which are the prefix
of turn k+1. A new session, or one whose node is down or full, goes to the least-loaded node.
"""

from __future__ import annotations

from typing import Sequence

from kvtui.sim.request import Request
from kvtui.sim.router.base import Context, Policy
from kvtui.sim.router.state import Decision, NodeState, candidates, least_loaded, tie_note, tie_text


class SessionAffinity(Policy):
    def choose(self, req: Request, ctx: Context, states: Sequence[NodeState], ok: list[NodeState]) -> Decision:
        home = ctx.sessions.get(req.session)
        scores = {s.name: (1.0 if s.name == home else 0.0) for s in ok}
        for s in ok:
            if s.name == home:
                return Decision(s.name, f"session affinity: {req.session} lives on {s.name}", candidates(states, scores), 1.0)
        pick, margin, tied = least_loaded(ok, ctx.rng)
        why = "new session" if home is None else f"{home} unavailable"
        return Decision(
            pick.name,
            f"{why}: least loaded {pick.name} ({pick.active} active){tie_note(tied)}",
            candidates(states, scores),
            margin,
            tie_text(tied),
        )
