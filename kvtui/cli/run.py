"""`kvtui run SCENARIO`: one headless run, its summary table, and the result document."""

from __future__ import annotations

from kvtui.files import check_output
from kvtui.cli.common import Parser, add_run_options, load_run, print_workload_notes, run_budget, run_once, write_json


def main(argv: list[str]) -> int:
    from kvtui.report import print_table, run_table

    p = Parser(prog="kvtui run", description="Run a scenario headless and print its summary.")
    add_run_options(p)
    p.add_argument("--json", metavar="FILE", help="write the result document here")
    args = p.parse_args(argv)
    if args.json:
        check_output(args.json, [args.scenario], "result")
    sim, doc = run_once(load_run(args), budget=run_budget(args))
    print_workload_notes(sim)
    print_table(run_table(doc))
    if args.json:
        write_json(args.json, doc)
    return 0
