"""Shared test helpers: the repo root, and a small scenario factory."""

from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SCENARIOS = ROOT / "scenarios"
SHARED_DATA = ROOT.parent / "shared" / "data"


@pytest.fixture
def root() -> Path:
    return ROOT
