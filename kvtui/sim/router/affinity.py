"""Session affinity: a conversation's turns go where its earlier turns went.

This is the sticky-session routing of classic load balancers (and the first rule of the seed's
cache-aware lifecycle): the node that served turn k holds turn k's blocks, which are the prefix
of turn k+1. A new session, or one whose node is down or full, goes to the least-loaded node.
"""

from __future__ import annotations

from kvtui.sim.request import Request
from kvtui.sim.router.base import ClusterView, Decision, NodeState, Policy, candidates, least_loaded
from kvtui.sim.router.registry import register


@register("session_affinity")
class SessionAffinity(Policy):
    name = "session_affinity"

    def choose(self, req: Request, view: ClusterView, states: list[NodeState], ok: list[NodeState]) -> Decision:
        home = view.sessions.get(req.session)
        scores = {s.name: (1.0 if s.name == home else 0.0) for s in ok}
        for s in ok:
            if s.name == home:
                return Decision(s.name, f"session affinity: {req.session} lives on {s.name}", candidates(states, scores))
        pick = least_loaded(ok)
        why = "new session" if home is None else f"{home} unavailable"
        return Decision(pick.name, f"{why}: least loaded {pick.name} ({pick.active} active)", candidates(states, scores))
