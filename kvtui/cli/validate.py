"""`kvtui validate SCENARIO` and `kvtui schema`: check a file, or print what a file may say."""

from __future__ import annotations

import json

from kvtui.cli.common import Parser, add_force_option, load
from kvtui.run.budget import check_budget, cost_of
from kvtui.run.narrate import plural
from kvtui.run.traces import scan_trace
from kvtui.scenario.run_spec import resolve


def main(argv: list[str]) -> int:
    p = Parser(prog="kvtui validate", description=(
        "Check a scenario file; every problem as file:line: message. Prints a cost estimate "
        "(requests, peak KV blocks, memory, run time) and refuses a scenario over the budget."))
    p.add_argument("scenario")
    p.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE")
    add_force_option(p)
    args = p.parse_args(argv)
    scenario = load(args, budget=False)
    trace = scan_trace(scenario)  # read whole now: a broken line is reported here, not mid-run
    notes = trace.notes() if trace is not None else []
    cost = cost_of(scenario, trace)
    print(f"{args.scenario}: {cost.summary()}")
    if not args.force:
        check_budget(args.scenario, scenario, cost)
    spec = resolve(scenario)  # what `kvtui run` would run, resolved as it is (kvtui/scenario/run_spec.py)
    print(f"{args.scenario}: ok ({scenario.name}: {plural(len(spec.plans), 'node')}, policy {spec.policy})")
    print(f"  arrivals: {arrival_meaning(scenario.workload)}")
    for line in notes:
        print(f"  {line}")
    return 0


def schema_main(argv: list[str]) -> int:
    from kvtui.scenario import scenario_json_schema

    p = Parser(prog="kvtui schema", description="Print the JSON Schema of scenario files (for editors).")
    p.parse_args(argv)
    print(json.dumps(scenario_json_schema(), indent=2))
    return 0


def arrival_meaning(workload) -> str:
    """What one arrival starts, so `arrival.rate` reads in its unit (model.Arrival)."""
    arrival = workload.arrival
    if workload.trace is not None and workload.trace.format != "weka":
        return f"the {workload.trace.format} trace's own timestamps (arrival.rate is not used)"
    unit = rate_unit(workload)
    what = ("one request each (shared_prefix has no sessions)" if unit == "requests"
            else "one session each, its turns following at think time")
    if arrival.process == "closed_loop":
        return f"closed loop, {arrival.users} concurrent users; {what}"
    steps = f", then {len(arrival.schedule)} scheduled changes" if arrival.schedule else ""
    return f"{arrival.process} at arrival.rate {arrival.rate:g} {unit}/s{steps}; {what}"


def rate_unit(workload) -> str:
    """What arrival.rate counts per second: `requests` for shared_prefix, else `sessions`."""
    return "requests" if workload.shared_prefix is not None else "sessions"
