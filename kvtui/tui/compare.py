"""Split-screen compare: `kvtui SCENARIO --vs POLICY`.

Two simulations of one scenario with the same seed and workload, the scenario's policy (or
`--policy`) on the left and POLICY on the right, kept in lockstep by sim time (the engine's
`Lockstep`). Each side shows its block maps and key numbers; a line under them states the
difference live: token hit rate, TTFT p50 and p95, rejections, evictions. The lesson
"prefix-first melts one node, load-aware spreads it" is one screen.

Keys: space play/pause, s step, + / - speed, ? help, q quit.
"""

from __future__ import annotations

import time

from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.widgets import Footer, Static

from kvtui.scenario.model import Scenario
from kvtui.run import Lockstep, Run
from kvtui.views import KeyFigures
from kvtui.tui.controls import DEFAULT_SPEED, SPEEDS
from kvtui.tui.themes import DEFAULT_THEME, DEFAULT_VARIABLES, load_themes
from kvtui.tui.widgets.block_map import BlockMap
from kvtui.tui.widgets.legend import Legend
from kvtui.tui.widgets.status_bar import StatusBar

FPS = 20
BUDGET_S = 0.03


def _ms(v: float | None) -> str:
    return "-" if v is None else (f"{v:.0f}ms" if v >= 10 else f"{v:.1f}ms")


def figures_text(policy: str, f: KeyFigures) -> str:
    return (
        f"{policy}: token hits {f.token_hit_rate:.0%} · requests hit {f.request_hit_rate:.0%} · "
        f"TTFT p50 {_ms(f.ttft_p50_ms)} p95 {_ms(f.ttft_p95_ms)} · done {f.completed}/{f.arrived} · "
        f"rejected {f.rejected} · preempted {f.preempted} · evicted {f.evicted_blocks}"
    )


def difference_text(left: str, a: KeyFigures, right: str, b: KeyFigures) -> str:
    """One line: how the right run differs from the left, in the numbers that matter."""
    parts = [f"Δ {right} vs {left}:"]
    parts.append(f"token hit rate {100 * (b.token_hit_rate - a.token_hit_rate):+.0f} pts")
    if a.ttft_p50_ms is not None and b.ttft_p50_ms is not None:
        parts.append(f"TTFT p50 {b.ttft_p50_ms - a.ttft_p50_ms:+.1f} ms")
    if a.ttft_p95_ms is not None and b.ttft_p95_ms is not None:
        parts.append(f"p95 {b.ttft_p95_ms - a.ttft_p95_ms:+.1f} ms")
    parts.append(f"rejections {b.rejected - a.rejected:+d}")
    parts.append(f"evicted blocks {b.evicted_blocks - a.evicted_blocks:+d}")
    return " ".join(parts[:1]) + " " + " · ".join(parts[1:])


class Side(Vertical):
    """One run: its policy, block maps and key numbers."""

    DEFAULT_CSS = """
    Side { width: 1fr; height: 1fr; border: round $panel; padding: 0 0; }
    Side > .side-figures { height: auto; color: $text-muted; }
    Side > BlockMap { height: 1fr; max-height: 100%; }
    """

    def __init__(self, runner: Run, *, id: str):
        super().__init__(id=id)
        self.runner = runner
        self.border_title = f"policy {runner.policy}"
        # held, not queried: a key or a resize can tick the side before its children mount
        self.figures = Static("", classes="side-figures", markup=False)
        self.block_map = BlockMap(self.runner)

    def compose(self) -> ComposeResult:
        yield self.figures
        yield self.block_map

    def tick(self) -> None:
        if not self.block_map.is_mounted:
            return
        self.block_map.tick()
        self.figures.update(figures_text(self.runner.policy, self.runner.key_figures()))


