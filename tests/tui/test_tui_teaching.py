"""The teaching controls, driven with Textual's Pilot: stepping back and forth, jumps that
find nothing, the block inspector, a request's life, and keys typed faster than the palette
settles."""

from __future__ import annotations

import asyncio

from textual import events

from kvtui.run.drive import digest
from kvtui.tui.screens.life import LifeScreen
from kvtui.tui.screens.zoom import ZoomScreen


def run(coro):
    return asyncio.run(coro)


def _log_digest(app) -> str:
    r = app.runner
    return digest(list(r.decisions) + list(r.log)) + f"/{r.position}/{r.now}"


def test_back_then_forward_equals_straight_stepping(make):
    async def go():
        straight = make()
        async with straight.run_test() as pilot:
            await pilot.press(*["s"] * 45)
            want = _log_digest(straight)
            want_current = straight.runner.current
        app = make()
        async with app.run_test() as pilot:
            await pilot.press(*["s"] * 45)
            ahead = app.runner.position
            await pilot.press(*["b"] * 5)
            assert app.runner.position < ahead
            back_current = app.runner.current
            assert app.why.shown[0] == back_current.seq, "the Why panel follows the step back"
            await pilot.press(*["s"] * 5)
            assert _log_digest(app) == want
            assert app.runner.current == want_current
            assert len(app.decision_log.items) == len(app.runner.decisions)

    run(go())


def test_back_at_start_says_so(make):
    async def go():
        app = make()
        async with app.run_test() as pilot:
            await pilot.press("b")
            assert app.runner.position == 0
            await pilot.pause()
            assert any("start" in n.message for n in app._notifications)

    run(go())


def test_jump_past_the_last_one_stays_and_says_so(make):
    """A jump that searches to the end of the run and finds nothing (the last rejection passed)
    stays where it began and says so."""
    async def go():
        app = make()
        async with app.run_test() as pilot:
            await pilot.press("r")
            assert app.runner.current.kind == "rejected"
            at, t = app.runner.position, app.runner.now
            for _ in range(200):  # the test scenario has a few rejections: run out of them
                at, t = app.runner.position, app.runner.now
                await pilot.press("r")
                if (app.runner.position, app.runner.now) == (at, t):
                    break
            assert (app.runner.position, app.runner.now) == (at, t) and not app.runner.ended
            await pilot.pause()
            assert any("staying at event" in n.message for n in app._notifications)
            await pilot.press("s")  # the run goes on from there
            assert app.runner.position > at

    run(go())


def test_inspector_moves_over_blocks_and_shows_them(make):
    async def go():
        app = make()
        async with app.run_test(size=(120, 40)) as pilot:
            for _ in range(300):
                app.runner.step(fold=False)
            await pilot.press("z")
            screen = app.screen
            assert isinstance(screen, ZoomScreen)
            await pilot.press("right", "right", "down")
            _, per_row = screen.query_one("#zoom-map").cell_scale()
            assert screen.cell == min(2 + per_row, screen._cells() - 1)
            await pilot.press("up", "left")
            assert screen.cell == max(0, min(2 + per_row, screen._cells() - 1) - per_row - 1)
            text = str(screen.query_one("#zoom-block").render())
            assert f"block {screen.cell}" in text and "tier gpu" in text and "LRU position" in text
            node = screen.node
            await pilot.press("right_square_bracket")
            assert screen.node != node and app.selected_node == screen.node, "no hidden selection"
            await pilot.press("d")
            assert not app.runner.view().node(screen.node).up, "d acts on the node shown"
            await pilot.press("escape")
            assert not isinstance(app.screen, ZoomScreen)

    run(go())


def test_request_life_from_a_decision(make):
    async def go():
        app = make()
        async with app.run_test(size=(120, 40)) as pilot:
            await pilot.press("n")
            req = app.runner.current.request
            await pilot.press(*["s"] * 30)
            await pilot.press("n")
            app.highlight = None
            app.runner.current = app.runner.decisions[0]
            await pilot.press("i")
            assert isinstance(app.screen, LifeScreen) and app.screen.request == req
            text = "\n".join(_screen_lines(app))
            assert "arrived at the router" in text and "routed" in text

    run(go())


