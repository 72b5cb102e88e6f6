"""Read-only snapshots of a simulation for whoever draws it (the app, tests, reports): the
builders of the view types of kvtui/views.py from a simulation's pools.

The app never reads a pool, a bus or a node's queues itself: it asks for a `ClusterView`
(one `NodeView` per node: every block's state and owner per memory tier, the queues, the
hit rate) and, for the inspector, a `BlockView` of one block. Snapshots are plain frozen
values: numpy arrays in them are marked read-only, so a consumer cannot change the run.

One function builds a node's view, `node_view`, so a new memory tier is one more `TierView` in
its `tiers` tuple: consumers that draw `tiers[0]` keep working, and each `BlockView` names its
`tier`. The CPU offload tier (kvtui/sim/offload.py) is summarised as (held, capacity) in
`NodeView.cpu` rather than drawn cell by cell: it can hold millions of blocks, and the map
shows it as a fill share on the node's label.

Cell states follow vLLM v1's prefix caching as the pool models it (kvtui/sim/blocks.py):
a block is *used* while a request holds a reference, *pinned* when it is a preloaded system
prompt (a reference never released), *cached* when its reference count is 0 but it still
holds a key (in the free queue, evictable in LRU order), and *free* otherwise. Block 0 is vLLM's
null block, never allocated: it is drawn as pinned (held for good) and inspected as "null".
Under prefill/decode disaggregation, the blocks a KV transfer is moving right now are *moving*
on both nodes of the pair (`Handoffs.blocks_in_flight`, kvtui/sim/handoff.py): from the
transfer's start to its landing, the same span as the `KVTransferStarted` / `KVTransferDone`
events. A transfer still waiting for room on its decode node moves nothing yet: its blocks are
used. Views only read: building them changes no state and draws no random number.
"""

from __future__ import annotations

import numpy as np

from kvtui.sim.blocks import NULL_BLOCK
from kvtui.percentiles import percentile
from kvtui.views import CACHED, FREE, MOVING, PINNED, USED, BlockView, ClusterView, KeyFigures, NodeView, TierView

NULL_OWNER = "null block"  # block 0's owner in views: vLLM's placeholder, never allocated


def _readonly(a: np.ndarray) -> np.ndarray:
    a.flags.writeable = False
    return a


def in_flight(sim, node_name: str) -> tuple[int, ...]:
    """The blocks of a node a KV transfer is moving now (none without disaggregation)."""
    handoffs = getattr(sim, "handoffs", None)
    return tuple(handoffs.blocks_in_flight(node_name)) if handoffs is not None else ()


def _gpu_tier(node, moving: tuple[int, ...] = ()) -> TierView:
    """The pool's blocks by state. Block 0, vLLM's null block, is never allocated: it shows as
    held for good (the pinned glyph), under the owner name "null block". `moving`: the blocks a
    transfer is moving (they are used, so the used count keeps them)."""
    pool = node.pool
    n = pool.num_blocks
    ref = np.fromiter(pool.ref, dtype=np.int64, count=n)
    keyed = np.fromiter((x is not None for x in pool.key), dtype=bool, count=n)
    state = np.where(ref > 0, USED, np.where(keyed, CACHED, FREE)).astype(np.int8)
    if pool.pinned:
        state[np.fromiter(pool.pinned, dtype=np.int64, count=len(pool.pinned))] = PINNED
    owner = tuple(pool.owner)
    if n:
        state[NULL_BLOCK] = PINNED
        owner = (NULL_OWNER,) + owner[1:]
    if moving:
        state[np.fromiter(moving, dtype=np.int64, count=len(moving))] = MOVING
    used = int(np.count_nonzero(ref > 0))
    cached_idle = int(np.count_nonzero(state == CACHED))
    return TierView("gpu", n, _readonly(state), owner, used, cached_idle)


def node_version(node, hits: tuple[int, int, int] | None = None, moving: tuple[int, ...] = ()) -> tuple:
    """A cheap key that changes whenever the node's view would (views are cached on it)."""
    pool, cpu = node.pool, node.kv.cpu
    held = len(cpu) if cpu is not None else -1
    return (id(pool.ref), pool.version, node.up, len(node.running), len(node.waiting), hits, held, node.outbound, node.inbound, moving)


