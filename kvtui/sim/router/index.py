"""The router's global KV-block index: block key -> the nodes holding it, and in which tier.

After llm-d's kvcache.Indexer (llm-d/llm-d-kv-cache v0.4.0, then named llm-d-kv-cache-manager,
the release llm-d-inference-scheduler v0.4.0 builds on; pkg/kvcache/indexer.go, kvblock/index.go):
the index is fed only by the nodes' KV events (stored / removed, each with its medium), never
by looking into a node, and answers "which nodes hold how much of this prompt". The router
may receive the events late (`router.index.delay_ms`), so the index can be stale; the Router
measures how often that misleads it.

Three scorers, as named in llm-d's KV-cache manager design (seed 003):
- `longest_prefix`: blocks held consecutively from the first one. The weighted score adds,
  per matched block, the highest weight among the tiers the node holds it in — exactly
  LongestPrefixScorer.Score with getMaxWeight (pkg/kvcache/kvblock_scorer.go; from v0.7.0
  `fillMaxWeights`, the same sum).
- `highest_hit`: the position (1-based) of the last prompt block the node holds, times that
  block's tier weight; holes before it do not count against it.
- `coverage`: the number of prompt blocks the node holds anywhere in the prompt, weighted.
Every scorer also reports the consecutive match, which is what a node's prefix cache can
really use (vLLM only reuses a prefix), so the app can show where the scorers differ.
`highest_hit` and `coverage` are kvtui's own: no upstream router scores that way.
With `pods_per_key`, at most that many (node, tier) entries per key, as llm-d's in-memory index
keeps (see `kvtui.sim.router.pods_per_key`).
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import repeat
from operator import or_
from typing import ClassVar, Collection, Iterable, Sequence

from kvtui.events import BlocksEvicted, BlocksStored, Event, NodeCacheCleared
from kvtui.sim.router.pods_per_key import PodsPerKey

MEDIA = ("gpu", "cpu")
_BIT = {m: 1 << i for i, m in enumerate(MEDIA)}
_SLOT = {m: i for i, m in enumerate(MEDIA)}  # a medium's set in a node's tuple of sets


@dataclass(frozen=True, slots=True)
class Match:
    """One node's answer: consecutive blocks from the first, and the scorer's weighted blocks."""

    consecutive: int
    weighted: float


class KVIndex:
    """Kept as one set of keys per node and tier (llm-d's index maps key -> pods; the same
    facts the other way round). Why: every stored or evicted block passes through here, so
    feeding the index must be cheap — a KV event is one C-level `set.update` or
    `difference_update`, not a dict operation per key — and the question asked per request,
    "how far does each node match this prompt", walks each node's set over the prompt in
    C-level chunks.

    Duplicate events are taken as llm-d's in-memory index takes them (llm-d-kv-cache
    pkg/kvcache/kvblock/in_memory.go at 7be76e1, v0.8.0-37: `Add` puts the pod entry in a per-key
    set, `Evict` removes it): a node's second stored event for a key it already holds changes
    nothing, and its first removed event unlists it, even while the node's pool keeps another
    copy (vLLM 0.33.0 caches the recomputed last block of a fully cached prompt as a second copy
    and reports each copy's eviction). A set per node and tier is exactly that rule."""

    EVENT_TYPES: ClassVar[tuple[type[Event], ...]] = (BlocksStored, BlocksEvicted, NodeCacheCleared)

    def __init__(
        self, scorer: str = "longest_prefix", weights: dict[str, float] | None = None, pods_per_key: int | None = None
    ) -> None:
        self.scorer = scorer
        self._pods = PodsPerKey(pods_per_key) if pods_per_key else None  # llm-d's bound, when asked for
        w = {"gpu": 1.0, "cpu": 0.8} if weights is None else weights
        self._weight = tuple(w[m] for m in MEDIA)
        # weight of a tier bitmask: the best tier the node holds the block in
        self._mask_weight = {
            mask: max((w[m] for m in MEDIA if mask & _BIT[m]), default=0.0) for mask in range(1, 1 << len(MEDIA))
        }
        self._held: dict[str, tuple[set[int], ...]] = {}  # node -> one key set per medium (MEDIA order)
        self._firsts: set[int] = set()  # see `add`

    # ------------------------------------------------------------------ feeding
    def on_event(self, ev: Event) -> None:
        match ev:
            case BlocksStored():
                self.add(ev.node, ev.keys, ev.medium, ev.first_index)
            case BlocksEvicted():
                self.remove(ev.node, ev.keys, ev.medium)
            case NodeCacheCleared():
                self.clear(ev.node)

    def _sets(self, node: str) -> tuple[set[int], ...]:
        sets = self._held.get(node)
        if sets is None:
            sets = self._held[node] = tuple(set() for _ in MEDIA)
        return sets

    def reset(self, where: dict[int, Iterable[str]]) -> None:
        """Replace the whole index (after the control plane recovered it from its log)."""
        self._held = {}
        self._firsts = set(where)
        if self._pods is not None:
            self._pods = PodsPerKey(self._pods.cap)
            for k, nodes in where.items():
                for n in nodes:
                    self.add(n, (k,))
            return
        for k, nodes in where.items():
            for n in nodes:
                self._sets(n)[0].add(k)

    def add(self, node: str, keys: Sequence[int], medium: str = "gpu", first: int = -1) -> None:
        """`keys` stored on `node`, the first of them at block position `first` (-1: unknown;
        any position > 0 when only "not a prompt's first block" is known, as live events say).

        Every key stored at position 0, or at no known one, also goes into `_firsts`, which is
        never pruned: a key a prompt starts with that is not there is held by no node, and
        `_longest_prefix` answers so with one lookup instead of one per node (at 64 nodes that
        walk was most of the index's cost per request, for prompts nobody holds). It grows by
        one entry per distinct first block stored (a small part of what a run keeps per request)."""
        if first == 0:
            self._firsts.update(keys[:1])  # a live event may store no full block
        elif first < 0:
            self._firsts.update(keys)
        self._sets(node)[_SLOT[medium]].update(keys)
        if self._pods is not None:
            for (other, slot), k in self._pods.stored(node, _SLOT[medium], keys):
                self._held[other][slot].discard(k)

    def prune_firsts(self, most: int) -> None:
        """Past `most` entries, keep in `_firsts` only the keys some node holds now: what `add`
        says of it stays true (a key not there is held by no node). The simulation never calls
        it (its `_firsts` grows with its requests); a live session does, so an engine that
        stores endless distinct prompts cannot grow it without bound (kvtui/live/state.py).
        With `most` at least twice what the nodes can hold, it costs O(1) per key stored."""
        if len(self._firsts) > most:
            self._firsts &= set().union(*(held for sets in self._held.values() for held in sets))

    def remove(self, node: str, keys: Iterable[int], medium: str = "gpu") -> None:
        sets = self._held.get(node)
        if sets is not None:
            sets[_SLOT[medium]].difference_update(keys)
        if self._pods is not None:
            self._pods.removed(node, _SLOT[medium], keys)

    def clear(self, node: str) -> None:
        """The node lost its cache (went down): every tier of it."""
        sets = self._held.pop(node, None)
        if self._pods is not None and sets is not None:
            self._pods.cleared(node, enumerate(sets))

    # ------------------------------------------------------------------ asking
    def match(self, keys: Sequence[int]) -> dict[str, Match]:
        """Per node holding any of `keys`: its consecutive match and its scorer score."""
        prefix = self._longest_prefix(keys)
        if self.scorer == "longest_prefix":
            return prefix
        return {n: Match(prefix[n].consecutive if n in prefix else 0, w) for n, w in self._scan(keys).items()}

    def _longest_prefix(self, keys: Sequence[int]) -> dict[str, Match]:
        """Per node, the keys it holds from the first on (keys are chained, so nothing after a
        miss can be reused by its prefix cache), weighted per block by its best tier."""
        out: dict[str, Match] = {}
        if not keys or keys[0] not in self._firsts:
            return out  # no node was ever told of the prompt's first block
        first = keys[0]
        for node, sets in self._held.items():
            if first not in sets[0] and first not in sets[1]:
                continue  # most nodes, for most prompts: one lookup each
            n = _run_length(keys, sets)
            if n:
                out[node] = Match(n, self._prefix_weight(keys, n, sets))
        return out

    def _prefix_weight(self, keys: Sequence[int], n: int, sets: tuple[set[int], ...]) -> float:
        """The sum, block by block in order (as a running total would give it), of the best tier
        weight of the node's first `n` blocks."""
        gpu, cpu = sets
        if not cpu:
            return sum(repeat(self._weight[0], n))
        weight = self._mask_weight
        return sum(weight[(k in gpu) | (k in cpu) << 1] for k in keys[:n])

    def _scan(self, keys: Sequence[int]) -> dict[str, float]:
        """highest_hit / coverage scores: every prompt block counts, holes or not."""
        weight = self._mask_weight
        coverage = self.scorer == "coverage"
        score: dict[str, float] = {}
        for node, (gpu, cpu) in self._held.items():
            masks = list(map(or_, map(gpu.__contains__, keys), map(_shifted(cpu), keys)))
            held = [(pos, m) for pos, m in enumerate(masks) if m]
            if not held:
                continue
            if coverage:
                score[node] = sum(weight[m] for _pos, m in held)
            else:
                pos, m = held[-1]
                score[node] = (pos + 1) * weight[m]
        return score

    def gpu_run(self, node: str, keys: Sequence[int], upto: int) -> int:
        """How many leading `keys` (at most `upto`) `node` holds in GPU memory: the device part
        of a consecutive match that may go on in the CPU tier (Dynamo credits the two apart)."""
        sets = self._held.get(node)
        if sets is None or not sets[1]:
            return upto
        return _run_length(keys[:upto], (sets[0], set()))

    def keys_on(self, node: str, medium: str | None = None) -> set[int]:
        """Every key the index credits to `node` (in `medium`, or any tier); for checks and tests."""
        sets = self._held.get(node)
        if sets is None:
            return set()
        if medium is not None:
            return set(sets[MEDIA.index(medium)])
        return set().union(*sets)


    def gap(self, node: str, medium: str, held: Collection[int]) -> tuple[int, int, int]:
        """How the index's `medium` tier of `node` compares with `held`, the keys the node
        really holds there: (credited, credited but not held, held but not credited). Set
        arithmetic on the index's own set, no copy (the app's belief panel asks per frame)."""
        sets = self._held.get(node)
        credited = sets[_SLOT[medium]] if sets is not None else set()
        wrong = len(credited.difference(held))
        return len(credited), wrong, len(held) - (len(credited) - wrong)


def _shifted(cpu: set[int]):
    """`k in cpu` as the CPU tier's bit (2 or 0), for building tier masks with C-level maps."""
    return lambda k: (k in cpu) << 1


def _run_length(keys: Sequence[int], sets: tuple[set[int], ...]) -> int:
    """How many leading `keys` are in any of `sets`: checked in growing C-level chunks, so a
    node that misses the first block costs one lookup and a long match costs about two passes.
    With one tier a chunk held whole is one `issuperset` (no list of answers built)."""
    gpu, cpu = sets
    if cpu:
        held = lambda k: k in gpu or k in cpu  # noqa: E731
    else:
        held = gpu.__contains__
    if not keys or not held(keys[0]):
        return 0  # most nodes, for most prompts
    n, size, total = 1, 4, len(keys)
    while n < total:
        chunk = keys[n : n + size]
        if cpu:
            hits = list(map(held, chunk))
            if False in hits:
                return n + hits.index(False)
        elif not gpu.issuperset(chunk):
            return n + _first_miss(chunk, gpu)
        n += len(chunk)
        size *= 4
    return total


def _first_miss(chunk: Sequence[int], held: set[int]) -> int:
    """Where the first key of `chunk` missing from `held` is (one is): halved by `issuperset`,
    which stops at the first miss, so a miss early in a long chunk costs little."""
    lo, hi = 0, len(chunk)  # chunk[:lo] is held; the first miss is in chunk[lo:hi]
    while hi - lo > 16:
        mid = (lo + hi) // 2
        if held.issuperset(chunk[lo:mid]):
            lo = mid
        else:
            hi = mid
    return lo + list(map(held.__contains__, chunk[lo:hi])).index(False)
