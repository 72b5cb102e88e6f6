"""A wheel carries what `kvtui demo` needs: the data-free scenarios, the themes and the LICENSE.

The wheel is built from this checkout (`pip wheel`), installed without dependencies into a fresh
venv, and run from an empty directory; the dependencies come from this venv's site-packages on
PYTHONPATH (a directory on PYTHONPATH has its .pth files ignored, so the checkout's editable
install cannot stand in for the wheel).
"""

from __future__ import annotations

import os
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(out), str(ROOT)],
                   check=True, capture_output=True)
    return next(out.glob("kvtui-*.whl"))


def test_wheel_ships_data_free_scenarios_themes_and_license(wheel):
    names = set(zipfile.ZipFile(wheel).namelist())
    assert "kvtui/scenarios/pressure.yaml" in names
    assert "kvtui/scenarios/crash-recovery.yaml" in names
    shipped = {n for n in names if n.startswith("kvtui/scenarios/")}
    assert not any("agentic" in n or "mooncake" in n or "azure" in n for n in shipped)
    assert any(n.endswith("licenses/LICENSE") for n in names)
    themes = {n for n in names if n.startswith("kvtui/themes/")}
    assert themes == {f"kvtui/themes/{p.name}" for p in (ROOT / "themes").glob("*.toml")}


def test_demo_runs_from_an_empty_directory(wheel, tmp_path):
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target",
                    str(_site(venv)), str(wheel)], check=True, capture_output=True)
    empty = tmp_path / "empty"
    empty.mkdir()
    env = {**os.environ, "PYTHONPATH": sysconfig.get_paths()["purelib"]}
    kvtui = [str(venv / "bin" / "python"), "-m", "kvtui"]
    path = subprocess.run([*kvtui, "demo", "--path"], cwd=empty, env=env, capture_output=True, text=True, check=True)
    assert path.stdout.strip().startswith(str(_site(venv)))
    run = subprocess.run([*kvtui, "run", path.stdout.strip(), "--set", "workload.duration_s=5"],
                         cwd=empty, env=env, capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    assert "pressure" in run.stdout
    themes = subprocess.run([str(venv / "bin" / "python"), "-c", "from kvtui.tui.themes import SHIPPED, load_themes; "
                             "print(SHIPPED, *sorted(t.name for t in load_themes(SHIPPED)))"],
                            cwd=empty, env=env, capture_output=True, text=True, check=True).stdout.split()
    assert themes[0].startswith(str(_site(venv))) and {"dark", "light", "high-contrast"} <= set(themes[1:])
    assert list(empty.iterdir()) == []


def _site(venv: Path) -> Path:
    return venv / "lib" / f"python{sys.version_info.major}.{sys.version_info.minor}" / "site-packages"


def test_demo_lists_what_the_wheel_ships(wheel):
    """`kvtui demo --list` in a checkout names exactly the scenarios a wheel carries (issue 35:
    it named 6 more, which read trace files from outside the checkout)."""
    import tomllib

    from kvtui.cli.demo import NOT_SHIPPED, packaged

    excluded = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["exclude-package-data"]["kvtui"]
    assert sorted(excluded) == sorted(f"scenarios/{n}" for n in NOT_SHIPPED)
    names = zipfile.ZipFile(wheel).namelist()
    in_wheel = {Path(n).stem for n in names if n.startswith("kvtui/scenarios/") and n.endswith(".yaml")}
    assert set(packaged()) == in_wheel
