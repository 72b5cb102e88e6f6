"""A live session or a recording as the app moves through it: deliveries, and a position in them.

The live counterpart of the simulation's drive (drive.py): the run is the list of deliveries
received so far (kvtui/live/delivery.py), the picture at position p is the state after
ingesting the first p of them, through the same `ingest` that `kvtui live --no-ui` and
`kvtui replay --no-ui` use, so the screen and the headless lines agree. Live, new deliveries
are appended as they arrive and the position follows the end; paused, ingest goes on and the
position stays; stepping back or seeking moves over what was received, as in a replay.

It offers the parts of `RunSource` / `Navigable` (source.py) that KV events can feed: views,
node names, the clock, positions and their times, step, back, goto, goto_time and seek. The
journal, metrics and facts of a simulated run are built from simulated requests; route mode's
requests reach the live state as `Served` deliveries (kvtui/live/proxy.py), which the app shows
in its log, so the app for live data draws its own panels until they feed a Journal too.
Going back rebuilds from the nearest checkpoint (a copy of the state every CHECKPOINT_EVERY
deliveries, thinned as a session grows: see `_thin`).

A live session's history is capped, as the simulation app's checkpoints are budgeted: past
HISTORY_KEPT deliveries or HISTORY_BYTES of their frames, the older half is dropped at a
checkpoint (which becomes the first state one can go back to), `dropped` counts what went, and
the app says so. Positions stay absolute (`first` is the oldest one kept). A recording opened
in `kvtui replay` is all in memory already and keeps its whole history.
"""

from __future__ import annotations

import copy
from bisect import bisect_right
from collections.abc import Callable, Sequence

from kvtui.live.delivery import Delivery, Gap, Scraped, ingest
from kvtui.live.describe import describe, is_removal
from kvtui.live.state import LiveState
from kvtui.live.view import EngineRow, cluster_view, engine_rows, index_figures
from kvtui.views import ClusterView

CHECKPOINT_EVERY = 256  # deliveries between copies of the state, at first
MAX_CHECKPOINTS = 64
HISTORY_KEPT = 200_000  # deliveries a live session keeps to move through
HISTORY_BYTES = 64 << 20  # ... and of their frames
DELIVERY_BYTES = 200  # what a delivery costs besides its frames (the objects themselves)

SEEKS: dict[str, Callable[[Delivery], bool]] = {
    "removal": is_removal,
    "gap": lambda d: isinstance(d, Gap),
}