def _screen_lines(app) -> list[str]:
    """What the terminal shows, as plain lines."""
    import io

    from rich.console import Console

    width, height = app.size
    console = Console(width=width, height=height, file=io.StringIO(), record=True)
    console.print(app.screen._compositor.render_update(full=True, screen_stack=app._background_screens))
    return console.export_text(styles=False).splitlines()


def test_request_life_wraps_under_its_text_at_80x24(make):
    """At 80x24 the life screen cut its long lines at the box's edge, to be read by scrolling
    sideways; now they wrap, under the text and not under the time."""
    from textual.containers import VerticalScroll

    async def go():
        app = make()
        async with app.run_test(size=(80, 24)) as pilot:
            await pilot.press("n")
            await pilot.press(*["s"] * 30)
            app.runner.current = app.runner.decisions[0]
            await pilot.press("i")
            await pilot.pause()
            assert isinstance(app.screen, LifeScreen)
            assert app.screen.query_one(VerticalScroll).max_scroll_x == 0
            lines = [line[2:-2] for line in _screen_lines(app) if line.startswith("│ ")]
            first = next(i for i, line in enumerate(lines) if "arrived at the router" in line)
            col, tail = lines[first].index("arrived"), lines[first + 1]
            assert tail[:col].strip() == "" and tail[col] != " ", lines[first:first + 2]
            assert tail.rstrip().endswith("turn 1"), lines[first:first + 2]

    run(go())


def _keys_at_once(app, keys):
    """Post keys without waiting between them, as a fast typist's terminal does."""
    chars = {"enter": "\r", "s": "s", "z": "z"}
    for k in keys:
        app.post_message(events.Key(k, chars.get(k)))


def test_palette_survives_keys_faster_than_it_settles(make):
    async def go():
        for keys in (["ctrl+p", "pagedown"], ["ctrl+p", "down", "enter", "enter"], ["s", "z", "z", "z", "s"]):
            app = make(fps=20)
            async with app.run_test(size=(100, 30)) as pilot:
                _keys_at_once(app, keys)
                await pilot.pause(0.3)
                await pilot.pause(0.3)
                assert app.is_running, keys

    run(go())


def test_split_screen_runs_in_lockstep(scenario):
    from kvtui.tui.compare import make_compare_app

    async def go():
        app = make_compare_app(scenario, "round_robin", policy="cache_aware", fps=0, theme="dark")
        async with app.run_test(size=(160, 50)) as pilot:
            await pilot.press(*["s"] * 30)
            left, right = app.left, app.right
            assert left.policy == "cache_aware" and right.policy == "round_robin"
            assert left.seed == right.seed
            # a step moves the run that is behind, then the other to the same time (to within
            # the one event that carries it past)
            assert left.now > 0 and abs(left.now - right.now) < 0.05
            app.lockstep.advance(5.0, budget_s=60)
            app.refresh_panels()
            await pilot.pause()
            assert left.now == right.now == 5.0
            diff = str(app.query_one("#diff").render())
            assert "Δ round_robin vs cache_aware" in diff and "token hit rate" in diff and "rejections" in diff

    run(go())




def test_a_jump_to_what_cannot_happen_says_so_at_once(make):
    """The tests' scenario has no `metadata` section: `w` (next recovery) cannot find one, and
    says so without seeking; after its one scripted failure, `f` says none is left."""
    async def go():
        app = make()
        async with app.run_test() as pilot:
            await pilot.press("s", "s")
            here = app.runner.position
            await pilot.press("w")
            await pilot.pause()
            assert app.seeking is None and app.runner.position == here
            assert "no metadata: section" in list(app._notifications)[-1].message
            await pilot.press("f")
            assert app.runner.current.kind == "node_down"
            at = app.runner.position
            await pilot.press("f")
            await pilot.pause()
            assert app.runner.position == at
            assert "No node failure is scripted after now" in list(app._notifications)[-1].message

    run(go())


