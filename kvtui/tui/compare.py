"""Split-screen compare: `kvtui SCENARIO --vs POLICY`.

Two simulations of one scenario with the same seed and workload, the scenario's policy (or
`--policy`) on the left and POLICY on the right, kept in lockstep by sim time (the engine's
`Lockstep`). Each side shows its block maps, key numbers, the Why of its latest decision or
event and its event log, so you see why one side wins; a line under them states the difference
live (token hit rate, TTFT p50 and p95, rejections, evictions), shortened to fit one line. The
lesson "prefix-first melts one node, load-aware spreads it" is one screen. `--vs pattern:B` keeps
the policy and sets the right side's Raft group to another control-plane pattern
(kvtui/scenario/patterns.py): a leader kill held on one side, routed stale on the other.

Keys: space play/pause, s step, g go to a time (both sides) or an event number (the left's;
the right follows to its time), v the next lower panel on both sides, + / - speed, ? help, q quit.

It plays on the one frame loop (tui/frame_loop.py), and each side's lower panel is one of the
main screen's panels (tui/panels.py), refreshed by the same tick: a panel added there reaches
this screen too. The single view's jump keys
(e, r, p, ...) say why they do not jump here rather than doing nothing.
"""

from __future__ import annotations

import time
from typing import Callable

from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.widgets import Footer, Static

from kvtui.scenario.model import Scenario
from kvtui.scenario.run_spec import RunSpec, as_spec, resolve
from kvtui.scenario.patterns import pattern_of, with_pattern
from kvtui.run import Lockstep, Run
from kvtui.views import KeyFigures
from kvtui.tui.controls import CONTROLS, DEFAULT_SPEED, NEXT, SPEEDS
from kvtui.tui.frame_loop import FrameLoop
from kvtui.tui.panels import Frame, panels_of, views
from kvtui.tui.toasts import FittedToasts
from kvtui.tui.themes import DEFAULT_THEME, DEFAULT_VARIABLES, load_themes
from kvtui.tui.widgets.block_map import BlockMap
from kvtui.tui.widgets.event_log import EventLog
from kvtui.tui.widgets.explanation import Explanation
from kvtui.tui.widgets.legend import Legend
from kvtui.tui.widgets.status_bar import StatusBar

FPS = 20
TALL = 30  # rows from which each side shows its Why and event log


def _ms(v: float | None) -> str:
    return "-" if v is None else (f"{v:.0f}ms" if v >= 10 else f"{v:.1f}ms")


def figures_text(f: KeyFigures, width: int = 10_000) -> str:
    """One side's key numbers (its border title names the policy); the short labels when the
    long ones would not fit `width` (at 250 columns the long line wrapped a lone figure)."""
    for labels in (_FIGURES_LONG, _FIGURES_SHORT):
        hits, req, done, rej, pre, ev = labels
        text = (
            f"{hits} {f.token_hit_rate:.0%} · {req} {f.request_hit_rate:.0%} · "
            f"TTFT p50 {_ms(f.ttft_p50_ms)} p95 {_ms(f.ttft_p95_ms)} · {done} {f.completed}/{f.arrived} · "
            f"{rej} {f.rejected} · {pre} {f.preempted} · {ev} {f.evicted_blocks}"
        )
        if len(text) <= width:
            return text
    return text


_FIGURES_LONG = ("token hits", "requests hit", "done", "rejected", "preempted", "evicted")
_FIGURES_SHORT = ("hits", "req hit", "done", "rej", "preempt", "evict")


def difference_text(left: str, a: KeyFigures, right: str, b: KeyFigures, width: int = 10_000) -> str:
    """One line: how the right run differs from the left, in the numbers that matter; the
    short labels when the long ones would not fit `width` (it wrapped at 120 columns)."""
    for labels in (_LONG, _SHORT):
        text = _difference(labels, left, a, right, b)
        if len(text) <= width:
            return text
    return text


_LONG = ("token hit rate", "TTFT p50", "p95", "rejections", "evicted blocks", " · ")
_SHORT = ("hits", "TTFT p50", "p95", "rej", "evict", " · ")


