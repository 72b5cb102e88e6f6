"""A live session: subscribers for every engine, feeding the state and (optionally) a recording.

The loop polls every subscriber's socket; each delivery goes to the recording first, then to
the state (and to a listener: the app's run), so what the session printed is what its recording replays to. Receive times come
from the injected clock (wall time by default): this is the boundary with the real world, not
the engine, so the determinism rule for the simulation does not apply here.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

import zmq

from kvtui.live.available import available_line
from kvtui.live.delivery import Delivery, Watching, ingest
from kvtui.live.engines import Engine
from kvtui.live.forensics import summary as forensics_summary
from kvtui.live.recording import Recorder
from kvtui.live.replay_request import REPLAY_DEADLINES
from kvtui.live.scraper import Scraper
from kvtui.live.state import LiveState
from kvtui.live.subscriber import Subscriber


class LiveSession:
    def __init__(self, engines: list[Engine], recorder: Recorder | None = None,
                 clock: Callable[[], float] = time.time, replay_timeout: float = 2.0,
                 listener: Callable[[Delivery], None] | None = None, state: LiveState | None = None,
                 expected: dict[str, int] | None = None):
        """`state` and `expected` (the seq each engine's subscriber starts from): where a
        standby taking over from etcd starts (kvtui/live/etcd_snapshot.py); a fresh state from 0 otherwise."""
        self.ctx = zmq.Context()
        self.state = state if state is not None else LiveState()
        self.recorder, self.listener = recorder, listener
        self.replay_timeout = replay_timeout
        self.lock = threading.Lock()  # route mode's threads read the state while this one feeds it
        ranks = [rank for e in engines for rank in e.ranks()]
        self.subscribers = [
            Subscriber(self.ctx, e.name, e.kv_events, e.replay, self.deliver, clock, replay_timeout)
            for e in ranks]
        for s in self.subscribers:
            s.expected = (expected or {}).get(s.name, 0)
        for e in ranks:
            self.deliver(Watching(e.name, clock()))
        for s in self.subscribers:
            s.catch_up()  # opens the request; its answer is read as the session polls
        self.scraper = Scraper(ranks, clock)
        self.sources: list = [self.scraper]  # more producers of deliveries (route mode's proxy)

    def deliver(self, delivery: Delivery) -> None:
        if self.recorder is not None:
            self.recorder.add(delivery)
        with self.lock:
            ingest(self.state, delivery)
        if self.listener is not None:  # the app's LiveRun, which keeps every delivery to move through
            self.listener(delivery)

    def poll(self, timeout: float) -> int:
        """Wait up to `timeout` seconds for messages (less when a replay request times out
        sooner); handle all that are ready. Returns how many. Never waits on a replay socket
        past `timeout`: its answer is read as it comes (kvtui/live/subscriber.py)."""
        poller = zmq.Poller()
        for s in self.subscribers:
            for sock in s.sockets():
                poller.register(sock, zmq.POLLIN)
        waits = [w for s in self.subscribers if (w := s.wait_s()) is not None]
        ready = dict(poller.poll(int(min([timeout, *waits]) * 1000)))
        n = sum(s.drain() for s in self.subscribers if s.asking is not None or any(k in ready for k in s.sockets()))
        for source in self.sources:
            for delivery in source.take():
                self.deliver(delivery)
                n += 1
        if n and self.recorder is not None:
            self.recorder.flush()
        return n

    def run_for(self, seconds: float, tick: float = 0.1) -> None:
        """Poll for `seconds`; then on while a replay request is still open, for at most one
        request's whole deadline more, so a headless run does not end with a gap's batches
        held (`close` counts what is still missing then as a gap)."""
        deadline = time.monotonic() + seconds
        while (left := deadline - time.monotonic()) > 0:
            self.poll(min(tick, left))
        deadline += REPLAY_DEADLINES * self.replay_timeout
        while self.replaying() and (left := deadline - time.monotonic()) > 0:
            self.poll(min(tick, left))

    def replaying(self) -> bool:
        return any(s.asking is not None for s in self.subscribers)

    def close(self) -> None:
        for source in self.sources:
            source.close()
        for s in self.subscribers:
            s.close()
        if self.recorder is not None:
            self.recorder.close()
        self.ctx.term()


def summary_lines(state: LiveState) -> list[str]:
    """One line per engine, in the order they were named: the figures `live` and `replay` print;
    then, when route mode served requests, the miss forensics table."""
    lines = [counts.line(name) for name, counts in state.counts.items()]
    return lines + (forensics_summary([s.forensics for s in state.served]) + _available(state) if state.served else [])


def _available(state: LiveState) -> list[str]:
    line = available_line(state.served)
    return [] if line is None else [line]