def test_escape_cancels_a_jump_and_restores_the_panels():
    """A long jump (pressure.yaml's first node failure is at 45 s) cancelled with Escape: back at
    the event it started from, the logs those of that moment."""
    from pathlib import Path

    from kvtui.scenario import load_scenario
    from kvtui.tui.app import make_app

    import itertools

    async def go():
        scenario = load_scenario(str(Path(__file__).resolve().parents[2] / "scenarios" / "pressure.yaml"), [])
        app = make_app(scenario, fps=20, theme="dark")
        async with app.run_test(size=(120, 40)) as pilot:
            await pilot.press(*["s"] * 30)
            await pilot.pause()
            origin, decisions = app.runner.position, list(app.decision_log.items)
            # a clock a second later at each look: every budgeted search step runs 16 events
            app.runner.source.clock = itertools.count(0.0, 1.0).__next__
            await pilot.press("f")
            await pilot.pause(0.2)
            assert app.seeking == "failure" and app.runner.position > origin
            await pilot.press("escape")
            await pilot.pause()
            assert app.seeking is None and app.runner.position == origin
            assert list(app.decision_log.items) == decisions
            assert "cancelled" in list(app._notifications)[-1].message

    run(go())


def test_split_screen_go_to_why_and_event_log_per_side(scenario):
    """--vs: g moves both sides (to a time; or the left to an event number and the right to
    its time), each side has its Why and event log, and the Δ line fits 120 columns."""
    from kvtui.tui.compare import make_compare_app
    from kvtui.tui.screens.goto import GotoScreen
    from kvtui.tui.screens.why import WhyScreen

    async def go():
        app = make_compare_app(scenario, "round_robin", policy="cache_aware", fps=0, theme="dark")
        async with app.run_test(size=(120, 40)) as pilot:
            await pilot.press("g")
            assert isinstance(app.screen, GotoScreen)
            await pilot.press(*"8", "enter")
            await pilot.pause()
            assert app.left.now == app.right.now == 8.0
            for side in ("#left", "#right"):
                panel = app.query_one(side)
                assert panel.why.body and panel.events.items, side
            assert panel.events.items[-1].seq == app.right.log[-1].seq
            diff = str(app.query_one("#diff").render())
            assert len(diff) <= 118 and "Δ round_robin vs cache_aware" in diff
            await pilot.press("g", "#", "2", "0", "enter")
            await pilot.pause()
            assert app.left.position == 20 and app.right.now == app.left.now < 8.0
            await pilot.press("Y")
            await pilot.pause()
            assert isinstance(app.screen, WhyScreen) and app.screen.title_text.startswith("round_robin")

    run(go())


def test_a_long_go_to_runs_in_the_frames_and_escape_cancels_it():
    """`g` to a far time no longer blocks the screen: it goes on frame by frame, the header says
    so, and Escape returns to the event it started from (QA on big-cluster: ~3 s frozen)."""
    from pathlib import Path

    from kvtui.scenario import load_scenario
    from kvtui.tui.app import make_app

    import itertools

    async def go():
        scenario = load_scenario(str(Path(__file__).resolve().parents[2] / "scenarios" / "pressure.yaml"), [])
        app = make_app(scenario, fps=20, theme="dark")
        async with app.run_test(size=(120, 40)) as pilot:
            await pilot.press(*["s"] * 10)
            await pilot.pause()
            origin = app.runner.position
            app.runner.source.clock = itertools.count(0.0, 1.0).__next__  # every budget runs out at once
            app.goto("80")
            assert app.going == ("time", 80.0) and app.state_text() == "going to 80 s"
            await pilot.pause(0.2)
            assert app.going is not None and app.runner.position > origin
            await pilot.press("escape")
            await pilot.pause()
            assert app.going is None and app.runner.position == origin
            assert "cancelled" in list(app._notifications)[-1].message
            app.runner.source.clock = None  # no budget: the next go-to arrives at once
            app.goto("#40")
            assert app.going is None and app.runner.position == 40

    run(go())


