"""Where a real engine's blocks are drawn: one cell per block it holds on the GPU.

KV events name blocks by hash, never by their index in the engine's pool (vLLM 0.33.0
`vllm/distributed/kv_events.py` `BlockStored` has no block id), so the map cannot show the
engine's own layout. It shows the next best thing, stable and deterministic: a stored block
takes the lowest free cell and keeps it until it is removed, so a cell that empties and refills
is a block evicted and another stored, as in the simulator's map. The owner of a cell is the
first block of its chain (its prefix), so blocks of one shared prefix share a colour.
"""

from __future__ import annotations

import heapq

UNKNOWN_OWNER = "?"  # a block whose parent was never seen (joined late, or a gap)


class SlotMap:
    """Engine hash -> (cell, owner), lowest free cell first; `high` is the most cells ever used."""

    def __init__(self) -> None:
        self.cells: dict[object, tuple[int, str]] = {}
        self._free: list[int] = []
        self.high = 0

    def place(self, engine_hash, owner: str) -> None:
        if engine_hash in self.cells:
            return  # stored again while held (a second medium's event, a replayed batch)
        cell = heapq.heappop(self._free) if self._free else self._grow()
        self.cells[engine_hash] = (cell, owner)

    def _grow(self) -> int:
        self.high += 1
        return self.high - 1

    def free(self, engine_hash) -> None:
        held = self.cells.pop(engine_hash, None)
        if held is not None:
            heapq.heappush(self._free, held[0])

    def clear(self) -> None:
        self.cells.clear()
        self._free = list(range(self.high))

    def owner_of(self, engine_hash) -> str | None:
        held = self.cells.get(engine_hash)
        return None if held is None else held[1]
