"""The event bus: numbers events, stamps them with sim time, hands them to listeners."""

from __future__ import annotations

from collections import deque
from typing import Any, Callable

from kvtui.sim import loop

from kvtui.events import Event

Listener = Callable[[Event], None]
Direct = Callable[..., None]  # an event's fields after seq and t, positionally


_UNSET: Any = object()  # "not composed yet" in Bus._direct, where None means "build the event"


def _nobody(*_fields) -> None:
    """The direct path of an event nobody listens to."""


def _all_of(handlers: list[Direct]) -> Direct:
    def each(*fields) -> None:
        for h in handlers:
            h(*fields)

    return each


class Bus:
    """Numbers events, stamps them with sim time, and hands them to every listener at once.

    Listeners inside the engine (KV index, metrics, store) see each event the moment it
    happens, so routing never depends on how a consumer paces the stream. A listener may ask
    for only some event types; the bus then skips it for the rest (most events are KV events,
    which the metrics do not need).

    The direct path: a listener may also give, per event type, a handler taking the event's
    fields positionally. When every listener of a type has one (and nobody keeps the outbox),
    `direct(cls)` returns them composed, and `publish` calls that instead of building an event
    object — the KV events are ~30 a request, and in a headless run only the router's index and
    the eviction counter hear them. The event is still numbered (`seq` counts it, and a handler
    that needs the object builds it from `seq` and `env.now`), so the stream is the same either
    way; the first listener without a direct handler (the app's journal, a digest, a test)
    turns the path off for that type.
    """

    def __init__(self, env: loop.Environment):
        self.env = env
        self.seq = 0
        self._all: list[Listener] = []
        self._typed: list[tuple[Listener, tuple[type[Event], ...]]] = []
        self._route: dict[type[Event], list[Listener]] = {}
        self._direct_of: dict[Listener, dict[type[Event], Direct]] = {}
        self._direct: dict[type[Event], Direct | None] = {}
        self.outbox: deque[Event] = deque()
        self.keep_outbox = False

    def listen(
        self,
        fn: Listener,
        types: tuple[type[Event], ...] | None = None,
        direct: dict[type[Event], Direct] | None = None,
    ) -> None:
        if types is None:
            self._all.append(fn)
        else:
            self._typed.append((fn, types))
        if direct:
            self._direct_of[fn] = direct
        self._route.clear()
        self._direct.clear()

    def direct(self, cls: type[Event]) -> Direct | None:
        """The composed direct handlers of `cls`, or None when it must be built and emitted."""
        if self.keep_outbox:
            return None
        found = self._direct.get(cls, _UNSET)
        if found is _UNSET:
            found = self._direct[cls] = self._compose(cls)
        return found

    def _compose(self, cls: type[Event]) -> Direct | None:
        found = [self._direct_of.get(fn, {}).get(cls) for fn in self._listeners(cls)]
        handlers = [h for h in found if h is not None]
        if len(handlers) < len(found):
            return None
        if not handlers:
            return _nobody
        return handlers[0] if len(handlers) == 1 else _all_of(handlers)

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

    def emit(self, cls: type[Event], **fields) -> None:
        """Number the event and hand it to its listeners; an event nobody hears (no listener of
        its type, no outbox) is numbered and never built: in a headless run that is every
        `RequestScheduled` and `FirstToken`, two of a request's ~7 emitted events."""
        self.seq += 1
        listeners = self._route.get(cls)
        if listeners is None:
            listeners = self._listeners(cls)
        if listeners or self.keep_outbox:
            self._deliver(cls, cls(seq=self.seq, t=self.env.now, **fields))

    def publish(self, cls: type[Event], *fields) -> None:
        """`emit` with the fields positionally (in the event's order, after seq and t), by the
        direct path when every listener has one: for events on the hot path."""
        self.seq += 1
        direct = self.direct(cls)
        if direct is not None:
            direct(*fields)
        else:
            self._deliver(cls, cls(self.seq, self.env.now, *fields))

    def _deliver(self, cls: type[Event], ev: Event) -> None:
        for fn in self._route.get(cls) or self._listeners(cls):
            fn(ev)
        if self.keep_outbox:
            self.outbox.append(ev)
