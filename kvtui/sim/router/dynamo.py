"""dynamo: NVIDIA Dynamo's KV router — lowest cost of credited prefill blocks + decode blocks.

After ai-dynamo/dynamo 1.6.1's default worker selector (`DefaultWorkerScorer::worker_logit` in
lib/kv-router/src/scheduling/selector/default.rs; formerly lib/llm/src/kv_router/scheduler.rs),
its defaults (`KvRouterConfig` in lib/kv-router/src/scheduling/config.rs, as the 1.6.1 wheel's
`dynamo._core.KvRouterConfig` documents them), and the per-worker load from `ActiveSequences`
(lib/kv-router/src/sequences/single.rs). For each worker:

    raw_prefill_blocks = (isl + active_tokens) / block_size
        active_tokens  = the uncached prompt tokens of the requests routed to that worker whose
                         prefill has not finished (added by `add_request`, removed by
                         `mark_prefill_completed` at the first output token, or by `free`)
    overlap_credit     = overlap_score_credit x device + host_cache_hit_weight x host
        device         = consecutive prompt blocks the KV indexer says the worker holds in GPU
        host           = the blocks after those that continue the match in the CPU tier
                         (Dynamo: 0.75 for host-pinned, 0.25 for disk; kvtui has no disk tier)
    decode_blocks      = new_blocks + active_blocks   (`potential_blocks_and_tokens`)
        active_blocks  = distinct prompt-block hashes of the requests active on that worker
                         (`unique_blocks`, shared prefixes counted once)
        new_blocks     = this request's prompt blocks not among them
    cost (logit)       = prefill_load_scale x max(0, raw_prefill_blocks - overlap_credit)
                         + decode_blocks

With only GPU blocks and the default credit of 1 this is the older two-term logit
`overlap_score_weight x prefill_blocks + decode_blocks`; `overlap_score_weight` is now a
deprecated alias of `prefill_load_scale` upstream (it wins when given; 0 also zeroes the
credit), and so it is here. Checked against the real Dynamo 1.6.1 by
tests/differential/test_dynamo_router.py.

Lowest cost wins. With `temperature` > 0 the worker is sampled from `softmax_sample`: costs are
min-max normalised and negated, p_i ~ exp(-(c_i - c_min) / ((c_max - c_min) x T)), uniform
when all costs are equal; one uniform draw walks the cumulative probabilities. At temperature 0
the minimum is taken and exact ties are drawn at random (the current selector's
`minimum_cost_index`; an older one broke ties by the indexer's tree size first).

The in-flight figures are the router's own bookkeeping, as Dynamo's are (it never reads them
from the engine): `routed` adds the request with the overlap it was routed on, FirstToken marks
its prefill complete, RequestCompleted / RequestRejected free it, NodeDown forgets the node
(Dynamo drops a worker that leaves); a rerouted request is freed from its old node before it is
added to the new one. Preemptions are invisible to Dynamo's router and so to this policy. Not
modelled: the 300 s forced expiry of stale requests, per-dp-rank workers, the optional
prefix-route cache, the overlap-credit decay and the active-request weight (0 by default), the
shared-cache tier.

Candidate columns: `pf_blk` (prefill blocks), `dec_blk` (decode blocks), `cost`, and with
temperature `p` (the softmax probability).
"""

from __future__ import annotations

import math
from typing import Sequence

from kvtui.events import Event, FirstToken, NodeDown, RequestCompleted, RequestRejected
from kvtui.scenario.model import Router as RouterConfig
from kvtui.sim.request import Request
from kvtui.sim.router.base import Context, Policy
from kvtui.sim.router.state import Decision, NodeState, candidates, pick_by_keys, tie_note, tie_text


