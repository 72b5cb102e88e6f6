"""Every candidate of one routing decision: its features and score, the pick marked.

Filled when a line of the decision log is highlighted (or a step lands on a decision).
Ineligible nodes are listed too (✖), with the reason they would refuse the request; the
chosen node is marked → (so the pick reads without colour).

Drawn as plain aligned text rather than a DataTable: it is rebuilt several times a second
while playing, and a few lines of text cost almost nothing to draw.
"""

from __future__ import annotations

from rich.text import Text
from textual.widgets import Static

from kvtui.events import RouteDecided


def _num(v: float) -> str:
    if float(v).is_integer():
        return f"{int(v):,}"
    return f"{v:.3f}".rstrip("0").rstrip(".")


def candidate_rows(ev: RouteDecided) -> tuple[list[str], list[list[str]]]:
    """Header and rows (all strings) for a decision's candidates."""
    names: list[str] = []
    for c in ev.candidates:
        for key, _ in c.features:
            if key not in names:
                names.append(key)
    header = ["  node", "score", *names, "note"]
    rows = []
    for c in ev.candidates:
        pick = "→" if c.node == ev.node else ("✖" if not c.eligible else " ")
        row = [f"{pick} {c.node}", _num(c.score) if c.eligible else "-"]
        row += [_num(c.feature(name)) for name in names]
        row.append(c.note or ("picked" if c.node == ev.node else ""))
        rows.append(row)
    return header, rows


def decision_line(ev: RouteDecided) -> str:
    """One line above the table: whose decision, the margin to the runner-up, staleness."""
    eligible = sum(1 for c in ev.candidates if c.eligible)
    if ev.node is None:
        lead = "refused"
    elif eligible < 2:
        lead = "only candidate"
    elif ev.margin == 0:
        lead = "tie, drawn by the seeded RNG"
    else:
        lead = f"margin {_num(ev.margin)} over the runner-up"
    line = f"{ev.request} · {ev.policy} · {lead}"
    return line + (f" · STALE: {ev.stale}" if ev.stale else "")


class CandidateTable(Static):
    DEFAULT_CSS = """
    CandidateTable { height: auto; background: $surface; text-wrap: nowrap; text-overflow: ellipsis; }
    CandidateTable > .candidates--header { text-style: bold underline; color: $text-muted; }
    CandidateTable > .candidates--pick { text-style: bold; color: $primary; }
    CandidateTable > .candidates--out { color: $text-muted; }
    """
    COMPONENT_CLASSES = {"candidates--header", "candidates--pick", "candidates--out"}

    def __init__(self, *, id: str | None = None, classes: str | None = None):
        super().__init__("", id=id, classes=classes, markup=False)
        self.decision: RouteDecided | None = None
        self._lines = -1

    def on_mount(self) -> None:
        self.show_decision(None, force=True)
        self.app.theme_changed_signal.subscribe(self, lambda _t: self.show_decision(self.decision, force=True))

    def show_decision(self, ev: RouteDecided | None, force: bool = False) -> None:
        same = (ev is None and self.decision is None) or (
            ev is not None and self.decision is not None and ev.seq == self.decision.seq
        )
        if same and not force:
            return
        self.decision = ev
        if ev is None:
            text = Text("select a routing decision to see every candidate", style=self.get_component_rich_style("candidates--out"))
        else:
            text = self._table(ev)
        lines = text.plain.count("\n") + 1
        self.update(text, layout=lines != self._lines)
        self._lines = lines

    def _table(self, ev: RouteDecided) -> Text:
        header, rows = candidate_rows(ev)
        widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
        head_style = self.get_component_rich_style("candidates--header")
        pick_style = self.get_component_rich_style("candidates--pick")
        out_style = self.get_component_rich_style("candidates--out")

        def fmt(row: list[str]) -> str:
            cells = [row[0].ljust(widths[0])] + [row[i].rjust(widths[i]) for i in range(1, len(row) - 1)]
            return "  ".join(cells) + "  " + row[-1]

        text = Text(no_wrap=True, overflow="ellipsis")
        text.append(decision_line(ev), out_style)
        text.append("\n")
        text.append(fmt(header), head_style)
        for row, c in zip(rows, ev.candidates):
            text.append("\n")
            style = pick_style if c.node == ev.node else (out_style if not c.eligible else "")
            text.append(fmt(row), style)
        return text
