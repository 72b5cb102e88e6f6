"""The `kvtui` command line (a contract: DESIGN.md section 5).

Exit codes: 0 success, 2 bad input (usage, scenario, trace, WAL), 1 anything else. Bad input is
reported as `file:line: message` lines, never as a Python traceback.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

from kvtui import __version__
from kvtui.errors import InputError

if TYPE_CHECKING:
    from kvtui.scenario import Scenario

COMMANDS = ("run", "compare", "record", "validate", "schema", "wal")

EPILOG = """commands:
  kvtui SCENARIO              open the interactive app
  kvtui run SCENARIO          headless run: summary table, --json result document
  kvtui compare SCENARIO      one row per policy (or per --sweep value), same workload
  kvtui record SCENARIO       render the app after N steps to an SVG
  kvtui validate SCENARIO     check a scenario file: exit 0, or 2 with every problem
  kvtui schema                print the JSON Schema of scenario files
  kvtui wal inspect|verify|dump DIR   look into a metadata store's write-ahead log

`kvtui COMMAND --help` tells more."""


class UsageError(Exception):
    """Bad command-line usage: exit 2 with the message."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str):  # argparse would exit 2 itself; keep one exit path
        raise UsageError(f"{self.prog}: {message}\n{self.format_usage().strip()}")


def _policy_help() -> str:
    from kvtui.scenario.policies import POLICY_NAMES

    return "routing policy: " + ", ".join(POLICY_NAMES) + " (see docs/routing.md)"


def _add_run_options(p: argparse.ArgumentParser, policy: bool = True) -> None:
    p.add_argument("scenario", help="scenario YAML file")
    if policy:
        p.add_argument("--policy", help=_policy_help())
    p.add_argument("--seed", type=int, help="override the scenario's seed")
    p.add_argument(
        "--set",
        dest="overrides",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="override a scenario field, e.g. --set cluster.nodes.0.kv_blocks=64 (repeatable)",
    )


def _load(args) -> "Scenario":
    from kvtui.scenario import load_scenario

    return load_scenario(args.scenario, args.overrides)


def _check_policy(name: str | None) -> None:
    from kvtui.scenario.policies import POLICY_NAMES

    if name is not None and name not in POLICY_NAMES:
        raise UsageError(f"unknown policy {name!r}; known: {', '.join(POLICY_NAMES)}")


def run_once(scenario, seed: int | None = None, policy: str | None = None) -> tuple[object, dict]:
    """Run a scenario to the end; return the simulation and its result document."""
    from kvtui.sim.engine import Simulation
    from kvtui.sim.result import result_document

    t0 = time.perf_counter()
    sim = Simulation(scenario, seed=seed, policy=policy)
    try:
        sim.run()
        wall = time.perf_counter() - t0
        return sim, result_document(sim, wall)
    finally:
        sim.close()


def _write_json(path: str, doc: dict) -> None:
    target = Path(path)
    tmp = target.with_name(target.name + ".tmp")
    try:
        tmp.write_text(json.dumps(doc, indent=2) + "\n")
        tmp.replace(target)
    except OSError as e:
        raise InputError.one(path, None, f"cannot write the result: {e.strerror}") from None


# ---------------------------------------------------------------------- commands
def cmd_run(argv: list[str]) -> int:
    from kvtui.report import print_table, run_table

    p = _Parser(prog="kvtui run", description="Run a scenario headless and print its summary.")
    _add_run_options(p)
    p.add_argument("--json", metavar="FILE", help="write the result document here")
    args = p.parse_args(argv)
    _check_policy(args.policy)
    scenario = _load(args)
    _, doc = run_once(scenario, args.seed, args.policy)
    print_table(run_table(doc))
    if args.json:
        _write_json(args.json, doc)
    return 0


def _parse_sweep(text: str) -> tuple[str, list[str]]:
    key, sep, values = text.partition("=")
    if not sep or not key or not values:
        raise UsageError(f"--sweep wants KEY=V1,V2,...; got {text!r}")
    return key, [v for v in values.split(",") if v != ""]


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


