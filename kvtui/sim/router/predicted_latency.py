"""predicted_latency: llm-d's predicted-latency scheduler (seed 002), gates, tiers and best fit.

The blog (seed 002) describes it; the code it follows is llm-d-inference-scheduler's
predicted-latency scheduling profile (config/charts/epplib/templates/_config.yaml, when
`latencyPredictor.enabled`): predicted-latency-producer -> [strict affinity filter 0.99] ->
slo-headroom-tier-filter -> loose affinity filter 0.80 -> latency-scorer -> picker, with the
latency-slo-admitter in front. Files, all under pkg/epp/framework/plugins/:

- **Predictions** (requestcontrol/dataproducer/predictedlatency/prediction.go,
  `generatePredictions` / `validatePrediction`): TTFT and TPOT per candidate from the
  predictor (`kvtui.sim.router.predictor`), headroom = SLO - predicted per metric, in ms. The
  TPOT budget is the request's TPOT SLO, lowered to the smallest TPOT SLO of the requests
  already running on that node (`getEndpointMinTPOTSLO`: a new request must not break theirs).
  Upstream treats a missing SLO header as 0, so a request with only a TTFT SLO would have
  negative TPOT headroom everywhere; here a metric without an SLO does not constrain the tier
  (its headroom is -predicted, as upstream's no-SLO case, for the blend only).
- **Affinity gate** (scheduling/filter/prefixcacheaffinity/plugin.go): with more than one
  candidate, one uniform draw; below `explore_probability` (0.01) the gate is skipped. Else the
  candidates with prefix score >= `affinity_threshold` (0.80) are sticky; none sticky: keep all.
  Load gate: when the best sticky node's predicted TTFT exceeds the best non-sticky one's by more
  than `load_gate_ms` (5,000; 0 = always stick) keep all (the blog says "best overall pod"; the
  same test, since the best overall is the better of the two). Without predictions (cold) the
  load gate is skipped and the gate still applies. `strict_affinity_threshold` > 0 adds the
  chart's first gate (0.99) before the tiers.
- **Tier filter** (scheduling/filter/sloheadroomtier/plugin.go), only with SLOs: positive tier
  = both headrooms >= 0. Both tiers present: one uniform draw, below 1 - `positive_tier_probability`
  (0.01) keep the negative tier, else the positive; one tier: keep it.
- **Scorer** (scheduling/scorer/latency/plugin.go, `Score` / `scoreBucket`): positive nodes
  present: score only them. All negative (always so without SLOs, headroom = 0 - predicted):
  prefer idle nodes (nothing running or waiting); else deficit buckets, the first non-empty of
  TPOT-only-negative, TTFT-only-negative, both-negative. Within the bucket |headroom| is
  min-max normalised per metric (0.5 when the range is 0, and then that metric's weight goes to
  the other), blended `ttft_weight` (0.8) / 1 - it (0.2), and scored with the "least" strategy
  (upstream's default): score = (int((1 - blend) x 100) + 1) / 100. So with SLOs the node with
  the *least* positive headroom wins (best fit, packing), in the negative tier the one closest
  to its SLO; without SLOs the blend of normalised predicted TTFT and TPOT is lowest, which is
  what the blog calls "lowest predicted latency" (no output-length estimate: upstream has none).
- **Cold fallback** (same scorer, `compositeScores`): no predictions yet: (1 - kv) +
  (maxQ - q) / maxQ (1 when maxQ = 0) + prefix, each weight 1 normalised to 1/3, rounded to
  hundredths as upstream does.
- **Picker**: `max` (default; the blog's greedy choice; ties to the seeded RNG as every policy
  here) or `weighted_random` (the chart's weighted-random-picker: probability proportional to
  score, one seeded draw).
- **Shedding** (requestcontrol/admitter/latencyslo/plugin.go, `AdmitRequest`): a sheddable
  request with an SLO, once predictions exist, is refused unless some eligible node meets both
  SLOs, or is idle (nothing running), or is cold (KV usage < 2 %, predictions unreliable). The
  reason starts with "shed:" so the metrics count it as shed.

The only randomness is `ctx.rng` (exploration, tier choice, ties, weighted picking; the token
sampler below draws from a generator spawned from it). The policy remembers each request's
features and the chosen node's predictions at routing time; FirstToken / RequestCompleted label
them (the training samples, see predictor.py) and score the prediction: running MAPE, overall and
per window of `mape_window` predictions, in percent.

**The TPOT error, as llm-d's EPP logs it** (llm-d-inference-scheduler@520af47, 2026-05-17,
pkg/epp/framework/plugins/requestcontrol/dataproducer/predictedlatency/requestcontrol_hooks.go,
`ResponseBody` / `predictFirstTPOT` / `processTokenForLatencyPrediction`; training.go
`buildPredictionRequest`, `refreshLastSeenMetrics`):

- At the first token the request's predicted-TPOT list starts with the prediction stored at
  scheduling for its pod (`predictFirstTPOT`). Then, at the tokens the Poisson sampler picks
  (`token_sampler.py`; `max_decode_token_samples`, upstream's maxDecodeTokenSamplesForPrediction,
  default 0 = never, and `sampling_mean`, default 1000), TPOT is predicted again by the model in
  force at that token; `avgPredictedTPOT` is the running mean of the list. The in-stream features
  are the *scheduling-time* metrics (`refreshLastSeenMetrics` re-clones the scheduling result's
  endpoint, itself a clone taken at scheduling: pkg/epp/requestcontrol/director.go builds it
  with framework/interface/scheduling/types.go `NewEndpoint`, `metrics.Clone()`), the
  prompt length, tokens generated so far, prefix score 0 and no tokens in flight (the request
  `buildPredictionRequest` makes leaves PrefillTokensInFlight at 0). Tokens generated is no
  column here: every TPOT training entry carries 0 there, so XGBoost never splits on it.
- At end of stream `avgTPOT` = (end - dispatch - TTFT) / (tokens - 1), the whole decode's mean
  (not the sampled inter-token gaps, which upstream only reports), and MAPE TPOT =
  |avgTPOT - avgPredictedTPOT| / avgTPOT. That is `tpot_mape` here. With upstream's default
  (no samples; 5 before 2026-02, commit f6249191) it *is* the dispatch-time prediction's error;
  `tpot_mape_dispatch` always scores the dispatch-time prediction alone. Routing and the SLO gate use only dispatch-time
  predictions, upstream as here; in-stream predictions train nothing.
- The TPOT training entry is sent at end of stream with the scheduling-time metrics, the tokens
  in flight at dispatch and prefix score 0 (`buildTrainingEntry(..., 0, 0)`), so the TPOT window
  is stratified by queue and KV only.

kvtui's own: in-stream predictions are made at the policy's next hook (a routing decision or an
event it hears) after the sampled token, by the model in force then; models change only in those
hooks, after the stream step, so it is the model that answered at the token itself. A request
routed before any TPOT model exists is not scored (upstream counts its prediction as 0 ms).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np

from kvtui.events import Event, FirstToken, RequestCompleted, RequestRejected
from kvtui.scenario.model import PredictedLatencyConfig
from kvtui.scenario.model import Router as RouterConfig
from kvtui.sim.request import Request
from kvtui.sim.router.base import Context, Policy
from kvtui.sim.router.predictor import LatencyPredictor, PredictorConfig, Row
from kvtui.sim.router.state import Decision, NodeState, candidates, pick_best, tie_note
from kvtui.sim.router.token_sampler import TokenSampler

W_MAX = 100  # latency-scorer's score resolution (wMax)


def with_tail(reason: str, kept: int, margin: float, tie: str, notes: list[str]) -> str:
    """The end every reason shares: the lead over the runner-up, a tie, the gates' notes."""
    if kept > 1:
        reason += f", ahead by {margin:.2f}"
    reason += tie
    return reason + ("; " + "; ".join(notes) if notes else "")
