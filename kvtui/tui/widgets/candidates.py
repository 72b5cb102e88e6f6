"""Every candidate of one routing decision: its features and score, the pick marked.

Filled when a line of the decision log is highlighted (or a step lands on a decision).
Ineligible nodes are listed too (✖), with the reason they would refuse the request; the
chosen node is marked → (so the pick reads without colour).

Rows are sorted by score (the pick first, ineligible nodes last) with a `behind` column, the
candidate's distance from the pick, so the runner-up and its margin read at a glance. Every
node is listed; the table scrolls (both ways) inside its panel, and its columns are fitted to
the panel's width: two-space gaps, then one, then shortened feature names. When even that is
wider than the panel (a policy with many features beside a 120-column screen's maps) the table
turns: one column per candidate, best first, one row per column name, so every name stays on
screen and the pick sits beside its runners-up; candidates past the edge scroll. The heading
line above it (request → node, policy, score, margin) wraps rather than being cut.

Drawn as plain aligned text rather than a DataTable: it is rebuilt several times a second
while playing, and a few lines of text cost almost nothing to draw.
"""

from __future__ import annotations

import textwrap

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import ScrollableContainer
from textual.widgets import Static

from kvtui.events import RouteDecided
from kvtui.run.narrate import fmt_score
from kvtui.tui.widgets.in_place import update_in_place


def ranked(ev: RouteDecided) -> list:
    """Candidates best first: eligible by score (the pick first among equals), then the rest."""
    return sorted(
        ev.candidates,
        key=lambda c: (not c.eligible, -c.score if c.eligible else 0.0, c.node != ev.node, c.node),
    )


def candidate_rows(ev: RouteDecided, short: int = 0) -> tuple[list[str], list[list[str]]]:
    """Header and rows (all strings) for a decision's candidates, best first. `short` > 0 cuts
    feature names to that many characters (to fit a narrow panel)."""
    names: list[str] = []
    for c in ev.candidates:
        for key, _ in c.features:
            if key not in names:
                names.append(key)
    shown = [n[:short] if short else n for n in names]
    header = ["  node", "score", "behind", *shown, "note"]
    rows = []
    best = next((c.score for c in ev.candidates if c.node == ev.node), None)
    for c in ranked(ev):
        pick = "→" if c.node == ev.node else ("✖" if not c.eligible else " ")
        behind = "-" if best is None or not c.eligible or c.node == ev.node else fmt_score(best - c.score)
        row = [f"{pick} {c.node}", fmt_score(c.score) if c.eligible else "-", behind]
        row += [fmt_score(c.feature(name)) for name in names]
        note = c.note.removeprefix(f"{c.node} ")  # "node-b is down" in node-b's row: "is down"
        row.append(note or ("picked" if c.node == ev.node else ""))
        rows.append(row)
    return header, rows


def _cut(text: str, room: int) -> str:
    return text if len(text) <= room else text[: max(room - 1, 0)] + "…"


def _notes_below(rows: list[list[str]], rooms: list[int], width: int) -> list[str]:
    """In full, wrapped to `width`, the notes (why a node was not eligible) cut in their cells."""
    out: list[str] = []
    for row, room in zip(rows, rooms):
        if len(row[-1]) > room and row[-1] != "picked":
            out += textwrap.wrap(f"{row[0].strip()}: {row[-1]}", width, subsequent_indent="  ")
    return out


def fit_table(ev: RouteDecided, width: int) -> tuple[str, list[str], list] | None:
    """(header line, lines, candidates in row order) fitted to `width`, or None when even the
    tightest pass is wider. A note longer than the room left is cut and follows in full."""
    for gap, short in ((2, 0), (1, 0), (1, 6), (1, 4)):
        header, rows = candidate_rows(ev, short)
        widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header) - 1)]

        def fmt(row: list[str]) -> str:
            cells = [row[0].ljust(widths[0])] + [row[i].rjust(widths[i]) for i in range(1, len(row) - 1)]  # noqa: B023
            return (" " * gap).join(cells) + " " * gap  # noqa: B023 (used in this pass)

        room = width - len(fmt(header))
        if room >= len(header[-1]):
            lines = [fmt(r) + _cut(r[-1], room) for r in rows]
            return fmt(header) + header[-1], lines + _notes_below(rows, [room] * len(rows), width), ranked(ev)
    return None


def turned_table(ev: RouteDecided, width: int) -> tuple[list[str], list[tuple[int, int]]]:
    """The table turned: a column per candidate, best first, and a row per column name ("node"
    heads the candidates). Returns the lines and each candidate column's (start, end); a
    note is cut to its column, and the cut ones follow the table in full, wrapped to `width`."""
    header, rows = candidate_rows(ev)
    first = max(len(h) for h in header)
    widths = [max(len(r[i]) for i in range(len(header) - 1)) for r in rows]  # the note does not widen a column
    spans, x = [], first + 1
    for w in widths:
        spans.append((x, x + w))
        x += w + 1
    lines = [" ".join([header[i].strip().ljust(first), *(_cut(r[i], w).rjust(w) for r, w in zip(rows, widths))])
             for i in range(len(header))]
    return lines + _notes_below(rows, widths, width), spans


