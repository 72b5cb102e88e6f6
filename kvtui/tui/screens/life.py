"""One request's life, from the run's journal: arrival, routing with every candidate,
queueing and scheduling, prefill chunks (the blocks it stored), first token, preemptions,
and how it ended, each with its sim time. The words come from kvtui/run/narrate.py."""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Footer, Static

from kvtui.run.narrate import life_lines


class LifeScreen(ModalScreen[None]):
    DEFAULT_CSS = """
    LifeScreen { align: center middle; }
    LifeScreen > VerticalScroll {
        width: 100%; max-width: 140; height: 100%; border: round $primary; background: $surface; padding: 0 1;
        overflow-x: auto;
    }
    LifeScreen Static { width: auto; text-wrap: nowrap; }
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
        lines = life_lines(self.request, self.runner.journal.life(self.request))
        with VerticalScroll() as vs:
            vs.border_title = f"Life of {self.request} (escape closes)"
            yield Static(Text("\n".join(lines), no_wrap=True))
        yield Footer()
