"""The Why of the event on show, whole: the explanation panel's text and, for a routing
decision, every candidate's note, on a screen of its own that scrolls.

The panel under the maps has a few lines (four at 80x24); a rejection's reasons or a decision
among 16 nodes need more. `y` opens this screen from anywhere; the panel's title says so when
its text does not fit. The story's chapter in full (`S`) uses it too.
"""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

from kvtui.events import Event, RouteDecided


def candidate_notes(ev: Event | None) -> str:
    """One line per candidate of a decision, its note in full ("" for other events)."""
    if not isinstance(ev, RouteDecided):
        return ""
    lines = [f"{'→' if c.node == ev.node else ' '} {c.node}: {c.note or ('picked' if c.node == ev.node else '-')}"
             for c in ev.candidates]
    return "\n".join(lines)


class WhyScreen(ModalScreen[None]):
    DEFAULT_CSS = """
    WhyScreen { align: center middle; }
    WhyScreen > VerticalScroll {
        width: 100%; max-width: 110; height: auto; max-height: 100%;
        border: round $primary; background: $surface; padding: 0 1;
    }
    WhyScreen .why-title { text-style: bold; color: $accent; }
    """
    BINDINGS = [Binding("escape,y,q,S", "app.pop_screen", "Close")]

    def __init__(self, title: str, body: str, notes: str = "", heading: str = "Why, in full"):
        super().__init__()
        self.title_text, self.body, self.notes, self.heading = title, body, notes, heading

    def compose(self) -> ComposeResult:
        with VerticalScroll() as vs:
            vs.border_title = f"{self.heading} (↑↓ pgup pgdn scroll; escape closes)"
            yield Static(self.title_text, classes="why-title", markup=False)
            yield Static(self.body, markup=False)
            if self.notes:
                yield Static("Candidates", classes="why-title", markup=False)
                yield Static(self.notes, markup=False)

    def on_mount(self) -> None:
        self.query_one(VerticalScroll).focus()
