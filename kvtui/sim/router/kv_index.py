"""The router's global view of which node caches which blocks.

Like llm-d's KV-cache indexer (kvblock.Index: block key -> pods) and Dynamo's KV router
(a radix tree of block hashes -> workers fed by KvCacheEvents), the index is built only from the
nodes' KV events (stored / evicted / cleared), never by peeking into the nodes. Matching walks
the request's chained keys from the first one and counts, per node, how many leading blocks
that node holds: because keys are chained, the walk stops for a node at its first miss.

In the simulation the events arrive without delay, so the index always agrees with the pools
(a property test checks it); in a real cluster it lags by the event transport.
"""

from __future__ import annotations

from typing import Iterable

from kvtui.events import BlocksEvicted, BlocksStored, Event, NodeCacheCleared


class KVIndex:
    EVENT_TYPES = (BlocksStored, BlocksEvicted, NodeCacheCleared)

    def __init__(self) -> None:
        self._where: dict[int, set[str]] = {}

    def on_event(self, ev: Event) -> None:
        if type(ev) is BlocksStored:
            self.add(ev.node, ev.keys)
        elif type(ev) is BlocksEvicted:
            self.remove(ev.node, ev.keys)
        elif isinstance(ev, NodeCacheCleared):
            self.clear(ev.node)

    def reset(self, where: dict[int, Iterable[str]]) -> None:
        """Replace the whole index (after the control plane recovered it from its log)."""
        self._where = {k: set(nodes) for k, nodes in where.items() if nodes}

    def add(self, node: str, keys: Iterable[int]) -> None:
        where = self._where
        for k in keys:
            s = where.get(k)
            if s is None:
                where[k] = {node}
            else:
                s.add(node)

    def remove(self, node: str, keys: Iterable[int]) -> None:
        where = self._where
        for k in keys:
            s = where.get(k)
            if s is not None and node in s:
                s.discard(node)
                if not s:
                    del where[k]

    def clear(self, node: str) -> None:
        for k in [k for k, s in self._where.items() if node in s]:
            self.remove(node, (k,))

    def match(self, keys: Iterable[int]) -> dict[str, int]:
        """Leading blocks of `keys` held by each node (nodes with none are absent)."""
        where = self._where
        alive: set[str] | None = None
        counts: dict[str, int] = {}
        for k in keys:
            s = where.get(k)
            if not s:
                break
            alive = set(s) if alive is None else alive & s
            if not alive:
                break
            for node in alive:
                counts[node] = counts.get(node, 0) + 1
        return counts

    def keys_on(self, node: str) -> set[int]:
        return {k for k, s in self._where.items() if node in s}
