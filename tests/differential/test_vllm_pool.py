"""kvtui's block pool and KV manager beside vLLM 0.33.0's real `BlockPool`, on one request stream.

Both are driven as vLLM's KV cache manager drives its pool (vllm/v1/core/kv_cache_manager.py,
single_type_kv_cache_manager.py): at admission the longest run of cached full blocks, capped at
num_tokens - 1 (`get_computed_blocks`), the fit check counting the hit's idle blocks
(`get_num_blocks_to_allocate`), touch, allocate, register the blocks that are full
(`cache_full_blocks`); then chunked prefill and decode steps that allocate and register as they
go, preemption when a step finds no room (free everything, resume later with the output so far
as prompt), and frees in reverse order at the end. The stream (seeded) mixes shared prefixes,
multi-turn continuations, exact repeats of earlier prompts (fully cached, block-aligned or not),
partial tails, decode growth and pools small enough that most admissions evict.

Both sides see the same tokens: vLLM hashes them with its own `hash_block_tokens` (sha256, its
default) and the 64-bit integer form its KV events carry is kvtui's block key. Compared per
admission: the prefix-hit blocks, the block table, the cached keys with their number of copies,
the KV events since the previous admission (vLLM's sent through the real msgpack wire
format: `KVEventBatch`), BlockStored and BlockRemoved, duplicates included, and the KV usage the
router reads (`state.block_figures`) against the pool's own `get_usage` (the metric
`kv_cache_usage_perc`, which leaves the null block out).

Size: `cases(500)` admissions per pool size (KVTUI_DIFF_SCALE=20 for >= 10,000 by hand).
"""

from __future__ import annotations

import random
from collections import Counter
from dataclasses import dataclass, field

import pytest

from kvtui.sim.kv_manager import KVCacheManager
from kvtui.sim.request import Request
from kvtui.sim.router.state import NodeState, block_figures
from . import peers
from .vllm_peer import RequestView

BS = 4
POOL_SIZES = (12, 25, 48, 96)
MEASURES = ("hit blocks", "block table", "cached keys", "events", "usage")


@dataclass
class Sequence:
    """One request: its whole token sequence (prompt then output) and both sides' state."""

    id: str
    tokens: list[int]
    prompt: int
    keys: tuple[int, ...]  # the 64-bit hashes of its full blocks (kvtui's keys)
    hashes: list[bytes]  # vLLM's BlockHash of each full block
    chunk: int  # prefill tokens per step
    generated: int = 0
    computed: int = 0
    target: int = 0  # tokens to prefill at this admission
    vllm_blocks: list = field(default_factory=list)
    vllm_cached: int = 0  # the manager's num_cached_block for the request
    kvtui: Request | None = None

    @property
    def output(self) -> int:
        return len(self.tokens) - self.prompt


