"""load_prefix: the llm-d inference scheduler's default profile — prefix, queue and KV scorers.

llm-d's scheduler (llm-d-inference-scheduler v0.4.0, built on gateway-api-inference-extension
v1.2.0's EPP; the paths below are that release's, under pkg/epp/scheduling/framework/) runs
filters, then weighted scorers, then a max-score picker. Each scorer returns a score in [0, 1]
per pod; the profile sums weight x score (SchedulerProfile.runScorerPlugins, scores clamped to
[0, 1] by enforceScoreRange); the picker takes the maximum after shuffling, so ties are random
(plugins/picker/max_score_picker.go). The three scorers, as their code computes them:

- prefix (plugins/multi/prefix/plugin.go, the prefix-cache scorer): matched blocks / total
  prompt blocks, from the router's index (precise from KV events, or approximate: see
  `router.index`); kvtui uses that ratio for both indexes. The precise scorer computes it so as
  of llm-d-inference-scheduler 520af47 (2026-05-17, pkg/epp/framework/plugins/scheduling/scorer/
  preciseprefixcache/utils.go `absoluteScoredPods`: the indexer's score / the prompt's blocks,
  clipped to [0, 1]); v0.4.0's (pkg/plugins/scorer/precise_prefix_cache.go) min-max normalised
  the scores over the pods instead (1 for all when equal, 0 for a pod without a score);
- queue (plugins/scorer/queue.go): (max - q) / (max - min) over the candidates' waiting-queue
  lengths, and 1 for everyone when all are equal;
- kv-cache utilisation (plugins/scorer/kvcache_utilization.go): 1 - KV usage, where usage is
  vLLM's `kv_cache_usage_perc` (1 - free blocks / total; cached-but-idle blocks count as free,
  the null block is left out of the total: `state.block_figures`).

Weights (`router.weights`), each preset named with where it ships:
- `llm-d-approximate` (prefix 3, queue 2, kv 2): the default profile of the InferencePool chart
  (kubernetes-sigs/gateway-api-inference-extension v1.2.0 config/charts/inferencepool, its
  `default-plugins.yaml`; v1.0.x and v1.1.0 weighted all three 1), whose prefix scorer is the
  approximate `prefix-cache-scorer`;
- `llm-d-precise` (prefix 2, queue 1, kv 1): llm-d-inference-scheduler's sample configuration
  for the precise scorer (v0.4.0, deploy/config/epp-precise-prefix-cache-config.yaml);
- `llm-d` (the default): whichever of the two ships with the index in use (`router.index.mode`),
  since no llm-d configuration pairs 3/2/2 with the precise index;
- `seed-111` and `seed-322`: the seed's (the predicted-latency blog's (1,1,1) and (3,2,2)
  load+prefix baselines), kept under the seed's names.
A weight given explicitly overrides the preset's.
"""

from __future__ import annotations

from typing import Sequence

from kvtui.scenario.model import Router as RouterConfig
from kvtui.sim.request import Request
from kvtui.sim.router.base import Context, Policy
from kvtui.sim.router.state import Decision, NodeState, candidates, pick_best, tie_note, tie_text

PRESETS: dict[str, tuple[float, float, float]] = {
    "llm-d-approximate": (3.0, 2.0, 2.0),
    "llm-d-precise": (2.0, 1.0, 1.0),
    "seed-111": (1.0, 1.0, 1.0),
    "seed-322": (3.0, 2.0, 2.0),
}


def preset_weights(cfg: RouterConfig) -> tuple[float, float, float]:
    """The preset's (prefix, queue, kv); `llm-d` is the one llm-d ships with the configured index."""
    name = cfg.weights.preset
    if name == "llm-d":
        name = f"llm-d-{cfg.index.mode}"
    return PRESETS[name]


def clamp01(x: float) -> float:
    return 0.0 if x < 0.0 else 1.0 if x > 1.0 else x


def queue_scores(ok: Sequence[NodeState]) -> dict[str, float]:
    """(max - q) / (max - min); 1 for every node when all queues are equal."""
    qs = [s.waiting for s in ok]
    lo, hi = min(qs), max(qs)
    if hi == lo:
        return {s.name: 1.0 for s in ok}
    return {s.name: (hi - s.waiting) / (hi - lo) for s in ok}


class LoadPrefix(Policy):
    def __init__(self, prefix: float = 3.0, queue: float = 2.0, kv: float = 2.0) -> None:
        self.w_prefix, self.w_queue, self.w_kv = prefix, queue, kv

    @classmethod
    def from_config(cls, cfg: RouterConfig) -> "LoadPrefix":
        w = cfg.weights
        p, q, k = preset_weights(cfg)
        return cls(
            prefix=p if w.prefix is None else w.prefix,
            queue=q if w.queue is None else w.queue,
            kv=k if w.kv is None else w.kv,
        )

    def terms(self, ok: Sequence[NodeState]) -> dict[str, tuple[float, float, float]]:
        """Per node, the three scorer outputs, each clamped to [0, 1]."""
        queue = queue_scores(ok)
        return {s.name: (clamp01(s.prefix_score), clamp01(queue[s.name]), clamp01(1.0 - s.kv_usage)) for s in ok}

    def choose(self, req: Request, ctx: Context, states: Sequence[NodeState], ok: list[NodeState]) -> Decision:
        terms = self.terms(ok)
        scores = {n: self.w_prefix * p + self.w_queue * q + self.w_kv * k for n, (p, q, k) in terms.items()}
        pick, margin, tied = pick_best(ok, lambda s: scores[s.name], ctx.rng)
        p, q, k = terms[pick.name]

        def extra(s: NodeState):
            tp, tq, tk = terms[s.name]
            return (("s_prefix", round(tp, 3)), ("s_queue", round(tq, 3)), ("s_kv", round(tk, 3)))

        reason = (
            f"{pick.name}: prefix {p:.2f}x{self.w_prefix:g} + queue {q:.2f}x{self.w_queue:g} + "
            f"kv {k:.2f}x{self.w_kv:g} = {scores[pick.name]:.2f}"
        )
        if len(ok) > 1:
            reason += f", ahead by {margin:.2f}"
        return Decision(pick.name, reason + tie_note(tied), candidates(states, scores, extra), margin, tie_text(tied))