COLD_KV = 0.02  # latency-slo-admitter: a node under 2 % KV usage is "cold"


@dataclass(frozen=True, slots=True)
class Pred:
    """One candidate's predictions (ms) and headrooms (ms; -predicted for a metric without SLO)."""

    ttft: float
    tpot: float
    h_ttft: float
    h_tpot: float
    ttft_neg: bool
    tpot_neg: bool

    @property
    def positive(self) -> bool:
        return not (self.ttft_neg or self.tpot_neg)


@dataclass(slots=True)
class Pending:
    node: str
    row: Row
    tokens: int  # what this request added to its node's EPP count (`in_flight`)
    ttft: float | None  # predicted, ms (None: routed cold)
    tpot: float | None
    req: Request
    ttft_done: bool = False
    sampler: TokenSampler | None = None  # from the first token, when in-stream sampling is on
    avg_tpot: float = 0.0  # llm-d's avgPredictedTPOT: running mean of the predicted TPOTs
    n_tpot: int = 0

    def observe_tpot(self, predicted: float) -> None:
        """`calculateRunningAverage`, as upstream keeps it."""
        self.n_tpot += 1
        self.avg_tpot += (predicted - self.avg_tpot) / self.n_tpot


def stream_row(row: Row) -> Row:
    """An in-stream TPOT prediction's features: the scheduling-time metrics and prompt, prefix 0,
    no tokens in flight (`buildPredictionRequest` as `processTokenForLatencyPrediction` calls it)."""
    return (row[0], row[1], row[2], row[3], 0.0, 0.0, row[6])


