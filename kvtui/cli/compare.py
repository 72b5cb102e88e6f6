"""`kvtui compare SCENARIO`: the same workload under several policies, values of one field, or
steps of a QPS ladder, one row each."""

from __future__ import annotations

import time

from kvtui.cli.common import (
    Parser,
    UsageError,
    add_run_options,
    load,
    name_list,
    policy_list,
    print_workload_notes,
    run_budget,
    run_once,
    write_json,
)
from kvtui.files import check_output


def _print_pools(runs: list[dict], label: str = "policy") -> None:
    """The prefill/decode pools' figures, when a run has them (kvtui/report.py `pool_table`)."""
    from kvtui.report import pool_table, print_table

    table = pool_table(runs, label)
    if table is not None:
        print_table(table)


def _parse_sweep(text: str) -> tuple[str, list[str]]:
    key, sep, values = text.partition("=")
    if not sep or not key or not values:
        raise UsageError(f"--sweep wants KEY=V1,V2,...; got {text!r}")
    return key, name_list(values, f"--sweep {key}")  # `--sweep KEY=,` is a usage error


def _parse_rates(text: str) -> list[float]:
    rates: list[float] = []
    for part in (x.strip() for x in text.split(",")):
        if not part:
            continue
        try:
            rate = float(part)
        except ValueError:
            raise UsageError(f"--ladder wants rates like 0.5,1,2,4; got {part!r}") from None
        if not rate > 0 or rate == float("inf"):
            raise UsageError(f"--ladder rates must be positive and finite; got {part!r}")
        rates.append(rate)
    if not rates:  # `--ladder ,`: not the scenario's ladder, which `--ladder` alone asks for
        raise UsageError(f"--ladder: no rates in {text!r}; give rates like 0.5,1,2,4, or --ladder alone for the scenario's ladder")
    return rates


def _yaml_float(x: float) -> str:
    """A float YAML reads back as a float (PyYAML takes `1e-05`, without a dot, as a string)."""
    text = f"{x:.12f}".rstrip("0")
    return text + "0" if text.endswith(".") else text


def _ladder_rates(args, scenario) -> list[float]:
    """The QPS steps: from `--ladder R1,R2,...`, else the scenario's `workload.arrival.ladder`."""
    rates = _parse_rates(args.ladder) if args.ladder else [float(r) for r in getattr(scenario.workload.arrival, "ladder", ())]
    if not rates:
        raise UsageError(
            f"--ladder: {args.scenario} sets no workload.arrival.ladder; give the rates, e.g. --ladder 0.5,1,2,4"
        )
    if scenario.workload.arrival.process == "closed_loop":
        raise UsageError("--ladder steps the open-loop arrival rate; this scenario's arrival process is closed_loop")
    return rates


def _ladder(args, policies: list[str | None]) -> tuple[list[dict], object, str]:
    """Every (rate step, policy) run, the progress bar naming the run `i/n` with the ladder's
    ETA: the cost estimate's run time of the runs left (kvtui/scenario/cost.py), scaled by how
    the runs so far compared with theirs (higher rates take longer, so a plain mean would not)."""
    from kvtui.cli.validate import rate_unit
    from kvtui.run.budget import cost_of

    steps = [load(args, extra=(f"workload.arrival.rate={_yaml_float(rate)}", "workload.arrival.schedule=[]"))
             for rate in _ladder_rates(args, load(args))]  # `schedule=[]`: the step's rate holds throughout
    costs = [cost_of(scenario) for scenario in steps]
    plan = [(spec, cost) for scenario, cost in zip(steps, costs) for spec in _specs(args, scenario, policies)]
    runs, sim, began, estimated_done = [], None, time.perf_counter(), 0.0
    for i, (spec, cost) in enumerate(plan):
        left = sum(c.seconds for _, c in plan[i:])
        rate = spec.scenario.workload.arrival.rate
        label = (f"ladder {i + 1}/{len(plan)} ETA {_eta(time.perf_counter() - began, estimated_done, left)} · "
                 f"{rate:g} {rate_unit(spec.scenario.workload)}/s {spec.policy}")
        sim, doc = run_once(spec, label=label, expected=cost.requests, budget=run_budget(args))
        doc["ladder"] = {"rate": rate}
        runs.append(doc)
        estimated_done += cost.seconds
    return runs, sim, rate_unit(steps[0].workload)


