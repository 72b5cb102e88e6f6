"""The replicated control plane's panel: its member rows on screen at 80x24 (as the Raft tab),
120x40 and 250x70; `j` / `J` to the next / last election; `c` kills the leader; a run without a
Raft group has neither the tab nor the jumps."""

from __future__ import annotations

import asyncio
import io
import re
from pathlib import Path

import pytest
from rich.console import Console

from kvtui.events import MetadataElection, MetadataMemberDown
from kvtui.scenario import load_scenario
from kvtui.tui.app import make_app
from kvtui.tui.reachable import NOT_REPLICATED

ROW = re.compile(r"\b(m[1-3])\*? +(leader|follower|down|candidate|pre-cand\.) +(\d+) +\d+ +\d+ +\d+ +\d+ ")
PATTERNS = Path(__file__).resolve().parents[2] / "scenarios" / "control-plane-patterns.yaml"


def _screen(app) -> str:
    width, height = app.size
    console = Console(width=width, height=height, file=io.StringIO(), record=True)
    console.print(app.screen._compositor.render_update(full=True, screen_stack=app._background_screens))
    return console.export_text(styles=False)


@pytest.mark.parametrize("size", [(80, 24), (120, 40), (250, 70)])
def test_the_members_rows_follow_a_leader_kill_and_j_finds_the_election(size):
    async def go():
        app = make_app(load_scenario(str(PATTERNS), []), fps=0, theme="dark")
        async with app.run_test(size=size) as pilot:
            if size[0] < 120:
                assert app.view == "raft"  # a replicated run's first tab (tui/panels.py's first row)
            await pilot.press("j")  # the leader is killed at 8 s; the election follows
            await pilot.pause()
            ev = app.runner.current
            assert isinstance(ev, MetadataElection) and ev.term == 2 and 8.0 + 1.0 - 0.1 <= ev.t <= 8.0 + 2.0  # a timeout in [1, 2) s after the last heartbeat
            await pilot.press(*"s" * 4)
            await pilot.pause()
            screen = _screen(app)
            said = f"last election #{ev.seq} at {ev.t:.2f} s" + (" (J)" if size[0] < 120 else f": {ev.member} waited")
            assert said in screen
            rows = {m: [role, term] for m, role, term in ROW.findall(screen)}
            assert rows["m1"][:2] == ["down", "1"]
            assert rows[ev.member][:2] == ["leader", "2"]
            await pilot.press("c")  # kills m2 or m3, whichever leads
            await pilot.pause()
            assert isinstance(app.runner.current, MetadataMemberDown) and app.runner.current.member == ev.member
            screen = _screen(app)
            assert "metadata no leader, term 2 (1/3 up" in screen  # "router cannot read" is cut at 120 wide
            await pilot.press("J")  # back over the kill to the election j found
            await pilot.pause()
            assert app.runner.position == ev.seq
    asyncio.run(go())


def test_a_single_store_has_no_raft_tab_and_the_election_jumps_say_why(make):
    async def go():
        app = make()
        async with app.run_test(size=(80, 24)) as pilot:
            assert "raft" not in [k for k, _ in app.views]
            before = app.runner.position
            await pilot.press("j", "J")
            await pilot.pause()
            assert app.runner.position == before
            assert {n.message for n in app._notifications} == {NOT_REPLICATED}  # identical toasts are shown once
    asyncio.run(go())


def test_vs_pattern_b_shows_the_same_run_held_on_the_left_and_routed_on_the_right():
    """`--vs pattern:B`: the same policy and seed, the right side's router reading its own member:
    over the run (a leader kill, a member cut off) the left (pattern A) held requests and the right
    held none but routed on stale reads; a pattern the scenario cannot take is `--vs: ...`."""
    from kvtui.errors import InputError
    from kvtui.tui.compare import make_compare_app

    story = load_scenario(str(PATTERNS), [])

    async def go():
        app = make_compare_app(story, "pattern:B", fps=0, theme="dark")
        async with app.run_test(size=(120, 40)) as pilot:
            assert [s.border_title for s in app.query("Side")] == ["pattern A", "pattern B"]
            assert app.left.policy == app.right.policy and app.left.seed == app.right.seed
            app.lockstep.advance(30.0, budget_s=120)
            app.refresh_panels()
            await pilot.pause()
            left, right = (r.source.sim.control_plane.report() for r in (app.left, app.right))
            assert left["requests_delayed"] > 0 and right["requests_delayed"] == 0 and right["stale_reads"] > 0
            assert "Δ pattern B vs pattern A" in str(app.query_one("#diff").render())
    asyncio.run(go())
    with pytest.raises(InputError, match="unknown pattern 'Z'"):
        make_compare_app(story, "pattern:Z")
    with pytest.raises(InputError, match="members: 2 or more"):
        make_compare_app(load_scenario(str(PATTERNS.parent / "crash-recovery.yaml"), []), "pattern:B")
