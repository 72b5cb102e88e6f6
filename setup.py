"""Opt-in compiled engine (issue 23): `KVTUI_COMPILE=1 pip install [-e] .` compiles the modules
kvtui/sim/compiled.py names with mypyc; without it, or when compiling fails, kvtui installs as
pure Python. Everything else about the package is in pyproject.toml.

A compiled build writes kvtui/sim/compiled.json (each source's SHA-256, read by the import-time
stale guard); a failed one writes the error there instead. A pure editable build removes the
compiled files an earlier one left in the checkout, so `pip install -e .` means pure.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import sys
from pathlib import Path

from setuptools import setup
from setuptools.command.build_ext import build_ext

ROOT = Path(__file__).resolve().parent
MANIFEST = Path("kvtui/sim/compiled.json")
MYPY_CONFIG = ROOT / "_build" / "mypyc.ini"
METADATA_ONLY = {"egg_info", "dist_info", "sdist", "--egg-base", "--output-dir"}


def compiled_group():
    """kvtui/sim/compiled.py, read as a file: importing kvtui here would need its dependencies."""
    spec = importlib.util.spec_from_file_location("kvtui_compiled_group", ROOT / "kvtui/sim/compiled.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


GROUP = compiled_group()


def say(message: str) -> None:
    print(f"kvtui: {message}", file=sys.stderr)


def write_manifest(root: Path, record: dict) -> None:
    path = root / MANIFEST
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(record, indent=1, sort_keys=True) + "\n")


def remove_in_place_build() -> None:
    """A pure build of the checkout: the compiled files an editable compiled build left go."""
    files = [GROUP.compiled_file(m) for m in GROUP.MODULES] + list((ROOT / "kvtui/sim").glob("compiled_core__mypyc*"))
    for path in filter(None, files):
        path.unlink()
    (ROOT / MANIFEST).unlink(missing_ok=True)


class BuildCompiled(build_ext):
    """build_ext that records the sources it compiled, or falls back to none on any failure."""

    def run(self) -> None:
        try:
            super().run()
        except Exception as e:  # noqa: BLE001 - any compiler failure means a pure install
            self.fall_back(f"{type(e).__name__}: {e}".splitlines()[0][:200])
            return
        record = {"sources": {m: hashlib.sha256(GROUP.source_path(m).read_bytes()).hexdigest() for m in GROUP.MODULES}}
        for root in [Path(self.build_lib)] + ([ROOT] if self.inplace else []):
            write_manifest(root, record)

    def fall_back(self, error: str) -> None:
        say(f"compiling the engine failed ({error}); installing pure Python")
        for path in self.get_outputs():
            Path(path).unlink(missing_ok=True)
        self.extensions = []
        record = {"error": f"the compiled build failed: {error}"}
        for root in [Path(self.build_lib)] + ([ROOT] if self.inplace else []):
            write_manifest(root, record)


def extensions() -> list:
    """mypyc's extension modules for the group, or none (pure) when not asked or it fails."""
    if os.environ.get("KVTUI_COMPILE") != "1":
        if "editable_wheel" in sys.argv:  # not a wheel built from the checkout (tests build one)
            remove_in_place_build()
        return []
    if not set(sys.argv[1:]) - METADATA_ONLY:
        return []  # pip asking what the build needs: mypyc is not there yet
    files = [str(GROUP.source_path(m).relative_to(ROOT)) for m in GROUP.MODULES]
    try:
        from mypyc.build import mypycify

        return mypycify(["--config-file", str(MYPY_CONFIG), *files], group_name=GROUP.GROUP)
    except BaseException as e:  # noqa: BLE001 - mypyc exits on a type error; the install goes on
        say(f"mypyc could not compile the engine ({type(e).__name__}: {e}); installing pure Python")
        if "editable_wheel" in sys.argv:  # an earlier compiled build of the checkout would be stale
            remove_in_place_build()
        return []


setup(ext_modules=extensions(), cmdclass={"build_ext": BuildCompiled})
