"""llm-d's bound on how many (pod, tier) entries the KV index keeps per block key.

After llm-d-kv-cache@7be76e1 pkg/kvcache/kvblock/in_memory.go (`InMemoryIndex`, `defaultPodsPerKey` =
10): each block key maps to an LRU cache of `PodEntry` (pod, device tier) of that size; `Add`
puts an entry at the front (or moves it there), and adding one more than fit drops the least
recently added, so the index forgets that the pod holds the block although the pod still does.
`Evict` removes the entry; a lookup does not reorder. kvtui's `KVIndex` keeps one key set per
node and tier; this class keeps the per-key order beside it and tells the index which entries
to forget (`router.index.pods_per_key`; unset, nothing is forgotten).
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Iterable

Entry = tuple[str, int]  # (node, tier slot)


class PodsPerKey:
    def __init__(self, cap: int) -> None:
        self.cap = cap
        self._entries: dict[int, OrderedDict[Entry, None]] = {}

    def stored(self, node: str, slot: int, keys: Iterable[int]) -> list[tuple[Entry, int]]:
        """Record (node, slot) as the newest holder of each key; the entries pushed out, with their key."""
        out = []
        for k in keys:
            held = self._entries.get(k)
            if held is None:
                held = self._entries[k] = OrderedDict()
            held[(node, slot)] = None
            held.move_to_end((node, slot))
            if len(held) > self.cap:
                out.append((held.popitem(last=False)[0], k))
        return out

    def removed(self, node: str, slot: int, keys: Iterable[int]) -> None:
        for k in keys:
            held = self._entries.get(k)
            if held is not None:
                held.pop((node, slot), None)
                if not held:
                    del self._entries[k]

    def cleared(self, node: str, keys_per_slot: Iterable[tuple[int, Iterable[int]]]) -> None:
        for slot, keys in keys_per_slot:
            self.removed(node, slot, keys)
