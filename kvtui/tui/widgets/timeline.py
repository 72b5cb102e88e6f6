"""The timeline: one line across the screen from sim time 0 to the end of the workload, with
the current moment, the story's chapters (1 2 3 ...) and the run's landmarks: scripted faults
known in advance, and as they happen the first eviction (e), first rejection (r), first
preemption (p), node failures (▼), recoveries (▲), control-plane crashes (✸) and, in a replicated
control plane, each new leader (◆) and each member cut off (⊘). Marks never
overlap: one that would land on a taken cell moves to the nearest free one. A click goes to
that moment (earlier moments are replayed).

Under it, the current chapter of the story (title and text), when the scenario has one.
"""

from __future__ import annotations

from rich.style import Style
from rich.text import Text
from textual import events
from textual.message import Message
from textual.widget import Widget

from kvtui.run.terms import columns

GLYPH = {
    "evicted": "e",
    "rejected": "r",
    "preempted": "p",
    "node_down": "▼",
    "node_up": "▲",
    "cp_crash": "✸",
    "cp_recovered": "✓",
    "gap": "g",
    "restarted": "↻",
    "leader": "◆",
    "partition": "⊘",
}
SCRIPTED = {"node_down": "node_down", "node_up": "node_up", "control_plane_crash": "cp_crash"}


def place(wanted: list[tuple[int, str]], width: int) -> dict[int, str]:
    """Put each (column, glyph) on a free column nearest the one it wants, in order."""
    taken: dict[int, str] = {}
    for col, glyph in wanted:
        col = max(0, min(width - 1, col))
        for d in range(width):
            for c in (col + d, col - d):
                if 0 <= c < width and c not in taken:
                    taken[c] = glyph
                    break
            else:
                continue
            break
    return taken


def span_of(runner) -> float:
    """Sim seconds the timeline's width stands for: the planned end, or what has happened past it."""
    known = runner.times
    last = known[-1] if len(known) else 0.0
    return max(runner.planned_end or 0.0, last, runner.now, 1e-9)


def current_chapter(story, now: float):
    """(index, chapter) of the chapter in force at `now`, or (None, None)."""
    found = (None, None)
    for i, ch in enumerate(story):
        if ch.at <= now + 1e-9:
            found = (i, ch)
    return found


class Timeline(Widget):
    DEFAULT_CSS = """
    Timeline { height: 1; }
    Timeline > .timeline--bar { color: $text-muted; }
    Timeline > .timeline--done { color: $primary; }
    Timeline > .timeline--mark { color: $warning; text-style: bold; }
    Timeline > .timeline--chapter { color: $accent; text-style: bold; }
    Timeline > .timeline--now { color: $foreground; text-style: bold reverse; }
    Timeline > .timeline--term-odd { background: $primary 35%; }
    Timeline > .timeline--term-even { background: $secondary 35%; }
    """
    COMPONENT_CLASSES = {"timeline--bar", "timeline--done", "timeline--mark", "timeline--chapter", "timeline--now",
                         "timeline--term-odd", "timeline--term-even"}

    class Picked(Message):
        def __init__(self, t: float) -> None:
            self.t = t
            super().__init__()

    def __init__(self, runner, *, id: str | None = None, classes: str | None = None):
        super().__init__(id=id, classes=classes)
        self.runner = runner
        self._key = None
        self.terms_inline = False  # a replicated run on a short screen: terms as the bar's background

    def span(self) -> float:
        return span_of(self.runner)

    def marks(self) -> list[tuple[float, str, str]]:
        """(sim time, glyph, kind) of every mark: chapters, scripted faults, what happened."""
        out = [(ch.at, str(i + 1) if i < 9 else "§", "chapter") for i, ch in enumerate(self.runner.story)]
        seen = set()
        for t, _seq, kind, _label in self.runner.journal.marks:
            out.append((t, GLYPH.get(kind, "?"), kind))
            seen.add((round(t, 6), kind))
        for ev in self.runner.scripted:
            kind = SCRIPTED.get(ev.action)
            if kind and (round(ev.at, 6), kind) not in seen:
                out.append((ev.at, GLYPH[kind], kind))
        return out

    def now_column(self, width: int, span: float) -> int:
        return min(width - 1, int(self.runner.now / span * (width - 1)))

    def tick(self) -> None:
        """Redraw when what is drawn moves: the current moment's column (not the time itself:
        at 200 columns it stays put for many frames), the span, the marks."""
        width, span = self.size.width, self.span()
        column = self.now_column(width, span) if width > 0 else 0
        bands = self.runner.journal.terms.bands
        key = (width, column, span, len(self.runner.journal.marks), self.runner.generation, len(bands), bands[-1].end)
        if key != self._key:
            self._key = key
            self.refresh()

    def render(self) -> Text:
        width = self.size.width
        if width <= 0:
            return Text()
        span = self.span()
        bar_style = self.get_component_rich_style("timeline--bar")
        done_style = self.get_component_rich_style("timeline--done")
        mark_style = self.get_component_rich_style("timeline--mark")
        ch_style = self.get_component_rich_style("timeline--chapter")
        now_style = self.get_component_rich_style("timeline--now")
        now_col = self.now_column(width, span)
        wanted = [(now_col, "●")]
        kinds = {}
        for t, glyph, _kind in sorted(self.marks(), key=lambda m: (m[2] != "chapter", m[0])):
            wanted.append((int(t / span * (width - 1)), glyph))
        placed = place(wanted, width)
        for _t, glyph, kind in self.marks():
            kinds[glyph] = kind
        text = Text(no_wrap=True, overflow="crop")
        term_at = self.term_styles(width, span)
        for col in range(width):
            g = placed.get(col)
            if g is None:
                style = done_style if col < now_col else bar_style
                text.append("━" if col < now_col else "─", style + term_at[col] if col in term_at else style)
            elif g == "●":
                text.append(g, now_style)
            elif kinds.get(g) == "chapter":
                text.append(g, ch_style)
            else:
                text.append(g, mark_style)
        return text

    def term_styles(self, width: int, span: float) -> dict[int, Style]:
        """Column -> background of the term it falls in, when the terms have no row of their own."""
        if not self.terms_inline:
            return {}
        odd = self.get_component_rich_style("timeline--term-odd")
        even = self.get_component_rich_style("timeline--term-even")
        return {col: odd if band.term % 2 else even
                for c0, c1, band in columns(self.runner.journal.terms.bands, self.runner.now, span, width)
                for col in range(c0, c1)}

    def on_click(self, event: events.Click) -> None:
        width = self.size.width
        if width > 1:
            self.post_message(self.Picked(event.x / (width - 1) * self.span()))


