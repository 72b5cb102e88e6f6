"""`kvtui run SCENARIO`: one headless run, its summary table, and the result document."""

from __future__ import annotations

from kvtui.files import check_output
from kvtui.cli.common import Parser, add_run_options, check_policy, load, print_workload_notes, run_budget, run_once, write_json


def main(argv: list[str]) -> int:
    from kvtui.report import print_table, run_table

    p = Parser(prog="kvtui run", description="Run a scenario headless and print its summary.")
    add_run_options(p)
    p.add_argument("--json", metavar="FILE", help="write the result document here")
    args = p.parse_args(argv)
    check_policy(args.policy)
    if args.json:
        check_output(args.json, [args.scenario], "result")
    scenario = load(args)
    sim, doc = run_once(scenario, args.seed, args.policy, budget=run_budget(args))
    print_workload_notes(sim)
    print_table(run_table(doc))
    if args.json:
        write_json(args.json, doc)
    return 0