class ActiveSequences:
    """One worker's active requests as Dynamo's router tracks them (ai-dynamo/dynamo 1.6.1
    `ActiveSequences` in lib/kv-router/src/sequences/single.rs, formerly kv_router/sequence.rs;
    `potential_blocks_and_tokens` is `PromptRegistry`'s, module sequences::prompt_registry).

    Dynamo counts each distinct prompt-block hash of the active requests once (`unique_blocks`)
    and keeps a count per hash. The hashes are chained (a block's key fixes every key before
    it), so two prompts share exactly a common prefix, and the active prompts form a tree.
    Kept as that tree of runs (`_Run`): adding, freeing and counting a prompt's blocks walk its
    few runs, not its blocks (a Mooncake prompt is ~750 blocks, asked once per worker per
    decision, and a per-key count was ~10 % of the trace's run, in hash-table work on cold
    memory). The distinct blocks are the runs' lengths summed; `held` lists them with Dynamo's
    counts, for checks."""

    __slots__ = ("blocks", "prefill", "active_tokens", "_first", "_distinct")

    def __init__(self) -> None:
        self.blocks: dict[str, tuple[int, ...]] = {}  # request -> its prompt block keys
        self.prefill: dict[str, int] = {}  # request -> prefill tokens not yet done
        self.active_tokens = 0
        self._first: dict[int, _Run] = {}  # the runs prompts start with, by their first key
        self._distinct = 0  # distinct keys in the tree: the runs' lengths summed

    @property
    def active_blocks(self) -> int:
        return self._distinct

    def new_blocks(self, keys: Sequence[int]) -> int:
        """Prompt blocks not among the active ones (`potential_blocks_and_tokens`): the prompt's
        length less the part of it the tree holds from its root."""
        pos, n, after = 0, len(keys), self._first
        while pos < n:
            run = after.get(keys[pos])
            if run is None:
                break
            length = len(run.keys)
            got = _agreeing(run.keys, keys, pos, min(length, n - pos))
            pos += got
            if got < length:
                break
            after = run.after
        return n - pos

    def add_request(self, request: str, keys: Sequence[int], prefill_tokens: int) -> None:
        keys = tuple(keys)
        self.blocks[request] = keys
        self.prefill[request] = prefill_tokens
        self.active_tokens += prefill_tokens
        pos, n, after = 0, len(keys), self._first
        while pos < n:
            run = after.get(keys[pos])
            if run is None:  # the rest is new: one run
                after[keys[pos]] = _Run(keys[pos:], 1)
                self._distinct += n - pos
                return
            got = _agreeing(run.keys, keys, pos, min(len(run.keys), n - pos))
            if got < len(run.keys):
                run.split(got)  # the prompt leaves (or ends in) this run: cut it there
            run.count += 1
            pos += got
            after = run.after

    def mark_prefill_completed(self, request: str) -> None:
        t = self.prefill.pop(request, None)
        if t is not None:
            self.active_tokens -= t

    def free(self, request: str) -> None:
        """Count the request's runs down; the first that nobody else holds goes, with what
        hangs from it (only this request's own runs: each holds no more requests than the run
        before it)."""
        self.mark_prefill_completed(request)
        keys = self.blocks.pop(request, None)
        if keys is None:
            return
        pos, n, after = 0, len(keys), self._first
        while pos < n:  # the prompt's path is whole runs (add_request cut them at its end)
            run = after[keys[pos]]
            run.count -= 1
            if not run.count:
                del after[keys[pos]]
                self._distinct -= n - pos
                return
            pos += len(run.keys)
            after = run.after

    def held(self) -> dict[int, int]:
        """Every active key with the number of active requests holding it (Dynamo's counts)."""
        out: dict[int, int] = {}
        todo = list(self._first.values())
        while todo:
            run = todo.pop()
            out.update(dict.fromkeys(run.keys, run.count))
            todo.extend(run.after.values())
        return out


class _Run:
    """Consecutive chained keys that the same active requests hold (`count` of them), and the
    runs that continue it, by their first key."""

    __slots__ = ("keys", "count", "after")

    def __init__(self, keys: tuple[int, ...], count: int) -> None:
        self.keys = keys
        self.count = count
        self.after: dict[int, _Run] = {}

    def split(self, at: int) -> None:
        """Keep the first `at` keys; the rest become the one run after them, held as this was."""
        rest = _Run(self.keys[at:], self.count)
        rest.after = self.after
        self.keys = self.keys[:at]
        self.after = {rest.keys[0]: rest}


