"""dynamo_disagg: NVIDIA Dynamo's disaggregated serving — KV-aware prefill pick, decode by load.

After ai-dynamo/dynamo's disaggregation design (docs/design_docs/disagg_serving.md, read at commit
bed29a16 of a mirror, wxsms/dynamo: the
`PrefillRouter` selects a prefill worker "using KV-aware routing (based on cache overlap scores
and load)", then routes the decode request) and the KV router kvtui's `dynamo` policy models
(kvtui/sim/router/dynamo.py). Here:

- the prefill pick is the `dynamo` policy over the prefill pool: lowest
  `prefill_load_scale x credited prefill blocks + decode blocks`, with its own bookkeeping of
  each prefill worker's active requests (freed when the prefill is done and the KV leaves);
- the decode pick is the same router with no prefill term (`prefill_load_scale` 0): the fewest
  decode blocks (active blocks + this prompt's blocks not already active there), i.e. by load;
- conditional disaggregation is Dynamo's `DisaggregatedRouter::prefill_remote`
  (lib/llm/src/disagg_router.rs, ai-dynamo/dynamo commit 3454aa8b): remote when `prefill_length - prefix_hit_length >
  max_local_prefill_length`, the hit being the decode worker's; otherwise the decode worker
  prefills locally. `router.disaggregation.local_prefill_tokens` is `max_local_prefill_length`.

The order of the picks is Dynamo 1.6.1's `PrefillRouter::generate`
(lib/llm/src/kv_router/prefill_router/mod.rs, the operator between migration and the decode
router; read at ai-dynamo/dynamo commit 000bf407, its 1.6.1 form checked against the
ai-dynamo-runtime 1.6.1 wheel, whose binary carries the same log lines, "Conditional disagg
routing to decode worker" and "Prefill completed, proceeding to decode"):

- with conditional disaggregation on, it first peeks the decode worker
  (`select_decode_worker_for_conditional_disagg`) and, when the request should stay there, pins
  it (`decode_worker_id`) and sends it to that worker alone: kvtui picks both at arrival then;
- otherwise it selects a prefill worker and dispatches the prefill (max_tokens 1); for vLLM
  (NixlConnector, the KV pull kvtui models) it awaits the prefill's response, whose
  `kv_transfer_params` the decode request needs (ai-dynamo 1.6.1 dynamo/vllm/handlers.py), and
  only then hands the decode request to the decode router, which picks the decode worker by
  load (overlap credit 0, `build_decode_router_override`). So kvtui picks the decode node when
  the prefill ends (`DECODE_AT_PREFILL_END`), from the decode pool as it is then, and its
  `DecodeRouted` comes then. (SGLang's bootstrap handoff dispatches the decode at once, with the
  prefill in the background; kvtui models vLLM's pull.) The peeked decode worker of a request
  that goes remote is not kept: upstream pins only the local case.
"""

from __future__ import annotations

from typing import Sequence

from kvtui.events import Event, FirstToken, KVTransferStarted, NodeDown, RequestCompleted, RequestRejected
from kvtui.scenario.model import Router as RouterConfig
from kvtui.sim.request import Request
from kvtui.sim.router.dynamo import Dynamo
from kvtui.sim.router.base import Context
from kvtui.sim.router.pair import PairDecision, PairPolicy, decode_state, local_prefill
from kvtui.sim.router.state import NodeState


class DynamoDisagg(PairPolicy):
    EVENT_TYPES = (FirstToken, RequestCompleted, RequestRejected, NodeDown, KVTransferStarted)
    READS_TIERS = True
    DECODE_AT_PREFILL_END = True
    prefill: Dynamo
    decode: Dynamo

    @classmethod
    def from_config(cls, cfg: RouterConfig) -> "DynamoDisagg":
        decode = Dynamo(prefill_load_scale=0.0, credits=(0.0, 0.0))
        return cls(Dynamo.from_config(cfg), decode, cfg.disaggregation.local_prefill_tokens)

    def decide_pair(self, req: Request, ctx: Context, prefill_pool: Sequence[NodeState], decode_pool: Sequence[NodeState]) -> PairDecision:
        """The conditional peek at a decode worker (only with a threshold), then the prefill worker;
        the decode pick of a remote prefill waits for the prefill's end (`decide_decode`)."""
        if self.threshold > 0:
            decode = self.decode.decide(req, ctx, decode_pool)
            if decode.node is not None and (why := self.prefill_locally(req, decode_state(decode_pool, decode.node), ctx.block_size)):
                return PairDecision(local_prefill(decode, why), decode)
        return PairDecision(self.prefill.decide(req, ctx, prefill_pool), None)

    def prefill_locally(self, req: Request, d: NodeState, block_size: int) -> str:
        """`prefill_remote` said no: the decode worker's uncached part is within max_local_prefill_length."""
        hit = d.prefix * block_size
        if req.prompt_tokens - hit > self.threshold:
            return ""
        return (f"prefill local on {d.name}: {req.prompt_tokens} - {hit} cached = {req.prompt_tokens - hit} tokens "
                f"<= max_local_prefill_length {self.threshold}")

    def routed_pair(self, req: Request, pair: PairDecision, states: Sequence[NodeState]) -> None:
        if pair.decode is not None:  # kept local: the decode worker prefills it
            self.decode.routed(req, pair.decode.node or "", states)
        else:
            self.prefill.routed(req, pair.prefill.node or "", states)

    def routed_decode(self, req: Request, node: str, states: Sequence[NodeState]) -> None:
        self.decode.routed(req, node, states)

    def on_event(self, ev: Event) -> None:
        match ev:
            case KVTransferStarted():
                self.prefill._free(ev.request)  # the prefill worker is done with it
            case _:
                self.prefill.on_event(ev)
                self.decode.on_event(ev)

    def report(self) -> dict:
        return {"dynamo_disagg": {"prefill": self.prefill.report()["dynamo"], "decode": self.decode.report()["dynamo"]}}
