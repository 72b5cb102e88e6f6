"""A live session or a recording as a run source (kvtui/run/source.py), like the simulation.

What real engines send (deliveries, kvtui/live/delivery.py) becomes the project's events as it
arrives (kvtui/live/translate.py); from there on nothing differs from a simulated run: the same
`Journal` (decision log, event log, request lives, block provenance), `Metrics` (TTFT / TPOT /
E2E from the proxy's measurements, hit rates), narration (kvtui/run/narrate.py) and views (the
block maps: kvtui/live/view.py, fed by the same events; the router's belief against the
engines: kvtui/run/belief.py). Position N is the event numbered N.

Moving: the picture at position p is the events up to p fed into a fresh journal, metrics and
engines picture, from the nearest checkpoint (a copy of the three every CHECKPOINT_EVERY
events, thinned as a session grows: see `_thin`). Live, new events are appended as they arrive
and, while following, the position keeps up with them; stepping, going back or seeking stops
following, and `follow` (play, or End) resumes it. A recording opened by `kvtui replay` plays
on its own clock: `advance` moves through the events received by a time.

A live session's history is capped, as the simulation app's checkpoints are budgeted: past
HISTORY_KEPT events or HISTORY_BYTES of their frames, the older half is dropped at a
checkpoint (the first position one can go back to); `dropped` counts what went, and the status
line says so. A recording is all in memory already and keeps its whole history.

What a real cluster cannot be asked (take a node down, crash the control plane, restart the
run under another policy) is switched off: `capabilities` is empty.
"""

from __future__ import annotations

import copy
from array import array
from bisect import bisect_right
from collections.abc import Iterable, Sequence
from typing import Callable, cast

from kvtui.events import EngineWatched, Event
from kvtui.live.delivery import Delivery
from kvtui.live.translate import Translator
from kvtui.live.view import EnginesPicture
from kvtui.run.belief import BeliefView, RoutedTally, live_belief
from kvtui.run.journal import Journal
from kvtui.run.source import Navigable
from kvtui.sim.metrics import METRICS_EVENT_TYPES, Metrics
from kvtui.sim.view import figures_of
from kvtui.views import BlockView, ClusterView, KeyFigures

CHECKPOINT_EVERY = 256  # events between copies of the picture, at first
MAX_CHECKPOINTS = 64
HISTORY_KEPT = 200_000  # events a live session keeps to move through
HISTORY_BYTES = 64 << 20  # ... and of the frames that made them
EVENT_BYTES = 200  # what an event costs besides its frames (the objects themselves)


class _Picture:
    """What one position shows: the journal, the metrics and the engines, fed the same events."""

    def __init__(self) -> None:
        self.journal, self.metrics, self.engines = Journal(), Metrics(), EnginesPicture()
        self.routed = RoutedTally()

    def feed(self, ev: Event) -> None:
        self.journal.on_event(ev)
        self.routed.on_event(ev)
        if isinstance(ev, METRICS_EVENT_TYPES):
            self.metrics.on_event(ev)
        elif isinstance(ev, EngineWatched):
            self.metrics.set_nodes([ev.node])
        self.engines.on_event(ev)


class LiveFacts:
    """Narration's facts of real engines: what their events and /metrics said."""

    def __init__(self, source: "LiveSource"):
        self.source = source
        self.block_size = source.translator.block_size

    def capacity(self, node: str) -> int | None:
        return self.source.picture.engines.capacity(node)

    def has_cpu_tier(self, node: str) -> bool:
        e = self.source.picture.engines.engines.get(node)
        return e is not None and e.offloaded() > 0

    def prefill_seconds(self, node: str, tokens: int, cached_tokens: int) -> float | None:
        return None  # no latency model of a real engine here

    def metrics(self) -> Metrics:
        return self.source.metrics


