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


@pytest.fixture
def without_xgboost(monkeypatch):
    """`import xgboost` fails as it does where the optional package is not installed."""
    import builtins

    real = builtins.__import__

    def fake(name, *a, **k):
        if name == "xgboost":
            raise ImportError("No module named 'xgboost'")
        return real(name, *a, **k)

    monkeypatch.setattr(builtins, "__import__", fake)
    return lambda: monkeypatch.setattr(builtins, "__import__", real)
