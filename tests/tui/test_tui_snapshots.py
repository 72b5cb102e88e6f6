"""Snapshot tests of the app (pytest-textual-snapshot), at 80x24 and 160x50.

Every snapshot is taken paused, with a fixed size, theme and seed, on the tests' own scenario
(tests/tui/scenario.yaml) and with no frame timer, so the picture depends only on the code.
After an intended change of the picture: `pytest tests/tui --snapshot-update`, then look at
the new SVGs in tests/tui/__snapshots__/ before committing them.
"""

from __future__ import annotations

import pytest

SIZES = [pytest.param((80, 24), id="80x24"), pytest.param((160, 50), id="160x50")]
STEPS = 400  # well into the run: caches warm, first evictions and preemptions


def steps(n: int):
    async def run_before(pilot) -> None:
        app = pilot.app
        for _ in range(n):
            app.runner.step(fold=False)
        app.refresh_panels(force=True)
        await pilot.pause()

    return run_before


def keys_after(n: int, *keys: str):
    async def run_before(pilot) -> None:
        await steps(n)(pilot)
        await pilot.press(*keys)
        pilot.app.refresh_panels(force=True)
        await pilot.pause()

    return run_before


@pytest.mark.parametrize("size", SIZES)
def test_first_screen(snap_compare, make, size):
    assert snap_compare(make(), terminal_size=size)


@pytest.mark.parametrize("size", SIZES)
def test_after_steps(snap_compare, make, size):
    assert snap_compare(make(), terminal_size=size, run_before=steps(STEPS))


@pytest.mark.parametrize("size", SIZES)
def test_after_jump_to_next_eviction(snap_compare, make, size):
    assert snap_compare(make(), terminal_size=size, run_before=keys_after(0, "e"))


@pytest.mark.parametrize("size", SIZES)
def test_help_screen(snap_compare, make, size):
    assert snap_compare(make(), terminal_size=size, run_before=keys_after(0, "question_mark"))


@pytest.mark.parametrize("theme", ["dark", "light", "high-contrast"])
@pytest.mark.parametrize("size", SIZES)
def test_theme(snap_compare, make, size, theme):
    assert snap_compare(make(theme=theme), terminal_size=size, run_before=steps(STEPS))


@pytest.mark.parametrize("size", SIZES)
def test_after_node_failure(snap_compare, make, size):
    """The scenario's scripted failure of node-c: its map crossed out, the event explained."""
    assert snap_compare(make(), terminal_size=size, run_before=keys_after(0, "f"))


@pytest.mark.parametrize("size", SIZES)
def test_decision_selected(snap_compare, make, size):
    """A decision highlighted in the log: its candidates and the explanation of the pick
    (at 80x24 the candidates view is opened with enter)."""
    assert snap_compare(make(), terminal_size=size, run_before=keys_after(STEPS, "tab", "up", "up", "enter"))


# ---------------------------------------------------------------------- issue 11's screens
@pytest.mark.parametrize("size", SIZES)
def test_after_step_back(snap_compare, make, size):
    """Two steps back after 400 events: the timeline cursor, logs and Why of the earlier moment."""
    assert snap_compare(make(), terminal_size=size, run_before=keys_after(STEPS, "b", "b"))


@pytest.mark.parametrize("size", SIZES)
def test_inspector(snap_compare, make, size):
    """The block inspector on node-a, its cursor moved right and down."""
    assert snap_compare(make(), terminal_size=size, run_before=keys_after(STEPS, "z", "right", "right", "down"))


@pytest.mark.parametrize("size", SIZES)
def test_request_life(snap_compare, make, size):
    """The life of the request of the latest decision."""
    assert snap_compare(make(), terminal_size=size, run_before=keys_after(STEPS, "n", "i"))


@pytest.mark.parametrize("size", SIZES)
def test_goto_prompt(snap_compare, make, size):
    assert snap_compare(make(), terminal_size=size, run_before=keys_after(STEPS, "g"))


@pytest.mark.parametrize("size", SIZES)
def test_story_chapter(snap_compare, make, size):
    """k goes to the next chapter of the story (node-c fails at 6 s)."""
    assert snap_compare(make(), terminal_size=size, run_before=keys_after(0, "k"))


@pytest.mark.parametrize("size", SIZES)
def test_overview_64_nodes(snap_compare, size):
    """64 nodes: the overview strip and the focused node's map."""
    from pathlib import Path

    from kvtui.scenario import load_scenario
    from kvtui.tui.app import make_app

    here = Path(__file__).resolve().parent
    app = make_app(load_scenario(str(here / "scenario-64.yaml"), []), fps=0, theme="dark")
    assert snap_compare(app, terminal_size=size, run_before=steps(STEPS))


@pytest.mark.parametrize("size", [*SIZES, pytest.param((120, 40), id="120x40")])
def test_split_screen(snap_compare, scenario, size):
    """`--vs`: cache_aware against least_loaded, in lockstep, at 5 s of sim time."""
    from kvtui.tui.compare import make_compare_app

    async def run_before(pilot) -> None:
        pilot.app.lockstep.advance(5.0, budget_s=float("inf"))
        pilot.app.refresh_panels()
        await pilot.pause()

    app = make_compare_app(scenario, "least_loaded", policy="cache_aware", fps=0, theme="dark")
    assert snap_compare(app, terminal_size=size, run_before=run_before)


# ---------------------------------------------------------------------- issue 20: Why in full
WHY_SIZES = [*SIZES, pytest.param((120, 40), id="120x40")]


@pytest.mark.parametrize("size", WHY_SIZES)
def test_rejection_why_panel(snap_compare, make, size):
    """The first rejection: the panel's title says when its text is cut (y reads it all)."""
    assert snap_compare(make(), terminal_size=size, run_before=keys_after(0, "r"))


@pytest.mark.parametrize("size", WHY_SIZES)
def test_rejection_why_in_full(snap_compare, make, size):
    """y: the rejection's Why whole, on its own screen."""
    assert snap_compare(make(), terminal_size=size, run_before=keys_after(0, "r", "y"))


@pytest.mark.parametrize("size", [pytest.param((120, 40), id="120x40")])
def test_decision_why_in_full(snap_compare, make, size):
    """y on a decision: its Why and every candidate's note in full."""
    assert snap_compare(make(), terminal_size=size, run_before=keys_after(STEPS, "n", "y"))


# ---------------------------------------------------------------------- issue 22: blocks in flight
PD_STEP = 1337  # disaggregation.yaml's KVTransferStarted at 22.88 s: 113 blocks prefill-a -> decode-a


@pytest.mark.parametrize("size", SIZES)
def test_blocks_in_flight_on_both_maps(snap_compare, size):
    """Mid-transfer on the P/D scenario, paused: the moving blocks draw ⇄ on prefill-a's map and
    on decode-a's, the legend lists the glyph, and the Why panel explains the transfer."""
    from pathlib import Path

    from kvtui.scenario import load_scenario
    from kvtui.tui.app import make_app

    pd = Path(__file__).resolve().parents[2] / "kvtui" / "scenarios" / "disaggregation.yaml"
    app = make_app(load_scenario(str(pd), []), fps=0, theme="dark")
    assert snap_compare(app, terminal_size=size, run_before=steps(PD_STEP))
