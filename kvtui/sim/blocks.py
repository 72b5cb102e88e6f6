"""A node's KV-cache block pool, following vLLM v1's prefix caching as vLLM 0.33.0 has it.

The rules, and where vLLM 0.33.0 has them (vllm/v1/core/block_pool.py `BlockPool`,
vllm/v1/core/kv_cache_utils.py `FreeKVCacheBlockQueue`, vllm/v1/core/kv_cache_manager.py,
single_type_kv_cache_manager.py); tests/differential/test_vllm_pool.py runs the real ones beside
this pool and checks that they agree:

- The pool is `num_blocks` blocks of `block_size` tokens. Block 0 is vLLM's null block (the
  placeholder `BlockPool.__init__` takes off the free queue at start): it is never allocated, so
  N blocks give N - 1 usable ones. `num_blocks` stays the scenario's `kv_blocks` (what the user
  set and reads); `usable` is one less, and `used_count` counts requests' blocks only (vLLM's
  `get_usage` leaves the null block out the same way).
- Every block has a reference count. Only full blocks are cached: once a request has computed
  every token of a block, the block is registered under its chained key (`cache_full_blocks`).
  One key can map to several blocks: vLLM does not de-duplicate (block tables are append-only),
  so the recomputed last block of a fully cached block-aligned prompt is cached as a second copy
  (`BlockHashToBlockMap.insert`). Each copy gets its own stored event, and each copy evicted its
  own removed event, even while another copy stays cached. A lookup answers the oldest copy
  still cached (`get_one_block`: the first of the map's blocks, in insertion order).
- The free queue (`FreeKVCacheBlockQueue`) holds every block with reference count 0, cached or
  not, in eviction order. At start it holds blocks 1..N-1 in id order.
- Allocation (`get_new_blocks`) pops from the front of the free queue; if a popped block still
  holds a key, that copy is evicted (`_maybe_evict_cached_block`).
- A cache hit (`touch`) takes a block with count 0 out of the free queue and counts it up.
- Freeing (`free_blocks`, called with a request's blocks reversed) counts them down tail first.
  Those that reach 0 holding no key (a partial tail, output not yet full) go to the *front* of
  the free queue, in that order, to be reused before any cached block is evicted; those holding
  a key go to the back: the tail of a prefix is evicted before its head, and the longest-unused
  prefixes go first (LRU).
- Pinned blocks (kvtui's model of a preloaded system prompt) hold a reference that is never
  released, so they never enter the free queue and are never evicted.

The pool reports every cache change through `emit` as a KV event (stored / evicted), which
is how the router's KV index and the metadata store learn about it, as vLLM's `BlockStored` /
`BlockRemoved` events do.

Cost: the pool is on every request's path (a Mooncake prompt is ~750 blocks, and the full
conversation trace evicts ~8 M), so blocks move in runs wherever the rule allows: the free
queue takes a freed run in one `list.extend` and gives an allocation's run back as one slice
(`FreeQueue`); an allocated run's evicted keys and groups are read in C-level passes
(`_evict_and_take`); a registered run is one `setdefault` pass (`_register_many`); a freed
run is sorted into keyed and unkeyed blocks in C-level passes (`free`). What is left per block
is the hash-table work itself, and it is most of the pool's time: `perf record --call-graph
dwarf` of the compiled build over the trace's first 5,000 requests puts CPython's dict probes
for `setdefault` and `del` at ~17 % of the whole run, mostly in `dictkeys_get_index`: cache
misses into tables of ~26 k live keys, churned by inserts and deletes. Block ids
are one shared list of int objects (`_ids`), never an int made per allocation and freed per
eviction (~0.88x on the Mooncake trace).
"""

from __future__ import annotations

from array import array
from itertools import compress
from typing import Any, Callable, Sequence

import numpy as np


class OutOfBlocks(Exception):
    """Asked for more blocks than the free queue holds (callers check first; this is a bug)."""


NULL_BLOCK = 0  # vLLM's null block: never in the free queue, never allocated
HOLE = -1  # a back-list entry a cache hit took out (see FreeQueue)
_IDS: list[Any] = []  # the int object of each block id, shared by every pool (grown on demand)


