"""The Textual app: block maps, decision log, events, latency, nodes, and step-through teaching,
for every kind of run: a simulation, a live cluster of real engines, a recording of one.

`make_app(scenario, seed=, policy=, theme=)` is the factory the CLI, the recorder and the tests
share for a simulation; `make_live_app(source, name)` opens the same app on real engines
(`kvtui live`, `kvtui replay`: kvtui/run/live.py). The app changes the run only through explicit
commands (step, play/pause, seek, restart, switch policy, take a node down / bring it back,
crash the control plane), each only when the run's source takes it (`RunSource.capabilities`:
a real cluster takes none); it reads everything else from the run's events and views (through
`kvtui.run.Run`). The panels of the lower half refresh through one protocol (tui/panels.py).

Play runs on the one frame loop (tui/frame_loop.py): each frame advances the run by speed x
elapsed wall time, but never for longer than a wall budget, so input is handled within a frame
even when the cluster is big (the simulation then simply runs slower than asked, and the status
line says "behind"). A live run plays by following what arrives.
"""

from __future__ import annotations

import gc
import math
import time
from functools import partial

from textual import events
from textual.app import App, ComposeResult
from textual.containers import Container, Vertical
from textual.screen import Screen
from textual.theme import Theme
from textual.widgets import Footer

from kvtui.errors import InputError
from kvtui.events import Event, RouteDecided
from kvtui.scenario.model import Scenario
from kvtui.scenario.policies import POLICY_NAMES
from kvtui.scenario.run_spec import RunSpec
from kvtui.tui.commands import KvtuiCommands
from kvtui.tui.controls import bindings, help_rows, palette
from kvtui.run import SEEK_KINDS, Navigable, Run
from kvtui.tui.controls import DEFAULT_SPEED, SPEEDS
from kvtui.tui.frame_loop import FPS, FRAME_BUDGET_S, FrameLoop
from kvtui.tui.reachable import NO_STORE, NOT_REPLICATED, why_unreachable
from kvtui.tui.screens.help import HelpScreen
from kvtui.tui.screens.zoom import ZoomScreen
from kvtui.tui.toasts import FittedToasts
from kvtui.tui.themes import DEFAULT_VARIABLES, PREFERRED_ORDER, install_themes, load_themes
from kvtui.tui.panels import Frame, narrow_css, panels_of, views
from kvtui.tui.widgets.block_map import BlockMap
from kvtui.tui.widgets.candidates import CandidateTable
from kvtui.tui.widgets.decision_log import DecisionLog
from kvtui.tui.widgets.event_log import EventLog
from kvtui.tui.widgets.explanation import Explanation
from kvtui.tui.widgets.latency_panel import LatencyPanel
from kvtui.tui.widgets.legend import Legend
from kvtui.tui.widgets.log_list import LogList
from kvtui.tui.widgets.status_bar import StatusBar
from kvtui.tui.widgets.overview import OVERVIEW_FROM, OverviewStrip
from kvtui.tui.widgets.term_bands import ROWS_FOR_BANDS, TermBands
from kvtui.tui.widgets.timeline import ChapterLine, Timeline, current_chapter
from kvtui.tui.widgets.view_tabs import ViewTabs

WIDE = 120  # columns from which every panel is shown at once
TALL = 55  # rows from which the wide layout gives the histograms the room the Why panel left empty
HUGE = 220  # columns from which the right half is two columns of panels (app.tcss, "huge")
SLOW_PANEL_S = 0.25  # explanation / latency refresh period while playing


def _sim_time(text: str) -> float:
    """Seconds typed at the go-to prompt. float() takes "nan", "inf" and "1e999", which are no
    time (they went to the end of the run, the header saying "going to inf s"), so they are
    refused like any other non-number."""
    t = float(text.rstrip("s"))
    if not math.isfinite(t):
        raise ValueError(text)
    return t


class MainScreen(Screen[None]):
    """The default screen; it tells the app when the terminal changed size (the App's own
    Resize handler stops the event before an `on_resize` of ours would see it)."""

    def on_resize(self, _event) -> None:
        apply = getattr(self.app, "_apply_size", None)
        if apply is not None:
            apply()


