"""Between a node's scheduler and its KV memory, as vLLM v1's KVCacheManager stands between the
Scheduler and the BlockPool (vLLM 0.33.0, vllm/v1/core/kv_cache_manager.py).

The scheduler asks three questions and gives three orders, and never sees a block table:

- `computed(req, target)`: the longest prefix of the request already computed somewhere — GPU
  blocks first (`get_computed_blocks`), then, after them, blocks held in the CPU tier (vLLM asks
  its KV connector for `get_num_new_matched_tokens` beyond the GPU hit). The whole-prompt hit is
  capped to recompute the last token when the latency model says so (vLLM caps a hit at
  num_tokens - 1 to get logits, so a fully cached block-aligned prompt recomputes its last block,
  and that block is cached again as a second copy of the same key).
- `need(req, hit, tokens)` / `fits(hit, need)`: blocks to allocate, and whether the free queue
  has them once the hit's idle blocks leave it (`allocate_slots` returns None otherwise).
- `admit` takes the hit and allocates the rest (loading CPU blocks into fresh GPU blocks and
  registering them at once); `grow` allocates more for a running request; `cache` registers
  blocks that became full; `free` releases a request's blocks tail first.

The GPU pool (`kvtui.sim.blocks.BlockPool`) and the CPU tier (`kvtui.sim.offload.CpuTier`) report
their changes through the node's emitters as KV events with their medium; an eviction from the
GPU hands the evicted keys to the CPU tier when there is one.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING, Callable

from kvtui.sim.blocks import BlockPool
from kvtui.sim.offload import CpuTier

if TYPE_CHECKING:
    from kvtui.sim.request import Request

EmitStored = Callable[[str, str, tuple[int, ...], "int | None", int, str], None]
EmitEvicted = Callable[[tuple[int, ...], tuple[str, ...], str, str], None]


class Hit:
    """What a request finds already computed at admission. A plain class, not a dataclass: a
    compiled dataclass keeps an interpreted `__init__`, and every admission makes one."""

    __slots__ = ("gpu", "matched", "loaded", "tokens")

    def __init__(self, gpu: list[int], matched: int, loaded: int, tokens: int) -> None:
        self.gpu = gpu  # GPU blocks it reuses (after the last-token cap)
        self.matched = matched  # leading blocks found in GPU memory (before the cap)
        self.loaded = loaded  # blocks after those, loaded from the CPU tier (after the cap)
        self.tokens = tokens  # tokens it need not prefill: (len(gpu) + loaded) * block_size


@dataclass(frozen=True, slots=True)
class OffloadSpec:
    cpu_blocks: int
    seconds_per_block: float  # one block's share per GPU over one GPU's host link


class KVCacheManager:
    __slots__ = ("pool", "cpu", "block_size", "recompute_full_hit", "capacity", "_emit_evicted")

    def __init__(
        self,
        node: str,
        num_blocks: int,
        block_size: int,
        recompute_full_hit: bool,
        emit_stored: EmitStored,
        emit_evicted: EmitEvicted,
        offload: OffloadSpec | None = None,
    ):
        self.block_size = block_size
        self.recompute_full_hit = recompute_full_hit
        self._emit_evicted = emit_evicted
        self.pool = BlockPool(
            node,
            num_blocks,
            block_size,
            partial(emit_stored, medium="gpu"),  # type: ignore[call-arg]  # a C-level call per block boundary (mypy sees no keywords in a Callable)
            self._gpu_evicted,
        )
        self.capacity = self.pool.usable  # blocks a request may ever hold: all but the null block and the pinned ones (read per node per decision)
        self.cpu: CpuTier | None = None
        if offload is not None:
            self.cpu = CpuTier(
                node,
                offload.cpu_blocks,
                offload.seconds_per_block,
                lambda r, g, k, p, f: emit_stored(r, g, k, p, f, "cpu"),
                lambda k, g, r: emit_evicted(k, g, r, "cpu"),
            )

    # ---------------------------------------------------------------- figures
    @property
    def free_count(self) -> int:
        return len(self.pool.free_queue)


    @property
    def version(self) -> int:
        """Changes whenever either tier changes (a failed admission is retried only then)."""
        return self.pool.version + (self.cpu.version if self.cpu is not None else 0)

    def held_prefix(self, keys) -> int:
        """Leading blocks of `keys` this node holds in either tier (what a precise index would
        say): the GPU run through the pool's chunked lookup (asked per routing decision), then
        key by key while the CPU tier, if any, carries it on. A first key held nowhere answers
        at once: "available vs achieved" asks every node per decision, and most hold nothing."""
        cached, cpu = self.pool.cached, (self.cpu.entries if self.cpu is not None else ())
        if not keys or (keys[0] not in cached and keys[0] not in cpu):
            return 0
        n = len(self.pool.lookup(keys, len(keys)))
        if self.cpu is None:
            return n
        for k in keys[n:]:
            if k not in cached and k not in cpu:
                break
            n += 1
        return n

    def blocks_for(self, tokens: int) -> int:
        return -(-tokens // self.block_size)

    # ---------------------------------------------------------------- admission
    def computed(self, req: "Request", target: int) -> Hit:
        bs = self.block_size
        full = target // bs
        keys = req.block_keys
        matched = self.pool.lookup(keys, full)
        cap = (target - 1) // bs if self.recompute_full_hit else full
        gpu = matched[:cap]
        loaded = 0
        if self.cpu is not None and len(matched) < cap:
            loaded = self.cpu.lookup(keys, len(matched), cap)
        return Hit(gpu, len(matched), loaded, (len(gpu) + loaded) * bs)

    def need(self, req: "Request", hit: Hit, tokens: int) -> int:
        """New GPU blocks to hold `tokens` more tokens after the hit (loaded blocks included)."""
        return max(self.blocks_for(hit.tokens + tokens) - len(hit.gpu), 0)

    def fits(self, hit: Hit, need: int) -> bool:
        pool = self.pool
        return need + pool.evictable_among(hit.gpu) <= len(pool.free_queue)

    def admit(self, req: "Request", hit: Hit, need: int) -> float:
        """Take the hit and allocate the rest; return the seconds the CPU blocks take to load."""
        pool = self.pool
        start = len(hit.gpu)
        seconds = 0.0
        if hit.loaded and self.cpu is not None:  # read (and protect) them before the allocation below spills more to the tier
            seconds = self.cpu.load(req.block_keys[start : start + hit.loaded])
        pool.touch(hit.gpu)
        req.blocks = hit.gpu + pool.allocate(need, req.group, req.id)
        if hit.loaded:
            pool.cache_full_blocks(req.blocks, req.block_keys, start, start + hit.loaded, req.id, req.group)
        return seconds

    # ---------------------------------------------------------------- running requests
    def grow_need(self, req: "Request", tokens: int) -> int:
        """More blocks `req` needs to hold `tokens` tokens in all."""
        return self.blocks_for(tokens) - len(req.blocks)

    def grow(self, req: "Request", blocks: int) -> None:
        if blocks == 1:
            req.blocks.append(self.pool.allocate_one(req.group, req.id))
        else:
            req.blocks.extend(self.pool.allocate(blocks, req.group, req.id))

    def cache(self, req: "Request", before: int, after: int) -> None:
        """Blocks [before, after) of the request are now full: register them."""
        self.pool.cache_full_blocks(req.blocks, req.block_keys, before, after, req.id, req.group)

    def free(self, req: "Request") -> int:
        n = len(req.blocks)
        self.pool.free(req.blocks)
        req.blocks = []
        return n

    # ---------------------------------------------------------------- node life
    def reset(self) -> None:
        self.pool.reset()
        self.capacity = self.pool.usable
        if self.cpu is not None:
            self.cpu.reset()

    def pin(self, keys: list[int], group: str) -> int:
        held = self.pool.pin(keys, group)
        self.capacity = self.pool.usable - len(self.pool.pinned)
        return held

    def _gpu_evicted(self, keys: tuple[int, ...], groups: tuple[str, ...], for_request: str) -> None:
        self._emit_evicted(keys, groups, for_request, "gpu")
        if self.cpu is not None:
            self.cpu.offload(keys, groups, for_request)