def node_view(node, hits: tuple[int, int, int] | None = None, moving: tuple[int, ...] = ()) -> NodeView:
    """The one place a node's view is built (a new tier is added here). `hits`: (hits, requests)
    over the recent window, then all completed requests (run/journal.py); `moving`: the blocks
    a transfer is moving now (`in_flight`)."""
    hit_rate = hits[0] / hits[1] if hits and hits[1] else None
    return NodeView(
        name=node.name,
        up=node.up,
        tiers=(_gpu_tier(node, moving),),
        running=tuple(r.id for r in node.running),
        waiting=tuple(r.id for r in node.waiting),
        hit_rate=hit_rate,
        completed=hits[2] if hits else 0,
        evicted_total=node.pool.evicted_total,
        version=node_version(node, hits, moving),
        cpu=(len(node.kv.cpu), node.kv.cpu.capacity) if node.kv.cpu is not None else None,
        role=node.role,
        moving=(node.outbound, node.inbound),
    )


class ViewCache:
    """Builds views, rebuilding a node's only when its version key changed."""

    def __init__(self) -> None:
        self._nodes: dict[str, NodeView] = {}

    def cluster(self, sim, journal=None, position: int | None = None) -> ClusterView:
        out = []
        for node in sim.nodes:
            hits = journal.node_hits.get(node.name) if journal is not None else None
            hits = tuple(hits) if hits is not None else None
            moving = in_flight(sim, node.name)
            key = node_version(node, hits, moving)
            v = self._nodes.get(node.name)
            if v is None or v.version != key:
                v = node_view(node, hits, moving)
                self._nodes[node.name] = v
            out.append(v)
        return ClusterView(tuple(out), sim.now, sim.bus.seq if position is None else position)


def block_view(sim, node_name: str, index: int, journal=None) -> BlockView | None:
    """One block in detail; None if there is no such node or block."""
    node = sim.node_by_name.get(node_name)
    if node is None or not 0 <= index < node.pool.num_blocks:
        return None
    pool = node.pool
    ref = pool.ref[index]
    key = pool.key[index]
    if index == NULL_BLOCK:
        state = "null"
    elif index in pool.pinned:
        state = "pinned"
    elif ref > 0:
        state = "used"
    elif key is not None:
        state = "cached"
    else:
        state = "free"
    transfer = _transfer_words(sim, node_name, index)
    if transfer:
        state = "moving"
    lru = None
    if ref == 0 and index in pool.free_queue:
        for i, b in enumerate(pool.free_queue):
            if b == index:
                lru = i
                break
    holders = tuple(r.id for r in list(node.running) + list(node.waiting) if index in r.blocks)
    parent = stored_by = session = None
    if key is not None and journal is not None:
        prov = journal.provenance(node_name, key)
        if prov is not None:
            parent, stored_by, session = prov
    return BlockView(
        node=node_name,
        index=index,
        tier="gpu",
        state=state,
        group=NULL_OWNER if state == "null" else pool.owner[index] if state != "free" else "",
        key=key,
        parent=parent,
        ref=ref,
        lru=lru,
        holders=holders,
        stored_by=stored_by,
        session=session,
        transfer=transfer,
    )


def _transfer_words(sim, node_name: str, index: int) -> str:
    """The inspector's line for a block a transfer is moving ("" when none is)."""
    handoffs = getattr(sim, "handoffs", None)
    found = handoffs.transfer_at(node_name, index) if handoffs is not None else None
    if found is None:
        return ""
    request, src, dst, blocks = found
    way = f"leaving for {dst}" if node_name == src else f"arriving from {src}"
    return f"in flight: {way} (request {request}, {blocks} blocks on the link)"


def key_figures(sim) -> KeyFigures:
    return figures_of(sim.metrics, sim.now)


def figures_of(m, now: float) -> KeyFigures:
    """The key figures of a run's `Metrics` at `now` (a simulation's, or a live run's)."""
    p50, p95 = percentile(m.ttft, 50), percentile(m.ttft, 95)
    return KeyFigures(
        now=now,
        arrived=m.arrived,
        completed=m.completed,
        rejected=m.rejected,
        preempted=m.preempted,
        evicted_blocks=m.evicted_blocks,
        token_hit_rate=m.token_hit_rate,
        request_hit_rate=m.request_hit_rate,
        ttft_p50_ms=None if p50 is None else p50 * 1000,
        ttft_p95_ms=None if p95 is None else p95 * 1000,
    )
