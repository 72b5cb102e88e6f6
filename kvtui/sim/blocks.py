"""A node's KV-cache block pool, following vLLM v1's prefix caching.

The rules, and where vLLM has them (vllm/v1/core/block_pool.py, kv_cache_manager.py,
single_type_kv_cache_manager.py, kv_cache_utils.py):

- The pool is `num_blocks` blocks of `block_size` tokens. Every block has a reference count.
- Only full blocks are cached: once a request has computed every token of a block, the block
  is registered under its chained key (`BlockPool.cache_full_blocks`). If the key is already
  cached by another block, the existing one stays the cached copy (vLLM keeps a map from key
  to blocks; the duplicate is just a private block here).
- The free queue (`FreeKVCacheBlockQueue`) holds every block with reference count 0, cached or
  not, in eviction order. At start it holds all blocks in id order.
- Allocation (`get_new_blocks`) pops from the front of the free queue; if a popped block still
  holds a key, that key is evicted (`_maybe_evict_cached_block`).
- A cache hit (`touch`) takes a block with count 0 out of the free queue and counts it up.
- Freeing (`free`) counts a request's blocks down in *reverse* order, appending those that reach
  0 to the back of the free queue: the tail of a prefix is evicted before its head, and the
  longest-unused prefixes go first (LRU).
- Pinned blocks (kvtui's model of a preloaded system prompt) hold a reference that is never
  released, so they never enter the free queue and are never evicted.

The pool reports every cache change through `emit` as a KV event (stored / evicted), which
is how the router's KV index and the metadata store learn about it, as in vLLM's KV events.

Cost: the pool is on every request's path (a Mooncake prompt is ~750 blocks), so the per-block
work is kept to C-level dict and list operations where the rule allows (`lookup` maps the keys
through the cache dict at once; never-used blocks leave the free queue as a range).
"""

from __future__ import annotations

from array import array
from typing import Callable, Sequence


class OutOfBlocks(Exception):
    """Asked for more blocks than the free queue holds (callers check first; this is a bug)."""


_END = -1  # no block: the end of the recycled list
_OUT = -2  # this block is not in the recycled list


class FreeQueue:
    """vLLM's FreeKVCacheBlockQueue: every block with reference count 0, in eviction order.

    At start (and after a reset) the queue is all blocks in id order. Blocks that were never
    allocated since stay at its front, in id order, because frees only append at the back and a
    cache hit only removes a block that holds a key (one that was allocated). So the queue is
    kept as two parts: the never-used blocks as the range [fresh, num_blocks), then the recycled
    ones as a doubly linked list in two int32 arrays (`_next`, `_prev`), as vLLM links its free
    blocks. Same order as one list of all blocks; allocating never-used blocks is a range slice,
    and the recycled list costs 8 bytes a block whatever its length (an OrderedDict of block ids
    took ~90 bytes a recycled block, most of a 64-node cluster's memory).
    """

    __slots__ = ("num_blocks", "fresh", "size", "_next", "_prev", "_head", "_tail", "_recycled")

    def __init__(self, num_blocks: int):
        self.num_blocks = num_blocks
        self.fresh = 0  # blocks [fresh, num_blocks) were never allocated: the queue's front
        self.size = num_blocks  # len(self), kept as a plain attribute: every routing snapshot of every node reads it
        self._next = array("i", [_OUT]) * num_blocks
        self._prev = array("i", [_OUT]) * num_blocks
        self._head = self._tail = _END
        self._recycled = 0

    def __len__(self) -> int:
        return self.size

    def __iter__(self):
        yield from range(self.fresh, self.num_blocks)
        b, nxt = self._head, self._next
        while b != _END:
            yield b
            b = nxt[b]

    def __contains__(self, block: int) -> bool:
        return block >= self.fresh or self._prev[block] != _OUT

    def pop_front(self, n: int) -> tuple[list[int], list[int]]:
        """Take `n` blocks from the front: (never-used ones, recycled ones), in queue order."""
        take = min(n, self.num_blocks - self.fresh)
        fresh = list(range(self.fresh, self.fresh + take))
        self.fresh += take
        self.size -= take
        m = n - take
        recycled: list[int] = []
        if m:
            nxt, prv = self._next, self._prev
            b = self._head
            for _ in range(m):
                recycled.append(b)
                following = nxt[b]
                nxt[b] = prv[b] = _OUT
                b = following
            self._head = b
            if b == _END:
                self._tail = _END
            else:
                prv[b] = _END
            self._recycled -= m
            self.size -= m
        return fresh, recycled

    def pop_one(self) -> tuple[int, bool]:
        """`pop_front(1)` for the decode path: (the block, whether it was a recycled one)."""
        if self.fresh < self.num_blocks:
            self.fresh += 1
            self.size -= 1
            return self.fresh - 1, False
        return self.pop_front(1)[1][0], True

    def remove(self, block: int) -> None:
        """A cache hit on an idle block (it holds a key, so it is a recycled one)."""
        nxt, prv = self._next, self._prev
        before, after = prv[block], nxt[block]
        if before == _END:
            self._head = after
        else:
            nxt[before] = after
        if after == _END:
            self._tail = before
        else:
            prv[after] = before
        nxt[block] = prv[block] = _OUT
        self._recycled -= 1
        self.size -= 1

    def extend(self, blocks: list[int]) -> None:
        """Append freed blocks at the back, in the given order."""
        nxt, prv = self._next, self._prev
        tail = self._tail
        for b in blocks:
            prv[b] = tail
            if tail == _END:
                self._head = b
            else:
                nxt[tail] = b
            tail = b
        if blocks:
            nxt[tail] = _END
            self._tail = tail
            self._recycled += len(blocks)
            self.size += len(blocks)


