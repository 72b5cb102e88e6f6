"""Which of the scheduler's vLLM rules (issue 31) moves which shipped figure.

Run:  python benchmarks/scheduler_attribution.py [--scale small|full] [--only NAME ...]

Issue 31 made the node schedule as vLLM's Scheduler does (kvtui/sim/node.py `RULES`): a waiting
request is admitted only if its whole sequence fits (rule 1), blocks are cached when allocated
(rule 2), requests finishing in one step are freed in scheduling order (rule 3), and a decode
segment takes and caches its blocks iteration by iteration (exact segments). The change moved
many shipped figures at once; this says which rule moved which. Every scenario runs with every
rule (the shipped engine), with all of them taken out (the scheduling before issue 31; KV
events are published at step end in every run: that fix is not one of these rules), and with
each taken out alone (`Node.rules`: an attribution switch, never a scenario's knob).

Printed (markdown, for docs/model.md): one row per figure that moves by more than 1 % (the
bound of benchmarks/figures.py) in any of those runs, its value under each, and *moved by*: the
rules whose removal alone moves it by more than 1 % ("together" when only their joint removal
does). Then the scenarios whose event stream changes with no figure beyond 1 %, and which
removals change it. `--scale small`: the shipped scenarios that run in about a second each (the
docs check in CI, ~1.5 CPU-min); `--scale full`: every shipped scenario (~15 CPU-min, by hand).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.figures import TOLERANCE, Digest, drift, figures_of, scenario_paths  # noqa: E402
from kvtui.scenario import load_scenario  # noqa: E402
from kvtui.sim.engine import Simulation  # noqa: E402
from kvtui.sim.node import RULES  # noqa: E402

# The rules as the table names them, in the order the issue states them.
NAMES = {"whole_sequence_fits": "rule 1", "cached_when_allocated": "rule 2",
         "freed_in_scheduling_order": "rule 3", "exact_segments": "exact segments"}
ALL, NONE = "vLLM's rules", "none"
VARIANTS: dict[str, frozenset[str]] = {ALL: RULES, NONE: frozenset(),
                                       **{f"no {NAMES[r]}": RULES - {r} for r in NAMES}}
FIGURES = ("completed", "rejected", "preempted", "token_hit_rate", "evicted_blocks",
           "ttft_p50", "ttft_p95", "e2e_p50", "e2e_p95", "itl_p50", "itl_p95")
# Shipped scenarios that run in about a second each: the CI-sized table.
SMALL = ("admission", "concurrency", "crash-recovery", "disaggregation", "maas", "mooncake.yaml", "offload",
         "pressure", "qps-ladder", "seed-table/", "workload-a-small", "workload-b-small", "workload-c-small",
         "workload-d-small")


def measure(path: Path, rules: frozenset[str]) -> dict:
    """One scenario run to its end with only `rules` of `RULES` in every node."""
    sim = Simulation(load_scenario(path))
    for node in sim.nodes:
        node.rules = rules
    digest = Digest()
    sim.subscribe(digest.feed)
    try:
        sim.run()
        return figures_of(sim, digest, 0.0)
    finally:
        sim.close()


def cell(value: float, base: float) -> str:
    shown = f"{value:,.4f}" if isinstance(value, float) and abs(value) < 1 else f"{value:,.6g}"
    d = drift(base, value)
    return shown if d <= TOLERANCE else f"{shown} ({(value - base) / max(abs(base), 1e-12) * 100:+.0f} %)"


def moved_by(runs: dict[str, dict], figure: str) -> str:
    base = runs[ALL][figure]
    alone = [NAMES[r] for r in NAMES if drift(base, runs[f"no {NAMES[r]}"][figure]) > TOLERANCE]
    return ", ".join(alone) or "together"  # a row is shown only when some run moves it: here all out


def rows(name: str, runs: dict[str, dict]) -> list[str]:
    out = []
    for f in FIGURES:
        base = runs[ALL][f]
        if all(drift(base, r[f]) <= TOLERANCE for r in runs.values()):
            continue
        out.append(f"| {name} | {f} | " + " | ".join(cell(runs[v][f], base) for v in VARIANTS) + f" | {moved_by(runs, f)} |")
    return out


def chosen(scale: str, only: list[str]) -> list[Path]:
    paths = scenario_paths()
    names = [(p, str(p.relative_to(ROOT / "scenarios"))) for p in paths]
    keep = only or (SMALL if scale == "small" else ())
    return [p for p, n in names if not keep or any(k in n for k in keep)]


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--scale", choices=("small", "full"), default="small")
    p.add_argument("--only", action="append", default=[], help="scenario names containing this (repeatable)")
    args = p.parse_args(argv)
    table = ["| scenario | figure | " + " | ".join(VARIANTS) + " | moved by |", "|---" * (len(VARIANTS) + 3) + "|"]
    quiet: list[str] = []
    for path in chosen(args.scale, args.only):
        name = str(path.relative_to(ROOT / "scenarios")).removesuffix(".yaml")
        runs = {v: measure(path, rules) for v, rules in VARIANTS.items()}
        found = rows(name, runs)
        table += found
        changed = [v for v in VARIANTS if v != ALL and runs[v]["digest"] != runs[ALL]["digest"]]
        if not found:
            quiet.append(f"| {name} | {', '.join(changed) or 'none'} |")
    print("\n".join(table))
    print("\nNo figure beyond 1 % (events compared by their SHA-256):\n")
    print("\n".join(["| scenario | event stream changed by |", "|---|---|", *quiet]))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
