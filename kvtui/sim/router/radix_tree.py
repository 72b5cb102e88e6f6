"""SGLang's approximate multi-tenant radix tree, over block keys instead of characters.

After sgl-project/sglang sgl-router/src/policies/tree.rs as sglang-router 0.2.3 ships it
(`Tree`; from 0.2.4 the file is sgl-model-gateway/src/policies/tree.rs, which through 0.3.0
does what follows but for `get_smallest_tenant`, gone): one tree shared by every worker
("tenant"); each node records, per tenant, when that tenant last touched it
(`tenant_last_access_time`), and the tree keeps each tenant's size (`tenant_char_count`). What
it does, and what this class does alike:

- `insert(text, tenant)`: walk the request from the root, creating what is missing, and stamp
  every node on the path with the tenant and the current time; a node the tenant did not hold
  yet adds its length to the tenant's size.
- `prefix_match(text)`: walk as deep as the text matches anything in the tree, whoever holds it;
  take a tenant of the deepest node reached (upstream: the first key of a hash map, i.e. any
  one; here the caller's choice: the first stamped there, or a draw from the seeded RNG),
  re-stamp that tenant along the path to the root and return the matched length. A tenant is
  on every ancestor of a node it is on (insert stamps whole paths, eviction only removes
  leaves), so the matched length is that tenant's.
- `evict_tenant_by_size(max_size)`: collect, for every tenant, its leaves (nodes it holds
  where none of the children is its) into a min-heap by last access time; pop the oldest; if
  that tenant is still over `max_size`, drop it from the node (and the node, once nobody holds
  it and it has no children), and push the parent if it has just become a leaf of that tenant.
  Afterwards no tenant holds more than `max_size` (tested).
- `remove_tenant(tenant)`: forget a worker that went away; `get_smallest_tenant`: the tenant
  with the smallest size.

Differences, on purpose: SGLang stores raw request text and counts characters; the simulator's
requests carry the chained keys of their full prompt blocks (`block_keys[: prompt //
block_size]`), so one node here is one block and sizes count blocks. Nodes are not
path-compressed (a radix tree's compression does not change what matches; it only makes
eviction remove several characters at a time, where this removes one block at a time).
Time is simulated seconds (the caller's `ctx.now`), never the wall clock; equal stamps are
ordered by a monotonic counter so that eviction is deterministic.

sglang-router 0.3.2 (the gateway tests/differential runs) stamps differently, and this class
does not follow it: stamps are a global counter, `insert` stamps only the last node of the path
(a node it merely adds the tenant to gets 0), and `prefix_match` takes the node's cached tenant
(at first the one that created it) and re-stamps only that node, on one match in eight. Only
the order of eviction depends on the stamps.
"""

from __future__ import annotations

import heapq
from typing import Iterable, Sequence


class _Node:
    __slots__ = ("key", "parent", "children", "tenants")

    def __init__(self, key: int | None, parent: "_Node | None") -> None:
        self.key = key
        self.parent = parent
        self.children: dict[int, _Node] = {}
        self.tenants: dict[str, tuple[float, int]] = {}  # tenant -> (last access time, tie order)