class ChapterLine(Widget):
    """The story's current chapter: `ch 2/6 title: text`, wrapped over as many lines as the
    terminal's height allows (LINES_BY_HEIGHT); when the chapter is longer, its last line ends
    with `… S reads it all` and `S` (or a click) opens the chapter in full. Issue 35: a chapter
    cut to one line showed 18-55 % of its text at 80 columns, with no way to read the rest."""

    DEFAULT_CSS = """
    ChapterLine { height: auto; background: $boost; }
    ChapterLine > .chapter--title { color: $accent; text-style: bold; }
    """
    COMPONENT_CLASSES = {"chapter--title"}
    MORE = " … S reads it all"

    class Opened(Message):
        """The chapter line was clicked: show the chapter in full."""

    def __init__(self, runner, *, id: str | None = None, classes: str | None = None):
        super().__init__(id=id, classes=classes)
        self.runner = runner
        self._key: tuple | None = None

    def tick(self) -> None:
        i, _ = current_chapter(self.runner.story, self.runner.now)
        key = (i, self.size.width, self.app.size.height, self.runner.policy)
        if key != self._key:
            self._key = key
            self.refresh(layout=True)

    def most_lines(self) -> int:
        """Lines the chapter may take: more on a taller terminal (the maps need the rest)."""
        height = self.app.size.height
        return next(lines for rows, lines in LINES_BY_HEIGHT if height < rows)

    def full_text(self) -> Text:
        story = self.runner.story
        i, ch = current_chapter(story, self.runner.now)
        text = Text()
        if ch is None:
            if story:
                text.append(f" story: chapter 1 at {story[0].at:g} s (k goes there)", Style(dim=True))
            return text
        text.append(f" ch {i + 1}/{len(story)} {ch.title}", self.get_component_rich_style("chapter--title"))
        written_for = self.runner.written_for
        if self.runner.policy != written_for:
            text.append(f" [now {self.runner.policy}; the story is written for {written_for}]", Style(italic=True))
        if ch.text:
            text.append(": " + " ".join(ch.text.split()))
        return text

    def lines(self, width: int) -> list[Text]:
        """The chapter wrapped at `width`, cut to `most_lines()` with the marker when longer."""
        width = max(len(self.MORE) + 1, width)
        wrapped = list(self.full_text().wrap(self.app.console, width))
        most = self.most_lines()
        if len(wrapped) <= most:
            return wrapped
        kept = wrapped[:most]
        last = kept[-1]
        last.rstrip()
        last.truncate(width - len(self.MORE))
        last.append(self.MORE, Style(dim=True, italic=True))
        return kept

    def cut(self) -> bool:
        return len(self.full_text().wrap(self.app.console, max(1, self.size.width))) > self.most_lines()

    def get_content_height(self, container, viewport, width: int) -> int:
        return max(1, len(self.lines(width)))

    def render(self) -> Text:
        return Text("\n").join(self.lines(self.size.width))

    def on_click(self, event: events.Click) -> None:
        self.post_message(self.Opened())


LINES_BY_HEIGHT = ((45, 1), (10**6, 6))
"""(terminal rows below which, chapter lines at most): one line, and `S`, below 45 rows (at
120x40 a second line cut the latency panel's last row off under pressure.yaml's four maps);
from 45 rows, 6 lines, which hold a chapter whole from about 100 columns."""
