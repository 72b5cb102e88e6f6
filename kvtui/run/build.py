"""Which engine build this process runs, for the faces (`kvtui --version`): they read the engine
only through kvtui.run (tests/test_import_rules.py)."""

from __future__ import annotations

from kvtui.sim import compiled


def engine_build() -> str:
    """"engine: compiled (mypyc)" or "engine: pure Python (why)" (kvtui/sim/compiled.py)."""
    return compiled.describe()
