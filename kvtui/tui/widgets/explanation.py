"""The teaching panel: what the current event did and why, in words, with the numbers.

It has a few lines (four at 80x24): when the text needs more, its title says so and `y` opens
the whole of it (screens/why.py); the mouse wheel scrolls it in place.
"""

from __future__ import annotations

from rich.text import Text
from textual.widgets import Static

from kvtui.events import Event


CUT_HINT = " · cut: y reads it all"


class Explanation(Static):
    DEFAULT_CSS = """
    Explanation { height: auto; max-height: 8; overflow-y: auto; }
    Explanation > .explanation--title { color: $accent; text-style: bold; }
    """
    COMPONENT_CLASSES = {"explanation--title"}

    def __init__(self, *, id: str | None = None, classes: str | None = None, cut_hint: str = CUT_HINT):
        super().__init__("", id=id, classes=classes, markup=False)
        self.cut_hint = cut_hint  # what the title adds when the text does not fit
        self.shown: tuple | None = None
        self.title = ""
        self.body = ""

    def show(self, ev: Event | None, text: str, source: str = "") -> None:
        key = (None if ev is None else ev.seq, source, text)
        if key == self.shown:
            return
        self.shown = key
        if ev is None:
            title = "Why: nothing yet"
        else:
            title = f"Why: {ev.kind} #{ev.seq:,} at t={ev.t:.3f}s"
            if source:
                title += f" ({source})"
        self.title, self.body = title, text
        # A fixed height (narrow screens) needs no layout pass; an auto height does.
        self.update(self._text(), layout=not self.styles.height or self.styles.height.is_auto)

    def _text(self) -> Text:
        try:
            title_style = self.get_component_rich_style("explanation--title")
        except KeyError:
            # Textual raises while a theme change re-parses the stylesheet and the signal
            # reaches this widget first (an upstream ordering, found by the key fuzz test).
            title_style = "bold"
        title = self.title + (self.cut_hint if self.cut() else "")
        return Text.assemble((title, title_style), "\n", self.body)

    def cut(self) -> bool:
        """True when the title and text need more lines than the panel has (the title then
        says `y` reads it all). Measured as the panel wraps it, less a column for the
        scrollbar that overflowing text brings."""
        region = self.content_region
        if region.width <= 1 or region.height <= 0 or not self.body:
            return False
        lines = Text.assemble(self.title + self.cut_hint, "\n", self.body).wrap(self.app.console, region.width - 1)
        return len(lines) > region.height

    def on_resize(self, _event) -> None:
        self.update(self._text())

    def on_mount(self) -> None:
        self.app.theme_changed_signal.subscribe(self, lambda _t: self.update(self._text()))
