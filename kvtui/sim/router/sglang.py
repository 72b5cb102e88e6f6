"""sglang_cache_aware: SGLang's model gateway cache-aware policy — balance first, then the tree.

After sgl-project/sglang sgl-model-gateway/src/policies/cache_aware.rs (`CacheAwarePolicy::
select_worker`; formerly sgl-router/src/policies/cache_aware.rs) and tree.rs (see
`kvtui.sim.router.radix_tree`). Per request:

1. Load is the router's own count of requests it sent to a worker and has not seen finish
   (`Worker::load()`: `WorkerLoadGuard` in core/worker.rs increments it at dispatch and
   decrements it when the response ends or fails), not what the engine reports. Here: +1 in
   `routed`, -1 on the request's RequestCompleted or RequestRejected, and a node's count is
   dropped when it goes down (its requests failed or come back through the router).
2. Imbalanced when `max - min > balance_abs_threshold` AND `max > balance_rel_threshold x min`
   (min/max over every worker the router knows, not only the healthy ones; here every node that
   is up). Then shortest queue: the least-loaded eligible worker (`select_worker_min_load`);
   the request is still inserted into that worker's tree.
3. Otherwise match the request against the approximate tree (built only from what the router
   itself sent, never from KV events): match rate = matched / request length. If it is above
   `cache_threshold`, the matched tenant; else, in the current gateway, the least-loaded healthy
   worker (`min_by_key(load)`: inside `select_worker` in sglang-router 0.3.2, the version the
   differential suite runs; later split into `select_worker_with_text` / `_with_tokens`), or,
   with `fallback: smallest_tree`, the tenant with the smallest tree (`tree.get_smallest_tenant()`,
   what sgl-router did before the gateway). The chosen worker's tree gets the request.
4. A background thread runs `tree.evict_tenant_by_size(max_tree_size)` every
   `eviction_interval_secs`; here the pass runs at the first decision at or after each multiple
   of `eviction_interval_s` of simulated time (the tree is only read at decisions, so that is
   the same thing), never on the wall clock.

Defaults are the gateway CLI's (main.rs: cache_threshold 0.3, balance_abs_threshold 64,
balance_rel_threshold 1.5, eviction_interval 120 s, max_tree_size 2^26 characters; the library's
`CacheAwareConfig::default()` has 0.5 / 32 / 1.1 / 30 s / 10,000 instead;
sglang-router 0.3.2's Python launcher, `RouterArgs`, starts it with eviction_interval_secs 60).

Where the simulator differs: SGLang matches on request text, characters; the simulator's
requests carry block keys, so the tree holds the request's full prompt blocks (`block_keys[:
prompt_tokens // block_size]`), the match rate is matched blocks / full prompt blocks, and
`max_tree_size` counts blocks (default 2^20: 2^26 characters at ~4 characters a token and 16
tokens a block).

Ties (`tie_break`), checked against the real gateway (sglang-router 0.3.2 over fake workers on
loopback, tests/differential/test_sglang_router.py): by default as the gateway breaks them —
`min_by_key` returns the first least-loaded worker in its list (here: cluster order), and on a
tree hit the tenant that first cached the matched text (the first tenant stamped on the
deepest matched node); `tie_break: random` draws among the tied instead, from the seeded RNG
(what kvtui did before; 88.6 % of its picks matched the gateway's). Nodes that would refuse the
request now are left out of the match, as SGLang leaves out unhealthy workers; the tree is
updated in `routed`, after admission, rather than inside the selection.
"""

from __future__ import annotations

from typing import Sequence

from kvtui.events import Event, NodeDown, NodeUp, RequestCompleted, RequestRejected
from kvtui.scenario.model import Router as RouterConfig
from kvtui.sim.request import Request
from kvtui.sim.router.base import Context, Policy
from kvtui.sim.router.radix_tree import RadixTree
from kvtui.sim.router.state import FIRST_IN_ORDER, RNG_DRAW, Decision, NodeState, candidates, pick_best, tie_note, tie_text


