"""The seed project's cache-aware router.

Its lifecycle, in order (each step only among nodes that would admit the request now):
1. session affinity — a conversation's next turn goes to the node that served the last one;
2. exact hit — a node whose KV index entry covers every full block of the prompt;
3. longest prefix — the node holding the most leading prompt blocks (ties: least loaded);
4. fill — a miss goes to the least-loaded node, or with `fill: best_fit` to the node that is
   left with the fewest free blocks while still fitting the request (the seed's allocator,
   which packs requests to keep whole nodes free for large ones);
5. register — the engine records the session's node so step 1 finds it next time.

Steps 2-3 are the prefix-overlap scoring that Dynamo's KV router and llm-d's prefix-cache scorer
do with a global block index fed by KV events; this policy takes the best overlap outright,
with no load term, which is why it can melt one hot node (compare `least_loaded`).
"""

from __future__ import annotations

from kvtui.sim.request import Request
from kvtui.sim.router.base import (
    ClusterView,
    Decision,
    NodeState,
    Policy,
    candidates,
    least_loaded,
)
from kvtui.sim.router.registry import register


@register("cache_aware")
class CacheAware(Policy):
    name = "cache_aware"

    def __init__(self, fill: str = "least_loaded") -> None:
        self.fill = fill

    def choose(self, req: Request, view: ClusterView, states: list[NodeState], ok: list[NodeState]) -> Decision:
        total = req.prompt_tokens // view.block_size
        scores = {s.name: float(s.prefix) for s in ok}
        cands = candidates(states, scores)

        home = view.sessions.get(req.session)
        for s in ok:
            if s.name == home:
                return Decision(
                    s.name,
                    f"session affinity: {req.session} lives on {s.name} (prefix {s.prefix}/{total} blocks)",
                    cands,
                )
        best = max(ok, key=lambda s: (s.prefix, -s.active, s.free))
        if total and best.prefix >= total:
            return Decision(best.name, f"exact hit {best.prefix}/{total} blocks on {best.name}", cands)
        if best.prefix > 0:
            others = ", ".join(f"{s.name} {s.prefix}" for s in ok if s is not best) or "no other node"
            return Decision(
                best.name, f"prefix {best.prefix}/{total} blocks on {best.name} (vs {others})", cands
            )
        return self._fill(req, ok, states, view, total)

    def _fill(
        self, req: Request, ok: list[NodeState], states: list[NodeState], view: ClusterView, total: int
    ) -> Decision:
        if self.fill == "best_fit":
            need = -(-(req.prompt_tokens + req.output_tokens - 1) // view.block_size)
            fits = [s for s in ok if s.free >= need]
            if fits:
                pick = min(fits, key=lambda s: (s.free - need, s.active))
                scores = {s.name: -float(s.free - need) for s in fits}
                return Decision(
                    pick.name,
                    f"miss (0/{total} blocks anywhere): best fit {pick.name} leaves {pick.free - need} of {pick.total} free",
                    candidates(states, scores),
                )
        pick = least_loaded(ok)
        scores = {s.name: -float(s.active) for s in ok}
        return Decision(
            pick.name,
            f"miss (0/{total} blocks anywhere): least loaded {pick.name} ({pick.active} active, {pick.free} free)",
            candidates(states, scores),
        )