def _difference(labels: tuple[str, ...], left: str, a: KeyFigures, right: str, b: KeyFigures) -> str:
    hits, p50, p95, rej, evicted, sep = labels
    gap = _shown_percent(b.token_hit_rate) - _shown_percent(a.token_hit_rate)
    parts = [f"{hits} {gap:+d} {'pt' if abs(gap) == 1 else 'pts'}"]
    if a.ttft_p50_ms is not None and b.ttft_p50_ms is not None:
        parts.append(f"{p50} {b.ttft_p50_ms - a.ttft_p50_ms:+.1f} ms")
    if a.ttft_p95_ms is not None and b.ttft_p95_ms is not None:
        parts.append(f"{p95} {b.ttft_p95_ms - a.ttft_p95_ms:+.1f} ms")
    parts.append(f"{rej} {b.rejected - a.rejected:+d}")
    parts.append(f"{evicted} {b.evicted_blocks - a.evicted_blocks:+d}")
    return f"Δ {right} vs {left}: " + sep.join(parts)


def _shown_percent(rate: float) -> int:
    """A rate as the side's figures line rounds it (`:.0%`): the difference of the two shown
    numbers, so 66 % and 70 % above never read "+3 pts" below (the unrounded gap was 3.4)."""
    return int(f"{100 * rate:.0f}")


PATTERN = "pattern:"
"""`--vs pattern:B`: the right side is the same run with its Raft group as another pattern
(kvtui/scenario/patterns.py), not another policy."""


def _titled(label: str) -> str:
    return label if label.startswith("pattern") else f"policy {label}"


class Side(Vertical):
    """One run: its policy, block maps, key numbers, the Why of its latest decision or event,
    and its event log (those two only on screens of TALL rows or more)."""

    DEFAULT_CSS = """
    Side { width: 1fr; height: 1fr; border: round $panel; padding: 0 0; }
    Side > .side-figures { height: auto; color: $text-muted; }
    Side > BlockMap { height: 1fr; max-height: 100%; }
    Side > Explanation { height: 6; background: $boost; padding: 0 1; }
    Side > .view { height: 6; display: none; }
    .-short Side > Explanation, .-short Side > .view { display: none !important; }
    """

    def __init__(self, runner: Run, *, id: str, why_key: str, label: str):
        super().__init__(id=id)
        self.runner = runner
        self.border_title = label
        # held, not queried: a key or a resize can tick the side before its children mount
        self.figures = Static("", classes="side-figures", markup=False)
        self.block_map = BlockMap(self.runner)
        self.why = Explanation(cut_hint=f" · cut: {why_key} reads it all")
        self.panels = [panel.make(runner, panel.id) for panel in panels_of(runner)]

    def compose(self) -> ComposeResult:
        yield self.figures
        yield self.block_map
        yield self.why
        yield from self.panels

    @property
    def events(self) -> EventLog:
        """Its event log (the panel each side shows first)."""
        return next(p for p in self.panels if isinstance(p, EventLog))

    def show_view(self, view: str) -> None:
        for panel in self.panels:
            panel.display = panel.id == view

    def show_figures(self) -> None:
        self.figures.update(figures_text(self.runner.key_figures(), self.figures.size.width or 10_000))

    def on_resize(self) -> None:
        """The first tick can come before layout (no width yet): fit the numbers once it is known."""
        if self.block_map.is_mounted:
            self.show_figures()

    def tick(self) -> None:
        if not self.block_map.is_mounted:
            return
        self.block_map.tick()
        self.show_figures()
        ev = self.runner.last_interesting
        self.why.show(ev, self.runner.explain(ev), "latest")
        frame = Frame(self.runner, ev, self.runner.decisions[-1] if self.runner.decisions else None)
        for panel in self.panels:
            panel.tick(frame)  # type: ignore[attr-defined]  # every row's widget ticks (tui/panels.py)