def _ids(n: int) -> list[Any]:
    """Block ids 0..n-1 as one shared list of int objects, so a block id handed out is always
    the same object: no int is created per allocated block, nor freed per evicted one (the
    pool's key map holds block ids, and freeing the last one touched a cold object). Typed
    Any, not int: compiled, an int read from a list[int] is unboxed and boxed again as a new
    object, which is what this list is for avoiding."""
    if len(_IDS) < n:
        _IDS.extend(range(len(_IDS), n))
    return _IDS


class FreeQueue:
    """vLLM's FreeKVCacheBlockQueue: every block with reference count 0, in eviction order.

    At start (and after a reset) the queue is blocks 1..N-1 in id order. Freed blocks go either
    to the very front (no key) or to the very back (keyed), and a cache hit only removes a keyed
    block, so the blocks never allocated since stay together, in id order, between the two. The
    queue is kept as three parts: the `front` stack, the never-used blocks as the range
    [fresh, num_blocks), then the `back` list.

    Why not vLLM's doubly linked list: blocks arrive and leave in runs (a freed request's ~750
    blocks, an allocation's ~230 evicted ones on the Mooncake trace), and a linked list costs
    Python-level work per block both ways (py-spy: ~10 % of that trace; this queue took ~3 %
    off it, since what the pointer walk waited on, cold memory, mostly moved to the next read
    of the same blocks). Here a run is one C-level
    `list.extend` in and one slice out. The front part is never cut (a hit only finds keyed
    blocks), so it is a plain stack, the queue's very front last. The back part is cut by cache
    hits: a hit leaves a HOLE in its place, found through `_pos` (each block's position in the
    back list, absolute, set per run in one numpy scatter), and pops step over holes. Popped
    entries are dropped from the list's head now and then, in one C-level delete.
    """

    __slots__ = ("num_blocks", "fresh", "size", "_front", "_back", "_head", "_holes", "_base", "_pos", "_ids")
    POSITIONS = 2**31 - 1  # the last position `_pos` holds (see `_renumber`)

    def __init__(self, num_blocks: int):
        self.num_blocks = num_blocks
        self.fresh = min(NULL_BLOCK + 1, num_blocks)  # blocks [fresh, num_blocks) were never allocated
        self.size = num_blocks - self.fresh  # len(self), kept as a plain attribute: every routing snapshot of every node reads it
        self._front: list[Any] = []  # unkeyed free blocks, the queue's very front last
        self._back: list[Any] = []  # keyed free blocks in queue order from `_head` on, HOLE where a hit took one
        self._head = 0  # the back list's first live entry
        self._holes = 0  # HOLEs in _back[_head:]
        self._base = 0  # the absolute position of _back[0] (entries before `_head` are dropped now and then)
        self._pos = np.zeros(num_blocks, dtype=np.int32)  # block -> its absolute position in the back list, when there
        self._ids = _ids(num_blocks)

    def __len__(self) -> int:
        return self.size

    def __iter__(self):
        yield from reversed(self._front)
        yield from range(self.fresh, self.num_blocks)
        yield from (b for b in self._back[self._head :] if b != HOLE)

    def __contains__(self, block: int) -> bool:
        """Views and checks only: the engine never asks."""
        if self.fresh <= block < self.num_blocks or block in self._front:
            return True
        at = int(self._pos[block]) - self._base
        return self._head <= at < len(self._back) and self._back[at] == block

    def pop_front(self, n: int) -> tuple[list[int], list[int], list[int]]:
        """Take `n` blocks from the front: (front-stack ones, never-used ones, back-list ones),
        each in queue order. Only the back list's blocks can hold a key."""
        front = self._pop_stack(n) if self._front else []
        n -= len(front)
        take = min(n, self.num_blocks - self.fresh)
        fresh = self._ids[self.fresh : self.fresh + take]
        self.fresh += take
        self.size -= take
        back = self._pop_back(n - take) if n > take else []
        return front, fresh, back

    def pop_one(self) -> tuple[int, bool]:
        """`pop_front(1)` for the decode path: (the block, whether it came off the back list)."""
        if self._front:
            self.size -= 1
            return self._front.pop(), False
        if self.fresh < self.num_blocks:
            self.fresh += 1
            self.size -= 1
            return self._ids[self.fresh - 1], False
        return self._pop_back(1)[0], True

    def _pop_stack(self, n: int) -> list[int]:
        """Up to `n` blocks off the front stack, the very front first."""
        stack = self._front
        k = min(n, len(stack))
        if k <= 0:
            return []
        out = stack[-k:]
        del stack[-k:]
        out.reverse()
        self.size -= k
        return out

    def _pop_back(self, n: int) -> list[int]:
        """Up to `n` live blocks off the back list's head, stepping over holes."""
        back, h = self._back, self._head
        out = back[h : h + n]
        h += len(out)
        if self._holes and HOLE in out:
            out = self._without_holes(out)
            while len(out) < n and h < len(back):
                more = back[h : h + n - len(out)]
                h += len(more)
                out += self._without_holes(more)
        self._head = h
        self.size -= len(out)
        if h == len(back) or (h > 4096 and 2 * h > len(back)):
            del back[:h]
            self._base += h
            self._head = 0
        return out

    def _without_holes(self, entries: list[int]) -> list[int]:
        live = [b for b in entries if b != HOLE]
        self._holes -= len(entries) - len(live)
        return live

    def remove(self, block: int) -> None:
        """A cache hit on an idle block (it holds a key, so it is in the back list): a hole in its place."""
        self._back[int(self._pos[block]) - self._base] = HOLE
        self._holes += 1
        self.size -= 1

    def prepend(self, blocks: list[int]) -> None:
        """Put freed blocks at the very front, the first of `blocks` first (vLLM's `prepend_n`)."""
        self._front.extend(reversed(blocks))
        self.size += len(blocks)

    def extend(self, blocks: list[int]) -> None:
        """Append freed blocks at the very back, in the given order (vLLM's `append_n`)."""
        if not blocks:
            return
        at = self._base + len(self._back)
        if at + len(blocks) > self.POSITIONS or self._holes > max(64, len(self._back) - self._head - self._holes):
            at = self._renumber()
        if len(blocks) == 1:
            self._pos[blocks[0]] = at
        else:
            self._pos[blocks] = np.arange(at, at + len(blocks), dtype=np.int32)
        self._back.extend(blocks)
        self.size += len(blocks)

    def _renumber(self) -> int:
        """Rebuild the back list without its holes, its live blocks numbered from 0 again.

        Done when holes outnumber live blocks: a node whose prompts keep hitting cached blocks
        and freeing them again (hole, then append) may seldom pop its back list, which would
        otherwise grow without bound. And when positions run out (they are int32, to keep a
        64-node cluster's memory low; a node passes 2**31 appended blocks only after weeks of
        live traffic). Returns where the next block goes."""
        live = self._without_holes(self._back[self._head :])
        self._back, self._head, self._base = live, 0, 0
        self._pos[live] = np.arange(len(live), dtype=np.int32)
        return len(live)

    def check(self) -> None:
        """Raise AssertionError if the parts disagree with `size` (the property tests)."""
        live = sum(1 for b in self._back[self._head :] if b != HOLE)
        assert self._holes == len(self._back) - self._head - live, "hole count is off"
        assert self.size == len(self._front) + self.num_blocks - self.fresh + live == sum(1 for _ in self), "free queue size is off"


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
        "copies",
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
        self.key: list[int | None] = [None] * n  # the key each cached block (every copy) holds
        self.owner: list[str] = [""] * n  # prefix group whose data the block holds (for colour)
        self.pinned: set[int] = set()
        self.free_queue = FreeQueue(n)
        self.cached: dict[int, int] = {}  # key -> its oldest cached copy (what a lookup answers)
        self.copies: dict[int, list[int]] = {}  # key -> its further copies, oldest first
        self.version += 1  # bumped on every change (never reset), so views can cache their rendering

    # ---------------------------------------------------------------- read-only figures
    @property
    def usable(self) -> int:
        """Blocks requests can ever hold: all but the null block."""
        return max(self.num_blocks - 1, 0)

    @property
    def free_count(self) -> int:
        """Blocks that can be allocated now (empty ones and cached-but-idle ones)."""
        return len(self.free_queue)

    @property
    def used_count(self) -> int:
        """Blocks held by requests (and pins); the null block is not counted."""
        return self.usable - len(self.free_queue)

    @property
    def cached_count(self) -> int:
        """Distinct keys cached (a key with several copies counts once, as vLLM's map does)."""
        return len(self.cached)

    def copies_of(self, key: int) -> int:
        """How many blocks hold `key` now."""
        if key not in self.cached:
            return 0
        return 1 + len(self.copies.get(key, ()))

    def lookup(self, keys: Sequence[int], limit: int) -> list[int]:
        """Block ids of the longest run of leading `keys` cached here, at most `limit` of them."""
        get = self.cached.get
        hits: list = []
        n, size, limit = 0, 8, min(limit, len(keys))
        while n < limit:  # in growing chunks: most prompts miss early, a long hit takes ~2 passes
            chunk = list(map(get, keys[n : min(n + size, limit)]))  # ids, then None from the first miss
            if None in chunk:
                hits += chunk[: chunk.index(None)]
                return hits
            hits += chunk
            n += len(chunk)
            size *= 4
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
        if not fq.size:
            raise OutOfBlocks(f"{self.node}: asked for 1 block, 0 free")
        b, from_back = fq.pop_one()
        k = self.key[b] if from_back else None
        if k is not None:
            self._uncache(b, k)
            evicted_group = self.owner[b]
        self.ref[b] = 1
        self.owner[b] = group
        self.version += 1
        if k is not None:
            self.evicted_total += 1
            if self.on_evicted is not None:
                self.on_evicted((k,), (evicted_group,), for_request)
        return b

    def allocate(self, n: int, group: str, for_request: str) -> list[int]:
        """Take `n` blocks from the front of the free queue, evicting the copies they held."""
        if n > len(self.free_queue):
            raise OutOfBlocks(f"{self.node}: asked for {n} blocks, {len(self.free_queue)} free")
        front, fresh, back = self.free_queue.pop_front(n)
        ref, owner = self.ref, self.owner
        for b in front:
            ref[b] = 1
            owner[b] = group
        if fresh:  # a range of ids: two slice assignments
            ref[fresh[0] : fresh[-1] + 1] = array("i", [1]) * len(fresh)
            owner[fresh[0] : fresh[-1] + 1] = [group] * len(fresh)
        evicted_keys, evicted_groups = self._evict_and_take(back, group) if back else ((), ())
        self.version += 1
        if evicted_keys:
            self.evicted_total += len(evicted_keys)
            if self.on_evicted is not None:
                self.on_evicted(evicted_keys, evicted_groups, for_request)
        return front + fresh + back if front or back else fresh

    def _evict_and_take(self, back: list[Any], group: str) -> tuple[tuple[int, ...], tuple[str, ...]]:
        """Evict the copies the popped back-list blocks hold (each holds one: only keyed blocks
        are freed to the back) and hand the blocks to `group`. The keys and groups are read
        in C-level passes; a key with no further copy (the usual case: `copies` is empty or
        shares none) leaves the map whole, with no `_uncache` per block."""
        key, owner, cached, copies = self.key, self.owner, self.cached, self.copies
        keys: list[Any] = list(map(key.__getitem__, back))
        groups = tuple(map(owner.__getitem__, back))
        if copies and not copies.keys().isdisjoint(keys):
            for b, k in zip(back, keys):
                self._uncache(b, k)
        else:
            for k in keys:
                del cached[k]
        ref = self.ref
        for b in back:
            key[b] = None
            ref[b] = 1
            owner[b] = group
        return tuple(keys), groups

    def _uncache(self, block: int, k: int) -> None:
        """Drop one copy of `k` (vLLM's `BlockHashToBlockMap.pop`): the next oldest copy, if
        any, becomes the one lookups answer."""
        self.key[block] = None
        more: list[int] | None
        if self.cached[k] != block:
            more = self.copies[k]
            more.remove(block)
        else:
            more = self.copies.get(k)
            if more is None:
                del self.cached[k]
                return
            self.cached[k] = more.pop(0)
        if not more:
            del self.copies[k]

    def _register(self, block: int, k: int) -> None:
        """Cache `block` under `k`, as a further copy when `k` is cached already."""
        self.key[block] = k
        first = self.cached.setdefault(k, block)
        if first != block:
            self.copies.setdefault(k, []).append(block)

    def cache_full_blocks(
        self, blocks: list[int], keys: tuple[int, ...], start: int, end: int, request: str, group: str
    ) -> None:
        """Register blocks[start:end] (now full, none registered yet) under keys[start:end]:
        every one, copies included, in one stored event (vLLM's `cache_full_blocks`)."""
        if end <= start:
            return
        new_keys = tuple(keys[start:end])  # registered, then named in the stored event
        if end - start == 1:  # the decode path's case: one block filled up
            self._register(blocks[start], new_keys[0])
        else:
            self._register_many(blocks[start:end], new_keys)
        self.version += 1
        if self.on_stored is not None:
            self.on_stored(request, group, new_keys, keys[start - 1] if start > 0 else None, start)

    def _register_many(self, new_blocks: list[int], new_keys: Sequence[int]) -> None:
        """`_register` for each pair, in one C-level pass of `setdefault`: it keeps an older
        copy's block and answers it, so the pairs answered with another block are the further
        copies (rare). One hash probe a block, where asking first and inserting after took two."""
        firsts = list(map(self.cached.setdefault, new_keys, new_blocks))
        key = self.key
        for b, k in zip(new_blocks, new_keys):
            key[b] = k
        if firsts != new_blocks:
            copies = self.copies
            for b, k, first in zip(new_blocks, new_keys, firsts):
                if first != b:
                    copies.setdefault(k, []).append(b)

    def free(self, blocks: list[int]) -> None:
        """Release a request's blocks tail first: those left holding no key go to the front of
        the free queue (reused first), keyed ones to the back (evicted last, tail before head).

        A block at count 1 reaches 0; one another request also holds (count 2 or more: a shared
        prefix) only counts down. Both are picked out in C-level passes (`compress` over the
        counts), and which freed blocks hold a key in another (`_split_keyed`), instead of a
        Python-level step per block (a Mooncake request frees ~750)."""
        ref = self.ref
        rev: list[Any] = blocks[::-1]  # Any: compiled, a block id stays the shared object (see `_ids`)
        counts = list(map(ref.__getitem__, rev))
        if counts.count(1) == len(rev):
            freed = rev
        else:
            freed = list(compress(rev, map((1).__eq__, counts)))
            for b in compress(rev, map((1).__ne__, counts)):
                ref[b] -= 1
        for b in freed:
            ref[b] = 0
        unkeyed, keyed = self._split_keyed(freed)
        self.free_queue.prepend(unkeyed)
        self.free_queue.extend(keyed)
        self.version += 1

    def _split_keyed(self, blocks: list[int]) -> tuple[list[int], list[int]]:
        """(the blocks holding no key, those holding one), each in the given order. Usually
        every block is keyed but the partial ones at the request's tail, which `free` sees
        first: then the split is two slices."""
        keys = list(map(self.key.__getitem__, blocks))
        n = keys.count(None)
        if keys[:n].count(None) == n:
            return blocks[:n], blocks[n:]
        return [b for b, k in zip(blocks, keys) if k is None], [b for b, k in zip(blocks, keys) if k is not None]

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
        fq.check()
        in_use = sum(1 for r in self.ref if r > 0)
        assert in_use + len(fq) == self.usable, "used + free != usable"
        assert self.num_blocks == 0 or (self.ref[NULL_BLOCK] == 0 and NULL_BLOCK not in fq), "the null block was used"
        assert all(self.ref[b] == 0 for b in fq), "a referenced block is in the free queue"
        holders = [(k, b) for k, b in self.cached.items()] + [(k, b) for k, bs in self.copies.items() for b in bs]
        assert all(self.key[b] == k for k, b in holders), "cache map disagrees with block keys"
        assert len(holders) == sum(k is not None for k in self.key), "a keyed block is missing from the map"
        assert all(self.copies.values()) and self.copies.keys() <= self.cached.keys(), "copies without a first copy"
        assert all(b not in fq for b in self.pinned), "a pinned block is free"
