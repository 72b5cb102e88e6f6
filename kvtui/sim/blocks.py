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
conversation trace evicts ~8 M), so each block goes through as few Python-level passes as the
rule allows: an allocated block is popped (one link read), then evicted and handed over in one
pass (`_evict_and_take`); a registered one takes one pass plus a C-level map update; a freed one
is counted down in one pass and linked in another. `lookup` maps keys through the cache dict in
growing chunks (most prompts miss early); never-used blocks leave the free queue as a range.
What is left per block is mostly the dict's and the index's hash-table work (py-spy puts the
eviction's `del` alone at ~7-10 % of the Mooncake run: random memory access, not interpretation),
so a block's cost follows the cold memory it touches: block ids are one shared list of int
objects (`_ids`), never an int made per allocation and freed per eviction (~0.88x on the
Mooncake trace).
"""

from __future__ import annotations

from array import array
from typing import Any, Callable, Sequence


class OutOfBlocks(Exception):
    """Asked for more blocks than the free queue holds (callers check first; this is a bug)."""


NULL_BLOCK = 0  # vLLM's null block: never in the free queue, never allocated
_END = -1  # no block: the end of a linked list
_OUT = -2  # a link never set (a block not linked since the start or a reset)
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
    queue is kept as three parts: the `front` list, the never-used blocks as the range
    [fresh, num_blocks), then the `back` list. Both lists are doubly linked through two shared
    int32 arrays (`_next`, `_prev`), as vLLM links its free blocks: the same order as one list,
    allocating never-used blocks is a range slice, and the lists cost 8 bytes a block whatever
    their length (an OrderedDict of block ids took ~90 bytes a block, most of a 64-node
    cluster's memory).
    """

    __slots__ = ("num_blocks", "fresh", "size", "_next", "_prev", "_ends", "_linked", "_ids")

    def __init__(self, num_blocks: int):
        self.num_blocks = num_blocks
        self.fresh = min(NULL_BLOCK + 1, num_blocks)  # blocks [fresh, num_blocks) were never allocated
        self.size = num_blocks - self.fresh  # len(self), kept as a plain attribute: every routing snapshot of every node reads it
        self._next = array("i", [_OUT]) * num_blocks
        self._prev = array("i", [_OUT]) * num_blocks
        self._ends = [_END, _END, _END, _END]  # front head, front tail, back head, back tail
        self._linked = 0  # blocks in the two lists
        self._ids = _ids(num_blocks)

    def __len__(self) -> int:
        return self.size

    def __iter__(self):
        yield from self._walk(0)
        yield from range(self.fresh, self.num_blocks)
        yield from self._walk(2)

    def _walk(self, part: int):
        b, nxt = self._ends[part], self._next
        while b != _END:
            yield b
            b = nxt[b]

    def __contains__(self, block: int) -> bool:
        """A walk of both lists (views and checks only: the engine never asks)."""
        if self.fresh <= block < self.num_blocks:
            return True
        return any(b == block for part in (0, 2) for b in self._walk(part))

    def pop_front(self, n: int) -> tuple[list[int], list[int], list[int]]:
        """Take `n` blocks from the front: (front-list ones, never-used ones, back-list ones),
        each in queue order. Only the back list's blocks can hold a key."""
        front = self._pop_list(0, n)
        n -= len(front)
        take = min(n, self.num_blocks - self.fresh)
        fresh = self._ids[self.fresh : self.fresh + take]
        self.fresh += take
        self.size -= take
        back = self._pop_list(2, n - take)
        return front, fresh, back

    def pop_one(self) -> tuple[int, bool]:
        """`pop_front(1)` for the decode path: (the block, whether it came off the back list)."""
        if self._ends[0] != _END:
            return self._pop_list(0, 1)[0], False
        if self.fresh < self.num_blocks:
            self.fresh += 1
            self.size -= 1
            return self._ids[self.fresh - 1], False
        return self._pop_list(2, 1)[0], True

    def _pop_list(self, part: int, n: int) -> list[int]:
        """Up to `n` blocks off the head of one list (`part` 0: front, 2: back). A popped
        block's links are left as they were: nothing reads them until `_splice` relinks it
        (membership is walked, see `__contains__`), so a pop is one read a block."""
        ends, nxt, ids = self._ends, self._next, self._ids
        out: list[Any] = []  # the shared id objects themselves (see `_ids`)
        append = out.append
        b = ends[part]
        for _ in range(n):
            if b == _END:
                break
            append(ids[b])
            b = nxt[b]
        ends[part] = b
        if b == _END:
            ends[part + 1] = _END
        else:
            self._prev[b] = _END
        self._linked -= len(out)
        self.size -= len(out)
        return out

    def remove(self, block: int) -> None:
        """A cache hit on an idle block (it holds a key, so it is in the back list)."""
        nxt, prv, ends = self._next, self._prev, self._ends
        before, after = prv[block], nxt[block]
        if before == _END:
            ends[2] = after
        else:
            nxt[before] = after
        if after == _END:
            ends[3] = before
        else:
            prv[after] = before
        self._linked -= 1
        self.size -= 1

    def prepend(self, blocks: list[int]) -> None:
        """Put freed blocks at the very front, the first of `blocks` first (vLLM's `prepend_n`)."""
        if blocks:
            self._splice(blocks, 0, at_head=True)

    def extend(self, blocks: list[int]) -> None:
        """Append freed blocks at the very back, in the given order (vLLM's `append_n`)."""
        if blocks:
            self._splice(blocks, 2, at_head=False)

    def _splice(self, blocks: list[int], part: int, at_head: bool) -> None:
        """Link `blocks` as a chain, then join it to the head or the tail of one list."""
        nxt, prv, ends = self._next, self._prev, self._ends
        before = _END
        for b in blocks:
            prv[b] = before
            if before != _END:
                nxt[before] = b
            before = b
        first, last = blocks[0], blocks[-1]
        nxt[last] = _END
        head, tail = ends[part], ends[part + 1]
        if at_head and head != _END:
            nxt[last], prv[head] = head, last
            ends[part] = first
        elif not at_head and tail != _END:
            nxt[tail], prv[first] = first, tail
            ends[part + 1] = last
        else:  # the list was empty
            ends[part], ends[part + 1] = first, last
        self._linked += len(blocks)
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

    def _evict_and_take(self, back: list[int], group: str) -> tuple[tuple[int, ...], tuple[str, ...]]:
        """Evict the copies the popped back-list blocks hold and hand the blocks to `group`, in
        one pass (the Mooncake trace evicts ~8 M blocks: a pass a block is what this costs).
        A key with no further copy (the usual case) is inlined `_uncache`: its one copy is
        this block, so it leaves the map."""
        ref, key, owner, cached, copies = self.ref, self.key, self.owner, self.cached, self.copies
        keys: list[int] = []
        groups: list[str] = []
        for b in back:
            k = key[b]
            if k is not None:
                if k in copies:
                    self._uncache(b, k)
                else:
                    del cached[k]
                    key[b] = None
                keys.append(k)
                groups.append(owner[b])
            ref[b] = 1
            owner[b] = group
        return tuple(keys), tuple(groups)

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
        if end - start == 1:  # the decode path's case: one block filled up
            self._register(blocks[start], keys[start])
        else:
            self._register_many(blocks[start:end], keys[start:end])
        self.version += 1
        if self.on_stored is not None:
            self.on_stored(request, group, tuple(keys[start:end]), keys[start - 1] if start > 0 else None, start)

    def _register_many(self, new_blocks: list[int], new_keys: Sequence[int]) -> None:
        """`_register` for each pair; the usual case (keys cached nowhere here, none repeated:
        freshly computed blocks) with C-level dict updates."""
        cached = self.cached
        before = len(cached)
        if cached.keys().isdisjoint(new_keys):
            cached.update(zip(new_keys, new_blocks))
            if len(cached) == before + len(new_keys):  # none repeated among them
                key = self.key
                for b, k in zip(new_blocks, new_keys):
                    key[b] = k
                return
            for k in new_keys:  # undo: all were absent, so the map is as it was
                cached.pop(k, None)
        for b, k in zip(new_blocks, new_keys):
            self._register(b, k)

    def free(self, blocks: list[int]) -> None:
        """Release a request's blocks tail first: those left holding no key go to the front of
        the free queue (reused first), keyed ones to the back (evicted last, tail before head)."""
        ref, key = self.ref, self.key
        unkeyed: list[int] = []
        keyed: list[int] = []
        to_front, to_back = unkeyed.append, keyed.append
        for b in reversed(blocks):
            r = ref[b] - 1
            ref[b] = r
            if not r:
                if key[b] is None:
                    to_front(b)
                else:
                    to_back(b)
        self.free_queue.prepend(unkeyed)
        self.free_queue.extend(keyed)
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
        assert fq.size == fq.num_blocks - fq.fresh + fq._linked == sum(1 for _ in fq), "free queue size is off"
        in_use = sum(1 for r in self.ref if r > 0)
        assert in_use + len(fq) == self.usable, "used + free != usable"
        assert self.num_blocks == 0 or (self.ref[NULL_BLOCK] == 0 and NULL_BLOCK not in fq), "the null block was used"
        assert all(self.ref[b] == 0 for b in fq), "a referenced block is in the free queue"
        holders = [(k, b) for k, b in self.cached.items()] + [(k, b) for k, bs in self.copies.items() for b in bs]
        assert all(self.key[b] == k for k, b in holders), "cache map disagrees with block keys"
        assert len(holders) == sum(k is not None for k in self.key), "a keyed block is missing from the map"
        assert all(self.copies.values()) and self.copies.keys() <= self.cached.keys(), "copies without a first copy"
        assert all(b not in fq for b in self.pinned), "a pinned block is free"
