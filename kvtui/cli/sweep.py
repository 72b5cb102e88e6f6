"""`kvtui sweep SCENARIO... --grid KEY=V1,V2 ...`: many runs at once, to JSON Lines, resumable.

Parsing and printing only; the sweep itself is kvtui.sweep (grid, backends, output, summary).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from kvtui.cli.common import Parser, UsageError, add_run_options, name_list, policy_list

DESCRIPTION = """\
Run the cartesian product of scenarios, --grid values, --policies and --seeds; each run is the
run `kvtui run` makes. Lines go to --out in grid order (scenario, grid values in the order given,
policy, seed), byte-identical whatever the backend and worker count; the result document's
wall_time_s moves to the journal beside it (OUT.journal.jsonl), with the worker that ran it.
Seeds are S, S+1, ..., S+N-1 where S is the scenario's seed (or --seed). Rerunning the same
command resumes: finished runs (from OUT and its journal) are kept, failed runs too unless
--retry-failed. The summary shows each cell's mean and 95 % Student-t interval over its seeds.
--ladder runs each scenario's own workload.arrival.ladder (a flat rate per step);
--until-saturated stops each ladder (scenario, policy) after its first saturated step: output
tokens/s rose by less than half the rate's rise, NTPOT p50 more than doubled, or the drain
after the send window took more than half the window (docs/sweeps.md)."""


def _parser() -> Parser:
    p = Parser(prog="kvtui sweep", description=DESCRIPTION)
    add_run_options(p, policy=False, many=True)
    p.add_argument("--grid", action="append", default=[], metavar="KEY=V1,V2", help="one grid axis (repeatable); e.g. workload.arrival.rate=1,2,4")
    p.add_argument("--policies", help="comma-separated routing policies, one run each (default: the scenario's)")
    p.add_argument("--ladder", action="store_true", help="each scenario's own workload.arrival.ladder as a rate axis (flat rate per step)")
    p.add_argument("--until-saturated", action="store_true", help="with --ladder: stop each ladder after its first saturated step")
    p.add_argument("--seeds", type=int, default=1, metavar="N", help="N seeds per cell: S, S+1, ..., S+N-1 (default 1)")
    p.add_argument("--out", required=True, metavar="FILE", help="results: FILE.jsonl (JSON Lines), or FILE.csv (written from FILE.jsonl at the end)")
    p.add_argument("--workers", type=int, default=os.cpu_count() or 1, metavar="K", help="parallel runs (default: the CPU count)")
    p.add_argument("--backend", choices=("local", "ray"), default="local", help="local process pool (default) or Ray tasks")
    p.add_argument("--address", help="with --backend ray: an existing cluster (e.g. auto, ray://host:10001); default starts a local one")
    p.add_argument("--fresh", action="store_true", help="start over: delete OUT and its journal first")
    p.add_argument("--retry-failed", action="store_true", help="on resume, run the failed runs again")
    p.add_argument("--metrics", help="summary columns: result paths, e.g. ttft.p95,e2e.p95,token_hit_rate")
    return p


def _paths(out: str) -> tuple[Path, Path | None]:
    """(the JSON Lines file, the CSV to write at the end or None)."""
    p = Path(out)
    suffix = p.suffix.lower()
    if suffix == ".parquet":
        raise UsageError("--out: Parquet would need a dependency kvtui does not take; use .jsonl or .csv")
    if suffix == ".csv":
        return p.with_suffix(".jsonl"), p
    return p, None


def _check_targets(jsonl: Path, csv_out: Path | None, scenarios: list[str]) -> None:
    """Before any run: every file the sweep writes is a regular file (or new) in an existing
    directory, none is a scenario it reads, and the results and journal already there are this
    sweep's own (read_results refuses anything else, unread if it is not a regular file)."""
    from kvtui.files import check_output
    from kvtui.sweep.output import journal_path, read_journal, read_results

    for target, what in ((jsonl, "sweep results"), (journal_path(jsonl), "sweep journal"), (csv_out, "sweep CSV")):
        if target is not None:
            check_output(str(target), scenarios, what)
    read_results(jsonl)
    read_journal(journal_path(jsonl))


