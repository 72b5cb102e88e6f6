"""What a viewer reads of a run and how it moves one, whoever made the run.

The app, `record` and the split screen draw a run only through these two interfaces, and two
sources stand behind them: the simulation (kvtui/run/drive.py) and real engines, live or
recorded (kvtui/run/live.py). The live source turns what it receives into the project's
events (kvtui/live/translate.py: vLLM's `BlockStored` / `BlockRemoved` / `AllBlocksCleared`
become `BlocksStored` / `BlocksEvicted` / `NodeCacheCleared`, a request route mode served
becomes `RouteDecided` with its candidates, `FirstToken`, `MissesAttributed` and
`RequestCompleted`), feeds the same `Journal` (kvtui/run/journal.py) and `Metrics`
(kvtui/sim/metrics.py), builds the view types of kvtui/views.py from those events, and answers
`facts()` from the engines' own reports: so every panel, log line and sentence of narration
works on both.

`RunSource` is the read side; `Navigable` adds moving through the run. The simulation replays
deterministically in both directions; a live source moves within what it has received (new
events arrive through `pull`, and `follow` keeps up with them). What a source cannot do is
switched off by its `capabilities` (the commands it takes), not by another app.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import TYPE_CHECKING, Iterable, Sequence

from kvtui.events import Event
from kvtui.views import BlockView, ClusterView, KeyFigures

if TYPE_CHECKING:
    from kvtui.run.belief import BeliefView
    from kvtui.run.control_plane_view import ControlPlaneView
    from kvtui.run.facts import Facts
    from kvtui.run.journal import Journal
    from kvtui.sim.metrics import Metrics


class RunSource(ABC):
    """The read side of a run: views, journal, figures and the facts narration needs."""

    # The commands and changes the source takes: "node_down" (and up), "crash" (the control
    # plane), "restart" (from the start, same seed), "policy" (restart under another policy).
    capabilities: frozenset[str] = frozenset()

    @property
    def live(self) -> bool:
        """More may arrive (a live session): the run has no end yet."""
        return False

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

    def belief_view(self) -> "BeliefView | None":
        """What the router believes each engine holds against what it holds (kvtui/run/belief.py);
        None when the source cannot say."""
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

    @property
    def following(self) -> bool:
        """Keeping up with new events as they arrive (live, playing)."""
        return False

    def node_notes(self) -> dict[str, str]:
        """What the source says of a node beyond its view (the nodes panel's second line)."""
        return {}

    def pull(self) -> None:
        """Take in what has arrived since the last frame (a live session's deliveries); a run
        that is all there (a simulation, a recording) has nothing to take."""

    def follow(self, on: bool = True) -> None:
        """Go to the newest event and keep up with new ones (live), or (`on` False) hold the
        picture where it is while what arrives is still taken in; nothing for other runs."""
