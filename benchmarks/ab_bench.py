"""This checkout against an earlier commit, run alternately on the same cases (before/after).

Run:  python benchmarks/ab_bench.py BASE_REV [--rounds 2] [--requests 10000] [--skip-mooncake]

On a shared machine the wall time of one run moves by 20-40 % with the neighbours' load, more
than most single changes gain; two runs minutes apart cannot tell a change from the noise.
This script exports BASE_REV (`git archive`) to a temporary directory, then runs each case
with the old and the new engine alternately, `--rounds` times, each in a fresh interpreter,
and prints the CPU seconds of each run and the ratio new / old of the medians. Cases: the
standard workload on 4 nodes, the same at 64 nodes (16x the rate), and Mooncake's full
conversation trace on 10 nodes when its data is present. Peak RSS (VmHWM) is shown per run.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

CHILD = r"""
import json, sys, time, dataclasses
sys.path.insert(0, sys.argv[1])
from kvtui.scenario import load_scenario
from kvtui.sim.engine import Simulation
path, nodes, requests = sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
s = load_scenario(path, [f"workload.requests={requests}"] if requests else [])
if nodes:
    base = s.cluster.nodes[0]
    specs = tuple(dataclasses.replace(base, name=f"node-{i:02d}") for i in range(nodes))
    factor = nodes / len(s.cluster.nodes)
    w = s.workload
    s = dataclasses.replace(s, cluster=dataclasses.replace(s.cluster, nodes=specs),
        workload=dataclasses.replace(w, arrival=dataclasses.replace(w.arrival, rate=w.arrival.rate * factor)))
t = time.process_time()
sim = Simulation(s)
sim.run()
cpu = time.process_time() - t
hwm = 0.0
for line in open("/proc/self/status"):
    if line.startswith("VmHWM:"):
        hwm = float(line.split()[1]) / 1024
print(json.dumps({"cpu": cpu, "requests": sim.metrics.arrived, "completed": sim.metrics.completed,
                  "hit": sim.metrics.token_hit_rate, "rss_mb": hwm}))
"""


def run(tree: Path, path: Path, nodes: int, requests: int) -> dict:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    out = subprocess.run(
        [sys.executable, "-c", CHILD, str(tree), str(path), str(nodes), str(requests)],
        capture_output=True, text=True, env=env, check=False,
    )
    if out.returncode != 0:
        raise SystemExit(f"run failed in {tree}:\n{out.stderr}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("base", help="the git revision to compare with (e.g. a commit before a change)")
    p.add_argument("--rounds", type=int, default=2)
    p.add_argument("--requests", type=int, default=10000)
    p.add_argument("--skip-mooncake", action="store_true")
    a = p.parse_args()

    standard = ROOT / "benchmarks" / "standard.yaml"
    mooncake = ROOT / "benchmarks" / "mooncake-conversation-10.yaml"
    cases = [("standard, 4 nodes", standard, 0, a.requests), ("standard, 64 nodes", standard, 64, a.requests)]
    if not a.skip_mooncake:
        trace = ROOT.parent / "shared" / "data" / "traces" / "mooncake" / "conversation_trace.jsonl"
        if trace.exists():
            cases.append(("Mooncake conversation, 10 nodes", mooncake, 0, 0))
        else:
            print(f"Mooncake case skipped: {trace} is missing")

    with tempfile.TemporaryDirectory() as tmp:
        old = Path(tmp)
        archive = subprocess.run(["git", "-C", str(ROOT), "archive", a.base], capture_output=True, check=True).stdout
        subprocess.run(["tar", "-x", "-C", str(old)], input=archive, check=True)
        print(f"old: {a.base} (exported to a temporary directory)   new: {ROOT} as it is now")
        for label, path, nodes, requests in cases:
            runs: dict[str, list[dict]] = {"old": [], "new": []}
            for _ in range(a.rounds):
                runs["old"].append(run(old, path, nodes, requests))
                runs["new"].append(run(ROOT, path, nodes, requests))
            o = statistics.median(r["cpu"] for r in runs["old"])
            n = statistics.median(r["cpu"] for r in runs["new"])
            req = runs["new"][0]["requests"]
            print(f"\n== {label} ({req:,} requests)")
            for side in ("old", "new"):
                cpus = "  ".join(f"{r['cpu']:6.2f}" for r in runs[side])
                r0 = runs[side][0]
                print(f"  {side}  CPU s {cpus}   {statistics.median(r['cpu'] for r in runs[side]) / req * 1e6:7.1f} us/request"
                      f"   peak RSS {max(r['rss_mb'] for r in runs[side]):5.0f} MB   completed {r0['completed']:,}"
                      f"   token hit rate {r0['hit']:.4f}")
            print(f"  new / old: {n / o:.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
