"""Which engine build runs: the mypyc-compiled core, or the pure-Python modules it was built from.

Issue 23 allows a compiled core on condition that an editable checkout never runs a stale one:
a compiled module (`blocks.cpython-311-*.so` beside `blocks.py`) would otherwise shadow every
later edit to its source, silently. `KVTUI_COMPILE=1 pip install [-e] .` (setup.py) compiles
`MODULES` as one mypyc group and records each source's SHA-256 in `compiled.json` beside this
file. `guard()` runs when `kvtui.sim` is imported, before any engine module: if a module of
the group has a compiled file whose source no longer has the recorded hash (or no record at
all), the *whole group* is imported from its `.py` files (one warning line on stderr), since
compiled modules call each other's native classes directly and cannot mix with pure ones.
`KVTUI_PURE=1` asks for the pure modules without a warning (the differential tests run both).

This module is itself never compiled, and imports nothing from the engine.
"""

from __future__ import annotations

import hashlib
import importlib.machinery
import importlib.util
import json
import os
import sys
from pathlib import Path

# The engine modules compiled, chosen by profile (cProfile over benchmarks/standard.yaml and the
# Mooncake conversation trace): every module above ~0.5 % of own time on either, plus what they
# subclass (router/base.py) and the request they pass around.
MODULES = (
    "kvtui.sim.blocks",
    "kvtui.sim.bus",
    "kvtui.sim.distributions",
    "kvtui.sim.engine",
    "kvtui.sim.kv_manager",
    "kvtui.sim.latency",
    "kvtui.sim.loop",
    "kvtui.sim.metrics",
    "kvtui.sim.node",
    "kvtui.sim.request",
    "kvtui.sim.router.base",
    "kvtui.sim.router.cache_aware",
    "kvtui.sim.router.dynamo",
    "kvtui.sim.router.index",
    "kvtui.sim.router.router",
    "kvtui.sim.router.state",
    "kvtui.sim.workload.arrivals",
    "kvtui.sim.workload.hashing",
    "kvtui.sim.workload.synthetic",
    "kvtui.sim.workload.tokens",
    "kvtui.sim.workload.trace_keys",
)
GROUP = "kvtui.sim.compiled_core"  # mypyc's shared library: kvtui/sim/compiled_core__mypyc.*.so
PACKAGE_ROOT = Path(__file__).resolve().parent.parent  # the directory holding kvtui/'s modules
MANIFEST = Path(__file__).with_name("compiled.json")

build = "pure"  # what guard() decided: "compiled" or "pure"
why_pure = "not built compiled; KVTUI_COMPILE=1 pip install -e . compiles it"


def source_path(module: str) -> Path:
    return PACKAGE_ROOT.parent.joinpath(*module.split(".")).with_suffix(".py")


def source_hash(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def compiled_file(module: str) -> Path | None:
    """The extension module that would be imported for `module` ahead of its .py, if any."""
    base = source_path(module).with_suffix("")
    found = (base.with_name(base.name + s) for s in importlib.machinery.EXTENSION_SUFFIXES)
    return next((p for p in found if p.exists()), None)


def read_manifest() -> dict:
    """What the compiled build recorded ({} when there was none): sources' hashes, or an error."""
    try:
        return json.loads(MANIFEST.read_text())
    except (OSError, ValueError):
        return {}


def stale_modules(manifest: dict) -> list[str]:
    """Modules whose compiled file does not match the source beside it, or is missing from a
    build that compiled it (the group is compiled together or not at all)."""
    recorded = manifest.get("sources", {})
    return [m for m in MODULES if not fresh(m, recorded.get(m))]


def fresh(module: str, recorded: str | None) -> bool:
    if compiled_file(module) is None:
        return recorded is None
    return recorded == source_hash(source_path(module))


class PureFinder:
    """Finds the group's modules as their .py files, ahead of the compiled ones."""

    def find_spec(self, name: str, path: object = None, target: object = None):
        if name not in MODULES:
            return None
        return importlib.util.spec_from_file_location(name, source_path(name))


def use_pure(reason: str) -> None:
    global build, why_pure
    build, why_pure = "pure", reason
    if not any(isinstance(f, PureFinder) for f in sys.meta_path):
        sys.meta_path.insert(0, PureFinder())


def guard() -> None:
    """Decide the build before any engine module is imported (kvtui/sim/__init__.py calls it)."""
    global build, why_pure
    manifest = read_manifest()
    if not any(compiled_file(m) for m in MODULES):  # pure, and stays so should a build appear later
        return use_pure(manifest.get("error") or why_pure)
    if os.environ.get("KVTUI_PURE") == "1":
        return use_pure("KVTUI_PURE=1")
    stale = stale_modules(manifest)
    if stale:
        first = source_path(stale[0]).relative_to(PACKAGE_ROOT.parent)
        use_pure(f"{first} changed since it was compiled")
        print(f"kvtui: {why_pure} ({len(stale)} stale): running the engine in pure Python;"
              " `KVTUI_COMPILE=1 pip install -e .` recompiles it", file=sys.stderr)
        return
    build, why_pure = "compiled", ""


def describe() -> str:
    """One line for `kvtui --version` and `kvtui run`: which engine build this process runs."""
    return "engine: compiled (mypyc)" if build == "compiled" else f"engine: pure Python ({why_pure})"