class CompareApp(FrameLoop, FittedToasts, App[None]):
    TITLE = "kvtui compare"
    CSS = """
    #sides { height: 1fr; }
    #diff { height: auto; background: $boost; text-style: bold; padding: 0 1; }
    #whole { height: auto; background: $boost; padding: 0 1; }
    Toast { max-width: 75%; }  /* as app.tcss: Textual's 50 % is 40 columns at 80 */
    """
    BINDINGS = [
        Binding("question_mark", "help", "Help", key_display="?"),
        Binding("q", "quit", "Quit"),
        Binding("space", "toggle_play", "Play/Pause"),
        Binding("s", "step", "Step"),
        Binding("g", "goto", "Go to"),
        Binding("v", "next_view", "View", show=False),
        Binding("y", "why('left')", "Why (left)", show=False),
        Binding("Y", "why('right')", "Why (right)", show=False),
        Binding("plus,equals_sign", "speed(1)", "Faster", key_display="+"),
        Binding("minus", "speed(-1)", "Slower", key_display="-"),
        *(Binding(c.keys, f"no_jump('{c.label}')", c.label, show=False) for c in CONTROLS if c.group is NEXT),
    ]

    def __init__(self, left: Run, right: Run, labels: tuple[str, str], name: str, theme: str | None = None,
                 fps: int = FPS, shift: tuple[float, float] = (0.0, 0.0), titles: tuple[str, str] | None = None,
                 whole: Callable[[int], str] | None = None, help_panels: tuple[tuple[str, str], ...] | None = None):
        """`left` and `right` on one clock (`shift`: see Lockstep), named `labels` on the Δ line
        and `titles` on their borders; `whole(width)`, a line of figures over the whole runs under
        the Δ line, fitted to `width` (the counterfactual replay's table, kvtui/tui/counterfactual.py)."""
        self._kvtui_themes = load_themes()
        super().__init__()
        for t in self._kvtui_themes:
            self.register_theme(t)
        self.theme = theme or DEFAULT_THEME
        self.left, self.right, self.labels, self.run_name = left, right, labels, name
        self.titles = titles or (_titled(labels[0]), _titled(labels[1]))
        self.whole = whole
        self.help_panels = HELP_PANELS if help_panels is None else help_panels
        self.lockstep = Lockstep(self.left.source, self.right.source, shift)
        self.fps = fps
        self.start_loop()
        self.playing = False
        self.speed = DEFAULT_SPEED
        self.view = "events"  # the lower panel each side shows (v: the next)

    def get_theme_variable_defaults(self) -> dict[str, str]:
        return dict(DEFAULT_VARIABLES)

    def compose(self) -> ComposeResult:
        yield StatusBar(id="status")
        yield Legend(self.left, id="legend")
        with Horizontal(id="sides"):
            yield Side(self.left, id="left", why_key="y", label=self.titles[0])
            yield Side(self.right, id="right", why_key="Y", label=self.titles[1])
        yield Static("", id="diff", markup=False)
        if self.whole is not None:
            yield Static("", id="whole", markup=False)
        yield Footer()

    def on_mount(self) -> None:
        for side in self.query(Side):
            side.show_view(self.view)
        self.refresh_panels()
        if self.fps > 0:
            self.set_interval(1 / self.fps, self._frame)

    def on_unmount(self) -> None:
        self.left.close()
        self.right.close()

    def on_resize(self, _event) -> None:
        self.set_class(self.size.height < TALL, "-short")
        self.refresh_panels()

    def frame_work(self, elapsed: float) -> bool:
        """Play: both runs in lockstep by sim time (tui/frame_loop.py runs the frame)."""
        if not self.playing:
            return False
        if self.lockstep.ended:
            self.playing = False
        else:
            self.lockstep.advance(self.lockstep.now + self.speed * elapsed, self.budget)
        return True

    def refresh_panels(self, force: bool = False) -> None:
        state = "ended" if self.lockstep.ended else ("playing" if self.playing else "paused")
        self.query_one(StatusBar).show(
            scenario=self.run_name,
            policy=f"{self.labels[0]} vs {self.labels[1]}",
            seed=self.right.seed,
            now=self.lockstep.now,
            seq=self.left.position,
            state=state,
            speed=self.speed,
            width=self.size.width,
        )
        for side in self.query(Side):
            side.tick()
        a, b = self.left.key_figures(), self.right.key_figures()
        width = self.size.width - 2  # the line's padding
        self.query_one("#diff", Static).update(difference_text(self.labels[0], a, self.labels[1], b, width))
        if self.whole is not None:
            self.query_one("#whole", Static).update(self.whole(width))

    def action_toggle_play(self) -> None:
        self.playing = not self.playing and not self.lockstep.ended
        self._last_frame = time.perf_counter()
        self.refresh_panels()

    def action_step(self) -> None:
        self.playing = False
        if self.lockstep.step() is None:
            self.notify("Both runs have ended.", title="Step")
        self.refresh_panels()

    def action_goto(self) -> None:
        from kvtui.tui.screens.goto import GotoScreen

        if not isinstance(self.screen, GotoScreen):
            self.push_screen(GotoScreen(self.lockstep.now, self.left.position), self.goto)

    def goto(self, where: str | None) -> None:
        """`12.5`: both sides to that time (the shared clock); `#500`: the left side to its
        event 500, the right to the same time (event numbers differ between the runs)."""
        if not where:
            return
        self.playing = False
        try:
            step = self.lockstep
            if where.strip().startswith("#"):
                self.left.goto(int(where.strip()[1:]))
                self.right.goto_time(step.own_time(step.right, step.shared_time(step.left)))
            else:
                t = float(where.strip().rstrip("s"))
                self.left.goto_time(step.own_time(step.left, t))
                self.right.goto_time(step.own_time(step.right, t))
        except ValueError:
            self.notify(f"Not a time or an event number: {where!r} (try 12.5 or #500).", title="Go to", severity="warning")
            return
        self.refresh_panels()

    def action_next_view(self) -> None:
        keys = list(dict.fromkeys(k for side in (self.left, self.right) for k, _ in views(side)))
        self.view = keys[(keys.index(self.view) + 1) % len(keys)] if self.view in keys else keys[0]
        for side in self.query(Side):
            side.show_view(self.view)
        self.refresh_panels()

    def action_no_jump(self, what: str) -> None:
        """A jump key of the single view: the two runs' events differ (that is the point of the
        screen), so "the next one" would be one side's; say so, and what works instead."""
        self.notify(f"Not in the split screen: each run has its own next {what}. g goes both to a "
                    "time; the single view (without --vs) jumps.", title=f"Jump to next {what}")

    def action_why(self, side: str) -> None:
        """The Why of one side's latest decision or event, whole (screens/why.py)."""
        from kvtui.tui.screens.why import WhyScreen, candidate_notes

        if not isinstance(self.screen, WhyScreen):
            why = self.query_one(f"#{side}", Side).why
            runner = self.left if side == "left" else self.right
            self.push_screen(WhyScreen(f"{runner.policy}: {why.title}", why.body, candidate_notes(runner.last_interesting)))

    def action_speed(self, delta: int) -> None:
        i = min(range(len(SPEEDS)), key=lambda j: abs(SPEEDS[j] - self.speed))
        self.speed = SPEEDS[max(0, min(len(SPEEDS) - 1, i + delta))]
        self.refresh_panels()

    def action_help(self) -> None:
        """The help screen the single view has (screens/help.py), with this screen's keys: a
        toast of them took 11 of 24 rows at 80x24, and a second one ran off the top (QA)."""
        from kvtui.tui.screens.help import HelpScreen

        if isinstance(self.screen, HelpScreen):
            self.pop_screen()
        else:
            self.push_screen(HelpScreen(HELP_ROWS, self.help_panels, "kvtui split screen help", palette=False))