class KvtuiApp(FrameLoop, FittedToasts, App[None]):
    CSS_PATH = "app.tcss"
    CSS = narrow_css()  # one rule per row of tui/panels.py
    TITLE = "kvtui"
    COMMANDS = App.COMMANDS | {KvtuiCommands}

    BINDINGS = bindings()
    HELP_ROWS = help_rows()

    def __init__(
        self,
        runner: Run,
        theme: str | None = None,
        themes: list[Theme] | None = None,
        fps: int = FPS,
        duration: float | None = None,
    ):
        self._kvtui_themes = themes if themes is not None else load_themes()
        super().__init__()
        install_themes(self, self._kvtui_themes, theme)
        self.runner = runner
        self.fps = fps
        self.duration = duration  # quit after this many seconds (None: when asked)
        self.start_loop()
        self.playing = runner.source.following  # a live run opens playing: following what arrives
        self.seeking: str | None = None
        self.going: tuple[str, float] | None = None  # a go-to under way: ("event" | "time", target)
        self.going_from = 0  # the event it started from (Escape returns there)
        self.speed = DEFAULT_SPEED
        self.behind = False
        self.views = views(self.runner)
        self.view = self.views[0][0]
        self.selected_node: str | None = self.runner.node_names()[0] if self.runner.node_names() else None
        self.highlight: Event | None = None
        self._last_slow = 0.0

    # ------------------------------------------------------------------ theme variables
    def get_theme_variable_defaults(self) -> dict[str, str]:
        return dict(DEFAULT_VARIABLES)

    @property
    def theme_cycle(self) -> list[str]:
        """Every theme the app knows, in one list for `t`, the palette's "Theme:" entries and
        Textual's own theme picker alike: kvtui's (themes/*.toml and the user's) first, then
        Textual's built-in ones (their block colours come from DEFAULT_VARIABLES)."""
        ours = [t.name for t in self._kvtui_themes] or ["dark"]
        ours = sorted(ours, key=lambda n: (PREFERRED_ORDER.index(n) if n in PREFERRED_ORDER else 99, n))
        return ours + sorted(n for n in self.available_themes if n not in ours)

    # ------------------------------------------------------------------ layout
    async def _on_key(self, event) -> None:
        # Textual's App._on_key checks bindings on `self.screen`, which raises ScreenStackError
        # for keys still queued after the app popped its last screen at exit (an upstream
        # ordering; found by the 20,000-key campaign, tests/tui/test_tui_fuzz_keys.py).
        # Textual calls this handler and then App's own (handlers run along the MRO), so only
        # prevent the default when nothing is left to check bindings on.
        if not self.screen_stack:
            event.prevent_default()

    async def on_event(self, event) -> None:
        # The same ordering one step earlier: App.on_event reads `self.screen` for every key
        # (to un-maximize on escape) before any handler runs, so a key still queued while
        # the app tears its screens down at exit raised ScreenStackError ("No screens on
        # stack": test_random_keys_while_playing, 1 run in 3; the traceback's key was a
        # pagedown sent just before the test ended). Such a key has nothing left to act on.
        if isinstance(event, events.Key) and not self.screen_stack:
            return
        await super().on_event(event)

    def compose(self) -> ComposeResult:
        yield StatusBar(id="status")
        yield Timeline(self.runner, id="timeline")
        yield TermBands(self.runner, id="terms")
        yield ChapterLine(self.runner, id="chapter")
        with Container(id="main"):
            with Vertical(id="left"):
                yield Legend(self.runner, id="legend")
                yield OverviewStrip(self.runner, id="overview")
                yield BlockMap(self.runner, id="maps")
                yield Explanation(id="why")
                yield LatencyPanel(self.runner, id="latency-wide")
            with Vertical(id="right"):
                yield ViewTabs(self.views, id="tabs")
                for panel in panels_of(self.runner):
                    yield panel.make(self.runner, panel.id)
        yield Footer()

    def on_mount(self) -> None:
        self.maps = self.query_one("#maps", BlockMap)
        self.decision_log = self.query_one("#decisions", DecisionLog)
        self.event_log = self.query_one("#events", EventLog)
        self.candidates = self.query_one("#candidates", CandidateTable)
        self.panels = [self.query_one(f"#{p.id}") for p in panels_of(self.runner)]
        self.why = self.query_one("#why", Explanation)
        self.latency_panels = [self.query_one("#latency", LatencyPanel), self.query_one("#latency-wide", LatencyPanel)]
        self.tabs = self.query_one("#tabs", ViewTabs)
        self.timeline = self.query_one("#timeline", Timeline)
        self.chapter = self.query_one("#chapter", ChapterLine)
        self.chapter.display = bool(self.runner.story)
        self.terms = self.query_one("#terms", TermBands)
        self.overview = self.query_one("#overview", OverviewStrip)
        self._arrange_overview()
        self.maps.selected = self.selected_node
        self._apply_size()
        self._set_view(self.view)
        self.refresh_panels(force=True)
        if self.fps > 0:
            self.set_interval(1 / self.fps, self._frame, name="frame")
        if self.duration is not None:
            self.set_timer(self.duration, self.exit)
        self.call_after_refresh(_freeze_heap)

    def on_unmount(self) -> None:
        self.runner.close()
        gc.unfreeze()  # hand the session's objects back to the collector (tests run many apps)

    def get_default_screen(self) -> Screen:
        return MainScreen(id="_default")

    def _apply_size(self) -> None:
        width, height = self.size
        wide = width >= WIDE
        changed = wide != self.has_class("-wide")
        if hasattr(self, "maps"):
            # Auto-height containers do not honour a child's max-height when sizing
            # themselves, so the caps are set here instead of in app.tcss.
            self.maps.max_rows = max(2, int(height * (0.7 if wide else 0.45)))
            self.maps.refresh(layout=True)
            if not wide:
                self.why.styles.height = max(2, min(6, height // 5))
                self.why.styles.max_height = None
            else:
                self.why.styles.height = "1fr"
                self.why.styles.max_height = None
        self.set_class(wide, "-wide")
        self.set_class(not wide, "-narrow")
        self.set_class(height >= TALL, "-tall")
        replicated = self.runner.control_plane_view() is not None
        self.set_class(wide and width >= HUGE, "-huge")
        self.set_class(replicated, "-replicated")
        if hasattr(self, "terms"):  # a Raft group's terms: their own row, or the timeline's background when short
            self.terms.display = replicated and height >= ROWS_FOR_BANDS
            self.timeline.terms_inline = replicated and height < ROWS_FOR_BANDS
        if changed and hasattr(self, "latency_panels"):
            self.latency_panel().rebind()
        if hasattr(self, "timeline"):
            self.refresh_panels(force=True)  # the header and timeline re-lay out for the new width

    def _set_view(self, view: str) -> None:
        self.view = view
        for key, _ in self.views:
            self.set_class(key == view, f"-view-{key}")
        if hasattr(self, "tabs"):
            self.tabs.set_active(view)

    # ------------------------------------------------------------------ the frame (tui/frame_loop.py)
    def pull(self) -> None:
        self.runner.source.pull()

    def frame_work(self, elapsed: float) -> bool:
        """A go-to, a jump or play, within the frame's budget; idle, checkpoints (a live run
        that follows what arrives redraws whenever something did)."""
        r = self.runner
        if self.going is not None:
            if self._go(self.going, self.budget):
                self.going = None
                self._after_command()
        elif self.seeking is not None:
            found = r.seek(SEEK_KINDS[self.seeking], self.budget)
            if found is not False:
                what = self.seeking
                self.seeking = None
                self.playing = False
                if found is None:
                    self._nothing_found(what)
                self._focus_found(found)
                self._after_command()
        elif self.playing:
            if r.ended:
                self.playing = False
                r.current = r.last_emitted
            else:
                reached = r.advance(r.now + self.speed * elapsed, self.budget)
                self.behind = not reached
                if r.ended:
                    self.playing = False
                    r.current = r.last_emitted
        else:
            # Idle: build the checkpoints that make stepping back quick.
            r.maintain(self.budget * 0.6)
            return False
        return True

    # ------------------------------------------------------------------ drawing
    def state_text(self) -> str:
        if self.going is not None:
            kind, target = self.going
            return f"going to {'#%d' % target if kind == 'event' else '%g s' % target}"
        if self.seeking is not None:
            return f"seeking next {self.seeking}"
        if self.runner.ended:
            return "ended"
        if self.playing and self.runner.source.following:
            return "playing (following)"
        if self.playing:
            return "playing (behind)" if self.behind else "playing"
        return "paused"

    def displayed_event(self) -> tuple[Event | None, str]:
        r = self.runner
        if self.highlight is not None:
            return self.highlight, "selected"
        if r.current is not None:
            return r.current, ""
        return r.last_interesting, "latest"

    def refresh_panels(self, force: bool = False) -> None:
        if not self.screen_stack:
            # Textual still delivers queued messages while it tears the screen stack down at
            # exit (ScreenStackError from `self.screen`, found by the key fuzz test): nothing
            # is left to draw on.
            return
        r = self.runner
        for bar in self._status_bars():
            bar.show(
                scenario=r.name,
                policy=r.policy,
                seed=r.seed if r.scenario is not None else None,
                now=r.now,
                seq=r.position,
                state=self.state_text(),
                cp_down=r.control_plane_down,
                speed=self.speed,
                width=self.size.width,
            )
        self.maps.tick()
        if self.overview.display:
            self.overview.tick()
        self.timeline.tick()
        if self.terms.display:
            self.terms.tick()
        self.chapter.tick()
        if isinstance(self.screen, ZoomScreen):
            self.screen.tick()
        now = time.perf_counter()
        busy = self.playing or self.seeking is not None or self.going is not None
        # While playing, the text panels (logs, explanation, candidates, latency) move a few
        # times a second: faster is unreadable and costs paint time the maps need.
        if force or not busy or now - self._last_slow >= SLOW_PANEL_S:
            self._last_slow = now
            ev, source = self.displayed_event()
            self.why.show(ev, r.explain(ev), source)
            frame = Frame(r, ev, self._decision_on_show(ev))
            for panel in self.panels:
                panel.tick(frame)  # type: ignore[attr-defined]  # every row's widget ticks (tui/panels.py)
            self.latency_panels[1].tick(frame)

    def _decision_on_show(self, ev: Event | None) -> RouteDecided | None:
        if isinstance(ev, RouteDecided):
            return ev
        highlighted = self.decision_log.highlighted
        if isinstance(highlighted, RouteDecided):
            return highlighted
        return self.runner.decisions[-1] if self.runner.decisions else None

    def latency_panel(self) -> LatencyPanel:
        """The latency panel on show: a lower view when narrow, under the maps when wide."""
        return self.latency_panels[1 if self.has_class("-wide") else 0]

    def _status_bars(self) -> list[StatusBar]:
        bars = list(self.screen.query(StatusBar))
        if self.screen is not self.screen_stack[0]:
            bars += list(self.screen_stack[0].query(StatusBar))
        return bars

    def _after_command(self) -> None:
        """A command changed the run: show it now rather than at the next frame."""
        self.highlight = None
        self.refresh_panels(force=True)

    # ------------------------------------------------------------------ log selection
    def on_log_list_highlighted(self, message: LogList.Highlighted) -> None:
        self.highlight = message.event
        self.refresh_panels(force=True)

    def on_log_list_chosen(self, message: LogList.Chosen) -> None:
        if isinstance(message.event, RouteDecided) and not self.has_class("-wide"):
            self._set_view("candidates")

    def on_timeline_picked(self, message: Timeline.Picked) -> None:
        self.goto(f"{message.t:.6f}")

    def on_view_tabs_picked(self, message: ViewTabs.Picked) -> None:
        self._set_view(message.view)

    def on_block_map_node_clicked(self, message: BlockMap.NodeClicked) -> None:
        self._select(message.node)
        if message.double:
            self.action_zoom()

    # ------------------------------------------------------------------ actions
    def action_toggle_play(self) -> None:
        if self.seeking is not None:
            self._stop_seek()
            self.playing = False
        elif self.runner.ended:
            self.playing = False
            self.notify("The run has ended. R restarts it.", title="Play")
        else:
            self.playing = not self.playing
            self.runner.source.follow(self.playing)  # a live run plays by keeping up with what arrives
            if self.playing:
                self.runner.current = None
                self._last_frame = time.perf_counter()
            else:
                self.runner.current = self.runner.last_interesting
        self._unhighlight_logs()
        self._after_command()

    def action_step(self) -> None:
        self.playing = False
        self._stop_seek()
        ev = self.runner.step()
        if ev is None and self.runner.live:
            self.notify("Nothing newer has arrived yet: space follows what arrives.", title="Step")
        elif ev is None:
            self.notify("The run has ended. R restarts it.", title="Step")
        self._unhighlight_logs()
        self._after_command()

    def action_seek(self, what: str) -> None:
        if what not in SEEK_KINDS:
            return
        self.playing = False
        self._stop_seek()
        if self.runner.ended:
            self.notify(f"No {what} before the end of the run.", title="Jump")
            return
        unreachable = why_unreachable(self.runner, what)
        if unreachable is not None:
            self.notify(unreachable, title=f"Jump to next {what}")
            return
        # One budgeted attempt now (often enough); otherwise the frame timer keeps looking.
        # Without a frame timer (headless recording, fps=0) the search runs to the end here.
        budget = FRAME_BUDGET_S if self.fps > 0 else float("inf")
        found = self.runner.seek(SEEK_KINDS[what], budget)
        if found is False:
            self.seeking = what
        else:
            self.seeking = None
            if found is None:
                self._nothing_found(what)
            self._focus_found(found)
        self._unhighlight_logs()
        self._after_command()

    def _focus_found(self, found) -> None:
        """Beyond OVERVIEW_FROM nodes the block map shows the selected node alone: a jump that
        lands on a node's event (an eviction, a rejection at a node, a failure) selects that node,
        so the map shows what was jumped to (issue 35: `e` left the map on an empty node)."""
        node = getattr(found, "node", None)
        if len(self.runner.node_names()) > OVERVIEW_FROM and isinstance(node, str) and node in self.runner.node_names():
            self._select(node)

    def action_back(self) -> None:
        """One event back: the run is replayed from the nearest checkpoint (see Drive)."""
        self.playing = False
        self._stop_seek()
        if self.runner.position == 0:
            self.notify("Already at the start of the run.", title="Back")
            return
        self.runner.back()
        self._unhighlight_logs()
        self._after_command()

    def _nothing_found(self, what: str) -> None:
        r = self.runner
        self.notify(
            f"No {what} before the end of the run: staying at event {r.position} ({r.now:.2f} s).", title="Jump"
        )

    def _stop_seek(self) -> None:
        """Another command takes over from a jump or a go-to still under way: the run stays
        where it got."""
        self.going = None
        if self.seeking is not None:
            self.seeking = None
            self.runner.cancel_seek()

    def check_action(self, action: str, parameters) -> bool | None:
        # escape cancels a jump only while one searches, on the main screen; otherwise it is
        # left to the focused log (follow) or the open screen (close)
        if action == "cancel_seek":
            return (self.seeking is not None or self.going is not None) and self.screen is self.screen_stack[0]
        return True

    def action_cancel_seek(self) -> None:
        """Escape during a jump or a go-to: stop, and go back to where it began, panels and all."""
        if self.going is not None:
            self.going = None
            self.runner.goto(self.going_from)
            self.notify(f"Go to cancelled: back at event {self.runner.position} ({self.runner.now:.2f} s).",
                        title="Go to")
            self._after_command()
            return
        what = self.seeking
        self.seeking = None
        self.runner.cancel_seek(back_to_origin=True)
        self.notify(f"Jump to next {what} cancelled: back at event {self.runner.position} "
                    f"({self.runner.now:.2f} s).", title="Jump")
        self._after_command()

    def action_detail(self) -> None:
        r = self.runner
        r.fold = not r.fold
        if r.fold:
            self.notify("Single steps fold the stored and batch events (still counted in the run).", title="Detail")
        else:
            self.notify("Single steps show every event, the stored and batch ones included.", title="Detail")
        self._after_command()

    def action_goto(self) -> None:
        from kvtui.tui.screens.goto import GotoScreen

        if isinstance(self.screen, GotoScreen):
            return
        self.push_screen(GotoScreen(self.runner.now, self.runner.position), self.goto)

    def goto(self, where: str | None) -> None:
        """Go to `12.5` (sim seconds) or `#500` (event number)."""
        if not where:
            return
        where = where.strip()
        self.playing = False
        self._stop_seek()
        try:
            target = ("event", int(where[1:])) if where.startswith("#") else ("time", _sim_time(where))
        except ValueError:
            self.notify(f"Not a time or an event number: {where!r} (try 12.5 or #500).", title="Go to", severity="warning")
            return
        self._start_go(target)

    def _start_go(self, target: tuple[str, float]) -> None:
        """One budgeted attempt now; a long way forward goes on in the frame timer, shown in the
        header and cancellable with Escape, like a jump (without a frame timer it runs to the end)."""
        self.going_from = self.runner.position
        if not self._go(target, FRAME_BUDGET_S if self.fps > 0 else float("inf")):
            self.going = target
        self._unhighlight_logs()
        self._after_command()

    def _go(self, target: tuple[str, float], budget_s: float) -> bool:
        kind, value = target
        return self.runner.goto(int(value), budget_s) if kind == "event" else self.runner.goto_time(value, budget_s)

    def action_chapter(self, delta: int) -> None:
        story = list(self.runner.story)
        if not story:
            self.notify("This scenario has no story: section (a list of chapters).", title="Story")
            return
        now = self.runner.now
        if delta > 0:
            later = [c for c in story if c.at > now + 1e-9]
            if not later:
                self.notify("No chapter after this one.", title="Story")
                return
            target = later[0]
        else:
            earlier = [c for c in story if c.at < now - 1e-9]
            if not earlier:
                self.notify("No chapter before this one.", title="Story")
                return
            current = earlier[-1]
            target = earlier[-2] if len(earlier) > 1 and now - current.at < 0.5 else current
        self.playing = False
        self._stop_seek()
        self.notify(target.title, title=f"Chapter at {target.at:g} s")
        self._start_go(("time", target.at))

    def action_story(self) -> None:
        from kvtui.tui.screens.why import WhyScreen

        story = list(self.runner.story)
        i, ch = current_chapter(story, self.runner.now)
        if ch is None:
            self.notify("No chapter on show: k goes to the story's first." if story else
                        "This scenario has no story: section (a list of chapters).", title="Story")
            return
        if isinstance(self.screen, WhyScreen):
            return
        title = f"Chapter {i + 1}/{len(story)} at {ch.at:g} s: {ch.title}"
        written_for = self.runner.written_for
        if self.runner.policy != written_for:
            title += f" (now {self.runner.policy}; the story is written for {written_for})"
        self.push_screen(WhyScreen(title, " ".join(ch.text.split()), heading="The story, in full"))

    def on_chapter_line_opened(self, _message: ChapterLine.Opened) -> None:
        self.action_story()

    def action_why(self) -> None:
        from kvtui.tui.screens.why import WhyScreen, candidate_notes

        if isinstance(self.screen, WhyScreen):
            return
        ev, _ = self.displayed_event()
        self.push_screen(WhyScreen(self.why.title, self.why.body, candidate_notes(ev)))

    def action_life(self) -> None:
        from kvtui.run.narrate import request_of

        ev, _ = self.displayed_event()
        req = request_of(ev)
        if req is None and self.runner.decisions:
            req = self.runner.decisions[-1].request
        if req is None:
            self.notify("No request to follow yet: step to a decision first.", title="Request life")
            return
        self.open_life(req)

    def open_life(self, request: str) -> None:
        from kvtui.tui.screens.life import LifeScreen

        if isinstance(self.screen, LifeScreen):
            self.pop_screen()
        self.push_screen(LifeScreen(self.runner, request))

    def action_speed(self, delta: int) -> None:
        i = min(range(len(SPEEDS)), key=lambda j: abs(SPEEDS[j] - self.speed))
        self.speed = SPEEDS[max(0, min(len(SPEEDS) - 1, i + delta))]
        self._after_command()

    def action_restart(self) -> None:
        if self._cannot("restart", "Restart"):
            return
        self._restart()

    def _cannot(self, capability: str, title: str) -> bool:
        """Say so when the run's source does not take `capability` (RunSource.capabilities)."""
        if self.runner.can(capability):
            return False
        self.notify(f"Real engines are not kvtui's to change: {title.lower()} works on simulated runs "
                    f"(kvtui SCENARIO).", title=title)
        return True

    def _restart(self, policy: str | None = None) -> None:
        self.playing = False
        self.seeking = None
        self.going = None
        self.runner.restart(policy=policy)
        _freeze_heap(thaw=True)
        self.maps.rebind()
        for panel in self.latency_panels:
            panel.rebind()
        if isinstance(self.screen, ZoomScreen):
            self.screen.rebind()
        names = self.runner.node_names()
        if self.selected_node not in names:
            self._select(names[0] if names else None)
        self._after_command()

    def action_next_policy(self) -> None:
        if self._cannot("policy", "Policy"):
            return
        names = list(POLICY_NAMES)
        cur = self.runner.policy
        nxt = names[(names.index(cur) + 1) % len(names)] if cur in names else names[0]
        self.set_policy(nxt)

    def set_policy(self, name: str) -> None:
        self._restart(policy=name)
        self.notify(f"Policy {name}: the run restarted with seed {self.runner.seed}.", title="Policy")

    def _arrange_overview(self) -> None:
        """Beyond OVERVIEW_FROM nodes: an overview strip of every node, and the block map of
        the focused (selected) node only."""
        big = len(self.runner.node_names()) > OVERVIEW_FROM
        self.overview.display = big
        self.overview.selected = self.selected_node
        only = self.selected_node if big else None
        if self.maps.only != only:
            self.maps.only = only
            self.maps.rebind()

    def on_overview_strip_picked(self, message: OverviewStrip.Picked) -> None:
        self._select(message.node)
        self._after_command()

    def _select(self, name: str | None) -> None:
        self.selected_node = name
        self.maps.set_selected(name)
        if hasattr(self, "overview"):
            self._arrange_overview()

    def action_select_node(self, delta: int) -> None:
        name = self.runner.neighbour(self.selected_node, delta)
        if name is not None:
            self._select(name)
            self._after_command()

    def action_toggle_node(self) -> None:
        if self.selected_node is not None:
            self.toggle_node(self.selected_node)

    def toggle_node(self, name: str) -> None:
        if self._cannot("node_down", "Node"):
            return
        if self.runner.ended:
            self.notify("The run has ended. R restarts it.", title="Node")
            return
        self.runner.toggle_node(name)
        self._after_command()

    def action_crash(self) -> None:
        if self._cannot("crash", "Control plane"):
            return
        if self.runner.ended:
            self.notify("The run has ended. R restarts it.", title="Control plane")
            return
        if not self.runner.has_store:
            self.notify(NO_STORE, title="Control plane")
        elif self.runner.control_plane_down:
            self.notify("The control plane is already recovering.", title="Control plane")
        else:
            self.runner.crash_control_plane()
        self._after_command()

    def action_last_election(self) -> None:
        """Back to the start of the last election of a replicated control plane (`j` goes forward)."""
        view = self.runner.control_plane_view()
        if view is None or view.last_election is None:
            self.notify(NOT_REPLICATED if view is None else "No election before this event (j: the next one).", title="Election")
            return
        self.goto(f"#{view.last_election.seq}")

    def action_next_theme(self) -> None:
        names = self.theme_cycle
        i = names.index(self.theme) if self.theme in names else -1
        self._set_theme(names[(i + 1) % len(names)])

    def _set_theme(self, name: str) -> None:
        self.theme = name
        self.notify(f"Theme: {name}", title="Theme", timeout=2)

    def action_zoom(self) -> None:
        if isinstance(self.screen, ZoomScreen):
            self.pop_screen()
            return
        if self.selected_node is not None:
            self.push_screen(ZoomScreen(self.runner, self.selected_node))
            self.call_after_refresh(self.refresh_panels, True)

    def action_help(self) -> None:
        if isinstance(self.screen, HelpScreen):
            self.pop_screen()
        else:
            self.push_screen(HelpScreen(self.HELP_ROWS))

    def action_next_view(self) -> None:
        keys = [k for k, _ in self.views]
        self._set_view(keys[(keys.index(self.view) + 1) % len(keys)])

    def _unhighlight_logs(self) -> None:
        for log in (self.decision_log, self.event_log):
            if log.cursor is not None:
                log.cursor = None
                log.refresh()
        self.highlight = None

    # ------------------------------------------------------------------ command palette
    def palette_commands(self) -> list[tuple[str, str, object]]:
        """Built from the controls registry (kvtui/tui/controls.py), plus one entry per
        policy, node and theme."""
        cmds: list[tuple[str, str, object]] = [
            (title, help_text, partial(self.run_action, action)) for title, help_text, action in palette()
        ]
        for name in POLICY_NAMES if self.runner.can("policy") else ():
            cmds.append((f"Switch policy: {name}", "restarts the run with the same seed", lambda n=name: self.set_policy(n)))
        for node in self.runner.view().nodes:
            if self.runner.can("node_down"):
                verb = "Take {} down" if node.up else "Bring {} back up"
                cmds.append((verb.format(node.name), "d on the selected node", lambda n=node.name: self.toggle_node(n)))
            cmds.append((f"Inspect {node.name}", "z on the selected node", lambda n=node.name: self._zoom(n)))
        for name in self.theme_cycle:
            cmds.append((f"Theme: {name}", "t cycles them all", lambda n=name: self._set_theme(n)))
        return cmds

    def action_command_palette(self) -> None:
        """Textual's palette with two upstream races guarded (see kvtui/tui/palette.py)."""
        from kvtui.tui.palette import GuardedCommandPalette

        if not self.use_command_palette or GuardedCommandPalette.is_open(self):
            return
        if self._nodes._get_by_id("--command-palette") is not None:
            # A palette just dismissed is still the app's child until Textual has removed it;
            # pushing another under the same id raises DuplicateIds (upstream: `is_open` looks
            # only at the current screen; ctrl+p, Escape, ctrl+p within a frame, found by the
            # 20,000-key campaign). The key is dropped: the palette opens on the next press.
            return
        self.push_screen(GuardedCommandPalette(id="--command-palette"))

    def _zoom(self, name: str) -> None:
        self._select(name)
        if isinstance(self.screen, ZoomScreen):
            self.pop_screen()
        self.action_zoom()


def _freeze_heap(thaw: bool = False) -> None:
    """Move everything alive now (Textual, Rich, the widgets, the fresh simulation) out of the
    garbage collector's sight.

    A full collection walks every tracked object; while playing a big cluster that pause
    (tens of ms) lands inside a frame and delays key presses. Objects that exist at start-up
    live for the whole session, so the collector need not look at them again. On restart the
    old simulation is thawed first so it can be collected.
    """
    if thaw:
        gc.unfreeze()
    gc.collect()
    gc.freeze()


def make_app(
    scenario: RunSpec | Scenario,
    seed: int | None = None,
    policy: str | None = None,
    theme: str | None = None,
    fps: int = FPS,
) -> KvtuiApp:
    """The app for a run spec, or a scenario resolved with `seed` and `policy` (shared by the
    CLI, `kvtui record` and the tests)."""
    themes = load_themes()
    known = [t.name for t in themes] or ["dark"]
    if theme is not None and theme not in known:
        from textual.theme import BUILTIN_THEMES

        if theme not in BUILTIN_THEMES:
            raise InputError.one(
                "--theme", None, f"unknown theme {theme!r}; known: {', '.join(known)} (and Textual's: {', '.join(sorted(BUILTIN_THEMES))})"
            )
    return KvtuiApp(Run(scenario, seed=seed, policy=policy), theme=theme, themes=themes, fps=fps)


def make_live_app(source: Navigable, name: str, theme: str | None = None, fps: int = FPS,
                  duration: float | None = None) -> KvtuiApp:
    """The same app on real engines (kvtui/run/live.py): `kvtui live` and `kvtui replay`."""
    return KvtuiApp(Run(source=source, name=name), theme=theme, fps=fps, duration=duration)


