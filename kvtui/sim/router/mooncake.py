"""mooncake: Mooncake's conductor — prefill node by estimated TTFT, decode node by load, SLO check.

After the paper (Qin et al., "Mooncake: A KVCache-centric Disaggregated Architecture for LLM
Serving", FAST'25; arXiv 2407.00079v3, §6.1 "Prefill Global Scheduling" and its Algorithm 1
"KVCache-centric Scheduling Algorithm", §7 "Overload-oriented Scheduling"). The conductor is
not open source (kvcache-ai/Mooncake ships the Transfer Engine and Store; its issue #977 is an
RFC to write one), so the paper is the source. Algorithm 1, per request:

- for every prefill instance, its prefix match `prefix_len` and an estimated
  TTFT = T_queue (the sum of the prefill times of the requests queued there) + T_prefill (the
  prefill of the part it does not hold, from a model of prompt length and prefix length fitted
  offline); the instance of the least TTFT wins, the first in pool order on a tie (lines 9-22
  update only on a strictly smaller TTFT);
- `SelectDecodingInstance(D)`: a decode instance by load, with its estimated TBT (line 24);
- the SLO check (lines 25-27, §7.1 early rejection): when TTFT > TTFT_SLO or TBT > TBT_SLO the
  request is rejected at once (HTTP 429 upstream) rather than prefilled and then found no room.

In kvtui: `prefix_len` is the KV index's consecutive match on the node; T_prefill is the
node's own latency model (its offline profile, kvtui/sim/latency.py `prefill_seconds`) for the
uncached tokens after the cached ones; T_queue is `Node.pending_prefill_seconds`; the decode
node is the one whose next decode step, with this request added to its running and queued
requests and their KV, the latency model times shortest (its TBT), then fewest requests, then
most free blocks, then the first in order. The SLOs are `router.mooncake` (0: each request's
own TTFT / TPOT SLO); the rejection's reason gives the estimate and the SLO it exceeds.

What kvtui cannot express, and leaves out:

- **Cache load balancing** (Algorithm 1 lines 11-16 and 28-30, §6.2): when the best prefix sits
  on another prefill instance and is `kvcache_balancing_threshold` times longer than this
  instance's, Mooncake prices moving it here (T_transfer) and then copies the hot blocks over
  (`TransferKVCache`) from its distributed CPU-memory KVCache pool. kvtui's engine moves KV only
  from a prefill node to its decode node after the prefill (kvtui/sim/handoff.py); there is no
  prefill-to-prefill pull before a prefill, so a TTFT priced with that move would not be the TTFT
  the run then has. kvtui's conductor is the paper's cache-aware branch only (the threshold at
  infinity): each instance is estimated with its own prefix.
- The TTFT estimate has no term for the prefill-to-decode move: Mooncake streams the KV layer by
  layer while it prefills (§5.2), and Algorithm 1 counts none; kvtui's measured TTFT includes the
  move and the decode node's first step (docs/disaggregation.md), so the estimate is the lower.
- The prediction-based rejection of §7.3 (forecasting the decode load a request will meet after
  its prefill) is not modelled: the check uses the decode node's load now.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from kvtui.scenario.model import MooncakeConfig
from kvtui.scenario.model import Router as RouterConfig
from kvtui.sim.latency import prefill_seconds
from kvtui.sim.request import Request
from kvtui.sim.router.base import Context, Policy
from kvtui.sim.router.pair import PairDecision, PairPolicy
from kvtui.sim.router.state import FIRST_IN_ORDER, Decision, NodeState, candidates, no_eligible, pick_best, tie_note, tie_text


@dataclass(frozen=True, slots=True)
class PrefillEstimate:
    """Algorithm 1's figures for one prefill instance, in seconds."""

    hit: int  # prompt tokens the instance holds (prefix_len)
    queue_s: float  # T_queue
    prefill_s: float  # T_prefill of the rest

    @property
    def ttft_s(self) -> float:
        return self.queue_s + self.prefill_s


