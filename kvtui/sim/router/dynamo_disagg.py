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

Where it is simpler: Dynamo routes the decode request after the prefill returns; kvtui picks both
at arrival (the decode worker's load then is what decides), and the request waits for room on
its decode node if that node filled meanwhile (kvtui/sim/handoff.py).
"""

from __future__ import annotations

from typing import Sequence

from kvtui.events import Event, FirstToken, KVTransferStarted, NodeDown, RequestCompleted, RequestRejected
from kvtui.scenario.model import Router as RouterConfig
from kvtui.sim.request import Request
from kvtui.sim.router.dynamo import Dynamo
from kvtui.sim.router.pair import PairDecision, PairPolicy
from kvtui.sim.router.state import NodeState


class DynamoDisagg(PairPolicy):
    EVENT_TYPES = (FirstToken, RequestCompleted, RequestRejected, NodeDown, KVTransferStarted)
    READS_TIERS = True
    prefill: Dynamo
    decode: Dynamo

    @classmethod
    def from_config(cls, cfg: RouterConfig) -> "DynamoDisagg":
        decode = Dynamo(prefill_load_scale=0.0, credits=(0.0, 0.0))
        return cls(Dynamo.from_config(cfg), decode, cfg.disaggregation.local_prefill_tokens)

    def prefill_locally(self, req: Request, d: NodeState, block_size: int) -> str:
        """`prefill_remote` said no: the decode worker's uncached part is within max_local_prefill_length."""
        hit = d.prefix * block_size
        if req.prompt_tokens - hit > self.threshold:
            return ""
        return (f"prefill local on {d.name}: {req.prompt_tokens} - {hit} cached = {req.prompt_tokens - hit} tokens "
                f"<= max_local_prefill_length {self.threshold}")

    def routed_pair(self, req: Request, pair: PairDecision, states: Sequence[NodeState]) -> None:
        prefill, decode = pair.nodes()
        if pair.remote:
            self.prefill.routed(req, prefill, states)
        self.decode.routed(req, decode, states)

    def on_event(self, ev: Event) -> None:
        match ev:
            case KVTransferStarted():
                self.prefill._free(ev.request)  # the prefill worker is done with it
            case _:
                self.prefill.on_event(ev)
                self.decode.on_event(ev)

    def report(self) -> dict:
        return {"dynamo_disagg": {"prefill": self.prefill.report()["dynamo"], "decode": self.decode.report()["dynamo"]}}
