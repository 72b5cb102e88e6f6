"""The simulation engine. A library: no Textual, no Rich, no wall-clock time."""

from kvtui.sim import compiled

compiled.guard()  # before any engine module: a stale compiled module must not shadow its source