class RadixTree:
    def __init__(self) -> None:
        self.root = _Node(None, None)
        self.sizes: dict[str, int] = {}
        self._tick = 0
        self.evicted_blocks = 0

    # ------------------------------------------------------------------ helpers
    def _stamp(self, now: float) -> tuple[float, int]:
        self._tick += 1
        return (now, self._tick)

    def add_tenant(self, tenant: str) -> None:
        """A worker joins with an empty tree (upstream: `insert("", url)`)."""
        self.sizes.setdefault(tenant, 0)

    def size(self, tenant: str) -> int:
        return self.sizes.get(tenant, 0)

    # ------------------------------------------------------------------ insert / match
    def insert(self, keys: Sequence[int], tenant: str, now: float) -> None:
        stamp = self._stamp(now)
        added = self.sizes.get(tenant, 0)
        node = self.root
        for k in keys:
            child = node.children.get(k)
            if child is None:
                child = _Node(k, node)
                node.children[k] = child
            if tenant not in child.tenants:
                added += 1
            child.tenants[tenant] = stamp
            node = child
        self.sizes[tenant] = added

    def match(self, keys: Sequence[int], allowed: Iterable[str] | None = None) -> tuple[int, list[str]]:
        """How many leading keys the tree holds (for a tenant in `allowed`), and the tenants of the
        deepest node reached, in the order they were first stamped there. Touches nothing."""
        allow = None if allowed is None else set(allowed)
        node = self.root
        depth = 0
        for k in keys:
            child = node.children.get(k)
            if child is None:
                break
            if allow is not None and not any(t in allow for t in child.tenants):
                break
            node = child
            depth += 1
        if depth == 0:
            return 0, []
        tenants = [t for t in node.tenants if allow is None or t in allow]
        return depth, tenants

    def touch(self, keys: Sequence[int], depth: int, tenant: str, now: float) -> None:
        """Re-stamp `tenant` on the first `depth` nodes of `keys` (prefix_match's LRU touch)."""
        stamp = self._stamp(now)
        node = self.root
        for k in keys[:depth]:
            node = node.children.get(k)
            if node is None or tenant not in node.tenants:
                return
            node.tenants[tenant] = stamp

    def keys_of(self, tenant: str) -> int:
        """Blocks `tenant` holds, counted by walking the tree (the check on `sizes`)."""
        n = 0
        stack = list(self.root.children.values())
        while stack:
            node = stack.pop()
            if tenant in node.tenants:
                n += 1
            stack.extend(node.children.values())
        return n

    # ------------------------------------------------------------------ eviction
    @staticmethod
    def _is_leaf_of(node: _Node, tenant: str) -> bool:
        return tenant in node.tenants and not any(tenant in c.tenants for c in node.children.values())

    def _drop(self, node: _Node, tenant: str) -> None:
        del node.tenants[tenant]
        self.sizes[tenant] = self.sizes.get(tenant, 1) - 1
        self.evicted_blocks += 1
        parent = node.parent
        if not node.tenants and not node.children and parent is not None:
            del parent.children[node.key]  # type: ignore[arg-type]

    def evict(self, max_size: int) -> int:
        """LRU-evict leaves of every tenant over `max_size` until none is; returns blocks dropped."""
        if all(v <= max_size for v in self.sizes.values()):
            return 0
        over = {t for t, v in self.sizes.items() if v > max_size}
        heap: list[tuple[float, int, int, str, _Node]] = []
        order = 0
        stack = list(self.root.children.values())
        while stack:
            node = stack.pop()
            stack.extend(node.children.values())
            for t, (when, tick) in node.tenants.items():
                if t in over and self._is_leaf_of(node, t):
                    order += 1
                    heap.append((when, tick, order, t, node))
        heapq.heapify(heap)
        before = self.evicted_blocks
        while heap:
            _when, _tick, _o, t, node = heapq.heappop(heap)
            if self.sizes.get(t, 0) <= max_size:
                continue
            if t not in node.tenants:
                continue
            self._drop(node, t)
            parent = node.parent
            if parent is not None and parent is not self.root and self._is_leaf_of(parent, t):
                when, tick = parent.tenants[t]
                order += 1
                heapq.heappush(heap, (when, tick, order, t, parent))
        return self.evicted_blocks - before

    def remove_tenant(self, tenant: str) -> None:
        """Forget everything credited to `tenant` (a worker that went away)."""
        stack = [self.root]
        post: list[_Node] = []
        while stack:
            node = stack.pop()
            post.append(node)
            stack.extend(node.children.values())
        for node in reversed(post):  # children before parents
            if node is self.root:
                continue
            node.tenants.pop(tenant, None)
            if not node.tenants and not node.children and node.parent is not None:
                del node.parent.children[node.key]  # type: ignore[arg-type]
        self.sizes.pop(tenant, None)
