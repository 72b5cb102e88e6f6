"""Splitwise's own simulator on the slices benchmarks/splitwise_study.py replays in kvtui.

Run:  python benchmarks/splitwise_sim_check.py --splitwise PATH [--python PY] [--machines N] [--requests N]

PATH is a checkout of Mutinifni/splitwise-sim (tried at commit
8f99e7dc9b407f4ce2488d03dd44c0b8b946dab0) and PY a Python with hydra-core, pandas, scipy,
networkx and scikit-learn; nothing of splitwise-sim is copied here, it runs as it is. For each
trace and rate this writes splitwise_study.py's slice (the same lengths and Poisson arrivals) as
splitwise-sim's request CSV, runs its run.py with the settings the authors' scripts use for
Baseline-H100 and Splitwise-HH (scripts/run_throughput.sh: token_jsq on `start_state=baseline`,
mixed_pool on `start_state=splitwise`, `performance_model=db`) on Llama2-70B, normalises each
request by splitwise-sim's own DGX-A100 estimate (notebooks/perf_model.py `add_baseline_perf`,
loaded from the checkout) and searches each system's highest rate within the nine SLOs exactly as
splitwise_study.py does. Beside each splitwise-sim figure it prints kvtui's for the same system
scored against splitwise-sim's DGX-A100 yardstick, which separates the two simulators' serving
from their ideas of a request alone. About 9 CPU minutes at the defaults (splitwise-sim's runs;
a run starts a Python and Hydra). Its config.yaml launches through Ray; the run here uses a copy of that
file without the launcher lines (the only change), so one process runs one simulation.
"""

from __future__ import annotations

import argparse
import csv
import json
import re
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import splitwise_study as study  # noqa: E402


START_S = 1.0  # the first arrival: its start state's instances are set up at time 0 (traces/test_trace.csv starts at 1)
MODEL = ("llama2-70b", "llama2-70b-fp16")  # configs/model_repo/architectures, sizes
ALONE = """
import json, sys
sys.path.insert(0, "notebooks")
from perf_model import PerfModel
m = PerfModel("data/perf_model.csv", init=True)
print(json.dumps({p: [m.get_prompt_time("llama2-70b", "a100-80gb", 8, p), m.get_token_time("llama2-70b", "a100-80gb", 8, p)]
                  for p in json.loads(sys.argv[1])}))
"""


class Splitwise:
    """One checkout of splitwise-sim and the Python that runs it."""

    def __init__(self, checkout: Path, python: str, work: Path) -> None:
        self.checkout, self.python, self.work = checkout, python, work
        self.known: dict[int, tuple[float, float]] = {}
        config = (checkout / "configs" / "config.yaml").read_text()
        config = config.replace("  - override hydra/launcher: ray\n", "")
        (work / "config.yaml").write_text(re.sub(r"  launcher:\n(    .*\n)+", "", config))

    def alone(self, prompts: list[int]) -> dict[int, tuple[float, float]]:
        """splitwise-sim's (TTFT, TBT) of each prompt size alone on a DGX-A100 (asked once each)."""
        new = [p for p in prompts if p not in self.known]
        if new:
            out = subprocess.run([self.python, "-c", ALONE, json.dumps(new)], cwd=self.checkout,
                                 check=True, capture_output=True, text=True).stdout
            self.known.update({int(p): (t, b) for p, (t, b) in json.loads(out).items()})
        return self.known

    def run(self, trace_csv: Path, cluster: study.Cluster) -> list[dict[str, str]]:
        """The per-request rows of one simulation (detailed/0.csv)."""
        out = self.work / "out"
        args = [self.python, "run.py", "--config-path", str(self.work), "--config-name", "config",
                "--config-dir", str(self.checkout / "configs"), f"hydra.run.dir={out}",
                f"trace.path={trace_csv}", f"applications.0.model_architecture={MODEL[0]}",
                f"applications.0.model_size={MODEL[1]}", "cluster=half_half", "cluster.servers.0.count=0",
                f"cluster.servers.1.count={cluster.machines}", "performance_model=db", "seed=0", *system(cluster)]
        done = subprocess.run(args, cwd=self.checkout, capture_output=True, text=True)
        if done.returncode:
            raise SystemExit(f"splitwise-sim failed: {' '.join(args)}\n{done.stderr[-2000:]}")
        if (out / "oom.csv").exists():
            return []
        with open(out / "detailed" / "0.csv") as f:
            return list(csv.DictReader(f))


