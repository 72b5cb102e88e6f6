"""The runs of a sweep, in grid order: scenarios x grid values x policies x seeds.

The order is the file's order (seeds innermost, so a cell's seeds are adjacent) and it is fixed
by the command line alone, never by which worker finishes first. Seeds are derived from the
scenario's own seed S (after `--set`, or `--seed`): S, S+1, ..., S+N-1, so `--seeds 1` is
exactly the run `kvtui run` makes. With `--ladder` each scenario's own
`workload.arrival.ladder` is its first grid axis (`workload.arrival.rate`, run at a flat rate),
so scenarios of different capacities climb their own rates in one sweep (ladder.py stops them).
"""

from __future__ import annotations

import itertools
import json
import math
from dataclasses import dataclass

from kvtui.errors import InputError


SEED_MAX = 2**63 - 1  # the scenario's seed bound (cli/common.py, model.py)
MAX_RUNS = 1_000_000  # a run key each in memory and a line each in OUT: beyond this, split the sweep


class GridError(ValueError):
    """A `--grid` or `--seeds` argument that cannot be used; the CLI shows it as a usage error."""


RATE = "workload.arrival.rate"
FLAT = "workload.arrival.schedule=[]"  # a step's rate holds throughout (no rate schedule)


def rate_text(rate: float) -> str:
    """A rate as a grid value YAML reads back as a number: 0.5, 2, 12.5 (never 1e-05)."""
    return f"{float(rate):.12f}".rstrip("0").rstrip(".")


def ladder_rates(path: str, overrides: list[str]) -> tuple[tuple[str, ...], float | None]:
    """(the scenario's ladder as grid values, its send window in s or None); a GridError without a ladder."""
    from kvtui.scenario import load_scenario

    scenario = load_scenario(path, overrides)
    arrival = scenario.workload.arrival
    if arrival.process == "closed_loop":
        raise GridError(f"--ladder: {path}: the ladder steps the open-loop arrival rate; this arrival process is closed_loop")
    rates = [float(r) for r in getattr(arrival, "ladder", ()) or ()]
    if not rates:
        raise GridError(f"--ladder: {path} sets no workload.arrival.ladder; add one (e.g. ladder: [1, 2, 4, 8])")
    values = tuple(dict.fromkeys(rate_text(r) for r in rates))
    window = scenario.workload.duration_s
    return values, None if window is None else float(window)


@dataclass(frozen=True)
class Axis:
    """One `--grid key=v1,v2,...`: a dotted scenario key and its values, as the user wrote them."""

    key: str
    values: tuple[str, ...]


def parse_axis(text: str) -> Axis:
    key, sep, values = text.partition("=")
    key = key.strip()
    if not sep or not key or not values:
        raise GridError(f"--grid wants KEY=V1,V2,...; got {text!r}")
    if key == "seed":
        raise GridError("--grid seed=...: use --seeds N (seeds S, S+1, ...) or --seed S instead")
    vals = tuple(v.strip() for v in values.split(",") if v.strip() != "")
    if not vals:
        raise GridError(f"--grid {key}: no values in {text!r}")
    if len(set(vals)) != len(vals):
        raise GridError(f"--grid {key}: a value is repeated in {text!r}")
    return Axis(key, vals)


def parse_axes(texts: list[str]) -> list[Axis]:
    axes = [parse_axis(t) for t in texts]
    keys = [a.key for a in axes]
    dup = sorted({k for k in keys if keys.count(k) > 1})
    if dup:
        raise GridError(f"--grid {dup[0]} is given twice; put all its values in one --grid")
    return axes


@dataclass(frozen=True)
class RunSpec:
    """One run: what a worker needs, and the key a result line carries (resume matches on it)."""

    index: int
    scenario: str
    overrides: tuple[str, ...]  # --set, applied before the grid values
    grid: tuple[tuple[str, str], ...]
    policy: str | None
    seed: int
    force: bool = False  # --force: no budget (not part of the key: it does not change the result)

    def key(self) -> dict:
        return {
            "scenario": self.scenario,
            "set": list(self.overrides),
            "grid": dict(self.grid),
            "policy": self.policy,
            "seed": self.seed,
        }

    def all_overrides(self) -> list[str]:
        return [*self.overrides, *(f"{k}={v}" for k, v in self.grid)]


