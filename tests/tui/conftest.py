"""Helpers for the app's tests: the tests' own fixed scenario and an app factory."""

from __future__ import annotations

from pathlib import Path

import pytest

from kvtui.scenario import load_scenario

HERE = Path(__file__).resolve().parent
SCENARIO = HERE / "scenario.yaml"


@pytest.fixture(scope="session")
def scenario():
    return load_scenario(str(SCENARIO), [])


@pytest.fixture
def make(scenario):
    """make(**kw) -> a fresh app on the test scenario; no frame timer unless fps= is given."""
    from kvtui.tui.app import make_app

    def factory(**kw):
        kw.setdefault("fps", 0)
        kw.setdefault("theme", "dark")
        return make_app(scenario, **kw)

    return factory
