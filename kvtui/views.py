"""The read-only view types: what a viewer is shown of a run, whoever made the run.

Plain frozen values (numpy arrays in them are read-only), so a consumer cannot change the run.
The simulation builds them from its pools (kvtui/sim/view.py); a recording or a live cluster
builds the same types from its own records (see kvtui/run/source.py), and the app draws them
without knowing which.

Cell states follow vLLM v1's prefix caching as the pool models it (kvtui/sim/blocks.py):
a block is *used* while a request holds a reference, *pinned* when it is a preloaded system
prompt (a reference never released), *cached* when its reference count is 0 but it still
holds a key (in the free queue, evictable in LRU order), and *free* otherwise. Under
prefill/decode disaggregation a used block a KV transfer is moving right now is *moving*, on
both nodes: the prefill node's copy being read and the decode node's block being written
(kvtui/sim/handoff.py; docs/disaggregation.md).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

FREE, CACHED, USED, PINNED, MOVING = 0, 1, 2, 3, 4
STATE_NAMES = ("free", "cached", "used", "pinned", "moving")


@dataclass(frozen=True, slots=True)
class TierView:
    """One memory tier of a node: a state code and an owner group per block."""

    name: str  # "gpu" (a CPU offload tier adds "cpu")
    num_blocks: int
    state: np.ndarray  # int8 per block: FREE / CACHED / USED / PINNED / MOVING (read-only)
    owner: tuple[str, ...]  # prefix group whose data each block holds ("" when none)
    used: int
    cached_idle: int


@dataclass(frozen=True, slots=True)
class NodeView:
    """One node at one moment."""

    name: str
    up: bool
    tiers: tuple[TierView, ...]
    running: tuple[str, ...]  # request ids, in scheduling order
    waiting: tuple[str, ...]  # request ids, head of the queue first
    hit_rate: float | None  # share of its last HIT_WINDOW completed requests (run/journal.py) that hit the prefix cache
    completed: int
    evicted_total: int
    version: tuple  # changes whenever anything above may have changed
    cpu: tuple[int, int] | None = None  # the CPU offload tier's (blocks held, capacity), if any
    role: str = "both"  # prefill / decode / both (docs/disaggregation.md)
    moving: tuple[int, int] = (0, 0)  # requests whose KV is leaving / arriving (blocks pinned for a transfer)

    @property
    def gpu(self) -> TierView:
        return self.tiers[0]

    @property
    def num_blocks(self) -> int:
        return self.tiers[0].num_blocks


@dataclass(frozen=True, slots=True)
class BlockView:
    """Everything known about one block (the inspector's panel)."""

    node: str
    index: int
    tier: str
    state: str  # free / cached / used / pinned / moving (null: block 0)
    group: str  # owner prefix group ("" when none)
    key: int | None  # the chained block hash it holds
    parent: int | None  # the key of the block before it in its sequence (None: first block)
    ref: int  # reference count (requests holding it; pins count one)
    lru: int | None  # position in the free queue: 0 is evicted next (None: not evictable)
    holders: tuple[str, ...]  # requests holding it now
    stored_by: str | None  # the request whose computation stored its key
    session: str | None  # that request's session
    transfer: str = ""  # when moving: where to, for which request ("" otherwise)


@dataclass(frozen=True, slots=True)
class ClusterView:
    nodes: tuple[NodeView, ...]
    now: float
    position: int

    def node(self, name: str) -> NodeView | None:
        for n in self.nodes:
            if n.name == name:
                return n
        return None


@dataclass(frozen=True, slots=True)
class KeyFigures:
    """The few numbers a side-by-side comparison shows for each run."""

    now: float
    arrived: int
    completed: int
    rejected: int
    preempted: int
    evicted_blocks: int
    token_hit_rate: float
    request_hit_rate: float
    ttft_p50_ms: float | None
    ttft_p95_ms: float | None
