"""The event bus: numbers events, stamps them with sim time, hands them to listeners."""

from __future__ import annotations

from collections import deque
from typing import Callable

import simpy

from kvtui.events import Event

Listener = Callable[[Event], None]


class Bus:
    """Numbers events, stamps them with sim time, and hands them to every listener at once.

    Listeners inside the engine (KV index, metrics, store) see each event the moment it
    happens, so routing never depends on how a consumer paces the stream. A listener may ask
    for only some event types; the bus then skips it for the rest (most events are KV events,
    which the metrics do not need).
    """

    def __init__(self, env: simpy.Environment):
        self.env = env
        self.seq = 0
        self._all: list[Listener] = []
        self._typed: list[tuple[Listener, tuple[type[Event], ...]]] = []
        self._route: dict[type[Event], list[Listener]] = {}
        self.outbox: deque[Event] = deque()
        self.keep_outbox = False

    def listen(self, fn: Listener, types: tuple[type[Event], ...] | None = None) -> None:
        if types is None:
            self._all.append(fn)
        else:
            self._typed.append((fn, types))
        self._route.clear()

    def _listeners(self, cls: type[Event]) -> list[Listener]:
        found = self._route.get(cls)
        if found is None:
            found = [fn for fn, types in self._typed if issubclass(cls, types)] + self._all
            self._route[cls] = found
        return found

    def listened(self, cls: type[Event]) -> bool:
        """Whether an event of `cls` would reach anyone (a listener, or `step()`'s outbox)."""
        return self.keep_outbox or bool(self._route.get(cls) or self._listeners(cls))

    def skip(self) -> None:
        """Count an event nobody listens to without building it: the numbering of every later
        event stays what it is when someone does listen (so digests do not depend on who)."""
        self.seq += 1

    def emit(self, cls: type[Event], **fields) -> Event:
        self.seq += 1
        ev = cls(seq=self.seq, t=self.env.now, **fields)
        for fn in self._route.get(cls) or self._listeners(cls):
            fn(ev)
        if self.keep_outbox:
            self.outbox.append(ev)
        return ev