class Mooncake(PairPolicy):
    READS_QUEUE_SECONDS = True

    def __init__(self, cfg: MooncakeConfig) -> None:
        super().__init__(Policy(), Policy())  # the two picks are this class's own (decide_pair)
        self.ttft_slo_s = cfg.ttft_slo_ms / 1000.0
        self.tbt_slo_s = cfg.tbt_slo_ms / 1000.0
        self.early_rejection = cfg.early_rejection
        self.stats = {"early_rejections": 0}

    @classmethod
    def from_config(cls, cfg: RouterConfig) -> "Mooncake":
        return cls(cfg.mooncake)

    def decide_pair(self, req: Request, ctx: Context, prefill_pool: Sequence[NodeState], decode_pool: Sequence[NodeState]) -> PairDecision:
        """Algorithm 1: the prefill instance first, then the decode instance, then the SLO check."""
        prefill, ttft = self.pick_prefill(req, ctx, prefill_pool)
        decode, tbt = self.pick_decode(req, ctx, decode_pool)
        if prefill.node is None or decode.node is None:
            return PairDecision(prefill, decode)
        problem = self.slo_problem(req, prefill.node, ttft, decode.node, tbt)
        if problem and self.early_rejection:
            self.stats["early_rejections"] += 1
            return PairDecision(refused(prefill, problem), refused(decode, problem))
        if problem:
            note = f"; would be rejected early: {problem}"
            prefill, decode = noted(prefill, note), noted(decode, note)
        return PairDecision(prefill, decode)

    # ------------------------------------------------------------------ the prefill instance
    def estimate(self, req: Request, ctx: Context, s: NodeState) -> PrefillEstimate:
        """T_queue and T_prefill on `s`: the prompt after the prefix it holds (a fully cached prompt
        still computes its last token, as vLLM does)."""
        hit = min(s.prefix * ctx.block_size, req.prompt_tokens - 1)
        return PrefillEstimate(hit, s.queue_s, prefill_seconds(ctx.latency[s.name], req.prompt_tokens - hit, hit))

    def pick_prefill(self, req: Request, ctx: Context, pool: Sequence[NodeState]) -> tuple[Decision, float]:
        ok = [s for s in pool if s.problem is None]
        if not ok:
            return no_eligible(pool), 0.0
        est = {s.name: self.estimate(req, ctx, s) for s in ok}
        pick, margin, tied = pick_best(ok, lambda s: -est[s.name].ttft_s, ctx.rng, first=True)
        e = est[pick.name]
        reason = (f"{pick.name}: estimated TTFT {ms(e.ttft_s)} ms = queue {ms(e.queue_s)} + prefill {ms(e.prefill_s)} ms "
                  f"of {req.prompt_tokens - e.hit} uncached tokens ({e.hit}/{req.prompt_tokens} cached)")
        if margin > 0:
            reason += f", {margin * 1000.0:,.1f} ms ahead"
        reason += tie_note(tied, FIRST_IN_ORDER)
        scores = {n: -round(x.ttft_s * 1000.0, 3) for n, x in est.items()}
        return Decision(pick.name, reason, candidates(pool, scores, prefill_features(est)), margin * 1000.0,
                        tie_text(tied, FIRST_IN_ORDER)), e.ttft_s

    # ------------------------------------------------------------------ the decode instance
    def tbt(self, req: Request, ctx: Context, s: NodeState) -> float:
        """The node's next decode step with this request added: its running and queued requests,
        each one token, over their KV and this prompt's."""
        seqs = s.running + s.waiting + 1
        context = s.used_blocks * ctx.block_size + req.prompt_tokens
        return ctx.latency[s.name].decode_run(1, seqs, context)[0]

    def pick_decode(self, req: Request, ctx: Context, pool: Sequence[NodeState]) -> tuple[Decision, float]:
        ok = [s for s in pool if s.problem is None]
        if not ok:
            return no_eligible(pool), 0.0
        tbt = {s.name: self.tbt(req, ctx, s) for s in ok}
        key = {s.name: (-round(tbt[s.name], 9), -s.running - s.waiting, s.free_blocks) for s in ok}
        pick, margin, tied = pick_best(ok, lambda s: key[s.name], ctx.rng, first=True)
        reason = (f"{pick.name}: estimated TBT {ms(tbt[pick.name], 1)} ms with {counted(pick.running + pick.waiting + 1, 'request')}, "
                  f"{counted(pick.free_blocks, 'block')} free (least loaded)")
        lead, margin = decode_lead(key, pick.name, margin)
        reason += lead + tie_note(tied, FIRST_IN_ORDER)
        scores = {n: -round(t * 1000.0, 3) for n, t in tbt.items()}
        features = {n: (("tbt_ms", round(t * 1000.0, 2)),) for n, t in tbt.items()}
        return Decision(pick.name, reason, candidates(pool, scores, lambda s: features[s.name]), margin,
                        tie_text(tied, FIRST_IN_ORDER)), tbt[pick.name]

    # ------------------------------------------------------------------ the SLO check
    def slo_problem(self, req: Request, prefill: str, ttft: float, decode: str, tbt: float) -> str:
        """Why the request misses an SLO by the estimates (a sentence), or ""."""
        ttft_slo = self.ttft_slo_s or req.slo_ttft_s
        tbt_slo = self.tbt_slo_s or req.slo_tpot_s
        if ttft_slo and ttft > ttft_slo:
            return f"early rejection: estimated TTFT {ms(ttft)} ms on {prefill} > TTFT SLO {ms(ttft_slo)} ms"
        if tbt_slo and tbt > tbt_slo:
            return f"early rejection: estimated TBT {ms(tbt, 1)} ms on {decode} > TBT SLO {ms(tbt_slo, 1)} ms"
        return ""

    def report(self) -> dict:
        return {"mooncake": dict(self.stats)}


