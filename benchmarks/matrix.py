"""The predicted-latency blog's experiment (seed 002) as one `kvtui sweep`, timed.

Run:  python benchmarks/matrix.py [--scale small|full] [--seeds 3] [--workers 2] [--out DIR]
                                  [--only A,C] [--write-doc docs/performance.md]

The matrix is workloads A-D and ShareGPT x round robin, load_prefix at the blog's (1,1,1)
weights (`router.weights.preset=seed-111`) and predicted_latency x each workload's own QPS
ladder, stopped after its first saturated step as the blog stops it x 3 seeds; each run reports
NTPOT and output tokens/s. It is one command a user can type, resume, send to Ray or plot:

    kvtui sweep scenarios/workload-{a,b,c,d}-small.yaml scenarios/sharegpt-small.yaml \\
      --ladder --until-saturated --policies round_robin,load_prefix,predicted_latency \\
      --set router.weights.preset=seed-111 --seeds 3 --out DIR/matrix-small.jsonl

`kvtui sweep` rather than a command of its own, because the matrix is a sweep: what the blog
adds are per-scenario ladders and the stop at saturation, and both are sweep options every
other ladder study can use (docs/sweeps.md). This script spells the blog's matrix as that
command, runs it (a fresh file), and reports its wall time and CPU time (each run's CPU time in
its worker, user + system, from the sweep's journal), the runs made and the runs the stop saved,
per workload. On a machine shared with other work the wall time grows and the CPU time does not:
the CPU time over the worker count is the wall time the sweep would take on idle cores. `--write-doc` puts
that into the `<!-- measured: matrix SCALE -->` block of docs/performance.md.
`benchmarks/blog_rerun.py` reads the same file for docs/routing.md.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import subprocess
import sys
import time
from pathlib import Path

from measured import replace_block

ROOT = Path(__file__).resolve().parent.parent

WORKLOADS = {  # name -> (small file, full file)
    "A": ("workload-a-small.yaml", "workload-a.yaml"),
    "B": ("workload-b-small.yaml", "workload-b.yaml"),
    "C": ("workload-c-small.yaml", "workload-c.yaml"),
    "D": ("workload-d-small.yaml", "workload-d.yaml"),
    "ShareGPT": ("sharegpt-small.yaml", "sharegpt.yaml"),
}
POLICIES = ("round_robin", "load_prefix", "predicted_latency")
BLOG_WEIGHTS = "router.weights.preset=seed-111"  # the blog's load+prefix (1,1,1)


def scenario_of(name: str, scale: str) -> str:
    small, full = WORKLOADS[name]
    return f"scenarios/{small if scale == 'small' else full}"


def sweep_args(names: list[str], scale: str, seeds: int, workers: int, out: Path) -> list[str]:
    """The one `kvtui sweep` command of the matrix (arguments after `kvtui`)."""
    return ["sweep", *(scenario_of(n, scale) for n in names), "--ladder", "--until-saturated",
            "--policies", ",".join(POLICIES), "--set", BLOG_WEIGHTS, "--seeds", str(seeds),
            "--workers", str(workers), "--out", str(out)]


def run_matrix(names: list[str], scale: str, seeds: int, workers: int, out: Path, fresh: bool) -> tuple[float, str]:
    """Run (or resume) the sweep: (wall s, its stderr)."""
    args = sweep_args(names, scale, seeds, workers, out) + (["--fresh"] if fresh else [])
    t0 = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "kvtui", *args], cwd=ROOT, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    if done.returncode != 0:
        raise SystemExit(f"kvtui {shlex.join(args)} exited {done.returncode}: {done.stderr.strip()[-2000:]}")
    return wall, done.stderr


def per_workload(out: Path, names: list[str], scale: str) -> dict[str, tuple[int, float]]:
    """name -> (runs, their CPU s in their workers) from the sweep's journal."""
    journal = out.with_name(out.stem + ".journal.jsonl")
    by_file = {scenario_of(n, scale): n for n in names}
    found: dict[str, tuple[int, float]] = {n: (0, 0.0) for n in names}
    for text in journal.read_text().splitlines():
        rec = json.loads(text)
        name = by_file[json.loads(rec["line"])["run"]["scenario"]]
        runs, secs = found[name]
        found[name] = (runs + 1, secs + float(rec.get("cpu_s", 0.0)))
    return found


def report(args, wall: float, stderr: str, out: Path, load: tuple[float, float]) -> str:
    names = args.only
    costs = per_workload(out, names, args.scale)
    saved = re.search(r"(\d+) past saturation not run", stderr)
    runs = sum(r for r, _ in costs.values())
    cpu = sum(s for _, s in costs.values())
    command = shlex.join(["kvtui", *sweep_args(names, args.scale, args.seeds, args.workers, Path("matrix.jsonl"))])
    lines = [
        f"Measured {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())} on this project's VM "
        f"({os.cpu_count()} CPUs, load average {load[0]:.1f} at the start, {load[1]:.1f} at the end: "
        "other work shared the cores) by "
        f"`python benchmarks/matrix.py {shlex.join(args.argv)}`, which runs `{command}`:",
        "",
        f"- **{wall / 60:.1f} min wall, {cpu / 60:.1f} CPU-min** ({cpu / 60 / args.workers:.1f} min on "
        f"{args.workers} idle cores) for {runs} runs ({saved.group(1) if saved else 0} runs past "
        "saturation not run)",
        "",
        "| workload | runs | CPU s |",
        "|---|---|---|",
        *(f"| {n} | {r} | {s:,.0f} |" for n, (r, s) in costs.items()),
    ]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--scale", choices=("small", "full"), default="small")
    p.add_argument("--seeds", type=int, default=3)
    p.add_argument("--workers", type=int, default=os.cpu_count() or 1)
    p.add_argument("--only", default=",".join(WORKLOADS), help="workloads, e.g. A,C (default: A,B,C,D,ShareGPT)")
    p.add_argument("--out", type=Path, default=Path("."), help="directory for matrix-SCALE.jsonl (default: here)")
    p.add_argument("--write-doc", type=Path, help="put the timing into this file's measured block")
    args = p.parse_args(argv)
    args.argv = argv
    args.only = [n.strip() for n in args.only.split(",") if n.strip()]
    unknown = [n for n in args.only if n not in WORKLOADS]
    if unknown:
        p.error(f"--only: unknown workload {unknown[0]!r} (known: {', '.join(WORKLOADS)})")
    args.out.mkdir(parents=True, exist_ok=True)
    out = (args.out / f"matrix-{args.scale}.jsonl").resolve()
    start = os.getloadavg()[0]
    wall, stderr = run_matrix(args.only, args.scale, args.seeds, args.workers, out, fresh=True)
    body = report(args, wall, stderr, out, (start, os.getloadavg()[0]))
    print(body)
    if args.write_doc:
        replace_block(args.write_doc, f"matrix {args.scale}", body)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
