"""What every command shares: the parser that raises instead of exiting, the run options, loading a
scenario, and one run to its result document."""

from __future__ import annotations

import argparse
import json
from typing import TYPE_CHECKING, overload

from kvtui.files import write_output

if TYPE_CHECKING:
    from kvtui.run.budget import RunBudget
    from kvtui.scenario import Scenario
    from kvtui.scenario.run_spec import RunSpec


class UsageError(Exception):
    """Bad command-line usage: exit 2 with the message."""


def port_number(text: str) -> int | None:
    """A TCP port written in ASCII digits, 1 to 65535; None for anything else."""
    if not (text.isascii() and text.isdigit() and len(text) <= 5) or not 0 < int(text) < 65536:
        return None
    return int(text)


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
    p.add_argument("--seed", type=seed_value, help=f"override the scenario's seed (0 to {SEED_MAX})")
    p.add_argument(
        "--set",
        dest="overrides",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="override a scenario field, e.g. --set cluster.nodes.0.kv_blocks=64 (repeatable)",
    )
    add_force_option(p)


def add_force_option(p: argparse.ArgumentParser) -> None:
    p.add_argument("--force", action="store_true",
                   help="run a scenario even when its cost estimate is over the budget (see `kvtui validate`)")


SEED_MAX = 2**63 - 1  # the scenario's `seed` bound too (model.py); SeedSequence refuses negatives


def seed_value(text: str) -> int:
    """`--seed`: an integer in [0, SEED_MAX], else a usage error (argparse reports it, exit 2)."""
    try:
        seed = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}") from None
    if not 0 <= seed <= SEED_MAX:
        raise argparse.ArgumentTypeError(f"must be between 0 and {SEED_MAX}, got {text}")
    return seed


def load(args, budget: bool = True, extra: tuple[str, ...] = ()) -> "Scenario":
    """Load the scenario (with `--set` and then `extra` overrides); refuse one over the cost
    budget unless `--force` (scenario/cost.py)."""
    from kvtui.run.budget import check_budget, cost_of
    from kvtui.scenario import load_scenario

    scenario = load_scenario(args.scenario, [*args.overrides, *extra], limits=True)
    if budget and not getattr(args, "force", False):
        check_budget(args.scenario, scenario, cost_of(scenario))
    return scenario


def run_budget(args) -> "RunBudget | None":
    """The backstop for one run (kvtui/run/budget.py), every run of `run` and `compare`
    alike; none with `--force`."""
    from kvtui.run.budget import RunBudget

    return None if args.force else RunBudget(args.scenario)


def check_vs(vs: str | None, spec: "RunSpec") -> None:
    """--vs: a policy, or `pattern:A|B|C` on a scenario whose store is a Raft group
    (kvtui/scenario/patterns.py); exit 2 naming the flag otherwise. The split screen's two
    runs are resolved here, at the door, like every other run (kvtui/scenario/run_spec.py)."""
    if vs is None or not vs.startswith("pattern:"):
        if vs is not None:
            spec.again(vs, flag="--vs")
        return
    from kvtui.scenario.patterns import with_pattern

    try:
        with_pattern(spec.scenario, vs[len("pattern:"):])
    except ValueError as e:
        raise UsageError(f"--vs: {e}") from None


@overload
def name_list(text: str, flag: str) -> list[str]: ...
@overload
def name_list(text: None, flag: str) -> None: ...
@overload
def name_list(text: str | None, flag: str) -> list[str] | None: ...
def name_list(text: str | None, flag: str) -> list[str] | None:
    """The names in a comma-separated `flag` value, or None when the flag was not given.

    Given but empty (`--policies ''`, `--policies ' , '`) is a usage error: falling back to the
    default there ran something the user did not ask for, with no word about it.
    """
    if text is None:
        return None
    names = [x.strip() for x in text.split(",") if x.strip()]
    if not names:
        raise UsageError(f"{flag}: the list is empty; give comma-separated names, or leave {flag} out for the default")
    return names


def policy_list(text: str | None, flag: str = "--policies") -> list[str | None]:
    """The policies `flag` names, each checked before the first run starts, or [None] (the
    scenario's own) without the flag."""
    from kvtui.scenario.run_spec import check_policy

    policies: list[str | None] = []
    policies.extend(name_list(text, flag) or [None])
    for name in policies:
        check_policy(name, flag)
    return policies


def load_run(args, budget: bool = True, extra: tuple[str, ...] = ()) -> "RunSpec":
    """The door of a command that runs one scenario: load it (`load`), then resolve the run
    under `--seed` and `--policy` once (kvtui/scenario/run_spec.py); everything after reads the spec."""
    from kvtui.scenario.run_spec import resolve

    return resolve(load(args, budget, extra), args.seed, getattr(args, "policy", None))


def run_once(run: "RunSpec | Scenario", label: str | None = None, expected: int | None = None,
             budget=None) -> tuple[object, dict]:
    """`kvtui.run.run_to_end` with the CLI's progress bar: the simulation and its result document.

    A run that takes more than a second shows a progress bar on stderr when it is a terminal
    (`kvtui.cli.progress`); `label` names the run there, `expected` is its request count when
    the run cannot tell (the cost estimate's). `budget` (a `RunBudget`) stops a run past it
    with exit 2.
    """
    from kvtui.cli.progress import progress_bar
    from kvtui.run import run_to_end
    from kvtui.scenario.run_spec import as_spec

    spec = as_spec(run)
    with progress_bar(label or f"{spec.scenario.name} ({spec.policy})", expected=expected) as progress:
        finished = run_to_end(spec, on_progress=_both(progress, budget))
    return finished.simulation, finished.document


def _both(progress, budget):
    """One progress callback out of the bar's and the budget's (either may be None)."""
    if progress is None or budget is None:
        return progress or budget
    return lambda p: (budget(p), progress(p))


def write_json(path: str, doc: dict) -> None:
    write_output(path, json.dumps(doc, indent=2) + "\n", "the result")




def print_workload_notes(sim) -> None:
    """What the workload says the user must know (skipped trace records, weka copies), on stderr."""
    import sys

    notes = getattr(getattr(sim, "workload", None), "notes", None)
    for line in notes() if notes is not None else ():
        print(line, file=sys.stderr)
