"""Scraping each engine's `/metrics` once a second, off the ingest loop.

An HTTP request may take up to its timeout, which the loop that drains the KV-event sockets (and,
in the app, draws frames) must not wait for; so one daemon thread scrapes every engine that has
a `metrics` URL in turn and queues what it read as `Scraped` deliveries, and the session hands
them on from its own thread, in order with the KV events, to the state and the recording. A
failed scrape is a delivery too (`EngineFigures(error=...)`), so an unreachable server shows,
and the app says since when the figures are stale (`LiveState.fresh_at`).

Every scrape has a deadline (DEADLINE_S for the whole page, not only per read: a server that
trickles a byte at a time is cut off), a page is read up to MAX_BYTES, and nothing a server
sends can end the thread: whatever goes wrong is that scrape's error.
"""

from __future__ import annotations

import http.client
import queue
import socket
import threading
import time
import urllib.parse
from collections.abc import Callable

from kvtui.live.delivery import Scraped
from kvtui.live.engines import Engine
from kvtui.live.metrics import EngineFigures, engine_figures

INTERVAL_S = 1.0
TIMEOUT_S = 0.8
DEADLINE_S = 2.0  # a whole scrape, connection to last byte
MAX_BYTES = 4 << 20  # a /metrics page is tens of kB; more is not one
CHUNK = 64 << 10


class Scraper:
    def __init__(self, engines: list[Engine], clock: Callable[[], float] = time.time,
                 interval: float = INTERVAL_S):
        self.targets = [(e.name, e.metrics) for e in engines if e.metrics]
        self.clock, self.interval = clock, interval
        self.ready: queue.Queue[Scraped] = queue.Queue()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="kvtui-metrics", daemon=True)
        if self.targets:
            self._thread.start()

    def _loop(self) -> None:
        while not self._stop.is_set():
            for name, url in self.targets:
                if self._stop.is_set():
                    return
                self.ready.put(Scraped(name, self.clock(), scrape(url)))
            self._stop.wait(self.interval)

    def take(self) -> list[Scraped]:
        """What was scraped since the last call, oldest first."""
        out = []
        while True:
            try:
                out.append(self.ready.get_nowait())
            except queue.Empty:
                return out

    def close(self) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(DEADLINE_S + TIMEOUT_S + self.interval)


def scrape(url: str, deadline_s: float = DEADLINE_S) -> EngineFigures:
    """One scrape of `url`; an error figure for whatever goes wrong, never an exception."""
    try:
        return engine_figures(_page(url, deadline_s).decode("utf-8", "replace"))
    except Exception as e:  # noqa: BLE001 - the scraper thread must outlive any server
        return EngineFigures(error=f"{type(e).__name__}: {e}"[:120])


class Slow(Exception):
    """The page did not arrive within its deadline."""


def _page(url: str, deadline_s: float) -> bytes:
    """The body of `url`, within `deadline_s` in all: a watchdog shuts the socket down at the
    deadline, so a server that trickles its headers or its body a byte at a time (each read
    within the socket timeout) cannot hold the scrape past it."""
    parts = urllib.parse.urlsplit(url)
    kind = http.client.HTTPSConnection if parts.scheme == "https" else http.client.HTTPConnection
    conn = kind(parts.hostname or "", parts.port, timeout=TIMEOUT_S)
    deadline = time.monotonic() + deadline_s
    timer = None
    body = bytearray()
    try:
        conn.connect()
        timer = threading.Timer(max(0.0, deadline - time.monotonic()), _cut, (conn.sock,))
        timer.start()  # the socket itself: http.client lets go of it once the response holds it
        conn.request("GET", (parts.path or "/") + (f"?{parts.query}" if parts.query else ""))
        response = conn.getresponse()
        if response.status != 200:
            raise OSError(f"HTTP {response.status} {response.reason}"[:80])
        while len(body) < MAX_BYTES and (chunk := response.read1(CHUNK)):
            body += chunk
    except (OSError, http.client.HTTPException):
        if time.monotonic() >= deadline:
            raise Slow(f"no whole page within {deadline_s:g} s ({len(body):,} bytes came)") from None
        raise
    finally:
        if timer is not None:
            timer.cancel()
        conn.close()
    if time.monotonic() >= deadline:  # cut off: what came is not the whole page
        raise Slow(f"no whole page within {deadline_s:g} s ({len(body):,} bytes came)")
    return bytes(body[:MAX_BYTES])


def _cut(sock: socket.socket) -> None:
    try:
        sock.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass
