"""What the router's KV index should hold, replayed from a simulation's KV events, for checks.

The index follows llm-d's indexer (kvtui/sim/router/index.py): a node is listed under a key from
its stored event until its first removed event, however many copies its pool holds. vLLM caches
a second copy of a key (a fully cached prompt's recomputed last block) and reports each copy
stored and each copy removed, so after a copy is evicted the pool may still hold the key while
the index no longer lists it. So the checks compare the index with this replay (set semantics),
and the pool with the events' copy counts (stored minus removed, per key).

A node publishes a step's KV events when the step ends, as vLLM does (kvtui/sim/node.py): while
a step runs its pool is ahead of the events. `pool_matches` and `held_after` count the node's
unpublished events too; `indexed` is what was published, which the index must equal.
"""

from __future__ import annotations

from collections import Counter, defaultdict

from kvtui.events import BlocksEvicted, BlocksStored, Event, NodeCacheCleared


class KVReplay:
    def __init__(self, sim) -> None:
        self.held: dict[tuple[str, str], set[int]] = defaultdict(set)  # (node, medium) -> keys
        self.copies: dict[str, Counter] = defaultdict(Counter)  # node -> key -> GPU copies
        sim.subscribe(self.on_event, (BlocksStored, BlocksEvicted, NodeCacheCleared))

    def on_event(self, ev: Event) -> None:
        self.apply(ev, self.held, self.copies)

    @staticmethod
    def apply(ev: Event, held: dict[tuple[str, str], set[int]], copies: dict[str, Counter]) -> None:
        match ev:
            case BlocksStored():
                held[ev.node, ev.medium].update(ev.keys)
                if ev.medium == "gpu":
                    copies[ev.node].update(ev.keys)
            case BlocksEvicted():
                held[ev.node, ev.medium].difference_update(ev.keys)
                if ev.medium == "gpu":
                    copies[ev.node].subtract(ev.keys)
            case NodeCacheCleared():
                for medium in ("gpu", "cpu"):
                    held.pop((ev.node, medium), None)
                copies.pop(ev.node, None)

    def _with_unpublished(self, node) -> tuple[dict[tuple[str, str], set[int]], dict[str, Counter]]:
        """This replay's state for `node` once the node's unpublished events are published."""
        held: dict[tuple[str, str], set[int]] = defaultdict(set)
        for medium in ("gpu", "cpu"):
            held[node.name, medium] = set(self.held.get((node.name, medium), ()))
        copies: dict[str, Counter] = defaultdict(Counter, {node.name: Counter(self.copies.get(node.name, Counter()))})
        for cls, fields in node.unpublished:
            self.apply(cls(0, 0.0, *fields), held, copies)
        return held, copies

    def held_after(self, node, medium: str) -> set[int]:
        """The keys `node` holds in `medium` by its events, the unpublished ones counted."""
        return self._with_unpublished(node)[0][node.name, medium]

    def indexed(self, node: str, medium: str | None = None) -> set[int]:
        """The keys an llm-d index fed these events lists for `node` (in `medium`, or any)."""
        if medium is not None:
            return set(self.held.get((node, medium), ()))
        return self.indexed(node, "gpu") | self.indexed(node, "cpu")

    def pool_matches(self, node) -> bool:
        """Whether the node's GPU pool holds exactly the copies its events (published or not) account for."""
        pool = node.pool
        events = {k: c for k, c in self._with_unpublished(node)[1][node.name].items() if c}
        return events == {k: pool.copies_of(k) for k in pool.cached}