def _backend(args):
    from kvtui.sweep.local import LocalBackend
    from kvtui.sweep.raytasks import RayBackend, RayUnavailable

    if args.workers < 1:
        raise UsageError(f"--workers must be at least 1; got {args.workers}")
    if args.backend == "local":
        if args.address:
            raise UsageError("--address needs --backend ray")
        return LocalBackend(args.workers)
    try:
        return RayBackend(args.workers, args.address)
    except RayUnavailable as e:
        raise UsageError(str(e)) from None


def main(argv: list[str]) -> int:
    from kvtui.sweep.driver import load_lines, run_sweep, start_fresh
    from kvtui.sweep.grid import GridError, expand, parse_axes, shadowed_rate

    args = _parser().parse_args(argv)
    policies = policy_list(args.policies)
    metrics = name_list(args.metrics, "--metrics")
    jsonl, csv_out = _paths(args.out)
    _check_targets(jsonl, csv_out, args.scenarios)
    backend = _backend(args)
    if args.until_saturated and not args.ladder:
        raise UsageError("--until-saturated stops a --ladder; give --ladder too")
    try:
        axes = parse_axes(args.grid)
        specs = expand(args.scenarios, axes, policies, args.seeds, args.overrides, args.seed, args.force, args.ladder)
        plan = _plan(args, specs)
    except GridError as e:
        raise UsageError(str(e)) from None
    for path in args.scenarios:
        note = shadowed_rate(path, args.overrides, axes)
        if note:
            print(note, file=sys.stderr)
    if args.fresh:
        start_fresh(jsonl)
    cells = len(specs) // max(1, args.seeds)
    print(f"sweep: {len(specs)} runs ({cells} cells x {args.seeds} seeds) {backend.describe()} -> {jsonl}", file=sys.stderr)
    with _progress_bar() as bar:
        result = run_sweep(specs, backend, jsonl, args.retry_failed, bar.update, plan)
    if plan is not None:
        for spec, why in plan.reasons():
            print(f"sweep: {spec.scenario} {spec.policy or ''} stopped, {why}".replace("  ", " "), file=sys.stderr)
    lines = load_lines(jsonl)
    if csv_out is not None:
        from kvtui.sweep.output import read_results, write_csv

        write_csv(csv_out, read_results(jsonl))
    _print_summary(lines, metrics)
    return _finish(result, jsonl, csv_out)


def _plan(args, specs):
    """The ladders' stop rule (`--until-saturated`), or None: every run of the grid runs."""
    if not args.until_saturated:
        return None
    from kvtui.sweep.grid import GridError, ladder_rates
    from kvtui.sweep.ladder import LadderPlan, Saturation

    windows = {}
    for path in dict.fromkeys(s.scenario for s in specs):
        window = ladder_rates(path, args.overrides)[1]
        if window is None:  # a step is a send window: the drain is measured from its end
            raise GridError(f"--until-saturated: {path} sets no workload.duration_s (each step sends for that long)")
        windows[path] = window
    return LadderPlan(specs, windows, Saturation())


def _finish(result, jsonl: Path, csv_out: Path | None) -> int:
    pr = result.progress
    where = f"{jsonl}" + (f" and {csv_out}" if csv_out else "")
    past = f", {pr.saturated} past saturation not run" if pr.saturated else ""
    print(
        f"sweep: {pr.done} runs done now ({pr.failed} failed), {pr.skipped} done before{past}; "
        f"{result.written - pr.saturated} of {pr.total - pr.saturated} lines in {where}",
        file=sys.stderr,
    )
    if result.interrupted:
        print("sweep: interrupted; run the same command again to resume (finished runs are kept)", file=sys.stderr)
        return 130
    if pr.lost:
        print(f"sweep: {len(pr.lost)} runs lost ({pr.lost[0].reason}); run the same command again to redo them", file=sys.stderr)
        return 1
    return 0


