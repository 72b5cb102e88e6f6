"""simpy's twin: simpy's ordering, for exactly what kvtui asks of it, in code mypyc compiles.

Issue 23 step 3, issue 35. simpy 4.1.2 (gitlab.com/team-simpy/simpy: simpy/core.py,
simpy/events.py, read as installed from PyPI) runs the engine in the pure-Python build
(kvtui/sim/event_loop.py). Its general machinery (failure copies, condition values, property
lookups, `BoundClass` indirection) costs more per event than kvtui needs, and the compiled build
cannot call it natively; so the compiled build runs this loop instead. It keeps simpy's
observable semantics, so every run processes the same events in the same order under either,
and every digest is the same:

- The queue is a heap of `(time, priority, id, event)`: earlier time first, then `URGENT`
  before `NORMAL`, then the order in which events were scheduled (one id per schedule, counted
  from 0 like simpy's `Environment._eid`).
- An event is scheduled when it is triggered (`succeed`), a `Timeout` when it is made (NORMAL,
  at now + delay), a process's start when the process is made (URGENT, now), an interrupt when
  it is asked for (URGENT, now), a process's end when its generator returns (NORMAL, now, the
  return value as its value), a condition `a | b` when the first of its events is processed.
- Processing an event pops it, sets `now` to its time, and calls its callbacks in the order
  they were added; an event whose waiters have gone (a timeout that lost an `a | b`) is still
  popped and still moves `now`, as in simpy (a run's end time depends on it).
- `run(until=t)` puts an URGENT stop at t and processes events up to it (the stop then stays
  queued, first at t, as simpy leaves it); `run()` processes events until none is left;
  `peek()` is the time
  of the next event or infinity; `step()` processes one event; `run_through(t, n)` is `step()`
  while `peek() <= t`, at most n times.

What it leaves out, because kvtui never uses it: `fail()`, `AllOf`, the value of a condition
(kvtui waits on `a | b` only to wake up; the value sent into the process is None), a process
failing (an exception raised in a process propagates out of `step()` at once, where simpy
would schedule the failed process and raise when it is processed: either way the run is
over), `StopSimulation`, and `run(until=event)`.
tests/sim/test_loop.py runs tricky orderings under both this loop and simpy and compares them.
"""

from __future__ import annotations

from heapq import heappop, heappush
from itertools import count
from typing import Any, Callable, Generator

URGENT = 0
"""Processes starting and interrupts: before any NORMAL event at the same time (simpy's URGENT)."""
NORMAL = 1
"""Every other event (simpy's NORMAL)."""

STOPPED = -1
"""A `run(until)` stop once reached: first of all at its time (simpy re-queues it so)."""

INFINITY = float("inf")

PENDING: Any = object()
"""The value of an event not triggered yet."""

Callback = Callable[["Event"], None]
Time = int | float
"""The clock's type: int until a float delay moves it, as in simpy (events print `t=0`). Never
`float` alone, which a compiled reader would turn into 0.0."""


class EmptySchedule(Exception):
    """`step()` with nothing scheduled."""


class Interrupt(Exception):
    """Thrown into a process by `Process.interrupt(cause)`."""

    @property
    def cause(self) -> Any:
        return self.args[0]


class Event:
    """Something that will happen: processes wait on it by yielding it; `callbacks` run when
    it is processed (then the list becomes None)."""

    __slots__ = ("env", "callbacks", "_value", "_ok")

    def __init__(self, env: Environment):
        self.env = env
        self.callbacks: list[Callback] | None = []  # None once processed
        self._value: Any = PENDING
        self._ok = True

    @property
    def triggered(self) -> bool:
        return self._value is not PENDING

    @property
    def processed(self) -> bool:
        return self.callbacks is None

    @property
    def ok(self) -> bool:
        return self._ok

    @property
    def value(self) -> Any:
        if self._value is PENDING:
            raise AttributeError(f"the value of {self!r} is not available yet")
        return self._value

    def succeed(self, value: Any = None) -> Event:
        if self._value is not PENDING:
            raise RuntimeError(f"{self!r} has already been triggered")
        self._value = value
        env = self.env
        heappush(env._queue, (env.now, NORMAL, next(env._ids), self))
        return self

    def __or__(self, other: Event) -> Event:
        return AnyOf(self.env, (self, other))


class Timeout(Event):
    """An event that happens `delay` after it is made."""

    __slots__ = ()

    def __init__(self, env: Environment, delay: Time, value: Any = None):
        if delay < 0:
            raise ValueError(f"negative delay {delay}")
        self.env = env
        self.callbacks = []
        self._value = value
        self._ok = True
        heappush(env._queue, (env.now + delay, NORMAL, next(env._ids), self))


class AnyOf(Event):
    """`a | b`: happens (is scheduled) when the first of its events is processed; an event
    already processed when the condition is made counts at once, as in simpy."""

    __slots__ = ()

    def __init__(self, env: Environment, events: tuple[Event, ...]):
        self.env = env
        self.callbacks = []
        self._value = PENDING
        self._ok = True
        for event in events:
            if event.callbacks is None:
                self._check(event)
            else:
                event.callbacks.append(self._check)

    def _check(self, _event: Event) -> None:
        if self._value is PENDING:
            self._value = None
            env = self.env
            heappush(env._queue, (env.now, NORMAL, next(env._ids), self))