def cmd_compare(argv: list[str]) -> int:
    from kvtui.report import compare_table, ladder_tables, print_table
    from kvtui.scenario import load_scenario

    p = _Parser(
        prog="kvtui compare",
        description=(
            "Run the same workload under several policies (or several values of one field, or each "
            "step of a QPS ladder). Columns: ok% (completed of finished), E2E/TTFT/TPOT percentiles "
            "in ms (TPOT over outputs of more than one token), output tokens/s, token and request hit "
            "rates, most/mean requests per node, SLO attainment and goodput (requests/s meeting SLOs)."
        ),
    )
    _add_run_options(p, policy=False)
    p.add_argument("--policies", help="comma-separated policy names (default: the scenario's)")
    p.add_argument("--sweep", metavar="KEY=V1,V2", help="one run per value of a scenario field, e.g. workload.arrival.users=1,3,5,10")
    p.add_argument(
        "--ladder",
        nargs="?",
        const="",
        metavar="R1,R2",
        help="one block per arrival-rate step (req/s), open loop, no rate schedule: the given rates, "
        "or the scenario's workload.arrival.ladder",
    )
    p.add_argument("--json", metavar="FILE", help='write {"runs": [...]} here')
    args = p.parse_args(argv)
    if args.sweep and args.ladder is not None:
        raise UsageError("--sweep and --ladder cannot be combined")
    policies = [x for x in (args.policies or "").split(",") if x] or [None]
    for name in policies:
        _check_policy(name)
    runs: list[dict] = []
    if args.ladder is not None:
        rates = _ladder_rates(args, _load(args))
        for rate in rates:
            # `schedule=[]` drops any stepwise rate changes, so the step's rate holds throughout.
            scenario = load_scenario(
                args.scenario, [*args.overrides, f"workload.arrival.rate={_yaml_float(rate)}", "workload.arrival.schedule=[]"]
            )
            for name in policies:
                _, doc = run_once(scenario, args.seed, name)
                doc["ladder"] = {"rate": rate}
                runs.append(doc)
        print_table(ladder_tables(runs))
    elif args.sweep:
        key, values = _parse_sweep(args.sweep)
        for value in values:
            scenario = load_scenario(args.scenario, [*args.overrides, f"{key}={value}"])
            for name in policies:
                _, doc = run_once(scenario, args.seed, name)
                doc["label"] = f"{key.rsplit('.', 1)[-1]}={value}" + (f" {doc['policy']}" if len(policies) > 1 else "")
                doc["sweep"] = {"key": key, "value": value}
                runs.append(doc)
        print_table(compare_table(runs, label=key.rsplit(".", 1)[-1]))
    else:
        scenario = _load(args)
        for name in policies:
            _, doc = run_once(scenario, args.seed, name)
            runs.append(doc)
        print_table(compare_table(runs))
    if args.json:
        _write_json(args.json, {"runs": runs})
    return 0


def cmd_validate(argv: list[str]) -> int:
    p = _Parser(prog="kvtui validate", description="Check a scenario file; every problem as file:line: message.")
    p.add_argument("scenario")
    p.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE")
    args = p.parse_args(argv)
    scenario = _load(args)
    if scenario.workload.trace is not None:
        # Read the whole trace now, so a broken line is reported here rather than mid-run.
        import numpy as np

        from kvtui.sim.traces import TraceWorkload

        TraceWorkload(scenario.workload.trace, scenario.workload.arrival, scenario.cluster.block_size, np.random.default_rng(0))
    print(f"{args.scenario}: ok ({scenario.name}: {len(scenario.cluster.nodes)} nodes, policy {scenario.router.policy})")
    return 0


def cmd_schema(argv: list[str]) -> int:
    from kvtui.scenario import scenario_json_schema

    p = _Parser(prog="kvtui schema", description="Print the JSON Schema of scenario files (for editors).")
    p.parse_args(argv)
    print(json.dumps(scenario_json_schema(), indent=2))
    return 0


