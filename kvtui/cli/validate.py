"""`kvtui validate SCENARIO` and `kvtui schema`: check a file, or print what a file may say."""

from __future__ import annotations

import json

from kvtui.cli.common import Parser, add_force_option, check_budget, cost_of, load, scan_trace


def main(argv: list[str]) -> int:
    p = Parser(prog="kvtui validate", description=(
        "Check a scenario file; every problem as file:line: message. Prints a cost estimate "
        "(requests, peak KV blocks, memory, run time) and refuses a scenario over the budget."))
    p.add_argument("scenario")
    p.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE")
    add_force_option(p)
    args = p.parse_args(argv)
    scenario = load(args, budget=False)
    trace = scan_trace(scenario) if scenario.workload.trace is not None else None
    notes = trace.notes() if trace is not None else []
    cost = cost_of(scenario, trace)
    print(f"{args.scenario}: {cost.summary()}")
    if not args.force:
        check_budget(args.scenario, scenario, cost)
    print(f"{args.scenario}: ok ({scenario.name}: {len(scenario.cluster.nodes)} nodes, policy {scenario.router.policy})")
    for line in notes:
        print(f"  {line}")
    return 0


def schema_main(argv: list[str]) -> int:
    from kvtui.scenario import scenario_json_schema

    p = Parser(prog="kvtui schema", description="Print the JSON Schema of scenario files (for editors).")
    p.parse_args(argv)
    print(json.dumps(scenario_json_schema(), indent=2))
    return 0