def key_text(key: dict) -> str:
    """A run key as one canonical string, for set membership on resume."""
    return json.dumps(key, sort_keys=True, separators=(",", ":"))


def base_seed(path: str, overrides: list[str], seed: int | None) -> int:
    """The scenario's seed (what `kvtui run` would use): `--seed`, else the file's after `--set`.

    Loading here also checks the scenario file itself up front: a broken file is bad input
    (exit 2), while a grid value that breaks validation is one failed run among the others."""
    from kvtui.scenario import load_scenario
    from kvtui.scenario.run_spec import seed_of

    return seed_of(load_scenario(path, overrides), seed)


def shadowed_rate(path: str, overrides: list[str], axes: list[Axis]) -> str | None:
    """A note when a grid over `workload.arrival.rate` would change nothing: a rate schedule in
    the file overrides the rate from its first step (`compare --ladder` drops it the same way)."""
    if not any(a.key == "workload.arrival.rate" for a in axes):
        return None
    if any(a.key == "workload.arrival.schedule" for a in axes):
        return None
    from kvtui.scenario import load_scenario

    schedule = load_scenario(path, overrides).workload.arrival.schedule
    if not schedule:
        return None
    first = min(p.at for p in schedule)
    return (
        f"note: {path} has a workload.arrival.schedule that replaces workload.arrival.rate from "
        f"t={first:g} s on; add --set 'workload.arrival.schedule=[]' for a flat rate per grid value"
    )


def expand(
    scenarios: list[str],
    axes: list[Axis],
    policies: list[str | None],
    seeds: int,
    overrides: list[str] = (),
    seed: int | None = None,
    force: bool = False,
    ladder: bool = False,
) -> list[RunSpec]:
    """The runs in grid order. `ladder`: each scenario's own `workload.arrival.ladder` is the
    first grid axis (`workload.arrival.rate`), run at a flat rate (`FLAT` joins its `--set`)."""
    if seeds < 1:
        raise GridError(f"--seeds must be at least 1; got {seeds}")
    if ladder and any(a.key in (RATE, "workload.arrival.schedule") for a in axes):
        raise GridError(f"--ladder sets {RATE} per scenario; leave it (and the schedule) out of --grid")
    plans = []
    for path in scenarios:
        if ladder:
            rates, _ = ladder_rates(path, list(overrides))
            plans.append((path, [Axis(RATE, rates), *axes], (*overrides, FLAT)))
        else:
            plans.append((path, axes, tuple(overrides)))
    runs = len(policies) * seeds * sum(math.prod(len(a.values) for a in path_axes) for _, path_axes, _ in plans)
    if runs > MAX_RUNS:
        raise GridError(f"the sweep has {runs:,} runs, more than the {MAX_RUNS:,} one command takes; "
                        "split it (fewer --seeds or grid values)")
    specs: list[RunSpec] = []
    for path, path_axes, path_overrides in plans:
        start = base_seed(path, list(overrides), seed)
        if start + seeds - 1 > SEED_MAX:
            raise GridError(f"--seeds {seeds} from seed {start} passes the largest seed, {SEED_MAX}")
        for values in itertools.product(*(a.values for a in path_axes)):
            grid = tuple(zip((a.key for a in path_axes), values))
            for policy in policies:
                for s in range(start, start + seeds):
                    specs.append(RunSpec(len(specs), path, path_overrides, grid, policy, s, force))
    return specs


__all__ = ["FLAT", "RATE", "Axis", "GridError", "InputError", "RunSpec", "base_seed", "expand", "key_text", "ladder_rates", "parse_axes"]