def prefill_features(est: dict[str, PrefillEstimate]):
    """The Why panel's figures of each prefill candidate (ms, tokens)."""
    def extra(s: NodeState) -> tuple[tuple[str, float], ...]:
        e = est[s.name]
        return (("hit_tok", float(e.hit)), ("queue_ms", round(e.queue_s * 1000.0, 2)),
                ("prefill_ms", round(e.prefill_s * 1000.0, 2)), ("ttft_ms", round(e.ttft_s * 1000.0, 2)))
    return extra


def refused(d: Decision, problem: str) -> Decision:
    """The pick turned into a refusal: no node, the SLO sentence first, the estimate after."""
    return Decision(None, f"{problem} ({d.reason})", d.candidates, d.margin, d.tie)


def noted(d: Decision, note: str) -> Decision:
    return Decision(d.node, d.reason + note, d.candidates, d.margin, d.tie)


def ms(seconds: float, digits: int = 0) -> str:
    return f"{seconds * 1000.0:,.{digits}f}"


def counted(n: float, noun: str) -> str:
    """`n noun`, plural unless one: a reason read "with 1 requests" (the engine cannot borrow
    kvtui/run's wording helpers; it never imports upward)."""
    shown = f"{n:g}" if isinstance(n, float) else f"{n}"  # a margin is a float, a count an int
    return f"{shown} {noun}" + ("" if n == 1 else "s")


def decode_lead(key: dict[str, tuple], pick: str, margin: float) -> tuple[str, float]:
    """The decode pick's lead over the runner-up in words, and as the decision's margin (ms when
    the step times differ, else the count of requests or free blocks that separated them)."""
    if margin <= 0:
        return "", 0.0
    runner = max(k for n, k in key.items() if n != pick)
    if key[pick][0] != runner[0]:
        return f", a step {margin * 1000.0:,.2f} ms shorter than the next", margin * 1000.0
    if key[pick][1] != runner[1]:
        return f", {counted(margin, 'fewer request')} than the next at the same step time", margin
    return f", {counted(margin, 'more block')} free than the next at the same step time", margin