def system(cluster: study.Cluster) -> list[str]:
    """Baseline-H100 or Splitwise-HH's overrides (scripts/run_throughput.sh)."""
    if not cluster.prompt:
        return ["applications.0.scheduler=token_jsq", "start_state=baseline"]
    return ["applications.0.scheduler=mixed_pool", "start_state=splitwise",
            f"start_state.prompt.num_instances={cluster.prompt}",
            f"start_state.token.num_instances={cluster.machines - cluster.prompt}"]


def write_slice(trace: str, requests: int, rate: float, out: Path) -> int:
    """splitwise_study.py's slice at `rate` req/s as splitwise-sim's request CSV; its length."""
    requests_ = study.poisson_slice(trace, requests)
    with out.open("w") as f:
        f.write("request_id,request_type,application_id,arrival_timestamp,batch_size,prompt_size,token_size\n")
        for i, (t, prompt, output) in enumerate(requests_):
            f.write(f"{i},2,0,{START_S + t / rate:.9f},1,{prompt},{output}\n")
    return len(requests_)


def misses(sim: Splitwise, trace: str, requests: int, cluster: study.Cluster, rate: float) -> list[str]:
    """The SLOs splitwise-sim's run misses ("unfinished" when requests are missing or memory ran out)."""
    slice_csv = sim.work / "slice.csv"
    n = write_slice(trace, requests, rate, slice_csv)
    rows = sim.run(slice_csv, cluster)
    if len(rows) != n:
        return ["unfinished"]
    cols = np.array([[float(r[k]) for k in ("prompt_sizes", "token_sizes", "ttft_times", "response_times")]
                     for r in rows]).T
    alone = sim.alone(sorted({int(p) for p in cols[0]}))
    base = np.array([alone[int(p)] for p in cols[0]])
    return study.missed(study.slowdowns(*cols, base[:, 0], base[:, 1]))


def kvtui_misses(sim: Splitwise, trace: str, requests: int, cluster: study.Cluster, regime: str, rate: float) -> list[str]:
    """The SLOs kvtui's run misses when measured against splitwise-sim's DGX-A100 yardstick."""
    done = study.run(trace, requests, cluster, regime, rate)
    if done is None:
        return ["unfinished"]
    cols = np.array([(e.prompt_tokens, e.output_tokens, e.ttft, e.e2e) for e in done]).T
    alone = sim.alone(sorted({int(p) for p in cols[0]}))
    base = np.array([alone[int(p)] for p in cols[0]])
    return study.missed(study.slowdowns(*cols, base[:, 0], base[:, 1]))


def table(clusters: list[study.Cluster], columns: dict[str, Callable[[study.Cluster, float], list[str]]]) -> None:
    """Each system's highest rate within the SLOs, one column a simulator, and what it misses one step above."""
    print("| system | " + " | ".join(f"{c} | one step above, misses" for c in columns) + " |")
    print("|---|" + "---|---|" * len(columns))
    for c in clusters:
        cells = []
        for misses_at in columns.values():
            found = study.search(lambda rate: not misses_at(c, rate), c.machines)
            cells += [f"{found:g}", ", ".join(misses_at(c, found + study.STEP * c.machines)) or "nothing"]
        print(f"| {c.label()} | " + " | ".join(cells) + " |", flush=True)
    print()


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--splitwise", required=True, type=Path, help="a checkout of Mutinifni/splitwise-sim")
    p.add_argument("--python", default=sys.executable, help="a Python with hydra-core, pandas, scipy, networkx, scikit-learn")
    p.add_argument("--machines", type=int, default=study.MACHINES)
    p.add_argument("--requests", type=int, default=study.REQUESTS)
    args = p.parse_args(argv)
    clusters = [study.Cluster(args.machines)] + [study.Cluster(args.machines, k) for k in range(1, args.machines)]
    with tempfile.TemporaryDirectory() as d:
        sim = Splitwise(args.splitwise.resolve(), args.python, Path(d))
        for trace in study.TRACES:
            print(f"**The {trace} trace**: highest rate (req/s) within all nine SLOs\n")
            columns = {"splitwise-sim": lambda c, rate: misses(sim, trace, args.requests, c, rate)}
            for regime in study.REGIMES:
                columns[f"kvtui, {regime}, splitwise-sim's yardstick"] = (
                    lambda c, rate, regime=regime: kvtui_misses(sim, trace, args.requests, c, regime, rate))
            table(clusters, columns)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
