"""SGLang's approximate multi-tenant radix tree, over block keys instead of characters.

After the gateway the differential suite runs, sglang-router 0.3.2 (`Tree` in
src/policies/tree.rs of the sgl-model-gateway sources, release commit "[smg] release 0.3.2",
lightseekorg/smg c7f9bf9f5): one tree shared by every worker ("tenant"); a node holds a run of
the request (path-compressed: one node per run, split where two requests part), the tenants
that hold it with a stamp each (`tenant_last_access_time`), and a cached tenant
(`last_tenant`); the tree keeps each tenant's size (`tenant_char_count`).

Stamps are a counter (`EPOCH_COUNTER`, one number per call, from 0), never a clock:

- `insert(keys, tenant)`: walk from the root; a node the walk passes through and the tenant did
  not hold yet gets the tenant with stamp 0 (and adds its length to the tenant's size); a node
  split where the request parts copies the stamps and the cached tenant of the node it splits;
  what is left of the request becomes a new leaf stamped with the next epoch and cached to the
  tenant; if nothing is left, the node the walk ended on is stamped with the next epoch.
  `register(tenants)` is the gateway's `insert("", url)` for every worker of the model, run
  whenever a worker joins or leaves (`init_cache_aware_policy`): one epoch each, on the root.
- `prefix_match(keys)`: walk as deep as the keys match anything in the tree, whoever holds it
  (a run matched in part ends the walk on that node); take the node's cached tenant, or, if that
  tenant no longer holds the node, another holder (upstream: the first of a hash map, an order
  that changes from process to process; here the first to have joined the node) and cache it; take the next epoch, and when it is a multiple of 8 stamp that tenant on that node
  only (the gateway's "1 in 8" touch). The matched length counts every matched key.
- `evict(max_size)`: a min-heap of (stamp, tenant, node) over every node and each tenant it is
  a leaf of (holds it, no child holds it); pop the oldest; skip it if the tenant is no longer
  over `max_size` or the node is no longer its leaf; else the tenant leaves the WHOLE node (its
  size drops by the node's length), the node goes once nobody holds it and it has no children,
  and the parent is pushed if it has just become a leaf of that tenant. The gateway's heap
  orders equal stamps arbitrarily; here by push order. Only stamp 0 repeats within a tenant,
  and a 0-stamped leaf pops first, so a pass leaves at most one of them and the next evicts it
  first: the order should never decide. `ambiguous_evictions` counts the passes where it did
  (which of two equal-stamped leaves of one tenant survived); the tests expect none.
- `remove_tenant(tenant)`: forget a worker that went away (its leaves upward).

Differences, on purpose: SGLang stores raw request text and counts characters; the simulator's
requests carry the chained keys of their full prompt blocks (`block_keys[: prompt //
block_size]`), so a run here is a run of blocks and sizes count blocks. The walk may skip
tenants the caller does not allow (`allowed`: nodes that would refuse the request now), which
the gateway does not do.

Before (issue 31) this class followed sglang-router 0.2.3's stamps (sgl-router/src/policies/
tree.rs: wall-clock time on the whole path at every insert and match) and kept one node per
block, so eviction trimmed a run block by block where the gateway drops it whole: with a bound
of 10 a 16-block request kept 10 blocks that still matched, where the gateway keeps none.
"""

from __future__ import annotations

import heapq
from collections import Counter
from typing import Iterable, Sequence

TOUCH_EVERY = 8  # prefix_match re-stamps when the epoch is a multiple of this (`epoch & 0x7 == 0`)


class _Node:
    __slots__ = ("keys", "parent", "children", "stamps", "cached")

    def __init__(self, keys: tuple[int, ...], parent: "_Node | None") -> None:
        self.keys = keys
        self.parent = parent
        self.children: dict[int, _Node] = {}  # first key of the child's run -> child
        self.stamps: dict[str, int] = {}  # tenant -> last access epoch; insertion order = order joined
        self.cached: str | None = None  # the gateway's `last_tenant`


