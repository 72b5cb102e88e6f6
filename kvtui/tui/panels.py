"""The panels of the lower half, one row each, and the one way they refresh (the tick protocol).

A row names the panel (its id is written here and nowhere else: it names the widget, its tab
and its CSS rule), its tab's label, how the widget is made from the run, and its extra style
when it is the one panel a narrow screen shows. The tabs (widgets/view_tabs.py), the `v`
key's cycle, the layout, and each side of the split screen (tui/compare.py) all read this
table, and every screen refreshes every panel the same way: `widget.tick(frame)` with a `Frame`
saying what is on show. So a panel reaches every kind of run (a simulation, a live cluster, a
recording) and both screens by being one widget with a `tick(frame)` and one row here
(docs/architecture.md, "How to add a panel").
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Protocol

from textual.widget import Widget

from kvtui.events import Event, RouteDecided
from kvtui.run import Run
from kvtui.tui.widgets.belief_panel import BeliefPanel
from kvtui.tui.widgets.candidates import CandidateTable
from kvtui.tui.widgets.control_plane_panel import ControlPlanePanel
from kvtui.tui.widgets.decision_log import DecisionLog
from kvtui.tui.widgets.engines import EnginesTable
from kvtui.tui.widgets.event_log import EventLog
from kvtui.tui.widgets.latency_panel import LatencyPanel


@dataclass(frozen=True)
class Frame:
    """What a screen has on show when it refreshes its panels."""

    run: Run
    event: Event | None  # the event the Why is about
    decision: RouteDecided | None  # the decision on show: that event, the log's highlighted one, or the newest


class Ticks(Protocol):
    """A panel: a widget that redraws what changed when its screen refreshes."""

    def tick(self, frame: Frame) -> None: ...


@dataclass(frozen=True)
class Panel:
    id: str
    label: str
    make: Callable[[Run, str], Widget]  # (the run, the id) -> the widget (a `Ticks`), of class "view"
    about: str  # what it shows, for the help screen (screens/help.py)
    narrow_style: str = ""  # CSS declarations added when a narrow screen shows this panel alone
    shown: Callable[[Run], bool] = lambda run: True  # whether a run has it (a tab, a widget) at all


def _replicated(run: Run) -> bool:
    return run.control_plane_view() is not None


PANELS: list[Panel] = [
    Panel("raft", "Raft", lambda run, id: ControlPlanePanel(run, id=id, classes="view"),
          "a replicated control plane's members (role, term, last index, commit, applied, lag, when each last "
          "heard a leader) and the last election; j / J jump to the next / last election, c kills the leader.",
          " height: 1fr;", shown=_replicated),
    Panel("decisions", "Decisions", lambda run, id: DecisionLog(id=id, classes="view"),
          "one line per routing decision: request → node, its score, and the policy's reason. Move onto a line "
          "(↑↓, or click) to see every candidate with its features and score, and the decision explained in words."),
    Panel("candidates", "Candidates", lambda run, id: CandidateTable(id=id, classes="view"),
          "every candidate of the decision on show: score, how far behind the pick, prefix blocks held, why "
          "it was not eligible.", " height: 1fr; max-height: 100%;"),
    Panel("events", "Events", lambda run, id: EventLog(id=id, classes="view"),
          "evictions (whose prefix, how many blocks), preemptions, rejections with the reason, node failures "
          "and recoveries, control-plane crash and recovery; from real engines, lost gaps, restarts, "
          "malformed messages and each routed request's misses with their causes."),
    Panel("latency", "Latency", lambda run, id: LatencyPanel(run, id=id, classes="view"),
          "TTFT / TPOT / E2E histograms with p50 ▲50, p95 ▲95, p99 ▲99 marked (a live run's: the proxy's "
          "measurements); hit rates, rejection rate, throughput.", " height: 1fr;"),
    Panel("engines", "Nodes", lambda run, id: EnginesTable(run, id=id, classes="view"),
          "one line per node: GPU blocks held of how many, offloaded, evicted, recent hit rate, running and "
          "waiting; a real engine's batches, gaps, malformed messages, epochs and last /metrics read.",
          " height: 1fr;"),
    Panel("belief", "Belief", lambda run, id: BeliefPanel(run, id=id, classes="view"),
          "per engine and tier, the blocks the router's index credits it with against what it holds (a real "
          "engine: its KV events and /metrics), how stale the index is, and the hit rate given away (best "
          "engine against the chosen one); the selected engine's ([ ]) story in words.",
          " height: 1fr; max-height: 100%;"),
]


def panels_of(run: Run) -> list[Panel]:
    """The rows `run` has, in order (a replicated store's panel only where there is one)."""
    return [p for p in PANELS if p.shown(run)]


def views(run: Run) -> list[tuple[str, str]]:
    """(id, label) of every panel `run` has, in order (the tabs and the `v` cycle)."""
    return [(p.id, p.label) for p in panels_of(run)]


def narrow_css() -> str:
    """On a narrow screen only the chosen panel shows (`-view-ID` on the app picks it)."""
    return "\n".join(f".-narrow.-view-{p.id} #{p.id} {{ display: block;{p.narrow_style} }}" for p in PANELS)
