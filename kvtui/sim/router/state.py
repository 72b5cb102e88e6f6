"""What a policy reads and what it returns: node snapshots, decisions, the seeded picker.

`NodeState` is a snapshot of one node as the router sees it at decision time (after BLIS's
RouterState: callers read snapshots, never the nodes' internals). Policies never touch a
`Node`, its pool or its queue; the Router builds the snapshots and hands them over, so a
policy is a pure function of (request, snapshots, its own state, the seeded RNG). Snapshots
are values nobody changes; they are not `frozen` dataclasses only because a frozen one's
`__init__` costs ~4x more, and the Router builds one per node per decision.

`pick_best` is the max-score picker every policy uses. Ties follow the modelled system's rule:
by default the seeded RNG, as llm-d's max-score picker does (it shuffles the candidates before
taking the maximum, gateway-api-inference-extension v1.2.0
pkg/epp/scheduling/framework/plugins/picker/max_score_picker.go); with `first=True` the first
candidate in cluster order, as SGLang's gateway does (`min_by_key` over its worker list).

A decision says "tie" only when its pick really shared the top key with another candidate:
`Decision.tie` holds the sentence (empty otherwise), and `margin` is the pick's lead over the
runner-up on the first component of the key that separates them. Rule-based picks (round
robin, random, session affinity) have no runner-up score: margin 0 and no tie (issue 20).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING, Callable, Sequence

import numpy as np

from kvtui.events import Candidate

if TYPE_CHECKING:
    from kvtui.sim.blocks import BlockPool

Features = tuple[tuple[str, float], ...]


@dataclass(slots=True, unsafe_hash=True, init=False)
class NodeState:
    """One node's features at decision time.

    `prefix` is the number of leading prompt blocks the index says this node holds (the
    consecutive match); `prefix_score` is the index scorer's weighted score over `total`
    prompt blocks, in [0, 1]. `prefill_tokens` are prompt tokens queued or mid-prefill on the
    node (work it must do before a new request's prefill starts; -1 unless the policy declares
    `READS_PREFILL_TOKENS`, as walking every queue per decision costs); `used_blocks` are blocks
    held by requests now (decode state), `free_blocks` can be allocated (empty or idle cached),
    `usable_blocks` is the pool less vLLM's null block (see `block_figures`).
    """

    name: str
    problem: str | None
    prefix: int
    prefix_score: float
    total: int
    running: int
    waiting: int
    used_blocks: int
    free_blocks: int
    usable_blocks: int
    prefill_tokens: int
    other_prefix: int = -1  # approximate mode: what the precise (KV-event) index says; -1 otherwise
    gpu_prefix: int = -1  # the part of `prefix` held in GPU memory (= prefix unless the policy READS_TIERS)
    iteration_left_ms: float = -1.0  # until the node's running iteration ends (0 idle; -1 unless the policy READS_ITERATION_LEFT)
    queue_s: float = -1.0  # seconds of prefill queued on the node (Node.pending_prefill_seconds; -1 unless READS_QUEUE_SECONDS)

    def __init__(
        self, name: str, problem: str | None, prefix: int, prefix_score: float, total: int, running: int,
        waiting: int, used_blocks: int, free_blocks: int, usable_blocks: int, prefill_tokens: int,
        other_prefix: int = -1, gpu_prefix: int = -1, iteration_left_ms: float = -1.0, queue_s: float = -1.0,
    ) -> None:
        """Written out, not generated: under mypyc a dataclass's generated `__init__` stays an
        interpreted function (~0.8 us a call, 4x the pure build's), and the Router builds one
        snapshot per node per decision; a written one compiles to a native constructor."""
        self.name, self.problem, self.prefix, self.prefix_score = name, problem, prefix, prefix_score
        self.total, self.running, self.waiting = total, running, waiting
        self.used_blocks, self.free_blocks, self.usable_blocks = used_blocks, free_blocks, usable_blocks
        self.prefill_tokens, self.other_prefix, self.gpu_prefix = prefill_tokens, other_prefix, gpu_prefix
        self.iteration_left_ms, self.queue_s = iteration_left_ms, queue_s

    @property
    def eligible(self) -> bool:
        return self.problem is None

    @property
    def active(self) -> int:
        return self.running + self.waiting

    @property
    def kv_usage(self) -> float:
        """vLLM's `kv_cache_usage_perc`: 1 - free / usable (a pool with no usable block is full)."""
        return 1.0 - self.free_blocks / self.usable_blocks if self.usable_blocks else 1.0

    def base_features(self) -> Features:
        """The features every decision shows, whatever the policy."""
        out: list[tuple[str, float]] = [("prefix", float(self.prefix))]
        if self.other_prefix >= 0:
            out.append(("precise", float(self.other_prefix)))
        out += [
            ("run", float(self.running)),
            ("wait", float(self.waiting)),
            ("kv_util", round(self.kv_usage, 4)),
        ]
        return tuple(out)


def block_figures(pool: "BlockPool") -> tuple[int, int, int]:
    """(used, free, usable) blocks of a node's pool, as the router sees them.

    vLLM 0.33.0 reports KV usage as `BlockPool.get_usage` (vllm/v1/core/block_pool.py):
    1 - free / (num_gpu_blocks - 1), the null block (block 0, never allocated) left out of the
    total; counting it as used would make an idle node look 1 / N busy.
    tests/differential/test_vllm_pool.py compares the usage these give with the real pool's.
    """
    free = pool.free_queue.size
    usable = pool.usable
    return usable - free, free, usable


class Decision:
    """A policy's answer: the node (None = refuse), why, every candidate, the margin.

    `candidates` is built on first read: a policy hands over the function that builds it (see
    `candidates` below), and the Router reads it only when someone listens to `RouteDecided`.
    Why: one Candidate per node per decision, with its features, is work that grows with the
    cluster, and a headless run nobody watches never reads it. Built from the decision's own
    snapshots and scores, it is the same tuple whenever it is read.
    """

    __slots__ = ("node", "reason", "_candidates", "margin", "tie")

    def __init__(
        self,
        node: str | None,
        reason: str,
        candidates: "tuple[Candidate, ...] | Callable[[], tuple[Candidate, ...]]",
        margin: float = 0.0,
        tie: str = "",
    ) -> None:
        self.node = node
        self.reason = reason
        self._candidates = candidates
        self.margin = margin
        self.tie = tie

    @property
    def candidates(self) -> tuple[Candidate, ...]:
        if callable(self._candidates):
            self._candidates = self._candidates()
        return self._candidates

    def __repr__(self) -> str:
        return f"Decision(node={self.node!r}, reason={self.reason!r}, margin={self.margin!r}, tie={self.tie!r})"


Scores = dict[str, float] | Callable[[], dict[str, float]]


def build_candidates(
    states: Sequence[NodeState],
    scores: Scores,
    extra: Callable[[NodeState], Features] | None = None,
) -> tuple[Candidate, ...]:
    """Every node as a candidate: its features (the base ones, then the policy's), its score."""
    if callable(scores):
        scores = scores()
    out = []
    for s in states:
        feats = s.base_features() + (extra(s) if extra is not None and s.eligible else ())
        out.append(
            Candidate(
                node=s.name,
                score=round(scores.get(s.name, 0.0), 6),
                features=feats,
                eligible=s.eligible,
                note=s.problem or "",
            )
        )
    return tuple(out)


def candidates(
    states: Sequence[NodeState],
    scores: Scores,
    extra: Callable[[NodeState], Features] | None = None,
) -> Callable[[], tuple[Candidate, ...]]:
    """The candidate list of a decision, to be built when read (`Decision.candidates`).
    `scores` and what `extra` reads must not change after the decision (policies build them
    per decision); `scores` may be a function that builds the dict, so that a decision nobody
    reads costs no per-node dict."""
    return partial(build_candidates, states, scores, extra)


def pick_best(
    ok: Sequence[NodeState],
    key: Callable[[NodeState], float | tuple],
    rng: np.random.Generator,
    first: bool = False,
) -> tuple[NodeState, float, int]:
    """The state with the highest `key`; ties broken by `rng`, or with `first` by cluster order
    (see `pick_by_keys`)."""
    return pick_by_keys(ok, list(map(key, ok)), rng, first)


def pick_by_keys(
    ok: Sequence[NodeState],
    keys: list,
    rng: np.random.Generator,
    first: bool = False,
) -> tuple[NodeState, float, int]:
    """`pick_best` given every candidate's key (`keys[i]` is `ok[i]`'s): the policies that run
    per decision at any cluster size build them in one comprehension, which costs less per node
    than a key function called through `map` (and compiles to a native loop, not a call per node).

    Returns (pick, margin, tied): margin is the pick's lead over the runner-up (the best other
    key) on the first component where they differ (0 when tied or alone); tied is how many
    shared the top key. The RNG is drawn only for a tie it breaks, so a policy that never ties
    draws nothing.
    """
    best = max(keys)
    tied = keys.count(best)
    if tied == 1 or first:
        i = keys.index(best)
    else:
        i = nth_index(keys, best, int(rng.integers(tied)))
    if len(keys) == 1 or tied > 1:
        return ok[i], 0.0, tied
    return ok[i], lead(best, max(keys[:i] + keys[i + 1 :])), tied


def nth_index(keys: list, value: object, n: int) -> int:
    """Where the n-th (from 0) occurrence of `value` is in `keys`: list.index's C-level scans,
    not a Python pass over every node (most decisions of a cluster that is not full are ties)."""
    i = keys.index(value)
    for _ in range(n):
        i = keys.index(value, i + 1)
    return i


def lead(best: float | tuple, runner_up: float | tuple) -> float:
    """How far `best` is ahead of `runner_up` on the first component where they differ."""
    if not isinstance(best, tuple):
        return float(best - runner_up)  # type: ignore[operator]
    return next((float(b - r) for b, r in zip(best, runner_up) if b != r), 0.0)  # type: ignore[arg-type]


def least_loaded(ok: Sequence[NodeState], rng: np.random.Generator) -> tuple[NodeState, float, int]:
    """Fewest active requests, then most free blocks; remaining ties to the RNG."""
    return pick_by_keys(ok, [(-s.running - s.waiting, s.free_blocks) for s in ok], rng)  # -active, without its property call


def no_eligible(states: Sequence[NodeState]) -> Decision:
    reasons = "; ".join(f"{s.name}: {s.problem}" for s in states)
    return Decision(None, f"no node can take it ({reasons})", candidates(states, {}))


RNG_DRAW = "drawn by the seeded RNG"
FIRST_IN_ORDER = "the first in cluster order"


def tie_text(tied: int, how: str = RNG_DRAW) -> str:
    """The decision's tie sentence: empty unless `tied` candidates shared the top key."""
    return f"tie of {tied}, {how}" if tied > 1 else ""


def tie_note(tied: int, how: str = RNG_DRAW) -> str:
    """The tie sentence as a suffix of a decision's reason."""
    return f" ({tie_text(tied, how)})" if tied > 1 else ""