def _print_summary(lines: list[dict], metrics: list[str] | None) -> None:
    from kvtui.report import print_table
    from kvtui.sweep.fields import FieldError
    from kvtui.sweep.summary import DEFAULT_METRICS, summarise

    if not lines:
        return
    names = metrics or list(DEFAULT_METRICS)
    try:
        resolved, cells = summarise(lines, names)
    except FieldError as e:
        raise UsageError(f"--metrics: {e}") from None
    print_table(summary_table(resolved, cells))


def _is_share(metric: str, cells) -> bool:
    """Rates and attainments in [0, 1] read better as percentages."""
    last = metric.rsplit(".", 1)[-1]
    values = [c.metrics[metric].mean for c in cells if c.metrics.get(metric) is not None]
    return (last.endswith("rate") or last == "attainment") and bool(values) and all(0 <= v <= 1 for v in values)


def _cell_text(e, scale: float = 1.0) -> str:
    """mean ± half-width, the half-width to two significant figures and the mean to match."""
    import math

    from kvtui.sweep.chart import fmt

    if e is None:
        return "—"
    mean = e.mean * scale
    if e.half_width is None:
        return fmt(mean)
    hw = e.half_width * scale
    if hw == 0:
        return f"{fmt(mean)} ± 0"
    decimals = min(4, max(0, 1 - math.floor(math.log10(hw))))
    return f"{mean:,.{decimals}f} ± {hw:,.{decimals}f}"


def summary_table(metrics: list[str], cells):
    """Rich table: one row per cell, label columns, runs (failed), then mean ± 95 % CI; the
    first failure's message on a line under it."""
    from rich import box
    from rich.console import Group
    from rich.table import Table
    from rich.text import Text

    title = "sweep · mean ± 95 % CI over seeds · latencies in ms"
    # min_width: a table of few columns (every run failed, or one --metrics) wrapped its title
    # over three lines of 25 columns
    t = Table(title=title, box=box.SIMPLE_HEAD, header_style="bold", title_justify="left", min_width=len(title))
    label_cols = list(dict.fromkeys(k for c in cells for k in c.label))
    for k in label_cols:
        t.add_column(k.rsplit(".", 1)[-1] if k != "router.policy" else "policy", no_wrap=True)
    t.add_column("runs", justify="right")
    scales = {m: 100.0 if _is_share(m, cells) else 1.0 for m in metrics}
    for m in metrics:
        name = ".".join(m.split(".")[-2:]) if m.startswith("latency_ms.") else m.rsplit(".", 1)[-1]
        t.add_column(name + (" %" if scales[m] == 100.0 else ""), justify="right", no_wrap=True)
    for c in cells:
        runs = f"{c.runs}" + (f" ({c.failed} failed)" if c.failed else "")
        t.add_row(*(c.label.get(k, "") for k in label_cols), runs, *(_cell_text(c.metrics.get(m), scales[m]) for m in metrics))
    errors = [c for c in cells if c.error]
    if not errors:
        return t
    # under the table, not its caption: a caption wraps at the table's width, a word a line
    return Group(t, Text(f"first failure: {errors[0].error.splitlines()[0]}"))


class _NoBar:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    def update(self, progress) -> None:
        pass


class _Bar:
    """Runs done of total, failures and ETA on stderr (Rich), only when stderr is a terminal."""

    def __enter__(self):
        from rich.console import Console
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

        self.progress = Progress(
            TextColumn("sweep"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("{task.fields[failed]} failed"),
            TimeElapsedColumn(),
            TextColumn("ETA"),
            TimeRemainingColumn(),
            console=Console(stderr=True),
        )
        self.progress.__enter__()
        self.task = None
        return self

    def __exit__(self, *exc):
        return self.progress.__exit__(*exc)

    def update(self, pr) -> None:
        if self.task is None:
            # starting at the runs finished earlier records no speed sample: ETA is this pace
            self.task = self.progress.add_task("sweep", total=pr.total, completed=pr.skipped, failed=0)
        self.progress.update(self.task, completed=pr.total - pr.remaining, failed=pr.failed)  # steps past saturation count as done


def _progress_bar():
    return _Bar() if sys.stderr.isatty() else _NoBar()
