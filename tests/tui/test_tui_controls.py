"""Each control does what it says (driven with Textual's Pilot, headless)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from kvtui.events import RouteDecided
from kvtui.scenario.policies import POLICY_NAMES
from kvtui.tui.screens.help import HelpScreen
from kvtui.tui.screens.zoom import ZoomScreen
from textual.widgets import Static
from kvtui.tui.widgets.block_map import GLYPH_MOVING, GLYPHS, BlockMap


def run(coro):
    return asyncio.run(coro)


async def _stepped(app, pilot, n: int) -> None:
    for _ in range(n):
        app.runner.step(fold=False)
    app.refresh_panels(force=True)
    await pilot.pause()


def test_space_plays_and_pauses(make):
    async def go():
        app = make(fps=20)
        async with app.run_test() as pilot:
            assert app.runner.now == 0 and not app.playing
            await pilot.press("space")
            assert app.playing
            await asyncio.sleep(0.4)
            assert app.runner.now > 0, "playing advanced sim time"
            await pilot.press("space")
            assert not app.playing
            t = app.runner.now
            await asyncio.sleep(0.2)
            assert app.runner.now == t, "paused means no progress"
            assert "paused" in app.state_text()

    run(go())


def test_step_advances_one_event_and_explains_it(make):
    async def go():
        app = make()
        async with app.run_test() as pilot:
            app.runner.fold = False  # every event, stored and batch included
            before = app.runner.position
            await pilot.press("s")
            ev = app.runner.current
            assert ev is not None and ev.seq == before + 1 == app.runner.position
            assert app.why.shown[0] == ev.seq
            assert app.why.body == app.runner.explain(ev)
            await pilot.press("s", "s")
            assert app.runner.current.seq > ev.seq

    run(go())


@pytest.mark.parametrize(
    "key,kind",
    [("e", "evicted"), ("r", "rejected"), ("p", "preempted"), ("f", "node_down")],
)
def test_jump_to_next(make, key, kind):
    async def go():
        app = make()
        async with app.run_test() as pilot:
            await pilot.press(key)
            assert app.runner.current is not None
            assert app.runner.current.kind == kind
            assert app.why.shown[0] == app.runner.current.seq
            first = app.runner.current.seq
            at = app.runner.position
            await pilot.press(key)
            if app.runner.current.seq != first:  # a second one, later
                assert app.runner.current.kind == kind and app.runner.current.seq > first
            else:  # none left: the jump stays where it was (never runs off the end)
                assert app.runner.position == at and not app.runner.ended

    run(go())


def test_jump_with_frame_timer_finishes_in_frames(make):
    """With a frame timer the search runs in budgeted slices; the key returns at once."""

    async def go():
        app = make(fps=50)
        async with app.run_test() as pilot:
            app.budget = 0.0005  # tiny slices: the search must span several frames
            await pilot.press("r")
            for _ in range(200):
                if app.seeking is None:
                    break
                await asyncio.sleep(0.02)
            assert app.seeking is None
            assert app.runner.current.kind == "rejected"

    run(go())


def test_faster_slower(make):
    async def go():
        app = make()
        async with app.run_test() as pilot:
            s0 = app.speed
            await pilot.press("plus")
            assert app.speed > s0
            await pilot.press("minus", "minus")
            assert app.speed < s0
            for _ in range(20):
                await pilot.press("minus")
            assert app.speed == min(app.speed, 0.1)

    run(go())


def test_restart_same_seed(make):
    async def go():
        app = make()
        async with app.run_test() as pilot:
            await _stepped(app, pilot, 300)
            seq_a = [d.seq for d in app.runner.decisions]
            gen = app.runner.generation
            await pilot.press("R")
            assert app.runner.generation == gen + 1
            assert app.runner.now == 0
            assert not app.decision_log.items
            await _stepped(app, pilot, 300)
            assert [d.seq for d in app.runner.decisions] == seq_a, "same seed, same run"

    run(go())


def test_switch_policy_restarts(make):
    async def go():
        app = make()
        async with app.run_test() as pilot:
            await _stepped(app, pilot, 50)
            first = app.runner.policy
            await pilot.press("o")
            assert app.runner.policy == POLICY_NAMES[(POLICY_NAMES.index(first) + 1) % len(POLICY_NAMES)]
            assert app.runner.source.sim.policy_name == app.runner.policy
            assert app.runner.now == 0
            app.set_policy("least_loaded")
            await pilot.pause()
            assert app.runner.source.sim.policy_name == "least_loaded"

    run(go())


def test_select_node_and_take_it_down_and_back(make):
    async def go():
        app = make()
        async with app.run_test() as pilot:
            names = app.runner.node_names()
            assert app.selected_node == names[0]
            await pilot.press("right_square_bracket")
            assert app.selected_node == names[1]
            await pilot.press("left_square_bracket", "left_square_bracket")
            assert app.selected_node == names[-1]
            await pilot.press("right_square_bracket", "right_square_bracket")
            target = app.selected_node
            await _stepped(app, pilot, 100)
            await pilot.press("d")
            assert not app.runner.node_is_up(target)
            assert app.runner.current.kind == "node_down" and app.runner.current.node == target
            await pilot.pause()
            label = app.maps.render_line(app.maps.node_region(names.index(target)).y).text
            assert "DOWN" in label
            await pilot.press("d")
            assert app.runner.node_is_up(target)
            assert app.runner.current.kind == "node_up"

    run(go())


def test_crash_control_plane_without_store_says_so(make, monkeypatch):
    async def go():
        app = make()
        notes = []
        monkeypatch.setattr(app, "notify", lambda msg, **kw: notes.append(msg))
        async with app.run_test() as pilot:
            assert not app.runner.has_store
            await pilot.press("c")
            assert notes and "metadata" in notes[0]

    run(go())


def test_crash_control_plane_and_recover(scenario):
    """With a store (a `metadata` section) the crash is real: crash event, then recovery."""
    import dataclasses

    from kvtui.scenario.model import Metadata
    from kvtui.tui.app import make_app

    async def go():
        app = make_app(dataclasses.replace(scenario, metadata=Metadata()), fps=0, theme="dark")
        async with app.run_test(size=(120, 40)) as pilot:
            await _stepped(app, pilot, 200)
            await pilot.press("c")
            assert app.runner.current.kind == "cp_crash"
            assert app.runner.control_plane_down
            assert "CP recovering" in str(app.query_one("#status").render())
            await pilot.press("w")
            ev = app.runner.current
            assert ev.kind == "cp_recovered" and ev.digest_before == ev.digest_after
            assert not app.runner.control_plane_down
            assert "identical" in app.why.body

    run(go())


def test_cycle_themes_live(make):
    async def go():
        app = make()
        async with app.run_test() as pilot:
            seen = [app.theme]
            for _ in range(len(app.theme_cycle)):
                await pilot.press("t")
                seen.append(app.theme)
            # one theme system: t goes through kvtui's three, then every one Textual's picker offers
            assert seen[:4] == ["dark", "light", "high-contrast", "ansi-dark"] and seen[-1] == "dark"
            assert sorted(seen[:-1]) == sorted(app.available_themes) and "tokyo-night" in seen
            await pilot.press("t")
            await pilot.pause()
            # the block colours follow the theme's variables
            assert app.theme_variables["block-owner-0"].lower() == app.get_theme("light").variables["block-owner-0"].lower()

    run(go())


def test_zoom_and_back(make):
    async def go():
        app = make()
        async with app.run_test() as pilot:
            await pilot.press("right_square_bracket", "z")
            assert isinstance(app.screen, ZoomScreen)
            assert app.screen.node == app.runner.node_names()[1]
            zm = app.screen.query_one(BlockMap)
            assert zm.only == app.screen.node
            await pilot.press("s")  # app controls still work while zoomed
            await pilot.press("escape")
            assert not isinstance(app.screen, ZoomScreen)

    run(go())


def test_zoom_keys_without_a_block_map_are_ignored(make):
    """The zoom screen's bindings can fire while its children are not (or no longer) mounted:
    Textual dispatches a pushed screen's bindings before compose has mounted them. Every key but
    Back is then ignored instead of raising NoMatches (the 20,000-key campaign's last race)."""

    async def go():
        app = make()
        async with app.run_test() as pilot:
            early = ZoomScreen(app.runner, app.runner.node_names()[0])
            assert early.check_action("other_node", (1,)) is False  # not mounted yet
            assert early.check_action("app.pop_screen", ()) is True
            await pilot.press("z")
            screen = app.screen
            assert isinstance(screen, ZoomScreen) and screen.check_action("other_node", (1,))
            await screen.query_one(BlockMap).remove()  # the state a too-early key meets
            await pilot.press("right_square_bracket", "left", "enter", "d")
            assert app.screen is screen and screen.node == app.runner.node_names()[0]
            await pilot.press("R")  # a restart rebinds the zoom screen (z then R within a frame)
            screen.tick()
            assert app.screen is screen
            await pilot.press("escape")
            assert not isinstance(app.screen, ZoomScreen)

    run(go())


def test_help_screen_lists_every_binding(make):
    async def go():
        app = make()
        async with app.run_test(size=(100, 50)) as pilot:
            await pilot.press("question_mark")
            assert isinstance(app.screen, HelpScreen)
            legend = "\n".join(str(w.render()) for w in app.screen.query(Static))
            for glyph in GLYPHS[:5] + [GLYPH_MOVING]:  # every cell state the maps draw, ⇄ in flight with them
                assert f"  {glyph}  " in legend, f"{glyph} missing from the help's block map key"
            keys = {k for k, _ in app.HELP_ROWS}
            text = " ".join(k for k in keys)
            for b in app.BINDINGS:
                shown = b.key_display or b.key
                assert shown in text or b.key in text, f"binding {b.key} missing from help"
            await pilot.press("escape")
            assert not isinstance(app.screen, HelpScreen)

    run(go())


def test_next_view_cycles_lower_panels(make):
    async def go():
        app = make()
        async with app.run_test(size=(80, 24)) as pilot:
            assert app.view == "decisions"
            await pilot.press("v")
            assert app.view == "candidates"
            assert app.query_one("#candidates").display
            await pilot.press("v", "v")
            assert app.view == "latency"
            assert app.query_one("#latency").display
            assert not app.query_one("#decisions").display

    run(go())


def test_quit(make):
    async def go():
        app = make()
        async with app.run_test() as pilot:
            await pilot.press("q")
            await pilot.pause()
            assert not app.is_running

    run(go())


def test_decision_selection_shows_candidates(make):
    async def go():
        app = make()
        async with app.run_test(size=(160, 50)) as pilot:
            await _stepped(app, pilot, 300)
            app.decision_log.focus()
            await pilot.press("up", "up")
            ev = app.decision_log.highlighted
            assert isinstance(ev, RouteDecided)
            assert app.candidates.decision is ev
            assert app.why.shown[0] == ev.seq and app.why.shown[1] == "selected"
            for c in ev.candidates:
                assert c.node in app.candidates.plain
            await pilot.press("escape")
            assert app.decision_log.cursor is None

    run(go())


def test_palette_reopened_while_the_last_one_is_being_removed(make):
    """ctrl+p, Escape, ctrl+p within one frame: the dismissed palette is still the app's child
    under the palette's id, so opening another would raise DuplicateIds (Textual's `is_open`
    looks only at the current screen). The second press is dropped instead; the next opens it."""
    from kvtui.tui.palette import GuardedCommandPalette

    async def go():
        app = make()
        async with app.run_test() as pilot:
            await pilot.press("ctrl+p")
            await pilot.pause()
            assert GuardedCommandPalette.is_open(app)
            app.pop_screen()  # not awaited: the palette is being removed
            app.action_command_palette()
            await pilot.pause()
            assert not GuardedCommandPalette.is_open(app)
            await pilot.press("ctrl+p")
            await pilot.pause()
            assert GuardedCommandPalette.is_open(app)
            await pilot.press("escape")

    run(go())


def test_goto_answered_twice_in_one_frame_closes_once(make):
    """g then Enter, Enter (or Escape, Escape) before the first dismiss lands: the second answer
    reaches the closing screen and must not pop the screen under it (ScreenStackError)."""
    from kvtui.tui.screens.goto import GotoScreen

    async def go():
        app = make()
        async with app.run_test() as pilot:
            await pilot.press("g")
            await pilot.pause()
            screen = app.screen
            assert isinstance(screen, GotoScreen)
            screen.action_cancel()
            screen.action_cancel()  # still current: the first dismiss has not run yet
            await pilot.pause()
            assert not isinstance(app.screen, GotoScreen) and len(app.screen_stack) == 1
            assert app.is_running

    run(go())


def test_palette_has_every_command(make):
    async def go():
        app = make()
        async with app.run_test() as pilot:
            titles = [t for t, _, _ in app.palette_commands()]
            for needle in [
                "Play / pause",
                "Step one event",
                "Jump to next eviction",
                "Jump to next rejection",
                "Jump to next preemption",
                "Faster",
                "Slower",
                "Restart (same seed)",
                "Crash the control plane",
                "Next theme",
                "Help",
                "Quit",
            ]:
                assert needle in titles
            for name in POLICY_NAMES:
                assert f"Switch policy: {name}" in titles
            # one registry: every control is a binding, a help row and a palette entry
            from kvtui.tui.controls import CONTROLS, MERGED

            bound = {b.id for b in app.BINDINGS}
            helped = " ".join(d for _, d in app.HELP_ROWS)
            for c in CONTROLS:
                assert c.title in titles and c.id in bound and (c.help in helped or c.id in MERGED)
            for node in app.runner.node_names():
                assert f"Take {node} down" in titles and f"Inspect {node}" in titles
            # and through the palette itself
            await pilot.press("ctrl+p")
            await pilot.pause()
            for ch in "next eviction":
                await pilot.press(ch if ch != " " else "space")
            await pilot.pause(0.3)
            await pilot.press("enter")
            await pilot.pause()
            assert app.runner.current is not None and app.runner.current.kind == "evicted"

    run(go())


def test_click_selects_node(make):
    async def go():
        app = make()
        async with app.run_test(size=(80, 24)) as pilot:
            region = app.maps.node_region(1)
            await pilot.click("#maps", offset=(region.x + 2, region.y + 1))
            assert app.selected_node == app.runner.node_names()[1]

    run(go())


def test_goto_nan_is_refused_not_the_end(make):
    """`nan`, `inf` and `1e999` parse as floats; typed at the go-to prompt they must be refused
    like any other non-number, not taken to the end of the run ("going to inf s")."""

    async def go():
        app = make()
        async with app.run_test() as pilot:
            for text in ("nan", "inf", "1e999", "-inf"):
                app.goto(text)
                await pilot.pause()
                assert app.runner.position == 0 and app.seeking is None, text
            app.goto("1.5")
            await pilot.pause()
            assert app.runner.position > 0

    run(go())


def test_toasts_show_no_markdown_backticks(make):
    """Toasts are plain text: "fold `stored` and `batch` events" showed its backticks."""
    import asyncio

    async def go() -> list[str]:
        app = make()
        shown = []
        async with app.run_test() as pilot:
            for key in ("l", "l", "w", "c"):  # one at a time: at 80x24 a toast replaces the last
                await pilot.press(key)
                await pilot.pause()
                shown.append(list(app._notifications)[-1].message)
        return shown

    messages = asyncio.run(go())
    assert len(messages) >= 3 and not [m for m in messages if "`" in m], messages


@pytest.mark.parametrize("size", [(80, 24), (120, 40), (250, 70)])
def test_the_latency_view_shows_all_three_histograms(size):
    """At 80x24 the Latency view showed TTFT alone (the run-wide line above took the rest), and at
    120x40 the panel's last row was cut off (pressure.yaml's four maps): every histogram and the
    panel's end must be on screen."""
    from kvtui.scenario import load_scenario
    from kvtui.tui.app import make_app

    async def go():
        pressure = Path(__file__).resolve().parents[2] / "scenarios" / "pressure.yaml"
        app = make_app(load_scenario(str(pressure), []), fps=0, theme="dark")
        async with app.run_test(size=size) as pilot:
            await pilot.press("v", "v", "v")
            await _stepped(app, pilot, 400)
            panel = app.query_one("#latency" if size[0] < 120 else "#latency-wide")
            visible = panel.scrollable_content_region if size[0] < 120 else panel.parent.region
            for hist in panel.histograms:
                assert hist.region.height >= 1 and visible.contains_region(hist.region), (hist.id, hist.region, visible)
            if size[0] >= 120:
                assert visible.contains_region(panel.stats.region), panel.stats.region

    run(go())
