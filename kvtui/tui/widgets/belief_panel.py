"""Belief: what the router's index credits each engine with against what the engine holds,
per storage tier, and per engine the hit rate the router gave away (available vs achieved),
with the selected engine's (`[` / `]`) story in words below.

The figures are kvtui/run/belief.py's; what the columns mean differs between a simulation (the
pools are known: `holds`, `gone` credited and not held, `new` held and not credited) and real
engines (`in use` from /metrics, `heard` since the last KV batch, `served` and the blocks
promised and not served); the headers say which.
"""

from __future__ import annotations

from rich.text import Text
from textual.widgets import Static

from kvtui.run.belief import BeliefView, EngineBelief, Routed, TierRow, why
from kvtui.tui.widgets.block_map import fit_name
from kvtui.tui.widgets.in_place import update_in_place

SIM_HEAD = f"  {'engine':<10} {'tier':<4}{'index':>6}{'holds':>6}{'gone':>5}{'new':>5} │{'req':>5}{'best':>7}{'chose':>7}{'lost':>6}"
LIVE_HEAD = (f"  {'engine':<10} {'tier':<4}{'index':>6}{'in use':>7}{'heard':>6} │{'req':>5}{'best':>7}{'chose':>7}"
             f"{'served':>7}{'lost':>6}{'unsrv':>6}")


def _pct(r: Routed, blocks: int | None) -> str:
    rate = r.rate(blocks)
    return "-" if rate is None else f"{100 * rate:.1f}"


def _num(v: int | None) -> str:
    return "-" if v is None else f"{v:,}"


def _routed_cells(r: Routed, live: bool) -> str:
    lost = "-" if r.given_away is None else f"{100 * r.given_away:.1f}"
    if live:
        return (f"{r.requests:>5}{_pct(r, r.available):>7}{_pct(r, r.chosen):>7}{_pct(r, r.served):>7}{lost:>6}"
                f"{_num(r.promised_unserved):>6}")
    return f"{r.requests:>5}{_pct(r, r.available):>7}{_pct(r, r.chosen):>7}{lost:>6}"


def _tier_cells(t: TierRow, e: EngineBelief, live: bool) -> str:
    if live:
        heard = "-" if e.heard_s is None else f"{e.heard_s:.1f}s"
        return f"{t.tier:<4}{t.credited:>6}{_num(t.holds):>7}{heard:>6}"
    return f"{t.tier:<4}{t.credited:>6}{_num(t.holds):>6}{_num(t.wrong):>5}{_num(t.unknown):>5}"


def engine_lines(e: EngineBelief, live: bool, selected: bool) -> list[Text]:
    """One line per tier; the engine's routed figures on its first."""
    mark = "▸ " if selected else "  "
    name = fit_name(e.name, 10) + ("" if e.up else "!")
    out = []
    for i, t in enumerate(e.tiers):
        head = f"{mark}{name:<10} " if i == 0 else " " * 13
        line = Text(head, "bold" if selected and i == 0 else "")
        wrong = bool(t.wrong or t.unknown) or (live and bool(e.routed.promised_unserved) and i == 0)
        line.append(_tier_cells(t, e, live), "yellow" if wrong else "")
        line.append(" │" + (_routed_cells(e.routed, live) if i == 0 else ""))
        out.append(line)
    return out


def panel_text(view: BeliefView, selected: str | None) -> Text:
    text = Text()
    text.append(view.headline + "\n", "bold")
    text.append(LIVE_HEAD if view.live else SIM_HEAD, "dim")
    for e in view.engines:
        for line in engine_lines(e, view.live, e.name == selected):
            text.append("\n")
            text.append_text(line)
    t = view.total
    lost = "-" if t.given_away is None else f"{100 * t.given_away:.1f} pp"
    served = f", served {_pct(t, t.served)}%" if view.live else ""
    text.append(f"\nall: {t.requests:,} requests, best {_pct(t, t.available)}%, chosen {_pct(t, t.chosen)}%{served}: "
                f"{lost} given away", "bold")
    if selected is not None:
        text.append("\n" + why(view, selected))
    return text


class BeliefPanel(Static):
    DEFAULT_CSS = """
    BeliefPanel { height: auto; max-height: 40%; padding: 0 1; overflow-y: auto; scrollbar-size-vertical: 1; }
    """

    def __init__(self, runner, *, id: str | None = None, classes: str | None = None):
        super().__init__("", id=id, classes=classes)
        self.runner = runner
        self._key: tuple | None = None
        self.text = Text()

    def selected(self, frame) -> str | None:
        """The engine the Why is about: the app's selected node (`[` / `]`), else the one the
        decision on show went to, else the first."""
        names = frame.run.node_names()
        chosen = getattr(self.app, "selected_node", None) or (frame.decision.node if frame.decision else None)
        return chosen if chosen in names else (names[0] if names else None)

    def tick(self, frame) -> None:
        """The panels' tick (tui/panels.py): redrawn when the run moved or the selection did."""
        run = frame.run
        if not self.is_mounted:
            return
        selected = self.selected(frame)
        key = (run.generation, run.position, run.now, selected)
        if key == self._key:
            return
        self._key = key
        view = run.belief_view()
        self.text = Text("no router in this run") if view is None else panel_text(view, selected)
        update_in_place(self, self.text)
