"""The Router (the global scheduler): policy, KV index, session table, and the request path.

After the router objects of BLIS, Vidur and Dynamo: one object owns everything a routing
decision depends on, and the engine hands it requests. It

- keeps the global KV index, fed only by KV events, delivered `router.index.delay_ms` late
  (the event transport; llm-d's indexer consumes vLLM's KV events over ZMQ), and optionally the
  approximate index of what it routed itself (`router.index.mode: approximate`);
- builds one `NodeState` snapshot per node for the policy (policies never touch a node);
- applies the routing overhead (and the API server's per-request overhead), then asks the policy, emits `RouteDecided` with every
  candidate, the margin and any staleness, and hands the request to the node or rejects it;
- holds requests while the control plane recovers (or rejects them, `while_down: reject`);
- counts stale answers: for the chosen node it compares what the index said with what the
  node's pool holds (an oracle check the simulation can make and a real router cannot).

The control plane (kvtui.sim.control_plane) talks to the Router only: it takes over the KV
event sink (to write them to its log), records session routes, and drops and rebuilds the
index and the session table across a crash.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Callable, Sequence

import numpy as np
from kvtui.sim import loop

from kvtui.events import (
    BlocksEvicted,
    BlocksStored,
    Event,
    NodeCacheCleared,
    NodeDown,
    RequestRejected,
    RouteDecided,
)
from kvtui.scenario.model import Router as RouterConfig
from kvtui.sim.request import Request
from kvtui.sim.router.approx import ApproxIndex
from kvtui.sim.router.base import Context
from kvtui.sim.router.index import KVIndex, Match
from kvtui.sim.router.pair_route import PairRoute
from kvtui.sim.router.registry import make_policy
from kvtui.sim.router.state import Decision, NodeState, block_figures


def available_report(stats: dict) -> dict:
    """The result document's `routing.available`: prompt blocks routed (full blocks), the most
    any node held at each decision and what the chosen one held, summed; the rates over the
    prompt blocks, and the hit rate given away (available minus chosen, in points of it)."""
    blocks = stats["prompt_blocks"]

    def rate(n: int) -> float:
        return round(n / blocks, 6) if blocks else 0.0

    return {"prompt_blocks": blocks, "available_blocks": stats["available_blocks"], "chosen_blocks": stats["chosen_blocks"],
            "available_hit_rate": rate(stats["available_blocks"]), "chosen_hit_rate": rate(stats["chosen_blocks"]),
            "given_away": rate(stats["available_blocks"] - stats["chosen_blocks"])}

if TYPE_CHECKING:
    from kvtui.sim.bus import Bus
    from kvtui.sim.node import Node

KV_EVENTS = (BlocksStored, BlocksEvicted, NodeCacheCleared)


class Router:
    def __init__(
        self,
        bus: "Bus",
        nodes: Sequence["Node"],
        cfg: RouterConfig,
        policy: str,
        rng: np.random.Generator,
        block_size: int,
        on_finish: Callable[[Request, str], None],
        api_overhead_s: float = 0.0,
    ):
        self.bus = bus
        self.env: loop.Environment = bus.env
        self.nodes = list(nodes)
        self.node_by_name = {n.name: n for n in self.nodes}
        self.position = {n.name: i for i, n in enumerate(self.nodes)}  # a node's snapshot in `observe`'s list
        self._idle: list[NodeState | None] = [None] * len(self.nodes)  # see observe
        self._idle_shape: tuple[int, int] | None = None
        self.cfg = cfg
        self.policy_name = policy
        self.policy = make_policy(policy, cfg)
        self.sessions: dict[str, str] = {}  # session -> node; policies read it through ctx
        self.ctx = Context(rng=rng, block_size=block_size, sessions=self.sessions,
                           latency={n.name: n.latency for n in self.nodes})
        self.block_size = block_size
        self.on_finish = on_finish
        # the router's own time, then the API server's (tokenising) before a scheduler sees it
        self.overhead = cfg.routing_overhead_ms / 1000.0 + api_overhead_s
        self.delay = cfg.index.delay_ms / 1000.0

        weights = {"gpu": cfg.index.medium_weights.gpu, "cpu": cfg.index.medium_weights.cpu}
        self.index = KVIndex(cfg.index.scorer, weights, cfg.index.pods_per_key)
        self.approx: ApproxIndex | None = None
        if cfg.index.mode == "approximate":
            cap = cfg.index.approx_blocks_per_node
            self.approx = ApproxIndex({n.name: cap or n.pool.num_blocks for n in self.nodes})
        self.approx_blocks = max(1, cfg.index.approx_max_prefix_tokens // block_size)
        self._index_sink = self.index.on_event
        self.kv_sink: Callable[[Event], None] = self._index_sink  # the control plane puts itself here
        self.session_sink: Callable[[str, str], None] | None = None

        self.in_routing = 0
        self.down = False
        self.reject_while_down = False
        self.held: list[Request] = []
        self.last_stale, self.last_stale_blocks = "", 0  # the last decision's gap (a replicated store's stale reads)
        # per chosen node: [decisions, prompt blocks, available, chosen, stale decisions] (the app's
        # belief panel); the totals (`stats`) are their sums, so each decision is counted once
        self.by_node: dict[str, list[int]] = {n.name: [0, 0, 0, 0, 0] for n in self.nodes}
        self.said_cached = self.said_missing = 0  # stale decisions: the index said more / less than the pool
        self.last_match: dict[str, Match] = {}  # the precise index's answer at the last decision
        self.index_is_truth = True  # False: available vs achieved always asks the pools (tests)
        self.pairs: PairRoute | None = PairRoute(self) if self.policy.PAIRED else None

        bus.listen(self._on_kv_event, KV_EVENTS, {BlocksStored: self._stored, BlocksEvicted: self._evicted})
        bus.listen(self._on_node_down, (NodeDown,))
        if self.policy.EVENT_TYPES:
            bus.listen(self.policy.on_event, self.policy.EVENT_TYPES)

    # ------------------------------------------------------------------ KV events
    def _on_kv_event(self, ev: Event) -> None:
        """Deliver a KV event to the index, `delay_ms` late (in order: every event waits the same)."""
        if self.delay <= 0:
            self.kv_sink(ev)
            return
        self.env.call_later(self.delay, lambda _t: self.kv_sink(ev))

    def _stored(self, node: str, request: str, group: str, keys, parent: int | None, first: int, medium: str) -> None:
        """BlocksStored by the bus's direct path: straight into the index when it is the sink
        and nothing delays it, else as the event object (numbered as the bus numbered it)."""
        if self.kv_sink is self._index_sink and self.delay <= 0:
            self.index.add(node, keys, medium, first)
        else:
            self._on_kv_event(BlocksStored(self.bus.seq, self.env.now, node, request, group, keys, parent, first, medium))

    def _evicted(self, node: str, keys, groups, for_request: str, medium: str) -> None:
        if self.kv_sink is self._index_sink and self.delay <= 0:
            self.index.remove(node, keys, medium)
        else:
            self._on_kv_event(BlocksEvicted(self.bus.seq, self.env.now, node, keys, groups, for_request, medium))

    def _on_node_down(self, ev: Event) -> None:
        match ev:
            case NodeDown(node=node) if self.approx is not None:
                self.approx.forget(node)

    # ------------------------------------------------------------------ the request path
    def submit(self, req: Request) -> None:
        """A request reaches the router: decide after the routing overhead."""
        self.in_routing += 1
        if self.overhead > 0:
            self.env.call_later(self.overhead, lambda _ev: self._route_or_hold(req))
        else:
            self._route_or_hold(req)

    def _route_or_hold(self, req: Request) -> None:
        if self.down:
            if self.reject_while_down:
                self.in_routing -= 1
                self.reject(req, None, "control plane is recovering (while_down: reject)")
            else:
                self.held.append(req)
            return
        self.route_now(req)

    def route_now(self, req: Request) -> None:
        """Decide and hand over to the node (the router is up)."""
        self.in_routing -= 1
        if self.pairs is not None:
            self.pairs.route(req)  # a prefill/decode policy: two picks
            return
        keys = req.block_keys[: req.prompt_tokens // self.block_size]
        states = self.observe(req, keys)
        self.ctx.now = self.env.now
        decision = self.policy.decide(req, self.ctx, states)
        stale = self._check_staleness(decision, states, keys)
        if not self.bus.listened(RouteDecided):
            self.bus.skip()  # nobody reads the candidates: they are never built
        else:
            self._emit_decision(req, decision, len(keys), stale)
        if decision.node is None:
            self.reject(req, None, decision.reason)
            return
        node = self.node_by_name[decision.node]
        # The snapshot was taken this instant: its admission check still holds (policies only
        # pick eligible nodes; a policy that picked an ineligible one is refused here).
        problem = states[self.position[node.name]].problem
        if problem is not None:
            self.reject(req, node.name, problem)
            return
        self.sessions[req.session] = node.name
        if self.session_sink is not None:
            self.session_sink(req.session, node.name)
        if self.approx is not None:
            self.approx.routed(node.name, keys[: self.approx_blocks])
        self.policy.routed(req, node.name, states)
        node.enqueue(req)

    def _emit_decision(self, req: Request, decision: Decision, prompt_blocks: int, stale: str) -> None:
        self.bus.emit(
            RouteDecided,
            request=req.id,
            node=decision.node,
            policy=self.policy_name,
            reason=decision.reason,
            candidates=decision.candidates,
            prompt_blocks=prompt_blocks,
            session=req.session,
            margin=round(decision.margin, 6),
            stale=stale,
            tie=decision.tie,
        )

    def reject(self, req: Request, node: str | None, reason: str) -> None:
        self.bus.emit(RequestRejected, request=req.id, node=node, reason=reason)
        self.on_finish(req, "rejected")

    # ------------------------------------------------------------------ snapshots
    def observe(self, req: Request, keys: Sequence[int]) -> list[NodeState]:
        """One snapshot per node, in `self.nodes`' order (`self.position`), with the prefix the
        policy's index credits it.

        A node the index does not credit and that would admit the request gets the snapshot it
        got at the last decision when nothing that snapshot holds has changed (same request
        shape, running and waiting counts, free blocks; up, and still big enough for the
        request). Why: this loop is the part of a request's cost that grows with the cluster,
        and at 64 nodes ~94 % of the snapshots of the standard workload equal the node's
        previous one (decode segments change a node's figures at their ends, not per token).
        The checks are the inputs of `Node.refusal`'s None and of every field, so a reused
        snapshot is the one a rebuild would give (tests/sim/router/test_snapshot_reuse.py)."""
        for node in self.nodes:
            node.settle()  # a node in a decode segment settles first (Node.settle): its pool and KV events as single steps
        precise = self.last_match = self.index.match(keys)
        used, other = (precise, None) if self.approx is None else (self.approx.match(keys[: self.approx_blocks]), precise)
        total = len(keys)
        scored = total if self.approx is None else min(total, self.approx_blocks)  # the plugin scores the blocks it hashed
        none = Match(0, 0.0)
        prefill = self.policy.READS_PREFILL_TOKENS
        tiers = self.policy.READS_TIERS and self.approx is None
        iteration = self.policy.READS_ITERATION_LEFT
        queue_s = self.policy.READS_QUEUE_SECONDS
        now = self.env.now
        longest = req.prompt_tokens + req.output_tokens - 1
        need = -(-longest // self.block_size) or 1  # what Node.admission_problem works out
        plain = other is None and not (prefill or iteration or queue_s)  # no field that moves with time alone
        idle = self._idle_snapshots((total, longest) if plain else None)
        out = []
        # Plain locals, positional fields, and no arithmetic for the nodes the index does not
        # credit (most of them, for most prompts).
        for i, node in enumerate(self.nodes):
            name = node.name
            m = used.get(name) if node.up else None
            if m is None:
                s = idle[i]
                if (s is not None and node.up and s.free_blocks == node.pool.free_queue.size
                        and s.running == len(node.running) and s.waiting == len(node.waiting) and need <= node.kv.capacity):
                    out.append(s)
                    continue
                prefix, score = 0, 0.0
            else:
                prefix, score = m.consecutive, (min(1.0, m.weighted / scored) if scored else 0.0)
            used_blocks, free, usable = block_figures(node.pool)
            s = NodeState(
                name,
                node.refusal(req, longest, need),
                prefix,
                score,
                total,
                len(node.running),
                len(node.waiting),
                used_blocks,
                free,
                usable,
                node.pending_prefill_tokens() if prefill else -1,
                -1 if other is None else other.get(name, none).consecutive,
                (self.index.gpu_run(name, keys, prefix) if prefix and tiers else prefix),
                node.iteration_left(now) * 1000.0 if iteration else -1.0,
                node.pending_prefill_seconds() if queue_s else -1.0,
            )
            idle[i] = s if m is None and s.problem is None else None
            out.append(s)
        return out

    def _idle_snapshots(self, shape: tuple[int, int] | None) -> list[NodeState | None]:
        """The snapshots `observe` may reuse, per node: kept while requests have the same shape
        (prompt blocks, longest sequence), which the admission check and `total` depend on;
        a list of nothing to reuse (and not kept) when the policy reads a field that moves
        with time alone, or reads the approximate index."""
        if shape is None:
            return [None] * len(self.nodes)
        if shape != self._idle_shape:
            self._idle_shape, self._idle = shape, [None] * len(self.nodes)
        return self._idle

    def _check_staleness(self, decision: Decision, states: Sequence[NodeState], keys: Sequence[int]) -> str:
        """Compare the index's answer for the chosen node with its pool; count and describe a gap."""
        self.last_stale, self.last_stale_blocks = "", 0
        if decision.node is None:
            return ""
        said = states[self.position[decision.node]].prefix
        node = self.node_by_name[decision.node]
        holds = node.kv.held_prefix(keys) if node.up else 0
        mine = self.by_node[node.name]
        mine[0] += 1
        mine[1] += len(keys)
        mine[3] += holds
        mine[2] += self._available(keys, holds)
        if said == holds:
            return ""
        mine[4] += 1
        self.last_stale_blocks = abs(said - holds)
        if said > holds:
            self.said_cached += 1
            self.last_stale = f"index said {said} blocks cached on {node.name}, it holds {holds}"
        else:
            self.said_missing += 1
            self.last_stale = f"index said {said} blocks on {node.name}, it holds {holds} (not yet reported)"
        return self.last_stale

    def _available(self, keys: Sequence[int], holds: int) -> int:
        """Available against achieved: the longest prefix any up node held at the decision,
        against what the chosen node held (`holds`). Their difference is the hit the router
        gave away, whatever the reason (a stale index, load, or the policy's own choice)."""
        if holds < len(keys):
            return max(holds, self._best_held(keys))
        return holds

    @property
    def stats(self) -> dict[str, int]:
        """The routing totals: `by_node` summed (read per frame by the app, per run by `report`)."""
        d = blocks = available = chosen = stale = 0
        for row in self.by_node.values():
            d += row[0]
            blocks += row[1]
            available += row[2]
            chosen += row[3]
            stale += row[4]
        return {"decisions": d, "stale_decisions": stale, "stale_said_cached": self.said_cached,
                "stale_said_missing": self.said_missing, "prompt_blocks": blocks, "available_blocks": available,
                "chosen_blocks": chosen}

    def _best_held(self, keys: Sequence[int]) -> int:
        """The longest prefix of `keys` any up node holds. When the precise index gets every KV
        event as it is published (no delay, no control plane in between) and no node holds a
        step's events back (Node.has_unpublished: vLLM publishes at step end), it is the pools
        (tested), and the decision's own match answers: walking every node's pool per decision
        cost ~15 % of a 16-node run. Otherwise the pools are asked, node by node."""
        if (self.index_is_truth and self.kv_sink is self._index_sink and self.delay <= 0 and self.approx is None
                and not any(node.has_unpublished for node in self.nodes)):
            return max((m.consecutive for name, m in self.last_match.items() if self.node_by_name[name].up), default=0)
        return max((node.kv.held_prefix(keys) for node in self.nodes if node.up), default=0)

    # ------------------------------------------------------------------ control-plane downtime
    def hold(self, reject: bool) -> None:
        """The control plane is down: hold (or reject) what arrives until `release`."""
        self.down = True
        self.reject_while_down = reject

    def release(self) -> None:
        self.down = False
        held, self.held = self.held, []
        for req in held:
            self.route_now(req)

    # ------------------------------------------------------------------ figures
    def headline(self) -> str:
        """The routing part of the app's stats line: staleness when the index can be stale or
        approximate, and whatever the policy reports (prediction error)."""
        parts = []
        if self.delay > 0 or self.approx is not None:
            s = self.stats
            parts.append(f"stale index {s['stale_decisions']}/{s['decisions']} decisions")
        policy = self.policy.headline()
        if policy:
            parts.append(policy)
        return " · ".join(parts)

    def report(self) -> dict:
        """The result document's `routing` section."""
        s = self.stats
        return {
            "policy": self.policy_name,
            "index": {
                "mode": self.cfg.index.mode,
                "scorer": self.cfg.index.scorer,
                "delay_ms": self.cfg.index.delay_ms,
                "decisions": s["decisions"],
                "stale_decisions": s["stale_decisions"],
                "stale_said_cached": s["stale_said_cached"],
                "stale_said_missing": s["stale_said_missing"],
            },
            "available": available_report(s),
            **self.policy.report(),
        }