def _agreeing(run: tuple[int, ...], keys: Sequence[int], pos: int, n: int) -> int:
    """How many of the first `n` keys of `run` equal `keys` from `pos` (the first does: the
    run was found by it). Keys are chained, so an equal key means equal keys before it: the
    last equal one is found by bisection, not compared one by one."""
    if run[n - 1] == keys[pos + n - 1]:
        return n
    lo, hi = 1, n - 1  # run[:lo] agrees; the agreement ends at or before hi
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if run[mid - 1] == keys[pos + mid - 1]:
            lo = mid
        else:
            hi = mid - 1
    return lo


def softmax_probabilities(costs: Sequence[float], temperature: float) -> list[float]:
    """Dynamo's `softmax_sample` probabilities: lower cost is likelier (temperature > 0)."""
    lo, hi = min(costs), max(costs)
    if lo == hi:
        return [1.0 / len(costs)] * len(costs)
    scale = -1.0 / ((hi - lo) * temperature)
    ex = [math.exp((c - lo) * scale) for c in costs]
    total = sum(ex)
    return [e / total for e in ex]


def sample_index(probs: Sequence[float], u: float) -> int:
    """The first index whose cumulative probability reaches `u` (the last one if rounding leaves a gap)."""
    acc = 0.0
    for i, p in enumerate(probs):
        acc += p
        if u <= acc:
            return i
    return len(probs) - 1


def overlap_words(s: NodeState) -> str:
    """The consecutive match, split by tier when part of it is in the CPU tier."""
    host = s.prefix - s.gpu_prefix if s.gpu_prefix >= 0 else 0
    return f"{s.gpu_prefix} GPU + {host} CPU" if host > 0 else str(s.prefix)


