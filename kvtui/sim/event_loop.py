"""The event loop a Simulation runs on: simpy in the pure-Python build, kvtui/sim/loop.py compiled.

simpy 4.1 (gitlab.com/team-simpy/simpy, simpy/core.py) is the discrete-event kernel kvtui was
specified on, and in the default (pure Python) install it runs the engine. kvtui/sim/loop.py is
its twin, written to simpy's ordering rules for exactly what the engine asks of a loop, so that
mypyc can compile it with the engine (kvtui/sim/compiled.py): the compiled build runs it, since
the compiled modules call its native classes directly and cannot take simpy's. Both give the
same events in the same order; tests/sim/test_loop.py runs tricky programs, random programs and
the shipped scenarios under both and compares them.

`KVTUI_LOOP=kvtui` runs the twin in the pure build too (the differential test and
benchmarks/engine_bench.py use it); in the compiled build the twin runs whatever it says.

The engine reaches the loop only through the `Environment` it is given: events are made by
`env.event()`, `env.timeout(d)`, `env.process(g)` and `a | b`, and what a process catches when
interrupted is either loop's `Interrupt` (`INTERRUPTS`).
"""

from __future__ import annotations

import os
from typing import Callable, cast

import simpy

from kvtui.sim import compiled, loop

INTERRUPTS = (simpy.Interrupt, loop.Interrupt)
"""What a process catches when it is interrupted, whichever loop threw it."""


class SimpyEnvironment(simpy.Environment):
    """simpy's Environment with the three calls kvtui's loop adds, written with simpy's own
    `step()` and `timeout()`: nothing of its ordering is changed."""

    def run_through(self, limit: float, most: int) -> int:
        """Process events while the next is at or before `limit`, at most `most`; how many."""
        queue = self._queue  # simpy's heap of (time, priority, id, event), as `peek()` reads it
        step = self.step
        done = 0
        while done < most and queue and queue[0][0] <= limit:
            step()
            done += 1
        return done

    def pending(self) -> int:
        """Events in simpy's queue, as kvtui's loop counts them (the Raft group asks whether
        anything but its own ticks is left)."""
        return len(self._queue)

    def call_later(self, delay: float, callback: Callable[[simpy.Event], None]) -> simpy.Timeout:
        """A timeout `delay` from now whose one callback is `callback`."""
        timer = self.timeout(delay)
        timer.callbacks.append(callback)  # type: ignore[union-attr]  # just made: not processed
        return timer


def chosen() -> str:
    """"simpy" or "kvtui": the loop a Simulation made now runs on."""
    if compiled.build == "compiled":
        return "kvtui"
    return "kvtui" if os.environ.get("KVTUI_LOOP") == "kvtui" else "simpy"


def environment() -> loop.Environment:
    """A new clock and queue of the chosen loop. Typed as kvtui's: simpy's has the same calls
    (the differential test holds both to the same behaviour)."""
    if chosen() == "kvtui":
        return loop.Environment()
    return cast(loop.Environment, SimpyEnvironment())