def _specs(args, scenario, policies: list[str | None]) -> list:
    """The runs of one loaded scenario, one per policy, each resolved once under `--seed`
    (kvtui/scenario/run_spec.py) before the first of them starts."""
    from kvtui.scenario.run_spec import resolve

    return [resolve(scenario, args.seed, name, "--policies") for name in policies]


def _eta(elapsed: float, estimated_done: float, estimated_left: float) -> str:
    """Wall time left: the estimate, times measured / estimated for the runs done so far."""
    scale = elapsed / estimated_done if estimated_done > 0 and elapsed > 0 else 1.0
    minutes, secs = divmod(int(estimated_left * scale + 0.5), 60)
    return f"~{minutes}m{secs:02d}s" if minutes else f"~{secs}s"


def main(argv: list[str]) -> int:
    from kvtui.report import compare_table, ladder_capacity, ladder_tables, print_table

    p = Parser(
        prog="kvtui compare",
        description=(
            "Run the same workload under several policies (or several values of one field, or each "
            "step of a QPS ladder). Columns: ok% (completed of finished), E2E/TTFT/TPOT percentiles "
            "in ms (TPOT over outputs of more than one token), output tokens/s, token and request hit "
            "rates, most/mean requests per node, SLO attainment and goodput (requests/s meeting SLOs)."
        ),
    )
    add_run_options(p, policy=False)
    p.add_argument("--policies", help="comma-separated policy names (default: the scenario's)")
    p.add_argument("--sweep", metavar="KEY=V1,V2", help="one run per value of a scenario field, e.g. workload.arrival.users=1,3,5,10")
    p.add_argument(
        "--ladder",
        nargs="?",
        const="",
        metavar="R1,R2",
        help="one block per arrival-rate step (arrivals/s: sessions, or requests for shared_prefix), open loop, no rate schedule: the given rates, "
        "or the scenario's workload.arrival.ladder",
    )
    p.add_argument("--json", metavar="FILE", help='write {"runs": [...]} here')
    args = p.parse_args(argv)
    if args.sweep and args.ladder is not None:
        raise UsageError("--sweep and --ladder cannot be combined")
    if args.json:
        check_output(args.json, [args.scenario], "result")
    policies = policy_list(args.policies)
    runs: list[dict] = []
    sim = None
    if args.ladder is not None:
        runs, sim, unit = _ladder(args, policies)
        print_table(ladder_tables(runs, unit))
        print(ladder_capacity(runs, unit))
    elif args.sweep:
        key, values = _parse_sweep(args.sweep)
        for value in values:
            for spec in _specs(args, load(args, extra=(f"{key}={value}",)), policies):
                sim, doc = run_once(spec, label=f"{key}={value} {spec.policy}", budget=run_budget(args))
                doc["label"] = f"{key.rsplit('.', 1)[-1]}={value}" + (f" {doc['policy']}" if len(policies) > 1 else "")
                doc["sweep"] = {"key": key, "value": value}
                runs.append(doc)
        print_table(compare_table(runs, label=key.rsplit(".", 1)[-1]))
        _print_pools(runs, key.rsplit(".", 1)[-1])
    else:
        for spec in _specs(args, load(args), policies):
            sim, doc = run_once(spec, budget=run_budget(args))
            runs.append(doc)
        print_table(compare_table(runs))
        _print_pools(runs)
    print_workload_notes(sim)  # the same workload in every run: its notes once
    if args.json:
        write_json(args.json, {"runs": runs})
    return 0
