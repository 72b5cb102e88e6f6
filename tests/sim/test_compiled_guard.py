"""The stale guard (kvtui/sim/compiled.py, issue 23 condition 3): a compiled module whose source
changed after the build is never imported; the whole group falls back to its .py files.

Each case copies kvtui/ to a temporary directory, edits the copy, and imports from it in a fresh
interpreter. The first cases need no compiler: a stand-in compiled file (not loadable) with a
recorded hash shows that the guard lets a fresh build through (the import then fails on the
stand-in) and that it stops a stale one. The last runs only in a compiled build, on the real files.
"""

from __future__ import annotations

import hashlib
import importlib.machinery
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from kvtui.sim import compiled

ROOT = Path(__file__).resolve().parents[2]
SUFFIX = importlib.machinery.EXTENSION_SUFFIXES[0]
IMPORT = "import kvtui.sim.blocks as b, kvtui.sim.compiled as c; print(b.__file__, c.build)"


def copy_tree(tmp: Path, with_compiled: bool) -> Path:
    skip = ["__pycache__"] + ([] if with_compiled else ["*.so", "compiled.json"])
    shutil.copytree(ROOT / "kvtui", tmp / "kvtui", ignore=shutil.ignore_patterns(*skip))
    return tmp


def stand_in_build(tree: Path) -> None:
    """A compiled blocks module that cannot load, recorded with its source's hash."""
    source = tree / "kvtui/sim/blocks.py"
    (tree / f"kvtui/sim/blocks{SUFFIX}").write_bytes(b"not a shared object")
    sources = {"kvtui.sim.blocks": hashlib.sha256(source.read_bytes()).hexdigest()}
    (tree / "kvtui/sim/compiled.json").write_text(json.dumps({"sources": sources}))


def edit(tree: Path) -> None:
    with open(tree / "kvtui/sim/blocks.py", "a") as f:
        f.write("\n# an edit after the build\n")


def import_blocks(tree: Path) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("KVTUI_PURE", "PYTHONPATH")} | {"PYTHONPATH": str(tree)}
    return subprocess.run([sys.executable, "-c", IMPORT], capture_output=True, text=True, env=env, cwd=tree, check=False)


def test_a_fresh_build_is_imported(tmp_path):
    tree = copy_tree(tmp_path, with_compiled=False)
    stand_in_build(tree)
    done = import_blocks(tree)
    assert done.returncode != 0 and "ImportError" in done.stderr  # it tried the compiled file


def test_an_edited_source_is_imported_instead_of_its_stale_build(tmp_path):
    tree = copy_tree(tmp_path, with_compiled=False)
    stand_in_build(tree)
    edit(tree)
    done = import_blocks(tree)
    assert done.returncode == 0, done.stderr
    path, build = done.stdout.split()
    assert path == str(tree / "kvtui/sim/blocks.py") and build == "pure"
    lines = done.stderr.splitlines()
    assert len(lines) == 1 and "kvtui/sim/blocks.py changed since it was compiled" in lines[0]


def test_a_compiled_file_with_no_record_is_not_imported(tmp_path):
    tree = copy_tree(tmp_path, with_compiled=False)
    stand_in_build(tree)
    (tree / "kvtui/sim/compiled.json").unlink()
    done = import_blocks(tree)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split()[0].endswith("blocks.py") and "running the engine in pure Python" in done.stderr


@pytest.mark.skipif(compiled.build != "compiled", reason="not a compiled build")
def test_the_real_build_falls_back_whole_after_an_edit(tmp_path):
    tree = copy_tree(tmp_path, with_compiled=True)
    fresh = import_blocks(tree)
    assert fresh.stdout.split() == [str(tree / f"kvtui/sim/blocks{SUFFIX}"), "compiled"], fresh.stderr
    edit(tree)
    code = "import kvtui.sim.engine, sys; print(sorted(m for m in sys.modules if m.startswith('kvtui') and (getattr(sys.modules[m], '__file__', None) or '').endswith('.so')))"
    env = {k: v for k, v in os.environ.items() if k != "KVTUI_PURE"} | {"PYTHONPATH": str(tree)}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=tree, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"  # not one module of the group is compiled any more
