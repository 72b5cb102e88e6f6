"""`kvtui replay DIR --as POLICY` in the split screen (kvtui/tui/counterfactual.py), on a
route-mode recording made in the tests (tests/live/made_recording.py, load_prefix over two
engines, each engine's /metrics read once): the recording on the left, its traffic simulated
under another policy on the right, on one clock, and the whole runs' figures the headless
table prints."""

from __future__ import annotations

import asyncio
import shutil

import pytest
from textual.widgets import Static

from kvtui.calibrate.rebuild import base_scenario
from kvtui.cli import main
from kvtui.live.recording import Recorder, read_recording
from kvtui.run.recorded_traffic import read_traffic
from kvtui.tui.compare import Side
from kvtui.tui.counterfactual import make_counterfactual_app, short_name

from live.made_recording import made_routed_recording

POLICY = "round_robin"  # the recording was routed under load_prefix


@pytest.fixture
def recording(tmp_path, monkeypatch):
    """The recording as `kvtui live --record` writes it, at a relative path (the screen names it)."""
    monkeypatch.chdir(tmp_path)
    recorder = Recorder("made.rec")
    for d in made_routed_recording(requests=40, scraped=True):
        recorder.add(d)
    recorder.close()
    return "made.rec"


def _app(path: str, policy: str = POLICY):
    return make_counterfactual_app(read_traffic(path), read_recording(path), base_scenario(None, []), policy,
                                   theme="dark", fps=0)


def _headless_rows(path: str, policy: str, capsys) -> list[tuple[str, str, str, str]]:
    """The rows `kvtui replay DIR --as POLICY --no-ui` prints, cut at its fixed columns."""
    capsys.readouterr()
    assert main(["replay", path, "--as", policy, "--no-ui"]) == 0
    out = capsys.readouterr().out.splitlines()
    table = out[2:out.index(next(line for line in out if line.startswith("available: ")))]
    return [(ln[:26].strip(), ln[26:50].strip(), ln[50:80].strip(), ln[80:].strip()) for ln in table]


def test_both_panes_show_and_the_whole_runs_figures_are_the_headless_tables(recording, capsys):
    rows = _headless_rows(recording, POLICY, capsys)
    assert [r[0] for r in rows][:3] == ["hit rate (blocks)", "TTFT p50 ms", "TTFT p95 ms"] and len(rows) == 8
    asyncio.run(_both_panes(recording, rows))


async def _both_panes(path: str, rows) -> None:
    app = _app(path)
    async with app.run_test(size=(120, 40)) as pilot:
        left, right = app.query_one("#left", Side), app.query_one("#right", Side)
        assert left.border_title == "recorded (load_prefix)" and right.border_title == f"simulated ({POLICY})"
        assert not app.left.source.capabilities and left.runner.live is False  # the recording: nothing to command
        whole = str(app.query_one("#whole", Static).render())
        for name, a, b, d in rows:
            assert f"{name} {a} → {b} ({d})" in whole
        for _ in range(6):
            await pilot.press("s")
        await pilot.pause()
        assert app.left.position > 0 and app.right.position > 0
        assert app.query_one("#diff", Static).render().plain.startswith(f"Δ simulated {POLICY} vs recorded: ")
        await pilot.resize_terminal(80, 24)
        await pilot.pause()
        app.refresh_panels()
        short = str(app.query_one("#whole", Static).render())  # at 80 columns, the deltas only
        assert short.startswith("whole recording, Δ: ") and len(short) <= 2 * 78
        for name, _, _, d in rows:
            assert f"{short_name(name)} {d}" in short


def test_both_panes_step_on_the_recordings_clock(recording):
    """At 10 s of the recording (from its first delivery), the simulation has taken the requests
    the recording had routed by then: its time zero is the first routing decision (0.5 s in)."""
    asyncio.run(_one_clock(recording))


async def _one_clock(path: str) -> None:
    traffic = read_traffic(path)
    assert traffic.start_s == pytest.approx(0.5)
    routed = sum(1 for r in traffic.requests if r.t + traffic.start_s <= 10.0)
    assert 0 < routed < len(traffic.requests)
    app = _app(path)
    async with app.run_test(size=(120, 40)):
        app.goto("10")
        assert app.right.now == pytest.approx(9.5) and app.lockstep.now <= 10.0
        assert app.right.key_figures().arrived == routed
        position = app.left.position
        app.goto("2")
        assert app.right.key_figures().arrived < routed
        app.goto(f"#{position}")  # the recording's event; the simulation follows to its time
        assert app.left.position == position and 9.5 < app.left.now <= 10.0
        assert app.right.now >= app.left.now - traffic.start_s - 1e-9  # at its time (or its next event's)


def test_replay_as_without_no_ui_opens_the_app_or_says_it_needs_a_terminal(recording, capsys, monkeypatch):
    assert main(["replay", recording, "--as", POLICY]) == 2
    assert "the app needs a terminal" in capsys.readouterr().err
    import kvtui.cli.app as cli_app

    opened = []
    monkeypatch.setattr(cli_app, "stdin_is_terminal", lambda: True)
    monkeypatch.setattr(cli_app, "run_app", lambda app, argv: opened.append(app) or 0)
    assert main(["replay", recording, "--as", "load_prefix", "--seed", "7"]) == 0
    app = opened[0]
    assert app.titles == ("recorded (load_prefix)", "simulated (load_prefix)") and app.right.seed == 7
    assert app.lockstep.shift == (0.0, 0.5)
    app.lockstep.advance(1e9, float("inf"))  # both to the end: every recorded request taken on both sides
    assert app.lockstep.ended
    assert app.left.key_figures().completed == app.right.key_figures().completed == 40
    app.left.close()
    app.right.close()
    shutil.rmtree(app.directory)  # the app never mounted, so never unmounted


def test_split_screen_snapshot(snap_compare, recording):
    """120x40, dark theme: both panes at 8 s of the recording."""

    async def run_before(pilot) -> None:
        pilot.app.goto("8")
        pilot.app.refresh_panels()
        await pilot.pause()

    assert snap_compare(_app(recording), terminal_size=(120, 40), run_before=run_before)
