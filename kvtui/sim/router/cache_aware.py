"""The seed project's cache-aware router, kept as the seed wrote it: a lesson, not a model.

Its lifecycle, in order (each step only among nodes that would admit the request now):
1. session affinity — a conversation's next turn goes to the node that served the last one;
2. exact hit — a node whose KV index entry covers every full block of the prompt;
3. longest prefix — the node holding the most leading prompt blocks (ties: least loaded);
4. fill — a miss goes to the least-loaded node, or with `fill: best_fit` to the node that is
   left with the fewest free blocks while still fitting the request (the seed's allocator,
   which packs requests to keep whole nodes free for large ones);
5. register — the router records the session's node so step 1 finds it next time.

Steps 2-3 take the best overlap outright, with no load term: when every request shares a first
block (a common system prompt, as in the Mooncake trace), every request goes to one node while
the others idle. The production routers weigh locality against load (see `load_prefix`,
`dynamo`, `sglang_cache_aware`, `predicted_latency`). Ties left after its own keys go to the
seeded RNG, as in every policy.
"""

from __future__ import annotations

from typing import Sequence

from kvtui.scenario.model import Router as RouterConfig
from kvtui.sim.request import Request
from kvtui.sim.router.base import Context, Policy
from kvtui.sim.router.state import Decision, NodeState, candidates, pick_best, pick_by_keys, tie_note, tie_text


class CacheAware(Policy):
    def __init__(self, fill: str = "least_loaded") -> None:
        self.fill = fill

    @classmethod
    def from_config(cls, cfg: RouterConfig) -> "CacheAware":
        return cls(fill=cfg.fill)

    def choose(self, req: Request, ctx: Context, states: Sequence[NodeState], ok: list[NodeState]) -> Decision:
        total = states[0].total
        scores = lambda: {s.name: float(s.prefix) for s in ok}  # noqa: E731  (built only if read)

        home = ctx.sessions.get(req.session)
        for s in ok:
            if s.name == home:
                return Decision(
                    s.name,
                    f"session affinity: {req.session} lives on {s.name} (prefix {s.prefix}/{total} blocks)",
                    candidates(states, scores),
                )
        if not any(s.prefix for s in ok):
            return self._fill(req, ok, states, ctx, total)
        keys = [(s.prefix, -s.running - s.waiting, s.free_blocks) for s in ok]
        best, margin, tied = pick_by_keys(ok, keys, ctx.rng)
        cands = candidates(states, scores)
        if total and best.prefix >= total:
            return Decision(best.name, f"exact hit {best.prefix}/{total} blocks on {best.name}{tie_note(tied)}", cands, margin, tie_text(tied))
        others = ", ".join(f"{s.name} {s.prefix}" for s in ok if s is not best) or "no other node"
        return Decision(
            best.name, f"prefix {best.prefix}/{total} blocks on {best.name} (vs {others}){tie_note(tied)}", cands, margin, tie_text(tied)
        )

    def _fill(self, req: Request, ok: list[NodeState], states: Sequence[NodeState], ctx: Context, total: int) -> Decision:
        """A miss everywhere. The seed picked by (prefix, load) first and only then saw the miss:
        that pick is not built (a key per node, the part of routing that grows with the
        cluster), but its tie draw is made, so the RNG stream stays the seed's. With every
        prefix 0 it tied exactly as least_loaded's keys tie."""
        loads = [(-s.running - s.waiting, s.free_blocks) for s in ok]  # least_loaded's keys, without its property call
        tied = loads.count(max(loads))
        if tied > 1:
            ctx.rng.integers(tied)  # the seed's draw for the (prefix, load) pick
        if self.fill == "best_fit":
            need = -(-(req.prompt_tokens + req.output_tokens - 1) // ctx.block_size)
            fits = [s for s in ok if s.free_blocks >= need]
            if fits:
                pick, margin, tied = pick_best(fits, lambda s: (-(s.free_blocks - need), -s.active), ctx.rng)
                scores = lambda: {s.name: -float(s.free_blocks - need) for s in fits}  # noqa: E731
                return Decision(
                    pick.name,
                    f"miss (0/{total} blocks anywhere): best fit {pick.name} leaves {pick.free_blocks - need} "
                    f"of {pick.usable_blocks} free{tie_note(tied)}",
                    candidates(states, scores),
                    margin,
                    tie_text(tied),
                )
        pick, margin, tied = pick_by_keys(ok, loads, ctx.rng)
        scores = lambda: {s.name: -float(s.active) for s in ok}  # noqa: E731
        return Decision(
            pick.name,
            f"miss (0/{total} blocks anywhere): least loaded {pick.name} ({pick.active} active, "
            f"{pick.free_blocks} free){tie_note(tied)}",
            candidates(states, scores),
            margin,
            tie_text(tied),
        )
