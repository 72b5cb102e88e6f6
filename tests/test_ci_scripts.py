"""The CI scripts (.ci/): the vLLM peers share one wheel helper (.ci/lib/vllm_wheel.sh) instead
of near-copies of its download block (QA), and that helper does its job without the network
(a wheel already in the cache is used, never downloaded again)."""

from __future__ import annotations

import os
import subprocess
import sys
import zipfile
from pathlib import Path

CI = Path(__file__).resolve().parent.parent / ".ci"
SHARED_RUN = 6  # lines in a row two scripts may not share (what `duplicates` flags)


def _code_lines(path: Path) -> list[str]:
    lines = (line.strip() for line in path.read_text().splitlines())
    return [line for line in lines if line and not line.startswith("#")]


def _runs(path: Path) -> set[tuple[str, ...]]:
    lines = _code_lines(path)
    return {tuple(lines[i : i + SHARED_RUN]) for i in range(len(lines) - SHARED_RUN + 1)}


def test_no_two_ci_scripts_share_a_block():
    scripts = sorted(CI.rglob("*.sh"))
    for i, a in enumerate(scripts):
        for b in scripts[i + 1 :]:
            shared = _runs(a) & _runs(b)
            assert not shared, f"{a.name} and {b.name} share {SHARED_RUN} lines: {next(iter(shared))}"


def _peer(env: dict) -> subprocess.CompletedProcess:
    return subprocess.run(["bash", str(CI / "peers" / "vllm-0.11.sh")], env=env, capture_output=True, text=True, check=True)


def test_a_vllm_peer_takes_its_module_from_the_cached_wheel_once(tmp_path):
    wheel_dir = tmp_path / "vllm-0.11" / "wheel"
    wheel_dir.mkdir(parents=True)
    with zipfile.ZipFile(wheel_dir / "vllm-0.11.0-cp38-abi3-manylinux1_x86_64.whl", "w") as wheel:
        wheel.writestr("vllm/distributed/kv_events.py", "MARK = 1\n")
        wheel.writestr("vllm/other.py", "")
    env = {**os.environ, "KVTUI_PEERS": str(tmp_path), "PYTHON": sys.executable}
    first = _peer(env)
    src = tmp_path / "vllm-0.11" / "src"
    assert (src / "vllm/distributed/kv_events.py").read_text() == "MARK = 1\n"
    assert not (src / "vllm/other.py").exists()
    assert (tmp_path / "vllm-0.11" / ".installed").read_text().strip() == "0.11.0"
    assert "installed in" in first.stdout
    assert "already in" in _peer(env).stdout