def _shared(keys: Sequence[int], start: int, run: tuple[int, ...]) -> int:
    """How many keys of `run` match `keys[start:]` from its start."""
    n = 0
    limit = min(len(run), len(keys) - start)
    while n < limit and keys[start + n] == run[n]:
        n += 1
    return n


class Match:
    """What `prefix_match` found: matched keys, the tenant it took (None when nothing matched),
    and every tenant that holds the deepest matched node (that the caller allows), in the order
    they joined it."""

    __slots__ = ("depth", "tenant", "holders")

    def __init__(self, depth: int, tenant: str | None, holders: list[str]) -> None:
        self.depth, self.tenant, self.holders = depth, tenant, holders


class RadixTree:
    def __init__(self) -> None:
        self.root = _Node((), None)
        self.sizes: dict[str, int] = {}
        self.epoch = 0  # the next epoch to hand out
        self.evicted_blocks = 0
        self.ambiguous_evictions = 0

    def _next_epoch(self) -> int:
        e = self.epoch
        self.epoch += 1
        return e

    # ------------------------------------------------------------------ membership
    def register(self, tenants: Iterable[str]) -> None:
        """The gateway re-initialises the tree with every worker of the model on each join or
        leave: `insert("", url)` for each, one epoch apiece, stamped on the root."""
        for t in tenants:
            self.insert((), t)

    def size(self, tenant: str) -> int:
        return self.sizes.get(tenant, 0)

    # ------------------------------------------------------------------ insert / match
    def insert(self, keys: Sequence[int], tenant: str) -> None:
        self.root.stamps.setdefault(tenant, 0)
        self.sizes.setdefault(tenant, 0)
        node, i = self.root, 0
        while i < len(keys):
            child = node.children.get(keys[i])
            if child is None:
                leaf = _Node(tuple(keys[i:]), node)
                leaf.cached = tenant
                leaf.stamps[tenant] = self._next_epoch()
                self.sizes[tenant] += len(leaf.keys)
                node.children[keys[i]] = leaf
                return
            n = _shared(keys, i, child.keys)
            if n < len(child.keys):
                child = self._split(node, child, n)
            if tenant not in child.stamps:
                self.sizes[tenant] += len(child.keys)
                child.stamps[tenant] = 0
            node, i = child, i + n
        node.stamps[tenant] = self._next_epoch()

    @staticmethod
    def _split(parent: _Node, child: _Node, n: int) -> _Node:
        """Cut `child`'s run after `n` keys; the new upper node copies its stamps and cache."""
        top = _Node(child.keys[:n], parent)
        top.stamps = dict(child.stamps)
        top.cached = child.cached
        parent.children[child.keys[0]] = top
        child.keys = child.keys[n:]
        child.parent = top
        top.children[child.keys[0]] = child
        return top

    def _walk(self, keys: Sequence[int], allow: set[str] | None) -> tuple[_Node, int]:
        """The deepest node the keys reach (a partly matched run ends the walk) and the keys matched."""
        node, i = self.root, 0
        while i < len(keys):
            child = node.children.get(keys[i])
            if child is None or (allow is not None and allow.isdisjoint(child.stamps)):
                break
            n = _shared(keys, i, child.keys)
            node, i = child, i + n
            if n < len(child.keys):
                break
        return node, i

    def prefix_match(self, keys: Sequence[int], allowed: Iterable[str] | None = None) -> Match:
        """The gateway's `prefix_match_with_counts`: matched keys and the deepest node's tenant,
        with its side effects (the cache refreshed when stale, one epoch taken, the 1-in-8 touch)."""
        allow = None if allowed is None else set(allowed)
        node, depth = self._walk(keys, allow)
        holders = [t for t in node.stamps if allow is None or t in allow] if node is not self.root else []
        tenant = self._tenant_of(node, allow, holders)
        epoch = self._next_epoch()
        if tenant is not None and epoch % TOUCH_EVERY == 0:
            node.stamps[tenant] = epoch
        return Match(depth, tenant, holders)

    @staticmethod
    def _tenant_of(node: _Node, allow: set[str] | None, holders: list[str]) -> str | None:
        """The cached tenant, refreshed from the node's holders when it left the node (the
        gateway takes the first of a per-process hash map there, a tie it breaks by chance;
        here the first holder to have joined the node)."""
        if not holders:
            return None
        if node.cached not in node.stamps:
            node.cached = next(iter(node.stamps))
        if allow is None or node.cached in allow:
            return node.cached
        return holders[0]  # kvtui's filter: the cached tenant would refuse it now

    def match_depth(self, keys: Sequence[int], tenant: str) -> int:
        """Keys of `keys` that `tenant` holds from the root (no side effects; for display)."""
        return self._walk(keys, {tenant})[1]

    def keys_of(self, tenant: str) -> int:
        """Blocks `tenant` holds, counted by walking the tree (the check on `sizes`)."""
        n = 0
        stack = list(self.root.children.values())
        while stack:
            node = stack.pop()
            if tenant in node.stamps:
                n += len(node.keys)
            stack.extend(node.children.values())
        return n

    def node_count(self) -> int:
        n, stack = 0, list(self.root.children.values())
        while stack:
            node = stack.pop()
            n += 1
            stack.extend(node.children.values())
        return n

    # ------------------------------------------------------------------ eviction
    @staticmethod
    def _is_leaf_of(node: _Node, tenant: str) -> bool:
        return tenant in node.stamps and not any(tenant in c.stamps for c in node.children.values())

    def _drop(self, node: _Node, tenant: str) -> None:
        del node.stamps[tenant]
        self.sizes[tenant] = max(self.sizes.get(tenant, 0) - len(node.keys), 0)
        self.evicted_blocks += len(node.keys)
        parent = node.parent
        if not node.stamps and not node.children and parent is not None:
            del parent.children[node.keys[0]]

    def _leaves(self) -> list[tuple[int, int, str, _Node]]:
        """Every (stamp, order, tenant, node) where node is a leaf of tenant, root included."""
        out: list[tuple[int, int, str, _Node]] = []
        stack = [self.root]
        while stack:
            node = stack.pop()
            stack.extend(node.children.values())
            for t, stamp in node.stamps.items():
                if self._is_leaf_of(node, t):
                    out.append((stamp, len(out), t, node))
        return out

    def evict(self, max_size: int) -> int:
        """One eviction pass (`evict_tenant_by_size`); returns the blocks dropped."""
        if all(v <= max_size for v in self.sizes.values()):
            return 0
        heap = self._leaves()
        order = len(heap)
        heapq.heapify(heap)
        pending = Counter((t, stamp) for stamp, _o, t, _n in heap)
        before = self.evicted_blocks
        rivals: list[tuple[str, _Node]] = []
        while heap:
            stamp, _o, t, node = heapq.heappop(heap)
            pending[(t, stamp)] -= 1
            if self.sizes.get(t, 0) <= max_size or not self._is_leaf_of(node, t):
                continue
            if pending[(t, stamp)]:  # an equal stamp of the same tenant waits: the heap's choice
                rivals += [(t, m) for s, _, u, m in heap if s == stamp and u == t]
            self._drop(node, t)
            parent = node.parent
            if parent is not None and self._is_leaf_of(parent, t):
                heapq.heappush(heap, (parent.stamps[t], order, t, parent))
                pending[(t, parent.stamps[t])] += 1
                order += 1
        if any(self._is_leaf_of(m, t) for t, m in rivals):
            self.ambiguous_evictions += 1
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
            node.stamps.pop(tenant, None)
            if node is not self.root and not node.stamps and not node.children:
                del node.parent.children[node.keys[0]]  # type: ignore[union-attr]
        self.sizes.pop(tenant, None)
