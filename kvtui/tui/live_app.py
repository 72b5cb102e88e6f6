"""The app over real engines: their block maps, what each published, the index, the batches.

`kvtui live ENGINES_FILE` opens it on a live session (new batches are ingested every frame and
the picture follows them; pause freezes the picture while ingest goes on), `kvtui replay DIR`
on a recording (paused at the start; play runs it at the speed it was received, times the
speed). In both the keys of the simulation's app move through what was received: step, back,
the next eviction, the next lost gap, start and end. The app reads only the run layer's
`LiveRun` (kvtui/run/live.py) and the view types; it never touches a socket's data itself.
"""

from __future__ import annotations

import time

from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.containers import Container, Vertical
from textual.widgets import Footer, Static

from kvtui.run.live import LiveRun
from kvtui.tui.give_way import GivesWay
from kvtui.tui.themes import DEFAULT_VARIABLES, install_themes, load_themes
from kvtui.tui.widgets.block_map import BlockMap, fit_name

FPS = 10
SPEEDS = (0.25, 0.5, 1.0, 2.0, 5.0, 10.0, 50.0)
LOG_LINES = 200  # the most recent batches the log keeps on screen
WIDE = 120


def metrics_line(name: str, f, fresh_at: float | None = None) -> str:
    """What an engine's last /metrics scrape said (vLLM's names: kvtui/live/metrics.py); when
    it failed, since when the figures are stale (the last scrape that read well)."""
    if f.error:
        since = "never read" if fresh_at is None else f"stale since {time.strftime('%H:%M:%S', time.localtime(fresh_at))}"
        return f"{fit_name(name, 12)}: metrics {since} ({f.error})"
    usage = "-" if f.kv_usage is None else f"{100 * f.kv_usage:.0f}%"
    hits = "-" if f.hit_rate is None else f"{100 * f.hit_rate:.0f}%"
    return (f"{fit_name(name, 12)}: kv {usage} of {f.num_gpu_blocks or '?'} blocks, running {f.running}, "
            f"waiting {f.waiting}, prefix hits {hits} of tokens" + (f", {f.skipped} bad samples skipped" if f.skipped else ""))


HELP = """kvtui live: real engines' KV events, as they arrive (or a recording of them)
space play/pause (live: follow or hold the picture; ingest goes on)   s step   b back
e next eviction   m next lost gap   home start   end newest   +/- speed   t theme   q quit
engines table: gpu / cpu+ blocks held now; stored, removed, batches received; gaps: batches
replay could not return; bad: messages that did not decode (by kind in `kvtui live --no-ui`);
epoch N: a restart or an AllBlocksCleared began the Nth. Memory is capped: the oldest
history is dropped past {kept:,} deliveries or {mb} MB (the status line says so)."""


class LiveBlockMap(BlockMap):
    """The simulation's block map over real engines: owners are prefixes (no scenario groups),
    and the label says what KV events can tell: blocks held, of how many."""

    def reset_groups(self) -> None:
        self.groups = {}

    def tick(self) -> None:
        """A live map grows (its width is the most blocks seen until metrics give the engine's
        block count), and the simulation's map never does: a new size lays the widget out anew."""
        sizes = tuple(self._sizes())
        if sizes != getattr(self, "_laid_out", None):
            self._laid_out = sizes
            self.refresh(layout=True)
        super().tick()

    def _label(self, node, nc, width: int):
        from rich.segment import Segment

        st, room = self._label_styles, max(0, width - 1)
        held = nc.cached_idle
        share = round(100 * held / node.num_blocks) if node.num_blocks else 0
        options = [f" held {held} of {node.num_blocks} ({share}%) removed {node.evicted_total}",
                   f" held {held}/{node.num_blocks}", f" {share}%", ""]
        name = fit_name(node.name, max(1, min(len(node.name), room - 5)))
        tail = next((o for o in options if 1 + len(name) + len(o) <= room), "")
        return [Segment((" " + name)[:room], st["name"]), Segment(tail, st["label"])]


