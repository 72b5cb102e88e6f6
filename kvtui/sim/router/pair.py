"""The interface of a prefill/decode router: two picks per request, one from each pool.

A disaggregated cluster has a prefill pool (nodes whose `role` is `prefill` or `both`) and a
decode pool (`decode` or `both`). A `PairPolicy` sees one snapshot per node of each pool and
returns a `PairDecision`: where the prompt is prefilled and where the request decodes. When
the two are the same node the request runs there colocated (conditional disaggregation, or a
`both` node chosen twice); otherwise its KV moves after the prefill (kvtui/sim/handoff.py).
The Router emits the first pick as `RouteDecided` and the second as `DecodeRouted`, each with
its pool's candidates and a sentence. A policy whose upstream routes the decode request only
once the prefill has returned (Dynamo) sets `DECODE_AT_PREFILL_END`: its `PairDecision` has no
decode pick at arrival, and `decide_decode` makes it when the prefill ends (its `DecodeRouted`
comes then, from the pool as it is then).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from kvtui.sim.request import DECODE_AT_PREFILL_END, Request
from kvtui.sim.router.base import Context, Policy
from kvtui.sim.router.state import Decision, NodeState


@dataclass(slots=True)
class PairDecision:
    prefill: Decision  # where the prompt is prefilled (the decode node itself when local)
    decode: Decision | None  # None: picked when the prefill ends (`PairPolicy.DECODE_AT_PREFILL_END`)

    def nodes(self) -> tuple[str, str]:
        """(prefill node, decode node) of a pair the router accepted; the decode node is
        DECODE_AT_PREFILL_END while it is still to be picked."""
        prefill = self.prefill.node
        decode = DECODE_AT_PREFILL_END if self.decode is None else self.decode.node
        assert prefill is not None and decode is not None, "a refused pair has no nodes"
        return prefill, decode

    @property
    def remote(self) -> bool:
        """Whether the KV moves: the prefill happens on another node than the decode (always, for
        a decode node picked later: that pick leaves the prefill node out)."""
        if self.decode is None:
            return self.prefill.node is not None
        return self.prefill.node is not None and self.prefill.node != self.decode.node


def local_prefill(decode: Decision, sentence: str) -> Decision:
    """The prefill pick of a request prefilled where it decodes: the decode pick's candidates."""
    return Decision(decode.node, sentence, decode.candidates)


def decode_state(states: Sequence[NodeState], name: str) -> NodeState:
    return next(s for s in states if s.name == name)


class PairPolicy(Policy):
    """The default order is llm-d's: pick the decode node first, then ask whether the prefill is
    worth sending elsewhere (conditional disaggregation), and only then pick a prefill node (its
    pd-profile-handler runs the decode profile before its decider). Policies with another order
    override `decide_pair` (dynamo_disagg, mooncake). `prefill` and `decode` are the one-pool
    policies."""

    PAIRED = True
    DECODE_AT_PREFILL_END = False  # the decode node is picked when the prefill ends, not at arrival

    def __init__(self, prefill: Policy, decode: Policy, threshold: int = 0) -> None:
        self.prefill = prefill
        self.decode = decode
        self.threshold = threshold  # router.disaggregation.local_prefill_tokens, as the policy reads it

    def decide_pair(self, req: Request, ctx: Context, prefill_pool: Sequence[NodeState], decode_pool: Sequence[NodeState]) -> PairDecision:
        decode = self.decode.decide(req, ctx, decode_pool)
        if decode.node is None:
            return PairDecision(decode, decode)
        why = self.prefill_locally(req, decode_state(decode_pool, decode.node), ctx.block_size)
        if why:
            return PairDecision(local_prefill(decode, why), decode)
        return PairDecision(self.prefill.decide(req, ctx, prefill_pool), decode)

    def prefill_locally(self, req: Request, decode: NodeState, block_size: int) -> str:
        """Why the decode node should prefill the request itself (a sentence), or "" to disaggregate."""
        return ""

    def routed_pair(self, req: Request, pair: PairDecision, states: Sequence[NodeState]) -> None:
        """Both picks were accepted (the request is on its way to its prefill node)."""

    def decide_decode(self, req: Request, ctx: Context, decode_pool: Sequence[NodeState]) -> Decision:
        """The decode pick of a `DECODE_AT_PREFILL_END` policy, when the prefill has ended."""
        return self.decode.decide(req, ctx, decode_pool)

    def routed_decode(self, req: Request, node: str, states: Sequence[NodeState]) -> None:
        """A decode pick made when the prefill ended was accepted."""

    def choose(self, req: Request, ctx: Context, states: Sequence[NodeState], ok: list[NodeState]) -> Decision:
        raise TypeError("a prefill/decode policy decides pairs (decide_pair), not single nodes")