class SGLangCacheAware(Policy):
    EVENT_TYPES = (RequestCompleted, RequestRejected, NodeDown, NodeUp)

    def __init__(
        self,
        balance_abs_threshold: int = 64,
        balance_rel_threshold: float = 1.5,
        cache_threshold: float = 0.3,
        eviction_interval_s: float = 120.0,
        max_tree_size: int = 1_048_576,
        fallback: str = "least_loaded",
        tie_break: str = "deterministic",
    ) -> None:
        self.abs_threshold = balance_abs_threshold
        self.rel_threshold = balance_rel_threshold
        self.cache_threshold = cache_threshold
        self.eviction_interval = eviction_interval_s
        self.max_tree_size = max_tree_size
        self.fallback = fallback
        self.first = tie_break == "deterministic"
        self.how = FIRST_IN_ORDER if self.first else RNG_DRAW
        self.tree = RadixTree()
        self.inflight: dict[str, set[str]] = {}  # node -> request ids the router sent and saw no end of
        self.where: dict[str, str] = {}  # request id -> node
        self.down: set[str] = set()
        self.next_eviction = eviction_interval_s
        self.stats = {"imbalanced": 0, "cache_hit": 0, "cache_miss": 0, "evictions": 0}
        self._block_size = 16  # from the last decision's context (routed gets none)
        self._now = 0.0

    @classmethod
    def from_config(cls, cfg: RouterConfig) -> "SGLangCacheAware":
        c = cfg.sglang
        return cls(
            balance_abs_threshold=c.balance_abs_threshold,
            balance_rel_threshold=c.balance_rel_threshold,
            cache_threshold=c.cache_threshold,
            eviction_interval_s=c.eviction_interval_s,
            max_tree_size=c.max_tree_size,
            fallback=c.fallback,
            tie_break=c.tie_break,
        )

    # ------------------------------------------------------------------ bookkeeping
    def load(self, node: str) -> int:
        s = self.inflight.get(node)
        return len(s) if s else 0

    def is_imbalanced(self, loads: Sequence[int]) -> bool:
        """sglang-router 0.3.2 cache_aware.rs: `max - min > abs_threshold && max > min * rel_threshold`
        (saturating)."""
        if not loads:
            return False
        lo, hi = min(loads), max(loads)
        return max(hi - lo, 0) > self.abs_threshold and hi > lo * self.rel_threshold

    def maybe_evict(self, now: float) -> None:
        if self.eviction_interval <= 0 or now < self.next_eviction:
            return
        self.tree.evict(self.max_tree_size)
        self.stats["evictions"] += 1
        while self.next_eviction <= now:
            self.next_eviction += self.eviction_interval

    def routed(self, req: Request, node: str, states: Sequence[NodeState]) -> None:
        self._finish(req.id)  # rerouted after a node failure: it counted on its old node
        self.inflight.setdefault(node, set()).add(req.id)
        self.where[req.id] = node
        bs = self._block_size
        self.tree.insert(req.block_keys[: req.prompt_tokens // bs], node, self._now)

    def _finish(self, request: str) -> None:
        node = self.where.pop(request, None)
        if node is not None:
            self.inflight.get(node, set()).discard(request)

    def on_event(self, ev: Event) -> None:
        if isinstance(ev, (RequestCompleted, RequestRejected)):
            self._finish(ev.request)
        elif isinstance(ev, NodeDown):
            self.down.add(ev.node)
            for r in self.inflight.pop(ev.node, set()):
                self.where.pop(r, None)
            self.tree.remove_tenant(ev.node)  # remove_worker -> tree.remove_tenant
        elif isinstance(ev, NodeUp):
            self.down.discard(ev.node)
            self.tree.add_tenant(ev.node)

    # ------------------------------------------------------------------ the decision
    def choose(self, req: Request, ctx: Context, states: Sequence[NodeState], ok: list[NodeState]) -> Decision:
        self._block_size, self._now = ctx.block_size, ctx.now
        for s in states:
            if s.name not in self.down:
                self.tree.add_tenant(s.name)
        self.maybe_evict(ctx.now)

        keys = req.block_keys[: req.prompt_tokens // ctx.block_size]
        loads = {s.name: self.load(s.name) for s in states}
        known = [loads[s.name] for s in states if s.name not in self.down]
        lo, hi = (min(known), max(known)) if known else (0, 0)
        depth, tenants = self.tree.match(keys, [s.name for s in ok])
        rate = depth / len(keys) if keys else 0.0
        depth_of = {s.name: self.tree.match(keys, [s.name])[0] for s in ok}

        def extra(s: NodeState):
            return (("load", float(loads[s.name])), ("match", float(depth_of[s.name])), ("tree", float(self.tree.size(s.name))))

        def least_loaded() -> tuple[NodeState, float, int]:
            return pick_best(ok, lambda s: -loads[s.name], ctx.rng, self.first)

        if self.is_imbalanced(known):
            self.stats["imbalanced"] += 1
            pick, margin, tied = least_loaded()
            scores = {s.name: -float(loads[s.name]) for s in ok}
            reason = (
                f"{pick.name}: imbalanced (load max {hi} - min {lo} > {self.abs_threshold} and "
                f"{hi} > {self.rel_threshold:g}x{lo}), shortest queue {loads[pick.name]}"
            )
            return self._decision(pick.name, reason, tied, candidates(states, scores, extra), margin)

        if rate > self.cache_threshold and tenants:
            self.stats["cache_hit"] += 1
            name = self._matched_tenant(tenants, ctx)
            self.tree.touch(keys, depth, name, ctx.now)
            scores = {s.name: float(depth_of[s.name]) for s in ok}
            others = [v for n, v in scores.items() if n != name]
            margin = float(depth - max(others)) if others else 0.0
            reason = (
                f"{name}: tree match {depth}/{len(keys)} blocks = {rate:.2f} > {self.cache_threshold:g} "
                f"(load {loads[name]}, balanced: max {hi} - min {lo})"
            )
            how = "the first to cache the matched blocks" if self.first else RNG_DRAW
            return self._decision(name, reason, len(tenants), candidates(states, scores, extra), margin, how)

        self.stats["cache_miss"] += 1
        if tenants:
            self.tree.touch(keys, depth, tenants[0], ctx.now)
        if self.fallback == "smallest_tree":
            pick, margin, tied = pick_best(ok, lambda s: -self.tree.size(s.name), ctx.rng, self.first)
            scores = {s.name: -float(self.tree.size(s.name)) for s in ok}
            how = f"smallest tree {self.tree.size(pick.name)} blocks"
        else:
            pick, margin, tied = least_loaded()
            scores = {s.name: -float(loads[s.name]) for s in ok}
            how = f"least loaded {loads[pick.name]}"
        reason = f"{pick.name}: tree match {depth}/{len(keys)} = {rate:.2f} <= {self.cache_threshold:g}, {how}"
        return self._decision(pick.name, reason, tied, candidates(states, scores, extra), margin)

    def _matched_tenant(self, tenants: list[str], ctx: Context) -> str:
        """Of the tenants on the deepest matched node: the first to cache it, or one drawn."""
        if self.first or len(tenants) == 1:
            return tenants[0]
        return tenants[int(ctx.rng.integers(len(tenants)))]

    def _decision(self, node: str, reason: str, tied: int, cands, margin: float, how: str = "") -> Decision:
        how = how or self.how
        return Decision(node, reason + tie_note(tied, how), cands, margin, tie_text(tied, how))

    def report(self) -> dict:
        return {
            "sglang": {
                **self.stats,
                "evicted_blocks": self.tree.evicted_blocks,
                "tree_blocks": {n: v for n, v in sorted(self.tree.sizes.items())},
            }
        }