class CompareApp(App[None]):
    TITLE = "kvtui compare"
    CSS = """
    #sides { height: 1fr; }
    #diff { height: auto; background: $boost; text-style: bold; padding: 0 1; }
    """
    BINDINGS = [
        Binding("question_mark", "help", "Help", key_display="?"),
        Binding("q", "quit", "Quit"),
        Binding("space", "toggle_play", "Play/Pause"),
        Binding("s", "step", "Step"),
        Binding("plus,equals_sign", "speed(1)", "Faster", key_display="+"),
        Binding("minus", "speed(-1)", "Slower", key_display="-"),
    ]

    def __init__(self, scenario: Scenario, vs: str, seed: int | None = None, policy: str | None = None,
                 theme: str | None = None, fps: int = FPS):
        self._kvtui_themes = load_themes()
        super().__init__()
        for t in self._kvtui_themes:
            self.register_theme(t)
        self.theme = theme or DEFAULT_THEME
        self.left = Run(scenario, seed=seed, policy=policy)
        self.right = Run(scenario, seed=self.left.seed, policy=vs)
        self.lockstep = Lockstep(self.left.source, self.right.source)
        self.scenario = scenario
        self.fps = fps
        self.playing = False
        self.speed = DEFAULT_SPEED
        self._last = time.perf_counter()

    def get_theme_variable_defaults(self) -> dict[str, str]:
        return dict(DEFAULT_VARIABLES)

    def compose(self) -> ComposeResult:
        yield StatusBar(id="status")
        yield Legend(self.left, id="legend")
        with Horizontal(id="sides"):
            yield Side(self.left, id="left")
            yield Side(self.right, id="right")
        yield Static("", id="diff", markup=False)
        yield Footer()

    def on_mount(self) -> None:
        self.refresh_panels()
        if self.fps > 0:
            self.set_interval(1 / self.fps, self._frame)

    def on_unmount(self) -> None:
        self.left.close()
        self.right.close()

    def on_resize(self, _event) -> None:
        self.refresh_panels()

    def _frame(self) -> None:
        now = time.perf_counter()
        elapsed = min(now - self._last, 0.25)
        self._last = now
        if not self.playing:
            return
        if self.lockstep.ended:
            self.playing = False
        else:
            self.lockstep.advance(self.lockstep.now + self.speed * elapsed, BUDGET_S)
        self.refresh_panels()

    def refresh_panels(self) -> None:
        state = "ended" if self.lockstep.ended else ("playing" if self.playing else "paused")
        self.query_one(StatusBar).show(
            scenario=self.scenario.name,
            policy=f"{self.left.policy} vs {self.right.policy}",
            seed=self.left.seed,
            now=self.lockstep.now,
            seq=self.left.position,
            state=state,
            speed=self.speed,
            width=self.size.width,
        )
        for side in self.query(Side):
            side.tick()
        a, b = self.left.key_figures(), self.right.key_figures()
        self.query_one("#diff", Static).update(difference_text(self.left.policy, a, self.right.policy, b))

    def action_toggle_play(self) -> None:
        self.playing = not self.playing and not self.lockstep.ended
        self._last = time.perf_counter()
        self.refresh_panels()

    def action_step(self) -> None:
        self.playing = False
        if self.lockstep.step() is None:
            self.notify("Both runs have ended.", title="Step")
        self.refresh_panels()

    def action_speed(self, delta: int) -> None:
        i = min(range(len(SPEEDS)), key=lambda j: abs(SPEEDS[j] - self.speed))
        self.speed = SPEEDS[max(0, min(len(SPEEDS) - 1, i + delta))]
        self.refresh_panels()

    def action_help(self) -> None:
        self.notify(
            "space play/pause · s step (both runs to the same sim time) · + / - speed · q quit. "
            "Left: the scenario's policy; right: --vs. Same seed, same arrivals.",
            title="Compare",
            timeout=8,
        )


def make_compare_app(scenario: Scenario, vs: str, seed: int | None = None, policy: str | None = None,
                     theme: str | None = None, fps: int = FPS) -> CompareApp:
    from kvtui.errors import InputError
    from kvtui.scenario.policies import POLICY_NAMES

    for flag, name in (("--vs", vs), ("--policy", policy)):
        if name is not None and name not in POLICY_NAMES:
            raise InputError.one(flag, None, f"unknown policy {name!r}; known: {', '.join(POLICY_NAMES)}")
    return CompareApp(scenario, vs, seed=seed, policy=policy, theme=theme, fps=fps)
