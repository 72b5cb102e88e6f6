"""Go to a moment of the run: a sim time in seconds (`12.5`) or an event number (`#500`)."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Input, Static


class GotoScreen(ModalScreen[str | None]):
    DEFAULT_CSS = """
    GotoScreen { align: center middle; }
    GotoScreen > Vertical {
        width: 60; max-width: 100%; height: auto; border: round $primary; background: $surface; padding: 0 1;
    }
    """
    BINDINGS = [Binding("escape", "cancel", "Cancel")]  # ? and q are text here: escape first

    def __init__(self, now: float, position: int):
        super().__init__()
        self.now = now
        self.position = position

    def compose(self) -> ComposeResult:
        with Vertical() as v:
            v.border_title = "Go to (escape cancels)"
            yield Static(
                f"Now: {self.now:.3f} s, event #{self.position}. Type a time in seconds (12.5) "
                "or an event number (#500); earlier moments are replayed.",
                markup=False,
            )
            yield Input(placeholder="12.5 or #500", id="goto-input")

    def on_input_submitted(self, message: Input.Submitted) -> None:
        self.dismiss(message.value)

    def action_cancel(self) -> None:
        self.dismiss(None)
