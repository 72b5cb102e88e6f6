"""Instructions per simulated request, counted by valgrind: a cost figure the machine's noise
cannot move.

Run:  python benchmarks/ir_bench.py [BASE_REV] [--jobs 2] [--scale 1]

On this project's shared VM the wall and CPU time of one run move by 20-40 % with the
neighbours' load, so small before/after differences drown in noise (see ab_bench.py). The
number of instructions the interpreter executes does not depend on load: valgrind's cachegrind
(`--cache-sim=no`) counts them exactly, ~50x slower than a plain run. Each case runs at two
sizes and the difference is divided by the difference in requests, so interpreter start-up,
imports and building the simulation cancel out. Instructions are a proxy for time (they do not
see cache misses or the interpreter's memory allocator), good for ratios of like with like.

Cases: the standard workload (benchmarks/standard.yaml) on 4 nodes and on 64 nodes at 16x the
rate (issue 12's cluster-scale target, 64-node / 4-node cost <= 1.3x), and Mooncake's
conversation trace on 10 nodes (its first requests; needs ../shared/data). With BASE_REV the
same cases run on that commit (exported with `git archive`) and the ratio new / old is printed.
Needs valgrind on PATH (Debian: apt-get install valgrind).
"""

from __future__ import annotations

import argparse
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

CHILD = r"""
import dataclasses, sys
sys.path.insert(0, sys.argv[1])
from kvtui.scenario import load_scenario
from kvtui.sim.engine import Simulation
path, nodes, sets = sys.argv[2], int(sys.argv[3]), sys.argv[4:]
s = load_scenario(path, sets)
if nodes:
    base = s.cluster.nodes[0]
    specs = tuple(dataclasses.replace(base, name=f"node-{i:02d}") for i in range(nodes))
    w = s.workload
    factor = nodes / len(s.cluster.nodes)
    s = dataclasses.replace(s, cluster=dataclasses.replace(s.cluster, nodes=specs),
        workload=dataclasses.replace(w, arrival=dataclasses.replace(w.arrival, rate=w.arrival.rate * factor)))
sim = Simulation(s)
sim.run()
print(sim.metrics.arrived)
"""

# name, scenario, nodes (0: as written), the --set for a size, small and large sizes
CASES = [
    ("standard, 4 nodes", "benchmarks/standard.yaml", 0, "workload.requests={}", 200, 1200),
    ("standard, 64 nodes", "benchmarks/standard.yaml", 64, "workload.requests={}", 200, 1200),
    ("Mooncake conversation, 10 nodes", "benchmarks/mooncake-conversation-10.yaml", 0, "workload.trace.limit={}", 100, 400),
]


def instructions(tree: Path, scenario: str, nodes: int, setting: str) -> tuple[int, int]:
    """(instructions executed, requests arrived) for one run under cachegrind."""
    cmd = [
        "valgrind", "--tool=cachegrind", "--cache-sim=no", "--cachegrind-out-file=/dev/null",
        sys.executable, "-c", CHILD, str(tree), str(tree / scenario), str(nodes), setting,
    ]
    out = subprocess.run(cmd, capture_output=True, text=True, check=False)
    m = re.search(r"I\s+refs:\s+([\d,]+)", out.stderr)
    if out.returncode != 0 or m is None:
        raise SystemExit(f"run failed: {' '.join(cmd[6:])}\n{out.stderr[-2000:]}")
    return int(m.group(1).replace(",", "")), int(out.stdout.strip().splitlines()[-1])


def per_request(tree: Path, case: tuple, pool: ThreadPoolExecutor, scale: int) -> float:
    """Instructions per request between the case's two sizes (times `scale`)."""
    _, scenario, nodes, setting, small, large = case
    small, large = small * scale, large * scale
    a, b = pool.map(lambda n: instructions(tree, scenario, nodes, setting.format(n)), (small, large))
    return (b[0] - a[0]) / max(b[1] - a[1], 1)


def export(rev: str, into: Path) -> Path:
    data = subprocess.run(["git", "archive", rev], cwd=ROOT, capture_output=True, check=True).stdout
    tmp = into / "base.tar"
    tmp.write_bytes(data)
    with tarfile.open(tmp) as t:
        t.extractall(into / "tree", filter="data")
    # the scenarios find their trace data relative to the checkout: ../shared beside it
    shared = ROOT.parent / "shared"
    if shared.exists():
        (into / "shared").symlink_to(shared)
    return into / "tree"


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("base", nargs="?", help="a git revision to compare with")
    p.add_argument("--jobs", type=int, default=2, help="valgrind runs at once (counts do not depend on it)")
    p.add_argument("--scale", type=int, default=1, help="multiply the sizes (the 64-node case reaches its steady load from ~5)")
    a = p.parse_args()
    if shutil.which("valgrind") is None:
        print("valgrind is not on PATH: nothing to count (apt-get install valgrind)")
        return 2
    cases = [c for c in CASES if "Mooncake" not in c[0] or (ROOT.parent / "shared" / "data").exists()]
    with tempfile.TemporaryDirectory() as d, ThreadPoolExecutor(a.jobs) as pool:
        old_tree = export(a.base, Path(d)) if a.base else None
        new: dict[str, float] = {}
        for case in cases:
            name = case[0]
            new[name] = per_request(ROOT, case, pool, a.scale)
            line = f"{name:34s} new {new[name] / 1e6:7.3f} M instructions/request"
            if old_tree is not None and not (old_tree / case[1]).exists():
                line += f"   old: {case[1]} does not exist at {a.base}"
            elif old_tree is not None:
                old = per_request(old_tree, case, pool, a.scale)
                line += f"   old {old / 1e6:7.3f}   new / old {new[name] / old:5.2f}"
            print(line, flush=True)
        big, small = new.get("standard, 64 nodes"), new.get("standard, 4 nodes")
        if big and small:
            print(f"\n64-node / 4-node instructions per request: {big / small:.2f} (issue 12's target: <= 1.3 in cost)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
