"""A node's CPU KV tier: blocks evicted from GPU memory are kept in host memory, LRU, and a prefix
found there is loaded back over the host link instead of being recomputed.

What real systems do, and what kvtui matches:

- vLLM's OffloadingConnector keeps the host tier's bookkeeping in the scheduler (vLLM 0.33.0:
  vllm/v1/kv_offload/cpu/manager.py `CPUOffloadingManager` with its default `lru` policy,
  cpu/policies/lru.py `LRUCachePolicy`): a map from block hash to host block; `lookup` counts
  the leading run of blocks that are all offloaded; `prepare_load` protects the blocks about to
  be read; `touch` makes them the most recently used; room for new blocks is made by evicting
  the least recently used idle ones. kvtui's tier is an LRU map keyed by the same chained block
  keys as the GPU pool. Where it is simpler: vLLM 0.33.0 ranks recency per request (a request's
  blocks share one rank, tails ordered before heads) in a lazily invalidated heap; kvtui orders
  blocks one by one, in the order they arrive (a request's blocks leave the GPU tail first, so
  its tail is evicted first here too).
- When a block reaches the tier: vLLM's connector stores each block as it is computed, copying
  it to the host asynchronously, so a block evicted from the GPU is already on the host. kvtui
  adds the block to the tier at the moment the GPU pool evicts it (a victim cache). The host
  contents are the same ones an LRU write-through tier would hold for the blocks that matter
  (those no longer on the GPU); the device-to-host copy is not charged, as it is off the
  critical path in vLLM too.
- Loads: kvtui charges the load inside the iteration that admits the request (all of a
  request's host blocks, over each GPU's own host link in parallel: a tensor-parallel node
  holds 1/TP of every block per GPU). This is LMCache's synchronous retrieve in the connector's
  `start_load_kv` before the forward pass; vLLM's asynchronous OffloadingConnector instead parks
  the request until its load completes while the batch runs on. The synchronous model is the
  conservative one: a load delays the batch it joins.
- KV events: stores into and evictions out of the tier are reported with `medium="cpu"`, as vLLM's
  `BlockStored` / `BlockRemoved` events carry a medium, so the router's index (llm-d-kv-cache's
  `kvblock` index keeps entries per device tier) sees both tiers.

A node failure loses the host tier with the GPU memory: it is the same server.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Callable, Iterable, Sequence

Stored = Callable[[str, str, tuple[int, ...], "int | None", int], None]
Evicted = Callable[[tuple[int, ...], tuple[str, ...], str], None]


class CpuTier:
    __slots__ = ("node", "capacity", "seconds_per_block", "entries", "on_stored", "on_evicted", "version",
                 "stored_total", "evicted_total", "cleared_total", "loaded_total", "load_s_total")

    def __init__(self, node: str, capacity: int, seconds_per_block: float, on_stored: Stored, on_evicted: Evicted):
        self.node = node
        self.capacity = capacity
        self.seconds_per_block = seconds_per_block  # one block's bytes per GPU over one GPU's host link
        self.on_stored = on_stored
        self.on_evicted = on_evicted
        self.stored_total = 0
        self.evicted_total = 0
        self.cleared_total = 0  # lost with the node (a failure), not evicted
        self.loaded_total = 0  # blocks loaded back into GPU memory
        self.load_s_total = 0.0
        self.version = 0
        self.entries: OrderedDict[int, str] = OrderedDict()  # key -> owner group, LRU first

    def reset(self) -> None:
        self.cleared_total += len(self.entries)
        self.entries.clear()
        self.version += 1

    def __len__(self) -> int:
        return len(self.entries)

    def __contains__(self, key: int) -> bool:
        return key in self.entries

    def lookup(self, keys: Sequence[int], start: int, limit: int) -> int:
        """How many of keys[start:limit] are held here, counting from `start` until the first miss."""
        entries = self.entries
        n = 0
        for i in range(start, min(limit, len(keys))):
            if keys[i] not in entries:
                break
            n += 1
        return n

    def touch(self, keys: Iterable[int]) -> None:
        """The blocks become the most recently used (and so the last to be evicted)."""
        move = self.entries.move_to_end
        for k in keys:
            move(k)
        self.version += 1

    def load(self, keys: Sequence[int]) -> float:
        """Blocks are read back to the GPU: they become most recently used (vLLM's `prepare_load`
        protects them from eviction meanwhile); returns the seconds the copy takes."""
        self.touch(keys)
        seconds = len(keys) * self.seconds_per_block
        self.loaded_total += len(keys)
        self.load_s_total += seconds
        return seconds

    def offload(self, keys: tuple[int, ...], groups: tuple[str, ...], for_request: str) -> None:
        """Keep blocks the GPU pool just evicted; make room by evicting this tier's LRU blocks."""
        entries = self.entries
        new: dict[str, list[int]] = {}
        for k, g in zip(keys, groups):
            if k in entries:
                entries.move_to_end(k)
                continue
            entries[k] = g
            new.setdefault(g, []).append(k)
        self.version += 1
        for group, ks in new.items():
            self.stored_total += len(ks)
            self.on_stored(for_request, group, tuple(ks), None, -1)
        self._shrink(for_request)

    def _shrink(self, for_request: str) -> None:
        over = len(self.entries) - self.capacity
        if over <= 0:
            return
        gone: list[int] = []
        gone_groups: list[str] = []
        pop = self.entries.popitem
        for _ in range(over):
            k, g = pop(last=False)
            gone.append(k)
            gone_groups.append(g)
        self.evicted_total += over
        self.on_evicted(tuple(gone), tuple(gone_groups), for_request)

    def check(self) -> None:
        """Raise AssertionError if an invariant is broken (used by the property tests)."""
        assert len(self.entries) <= self.capacity, "the CPU tier holds more than its capacity"
        held = self.stored_total - self.evicted_total - self.cleared_total
        assert held == len(self.entries), "stored - evicted - cleared != held"
