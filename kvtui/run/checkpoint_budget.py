"""A byte budget for time travel's checkpoints (issue 25).

A checkpoint is a whole paused simulation (drive.py): on scenarios/mooncake.yaml each one held
about 110 MB near the end of the run, and the app reached ~1 GB after a full play and 100 steps
back (2.3 GB in one session). Counting checkpoints cannot bound that, since their size grows with
the run, so the budget is in bytes: the process's resident memory, read from the kernel after
each checkpoint is kept. Over the budget, `Drive` drops checkpoints farthest from the current
position first, so the ladder just below it (what consecutive steps back consume) goes last,
and builds no new ones until memory is back under. Which checkpoints exist only decides how far
a step back replays, never what the run does: the events stay the same (determinism).

Resident memory rather than an estimate per run: the runs share interned strings and the
scenario, and the allocator keeps freed pages, so only the kernel's figure says what the user's
machine pays. After dropping, `release_freed` asks glibc to give free pages back (malloc_trim),
so the figure can fall again.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import gc
import os
from dataclasses import dataclass, field
from typing import Callable

FLOOR_BYTES = 192 * 2**20  # leaves room for one replay beside the run: under 300 MB at peak (tui_bench --memory)
SHARE_OF_MEMORY = 8  # the budget is 1/8 of the machine's physical memory, never below the floor


def physical_memory() -> int | None:
    """The machine's physical memory in bytes (POSIX sysconf), or None where it cannot be read."""
    try:
        return os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, AttributeError):
        return None


def default_budget_bytes(physical: int | None = None) -> int:
    """The budget scales with the machine: 1/8 of its memory (3 GB on a 24 GB machine, 1 GB on
    8 GB), at least 192 MB. A checkpoint near mooncake.yaml's end holds ~110 MB, and a step back
    within 0.5 s needs one within a few thousand events below it (benchmarks/back_bench.py)."""
    total = physical_memory() if physical is None else physical
    return max(FLOOR_BYTES, (total or 0) // SHARE_OF_MEMORY)


def process_memory() -> int | None:
    """This process's resident set in bytes (Linux /proc), or None where it cannot be read."""
    try:
        with open("/proc/self/statm", "rb") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return None


def release_freed() -> None:
    """Collect dropped runs (the event loop keeps them in reference cycles) and hand free pages back.

    The app freezes its heap now and then to keep collections short (tui/app.py): a frozen run
    would never be collected, so the heap is unfrozen first (the app freezes it again later)."""
    gc.unfreeze()
    gc.collect()
    name = ctypes.util.find_library("c")
    libc = ctypes.CDLL(name) if name else None
    trim = getattr(libc, "malloc_trim", None)
    if trim is not None:
        trim(0)


@dataclass
class CheckpointBudget:
    """At most `limit_bytes` of process memory before checkpoints are dropped (None: no limit,
    as where memory cannot be measured)."""

    limit_bytes: int | None = field(default_factory=default_budget_bytes)
    measure: Callable[[], int | None] = process_memory
    dropped: int = 0  # checkpoints dropped for memory (reported by the benchmark)

    def over(self) -> bool:
        if self.limit_bytes is None:
            return False
        used = self.measure()
        return used is not None and used > self.limit_bytes