class Process(Event):
    """Runs a generator: each event it yields suspends it until that event is processed, whose
    value is sent back in. The process is itself an event, triggered with the generator's
    return value when it returns."""

    __slots__ = ("_generator", "_target", "_resume_cb")

    def __init__(self, env: Environment, generator: Generator[Event, Any, Any]):
        super().__init__(env)
        self._generator = generator
        self._resume_cb: Callback = self._resume
        start = Event(env)
        start._value = None
        start.callbacks = [self._resume_cb]
        env.schedule(start, URGENT)
        self._target: Event | None = start

    @property
    def is_alive(self) -> bool:
        return self._value is PENDING

    def interrupt(self, cause: Any = None) -> None:
        """Throw `Interrupt(cause)` into the process, URGENT at the present time."""
        if self._value is not PENDING:
            raise RuntimeError(f"{self!r} has ended and cannot be interrupted")
        if self is self.env.active_process:
            raise RuntimeError("a process cannot interrupt itself")
        interruption = Event(self.env)
        interruption._ok = False
        interruption._value = Interrupt(cause)
        interruption.callbacks = [self._interrupted]
        self.env.schedule(interruption, URGENT)

    def _interrupted(self, interruption: Event) -> None:
        if self._value is not PENDING:  # ended before the interrupt came: nothing to throw into
            return
        target = self._target
        if target is not None and target.callbacks is not None:
            target.callbacks.remove(self._resume_cb)
        self._resume(interruption)

    def _resume(self, event: Event) -> None:
        env = self.env
        env.active_process = self
        generator = self._generator
        while True:
            try:
                if event._ok:
                    event = generator.send(event._value)
                else:
                    event = generator.throw(Interrupt(*event._value.args))
            except StopIteration as stop:
                self._value = stop.value
                env.schedule(self, NORMAL)
                self._target = None
                break
            callbacks = event.callbacks
            if callbacks is not None:
                callbacks.append(self._resume_cb)
                self._target = event
                break
        env.active_process = None


class Environment:
    """The clock and the queue of scheduled events."""

    def __init__(self) -> None:
        self.now: Time = 0
        self._queue: list[tuple[Time, int, int, Event]] = []
        self._ids = count()
        self.active_process: Process | None = None

    # The three ways the engine makes events, as simpy's Environment names them (its BoundClass
    # attributes): methods, which the compiled build calls natively.
    def event(self) -> Event:
        return Event(self)

    def timeout(self, delay: Time, value: Any = None) -> Timeout:
        return Timeout(self, delay, value)

    def process(self, generator: Generator[Event, Any, Any]) -> Process:
        return Process(self, generator)

    def schedule(self, event: Event, priority: int = NORMAL, delay: Time = 0) -> None:
        heappush(self._queue, (self.now + delay, priority, next(self._ids), event))

    def call_later(self, delay: Time, callback: Callback) -> Timeout:
        """A timeout `delay` from now whose one callback is `callback`: what a component that
        is not a process waits on."""
        timer = Timeout(self, delay)
        timer.callbacks = [callback]
        return timer

    def pending(self) -> int:
        """Events in the queue (a component that keeps ticking asks whether anything else is left)."""
        return len(self._queue)

    def peek(self) -> Time:
        queue = self._queue
        return queue[0][0] if queue else INFINITY

    def step(self) -> None:
        """Process the next event: move the clock to it and call its callbacks."""
        if not self.run_through(INFINITY, 1):
            raise EmptySchedule

    def run_through(self, limit: float, most: int) -> int:
        """Process events while the next is at or before `limit`, at most `most` of them; how
        many. `step()` one at a time, in one call: a headless run's loop without a Python call
        and a `peek()` per event."""
        queue = self._queue
        done = 0
        while done < most and queue and queue[0][0] <= limit:
            self.now, _, _, event = heappop(queue)
            callbacks: list[Callback] = event.callbacks  # type: ignore[assignment]  # queued: not processed yet
            event.callbacks = None
            for callback in callbacks:
                callback(event)
            done += 1
        return done

    def run(self, until: Time | None = None) -> None:
        """Process every event before `until` (and those at `until` scheduled URGENT before the
        stop), then move the clock to the stop. The stop is scheduled, as in simpy, at
        now + (until - now), which in floating point is not always `until` itself; and, as in
        simpy, once reached it is queued again ahead of everything at that time (priority -1,
        no callbacks), so `peek()` is then `until` and the next `step()` only pops it. Without
        `until`, every event until none is left (the tests that drive a workload alone)."""
        if until is None:
            while self._queue:
                self.step()
            return
        if until <= self.now:
            raise ValueError(f"until ({until}) must be greater than the current time ({self.now})")
        stop = Event(self)
        stop._value = None
        self.schedule(stop, URGENT, until - self.now)
        queue = self._queue
        while queue[0][3] is not stop:
            self.step()
        self.now = heappop(queue)[0]
        self.schedule(stop, STOPPED)