class Dynamo(Policy):
    EVENT_TYPES = (FirstToken, RequestCompleted, RequestRejected, NodeDown)
    READS_TIERS = True

    def __init__(self, prefill_load_scale: float = 1.0, temperature: float = 0.0, credits: tuple[float, float] = (1.0, 0.75)) -> None:
        """`credits`: prefill blocks saved per cached prompt block in GPU memory
        (`overlap_score_credit`) and per block after them in the CPU tier (`host_cache_hit_weight`)."""
        self.weight = prefill_load_scale
        self.credit, self.host_credit = credits
        self.temperature = temperature
        self.workers: dict[str, ActiveSequences] = {}
        self.where: dict[str, str] = {}  # request -> node it is active on
        self.stats = {"sampled": 0, "not_lowest": 0}
        self._block_size = 16  # from the last decision's context (routed gets none)

    @classmethod
    def from_config(cls, cfg: RouterConfig) -> "Dynamo":
        c = cfg.dynamo
        scale, credit = c.prefill_load_scale, c.overlap_score_credit
        if c.overlap_score_weight is not None:  # the deprecated alias wins; 0 also zeroes the credit
            scale, credit = c.overlap_score_weight, (0.0 if c.overlap_score_weight == 0 else credit)
        return cls(scale, c.temperature, (credit, c.host_cache_hit_weight))

    # ------------------------------------------------------------------ bookkeeping
    def seqs(self, node: str) -> ActiveSequences:
        w = self.workers.get(node)
        if w is None:
            w = self.workers[node] = ActiveSequences()
        return w

    def routed(self, req: Request, node: str, states: Sequence[NodeState]) -> None:
        self._free(req.id)
        bs = self._block_size
        cached = next((self.cached_tokens(s, bs) for s in states if s.name == node), 0)
        keys = req.block_keys[: req.prompt_tokens // bs]
        self.seqs(node).add_request(req.id, keys, max(req.prompt_tokens - cached, 0))
        self.where[req.id] = node

    def cached_tokens(self, s: NodeState, block_size: int) -> int:
        """The prompt tokens Dynamo books as not to prefill: GPU blocks whole, CPU-tier blocks after
        them at the host weight, rounded half away from zero (`KvCostScorer::cached_tokens`)."""
        gpu = s.gpu_prefix if s.gpu_prefix >= 0 else s.prefix
        return math.floor((gpu + self.host_credit * (s.prefix - gpu)) * block_size + 0.5)

    def _free(self, request: str) -> None:
        node = self.where.pop(request, None)
        if node is not None:
            self.seqs(node).free(request)

    def on_event(self, ev: Event) -> None:
        if isinstance(ev, FirstToken):
            node = self.where.get(ev.request)
            if node is not None:
                self.seqs(node).mark_prefill_completed(ev.request)
        elif isinstance(ev, (RequestCompleted, RequestRejected)):
            self._free(ev.request)
        elif isinstance(ev, NodeDown):
            w = self.workers.pop(ev.node, None)
            if w is not None:
                for r in w.blocks:
                    self.where.pop(r, None)

    # ------------------------------------------------------------------ the cost
    def overlap_credit(self, s: NodeState) -> float:
        """Blocks of prefill the cache saves on `s`: GPU blocks at the credit, CPU-tier ones after them at the host weight."""
        gpu = s.gpu_prefix if s.gpu_prefix >= 0 else s.prefix
        return self.credit * gpu + self.host_credit * (s.prefix - gpu)

    def terms(self, req: Request, ctx: Context, ok: Sequence[NodeState]) -> dict[str, tuple[float, float, float]]:
        """Per node: (credited prefill blocks, decode blocks, cost)."""
        bs = ctx.block_size
        keys = req.block_keys[: req.prompt_tokens // bs]
        out = {}
        for s in ok:
            w = self.workers.get(s.name)
            active_tokens = w.active_tokens if w else 0
            prefill = max((req.prompt_tokens + active_tokens) / bs - self.overlap_credit(s), 0.0)
            decode = float((w.new_blocks(keys) + w.active_blocks) if w else len(keys))
            out[s.name] = (prefill, decode, self.weight * prefill + decode)
        return out

    def choose(self, req: Request, ctx: Context, states: Sequence[NodeState], ok: list[NodeState]) -> Decision:
        self._block_size = ctx.block_size
        terms = self.terms(req, ctx, ok)
        cost = {n: round(c, 9) for n, (_p, _d, c) in terms.items()}
        scores = {n: -c for n, c in cost.items()}
        probs: dict[str, float] = {}

        sampling = self.temperature > 0 and len(ok) > 1
        if sampling:  # the lowest only for the sentence: the one draw goes to the softmax
            best, margin, tied = min(ok, key=lambda s: cost[s.name]), 0.0, 1
        else:
            best, margin, tied = pick_by_keys(ok, [-cost[s.name] for s in ok], ctx.rng)
        pick = best
        if sampling:
            p = softmax_probabilities([cost[s.name] for s in ok], self.temperature)
            probs = {s.name: pi for s, pi in zip(ok, p)}
            pick = ok[sample_index(p, float(ctx.rng.random()))]
            self.stats["sampled"] += 1
            if cost[pick.name] != cost[best.name]:
                self.stats["not_lowest"] += 1
            others = [c for n, c in cost.items() if n != pick.name]
            margin = min(others) - cost[pick.name]

        def extra(s: NodeState):
            pf, dec, c = terms[s.name]
            feats: tuple[tuple[str, float], ...] = (("pf_blk", round(pf, 2)), ("dec_blk", round(dec, 2)), ("cost", round(c, 2)))
            if probs:
                feats += (("p", round(probs[s.name], 3)),)
            return feats

        pf, dec, c = terms[pick.name]
        total = states[0].total if states else 0
        reason = (
            f"{pick.name}: cost {c:.1f} = {self.weight:g}x{pf:.1f} prefill + {dec:.1f} decode blocks "
            f"(overlap {overlap_words(pick)}/{total})"
        )
        if probs:
            reason += f", sampled at temperature {self.temperature:g} (p {probs[pick.name]:.2f})"
            if cost[pick.name] > cost[best.name]:
                reason += f"; lowest was {best.name} at {cost[best.name]:.1f}"
        elif tied > 1:
            reason += ", lowest" + tie_note(tied)
        elif len(ok) > 1:
            reason += f", lowest by {margin:.1f}"
        else:
            reason += ", the only eligible node"
        return Decision(pick.name, reason, candidates(states, scores, extra), margin, "" if probs else tie_text(tied))

    def report(self) -> dict:
        return {
            "dynamo": {
                **self.stats,
                "tracked_requests": len(self.where),
            }
        }
