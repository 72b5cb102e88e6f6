"""One request's life, from the run's journal: arrival, routing with every candidate,
queueing and scheduling, prefill chunks (the blocks it stored), first token, preemptions,
and how it ended, each with its sim time. The words come from kvtui/run/narrate.py.

Long lines wrap under their own text, not under the time (at 80 columns they were cut, and
reading them meant scrolling sideways line by line)."""

from __future__ import annotations

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Footer, Static

from kvtui.run.narrate import life_rows


class LifeScreen(ModalScreen[None]):
    DEFAULT_CSS = """
    LifeScreen { align: center middle; }
    LifeScreen > VerticalScroll {
        width: 100%; max-width: 140; height: 100%; border: round $primary; background: $surface; padding: 0 1;
    }
    LifeScreen Static { width: 100%; }
    """
    BINDINGS = [
        Binding("escape,i", "app.pop_screen", "Close"),
        Binding("question_mark", "app.help", "Help", key_display="?"),
        Binding("q", "app.pop_screen", "Quit this view"),
    ]

    def __init__(self, runner, request: str):
        super().__init__()
        self.runner = runner
        self.request = request

    def compose(self) -> ComposeResult:
        rows = life_rows(self.request, self.runner.journal.life(self.request))
        with VerticalScroll() as vs:
            vs.border_title = f"Life of {self.request} (escape closes)"
            yield Static(Group(*(hanging(head, text) for head, text in rows)))
        yield Footer()


def hanging(head: str, text: str) -> RenderableType:
    """`head` then `text`, which wraps under itself: the head (a time, a tree mark) stays a
    column of its own."""
    if not head:
        return Text(text)
    grid = Table.grid()
    grid.add_column(width=len(head), no_wrap=True)
    grid.add_column(ratio=1)
    grid.add_row(Text(head), Text(text))
    return grid
