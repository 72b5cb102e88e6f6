"""The accuracy of `kvtui calibrate` on real runs (docs/model.md's generated table).

    python benchmarks/calibration_table.py [--runs SUBSTRING ...] [--target N]

Each inference-sim/training run transcribed in tests/calibrate/inference_sim_runs.yaml (two load
stages of inference-perf's shared-prefix workload on vLLM, H100 SXM) is rebuilt as an
inference-perf results directory, calibrated on its first stage as `kvtui calibrate` does, and
judged on its second: TTFT and TPOT medians simulated out of the box (the shipped profiles),
after the fit, and the naive baseline (the first stage's measured medians carried over). The
Llama-2-7b runs are the ones the calibrator was developed on; the others were run once, after.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from kvtui.calibrate.calibration import calibrate  # noqa: E402
from kvtui.calibrate.detect import read_report  # noqa: E402
from kvtui.calibrate.rebuild import MEASURED_REQUESTS, base_scenario  # noqa: E402
from kvtui.calibrate.render import document  # noqa: E402
from tests.calibrate.inference_sim import commit, runs, write_run  # noqa: E402

DEVELOPED_ON = "llama-2-7b-tp1"


def pct(x: float) -> str:
    return f"{100 * x:+.1f}%"


def row(name: str, run: dict, target: int, scratch: Path) -> str:
    doc = document(calibrate(read_report(str(write_run(run, scratch / name))), base_scenario(None, []), target=target))
    fit, held = doc["stages"]
    oob = doc["out_of_the_box"]["stages"][1]["metrics"]
    naive = doc["naive_baseline"]["stages"][0]["metrics"]
    e = lambda d, m: d[m]["p50"]["err"]  # noqa: E731
    cells = [f"`{name}`" + (" (dev)" if name.startswith(DEVELOPED_ON) else ""),
             f"{run['stages'][0]['rate']:g} → {run['stages'][1]['rate']:g}"]
    for m in ("ttft", "tpot"):
        cells += [pct(e(fit["metrics"], m)), pct(e(held["metrics"], m)), pct(e(oob, m)), pct(e(naive, m))]
    return "| " + " | ".join(cells) + " |"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--runs", nargs="*", default=[], help="only runs whose name contains one of these")
    p.add_argument("--target", type=int, default=MEASURED_REQUESTS, help="measured requests per simulated stage")
    args = p.parse_args(argv)
    print("| run | req/s | TTFT fit | TTFT held-out | TTFT out of the box | TTFT naive | TPOT fit | TPOT held-out "
          "| TPOT out of the box | TPOT naive |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as scratch:
        for name, run in runs().items():
            if not args.runs or any(r in name for r in args.runs):
                print(row(name, run, args.target, Path(scratch)), flush=True)
    print(f"\nMedians, simulated / real - 1. Fitted on the first stage, held out: the second. Runs: "
          f"inference-sim/training at {commit()[:12]} (figures transcribed in tests/calibrate/inference_sim_runs.yaml).")
    return 0


if __name__ == "__main__":
    sys.exit(main())
