"""The panels of the main screen's lower half, one row each: the id (written here and nowhere
else: it names the widget, its tab and its CSS rule), the tab's label, how the widget is made
from the run, and its extra style when it is the one panel a narrow screen shows. The tabs
(widgets/view_tabs.py), the `v` key's cycle and the layout all read this table.

Adding a panel is one widget file under kvtui/tui/widgets/ and one row here
(docs/architecture.md, "How to add a panel").
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from textual.widget import Widget

from kvtui.run import Run
from kvtui.tui.widgets.candidates import CandidateTable
from kvtui.tui.widgets.decision_log import DecisionLog
from kvtui.tui.widgets.event_log import EventLog
from kvtui.tui.widgets.latency_panel import LatencyPanel


@dataclass(frozen=True)
class Panel:
    id: str
    label: str
    make: Callable[[Run, str], Widget]  # (the run, the id) -> the widget, of class "view"
    narrow_style: str = ""  # CSS declarations added when a narrow screen shows this panel alone


PANELS: tuple[Panel, ...] = (
    Panel("decisions", "Decisions", lambda run, id: DecisionLog(id=id, classes="view")),
    Panel("candidates", "Candidates", lambda run, id: CandidateTable(id=id, classes="view"),
          " height: 1fr; max-height: 100%;"),
    Panel("events", "Events", lambda run, id: EventLog(id=id, classes="view")),
    Panel("latency", "Latency", lambda run, id: LatencyPanel(run, id=id, classes="view"), " height: 1fr;"),
)


VIEWS: tuple[tuple[str, str], ...] = tuple((p.id, p.label) for p in PANELS)


def narrow_css() -> str:
    """On a narrow screen only the chosen panel shows (`-view-ID` on the app picks it)."""
    return "\n".join(f".-narrow.-view-{p.id} #{p.id} {{ display: block;{p.narrow_style} }}" for p in PANELS)