def tpot_row(row: Row) -> Row:
    """The TPOT training entry's features: the dispatch row with prefix score 0."""
    return (row[0], row[1], row[2], row[3], row[4], 0.0, row[6])


class Mape:
    """Running mean absolute percentage error, overall and per window of `window` predictions."""

    def __init__(self, window: int) -> None:
        self.window = window
        self.total = 0.0
        self.n = 0
        self.windows: list[list[float]] = []  # [sum of APE, count]

    def add(self, predicted: float, actual: float) -> None:
        if actual <= 0:
            return
        ape = abs(predicted - actual) / actual
        self.total += ape
        self.n += 1
        if not self.windows or self.windows[-1][1] >= self.window:
            self.windows.append([0.0, 0])
        self.windows[-1][0] += ape
        self.windows[-1][1] += 1

    @property
    def value(self) -> float | None:
        return 100.0 * self.total / self.n if self.n else None

    def per_window(self, most: int = 20) -> list[float]:
        """MAPE (%) per window, adjacent windows merged so at most `most` are listed."""
        w = self.windows
        k = -(-len(w) // most) if w else 1
        out = []
        for i in range(0, len(w), k):
            s = sum(x[0] for x in w[i : i + k])
            n = sum(x[1] for x in w[i : i + k])
            out.append(round(100.0 * s / n, 2))
        return out


def composite(ok: Sequence[NodeState]) -> dict[str, tuple[float, float, float, float]]:
    """latency-scorer `compositeScores`: per node (score, kv free, relative queue, prefix)."""
    max_q = max(s.waiting for s in ok)
    out = {}
    for s in ok:
        rel_q = (max_q - s.waiting) / max_q if max_q > 0 else 1.0
        kv_free = 1.0 - s.kv_usage
        prefix = s.prefix_score
        c = (kv_free + rel_q + prefix) / 3.0
        out[s.name] = (round(W_MAX * c) / W_MAX, kv_free, rel_q, prefix)
    return out


def blend_scores(bucket: Sequence[NodeState], preds: dict[str, Pred], ttft_weight: float) -> dict[str, float]:
    """latency-scorer `scoreBucket` with the "least" strategy: closest to the SLO scores highest."""
    a, b = ttft_weight, 1.0 - ttft_weight
    tot = a + b
    a, b = (a / tot, b / tot) if tot > 0 else (1.0, 0.0)
    ht = [abs(preds[s.name].h_ttft) for s in bucket]
    hp = [abs(preds[s.name].h_tpot) for s in bucket]
    rt, rp = max(ht) - min(ht), max(hp) - min(hp)
    eps = 1e-9
    if rt <= eps < rp:
        a, b = 0.0, 1.0
    elif rp <= eps < rt:
        a, b = 1.0, 0.0
    out = {}
    for s, t, p in zip(bucket, ht, hp):
        nt = (t - min(ht)) / rt if rt > eps else 0.5
        np_ = (p - min(hp)) / rp if rp > eps else 0.5
        combined = a * nt + b * np_
        out[s.name] = (int((1.0 - combined) * W_MAX) + 1) / W_MAX
    return out


class PredictedLatency(Policy):
    EVENT_TYPES = (FirstToken, RequestCompleted, RequestRejected)
    READS_PREFILL_TOKENS = True  # per instance: False with `tokens_in_flight: epp` (the policy counts)

    def __init__(self, cfg: PredictedLatencyConfig | None = None, predictor: LatencyPredictor | None = None) -> None:
        self.cfg = cfg or PredictedLatencyConfig()
        self.READS_ITERATION_LEFT = self.cfg.iteration_feature
        self.READS_PREFILL_TOKENS = self.cfg.tokens_in_flight == "node"
        self._no_slo = True  # the request being decided carries no SLO (set per decision)
        c = self.cfg
        self.predictor = predictor or LatencyPredictor(
            PredictorConfig(
                regressor=c.regressor,
                objective=c.objective,
                quantile_alpha=c.quantile_alpha,
                iteration_feature=c.iteration_feature,
                bucket_size=c.bucket_size,
                kv_buckets=c.kv_buckets,
                min_samples=c.min_samples,
                retrain_interval_s=c.retrain_interval_s,
                retrain_samples=c.retrain_samples,
                ensemble_split=c.ensemble_split,
            )
        )
        self.pending: dict[str, Pending] = {}
        self.in_flight: dict[str, int] = {}  # node -> prompt tokens routed there, not yet completed
        self.tpot_slos: dict[str, dict[str, float]] = {}  # node -> request -> TPOT SLO (ms) in flight
        self.last: tuple[str, dict[str, Pred]] | None = None  # the last decision's predictions
        self.ttft_mape = Mape(c.mape_window)
        self.tpot_mape = Mape(c.mape_window)  # llm-d's: avgPredictedTPOT against avgTPOT
        self.tpot_mape_dispatch = Mape(c.mape_window)  # the dispatch-time prediction alone
        self.stream_rng: np.random.Generator | None = None  # the token samplers' draws
        self.in_stream = 0  # in-stream TPOT predictions made
        self.stats = {
            "decisions": 0,
            "cold": 0,
            "explored": 0,
            "sticky": 0,
            "load_gate": 0,
            "positive_tier": 0,
            "negative_tier": 0,
            "idle_preferred": 0,
            "shed": 0,
        }

    @classmethod
    def from_config(cls, cfg: RouterConfig) -> "PredictedLatency":
        return cls(cfg.predicted_latency)

    # ------------------------------------------------------------------ features and predictions
    def features(self, req: Request, s: NodeState, own: int = 0) -> Row:
        """One candidate's row. Tokens in flight: the node's own count, or llm-d's EPP count
        (`tokens_in_flight: epp`) plus `own`, the request's prompt in a training row: upstream
        reads the counter to predict before PreRequest adds the request, and after, for training."""
        left = max(s.iteration_left_ms, 0.0)  # -1: not read (the option is off), a column no model uses
        tif = float(s.prefill_tokens) if self.READS_PREFILL_TOKENS else float(self.in_flight.get(s.name, 0) + own)
        return (s.kv_usage, float(req.prompt_tokens), float(s.waiting), float(s.running), tif, s.prefix_score, left)

    def predict(self, req: Request, ok: Sequence[NodeState]) -> dict[str, Pred] | None:
        out = self.predictor.predict([self.features(req, s) for s in ok])
        if out is None:
            return None
        slo_ttft = getattr(req, "slo_ttft_s", None)
        slo_tpot = getattr(req, "slo_tpot_s", None)
        has_slo = slo_ttft is not None or slo_tpot is not None
        preds = {}
        for s, t, p in zip(ok, out[0], out[1]):
            t, p = float(t), float(p)
            if slo_ttft is not None:
                h_t, t_neg = slo_ttft * 1000.0 - t, slo_ttft * 1000.0 - t < 0
            else:
                h_t, t_neg = -t, not has_slo
            if slo_tpot is not None:
                budget = slo_tpot * 1000.0
                running = self.tpot_slos.get(s.name)
                if running:
                    budget = min(budget, min(running.values()))
                h_p, p_neg = budget - p, budget - p < 0
            else:
                h_p, p_neg = -p, not has_slo
            preds[s.name] = Pred(t, p, h_t, h_p, t_neg, p_neg)
        return preds

    # ------------------------------------------------------------------ the filters
    def affinity_gate(
        self, c: list[NodeState], preds: dict[str, Pred] | None, threshold: float, ctx: Context, notes: list[str]
    ) -> list[NodeState]:
        """prefix-cache-affinity-filter: exploration draw, sticky set, TTFT load gate."""
        if len(c) <= 1 or threshold <= 0:
            return c
        u = float(ctx.rng.random())
        if u < self.cfg.explore_probability:
            self.stats["explored"] += 1
            notes.append(f"explore (draw {u:.4f} < {self.cfg.explore_probability:g}): affinity gate {threshold:.2f} skipped")
            return c
        sticky = [s for s in c if s.prefix_score >= threshold]
        if not sticky:
            return c
        non = [s for s in c if s.prefix_score < threshold]
        if preds is not None and self.cfg.load_gate_ms > 0 and non:
            bs = min(sticky, key=lambda s: preds[s.name].ttft)
            bn = min(non, key=lambda s: preds[s.name].ttft)
            ts, tn = preds[bs.name].ttft, preds[bn.name].ttft
            if ts - tn > self.cfg.load_gate_ms:
                self.stats["load_gate"] += 1
                notes.append(
                    f"load gate: sticky {bs.name} TTFT {ts:.0f} ms > {bn.name} {tn:.0f} ms + {self.cfg.load_gate_ms:g} ms, "
                    f"affinity {threshold:.2f} broken"
                )
                return c
        self.stats["sticky"] += 1
        notes.append(f"affinity gate {threshold:.2f}: {len(sticky)} of {len(c)} sticky")
        return sticky

    def tier(self, c: list[NodeState], preds: dict[str, Pred], ctx: Context, notes: list[str]) -> list[NodeState]:
        """slo-headroom-tier-filter: positive tier with probability p, else the negative one."""
        if len(c) <= 1:
            return c
        pos = [s for s in c if preds[s.name].positive]
        neg = [s for s in c if not preds[s.name].positive]
        if pos and neg:
            u = float(ctx.rng.random())
            eps = 1.0 - self.cfg.positive_tier_probability
            if u < eps:
                self.stats["negative_tier"] += 1
                notes.append(f"negative tier drawn ({u:.4f} < {eps:.2g}; {len(neg)} of {len(c)} miss an SLO)")
                return neg
            self.stats["positive_tier"] += 1
            notes.append(f"positive tier: {len(pos)} of {len(c)} meet both SLOs")
            return pos
        if pos:
            self.stats["positive_tier"] += 1
            notes.append(f"positive tier: all {len(pos)} meet both SLOs")
            return pos
        notes.append(f"no node meets both SLOs ({len(neg)} negative)")
        return neg

    def bucket(self, c: list[NodeState], preds: dict[str, Pred], notes: list[str]) -> tuple[list[NodeState], str]:
        """latency-scorer: which nodes get scored (positive; idle; least severe deficit)."""
        pos = [s for s in c if preds[s.name].positive]
        if pos:
            return pos, "best fit (least positive headroom)"
        idle = [s for s in c if s.active == 0]
        if idle:
            if len(idle) < len(c):
                self.stats["idle_preferred"] += 1
                notes.append(f"idle preference: {len(idle)} of {len(c)} idle")
            return idle, "lowest predicted latency" if self._no_slo else "closest to SLO"
        tpot_only = [s for s in c if preds[s.name].tpot_neg and not preds[s.name].ttft_neg]
        ttft_only = [s for s in c if preds[s.name].ttft_neg and not preds[s.name].tpot_neg]
        both = [s for s in c if preds[s.name].ttft_neg and preds[s.name].tpot_neg]
        for b, what in ((tpot_only, "TPOT-only deficit"), (ttft_only, "TTFT-only deficit"), (both, "")):
            if b:
                if what:
                    notes.append(f"{what} bucket: {len(b)} of {len(c)}")
                return b, "lowest predicted latency" if self._no_slo else "closest to SLO"
        return c, "lowest predicted latency"

    # ------------------------------------------------------------------ the decision
    def pick(self, c: Sequence[NodeState], scores: dict[str, float], ctx: Context) -> tuple[NodeState, float, str]:
        if self.cfg.picker == "weighted_random" and len(c) > 1:
            total = sum(scores[s.name] for s in c)
            u = float(ctx.rng.random()) * total
            acc = 0.0
            pick = c[-1]
            for s in c:
                acc += scores[s.name]
                if u < acc:
                    pick = s
                    break
            others = [scores[s.name] for s in c if s is not pick]
            return pick, scores[pick.name] - max(others), f" (weighted draw, p={scores[pick.name] / total:.2f})"
        pick, margin, tied = pick_best(c, lambda s: scores[s.name], ctx.rng)
        return pick, margin, tie_note(tied)

    def choose(self, req: Request, ctx: Context, states: Sequence[NodeState], ok: list[NodeState]) -> Decision:
        self.stats["decisions"] += 1
        if self.stream_rng is None and self.cfg.max_decode_token_samples > 0:
            self.stream_rng = ctx.rng.spawn(1)[0]  # its own stream: routing's draws stay as they were
        self.predict_in_stream()
        self.predictor.maybe_retrain(ctx.now)
        preds = self.predict(req, ok)
        self.last = (req.id, preds or {})
        notes: list[str] = []
        if preds is None:
            return self.cold(req, ctx, states, ok, notes)

        slo_ttft = getattr(req, "slo_ttft_s", None)
        slo_tpot = getattr(req, "slo_tpot_s", None)
        self._no_slo = slo_ttft is None and slo_tpot is None
        slo_txt = " / ".join(
            x for x in (f"TTFT {slo_ttft * 1000:.0f} ms" if slo_ttft is not None else "", f"TPOT {slo_tpot * 1000:.1f} ms" if slo_tpot is not None else "") if x
        )

        def extra(s: NodeState):
            p = preds.get(s.name)
            if p is None:
                return ()
            f = [("p_ttft", round(p.ttft, 1)), ("p_tpot", round(p.tpot, 2))]
            if not self._no_slo:
                f += [("h_ttft", round(p.h_ttft, 1)), ("h_tpot", round(p.h_tpot, 2)), ("tier", 1.0 if p.positive else 0.0)]
            f += [("sticky", 1.0 if s.prefix_score >= self.cfg.affinity_threshold else 0.0), ("kept", 1.0 if s.name in scores else 0.0)]
            return tuple(f)

        scores: dict[str, float] = {}
        # latency-slo-admitter: shed a sheddable request no node can serve within its SLO.
        if getattr(req, "sheddable", False) and not self._no_slo:
            valid = [s for s in ok if preds[s.name].positive]
            idle = [s for s in ok if s.running == 0]
            cold = [s for s in ok if s.kv_usage < COLD_KV]
            if not (valid or idle or cold):
                self.stats["shed"] += 1
                bt = min(ok, key=lambda s: preds[s.name].ttft)
                bp = min(ok, key=lambda s: preds[s.name].tpot)
                reason = (
                    f"shed: no node meets {slo_txt} (best predicted TTFT {preds[bt.name].ttft:.0f} ms on {bt.name}, "
                    f"TPOT {preds[bp.name].tpot:.1f} ms on {bp.name}); none idle, none cold (KV < {COLD_KV:.0%})"
                )
                return Decision(None, reason, candidates(states, {}, extra), 0.0)

        c = list(ok)
        if self.cfg.strict_affinity_threshold > 0:
            c = self.affinity_gate(c, preds, self.cfg.strict_affinity_threshold, ctx, notes)
        if not self._no_slo:
            c = self.tier(c, preds, ctx, notes)
        c = self.affinity_gate(c, preds, self.cfg.affinity_threshold, ctx, notes)
        b, how = self.bucket(c, preds, notes)
        scores = blend_scores(b, preds, self.cfg.ttft_weight)
        pick, margin, tie = self.pick(b, scores, ctx)
        p = preds[pick.name]
        if self._no_slo:
            head = f"{pick.name}: {how}, TTFT {p.ttft:.0f} ms, TPOT {p.tpot:.1f} ms"
        else:
            head = (
                f"{pick.name}: {how} against {slo_txt}: headroom TTFT {p.h_ttft:.0f} ms, TPOT {p.h_tpot:.1f} ms "
                f"(predicted {p.ttft:.0f} / {p.tpot:.1f} ms)"
            )
        reason = head + f", score {scores[pick.name]:.2f}"
        return Decision(pick.name, with_tail(reason, len(b), margin, tie, notes), candidates(states, scores, extra), margin)

    def cold(self, req: Request, ctx: Context, states: Sequence[NodeState], ok: list[NodeState], notes: list[str]) -> Decision:
        """No model yet: the affinity gate (no load gate), then the composite fallback score."""
        self.stats["cold"] += 1
        c = self.affinity_gate(list(ok), None, self.cfg.affinity_threshold, ctx, notes)
        terms = composite(c)
        scores = {n: t[0] for n, t in terms.items()}
        pick, margin, tie = self.pick(c, scores, ctx)
        sc, kv, q, pre = terms[pick.name]

        def extra(s: NodeState):
            if s.name not in terms:
                return (("kept", 0.0),)
            _, k, qq, pp = terms[s.name]
            return (("s_kv", round(k, 3)), ("s_queue", round(qq, 3)), ("s_prefix", round(pp, 3)), ("kept", 1.0))

        reason = (
            f"{pick.name}: cold ({self.predictor.samples} of {self.predictor.cfg.min_samples} samples), composite "
            f"(kv free {kv:.2f} + queue {q:.2f} + prefix {pre:.2f}) / 3 = {sc:.2f}"
        )
        return Decision(pick.name, with_tail(reason, len(c), margin, tie, notes), candidates(states, scores, extra), margin)

    # ------------------------------------------------------------------ learning
    def routed(self, req: Request, node: str, states: Sequence[NodeState]) -> None:
        self._forget(req.id)
        s = next((x for x in states if x.name == node), None)
        if s is None:
            return
        pred = None
        if self.last is not None and self.last[0] == req.id:
            pred = self.last[1].get(node)
        self.pending[req.id] = Pending(
            node, self.features(req, s, req.prompt_tokens), req.prompt_tokens,
            pred.ttft if pred else None, pred.tpot if pred and self.predictor.tpot_model else None, req,
        )
        self.in_flight[node] = self.in_flight.get(node, 0) + req.prompt_tokens
        slo_tpot = getattr(req, "slo_tpot_s", None)
        if slo_tpot is not None:
            self.tpot_slos.setdefault(node, {})[req.id] = slo_tpot * 1000.0

    def _forget(self, rid: str) -> Pending | None:
        p = self.pending.pop(rid, None)
        if p is not None:
            self.in_flight[p.node] -= p.tokens
            slos = self.tpot_slos.get(p.node)
            if slos:
                slos.pop(rid, None)
        return p

    def on_event(self, ev: Event) -> None:
        self.predict_in_stream()
        match ev:
            case FirstToken():
                p = self.pending.get(ev.request)
                if p is not None and p.node == ev.node and not p.ttft_done:
                    self._ttft(p, ev.ttft)
                    self.start_stream(p)
                    self.predictor.maybe_retrain(ev.t)
            case RequestCompleted():
                p = self._forget(ev.request)
                if p is None or p.node != ev.node:
                    return
                if not p.ttft_done:
                    self._ttft(p, ev.ttft)
                if ev.output_tokens > 1 and ev.tpot > 0:
                    self._tpot(p, ev.tpot * 1000.0)
                self.predictor.maybe_retrain(ev.t)
            case RequestRejected():
                self._forget(ev.request)

    def _ttft(self, p: Pending, ttft_s: float) -> None:
        p.ttft_done = True
        ttft_ms = ttft_s * 1000.0
        self.predictor.add_ttft(p.row, ttft_ms)
        if p.ttft is not None:
            self.ttft_mape.add(p.ttft, ttft_ms)

    def _tpot(self, p: Pending, tpot_ms: float) -> None:
        """End of stream: the training entry (prefix 0) and both TPOT errors."""
        self.predictor.add_tpot(tpot_row(p.row), tpot_ms)
        if p.tpot is not None:
            self.tpot_mape.add(p.avg_tpot if p.n_tpot else p.tpot, tpot_ms)
            self.tpot_mape_dispatch.add(p.tpot, tpot_ms)

    # ------------------------------------------------------------------ in-stream TPOT (llm-d's EPP)
    def start_stream(self, p: Pending) -> None:
        """First token: `predictFirstTPOT` (the stored dispatch-time prediction) and the sampler."""
        if p.tpot is not None:
            p.observe_tpot(p.tpot)
        if self.stream_rng is not None:
            p.sampler = TokenSampler(self.stream_rng, self.cfg.sampling_mean, self.cfg.max_decode_token_samples)

    def predict_in_stream(self) -> None:
        """Every sampled token reached since the last hook, predicted in one batch by the model
        in force (this runs before the hook may retrain)."""
        if self.stream_rng is None:
            return
        due = [p for p in self.pending.values() if p.sampler is not None for _ in p.sampler.due(p.req.generated)]
        if not due:
            return
        out = self.predictor.predict_tpot([stream_row(p.row) for p in due])
        if out is None:
            return
        self.in_stream += len(due)
        for p, v in zip(due, out):
            p.observe_tpot(float(v))

    # ------------------------------------------------------------------ figures
    def headline(self) -> str:
        ttft, tpot = self.ttft_mape.value, self.tpot_mape.value
        if ttft is None:
            return f"predictor cold ({self.predictor.samples} samples)"
        tail = f" TPOT {tpot:.0f}%" if tpot is not None else ""
        return f"prediction error TTFT {ttft:.0f}%{tail} (MAPE)"

    def report(self) -> dict:
        r = lambda x: None if x is None else round(x, 2)  # noqa: E731
        pr = self.predictor
        return {
            "prediction": {
                "regressor": pr.cfg.regressor,
                "ttft_mape": r(self.ttft_mape.value),  # percent
                "tpot_mape": r(self.tpot_mape.value),  # percent, llm-d's (in-stream average)
                "tpot_mape_dispatch": r(self.tpot_mape_dispatch.value),  # percent, dispatch-time only
                "samples": pr.samples,
                "retrains": pr.retrains,
                "scored": {"ttft": self.ttft_mape.n, "tpot": self.tpot_mape.n, "tpot_in_stream": self.in_stream},
                "window": self.cfg.mape_window,
                "ttft_mape_windows": self.ttft_mape.per_window(),
                "tpot_mape_windows": self.tpot_mape.per_window(),
                "models": {
                    "ttft": pr.ttft_model.describe() if pr.ttft_model else None,
                    "tpot": pr.tpot_model.describe() if pr.tpot_model else None,
                },
            },
            "predicted_latency": dict(self.stats),
        }
