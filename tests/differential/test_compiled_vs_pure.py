"""The compiled engine against the pure-Python one it was built from (issue 23, condition 2).

Each case runs tests/differential/compiled_ops.py (random operations on a 40,000-block pool, its
KV index and key hashing) and a whole simulation, once with the compiled modules and once with
KVTUI_PURE=1, each in a fresh interpreter, and asks for the same digest. Whole simulations
cover what the operations do not (node scheduling, routing, metrics, the workload).

Skipped when this checkout is not built compiled, except under KVTUI_EXPECT_COMPILED=1 (the
compiled CI pass, .ci/checks/compiled.sh), where a pure build fails instead.
Size knob: KVTUI_FUZZ_SCALE multiplies the operations per case (default 1: 3 seeds x 4,000
operations); e.g. KVTUI_FUZZ_SCALE=25 by hand for 100,000 per seed.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from kvtui.sim import compiled

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
SCALE = float(os.environ.get("KVTUI_FUZZ_SCALE", "1"))
OPS = max(100, int(4000 * SCALE))

SIMULATION = r"""
import dataclasses, hashlib, json, sys
from kvtui.scenario import load_scenario
from kvtui.sim import compiled
from kvtui.sim.engine import Simulation
sim = Simulation(load_scenario(sys.argv[1], sys.argv[2:]))
sim.run()
figures = json.dumps([dataclasses.asdict(sim.metrics), sim.bus.seq, sim.router.stats], sort_keys=True, default=str)
print(hashlib.sha256(figures.encode()).hexdigest(), compiled.build)
"""


@pytest.fixture(autouse=True, scope="module")
def compiled_build() -> None:
    if compiled.build != "compiled":
        if os.environ.get("KVTUI_EXPECT_COMPILED") == "1":
            pytest.fail(f"the compiled pass runs {compiled.describe()}")
        pytest.skip(f"not a compiled build: {compiled.describe()}")


def both_ways(args: list[str]) -> dict[str, str]:
    """The digest each build prints for the same command, keyed by the build that ran."""
    out = {}
    for pure in (False, True):
        env = {k: v for k, v in os.environ.items() if k != "KVTUI_PURE"} | ({"KVTUI_PURE": "1"} if pure else {})
        done = subprocess.run([sys.executable, *args], capture_output=True, text=True, env=env, cwd=ROOT, check=False)
        assert done.returncode == 0, done.stderr[-3000:]
        digest, build = done.stdout.split()
        out[build] = digest
    return out


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_block_pool_index_and_hashing_agree(seed: int) -> None:
    runs = both_ways([str(HERE / "compiled_ops.py"), str(seed), str(OPS)])
    assert set(runs) == {"compiled", "pure"}
    assert runs["compiled"] == runs["pure"]


@pytest.mark.parametrize(
    "scenario, overrides",
    [
        ("benchmarks/standard.yaml", [f"workload.requests={int(400 * SCALE)}"]),
        ("scenarios/pressure.yaml", []),
        ("scenarios/mooncake.yaml", []),
    ],
)
def test_whole_simulation_agrees(scenario: str, overrides: list[str]) -> None:
    runs = both_ways(["-c", SIMULATION, scenario, *overrides])
    assert set(runs) == {"compiled", "pure"}
    assert runs["compiled"] == runs["pure"]


def test_routing_snapshots_are_built_by_compiled_code() -> None:
    """The Router builds a NodeState per node per decision: under mypyc a dataclass-generated
    `__init__` stays an interpreted function (~4x the pure build's cost), so state.py writes it
    out; this fails if it is generated again."""
    from types import FunctionType

    from kvtui.sim.router.state import NodeState

    assert not isinstance(NodeState.__init__, FunctionType)
