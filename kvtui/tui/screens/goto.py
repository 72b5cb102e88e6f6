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

    _done = False

    def on_mount(self) -> None:
        # A headless app (tests, `kvtui record`) has nobody to blink for, and a blinking cursor
        # makes its picture depend on when it is taken (Input's blink timer: half a second on,
        # half off): the snapshot of this screen differed one run in a few.
        if self.app.is_headless:
            self.query_one(Input).cursor_blink = False

    def on_input_submitted(self, message: Input.Submitted) -> None:
        self._finish(message.value)

    def action_cancel(self) -> None:
        self._finish(None)

    def _finish(self, value: str | None) -> None:
        # Once: a second Enter or Escape queued before the first dismiss took effect is still
        # delivered to this screen, and a second dismiss pops the screen under it (Textual's
        # ScreenStackError, found by the 20,000-key campaign: g, Enter, Enter within a frame).
        if self._done or not self.is_current:
            return
        self._done = True
        self.dismiss(value)
