"""The engine's hottest modules compiled by mypyc, against the same code in pure Python (issue 23).

Run:  python benchmarks/compiled_bench.py [--rounds 3] [--requests 4000] [--mooncake] [MODULE.py ...]

Issue 23 allows a compiled core on three conditions (an install that works without a compiler,
the whole suite run both ways in CI with a differential fuzz, and an editable checkout that
never runs a stale compiled module). This script ships nothing compiled: it measures what
compiling would buy, so the decision rests on figures from this checkout. It copies kvtui/ into
two temporary trees, compiles MODULES (or the files named) with mypyc in one of them (mypyc
comes with mypy, a test dependency; it needs a C compiler), and runs each case alternately in
both trees, `--rounds` times, each run in a fresh interpreter. Every run prints its CPU seconds
and a digest of its metrics and event count, and the script stops if a compiled run's digest
differs from the pure one's or a module it compiled was not the one imported.

Cases: the standard workload on 4 nodes and on 64 (16x the rate), and with `--mooncake` the
full Mooncake conversation trace on 10 nodes. Printed: CPU seconds per run and the ratio
compiled / pure of the medians.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
STANDARD = ROOT / "benchmarks" / "standard.yaml"
MOONCAKE = ROOT / "benchmarks" / "mooncake-conversation-10.yaml"

# The block pool, the KV manager, the bus and key hashing: the per-block and per-event work.
# Each must type-check cleanly (mypyc turns a wrong annotation into a TypeError at run time).
MODULES = ["kvtui/sim/blocks.py", "kvtui/sim/kv_manager.py", "kvtui/sim/bus.py", "kvtui/sim/workload/hashing.py"]

# mypyc reads a config of its own: pyproject's [tool.mypy] warns of unused sections, which
# mypyc counts as a failure.
MYPY_CONFIG = "[mypy]\npython_version = 3.11\n[mypy-simpy,simpy.*]\nignore_missing_imports = True\n"

CHILD = r"""
import dataclasses, hashlib, json, sys, time
sys.path.insert(0, sys.argv[1])
from kvtui.scenario import load_scenario
from kvtui.sim.engine import Simulation
path, nodes, requests, compiled = sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), sys.argv[5:]
s = load_scenario(path, [f"workload.requests={requests}"] if requests else [])
if nodes:
    base = s.cluster.nodes[0]
    specs = tuple(dataclasses.replace(base, name=f"node-{i:02d}") for i in range(nodes))
    w = s.workload
    rate = w.arrival.rate * nodes / len(s.cluster.nodes)
    s = dataclasses.replace(s, cluster=dataclasses.replace(s.cluster, nodes=specs),
        workload=dataclasses.replace(w, arrival=dataclasses.replace(w.arrival, rate=rate)))
t = time.process_time()
sim = Simulation(s)
sim.run()
cpu = time.process_time() - t
figures = json.dumps([dataclasses.asdict(sim.metrics), sim.bus.seq, sim.router.stats], sort_keys=True, default=str)
files = {m: sys.modules[m].__file__ for m in compiled}
print(json.dumps({"cpu": cpu, "digest": hashlib.sha256(figures.encode()).hexdigest()[:16], "files": files}))
"""


def module_name(path: str) -> str:
    return path.removesuffix(".py").replace("/", ".")


def make_trees(tmp: Path, modules: list[str]) -> tuple[Path, Path]:
    """Two copies of kvtui/: pure, and with `modules` compiled in place."""
    pure, compiled = tmp / "pure", tmp / "compiled"
    for tree in (pure, compiled):
        shutil.copytree(ROOT / "kvtui", tree / "kvtui", ignore=shutil.ignore_patterns("__pycache__", "*.so"))
    (tmp / "mypyc.ini").write_text(MYPY_CONFIG)
    cmd = [sys.executable, "-c", "from mypyc.__main__ import main; main()", "--config-file", str(tmp / "mypyc.ini"), *modules]
    out = subprocess.run(cmd, cwd=compiled, capture_output=True, text=True, check=False)
    if out.returncode != 0:
        raise SystemExit(f"mypyc failed:\n{out.stdout[-3000:]}{out.stderr[-3000:]}")
    return pure, compiled


def run(tree: Path, path: Path, nodes: int, requests: int, modules: list[str]) -> dict:
    names = [module_name(m) for m in modules]
    cmd = [sys.executable, "-c", CHILD, str(tree), str(path), str(nodes), str(requests), *names]
    out = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if out.returncode != 0:
        raise SystemExit(f"run failed in {tree}:\n{out.stderr[-3000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def check(pure: dict, compiled: dict) -> None:
    """The compiled run imported the compiled modules and simulated the same thing."""
    stale = [m for m, f in compiled["files"].items() if not f.endswith(".so")]
    if stale:
        raise SystemExit(f"not compiled when imported: {stale}")
    if pure["digest"] != compiled["digest"]:
        raise SystemExit(f"figures differ: pure {pure['digest']}, compiled {compiled['digest']}")


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("modules", nargs="*", default=MODULES, help="files to compile, relative to the checkout")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--requests", type=int, default=4000)
    p.add_argument("--mooncake", action="store_true", help="also the full Mooncake conversation trace on 10 nodes")
    a = p.parse_args()
    cases = [("standard, 4 nodes", STANDARD, 0, a.requests), ("standard, 64 nodes", STANDARD, 64, a.requests)]
    if a.mooncake:
        cases.append(("Mooncake conversation, 10 nodes", MOONCAKE, 0, 0))
    with tempfile.TemporaryDirectory() as tmp:
        pure, compiled = make_trees(Path(tmp), a.modules)
        print(f"compiled with mypyc: {', '.join(a.modules)}")
        for label, path, nodes, requests in cases:
            runs: dict[str, list[dict]] = {"pure": [], "compiled": []}
            for _ in range(a.rounds):
                runs["pure"].append(run(pure, path, nodes, requests, a.modules))
                runs["compiled"].append(run(compiled, path, nodes, requests, a.modules))
                check(runs["pure"][-1], runs["compiled"][-1])
            med = {side: statistics.median(r["cpu"] for r in rs) for side, rs in runs.items()}
            print(f"\n== {label}: same figures both ways (digest {runs['pure'][0]['digest']})")
            for side, rs in runs.items():
                cpus = "  ".join(f"{r['cpu']:6.2f}" for r in rs)
                print(f"  {side:8s} CPU s {cpus}")
            print(f"  compiled / pure: {med['compiled'] / med['pure']:.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
