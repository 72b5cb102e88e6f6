"""The compiled engine against the same code in pure Python (issue 23), CPU time.

Run:  KVTUI_COMPILE=1 pip install -e .   (once: builds the checkout compiled, setup.py)
      python benchmarks/compiled_bench.py [--rounds 3] [--requests 4000] [--mooncake]

The engine modules kvtui/sim/compiled.py names are compiled by mypyc when the checkout is
installed with KVTUI_COMPILE=1. This script runs each case alternately on that build and on
the pure modules (KVTUI_PURE=1, which the stale guard honours), `--rounds` times, each run in a
fresh interpreter. Every run prints its CPU seconds and a digest of its metrics and event
count, and the script stops if a compiled run's digest differs from the pure one's or a run
did not use the build it was asked for.

Cases: the standard workload on 4 nodes and on 64 (16x the rate), and with `--mooncake` the
full Mooncake conversation trace on 10 nodes. Printed: CPU seconds per run and the ratio
compiled / pure of the medians; `--write-doc FILE` also puts that table, with the date, the
load and the command, between `<!-- measured: compiled_bench -->` and `<!-- /measured -->`.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

from measured import command_line, machine, replace_block

ROOT = Path(__file__).resolve().parent.parent
STANDARD = ROOT / "benchmarks" / "standard.yaml"
MOONCAKE = ROOT / "benchmarks" / "mooncake-conversation-10.yaml"

CHILD = r"""
import dataclasses, hashlib, json, sys, time
from kvtui.scenario import load_scenario
from kvtui.sim import compiled
from kvtui.sim.engine import Simulation
path, nodes, requests = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
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
print(json.dumps({"cpu": cpu, "digest": hashlib.sha256(figures.encode()).hexdigest()[:16], "build": compiled.build}))
"""


def run(side: str, path: Path, nodes: int, requests: int) -> dict:
    """One run in a fresh interpreter, on the compiled build or (KVTUI_PURE=1) the pure one."""
    env = {k: v for k, v in os.environ.items() if k != "KVTUI_PURE"} | ({"KVTUI_PURE": "1"} if side == "pure" else {})
    cmd = [sys.executable, "-c", CHILD, str(path), str(nodes), str(requests)]
    out = subprocess.run(cmd, capture_output=True, text=True, check=False, env=env, cwd=ROOT)
    if out.returncode != 0:
        raise SystemExit(f"{side} run failed:\n{out.stderr[-3000:]}")
    result = json.loads(out.stdout.strip().splitlines()[-1])
    if result["build"] != side:
        raise SystemExit(f"asked for the {side} build, ran {result['build']}: KVTUI_COMPILE=1 pip install -e . first")
    return result


def check(pure: dict, compiled: dict) -> None:
    """Both builds simulated the same thing."""
    if pure["digest"] != compiled["digest"]:
        raise SystemExit(f"figures differ: pure {pure['digest']}, compiled {compiled['digest']}")


def write_doc(path: Path, rows: list[str], argv: list[str], started: str) -> None:
    """Replace the measured block of `path` with this run's table."""
    replace_block(path, "compiled_bench", f"Measured {started} on this project's VM ({machine()}) "
                  f"by\n`{command_line('compiled_bench.py', argv)}`, medians of CPU seconds, same digests both ways:\n\n"
                  "| case | pure | compiled | compiled / pure |\n|---|---|---|---|\n" + "".join(rows))


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--requests", type=int, default=4000)
    p.add_argument("--mooncake", action="store_true", help="also the full Mooncake conversation trace on 10 nodes")
    p.add_argument("--write-doc", type=Path, help="put the table into this file's measured block")
    a = p.parse_args()
    started = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    rows: list[str] = []
    cases = [(f"standard workload, 4 nodes, {a.requests:,} requests", STANDARD, 0, a.requests),
             (f"standard workload, 64 nodes, {a.requests:,} requests", STANDARD, 64, a.requests)]
    if a.mooncake:
        cases.append(("Mooncake conversation trace, 10 nodes", MOONCAKE, 0, 0))
    for label, path, nodes, requests in cases:
        runs: dict[str, list[dict]] = {"pure": [], "compiled": []}
        for _ in range(a.rounds):
            for side in runs:
                runs[side].append(run(side, path, nodes, requests))
            check(runs["pure"][-1], runs["compiled"][-1])
        med = {side: statistics.median(r["cpu"] for r in rs) for side, rs in runs.items()}
        print(f"\n== {label}: same figures both ways (digest {runs['pure'][0]['digest']})")
        for side, rs in runs.items():
            print(f"  {side:8s} CPU s " + "  ".join(f"{r['cpu']:6.2f}" for r in rs))
        print(f"  compiled / pure: {med['compiled'] / med['pure']:.2f}")
        rows.append(f"| {label} | {med['pure']:.2f} s | {med['compiled']:.2f} s | {med['compiled'] / med['pure']:.2f} |\n")
    if a.write_doc:
        write_doc(a.write_doc, rows, sys.argv[1:], started)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