class Hasher:
    """vLLM's chained block hashes of a token list, and their integer (event) form."""

    def __init__(self, v):
        self.utils, self.sha256 = v.kv_cache_utils, v.hashing.sha256

    def __call__(self, tokens: list[int]) -> tuple[list[bytes], tuple[int, ...]]:
        hashes: list[bytes] = []
        parent = None
        for i in range(len(tokens) // BS):
            parent = self.utils.hash_block_tokens(self.sha256, parent, tokens[i * BS : (i + 1) * BS], None)
            hashes.append(parent)
        return hashes, tuple(self.utils.maybe_convert_block_hash(h) for h in hashes)


class Stream:
    """The randomized requests: shared prefixes, continuations, repeats, fresh prompts."""

    def __init__(self, rng: random.Random, usable: int, hasher: Hasher):
        self.rng, self.hasher = rng, hasher
        self.max_tokens = max(BS + 1, usable * BS // 3)
        self.families = [self._fresh(rng.randrange(0, 3 * BS + 1)) for _ in range(6)]
        self.prompts: list[list[int]] = []
        self.finished: list[list[int]] = []
        self.count = 0

    def _fresh(self, n: int) -> list[int]:
        return [self.rng.randrange(1000) for _ in range(n)]

    def _prompt(self) -> list[int]:
        rng, r = self.rng, self.rng.random()
        if r < 0.25 and self.prompts:
            return list(rng.choice(self.prompts))  # an exact repeat: fully cached if still there
        if r < 0.5 and self.finished:
            base = list(rng.choice(self.finished))  # the next turn of a conversation
        elif r < 0.85:
            base = list(rng.choice(self.families))
        else:
            base = []
        prompt = base + self._fresh(rng.randrange(1, 3 * BS + 1))
        if rng.random() < 0.4 and len(prompt) >= BS:
            del prompt[len(prompt) - len(prompt) % BS :]  # block-aligned
        return prompt[: self.max_tokens]

    def next(self) -> Sequence:
        rng = self.rng
        prompt = self._prompt()
        self.prompts.append(prompt)
        tokens = prompt + self._fresh(rng.randrange(1, 2 * BS + 3))
        hashes, keys = self.hasher(tokens)
        self.count += 1
        chunk = len(tokens) if rng.random() < 0.5 else rng.randrange(1, 2 * BS + 1)
        return Sequence(f"r{self.count}", tokens, len(prompt), keys, hashes, chunk)


class VllmSide:
    """vLLM's real BlockPool, driven as its KVCacheManager drives it (one full-attention group)."""

    def __init__(self, v, num_blocks: int):
        self.v = v
        self.pool = v.block_pool.BlockPool(num_blocks, True, BS, enable_kv_cache_events=True)
        events = v.kv_events
        self.encode = events.msgspec.msgpack.Encoder().encode  # the real publisher's encoder
        self.decode = events.msgspec.msgpack.Decoder(events.KVEventBatch).decode

    def admit(self, seq: Sequence, n: int) -> int | None:
        """Hit blocks, or None when the first chunk does not fit."""
        pool = self.pool
        computed = []
        for h in seq.hashes[: (seq.target - 1) // BS]:  # get_computed_blocks: at most num_tokens - 1
            found = pool.get_cached_block(h, [0])
            if found is None:
                break
            computed.append(found[0])
        hit_tokens = len(computed) * BS
        need = -(-(hit_tokens + min(n, seq.target - hit_tokens)) // BS) - len(computed)
        evictable = sum(1 for b in computed if b.ref_cnt == 0)
        if need + evictable > pool.get_num_free_blocks():
            return None
        pool.touch(computed)
        seq.vllm_blocks = computed + pool.get_new_blocks(need)
        seq.vllm_cached = len(computed)
        return len(computed)

    def room(self, seq: Sequence, tokens: int) -> bool:
        return -(-tokens // BS) - len(seq.vllm_blocks) <= self.pool.get_num_free_blocks()

    def grow(self, seq: Sequence, tokens: int) -> None:
        need = -(-tokens // BS) - len(seq.vllm_blocks)
        if need > 0:
            seq.vllm_blocks += self.pool.get_new_blocks(need)

    def cache(self, seq: Sequence, tokens: int) -> None:
        full = tokens // BS
        view = RequestView(seq.hashes, seq.tokens)
        self.pool.cache_full_blocks(view, seq.vllm_blocks, seq.vllm_cached, full, BS, 0)
        seq.vllm_cached = max(seq.vllm_cached, full)

    def free(self, seq: Sequence) -> None:
        self.pool.free_blocks(reversed(seq.vllm_blocks))
        seq.vllm_blocks = []

    def events(self) -> list[tuple]:
        """The events since the last call, through the real wire format (KVEventBatch)."""
        batch = self.v.kv_events.KVEventBatch(ts=0.0, events=self.pool.take_events())
        out: list[tuple] = []
        for ev in self.decode(self.encode(batch)).events:
            if isinstance(ev, self.v.kv_events.BlockStored):
                out.append(("stored", tuple(ev.block_hashes), ev.parent_block_hash))
            else:
                out.extend(("removed", h) for h in ev.block_hashes)
        return out

    def cached(self) -> Counter:
        utils = self.v.kv_cache_utils
        out: Counter = Counter()
        for key, blocks in self.pool.cached_block_hash_to_block._cache.items():
            out[utils.maybe_convert_block_hash(utils.get_block_hash(key))] += len(blocks) if isinstance(blocks, dict) else 1
        return out


class KvtuiSide:
    """kvtui's KVCacheManager, driven as kvtui's node drives it."""

    def __init__(self, num_blocks: int):
        self.log: list[tuple] = []
        self.kv = KVCacheManager("n", num_blocks, BS, True, self._stored, self._evicted)

    def _stored(self, _request, _group, keys, parent, _first, medium) -> None:
        self.log.append(("stored", tuple(keys), parent))

    def _evicted(self, keys, _groups, _for_request, medium) -> None:
        self.log.extend(("removed", k) for k in keys)

    def admit(self, seq: Sequence, n: int) -> int | None:
        req = seq.kvtui = Request(seq.id, seq.id, "g", 0, seq.prompt, seq.output, seq.keys)
        hit = self.kv.computed(req, seq.target)
        need = self.kv.need(req, hit, min(n, seq.target - hit.tokens))
        if not self.kv.fits(hit, need):
            return None
        self.kv.admit(req, hit, need)
        return len(hit.gpu)

    def room(self, seq: Sequence, tokens: int) -> bool:
        return self.kv.grow_need(seq.kvtui, tokens) <= self.kv.free_count

    def grow(self, seq: Sequence, tokens: int) -> None:
        need = self.kv.grow_need(seq.kvtui, tokens)
        if need > 0:
            self.kv.grow(seq.kvtui, need)

    def cache(self, seq: Sequence, before: int, after: int) -> None:
        self.kv.cache(seq.kvtui, before // BS, after // BS)

    def free(self, seq: Sequence) -> None:
        self.kv.free(seq.kvtui)

    def events(self) -> list[tuple]:
        out, self.log = self.log, []
        return out

    def cached(self) -> Counter:
        pool = self.kv.pool
        return Counter({k: pool.copies_of(k) for k in pool.cached})

    def usage(self) -> float:
        """The KV usage a routing policy reads for this pool (the router's NodeState)."""
        return NodeState("n", None, 0, 0.0, 0, 0, 0, *block_figures(self.kv.pool), -1).kv_usage


class Pair:
    """Both sides under one stream; counts where they agree."""

    def __init__(self, v, num_blocks: int, seed: int):
        self.rng = random.Random(seed)
        self.vllm, self.kvtui = VllmSide(v, num_blocks), KvtuiSide(num_blocks)
        self.stream = Stream(self.rng, num_blocks - 1, Hasher(v))
        self.waiting: list[Sequence] = []
        self.running: list[Sequence] = []
        self.admissions = 0
        self.preemptions = 0
        self.agree = Counter()
        self.first_disagreement: str | None = None

    def run(self, admissions: int) -> None:
        while self.admissions < admissions:
            if len(self.waiting) < 2 and self.rng.random() < 0.6:
                self.waiting.append(self.stream.next())
            if self.waiting and len(self.running) < 6:
                self.try_admit(self.waiting[0])
            if self.running:
                self.step(self.rng.choice(self.running))

    def try_admit(self, seq: Sequence) -> None:
        seq.target = seq.prompt + seq.generated
        n = min(seq.chunk, seq.target)
        vllm_hit, kvtui_hit = self.vllm.admit(seq, n), self.kvtui.admit(seq, n)
        if (vllm_hit is None) != (kvtui_hit is None):
            self.disagree(f"admission of {seq.id}: vLLM hit {vllm_hit}, kvtui hit {kvtui_hit}")
            raise AssertionError(self.first_disagreement)
        if vllm_hit is None:
            return
        self.waiting.pop(0)
        self.running.append(seq)
        seq.computed = vllm_hit * BS
        self.advance(seq, min(seq.chunk, seq.target - seq.computed))
        self.admissions += 1
        self.compare(seq, vllm_hit, kvtui_hit)

    def step(self, seq: Sequence) -> None:
        """One scheduler step for a running request: a prefill chunk or one decode token."""
        n = min(seq.chunk, seq.target - seq.computed) if seq.computed < seq.target else 1
        room = self.vllm.room(seq, seq.computed + n)
        if room != self.kvtui.room(seq, seq.computed + n):
            self.disagree(f"room for a step of {seq.id}: vLLM {room}, kvtui {not room}")
            raise AssertionError(self.first_disagreement)
        if not room:
            self.preempt(seq)
            return
        self.vllm.grow(seq, seq.computed + n)
        self.kvtui.grow(seq, seq.computed + n)
        self.advance(seq, n)

    def advance(self, seq: Sequence, n: int) -> None:
        """`n` tokens computed: the blocks they fill are registered; done at the last token."""
        before, seq.computed = seq.computed, seq.computed + n
        self.vllm.cache(seq, seq.computed)
        self.kvtui.cache(seq, before, seq.computed)
        if seq.computed >= seq.target:
            seq.generated = seq.computed - seq.prompt + 1
        if seq.generated >= seq.output:
            self.running.remove(seq)
            self.vllm.free(seq)
            self.kvtui.free(seq)
            self.stream.finished.append(seq.tokens)

    def preempt(self, seq: Sequence) -> None:
        self.preemptions += 1
        self.running.remove(seq)
        self.vllm.free(seq)
        self.kvtui.free(seq)
        seq.computed = 0
        self.waiting.insert(0, seq)

    def compare(self, seq: Sequence, vllm_hit: int, kvtui_hit: int) -> None:
        checks = {
            "hit blocks": vllm_hit == kvtui_hit,
            "block table": [b.block_id for b in seq.vllm_blocks] == seq.kvtui.blocks,
            "cached keys": self.vllm.cached() == self.kvtui.cached(),
            "events": self.vllm.events() == self.kvtui.events(),
            "usage": self.vllm.pool.get_usage() == self.kvtui.usage(),
        }
        for name, ok in checks.items():
            self.agree[name] += ok
            if not ok:
                self.disagree(f"{name} after admitting {seq.id} (admission {self.admissions})")

    def disagree(self, what: str) -> None:
        if self.first_disagreement is None:
            self.first_disagreement = what


@pytest.mark.parametrize("num_blocks", POOL_SIZES)
def test_block_pool_agrees_with_vllm(num_blocks, capsys):
    v = _peer()
    pair = Pair(v, num_blocks, seed=num_blocks)
    pair.run(peers.cases(500))
    rates = {m: pair.agree[m] / pair.admissions for m in MEASURES}
    with capsys.disabled():
        shown = ", ".join(f"{m} {100 * r:.2f} %" for m, r in rates.items())
        print(f"\nvLLM 0.33.0 pool, {num_blocks} blocks, {pair.admissions} admissions: {shown}")
    assert pair.stream.count > pair.admissions / 2  # the stream kept coming, it did not stall
    for m, r in rates.items():
        assert r >= 0.999, f"{m}: {100 * r:.2f} % agreement; first disagreement: {pair.first_disagreement}"


def test_the_stream_reaches_the_cases_that_matter():
    """The stream is worth comparing on: duplicate copies, eviction pressure, preemption."""
    v = _peer()
    pair = Pair(v, 25, seed=7)
    events: list[tuple] = []
    original = pair.kvtui.events

    def keep():
        out = original()
        events.extend(out)
        return out

    pair.kvtui.events = keep
    pair.run(300)
    stored = Counter(k for e in events if e[0] == "stored" for k in e[1])
    removed = [e for e in events if e[0] == "removed"]
    assert any(c > 1 for c in stored.values()), "no key was ever stored twice"
    assert len(removed) > 100, "too little eviction pressure"
    assert pair.preemptions > 0, "no step ever ran out of blocks"


_LOADED = None


def _peer():
    global _LOADED
    install = peers.require("vllm")
    if _LOADED is None:
        from .vllm_peer import load

        _LOADED = load(install)
    return _LOADED
