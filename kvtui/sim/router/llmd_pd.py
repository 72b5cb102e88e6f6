"""llm_d_pd: llm-d's prefill/decode profile — the prefix, queue and KV scorers run on each pool.

After llm-d-inference-scheduler (commit 06c08c08, pkg/plugins/profile/pd_profile_handler.go and
prefix_based_pd_decider.go). The `pd-profile-handler` runs the decode profile first and picks a
decode pod; then its decider asks whether a prefill is worth sending elsewhere
(`PrefixBasedPDDecider.decide`): with `nonCachedTokens` 0 always; otherwise not when the prompt
is shorter than `nonCachedTokens`, nor when the part of it the chosen decode pod does not hold
(prompt minus its prefix-cache match) is shorter; else the prefill profile picks a prefill pod.
Each profile is llm-d's scorer stack, kvtui's `load_prefix` (prefix-cache, queue and
KV-utilisation scorers with `router.weights`, a max-score picker with random ties) restricted to
its pool. `router.disaggregation.local_prefill_tokens` is `nonCachedTokens`.

Where it is simpler: llm-d estimates the prompt's tokens from its characters (4 per token);
kvtui knows them. A decode-only request is prefilled by the decode pod itself, as llm-d's
sidecar then sends it there without a prefill header.
"""

from __future__ import annotations

from kvtui.scenario.model import Router as RouterConfig
from kvtui.sim.request import Request
from kvtui.sim.router.load_prefix import LoadPrefix
from kvtui.sim.router.pair import PairPolicy
from kvtui.sim.router.state import NodeState


class LlmdPD(PairPolicy):
    @classmethod
    def from_config(cls, cfg: RouterConfig) -> "LlmdPD":
        return cls(LoadPrefix.from_config(cfg), LoadPrefix.from_config(cfg), cfg.disaggregation.local_prefill_tokens)

    def prefill_locally(self, req: Request, d: NodeState, block_size: int) -> str:
        """`PrefixBasedPDDecider.decide` said no: why the decode pod prefills the request itself."""
        t = self.threshold
        if t <= 0:
            return ""
        if req.prompt_tokens < t:
            return f"decode only on {d.name}: prompt {req.prompt_tokens} tokens < nonCachedTokens {t}"
        uncached = req.prompt_tokens - d.prefix * block_size
        if uncached < t:
            return f"decode only on {d.name}: {uncached} tokens not cached there < nonCachedTokens {t}"
        return ""
