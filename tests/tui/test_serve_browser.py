"""`kvtui serve` end to end: a real web server (textual-serve), a real browser (Debian's
chromium, headless, driven by Playwright), loopback only.

The page loads and shows the app, `s` presses step the simulation (the screen changes), and the
screen after the same keys is compared with a second tab's: one seed, one run, one picture.
The peer "browser" (`.ci/peers/browser.sh`) installs chromium and Playwright; without it the
test is skipped, and under CI it fails (tests/differential/peers.py).
"""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.differential.peers import require

ROOT = Path(__file__).resolve().parents[2]
SCENARIO = ROOT / "tests" / "tui" / "scenario.yaml"
CHROMIUM = "/usr/bin/chromium"
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", "--no-first-run", "--disable-quic"]
STEPS = 3


@pytest.fixture(scope="module")
def playwright_api():
    site = require("browser") / "site"
    sys.path.insert(0, str(site))
    from playwright.sync_api import sync_playwright

    with sync_playwright() as api:
        yield api


@pytest.fixture(scope="module")
def server():
    port = _free_port()
    proc = subprocess.Popen([sys.executable, "-m", "kvtui", "serve", str(SCENARIO), "--port", str(port)],
                            cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    try:
        _wait_listening(port, proc)
        yield f"http://127.0.0.1:{port}/"
    finally:
        proc.terminate()
        proc.wait(timeout=30)


@pytest.fixture
def browser(playwright_api, tmp_path):
    context = playwright_api.chromium.launch_persistent_context(
        str(tmp_path / "profile"), executable_path=CHROMIUM, headless=True, args=FLAGS,
        viewport={"width": 1280, "height": 800})
    context.route("**/*", _loopback_only)
    yield context
    context.close()


def test_page_loads_and_keys_step_the_simulation(browser, server):
    first = _open(browser, server)
    before = _settled(first)
    _press(first, "s", STEPS)
    after = _settled(first)
    assert after != before, "three `s` presses did not change the screen"
    second = _open(browser, server)
    _press(second, "s", STEPS)
    assert _settled(second) == after, "the same keys on the same seed drew another screen"


def test_serve_refuses_bad_input_before_listening(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("name: x\nseed: -1\n")
    done = subprocess.run([sys.executable, "-m", "kvtui", "serve", str(bad), "--port", str(_free_port())],
                          cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert done.returncode == 2
    assert str(bad) in done.stderr


def _open(context, url: str):
    page = context.new_page()
    page.goto(url)
    page.wait_for_selector("body.-first-byte", timeout=60_000)
    page.focus(".xterm-helper-textarea")
    return page


def _press(page, key: str, times: int) -> None:
    for _ in range(times):
        page.keyboard.press(key)
        page.wait_for_timeout(300)


def _settled(page, tries: int = 40) -> bytes:
    """A screenshot equal to the one taken half a second before (the app has drawn the key)."""
    last = page.screenshot()
    for _ in range(tries):
        page.wait_for_timeout(500)
        shot = page.screenshot()
        if shot == last:
            return shot
        last = shot
    raise AssertionError("the page never stopped changing")


def _loopback_only(route) -> None:
    if route.request.url.startswith(("http://127.0.0.1", "ws://127.0.0.1")):
        route.continue_()
    else:
        route.abort()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait_listening(port: int, proc: subprocess.Popen, timeout_s: float = 60) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise AssertionError(f"kvtui serve exited {proc.returncode}: {proc.stdout.read().decode()}")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            time.sleep(0.2)
    raise AssertionError(f"kvtui serve did not listen on {port} within {timeout_s} s")
