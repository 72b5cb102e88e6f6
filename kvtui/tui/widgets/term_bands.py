"""Terms as bands under the timeline, for a replicated control plane: one band per term with its
leader named (`t2 m3`), on the timeline's own scale, so an election lines up with its mark above
(the new leader's ◆ is a timeline mark); the gap between two bands (`·`) is time without a leader.
Drawn up to the current moment; stepping back shortens them (kvtui/run/terms.py, in the journal).

Shown only for a run whose metadata store is a Raft group (as the Raft panel is), and from
ROWS_FOR_BANDS rows: on a shorter screen the bands are the timeline bar's background instead
(unlabelled), since at 80x24 the Raft panel has exactly its header and three member rows.
"""

from __future__ import annotations

from rich.text import Text
from textual.widget import Widget

from kvtui.run.terms import Term, columns
from kvtui.tui.widgets.timeline import span_of

ROWS_FOR_BANDS = 30


def label(band: Term, cells: int) -> str:
    """The band's words, as many as fit: `t2 m3`, then `2`, then nothing."""
    for words in (f"t{band.term} {band.leader}", str(band.term)):
        if len(words) <= cells:
            return words
    return ""


class TermBands(Widget):
    DEFAULT_CSS = """
    TermBands { height: 1; }
    TermBands > .terms--odd { background: $primary 35%; }
    TermBands > .terms--even { background: $secondary 35%; }
    TermBands > .terms--gap { color: $error; }
    """
    COMPONENT_CLASSES = {"terms--odd", "terms--even", "terms--gap"}

    def __init__(self, runner, *, id: str | None = None, classes: str | None = None):
        super().__init__(id=id, classes=classes)
        self.runner = runner
        self._key: tuple | None = None

    def tick(self) -> None:
        width, span = self.size.width, span_of(self.runner)
        bands = self.runner.journal.terms.bands
        now_col = int(self.runner.now / span * max(0, width - 1))
        key = (width, span, now_col, len(bands), bands[-1].end, self.runner.generation)
        if key != self._key:
            self._key = key
            self.refresh()

    def render(self) -> Text:
        width, now = self.size.width, self.runner.now
        text = Text(no_wrap=True, overflow="crop")
        gap = self.get_component_rich_style("terms--gap")
        col = 0
        for c0, c1, band in columns(self.runner.journal.terms.bands, now, span_of(self.runner), width):
            if c0 > col:
                text.append("·" * (c0 - col), gap)
            c0 = max(c0, col)
            if c1 > c0:
                style = self.get_component_rich_style("terms--odd" if band.term % 2 else "terms--even")
                text.append(label(band, c1 - c0).ljust(c1 - c0), style)
                col = c1
        return text
