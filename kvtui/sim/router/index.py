"""The router's global KV-block index: block key -> the nodes holding it, and in which tier.

After llm-d's kvcache.Indexer (llm-d/llm-d-kv-cache pkg/kvcache/indexer.go, kvblock/index.go):
the index is fed only by the nodes' KV events (stored / removed, each with its medium), never
by looking into a node, and answers "which nodes hold how much of this prompt". The router
may receive the events late (`router.index.delay_ms`), so the index can be stale; the Router
measures how often that misleads it.

Three scorers, as named in llm-d's KV-cache manager design (seed 003):
- `longest_prefix`: blocks held consecutively from the first one. The weighted score adds,
  per matched block, the highest weight among the tiers the node holds it in — exactly
  LongestPrefixScorer.Score with getMaxWeight (pkg/kvcache/kvblock_scorer.go).
- `highest_hit`: the position (1-based) of the last prompt block the node holds, times that
  block's tier weight; holes before it do not count against it.
- `coverage`: the number of prompt blocks the node holds anywhere in the prompt, weighted.
Every scorer also reports the consecutive match, which is what a node's prefix cache can
really use (vLLM only reuses a prefix), so the app can show where the scorers differ.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Sequence

from kvtui.events import BlocksEvicted, BlocksStored, Event, NodeCacheCleared

MEDIA = ("gpu", "cpu")
_BIT = {m: 1 << i for i, m in enumerate(MEDIA)}


@dataclass(frozen=True, slots=True)
class Match:
    """One node's answer: consecutive blocks from the first, and the scorer's weighted blocks."""

    consecutive: int
    weighted: float


class KVIndex:
    EVENT_TYPES = (BlocksStored, BlocksEvicted, NodeCacheCleared)

    def __init__(self, scorer: str = "longest_prefix", weights: dict[str, float] | None = None) -> None:
        self.scorer = scorer
        w = {"gpu": 1.0, "cpu": 0.8} if weights is None else weights
        # weight of a tier bitmask: the best tier the node holds the block in
        self._mask_weight = {
            mask: max((w[m] for m in MEDIA if mask & _BIT[m]), default=0.0) for mask in range(1, 1 << len(MEDIA))
        }
        self._where: dict[int, dict[str, int]] = {}

    # ------------------------------------------------------------------ feeding
    def on_event(self, ev: Event) -> None:
        kind = type(ev)
        if kind is BlocksStored:
            self.add(ev.node, ev.keys, ev.medium)
        elif kind is BlocksEvicted:
            self.remove(ev.node, ev.keys, ev.medium)
        elif kind is NodeCacheCleared:
            self.clear(ev.node)

    def reset(self, where: dict[int, Iterable[str]]) -> None:
        """Replace the whole index (after the control plane recovered it from its log)."""
        gpu = _BIT["gpu"]
        self._where = {k: dict.fromkeys(nodes, gpu) for k, nodes in where.items() if nodes}

    def add(self, node: str, keys: Iterable[int], medium: str = "gpu") -> None:
        bit = _BIT[medium]
        where = self._where
        for k in keys:
            d = where.get(k)
            if d is None:
                where[k] = {node: bit}
            else:
                d[node] = d.get(node, 0) | bit

    def remove(self, node: str, keys: Iterable[int], medium: str = "gpu") -> None:
        bit = _BIT[medium]
        where = self._where
        for k in keys:
            d = where.get(k)
            if d is None:
                continue
            mask = d.get(node, 0) & ~bit
            if mask:
                d[node] = mask
            elif node in d:
                del d[node]
                if not d:
                    del where[k]

    def clear(self, node: str) -> None:
        """The node lost its cache (went down): every tier of it."""
        where = self._where
        for k in [k for k, d in where.items() if node in d]:
            d = where[k]
            del d[node]
            if not d:
                del where[k]

    # ------------------------------------------------------------------ asking
    def match(self, keys: Sequence[int]) -> dict[str, Match]:
        """Per node holding any of `keys`: its consecutive match and its scorer score."""
        prefix = self._longest_prefix(keys)
        if self.scorer == "longest_prefix":
            return prefix
        return {n: Match(prefix[n].consecutive if n in prefix else 0, w) for n, w in self._scan(keys).items()}

    def _longest_prefix(self, keys: Sequence[int]) -> dict[str, Match]:
        """Walk the keys from the first; a node drops out at its first miss (keys are chained,
        so nothing after a miss can be reused by its prefix cache)."""
        where, weight = self._where, self._mask_weight
        out: dict[str, Match] = {}
        alive: dict[str, float] = {}
        depth = 0
        for depth, k in enumerate(keys):
            d = where.get(k)
            if not d:
                break
            if depth == 0:
                alive = {n: weight[m] for n, m in d.items()}
                continue
            for n in [n for n in alive if n not in d]:
                out[n] = Match(depth, alive.pop(n))
            if not alive:
                return out
            for n in alive:
                alive[n] += weight[d[n]]
        else:
            depth = len(keys)
        for n, w in alive.items():
            out[n] = Match(depth, w)
        return out

    def _scan(self, keys: Sequence[int]) -> dict[str, float]:
        """highest_hit / coverage scores: every prompt block counts, holes or not."""
        where, weight = self._where, self._mask_weight
        coverage = self.scorer == "coverage"
        score: dict[str, float] = {}
        for pos, k in enumerate(keys):
            d = where.get(k)
            if not d:
                continue
            for n, m in d.items():
                score[n] = score.get(n, 0.0) + weight[m] if coverage else (pos + 1) * weight[m]
        return score

    def keys_on(self, node: str, medium: str | None = None) -> set[int]:
        """Every key the index credits to `node` (in `medium`, or any tier); for checks and tests."""
        bit = _BIT[medium] if medium is not None else -1
        return {k for k, d in self._where.items() if d.get(node, 0) & bit}