class LiveSource(Navigable):
    capabilities: frozenset[str] = frozenset()

    def __init__(self, deliveries: Sequence[Delivery] = (), live: bool = False, kept: int = HISTORY_KEPT,
                 kept_bytes: int = HISTORY_BYTES, pull: Callable[[], object] | None = None):
        self.translator = Translator()
        self.events: list[Event] = []  # those kept: positions first + 1 .. end
        self._times = array("d")
        self._costs: list[int] = []
        self._live = live  # more may arrive (a session), or this is all there is (a recording)
        self._following = live
        self._pull = pull  # takes in what has arrived (a session's poll)
        self.picture = _Picture()
        self._position = 0
        self.first = 0  # the position before events[0]: what came before was dropped
        self.dropped = 0
        self._clock = 0.0  # a recording played on its own clock (`advance`)
        self._checkpoints: dict[int, _Picture] = {0: _Picture()}
        self._every = CHECKPOINT_EVERY
        self._kept, self._kept_bytes, self._bytes = kept, kept_bytes, 0
        self._seek_origin: int | None = None
        for d in deliveries:
            self.receive(d)

    # ------------------------------------------------------------------ arriving
    def receive(self, delivery: Delivery) -> None:
        """A new delivery, as its events; the picture moves to them only while following."""
        evs = self.translator.events(delivery)
        cost = sum(map(len, getattr(delivery, "frames", ())))
        for ev in evs:
            self.events.append(ev)
            self._times.append(ev.t)
            self._costs.append(EVENT_BYTES + cost)
            self._bytes += EVENT_BYTES + cost
            cost = 0
        if self._following:
            self._forward(self.end)
        if self._live and (len(self.events) > self._kept or self._bytes > self._kept_bytes):
            self._drop_older_half()

    def _drop_older_half(self) -> None:
        """Drop the older half of what is kept, at a checkpoint (the new first position one
        can go back to); a picture standing before it moves up to it."""
        middle = self.first + len(self.events) // 2
        base = max((p for p in self._checkpoints if p <= middle), default=self.first)
        if base <= self.first:
            return
        if self._position < base:
            self._forward(base)
        n = base - self.first
        self._bytes -= sum(self._costs[:n])
        del self.events[:n], self._times[:n], self._costs[:n]
        self.dropped += n
        self.first = base
        self._checkpoints = {p: c for p, c in self._checkpoints.items() if p >= base}

    def takes_from(self, poll: Callable[[], object]) -> None:
        """Where `pull` takes new deliveries from (a session's poll, which hands them to `receive`)."""
        self._pull = poll

    def pull(self) -> None:
        if self._pull is not None:
            self._pull()

    # ------------------------------------------------------------------ reading
    @property
    def live(self) -> bool:
        return self._live

    @property
    def end(self) -> int:
        """The position of the newest event."""
        return self.first + len(self.events)

    @property
    def journal(self) -> Journal:
        return self.picture.journal

    @property
    def metrics(self) -> Metrics:
        return self.picture.metrics

    @property
    def position(self) -> int:
        return self._position

    @property
    def last(self) -> Event | None:
        return self.events[self._position - self.first - 1] if self._position > self.first else None

    @property
    def now(self) -> float:
        last = self.last
        return max(self._clock, last.t if last is not None else (self._times[0] if self.dropped else 0.0))

    @property
    def span(self) -> float:
        return self._times[-1] if len(self._times) else 0.0

    @property
    def times(self) -> Sequence[float]:
        return self._times

    @property
    def ended(self) -> bool:
        return not self._live and self._position == self.end

    @property
    def seek_origin(self) -> int | None:
        return self._seek_origin

    @property
    def control_plane_down(self) -> bool:
        return False

    def view(self) -> ClusterView:
        return self.picture.engines.cluster_view(self.now, self._position, self.journal.hit_rate)

    def block(self, node: str, index: int) -> BlockView | None:
        e = self.picture.engines.engines.get(node)
        if e is None:
            return None
        found = next(((k, owner) for k, (cell, owner) in e.cells.cells.items() if cell == index), None)
        key, group = (None, "") if found is None else (cast(int, found[0]), found[1])  # the cells hold keys here
        known = None if key is None else self.journal.provenance(node, key)
        parent = known[0] if known else None
        return BlockView(node, index, "gpu", "free" if key is None else "cached", group, key, parent, 0, None, (),
                         None, None)

    def node_names(self) -> list[str]:
        return list(self.picture.engines.engines)

    def node_is_up(self, name: str) -> bool:
        return name in self.picture.engines.engines

    def key_figures(self) -> KeyFigures:
        return figures_of(self.metrics, self.now)

    def facts(self) -> LiveFacts:
        return LiveFacts(self)

    def routing_headline(self) -> str:
        keys, shared = self.picture.engines.index_figures()
        return f"index {keys:,} keys, {shared:,} on more than one engine"

    def wal_counters(self) -> dict | None:
        return None

    def belief_view(self) -> BeliefView:
        return live_belief(self.picture.engines, self.picture.routed, self.now)

    @property
    def following(self) -> bool:
        return self._following

    def node_notes(self) -> dict[str, str]:
        """Each engine's batches, gaps, malformed messages, epochs and last /metrics read."""
        from kvtui.run.narrate_live import scrape_line

        notes = {}
        for e in self.picture.engines.engines.values():
            parts = [f"batches {e.batches}", f"gaps {e.gaps}", f"bad {e.malformed}"]
            parts += [f"epoch {e.epochs}"] * (e.epochs > 1) + [f"orphans {e.orphans}"] * bool(e.orphans)
            parts += [f"filled {e.replayed}"] * bool(e.replayed)
            if not e.batches and not e.malformed:
                parts.append("no batch yet: is the address the engine's --kv-events-config endpoint?")
            if e.scrape is not None:
                stale = f" (stale since {e.fresh_at:.1f} s)" if e.scrape.error and e.fresh_at is not None else ""
                parts.append(scrape_line(e.scrape) + stale)
            notes[e.name] = " ".join(parts)
        return notes

    # ------------------------------------------------------------------ moving
    def _feed(self) -> Event:
        ev = self.events[self._position - self.first]
        self.picture.feed(ev)
        self._position += 1
        if self._position % self._every == 0 and self._position not in self._checkpoints:
            self._checkpoints[self._position] = copy.deepcopy(self.picture)
            self._thin()
        return ev

    def _thin(self) -> None:
        """At most MAX_CHECKPOINTS copies of the picture (a real engine's holds its whole pool):
        past that, every other one goes and the spacing doubles, so a long session's memory
        stays bounded and a step back costs at most about its length / MAX_CHECKPOINTS events."""
        if len(self._checkpoints) <= MAX_CHECKPOINTS:
            return
        self._every *= 2
        self._checkpoints = {p: c for p, c in self._checkpoints.items() if p % self._every == 0 or p == self.first}

    def _forward(self, position: int) -> None:
        position = max(self.first, min(position, self.end))
        if position < self._position:
            base = max(p for p in self._checkpoints if p <= position)
            self.picture, self._position = copy.deepcopy(self._checkpoints[base]), base
        while self._position < position:
            self._feed()
        self._clock = min(self._clock, self.now)

    def step(self, fold: Iterable[type[Event]] = ()) -> Event | None:
        fold = tuple(fold)
        self._following = False
        while self._position < self.end:
            ev = self._feed()
            if not isinstance(ev, fold):
                return ev
        return None

    def back(self, fold: Iterable[type[Event]] = ()) -> Event | None:
        fold = tuple(fold)
        self._following = False
        p = self._position - 1
        while p > self.first and isinstance(self.events[p - self.first - 1], fold):
            p -= 1
        if p < self.first:
            return None
        self._clock = 0.0
        self._forward(p)
        return self.last

    def goto(self, position: int, budget_s: float = float("inf")) -> bool:
        self._following = False
        if position < self._position:
            self._clock = 0.0
        self._forward(position)
        return True

    def goto_time(self, t: float, budget_s: float = float("inf")) -> bool:
        """Stand on the last event at or before `t` seconds from the first delivery."""
        self.goto(self.first + bisect_right(self._times, t + 1e-9))
        self._clock = max(self.now, t) if self._live or t <= self.span else self.span
        return True

    def advance(self, target: float, budget_s: float) -> bool:
        """Play: following a live session, to its newest event; a recording, through the events
        received by `target` seconds (its clock moves on between them)."""
        if self._following:
            self._forward(self.end)
            return True
        p = self.first + bisect_right(self._times, target + 1e-9)
        self._forward(max(p, self._position))
        self._clock = target if self._live else min(target, self.span)
        return True

    def follow(self, on: bool = True) -> None:
        """Back to the newest event, and keep up with new ones (live; a recording plays on its
        own clock instead); `on` False holds the picture, ingest going on."""
        if not self._live or not on:
            self._following = False
            return
        self._forward(self.end)
        self._following = self._live

    def seek(self, kinds: Iterable[type[Event]], budget_s: float) -> Event | None | bool:
        kinds = tuple(kinds)
        origin = self._position
        self._following = False
        while self._position < self.end:
            ev = self._feed()
            if isinstance(ev, kinds):
                return ev
        self.goto(origin)
        return None

    def cancel_seek(self) -> None:
        self._seek_origin = None

    def maintain(self, budget_s: float) -> bool:
        return True  # checkpoints are taken as the picture moves forward

    def command(self, name: str, arg: str | None = None) -> Event | None:
        return None  # not among `capabilities`: a real cluster is not ours to change

    def close(self) -> None:
        self._checkpoints = {}