class LiveRun:
    def __init__(self, deliveries: Sequence[Delivery] = (), live: bool = False,
                 kept: int = HISTORY_KEPT, kept_bytes: int = HISTORY_BYTES):
        self.deliveries: list[Delivery] = []  # those kept: positions first .. end - 1
        self.live = live  # more may arrive (a session), or this is all there is (a recording)
        self.following = live
        self.state = LiveState()
        self.position = 0
        self.first = 0  # the position of deliveries[0]: what came before was dropped
        self.dropped = 0
        self.generation = 0  # changes whenever the state is rebuilt (the block map redraws)
        self._checkpoints: dict[int, LiveState] = {0: LiveState()}
        self._every = CHECKPOINT_EVERY
        self._kept, self._kept_bytes, self._bytes = kept, kept_bytes, 0
        self._start: float | None = None
        self._first_at = 0.0  # the time of the last dropped delivery
        for d in deliveries:
            self.receive(d)

    # ------------------------------------------------------------------ arriving
    def receive(self, delivery: Delivery) -> None:
        """A new delivery; the picture moves to it only while following."""
        if self._start is None:
            self._start = self._first_at = delivery.at
        self.deliveries.append(delivery)
        self._bytes += _cost(delivery)
        if self.following:
            self.step()
        if self.live and (len(self.deliveries) > self._kept or self._bytes > self._kept_bytes):
            self._drop_older_half()

    def _drop_older_half(self) -> None:
        """Drop the older half of what is kept, at a checkpoint (the new first position one
        can go back to); a picture standing before it moves up to it."""
        middle = self.first + len(self.deliveries) // 2
        base = max((p for p in self._checkpoints if p <= middle), default=self.first)
        if base <= self.first:
            return
        if self.position < base:
            self.goto(base)
        gone = self.deliveries[:base - self.first]
        self._first_at = gone[-1].at
        self._bytes -= sum(_cost(d) for d in gone)
        del self.deliveries[:base - self.first]
        self.dropped += len(gone)
        self.first = base
        self._checkpoints = {p: c for p, c in self._checkpoints.items() if p >= base}

    # ------------------------------------------------------------------ reading
    @property
    def end(self) -> int:
        """The position after the newest delivery."""
        return self.first + len(self.deliveries)

    def delivery(self, position: int) -> Delivery:
        return self.deliveries[position - self.first]

    @property
    def start(self) -> float:
        return self._start if self._start is not None else 0.0

    @property
    def now(self) -> float:
        """Seconds from the first delivery to the one the picture stands on."""
        if self.position == self.first:
            return self._first_at - self.start if self.first else 0.0
        return self.delivery(self.position - 1).at - self.start

    @property
    def span(self) -> float:
        return self.deliveries[-1].at - self.start if self.deliveries else 0.0

    @property
    def ended(self) -> bool:
        return not self.live and self.position == self.end

    def view(self) -> ClusterView:
        return cluster_view(self.state, self.now, self.position)

    def engines(self) -> list[EngineRow]:
        return engine_rows(self.state)

    def index_figures(self) -> tuple[int, int]:
        """(keys indexed, keys held by more than one engine) at the position."""
        return index_figures(self.state)

    def node_names(self) -> list[str]:
        return list(self.state.counts)

    def recent(self, n: int) -> list[tuple[float, str, str]]:
        """The last `n` deliveries up to the position but the metrics scrapes (the engines
        table shows those), oldest first: (time, engine, what it said)."""
        shown: list[Delivery] = []
        for d in reversed(self.deliveries[:self.position - self.first]):
            if len(shown) == n:
                break
            if not isinstance(d, Scraped):
                shown.append(d)
        return [(d.at - self.start, d.engine, describe(d)) for d in reversed(shown)]

    # ------------------------------------------------------------------ moving
    def step(self) -> Delivery | None:
        if self.position == self.end:
            return None
        delivery = self.delivery(self.position)
        ingest(self.state, delivery)
        self.position += 1
        if self.position % self._every == 0 and self.position not in self._checkpoints:
            self._checkpoints[self.position] = copy.deepcopy(self.state)
            self._thin()
        return delivery

    def _thin(self) -> None:
        """At most MAX_CHECKPOINTS copies of the state (a real engine's holds its whole pool):
        past that, every other one goes and the spacing doubles, so a long session's memory
        stays bounded and a step back costs at most about its length / MAX_CHECKPOINTS ingests."""
        if len(self._checkpoints) <= MAX_CHECKPOINTS:
            return
        self._every *= 2
        self._checkpoints = {p: c for p, c in self._checkpoints.items() if p % self._every == 0 or p == self.first}

    def back(self) -> Delivery | None:
        if self.position == self.first:
            return None
        self.following = False
        self.goto(self.position - 1)
        return self.delivery(self.position - 1) if self.position > self.first else None

    def goto(self, position: int) -> None:
        """Stand after the first `position` deliveries (clamped to what is kept)."""
        position = max(self.first, min(position, self.end))
        if position < self.position:
            base = max(p for p in self._checkpoints if p <= position)
            self.state, self.position = copy.deepcopy(self._checkpoints[base]), base
            self.generation += 1
        while self.position < position:
            self.step()

    def goto_time(self, t: float) -> None:
        """Stand on the last delivery received at or before `t` seconds from the first."""
        self.goto(self.first + bisect_right([d.at - self.start for d in self.deliveries], t + 1e-9))

    def seek(self, kind: str) -> Delivery | None:
        """Step to the next delivery of `kind` (SEEKS); None, not moving, when there is none."""
        wanted = SEEKS[kind]
        for p in range(self.position, self.end):
            if wanted(self.delivery(p)):
                self.goto(p + 1)
                return self.delivery(p)
        return None

    def follow(self) -> None:
        """Back to the newest delivery, and keep up with new ones (live)."""
        self.goto(self.end)
        self.following = self.live


def _cost(delivery: Delivery) -> int:
    """About what keeping `delivery` costs in memory: its frames, and the objects around them."""
    return DELIVERY_BYTES + sum(map(len, getattr(delivery, "frames", ())))

