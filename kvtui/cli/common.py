"""What every command shares: the parser that raises instead of exiting, the run options, loading a
scenario, and one run to its result document."""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import TYPE_CHECKING

from kvtui.errors import InputError

if TYPE_CHECKING:
    from kvtui.scenario import Scenario


class UsageError(Exception):
    """Bad command-line usage: exit 2 with the message."""


class Parser(argparse.ArgumentParser):
    def error(self, message: str):  # argparse would exit 2 itself; keep one exit path
        raise UsageError(f"{self.prog}: {message}\n{self.format_usage().strip()}")


def policy_help() -> str:
    from kvtui.scenario.policies import POLICY_NAMES

    return "routing policy: " + ", ".join(POLICY_NAMES) + " (see docs/routing.md)"


def add_run_options(p: argparse.ArgumentParser, policy: bool = True, many: bool = False) -> None:
    """The options every run takes; `many` makes the positional `scenarios` (one or more)."""
    if many:
        p.add_argument("scenarios", nargs="+", metavar="SCENARIO", help="scenario YAML files")
    else:
        p.add_argument("scenario", help="scenario YAML file")
    if policy:
        p.add_argument("--policy", help=policy_help())
    p.add_argument("--seed", type=int, help="override the scenario's seed")
    p.add_argument(
        "--set",
        dest="overrides",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="override a scenario field, e.g. --set cluster.nodes.0.kv_blocks=64 (repeatable)",
    )


def load(args) -> "Scenario":
    from kvtui.scenario import load_scenario

    return load_scenario(args.scenario, args.overrides)


def check_policy(name: str | None) -> None:
    from kvtui.scenario.policies import POLICY_NAMES

    if name is not None and name not in POLICY_NAMES:
        raise UsageError(f"unknown policy {name!r}; known: {', '.join(POLICY_NAMES)}")


def run_once(scenario, seed: int | None = None, policy: str | None = None, label: str | None = None) -> tuple[object, dict]:
    """Run a scenario to the end; return the simulation and its result document.

    A run that takes more than a second shows a progress bar on stderr when it is a terminal
    (`kvtui.cli.progress`); `label` names the run there.
    """
    from kvtui.cli.progress import progress_bar
    from kvtui.sim.engine import Simulation
    from kvtui.sim.result import result_document

    t0 = time.perf_counter()
    sim = Simulation(scenario, seed=seed, policy=policy)
    try:
        with progress_bar(label or f"{scenario.name} ({policy or scenario.router.policy})") as progress:
            sim.run(progress=progress)
        wall = time.perf_counter() - t0
        return sim, result_document(sim, wall)
    finally:
        sim.close()


def write_json(path: str, doc: dict) -> None:
    target = Path(path)
    tmp = target.with_name(target.name + ".tmp")
    try:
        tmp.write_text(json.dumps(doc, indent=2) + "\n")
        tmp.replace(target)
    except OSError as e:
        raise InputError.one(path, None, f"cannot write the result: {e.strerror}") from None


def print_workload_notes(sim) -> None:
    """What the workload says the user must know (skipped trace records, weka copies), on stderr."""
    import sys

    notes = getattr(getattr(sim, "workload", None), "notes", None)
    for line in notes() if notes is not None else ():
        print(line, file=sys.stderr)
