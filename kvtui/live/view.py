"""Real engines as the read-only views of kvtui/views.py, built from the project's events alone
(kvtui/live/translate.py makes them), so a live or recorded run's picture at any event is the
events up to it replayed, as the app's step back needs.

What KV events cannot tell is left out rather than made up: a held block is drawn *cached*
(vLLM publishes BlockStored when a full block enters its prefix cache, whether a request still
uses it or not, and nothing when a request lets go of it), there are no running or waiting
requests in the map (the engines panel shows the counts the engine's `/metrics` gives), and the
map is as wide as the engine's GPU block count when its metrics say it, else as the most blocks
it was ever seen holding. A stored block takes the lowest free cell (kvtui/live/slots.py); its
colour is its prefix. Only the GPU tier is drawn; offloaded blocks are counted. Orphan blocks
(their parent unknown: no key) are counted, not drawn.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field

import numpy as np

from kvtui.events import (
    BlocksEvicted,
    BlocksStored,
    EngineRestarted,
    EngineScraped,
    EngineWatched,
    Event,
    KVBatchReceived,
    KVEventsLost,
    KVMessageMalformed,
    NodeCacheCleared,
)
from kvtui.live.slots import SlotMap
from kvtui.views import CACHED, ClusterView, NodeView, TierView


@dataclass
class Engine:
    """One engine as its events told it."""

    name: str
    cells: SlotMap = field(default_factory=SlotMap)  # GPU blocks: key -> (cell, prefix)
    held: dict[str, set[int]] = field(default_factory=lambda: defaultdict(set))  # medium -> keys
    stored: int = 0
    removed: int = 0
    batches: int = 0
    replayed: int = 0
    gaps: int = 0
    malformed: int = 0
    orphans: int = 0
    epochs: int = 1
    restarts: int = 0
    scrape: EngineScraped | None = None  # its last /metrics read
    fresh_at: float | None = None  # run time of its last good read

    def offloaded(self) -> int:
        return sum(len(keys) for medium, keys in self.held.items() if medium != "gpu")


class EnginesPicture:
    """Every engine's blocks and counts, and the index (key -> engines holding it), fed by events."""

    def __init__(self) -> None:
        self.engines: dict[str, Engine] = {}
        self.index: dict[int, set[str]] = defaultdict(set)

    def engine(self, name: str) -> Engine:
        if name not in self.engines:
            self.engines[name] = Engine(name)
        return self.engines[name]

    def on_event(self, ev: Event) -> None:
        match ev:
            case EngineWatched():
                self.engine(ev.node)
            case KVBatchReceived():
                e = self.engine(ev.node)
                e.batches += 1
                e.replayed += ev.replayed
                e.orphans += ev.orphans
                e.stored += ev.orphans  # counted as published, as the headless lines count them
            case BlocksStored():
                self._stored(self.engine(ev.node), ev)
            case BlocksEvicted():
                self._evicted(self.engine(ev.node), ev)
            case NodeCacheCleared():
                self._cleared(self.engine(ev.node))
            case EngineRestarted():
                self.engine(ev.node).restarts += 1
            case KVEventsLost():
                self.engine(ev.node).gaps += ev.missing
            case KVMessageMalformed():
                self.engine(ev.node).malformed += 1
            case EngineScraped():
                e = self.engine(ev.node)
                e.scrape = ev
                if ev.error is None:
                    e.fresh_at = ev.t

    def _stored(self, e: Engine, ev: BlocksStored) -> None:
        e.stored += len(ev.keys)
        for key in ev.keys:
            e.held[ev.medium].add(key)
            self.index[key].add(e.name)
            if ev.medium == "gpu":
                e.cells.place(key, ev.group)

    def _evicted(self, e: Engine, ev: BlocksEvicted) -> None:
        e.removed += len(ev.keys)
        for key in ev.keys:
            e.held[ev.medium].discard(key)
            if ev.medium == "gpu":
                e.cells.free(key)
            if not any(key in keys for keys in e.held.values()):
                self._unindex(key, e.name)

    def _cleared(self, e: Engine) -> None:
        e.epochs += 1
        for keys in e.held.values():
            for key in keys:
                self._unindex(key, e.name)
            keys.clear()
        e.cells.clear()

    def _unindex(self, key: int, name: str) -> None:
        holders = self.index.get(key)
        if holders is not None:
            holders.discard(name)
            if not holders:
                del self.index[key]

    # ------------------------------------------------------------------ reading
    def capacity(self, name: str) -> int | None:
        e = self.engines.get(name)
        return None if e is None or e.scrape is None else e.scrape.num_gpu_blocks

    def index_figures(self) -> tuple[int, int]:
        """Keys in the global index, and how many of them more than one engine holds."""
        return len(self.index), sum(1 for holders in self.index.values() if len(holders) > 1)

    def cluster_view(self, now: float, position: int, hit_rate) -> ClusterView:
        nodes = tuple(self.node_view(e, hit_rate(e.name)) for e in self.engines.values())
        return ClusterView(nodes=nodes, now=now, position=position)

    def node_view(self, e: Engine, hit_rate: float | None) -> NodeView:
        size = max(self.capacity(e.name) or 0, e.cells.high, 1)
        codes = np.zeros(size, dtype=np.int8)
        owners = [""] * size
        for cell, owner in e.cells.cells.values():
            codes[cell] = CACHED
            owners[cell] = owner
        codes.flags.writeable = False
        held = len(e.cells.cells)
        tier = TierView("gpu", size, codes, tuple(owners), used=0, cached_idle=held)
        offloaded = e.offloaded()
        version = (e.stored, e.removed, e.epochs, size, hit_rate)
        return NodeView(name=e.name, up=True, tiers=(tier,), running=(), waiting=(), hit_rate=hit_rate,
                        completed=0, evicted_total=e.removed, version=version,
                        cpu=(offloaded, offloaded) if offloaded else None)
