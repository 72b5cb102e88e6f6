"""The Router's request path for a prefill/decode policy: split the snapshots into the two pools,
ask the policy for both picks, record both decisions, hand the request to its prefill node
marked with its decode node (kvtui/sim/router/router.py calls this instead of its one-pick
path when the policy is `PAIRED`). For a policy that picks the decode node when the prefill
ends, the handoff asks `route_decode` then (kvtui/sim/handoff.py)."""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, Callable, Protocol, Sequence

from kvtui.events import DecodeRouted, RouteDecided
from kvtui.sim.request import Request
from kvtui.sim.router.approx import ApproxIndex
from kvtui.sim.router.base import Context
from kvtui.sim.router.pair import PairDecision, PairPolicy
from kvtui.sim.router.state import Decision, NodeState

if TYPE_CHECKING:
    from kvtui.sim import loop
    from kvtui.sim.bus import Bus
    from kvtui.sim.node import Node


class RouterCore(Protocol):
    """What the pair path uses of the Router (kvtui/sim/router/router.py), named here rather
    than imported: the Router imports this module, and a module imported by the Router must not
    import it back (tests/test_import_rules.py)."""

    @property
    def policy(self) -> object: ...
    @property
    def policy_name(self) -> str: ...
    @property
    def nodes(self) -> Sequence[Node]: ...
    @property
    def node_by_name(self) -> dict[str, Node]: ...
    @property
    def block_size(self) -> int: ...
    @property
    def ctx(self) -> Context: ...
    @property
    def env(self) -> loop.Environment: ...
    @property
    def bus(self) -> Bus: ...
    @property
    def sessions(self) -> dict[str, str]: ...
    @property
    def session_sink(self) -> Callable[[str, str], None] | None: ...
    @property
    def approx(self) -> ApproxIndex | None: ...
    @property
    def approx_blocks(self) -> int: ...

    def observe(self, req: Request, keys: Sequence[int]) -> list[NodeState]: ...
    def reject(self, req: Request, node: str | None, reason: str) -> None: ...
    def _check_staleness(self, decision: Decision, states: Sequence[NodeState], keys: Sequence[int]) -> str: ...
    def _emit_decision(self, req: Request, decision: Decision, prompt_blocks: int, stale: str) -> None: ...


class PairRoute:
    def __init__(self, router: RouterCore) -> None:
        assert isinstance(router.policy, PairPolicy)
        self.router = router
        self.policy = router.policy
        self.prefill_names = {n.name for n in router.nodes if n.spec.role != "decode"}
        self.decode_names = {n.name for n in router.nodes if n.spec.role != "prefill"}
        self.stats = {"remote": 0, "local": 0}

    def route(self, req: Request) -> None:
        r = self.router
        keys = req.block_keys[: req.prompt_tokens // r.block_size]
        states = r.observe(req, keys)
        r.ctx.now = r.env.now
        prefill_pool = [s for s in states if s.name in self.prefill_names]
        decode_pool = [s for s in states if s.name in self.decode_names]
        pair = self.policy.decide_pair(req, r.ctx, prefill_pool, decode_pool)
        stale = r._check_staleness(pair.prefill, states, keys) if pair.decode is None or pair.decode.node is not None else ""
        self._record(req, pair, len(keys), stale)
        problem = self._problem(pair, states)
        if problem is not None:
            r.reject(req, *problem)
            return
        self._hand_over(req, pair, states, keys)

    def _record(self, req: Request, pair: PairDecision, prompt_blocks: int, stale: str) -> None:
        """Both decisions as events, or two skipped numbers when nobody reads them."""
        r = self.router
        if not r.bus.listened(RouteDecided):
            r.bus.skip()
        else:
            r._emit_decision(req, pair.prefill, prompt_blocks, stale)
        if pair.decode is not None:
            self._record_decode(req, pair.decode, pair.prefill.node, pair.remote)

    def _record_decode(self, req: Request, d: Decision, prefill_node: str | None, remote: bool) -> None:
        r = self.router
        if not r.bus.listened(DecodeRouted):
            r.bus.skip()
            return
        r.bus.emit(DecodeRouted, request=req.id, node=d.node, prefill_node=prefill_node, remote=remote,
                   policy=r.policy_name, reason=d.reason, candidates=d.candidates, margin=round(d.margin, 6), tie=d.tie)

    def _problem(self, pair: PairDecision, states) -> tuple[str | None, str] | None:
        """(node, reason) when the pair cannot be served: a pick refused, or a picked node that
        would refuse the request now (policies pick eligible nodes; this is the guard)."""
        for decision in (pair.decode, pair.prefill):
            if decision is not None and decision.node is None:
                return None, decision.reason
        for name in dict.fromkeys(n for n in (pair.prefill.node, pair.decode and pair.decode.node) if n):
            problem = next(s.problem for s in states if s.name == name)
            if problem is not None:
                return name, problem
        return None

    def _hand_over(self, req: Request, pair: PairDecision, states, keys) -> None:
        r = self.router
        prefill, decode = pair.nodes()
        r.sessions[req.session] = prefill
        if r.session_sink is not None:
            r.session_sink(req.session, prefill)
        if r.approx is not None:
            r.approx.routed(prefill, keys[: r.approx_blocks])
        self.stats["remote" if pair.remote else "local"] += 1
        self.policy.routed_pair(req, pair, states)
        req.decode_node = decode if pair.remote else None
        r.node_by_name[prefill].enqueue(req)

    def route_decode(self, req: Request, prefill_node: str) -> tuple[str | None, str]:
        """The decode pick of a request whose prefill just ended on `prefill_node` (a policy that
        picks then): (node, reason), node None when no decode node can take it. The prefill node
        is no candidate: its KV moves to another worker, as Dynamo's decode pool is other workers."""
        r = self.router
        keys = req.block_keys[: req.prompt_tokens // r.block_size]
        states = r.observe(req, keys)
        r.ctx.now = r.env.now
        pool = [replace(s, problem=s.problem or f"{req.id} was prefilled here: its KV moves to a decode worker")
                if s.name == prefill_node else s for s in states if s.name in self.decode_names]
        decision = self.policy.decide_decode(req, r.ctx, pool)
        self._record_decode(req, decision, prefill_node, decision.node is not None)
        if decision.node is not None:
            self.policy.routed_decode(req, decision.node, states)
        return decision.node, decision.reason
