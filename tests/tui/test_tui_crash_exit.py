"""A crash inside the app exits 1 and leaves the traceback in a file it names (issue 10)."""

from __future__ import annotations

import io
import re
from pathlib import Path

from textual.app import App

import kvtui.cli.app as cli_app
import kvtui.tui.app as tui_app
from kvtui.cli import main

SCENARIO = Path(__file__).resolve().parent / "scenario.yaml"


def test_a_crash_in_the_app_exits_1_with_the_traceback_in_a_file(monkeypatch, capsys, tmp_path):
    monkeypatch.setattr(cli_app, "stdin_is_terminal", lambda: True)  # the headless pilot stands in for it
    run = App.run

    async def press_step(pilot):
        await pilot.press("s")
        await pilot.pause()

    def boom(self):
        raise RuntimeError("planted crash")

    monkeypatch.setattr(App, "run", lambda self, **kw: run(self, headless=True, auto_pilot=press_step, **kw))
    monkeypatch.setattr(tui_app.KvtuiApp, "action_step", boom)
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", None)  # re-read TMPDIR
    assert main([str(SCENARIO)]) == 1
    err = capsys.readouterr().err
    line = [x for x in err.splitlines() if x.startswith("kvtui: the app crashed")]
    assert line and "RuntimeError: planted crash" in line[0]
    path = Path(re.search(r"the traceback is in (\S+)", line[0]).group(1))
    assert path.parent == tmp_path
    text = path.read_text()
    assert "Traceback (most recent call last)" in text and "planted crash" in text and "textual" in text


def test_a_clean_quit_exits_0(monkeypatch):
    monkeypatch.setattr(cli_app, "stdin_is_terminal", lambda: True)
    run = App.run

    async def quit_(pilot):
        await pilot.press("q")

    monkeypatch.setattr(App, "run", lambda self, **kw: run(self, headless=True, auto_pilot=quit_, **kw))
    assert main([str(SCENARIO)]) == 0


def test_without_a_terminal_on_stdin_the_app_says_so_and_exits_2(capsys, monkeypatch, tmp_path):
    """stdin a file, or an object with no descriptor: the app must not start and wait forever."""
    monkeypatch.setattr("sys.stdin", open(tmp_path / "keys", "w+"))
    assert main([str(SCENARIO)]) == 2
    assert "stdin is not one" in capsys.readouterr().err
    monkeypatch.setattr("sys.stdin", io.StringIO("q"))
    assert main([str(SCENARIO)]) == 2
    err = capsys.readouterr().err
    assert "needs a terminal, and stdin is not one" in err and len(err.strip().splitlines()) == 1


def test_under_kvtui_serve_the_web_driver_reads_keys_from_a_pipe(monkeypatch, tmp_path):
    """textual-serve runs the app with Textual's web driver, keys on a pipe: not a missing terminal."""
    monkeypatch.setattr("sys.stdin", open(tmp_path / "keys", "w+"))
    monkeypatch.delenv("TEXTUAL_DRIVER", raising=False)
    assert not cli_app.stdin_is_terminal()
    monkeypatch.setenv("TEXTUAL_DRIVER", "textual.drivers.web_driver:WebDriver")
    assert cli_app.stdin_is_terminal()