HELP_ROWS = [
    ("space", "play / pause (both runs, in lockstep by sim time)"),
    ("s", "step: both runs to the same sim time"),
    ("g", "go to a time (both runs) or #event (the left's; the right follows to its time)"),
    ("y / Y", "the left's / right's Why in full"),
    ("v", "the next lower panel on both sides (the main screen's panels)"),
    ("+ / -", "faster / slower"),
    (" ".join(c.keys for c in CONTROLS if c.group is NEXT), "the single view's jumps: each run has its own next event, so here they say so"),
    ("?", "this help"),
    ("q", "quit"),
]
HELP_PANELS = (
    ("Left", "the scenario's policy (or --policy); right: --vs. Same seed, same arrivals."),
    ("Each side", "its key numbers, block maps, the Why of its latest event and one lower panel, its event log first (those two from 30 rows up)."),
    ("Δ line", "how the right run differs from the left: token hit rate, TTFT p50 and p95, rejections, evicted blocks."),
)


def make_compare_app(scenario: RunSpec | Scenario, vs: str, seed: int | None = None, policy: str | None = None,
                     theme: str | None = None, fps: int = FPS) -> CompareApp:
    """The split screen; its two runs resolved as every run is (kvtui/scenario/run_spec.py): a
    bad --policy or --vs policy is refused there, naming its flag, a pattern the scenario
    cannot take here."""
    from kvtui.errors import InputError

    spec = as_spec(scenario, seed, policy)
    patterned = None
    if vs.startswith(PATTERN):  # the same policy, the right side's Raft group as another pattern
        try:
            patterned = with_pattern(spec.scenario, vs[len(PATTERN):])
        except ValueError as e:
            raise InputError.one("--vs", None, str(e)) from None
    left = Run(spec)
    if patterned is not None:
        right = Run(resolve(patterned, spec.seed, spec.policy))
        labels = (f"pattern {pattern_of(spec.scenario) or 'as written'}", f"pattern {vs[len(PATTERN):]}")
    else:
        right = Run(spec.again(vs, flag="--vs"))
        labels = (left.policy, right.policy)
    return CompareApp(left, right, labels, spec.scenario.name, theme=theme, fps=fps)
