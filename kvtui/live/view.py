"""The read-only views (kvtui/views.py) of real engines, built from what their KV events said.

What KV events cannot tell is left out rather than made up: a held block is drawn *cached*
(vLLM publishes BlockStored when a full block enters its prefix cache, whether a request still
uses it or not, and nothing when a request lets go of it), there are no running or waiting
requests in the map (the engines table shows the counts the engine's `/metrics` gives), and the
map is as wide as the engine's GPU block count when its metrics say it, else as the most blocks
it was ever seen holding.
Only the GPU tier is drawn; blocks on any other medium (vLLM's CPU and STORAGE, SGLang's
CPU_PINNED, DISK and EXTERNAL) are counted in the engines table.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from kvtui.live.metrics import EngineFigures
from kvtui.live.state import LiveState
from kvtui.live.wire import MEDIUMS
from kvtui.views import CACHED, ClusterView, NodeView, TierView


def cluster_view(state: LiveState, now: float, position: int) -> ClusterView:
    nodes = tuple(node_view(state, name, _capacity(state, name)) for name in state.counts)
    return ClusterView(nodes=nodes, now=now, position=position)


def node_view(state: LiveState, name: str, capacity: int | None) -> NodeView:
    counts, cells = state.counts[name], state.blocks[name].gpu_cells
    size = max(capacity or 0, cells.high, 1)
    codes = np.zeros(size, dtype=np.int8)
    owners = [""] * size
    for cell, owner in cells.cells.values():
        codes[cell] = CACHED
        owners[cell] = owner
    codes.flags.writeable = False
    held = len(cells.cells)
    tier = TierView("gpu", size, codes, tuple(owners), used=0, cached_idle=held)
    version = (counts.batches, counts.stored, counts.removed, counts.cleared, size)
    return NodeView(name=name, up=True, tiers=(tier,), running=(), waiting=(), hit_rate=None,
                    completed=0, evicted_total=counts.removed, version=version)



@dataclass(frozen=True, slots=True)
class EngineRow:
    """One engine's line in the live app's engines table."""

    name: str
    gpu: int  # blocks held now on the GPU
    offloaded: int  # ... on CPU and STORAGE
    stored: int
    removed: int
    batches: int
    gaps: int
    replayed: int
    malformed: int
    orphans: int
    figures: EngineFigures | None  # its last scrape of /metrics (None: no `metrics` URL, or not yet)
    epochs: int = 1
    fresh_at: float | None = None  # when its /metrics last read well


def engine_rows(state: LiveState) -> list[EngineRow]:
    return [EngineRow(name, state.held(name), sum(state.held(name, m) for m in MEDIUMS if m != "GPU"),
                      c.stored, c.removed, c.batches, c.gaps, c.replayed, c.malformed, c.orphans, state.figures.get(name),
                      c.epochs, state.fresh_at.get(name))
            for name, c in state.counts.items()]


def _capacity(state: LiveState, name: str) -> int | None:
    figures = state.figures.get(name)
    return None if figures is None else figures.num_gpu_blocks


def index_figures(state: LiveState) -> tuple[int, int]:
    """Keys in the global index, and how many of them more than one engine holds."""
    return len(state.index), sum(1 for holders in state.index.values() if len({e for e, _ in holders}) > 1)