def test_split_screen_jump_keys_say_why_they_do_not_jump(scenario):
    """QA: e, r, p, ... did nothing and said nothing in the split screen."""
    from kvtui.tui.compare import make_compare_app
    from kvtui.tui.controls import CONTROLS, NEXT

    async def go():
        app = make_compare_app(scenario, "round_robin", policy="cache_aware", fps=0, theme="dark")
        async with app.run_test(size=(80, 24)) as pilot:
            for control in (c for c in CONTROLS if c.group is NEXT):
                before = app.lockstep.now, app.left.position
                await pilot.press(control.keys)
                await pilot.pause()
                said = list(app._notifications)[-1]
                assert said.title == f"Jump to next {control.label}" and "g goes both to a time" in said.message
                assert (app.lockstep.now, app.left.position) == before

    run(go())


def test_toasts_at_80x24_stay_whole_on_screen(make, scenario):
    """QA: at 80x24 toasts were cut: Textual's half-width cap made them 40 columns wide and
    stacked them past the top of the screen. There they are three quarters of it (58 columns)
    and a new one replaces those on show, in both apps; the split screen's help is a screen of
    its own, not an 11-row toast."""
    from textual.widgets._toast import Toast

    from kvtui.tui.compare import CompareApp, make_compare_app
    from kvtui.tui.screens.help import HelpScreen

    async def toasts_after(app, keys):
        async with app.run_test(size=(80, 24), notifications=True) as pilot:
            await pilot.press(*keys)
            for _ in range(3):  # the toast rack is updated after the notification (call_later)
                await pilot.pause()
            toasts = list(app.screen.query(Toast))
            assert toasts and all(t.region.width >= 56 for t in toasts)
            assert all(app.screen.region.contains_region(t.region) for t in toasts)
            if isinstance(app, CompareApp):
                await pilot.press("question_mark")
                assert isinstance(app.screen, HelpScreen) and "split screen" in app.screen.title_text

    run(toasts_after(make(), ["c", "l", "w", "c"]))  # no metadata: long refusals, and the detail note
    run(toasts_after(make_compare_app(scenario, "round_robin", fps=0, theme="dark"), ["e", "r", "p", "question_mark", "escape", "f"]))


def test_a_jump_on_a_big_cluster_shows_the_node_it_found():
    """Beyond 16 nodes the map shows one node: `e` moves it to the node that evicted (issue 35:
    it stayed on the selected node, which had evicted nothing)."""
    from pathlib import Path

    from kvtui.events import BlocksEvicted
    from kvtui.scenario import load_scenario
    from kvtui.tui.app import make_app

    async def go():
        app = make_app(load_scenario(str(Path(__file__).with_name("scenario-64.yaml")), []), fps=0, theme="dark")
        async with app.run_test(size=(120, 40)) as pilot:
            first = app.selected_node
            await pilot.press("e")
            await pilot.pause()
            found = app.runner.current
            assert isinstance(found, BlocksEvicted) and found.node != first
            assert app.selected_node == found.node and app.maps.only == found.node

    run(go())


def test_a_tall_terminal_gives_the_histograms_more_rows(make):
    """Issue 35: at 250x70 about half the screen was empty; the wide layout's histograms take
    more of it (more rows, finer bars) from app.TALL rows."""
    from kvtui.tui.app import TALL
    from kvtui.tui.widgets.histogram import Histogram

    async def rows(size) -> int:
        app = make()
        async with app.run_test(size=size) as pilot:
            await pilot.press(*["s"] * 40)
            await pilot.pause()
            return app.query_one("#latency-wide").query(Histogram).first().size.height

    assert run(rows((250, TALL + 15))) > run(rows((120, 40))) >= 3