class BlockPool:
    __slots__ = (
        "node",
        "num_blocks",
        "block_size",
        "ref",
        "key",
        "owner",
        "pinned",
        "free_queue",
        "cached",
        "on_stored",
        "on_evicted",
        "evicted_total",
        "version",
    )

    def __init__(
        self,
        node: str,
        num_blocks: int,
        block_size: int,
        on_stored: Callable[[str, str, tuple[int, ...], int | None, int], None] | None = None,
        on_evicted: Callable[[tuple[int, ...], tuple[str, ...], str], None] | None = None,
    ):
        self.node = node
        self.num_blocks = num_blocks
        self.block_size = block_size
        self.on_stored = on_stored
        self.on_evicted = on_evicted
        self.evicted_total = 0
        self.version = 0
        self.reset()

    def reset(self) -> None:
        """Every block free and empty (a fresh server, or one that lost its GPU memory)."""
        n = self.num_blocks
        self.ref = array("i", bytes(4 * n))  # reference counts, 4 bytes a block (a list takes 8 and more)
        self.key: list[int | None] = [None] * n
        self.owner: list[str] = [""] * n  # prefix group whose data the block holds (for colour)
        self.pinned: set[int] = set()
        self.free_queue = FreeQueue(n)
        self.cached: dict[int, int] = {}  # key -> block id
        self.version += 1  # bumped on every change (never reset), so views can cache their rendering

    # ---------------------------------------------------------------- read-only figures
    @property
    def free_count(self) -> int:
        """Blocks that can be allocated now (empty ones and cached-but-idle ones)."""
        return len(self.free_queue)

    @property
    def used_count(self) -> int:
        return self.num_blocks - len(self.free_queue)

    @property
    def cached_count(self) -> int:
        return len(self.cached)

    def lookup(self, keys: Sequence[int], limit: int) -> list[int]:
        """Block ids of the longest run of leading `keys` cached here, at most `limit` of them."""
        hits = list(map(self.cached.get, keys[:limit]))
        if None in hits:
            del hits[hits.index(None) :]
        return hits

    def evictable_among(self, blocks: list[int]) -> int:
        """How many of these (hit) blocks sit in the free queue: touching them shrinks it."""
        return list(map(self.ref.__getitem__, blocks)).count(0)

    # ---------------------------------------------------------------- mutations
    def touch(self, blocks: list[int]) -> None:
        """Take cache hits: count them up, and out of the free queue if they were idle."""
        ref, fq = self.ref, self.free_queue
        for b in blocks:
            if ref[b] == 0:
                fq.remove(b)
            ref[b] += 1
        self.version += 1

    def allocate_one(self, group: str, for_request: str) -> int:
        """`allocate(1, ...)[0]`, the decode path's case (a request crossing into a new block):
        the same rule and the same order of effects, without the lists."""
        fq = self.free_queue
        evicted = None
        if not fq.size:
            raise OutOfBlocks(f"{self.node}: asked for 1 block, 0 free")
        b, recycled = fq.pop_one()
        if recycled:
            k = self.key[b]
            if k is not None:
                self.key[b] = None
                if self.cached.get(k) == b:
                    del self.cached[k]
                    evicted = k, self.owner[b]
        self.ref[b] = 1
        self.owner[b] = group
        self.version += 1
        if evicted is not None:
            self.evicted_total += 1
            if self.on_evicted is not None:
                self.on_evicted((evicted[0],), (evicted[1],), for_request)
        return b

    def allocate(self, n: int, group: str, for_request: str) -> list[int]:
        """Take `n` blocks from the front of the free queue, evicting the keys they held."""
        if n > len(self.free_queue):
            raise OutOfBlocks(f"{self.node}: asked for {n} blocks, {len(self.free_queue)} free")
        fresh, recycled = self.free_queue.pop_front(n)
        ref, key, owner, cached = self.ref, self.key, self.owner, self.cached
        evicted_keys: list[int] = []
        evicted_groups: list[str] = []
        for b in recycled:  # never-used blocks hold no key: only recycled ones can evict
            k = key[b]
            if k is not None:
                if cached.get(k) == b:
                    del cached[k]
                    evicted_keys.append(k)
                    evicted_groups.append(owner[b])
                key[b] = None
        out = fresh + recycled if recycled else fresh
        for b in out:
            ref[b] = 1
            owner[b] = group
        self.version += 1
        if evicted_keys:
            self.evicted_total += len(evicted_keys)
            if self.on_evicted is not None:
                self.on_evicted(tuple(evicted_keys), tuple(evicted_groups), for_request)
        return out

    def cache_full_blocks(
        self, blocks: list[int], keys: tuple[int, ...], start: int, end: int, request: str, group: str
    ) -> None:
        """Register blocks[start:end] (now full) under keys[start:end]."""
        if end <= start:
            return
        if end - start == 1:  # the decode path's case: one block filled up
            b, k = blocks[start], keys[start]
            if self.key[b] is None and k not in self.cached:
                self.key[b] = k
                self.cached[k] = b
                self.version += 1
                if self.on_stored is not None:
                    self.on_stored(request, group, (k,), keys[start - 1] if start > 0 else None, start)
            return
        self._cache_general(blocks, keys, start, end, request, group)

    def _cache_general(
        self, blocks: list[int], keys: tuple[int, ...], start: int, end: int, request: str, group: str
    ) -> None:
        """`cache_full_blocks` for any number of blocks (prefill chunks, CPU-tier loads)."""
        key, cached = self.key, self.cached
        new_blocks, new_keys = blocks[start:end], keys[start:end]
        if (
            end - start > 2  # below that the checks cost more than the loop
            and list(map(key.__getitem__, new_blocks)).count(None) == len(new_blocks)
            and cached.keys().isdisjoint(new_keys)
            and len(set(new_keys)) == len(new_keys)
        ):
            # The usual case (freshly computed blocks, keys cached nowhere here, none repeated):
            # every one is registered, as the loop below would, with C-level dict updates.
            for b, k in zip(new_blocks, new_keys):
                key[b] = k
            cached.update(zip(new_keys, new_blocks))
            stored, first = list(new_keys), start
        else:
            stored = []
            first = -1
            for i in range(start, end):
                b = blocks[i]
                if key[b] is not None:
                    continue  # a cache hit: already registered
                k = keys[i]
                if k in cached:
                    continue  # another block holds this key already; this one stays private
                key[b] = k
                cached[k] = b
                if first < 0:
                    first = i
                stored.append(k)
        if stored:
            self.version += 1
            if self.on_stored is not None:
                parent = keys[first - 1] if first > 0 else None
                self.on_stored(request, group, tuple(stored), parent, first)

    def free(self, blocks: list[int]) -> None:
        """Release a request's blocks, tail first, so a prefix's tail is evicted before its head."""
        ref = self.ref
        idle = []
        for b in reversed(blocks):
            ref[b] -= 1
            if ref[b] == 0:
                idle.append(b)
        self.free_queue.extend(idle)
        self.version += 1

    def pin(self, keys: list[int], group: str) -> int:
        """Preload `keys` as a pinned prefix: allocated, cached, and never released."""
        already = self.lookup(keys, len(keys))
        self.touch(already)
        self.pinned.update(already)
        rest = keys[len(already) :]
        n = min(len(rest), self.free_count)
        blocks = self.allocate(n, group, f"pin:{group}")
        full = already + blocks
        self.cache_full_blocks(full, tuple(keys), len(already), len(full), f"pin:{group}", group)
        self.pinned.update(blocks)
        return len(full)

    # ---------------------------------------------------------------- checks
    def check(self) -> None:
        """Raise AssertionError if an invariant is broken (used by the property tests)."""
        assert all(r >= 0 for r in self.ref), "negative reference count"
        fq = self.free_queue
        assert fq.size == fq.num_blocks - fq.fresh + fq._recycled == sum(1 for _ in fq), "free queue size is off"
        in_use = sum(1 for r in self.ref if r > 0)
        assert in_use + len(self.free_queue) == self.num_blocks, "used + free != total"
        assert all(self.ref[b] == 0 for b in self.free_queue), "a referenced block is in the free queue"
        for k, b in self.cached.items():
            assert self.key[b] == k, "cache map disagrees with block keys"
        assert all(b not in self.free_queue for b in self.pinned), "a pinned block is free"
