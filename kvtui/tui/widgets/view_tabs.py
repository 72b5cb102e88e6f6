"""On narrow screens the lower half shows one panel at a time; this line says which (v cycles)."""

from __future__ import annotations

from rich.text import Text
from textual import events
from textual.message import Message
from textual.widget import Widget



class ViewTabs(Widget):
    DEFAULT_CSS = """
    ViewTabs { height: 1; background: $panel; }
    ViewTabs > .viewtabs--active { background: $primary; color: $text; text-style: bold; }
    ViewTabs > .viewtabs--inactive { color: $text-muted; }
    """
    COMPONENT_CLASSES = {"viewtabs--active", "viewtabs--inactive"}

    class Picked(Message):
        def __init__(self, view: str) -> None:
            self.view = view
            super().__init__()

    def __init__(self, views: list[tuple[str, str]], *, id: str | None = None, classes: str | None = None):
        super().__init__(id=id, classes=classes)
        self.views = views
        self.active = views[0][0]
        self._spans: list[tuple[int, int, str]] = []

    def set_active(self, view: str) -> None:
        if view != self.active:
            self.active = view
            self.refresh()

    def render(self) -> Text:
        active = self.get_component_rich_style("viewtabs--active")
        inactive = self.get_component_rich_style("viewtabs--inactive")
        text = Text(no_wrap=True, overflow="ellipsis")
        self._spans = []
        for key, label in self.views:
            start = len(text)
            mark = "▸" if key == self.active else " "
            text.append(f"{mark}{label} ", active if key == self.active else inactive)
            self._spans.append((start, len(text), key))
            text.append(" ")
        text.append("(v: next view)", inactive)
        return text

    def on_click(self, event: events.Click) -> None:
        for start, end, key in self._spans:
            if start <= event.x < end:
                self.post_message(self.Picked(key))
                return
