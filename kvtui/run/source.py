"""What a viewer reads of a run and how it moves one, whoever made the run.

The app, `record` and the comparison screen draw a run only through these two interfaces, so
the run behind them may be a simulation (kvtui/run/drive.py, the one source today), a
recording played back, or a live cluster of real engines. A live source feeds the same
`Journal` (kvtui/run/journal.py) and the same `Metrics` (kvtui/sim/metrics.py) from the KV
events and routing decisions it observes (vLLM's `BlockStored` / `BlockRemoved` /
`AllBlocksCleared` map onto `BlocksStored` / `BlocksEvicted` / `NodeCacheCleared`, a proxy
router's choice onto `RouteDecided`), builds the view types of kvtui/views.py from its
block tables, and answers `facts()` from the engines' configuration: then every panel, log
line and sentence of narration works unchanged.

`RunSource` is the read side; `Navigable` adds moving through the run. A live source moves
only forward in real time (its `step`/`seek` read what has arrived; `back`/`goto` stay within
what its journal recorded); the simulation replays deterministically in both directions.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import TYPE_CHECKING, Iterable, Sequence

from kvtui.events import Event
from kvtui.views import BlockView, ClusterView, KeyFigures

if TYPE_CHECKING:
    from kvtui.run.control_plane_view import ControlPlaneView
    from kvtui.run.facts import Facts
    from kvtui.run.journal import Journal
    from kvtui.sim.metrics import Metrics


class RunSource(ABC):
    """The read side of a run: views, journal, figures and the facts narration needs."""

    @property
    @abstractmethod
    def journal(self) -> "Journal":
        """Recent decisions, notable events, request lives, block provenance."""

    @property
    @abstractmethod
    def metrics(self) -> "Metrics":
        """Counters and latency samples, fed by the same events."""

    @property
    @abstractmethod
    def now(self) -> float:
        """The run's clock (sim seconds; wall seconds since the start for a live cluster)."""

    @property
    @abstractmethod
    def ended(self) -> bool: ...

    @property
    @abstractmethod
    def position(self) -> int:
        """Events stepped to so far."""

    @property
    @abstractmethod
    def times(self) -> Sequence[float]:
        """The time of each event position seen (the timeline's axis)."""

    @abstractmethod
    def view(self) -> ClusterView: ...

    @abstractmethod
    def block(self, node: str, index: int) -> BlockView | None: ...

    @abstractmethod
    def node_names(self) -> list[str]: ...

    @abstractmethod
    def node_is_up(self, name: str) -> bool: ...

    @abstractmethod
    def key_figures(self) -> KeyFigures: ...

    @abstractmethod
    def facts(self) -> "Facts":
        """Static facts for narration: block size, node capacity, CPU tiers, prefill cost."""

    @abstractmethod
    def routing_headline(self) -> str:
        """The router's own one-line state (index staleness, predictor error), or ""."""

    @abstractmethod
    def wal_counters(self) -> dict | None:
        """The control plane's WAL counters; None when the run has no store."""

    @property
    @abstractmethod
    def control_plane_down(self) -> bool: ...

    def control_plane_view(self) -> "ControlPlaneView | None":
        """A replicated control plane's members and last election; None without one."""
        return None


class Navigable(RunSource):
    """A run one can move through (see the module doc for what a live source can do)."""

    @property
    @abstractmethod
    def last(self) -> Event | None:
        """The event the run stands on."""

    @abstractmethod
    def step(self, fold: Iterable[type[Event]] = ()) -> Event | None: ...

    @abstractmethod
    def back(self, fold: Iterable[type[Event]] = ()) -> Event | None: ...

    @abstractmethod
    def goto(self, position: int, budget_s: float = float("inf")) -> bool: ...

    @abstractmethod
    def goto_time(self, t: float, budget_s: float = float("inf")) -> bool: ...

    @abstractmethod
    def advance(self, target: float, budget_s: float) -> bool: ...

    @abstractmethod
    def seek(self, kinds: Iterable[type[Event]], budget_s: float) -> Event | None | bool: ...

    @property
    @abstractmethod
    def seek_origin(self) -> int | None:
        """Where a search under way began (None when no search is under way)."""

    @abstractmethod
    def cancel_seek(self) -> None: ...

    @abstractmethod
    def maintain(self, budget_s: float) -> bool:
        """Idle work (checkpoints); True when there is nothing left to do."""

    @abstractmethod
    def command(self, name: str, arg: str | None = None) -> Event | None:
        """A user command (node_down / node_up / crash); the event that reports it."""

    @abstractmethod
    def close(self) -> None: ...
