"""The approximate index: what the router itself sent to each node, with no KV events at all.

After the gateway-api-inference-extension prefix-cache plugin that llm-d's default profile uses
(gateway-api-inference-extension v1.2.0,
pkg/epp/scheduling/framework/plugins/multi/prefix/plugin.go and indexer.go; since v1.5.0 the
approximateprefix data producer): after routing a request, the router records that the chosen
server will hold the request's prompt blocks; each server has an LRU of block keys bounded at a
capacity (there `lruCapacityPerServer`, here `router.index.approx_blocks_per_node`, by default
the node's KV capacity), and a key that falls out of a server's LRU stops counting for it.
Matching is upstream's `matchLongestPrefix` (the same through llm-d-inference-scheduler 520af47's
approximateprefix/plugin.go): walk the prompt's keys from the first while any server is credited
with the key, and add one for every server credited with it. So a server missing an early block
(its LRU drops a request's first blocks first: they were added first) still scores for the later
ones that another server's credit lets the walk reach; its `Match.consecutive` is that count, not
a run from the first block.

Like the plugin, it only looks at the start of a prompt: the plugin hashes 64-character blocks
(the server's 16-token block at `averageCharactersPerToken` = 4; from v1.4.0 the block size is
set in tokens, but the text is still hashed at 4 characters a token) and stops after
`DefaultMaxPrefixBlocks` = 256 of them, so two prompts that agree on their first ~16,000
characters look the same to it. The simulator's requests carry token blocks, not text: the
Router passes only the blocks within `router.index.approx_max_prefix_tokens` (default 4,096
tokens: 256 x 64 characters at ~4 characters a token).

It guesses: it never hears of evictions under memory pressure, of preemptions, of a node that
lost its cache, or of blocks another request computed, so it drifts from the pools. The Router
can keep it beside the precise index so the app shows both answers side by side.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Sequence

from kvtui.sim.router.index import Match


class ApproxIndex:
    def __init__(self, capacity: dict[str, int]) -> None:
        self.capacity = dict(capacity)
        self._lru: dict[str, OrderedDict[int, None]] = {n: OrderedDict() for n in capacity}
        self._where: dict[int, set[str]] = {}

    def routed(self, node: str, keys: Sequence[int]) -> None:
        """The router sent a request with these prompt keys to `node`: credit them, most recent last."""
        lru, where = self._lru[node], self._where
        for k in keys:
            if k in lru:
                lru.move_to_end(k)
                continue
            lru[k] = None
            s = where.get(k)
            if s is None:
                where[k] = {node}
            else:
                s.add(node)
        cap = self.capacity[node]
        while len(lru) > cap:
            k, _ = lru.popitem(last=False)
            s = where[k]
            s.discard(node)
            if not s:
                del where[k]

    def forget(self, node: str) -> None:
        """Drop what is credited to `node` (the router saw it go down)."""
        for k in self._lru[node]:
            s = self._where[k]
            s.discard(node)
            if not s:
                del self._where[k]
        self._lru[node].clear()

    def match(self, keys: Sequence[int]) -> dict[str, Match]:
        counts: dict[str, int] = {}
        where = self._where
        for k in keys:
            servers = where.get(k)
            if not servers:
                break
            for n in servers:
                counts[n] = counts.get(n, 0) + 1
        return {n: Match(c, float(c)) for n, c in counts.items()}

    def keys_on(self, node: str) -> set[int]:
        return set(self._lru[node])