def cmd_profiles(argv: list[str]) -> int:
    """`kvtui profiles [SCENARIO]`: the hardware and model profiles, with their sources."""
    from kvtui.profiles import GB, catalog

    p = _Parser(prog="kvtui profiles", description="List hardware and model profiles (shipped, plus a scenario's own).")
    p.add_argument("scenario", nargs="?", help="also list the profiles this scenario defines")
    args = p.parse_args(argv)
    hardware, models = catalog()
    if args.scenario:
        from kvtui.scenario import load_scenario

        s = load_scenario(args.scenario)
        hardware, models = catalog(s.hardware, s.models)
    print("hardware    memory  BF16 TFLOPS  HBM TB/s  interconnect            efficiency (compute/memory)")
    for hw in hardware.values():
        link = f"{hw.interconnect} {hw.link_bytes_per_s / GB:g} GB/s" if hw.link_bytes_per_s else hw.interconnect
        print(f"{hw.name:<11} {hw.memory_bytes / GB:>4g} GB  {hw.peak_flops / 1e12:>11g}  {hw.hbm_bytes_per_s / 1e12:>8g}"
              f"  {link:<22}  {hw.compute_efficiency:g}/{hw.memory_efficiency:g}")
        print(f"            source: {hw.source}")
    print("\nmodel          params  layers  KV heads  KV bytes/token (bf16)")
    for m in models.values():
        print(f"{m.name:<14} {m.params / 1e9:>5g}B  {m.layers:>6}  {m.kv_heads:>8}  {m.kv_bytes_per_token:>10,} ({m.kv_bytes_per_token / 1024:g} KiB)")
        print(f"               source: {m.source}")
    return 0


def cmd_wal(argv: list[str]) -> int:
    from kvtui.store.commands import wal_main

    return wal_main(argv)


def cmd_record(argv: list[str]) -> int:
    from kvtui.tui.record import record_main

    return record_main(argv)


def cmd_app(argv: list[str]) -> int:
    p = _Parser(prog="kvtui", description="Open the interactive app on a scenario.", epilog=EPILOG,
                formatter_class=argparse.RawDescriptionHelpFormatter)
    _add_run_options(p)
    p.add_argument("--theme", help="colour theme (see themes/)")
    args = p.parse_args(argv)
    _check_policy(args.policy)
    scenario = _load(args)
    try:
        from kvtui.tui.app import make_app
    except ImportError:
        print(
            "The interactive app is not built yet. Try the headless run:\n"
            f"  kvtui run {args.scenario}",
            file=sys.stderr,
        )
        return 1
    app = make_app(scenario, seed=args.seed, policy=args.policy, theme=args.theme)
    app.run()
    return 0


def _top_parser() -> argparse.ArgumentParser:
    p = _Parser(
        prog="kvtui",
        description="Watch a KV-cache-aware LLM serving control plane at work.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
        usage="kvtui [--version] SCENARIO [options] | kvtui COMMAND ...",
    )
    p.add_argument("--version", action="version", version=f"kvtui {__version__}")
    return p


def dispatch(argv: list[str]) -> int:
    if not argv or argv[0] in ("-h", "--help", "--version"):
        if not argv:
            raise UsageError(_top_parser().format_help().rstrip())
        _top_parser().parse_args(argv)
        return 0
    head, rest = argv[0], argv[1:]
    handlers = {
        "run": cmd_run,
        "compare": cmd_compare,
        "record": cmd_record,
        "validate": cmd_validate,
        "schema": cmd_schema,
        "wal": cmd_wal,
        "profiles": cmd_profiles,
    }
    if head in handlers:
        return handlers[head](rest)
    return cmd_app(argv)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    try:
        return dispatch(argv)
    except SystemExit as e:  # argparse --help / --version
        return int(e.code or 0)
    except UsageError as e:
        print(str(e), file=sys.stderr)
        return 2
    except InputError as e:
        print(e.render(), file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return 0
