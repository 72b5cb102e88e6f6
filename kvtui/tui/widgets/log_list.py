"""A bounded, scrollable list of events drawn with the Line API (the base of both logs).

Appending is O(1) and formats nothing: a line is formatted only when it is drawn, so a fast
run that adds hundreds of events per second costs the UI a deque append per event. The list
keeps at most `maxlen` items. It follows the newest item (scrolled to the end) until the user
moves the cursor; Escape or End returns to following. A subclass may keep a heading on the first
row (`heading`: what its columns are), which does not scroll.
"""

from __future__ import annotations

from collections import deque
from typing import Iterable

from rich.cells import cell_len
from rich.segment import Segment
from rich.style import Style
from textual.binding import Binding
from textual.geometry import Size
from textual.message import Message
from textual.scroll_view import ScrollView
from textual.strip import Strip

from kvtui.events import Event

HEADING_FROM = 6  # rows from which a list shows its heading


class LogList(ScrollView, can_focus=True):
    DEFAULT_CSS = """
    LogList {
        height: 1fr;
        overflow-x: hidden;
        scrollbar-size-vertical: 1;
    }
    LogList > .loglist--cursor { background: $primary 30%; text-style: bold; }
    LogList:focus > .loglist--cursor { background: $primary 55%; text-style: bold underline; }
    LogList > .loglist--time { color: $text-muted; }
    LogList > .loglist--dim { color: $text-muted; }
    LogList > .loglist--empty { color: $text-muted; text-style: italic; }
    LogList > .loglist--heading { color: $text-muted; text-style: bold underline; }
    """

    BINDINGS = [
        Binding("up", "cursor(-1)", "Up", show=False),
        Binding("down", "cursor(1)", "Down", show=False),
        Binding("pageup", "page(-1)", "Page up", show=False),
        Binding("pagedown", "page(1)", "Page down", show=False),
        Binding("home", "first", "First", show=False),
        Binding("end,escape", "follow", "Follow newest", show=False),
        Binding("enter", "choose", "Details", show=False),
    ]

    COMPONENT_CLASSES = {"loglist--cursor", "loglist--time", "loglist--dim", "loglist--empty", "loglist--heading"}

    class Highlighted(Message):
        """The cursor moved onto an event (None: back to following the newest)."""

        def __init__(self, log: "LogList", event: Event | None) -> None:
            self.log = log
            self.event = event
            super().__init__()

        @property
        def control(self) -> "LogList":
            return self.log

    class Chosen(Message):
        def __init__(self, log: "LogList", event: Event) -> None:
            self.log = log
            self.event = event
            super().__init__()

        @property
        def control(self) -> "LogList":
            return self.log

    empty_text = "nothing yet"
    heading = ""  # a first row that does not scroll (the columns' names); "" for none

    def __init__(self, maxlen: int = 500, *, id: str | None = None, classes: str | None = None):
        super().__init__(id=id, classes=classes)
        self.maxlen = maxlen
        self.items: deque[Event] = deque(maxlen=maxlen)
        self.cursor: int | None = None  # index into items; None = follow the newest
        self.skipped = 0
        self._fmt_cache: dict[int, list[tuple[str, str]]] = {}
        self._style_key = None
        self._styles: dict[str, Style] = {}
        self._strips: dict[tuple[int, bool, int], Strip] = {}
        self._generation: int | None = None  # the run's generation the items are from

    def take(self, run, drain, limit: int = 500) -> None:
        """The items `drain(limit)` has not given yet (`run`'s decisions or log lines); when the
        run went back in time or restarted (a new generation) the list starts over from it."""
        if self._generation != run.generation:
            self._generation = run.generation
            self.clear()
        self.add(*drain(limit))

    # ------------------------------------------------------------------ content
    def add(self, events: Iterable[Event], skipped: int = 0) -> None:
        events = list(events)
        if not events and not skipped:
            return
        self.skipped += skipped
        before = len(self.items)
        overflow = max(0, before + len(events) - self.maxlen)
        for ev in events:
            self.items.append(ev)
        if overflow:
            if self.cursor is not None:
                self.cursor = max(0, self.cursor - overflow)
            live = {ev.seq for ev in self.items}
            self._fmt_cache = {k: v for k, v in self._fmt_cache.items() if k in live}
        self._resize()
        if self.cursor is None:
            self.scroll_end(animate=False, immediate=True, x_axis=False, force=True)
        self.refresh()

    def clear(self) -> None:
        self.items.clear()
        self._strips.clear()
        self.cursor = None
        self.skipped = 0
        self._fmt_cache.clear()
        self._resize()
        self.scroll_to(y=0, animate=False, immediate=True, force=True)
        self.refresh()

    @property
    def _top(self) -> int:
        """Rows above the items: the heading's, when the list has room for it (at 80x24 the
        narrow layout leaves a log four rows: they go to the items)."""
        return 1 if self.heading and self.scrollable_content_region.height >= HEADING_FROM else 0

    def _rows(self) -> int:
        """Rows the items have on screen (below the heading)."""
        return max(1, self.scrollable_content_region.height - self._top)

    def _resize(self) -> None:
        self.virtual_size = Size(self.size.width, max(len(self.items), 1) + self._top)

    def on_resize(self) -> None:
        self._resize()
        if self.cursor is None:
            self.scroll_end(animate=False, immediate=True, x_axis=False, force=True)

    @property
    def highlighted(self) -> Event | None:
        if self.cursor is None or not self.items:
            return None
        return self.items[min(self.cursor, len(self.items) - 1)]

    # ------------------------------------------------------------------ formatting (subclasses)
    def format_item(self, ev: Event) -> list[tuple[str, str]]:
        """(text, style name) pieces of one line; style names are component classes or ''."""
        return [(f"{ev.t:9.3f} ", "loglist--time"), (ev.kind, "")]

    def style_names(self) -> Iterable[str]:
        return ()

    def notify_style_update(self) -> None:
        super().notify_style_update()
        self._style_key = None
        self._strips.clear()

    def _ensure_styles(self) -> None:
        """Styles computed once per theme / CSS change (`rich_style` is slow per line)."""
        if self._style_key == self.app.theme:
            return
        base = self.rich_style
        self._style_key = self.app.theme
        self._strips.clear()
        names = {"loglist--cursor", "loglist--time", "loglist--dim", "loglist--empty", "loglist--heading", *self.style_names()}
        self._styles = {"": base}
        for name in names:
            self._styles[name] = base + self.get_component_rich_style(name)

    # ------------------------------------------------------------------ the Line API
    def render_line(self, y: int) -> Strip:
        self._ensure_styles()
        width = self.scrollable_content_region.width
        base = self._styles[""]
        if y < self._top:
            return Strip([Segment(self.heading, self._styles["loglist--heading"])]).crop(0, width).adjust_cell_length(width, base)
        y -= self._top
        index = self.scroll_offset.y + y
        if not self.items:
            if y == 0:
                return Strip([Segment(self.empty_text, self._styles["loglist--empty"])]).adjust_cell_length(width, base)
            return Strip.blank(width, base)
        if index >= len(self.items):
            return Strip.blank(width, base)
        ev = self.items[index]
        cursor = self.cursor is not None and index == min(self.cursor, len(self.items) - 1)
        skey = (ev.seq, cursor, width)
        strip = self._strips.get(skey)
        if strip is not None:
            return strip
        if len(self._strips) > 4 * self.maxlen:
            self._strips.clear()
        pieces = self._fmt_cache.get(ev.seq)
        if pieces is None:
            pieces = self.format_item(ev)
            self._fmt_cache[ev.seq] = pieces
        cursor_style = self._styles["loglist--cursor"] if cursor else None
        segs = []
        used = 0
        for text, name in pieces:
            if used >= width:
                break
            style = self._styles.get(name, base)
            if cursor_style is not None:
                style = style + cursor_style
            n = cell_len(text)
            if used + n > width:
                text = text[: max(0, width - used - 1)] + "…"
                n = cell_len(text)
            segs.append(Segment(text, style))
            used += n
        strip = Strip(segs, used).adjust_cell_length(width, cursor_style or base)
        self._strips[skey] = strip
        return strip

    # ------------------------------------------------------------------ cursor
    def _move_to(self, index: int | None) -> None:
        if not self.items:
            index = None
        if index is not None:
            index = max(0, min(index, len(self.items) - 1))
        self.cursor = index
        if index is None:
            self.scroll_end(animate=False, immediate=True, x_axis=False, force=True)
        else:
            top = self.scroll_offset.y
            height = self._rows()
            if index < top:
                self.scroll_to(y=index, animate=False, immediate=True, force=True)
            elif index >= top + height:
                self.scroll_to(y=index - height + 1, animate=False, immediate=True, force=True)
        self.refresh()
        self.post_message(self.Highlighted(self, self.highlighted))

    def action_cursor(self, delta: int) -> None:
        if not self.items:
            return
        if self.cursor is None:
            self._move_to(len(self.items) - 1 if delta < 0 else len(self.items) - 1)
        else:
            self._move_to(self.cursor + delta)

    def action_page(self, direction: int) -> None:
        if not self.items:
            return
        step = max(1, self._rows() - 1)
        start = len(self.items) - 1 if self.cursor is None else self.cursor
        self._move_to(start + direction * step)

    def action_first(self) -> None:
        self._move_to(0)

    def action_follow(self) -> None:
        self._move_to(None)

    def action_choose(self) -> None:
        ev = self.highlighted
        if ev is not None:
            self.post_message(self.Chosen(self, ev))

    def on_click(self, event) -> None:
        index = self.scroll_offset.y + event.y - self._top
        if event.y >= self._top and 0 <= index < len(self.items):
            self.focus()
            self._move_to(index)
            if event.chain >= 2:
                self.action_choose()
