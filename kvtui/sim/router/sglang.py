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
   `cache_threshold`, the deepest matched node's cached tenant (see `radix_tree`); else, in the
   current gateway, the least-loaded healthy worker (`min_by_key(load)`: inside
   `select_worker` in sglang-router 0.3.2, the version the differential suite runs; later split
   into `select_worker_with_text` / `_with_tokens`), or, with `fallback: smallest_tree`, the
   tenant with the smallest tree (`tree.get_smallest_tenant()`, what sgl-router did before the
   gateway). The chosen worker's tree gets the request. The match happens only on this
   balanced path, and it is what takes an epoch and may re-stamp (the 1-in-8 touch); the
   imbalanced path only inserts. Workers join the tree as the gateway registers them (each
   join or leave re-inserts "" for every worker: epochs on the root).
4. A background thread runs `tree.evict_tenant_by_size(max_tree_size)` every
   `eviction_interval_secs` (`PeriodicTask`: it sleeps the interval, then runs a pass); here
   the pass runs at the first decision at or after each multiple of `eviction_interval_s` of
   simulated time, before that decision's match, never on the wall clock. The tree changes only
   at decisions and placements, and a pass leaves every tenant at or under the bound, so passes
   that fell due together with no decision between are one pass. The pass drops whole nodes
   (runs) of the least recently stamped leaves per tenant (sglang-router 0.3.2's epochs, see
   `radix_tree`); the differential suite checks it with eviction passes between decisions.

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
tree hit, of the tenants that hold the deepest matched run, the one cached there: the one that
created the run (the first to cache it), or once that one was evicted from the run, another
holder (the gateway takes the first of a per-process hash map, which kvtui cannot foresee;
here the first of them to have cached it). `tie_break: random` draws among the tenants of the
deepest matched run instead, and among the least loaded, from the seeded RNG (what kvtui did before;
88.6 % of its picks matched the gateway's). Nodes that would refuse the request now are left
out of the match, as SGLang leaves out unhealthy workers; the tree is updated in `routed`,
after admission, rather than inside the selection.
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
        self.members: list[str] = []  # workers registered in the tree, in the order they joined

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
        self.tree.insert(req.block_keys[: req.prompt_tokens // bs], node)

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
            if ev.node in self.members:
                self.members.remove(ev.node)
                self.tree.register(self.members)  # the remaining workers re-initialised
        elif isinstance(ev, NodeUp):
            self.down.discard(ev.node)

    # ------------------------------------------------------------------ the decision
    def _register(self, states: Sequence[NodeState]) -> None:
        """Workers join the gateway's tree one at a time at first sight, each join re-running
        `insert("", url)` for every worker registered so far (`init_cache_aware_policy`)."""
        for s in states:
            if s.name not in self.down and s.name not in self.members:
                self.members.append(s.name)
                self.tree.register(self.members)

    def choose(self, req: Request, ctx: Context, states: Sequence[NodeState], ok: list[NodeState]) -> Decision:
        self._block_size = ctx.block_size
        self._register(states)
        self.maybe_evict(ctx.now)

        keys = req.block_keys[: req.prompt_tokens // ctx.block_size]
        loads = {s.name: self.load(s.name) for s in states}
        known = [loads[s.name] for s in states if s.name not in self.down]
        lo, hi = (min(known), max(known)) if known else (0, 0)
        depth_of = {s.name: self.tree.match_depth(keys, s.name) for s in ok}

        def extra(s: NodeState):
            return (("load", float(loads[s.name])), ("match", float(depth_of[s.name])), ("tree", float(self.tree.size(s.name))))

        def least_loaded() -> tuple[NodeState, float, int]:
            return pick_best(ok, lambda s: -loads[s.name], ctx.rng, self.first)

        if self.is_imbalanced(known):  # the gateway inserts but does not match here
            self.stats["imbalanced"] += 1
            pick, margin, tied = least_loaded()
            scores = {s.name: -float(loads[s.name]) for s in ok}
            reason = (
                f"{pick.name}: imbalanced (load max {hi} - min {lo} > {self.abs_threshold} and "
                f"{hi} > {self.rel_threshold:g}x{lo}), shortest queue {loads[pick.name]}"
            )
            return self._decision(pick.name, reason, tied, candidates(states, scores, extra), margin)

        found = self.tree.prefix_match(keys, [s.name for s in ok])
        depth = found.depth
        rate = depth / len(keys) if keys else 0.0
        if rate > self.cache_threshold and found.tenant is not None:
            self.stats["cache_hit"] += 1
            name, tied = found.tenant, len(found.holders)
            if not self.first and tied > 1:  # tie_break: random draws among the holders
                name = found.holders[int(ctx.rng.integers(tied))]
            scores = {s.name: float(depth_of[s.name]) for s in ok}
            others = [v for n, v in scores.items() if n != name]
            margin = float(depth - max(others)) if others else 0.0
            reason = (
                f"{name}: tree match {depth}/{len(keys)} blocks = {rate:.2f} > {self.cache_threshold:g} "
                f"(load {loads[name]}, balanced: max {hi} - min {lo})"
            )
            how = "the first to cache the matched blocks" if self.first else RNG_DRAW
            return self._decision(name, reason, tied, candidates(states, scores, extra), margin, how)

        self.stats["cache_miss"] += 1
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
