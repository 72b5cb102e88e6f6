"""DistServe's own simulator on the arrivals and lengths disagg_study.py's chatbot draws.

Run:  python benchmarks/distserve_sim_check.py --distserve PATH [--python PY]

PATH is a checkout of LLMServe/DistServe (tried at commit 82831f1604cc6b10bebd360f6c437a07790dde9f)
and PY a Python with simpy, numpy, pandas and tqdm; nothing of DistServe is copied here. Its
simulator (simdistserve/benchmarks/simulate_dist.py, with its A100-80GB profiles of OPT-13B)
replays a workload file `[{start_time (s), prompt_len, output_len}]`; this writes one per rate
from kvtui's seeded chatbot workload (benchmarks/disagg_study.py's first case) and prints the
share of requests within both SLOs (TTFT 250 ms, TPOT 100 ms) for DistServe's vLLM baseline and
some of its disaggregated placements. The question it answers: on kvtui's single-turn lengths,
does DistServe's own model of both systems put disaggregation ahead? (kvtui's does not.)
"""

from __future__ import annotations

import argparse
import csv
import json
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import disagg_study as study  # noqa: E402

from kvtui.events import RequestCompleted  # noqa: E402
from kvtui.scenario import load_scenario  # noqa: E402
from kvtui.sim.engine import Simulation  # noqa: E402

# (backend, tp_prefill, tp_decode, GPUs): its vLLM baseline and disaggregated placements
CONFIGS = (("vllm", 1, 0, 1), ("vllm", 2, 0, 2), ("distserve", 1, 1, 2), ("distserve", 2, 1, 3), ("distserve", 1, 2, 3))
PER_GPU_RATES = (1, 2, 4, 6, 8, 12, 16)


def workload(rate: float, out: Path) -> int:
    """Write kvtui's chatbot arrivals at `rate` req/s in simdistserve's format; their count."""
    placement = study.Placement((4, 1))
    sets = [*study.WORKLOADS[0][1], f"workload.arrival.rate={rate}", f"cluster.nodes=[{placement.nodes()}]"]
    sim = Simulation(load_scenario(study.ROOT / "scenarios" / "disaggregation.yaml", sets), policy=placement.policy)
    done: list[RequestCompleted] = []
    sim.subscribe(done.append, (RequestCompleted,))
    sim.run()
    rows = sorted(({"start_time": e.t - e.e2e, "prompt_len": e.prompt_tokens, "output_len": e.output_tokens}
                   for e in done), key=lambda r: r["start_time"])
    out.write_text(json.dumps(rows))
    return len(rows)


def attained(python: str, checkout: Path, config: tuple, per_gpu_rate: float, tmp: Path) -> float:
    """simdistserve's share (%) of requests within both SLOs at SLO scale 1."""
    backend, tp_p, tp_d, gpus = config
    n = workload(per_gpu_rate * gpus, tmp / "workload.json")
    args = [python, "-m", "simdistserve.benchmarks.simulate_dist", "--backend", backend, "--model", "facebook/opt-13b",
            "--workload", str(tmp / "workload.json"), "--N", str(n), "--tp-prefill", str(tp_p), "--pp-prefill", "1",
            "--tp-decode", str(tp_d), "--pp-decode", "1" if tp_d else "0", "--prefill-target", "250",
            "--decode-target", "100", "--output", str(tmp / "out.csv")]
    subprocess.run(args, cwd=checkout, check=True, capture_output=True)
    with open(tmp / "out.csv") as f:
        return next(float(r["attainment"]) for r in csv.DictReader(f) if r["pd"] == "both")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--distserve", required=True, type=Path, help="a checkout of LLMServe/DistServe")
    p.add_argument("--python", default=sys.executable, help="a Python with simpy, numpy, pandas, tqdm")
    args = p.parse_args(argv)
    print("| placement | GPUs | " + " | ".join(f"{r:g}" for r in PER_GPU_RATES) + " |")
    print("|---|---|" + "---|" * len(PER_GPU_RATES))
    with tempfile.TemporaryDirectory() as d:
        for config in CONFIGS:
            cells = [f"{attained(args.python, args.distserve, config, r, Path(d)):.0f} %" for r in PER_GPU_RATES]
            print(f"| {config[0]} TP {config[1]}" + (f" + TP {config[2]}" if config[2] else "") + f" | {config[3]} | "
                  + " | ".join(cells) + " |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
