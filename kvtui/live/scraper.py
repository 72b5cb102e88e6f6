"""Scraping each engine's `/metrics` once a second, off the ingest loop.

An HTTP request may take up to its timeout, which the loop that drains the KV-event sockets (and,
in the app, draws frames) must not wait for; so one daemon thread scrapes every engine that has
a `metrics` URL in turn and queues what it read as `Scraped` deliveries, and the session hands
them on from its own thread, in order with the KV events, to the state and the recording. A
failed scrape is a delivery too (`EngineFigures(error=...)`), so an unreachable server shows.
"""

from __future__ import annotations

import queue
import threading
import time
import urllib.request
from collections.abc import Callable

from kvtui.live.delivery import Scraped
from kvtui.live.engines import Engine
from kvtui.live.metrics import EngineFigures, engine_figures

INTERVAL_S = 1.0
TIMEOUT_S = 0.8
MAX_BYTES = 4 << 20  # a /metrics page is tens of kB; more is not one


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
            self._thread.join(TIMEOUT_S + self.interval)


def scrape(url: str) -> EngineFigures:
    try:
        with urllib.request.urlopen(url, timeout=TIMEOUT_S) as response:
            text = response.read(MAX_BYTES).decode("utf-8", "replace")
    except (OSError, ValueError) as e:  # refused, timed out, HTTP error, a bad URL
        return EngineFigures(error=f"{type(e).__name__}: {e}"[:120])
    return engine_figures(text)