def pick_score(ev: RouteDecided) -> str:
    """The chosen candidate's score in the policy's own units ("-" when refused or unscored)."""
    score = next((c.score for c in ev.candidates if c.node == ev.node and c.eligible), None)
    return "-" if score is None else fmt_score(score)


def decision_line(ev: RouteDecided) -> str:
    """One line above the table: whose decision, the margin to the runner-up, staleness."""
    eligible = sum(1 for c in ev.candidates if c.eligible)
    if ev.node is None:
        lead = "refused"
    elif eligible < 2:
        lead = "only candidate"
    elif ev.tie:
        lead = ev.tie
    elif ev.margin == 0:
        lead = "picked by rule, no runner-up score"
    else:
        lead = f"margin {fmt_score(ev.margin)} over the runner-up"
    pick = f"{ev.request} → {ev.node or 'none'}"
    score = pick_score(ev)
    line = f"{pick} · {ev.policy}" + ("" if score == "-" else f" · score {score}") + f" · {lead}"
    return line + (f" · STALE: {ev.stale}" if ev.stale else "")


class CandidateTable(ScrollableContainer):
    DEFAULT_CSS = """
    CandidateTable { height: auto; background: $surface; overflow-x: auto; overflow-y: auto;
                     scrollbar-gutter: stable; scrollbar-size-vertical: 1; }
    CandidateTable > Static { width: auto; height: auto; }
    CandidateTable > .candidates--header { text-style: bold underline; color: $text-muted; }
    CandidateTable > .candidates--pick { text-style: bold; color: $primary; }
    CandidateTable > .candidates--out { color: $text-muted; }
    """
    COMPONENT_CLASSES = {"candidates--header", "candidates--pick", "candidates--out"}

    def __init__(self, *, id: str | None = None, classes: str | None = None):
        super().__init__(id=id, classes=classes)
        self.decision: RouteDecided | None = None
        self.body = Static("", markup=False)
        self._width = -1

    def compose(self) -> ComposeResult:
        yield self.body

    def on_mount(self) -> None:
        self.show_decision(None, force=True)
        self.app.theme_changed_signal.subscribe(self, lambda _t: self.show_decision(self.decision, force=True))

    def on_resize(self, _event) -> None:
        if self.size.width != self._width:
            self.show_decision(self.decision, force=True)

    def tick(self, frame) -> None:
        """The panels' tick (tui/panels.py): the decision on show."""
        self.show_decision(frame.decision)

    @property
    def plain(self) -> str:
        return str(self.body.render()) if self.body.is_mounted else ""

    def show_decision(self, ev: RouteDecided | None, force: bool = False) -> None:
        same = (ev is None and self.decision is None) or (
            ev is not None and self.decision is not None and ev.seq == self.decision.seq
        )
        if same and not force:
            return
        self.decision = ev
        self._width = self.size.width
        if ev is None:
            text = Text("select a routing decision to see every candidate", style=self.get_component_rich_style("candidates--out"))
        else:
            text = self._table(ev)
        update_in_place(self.body, text)

    def _content_width(self) -> int:
        return max(20, self.scrollable_content_region.width or self.size.width or 80)

    def _table(self, ev: RouteDecided) -> Text:
        width = self._content_width()
        fitted = fit_table(ev, width)
        head_style = self.get_component_rich_style("candidates--header")
        pick_style = self.get_component_rich_style("candidates--pick")
        out_style = self.get_component_rich_style("candidates--out")
        text = Text(no_wrap=True)
        text.append("\n".join(textwrap.wrap(decision_line(ev), width, subsequent_indent="  ")), out_style)
        text.append("\n")
        if fitted is None:
            return self._turned(text, ev, ranked(ev))
        head, lines, cands = fitted
        text.append(head, head_style)
        for i, line in enumerate(lines):
            text.append("\n")
            c = cands[i] if i < len(cands) else None
            style = pick_style if c is not None and c.node == ev.node else out_style if c is None or not c.eligible else ""
            text.append(line, style)
        return text

    def _turned(self, text: Text, ev: RouteDecided, cands: list) -> Text:
        """The turned table (see `turned_table`), the pick's column and ineligible ones styled."""
        lines, spans = turned_table(ev, self._content_width())
        for i, line in enumerate(lines):
            start = len(text)
            text.append(line, self.get_component_rich_style("candidates--header") if i == 0 else "")
            for (a, b), c in zip(spans, cands):
                if c.node == ev.node or not c.eligible:
                    style = "candidates--pick" if c.node == ev.node else "candidates--out"
                    text.stylize(self.get_component_rich_style(style), start + a, start + min(b, len(line)))
            text.append("\n")
        text.rstrip()
        return text