class LiveApp(GivesWay, App[None]):
    TITLE = "kvtui"
    CSS = """
    Screen { layout: vertical; }
    #status { dock: top; height: 1; background: $panel; text-style: bold; }
    #status.-playing { background: $success 35%; }
    #main { height: 1fr; }
    .-narrow #main { layout: vertical; }
    .-narrow #left { height: auto; }
    .-narrow #right { height: 1fr; }
    .-wide #main { layout: horizontal; }
    .-wide #left { width: 1fr; }
    .-wide #right { width: 62; border-left: vkey $panel; }
    #engines { height: auto; padding: 0 1; }
    #log { height: 1fr; padding: 0 1; color: $text-muted; text-wrap: nowrap; text-overflow: ellipsis; }
    BlockMap > .blockmap--label { color: $text-muted; }
    BlockMap > .blockmap--name { text-style: bold; }
    """
    BINDINGS = [
        Binding("space", "toggle_play", "Play/Pause"),
        Binding("s", "step", "Step"),
        Binding("b", "step_back", "Back"),
        Binding("e", "seek('removal')", "eviction"),
        Binding("m", "seek('gap')", "gap"),
        Binding("home", "start", "Start", show=False),
        Binding("end", "follow", "End"),
        Binding("plus,equals_sign", "speed(1)", "Faster", show=False),
        Binding("minus", "speed(-1)", "Slower", show=False),
        Binding("t", "next_theme", "Theme", show=False),
        Binding("question_mark", "help", "Help", show=False),
        Binding("q", "quit", "Quit"),
    ]

    def __init__(self, run: LiveRun, title: str, session=None, theme: str | None = None, fps: int = FPS,
                 duration: float | None = None):
        super().__init__()
        self.duration = duration  # quit after this many seconds (None: when asked)
        install_themes(self, load_themes(), theme)
        self.runner, self.session, self.label, self.fps = run, session, title, fps
        self.playing = False  # a recording playing back (live: `run.following`)
        self.speed = 1.0
        self._play_from = (0.0, 0.0)  # (wall, run time) when play began
        self._shown: tuple | None = None  # what the table and the log were drawn for
        self._last_frame = time.perf_counter()  # the last frame that did its work (give_way.py)

    def get_theme_variable_defaults(self) -> dict[str, str]:
        return dict(DEFAULT_VARIABLES)

    def compose(self) -> ComposeResult:
        yield Static("", id="status", markup=False)
        with Container(id="main"):
            with Vertical(id="left"):
                yield LiveBlockMap(self.runner, id="maps")
            with Vertical(id="right"):
                yield Static("", id="engines", markup=False)
                yield Static("", id="log", markup=False)
        yield Footer()

    def on_mount(self) -> None:
        self._apply_size()
        self.refresh_panels()
        if self.fps > 0:
            self.set_interval(1 / self.fps, self._frame, name="frame")
        if self.duration is not None:
            self.set_timer(self.duration, self.exit)

    def on_resize(self, _event) -> None:
        self._apply_size()

    def _apply_size(self) -> None:
        wide = self.size.width >= WIDE
        self.query_one(LiveBlockMap).max_rows = max(2, int(self.size.height * (0.7 if wide else 0.45)))
        self.screen.set_class(wide, "-wide")
        self.screen.set_class(not wide, "-narrow")

    # ------------------------------------------------------------------ the frame
    def _frame(self) -> None:
        if not self.is_running:  # shutting down: App._shutdown removes the screens' widgets before it stops timers
            return
        now = time.perf_counter()
        if self.gives_way(now, self._last_frame):  # the key's handler and screen update first (give_way.py)
            return
        self._last_frame = now
        if self.session is not None:
            self.session.poll(0)  # deliveries reach `run` through the session's listener
        if self.playing:
            self._play()
        self.refresh_panels()

    def _play(self) -> None:
        wall0, t0 = self._play_from
        target = t0 + (time.monotonic() - wall0) * self.speed
        while self.runner.position < self.runner.end and self._next_time() <= target:
            self.runner.step()
        if self.runner.ended:
            self.playing = False

    def _next_time(self) -> float:
        return self.runner.delivery(self.runner.position).at - self.runner.start

    def refresh_panels(self) -> None:
        """Redraw what changed: the table and the log only when the position or what was
        received moved (the log decodes its batches), the header every frame (its clock)."""
        self.query_one("#status", Static).update(self.status_text())
        self.query_one("#status").set_class(self.playing or self.runner.following, "-playing")
        self.query_one(LiveBlockMap).tick()
        shown = (self.runner.position, self.runner.generation, self.size.width)
        if shown != self._shown:
            self._shown = shown
            self.query_one("#engines", Static).update(self.engines_text())
            self.query_one("#log", Static).update(self.log_text())

    # ------------------------------------------------------------------ text
    def status_text(self) -> str:
        r = self.runner
        state = ("▶ following" if r.following else "‖ paused") if r.live else \
            ("■ ended" if r.ended else "▶ playing" if self.playing else "‖ paused")
        behind = r.end - r.position
        parts = [f" {self.label}", f"t {r.now:,.3f} s of {r.span:,.3f}", f"batch {r.position:,}/{r.end:,}",
                 f"{state} ×{self.speed:g}" + (f" ({behind:,} newer)" if r.live and behind else "")]
        bad = sum(e.malformed for e in r.engines())
        if bad:
            parts.append(f"{bad:,} bad")
        if r.dropped:
            parts.append(f"history from batch {r.first:,} (older dropped: memory cap)")
        text = " │ ".join(parts)
        return text if len(text) <= self.size.width else " ".join(parts[1:])

    def engines_text(self) -> str:
        keys, shared = self.runner.index_figures()
        lines = [f"{'engine':<12} {'gpu':>5} {'cpu+':>4} {'stored':>7} {'removed':>7} {'batches':>7} gaps bad"]
        for e in self.runner.engines():
            lines.append(f"{fit_name(e.name, 12):<12} {e.gpu:>5} {e.offloaded:>4} {e.stored:>7} {e.removed:>7} "
                         f"{e.batches:>7} {e.gaps:>4} {e.malformed:>3}" + (f" epoch {e.epochs}" if e.epochs > 1 else "")
                         + (f" orphans {e.orphans}" if e.orphans else "")
                         + (f" filled {e.replayed}" if e.replayed else ""))
        lines.append(f"index: {keys:,} keys, {shared:,} on more than one engine")
        metrics = [metrics_line(e.name, e.figures, e.fresh_at) for e in self.runner.engines() if e.figures is not None]
        silent = self.session.state.silent(time.time()) if self.session is not None else []
        return "\n".join(lines + metrics + silent)

    def log_text(self) -> str:
        rows = self.runner.recent(LOG_LINES)
        return "\n".join(f"{t:9.3f} {engine}: {text}" for t, engine, text in reversed(rows)) or "(nothing received yet)"

    # ------------------------------------------------------------------ actions
    def action_toggle_play(self) -> None:
        if self.runner.live and self.runner.following:
            self.runner.following = False  # the picture stays; ingest goes on
        elif self.runner.live:
            self.runner.follow()
        elif not self.runner.ended:
            self.playing = not self.playing
            self._play_from = (time.monotonic(), self.runner.now)
        self.refresh_panels()

    def _moved(self) -> None:
        self.playing = False
        self.runner.following = False
        self.refresh_panels()

    def action_step(self) -> None:
        self.runner.following = False
        self.runner.step()
        self._moved()

    def action_step_back(self) -> None:
        self.runner.back()
        self._moved()

    def action_seek(self, kind: str) -> None:
        self.runner.following = False
        if self.runner.seek(kind) is None:
            self.notify(f"no later {'eviction' if kind == 'removal' else 'gap'} in what was received", timeout=2)
        self._moved()

    def action_start(self) -> None:
        self.runner.goto(self.runner.first)
        self._moved()

    def action_follow(self) -> None:
        self.playing = False
        self.runner.follow()
        self.refresh_panels()

    def action_speed(self, direction: int) -> None:
        i = min(range(len(SPEEDS)), key=lambda k: abs(SPEEDS[k] - self.speed))
        self.speed = SPEEDS[max(0, min(len(SPEEDS) - 1, i + direction))]
        self._play_from = (time.monotonic(), self.runner.now)
        self.refresh_panels()

    def action_help(self) -> None:
        from kvtui.run.live import HISTORY_BYTES, HISTORY_KEPT

        self.notify(HELP.format(kept=HISTORY_KEPT, mb=HISTORY_BYTES >> 20), title="help", timeout=15)

    def action_next_theme(self) -> None:
        names = sorted(self.available_themes)
        self.theme = names[(names.index(self.theme) + 1) % len(names)]
