"""One run of a sweep, in whichever process executes it: the same run as `kvtui run`, reduced to
one canonical line of JSON.

The line must not depend on where or when it ran, so that the same grid gives byte-identical
files on any backend and worker count: the result document's `wall_time_s` is taken out of it
and travels beside it (`Outcome.wall_time_s`, written to the journal), and the line is built
here, by the same code, whatever backend called it. A run that fails (a grid value the scenario
validation rejects, or an error inside the engine) becomes a line with `status: error` and the
message, so one bad cell does not stop the sweep; so does a run over the budget, refused by its
estimate or stopped by the backstop as `kvtui run` would be (kvtui/run/budget.py; not with --force).
"""

from __future__ import annotations

import gc
import json
import os
import socket
import time
from dataclasses import dataclass

from kvtui.sweep.grid import RunSpec

# Fields of the result document that depend on the machine, not on the run.
MACHINE_FIELDS = ("wall_time_s",)


@dataclass(frozen=True)
class Outcome:
    """What a worker sends back: the run's index, its line, and where and how long it took."""

    index: int
    line: str
    ok: bool
    wall_time_s: float
    worker: str
    cpu_s: float = 0.0  # the worker's CPU time (user + system) for this run: what a sweep costs


def canonical_line(obj: dict) -> str:
    """The one serialisation of a line: key order as built, compact separators, no newline."""
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False)


def ok_line(spec: RunSpec, doc: dict) -> str:
    result = {k: v for k, v in doc.items() if k not in MACHINE_FIELDS}
    return canonical_line({"run": spec.key(), "status": "ok", "result": result})


def error_line(spec: RunSpec, message: str) -> str:
    return canonical_line({"run": spec.key(), "status": "error", "error": message})


def execute(spec: RunSpec) -> Outcome:
    """Load the scenario with `--set` then the grid values, run it within the budget, and return its line."""
    from kvtui.errors import InputError
    from kvtui.run import run_to_end
    from kvtui.run.budget import enforce_budget
    from kvtui.scenario import load_scenario
    from kvtui.scenario.run_spec import resolve

    worker = f"{socket.gethostname()}:{os.getpid()}"
    cpu0 = time.process_time()
    try:
        scenario = load_scenario(spec.scenario, spec.all_overrides(), limits=True)
        budget = enforce_budget(spec.scenario, scenario, spec.force)
        doc = run_to_end(resolve(scenario, spec.seed, spec.policy, "--policies"), on_progress=budget).document
    except InputError as e:
        return Outcome(spec.index, error_line(spec, e.render()), False, 0.0, worker)
    except Exception as e:  # a bug in one cell must not cost the other runs
        return Outcome(spec.index, error_line(spec, f"{type(e).__name__}: {e}"), False, 0.0, worker)
    finally:
        gc.collect()  # the run's Simulation is a cycle: freed when its case ends, not by a later one
    return Outcome(spec.index, ok_line(spec, doc), True, float(doc.get("wall_time_s", 0.0)), worker,
                   time.process_time() - cpu0)
