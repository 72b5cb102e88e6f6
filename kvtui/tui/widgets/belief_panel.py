"""Belief: what the router's index credits each engine with against what the engine holds,
per storage tier, and per engine the hit rate the router gave away (available vs achieved),
with the selected engine's (`[` / `]`) story in words below.

The figures are kvtui/run/belief.py's; what the columns mean differs between a simulation (the
pools are known: `holds`, `gone` credited and not held, `new` held and not credited) and real
engines (`in use` from /metrics, `heard` since the last KV batch, `served`, and `stale`: the
blocks promised and not served); the headers say which. Where the panel is too narrow for one
table (a wide screen's right column), the held side goes above the routed side.
"""

from __future__ import annotations

from rich.text import Text
from textual.widgets import Static

from kvtui.run.belief import BeliefView, EngineBelief, Routed, TierRow, why
from kvtui.tui.widgets.block_map import fit_name
from kvtui.tui.widgets.in_place import update_in_place

# (the held side's header, the routed side's header) of a simulation and of real engines
SIM_HEAD = (f"{'tier':<4}{'index':>6}{'holds':>6}{'gone':>5}{'new':>5}", f"{'req':>5}{'best':>7}{'chose':>7}{'lost':>6}")
LIVE_HEAD = (f"{'tier':<4}{'index':>6}{'in use':>7}{'heard':>6}",
             f"{'req':>5}{'best':>7}{'chose':>7}{'served':>7}{'lost':>6}{'stale':>6}")
NAME = 13  # the selection mark, the engine's name (10) and a space


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


def _name(e: EngineBelief, selected: bool) -> str:
    return ("▸ " if selected else "  ") + f"{fit_name(e.name, 10) + ('' if e.up else '!'):<10} "


def _rows(view: BeliefView, selected: str | None, sides: tuple[bool, bool]) -> list[Text]:
    """The engines' lines with the held side, the routed side, or both (`sides`); the held side
    has a line per tier and is yellow where the index and the engine disagree."""
    out = []
    for e in view.engines:
        mine = e.name == selected
        tiers = e.tiers if sides[0] else e.tiers[:1]
        for i, t in enumerate(tiers):
            line = Text(_name(e, mine) if i == 0 else " " * NAME, "bold" if mine and i == 0 else "")
            if sides[0]:
                wrong = bool(t.wrong or t.unknown) or (view.live and i == 0 and bool(e.routed.promised_unserved))
                line.append(_tier_cells(t, e, view.live), "yellow" if wrong else "")
            if sides[1]:
                line.append((" │" if sides[0] else "") + (_routed_cells(e.routed, view.live) if i == 0 else ""))
            out.append(line)
    return out


def _table(view: BeliefView, selected: str | None, width: int) -> list[Text]:
    """One table when `width` takes it, else the held side above the routed side."""
    held, routed = LIVE_HEAD if view.live else SIM_HEAD
    if not width or width >= NAME + len(held) + 2 + len(routed):
        return [Text(" " * NAME + held + " │" + routed, "dim"), *_rows(view, selected, (True, True))]
    return [Text(" " * NAME + held, "dim"), *_rows(view, selected, (True, False)),
            Text(" " * NAME + routed, "dim"), *_rows(view, selected, (False, True))]


def panel_text(view: BeliefView, selected: str | None, width: int = 0) -> Text:
    """The table (fitted to `width`; 0: one table), the totals, how the index is fed, and the
    selected engine in words."""
    text = Text("\n").join(_table(view, selected, width))
    t = view.total
    lost = "-" if t.given_away is None else f"{100 * t.given_away:.1f} pp"
    served = f", served {_pct(t, t.served)}%" if view.live else ""
    text.append(f"\nall: {t.requests:,} requests, best {_pct(t, t.available)}%, chosen {_pct(t, t.chosen)}%{served}: "
                f"{lost} given away", "bold")
    text.append("\n" + view.headline, "dim")
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
        self._frame = None  # the last tick's, for a panel shown between two ticks
        self.text = Text()

    def on_show(self) -> None:
        """Hidden panels skip their ticks, so one shown while the run is paused (`v` on a narrow
        screen) draws itself from the last tick's frame, not blank until the run moves."""
        if self._frame is not None:
            self.tick(self._frame)

    def selected(self, frame) -> str | None:
        """The engine the Why is about: the app's selected node (`[` / `]`), else the one the
        decision on show went to, else the first."""
        names = frame.run.node_names()
        chosen = getattr(self.app, "selected_node", None) or (frame.decision.node if frame.decision else None)
        return chosen if chosen in names else (names[0] if names else None)

    def tick(self, frame) -> None:
        """The panels' tick (tui/panels.py): redrawn when the run moved or the selection did."""
        run = frame.run
        self._frame = frame
        if not self.is_mounted or not self.display:
            return  # hidden (another tab on a narrow screen, a split screen's side): comparing sets costs
        selected = self.selected(frame)
        width = self.content_region.width
        key = (run.generation, run.position, run.now, selected, width)
        if key == self._key:
            return
        self._key = key
        view = run.belief_view()
        self.text = Text("no router in this run") if view is None else panel_text(view, selected, width)
        update_in_place(self, self.text)
