"""`kvtui sweep` backends side by side, in the same run: speed-up of a 2-worker pool over one
worker, and what Ray costs per run over the local pool.

Run:  python benchmarks/sweep_bench.py [--quick] [--repeat N]

The grid is the README's: pressure.yaml with a flat rate (schedule dropped), policies
round_robin, load_prefix, predicted_latency, rates 1-4 req/s, 5 seeds = 60 runs (--quick: 2 rates,
2 seeds, 12 runs). Each backend runs the same specs into its own file through `run_sweep`, as the
CLI does, and the files are checked byte-identical. Timed separately:

  local 1     in this process, one run after another (the baseline)
  local 2     a 2-process pool (start-up included: it is part of what a user waits for)
  ray 2       a local Ray instance with 2 CPUs: `ray.init` and `ray.shutdown` timed on their own,
              the sweep itself timed with the session held

First, the dispatch cost alone: tasks that only return a result-sized line, on a warm pool and
a warm Ray instance. Then per round: speed-up = local 1 / local 2; Ray's overhead per run = (ray 2 sweep - local 2) / runs,
plus its fixed start and stop. `run s` is the sum of the in-worker run times from the journal
(the simulation's own cost; it grows when other processes share the cores), and `outside runs`
= (elapsed x workers - run s) / runs is the worker time per run not spent running: process or
task start-up, imports, transport, waiting for the last run (the backend's own overhead). Ray is skipped when it is not installed. `--repeat N` runs the whole sequence N times (the
machine is shared: figures move between rounds, so every round is printed).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from kvtui.sweep.driver import run_sweep  # noqa: E402
from kvtui.sweep.grid import expand, parse_axes  # noqa: E402
from kvtui.sweep.local import LocalBackend  # noqa: E402
from kvtui.sweep.output import journal_path, read_journal  # noqa: E402


def specs(quick: bool):
    rates = "1,4" if quick else "1,2,3,4"
    axes = parse_axes(["router.policy=round_robin,load_prefix,predicted_latency", f"workload.arrival.rate={rates}"])
    return expand([str(ROOT / "scenarios" / "pressure.yaml")], axes, [None], 2 if quick else 5, ["workload.arrival.schedule=[]"])


def timed(label: str, backend, runs, out: Path, workers: int) -> float:
    t0 = time.perf_counter()
    result = run_sweep(runs, backend, out)
    elapsed = time.perf_counter() - t0
    assert result.progress.done == len(runs) and not result.progress.lost, label
    run_s = sum(r["wall_time_s"] for r in read_journal(journal_path(out)))
    outside = (elapsed * workers - run_s) / len(runs)
    print(
        f"{label:<10} {elapsed:8.2f} s elapsed   run s {run_s:7.2f}   {1000 * elapsed / len(runs):7.1f} ms/run   "
        f"outside runs {1000 * outside:6.1f} ms/run"
    )
    return elapsed


def _echo(line: str) -> str:
    """A task that does no simulation: what is left is the backend's dispatch cost."""
    return line


def dispatch(n: int = 300) -> tuple[float, float | None]:
    """ms per task for n tasks carrying a result-sized line (3 kB) on a warm 2-process pool and on
    a warm local Ray instance with 2 CPUs, as run_sweep drives them (all submitted, then waited)."""
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor, as_completed

    line = "x" * 3000
    with ProcessPoolExecutor(2, mp_context=multiprocessing.get_context("forkserver")) as pool:
        list(pool.map(_echo, [line] * 4))  # warm
        t0 = time.perf_counter()
        for f in as_completed([pool.submit(_echo, line) for _ in range(n)]):
            f.result()
        pool_ms = 1000 * (time.perf_counter() - t0) / n
    try:
        import ray
    except ImportError:
        return pool_ms, None
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    try:
        task = ray.remote(num_cpus=1)(_echo)
        ray.get([task.remote(line) for _ in range(4)])  # warm
        t0 = time.perf_counter()
        waiting = [task.remote(line) for _ in range(n)]
        while waiting:
            done, waiting = ray.wait(waiting, num_returns=1)
            ray.get(done[0])
        ray_ms = 1000 * (time.perf_counter() - t0) / n
    finally:
        ray.shutdown()
    return pool_ms, ray_ms


def round_(runs, d: Path) -> None:
    t1 = timed("local 1", LocalBackend(1), runs, d / "l1.jsonl", 1)
    t2 = timed("local 2", LocalBackend(2), runs, d / "l2.jsonl", 2)
    same = (d / "l1.jsonl").read_bytes() == (d / "l2.jsonl").read_bytes()
    print(f"speed-up local 2 / local 1: {t1 / t2:.2f}x   (identical lines: {same})")
    try:
        import ray
    except ImportError:
        print("ray not installed: skipped")
        return
    from kvtui.sweep.raytasks import RayBackend

    t0 = time.perf_counter()
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    t_init = time.perf_counter() - t0
    tr = timed("ray 2", RayBackend(2), runs, d / "r2.jsonl", 2)
    t0 = time.perf_counter()
    ray.shutdown()
    t_stop = time.perf_counter() - t0
    same = (d / "r2.jsonl").read_bytes() == (d / "l1.jsonl").read_bytes()
    print(f"ray start {t_init:.2f} s, stop {t_stop:.2f} s")
    print(
        f"ray overhead per run over the local pool: {1000 * (tr - t2) / len(runs):+.1f} ms "
        f"(ray 2 / local 2: {tr / t2:.2f}x; with start and stop {(tr + t_init + t_stop) / t2:.2f}x)   "
        f"(identical lines: {same})"
    )


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--dispatch-only", action="store_true", help="only the dispatch measurement")
    args = ap.parse_args()
    runs = specs(args.quick)
    print(f"{len(runs)} runs of pressure.yaml (flat rate), 2 workers where parallel")
    pool_ms, ray_ms = dispatch()
    print(f"dispatch only (no simulation): pool {pool_ms:.2f} ms/task" + (f", ray {ray_ms:.2f} ms/task" if ray_ms else ""))
    if args.dispatch_only:
        return 0
    for i in range(args.repeat):
        print(f"-- round {i + 1}")
        with tempfile.TemporaryDirectory() as tmp:
            round_(runs, Path(tmp))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
