"""A sweep from start to end: skip what is finished, hand the rest to a backend, write each
completion to the journal at once and to the results file in grid order, count progress.

With a `LadderPlan` (`--until-saturated`) the runs are handed over step by step: a ladder's
next step starts when its step's seeds have finished and were not saturated; the steps past
saturation are never run and have no line (the file is the grid order without them)."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from kvtui.sweep.grid import RunSpec, key_text
from kvtui.sweep.ladder import LadderPlan
from kvtui.sweep.local import Lost
from kvtui.sweep.run import Outcome
from kvtui.sweep.output import Journal, OrderedWriter, finished_runs, journal_path, read_journal, read_results


@dataclass
class Progress:
    total: int
    skipped: int = 0  # finished before this invocation (resume)
    done: int = 0  # finished now, ok or error
    failed: int = 0  # of done, with status error
    lost: list[Lost] = field(default_factory=list)
    saturated: int = 0  # never run: past the step where their ladder saturated

    @property
    def remaining(self) -> int:
        return self.total - self.skipped - self.done - len(self.lost) - self.saturated


@dataclass
class SweepResult:
    progress: Progress
    written: int  # lines in the results file (a grid-order prefix)
    interrupted: bool = False


def start_fresh(out: Path) -> None:
    """`--fresh`: forget an earlier sweep into the same file."""
    read_results(out)  # refuse files that are not this sweep's before anything is deleted
    read_journal(journal_path(out))
    for p in (out, journal_path(out)):
        p.unlink(missing_ok=True)


def _result(line: str) -> dict | None:
    """A line's result document, None for a failed run (what a LadderPlan decides on)."""
    obj = json.loads(line)
    return obj["result"] if obj["status"] == "ok" else None


def run_sweep(
    specs: list[RunSpec],
    backend,
    out: str | Path,
    retry_failed: bool = False,
    on_progress: Callable[[Progress], None] = lambda p: None,
    plan: LadderPlan | None = None,
) -> SweepResult:
    out = Path(out)
    known = finished_runs(out, retry_failed)
    lines = {s.index: known[key_text(s.key())] for s in specs if key_text(s.key()) in known}
    todo = [s for s in specs if s.index not in lines]
    if plan is not None:
        todo = plan.start({i: _result(line) for i, line in lines.items()})
    progress = Progress(total=len(specs), skipped=len(lines))
    writer = OrderedWriter(out, specs, known)
    journal = Journal(journal_path(out), backend.name)

    def skip(indices: list[int]) -> None:
        fresh = writer.skip(indices)
        progress.saturated += fresh

    def more(outcome: Outcome) -> list[RunSpec]:
        assert plan is not None
        started, skipped = plan.finished(outcome.index, _result(outcome.line))
        skip(skipped)
        return started

    if plan is not None:
        skip(plan.skipped)
    on_progress(progress)
    interrupted = False
    outcomes: Iterator[Outcome | Lost]
    if not todo:
        outcomes = iter(())
    else:
        outcomes = backend.run(todo) if plan is None else backend.run(todo, more)
    try:
        for outcome in outcomes:
            if isinstance(outcome, Lost):
                progress.lost.append(outcome)
            else:
                journal.record(outcome.line, outcome.wall_time_s, outcome.worker, outcome.cpu_s)
                writer.add(outcome.index, outcome.line)
                progress.done += 1
                progress.failed += 0 if outcome.ok else 1
            on_progress(progress)
    except KeyboardInterrupt:
        interrupted = True
    finally:
        close = getattr(outcomes, "close", None)
        if close is not None:
            close()  # a generator backend stops its workers in its own `finally`
        writer.close()
        journal.close()
    return SweepResult(progress, writer.next, interrupted)


def load_lines(out: str | Path) -> list[dict]:
    """The results file's lines as objects (for the summary and the plot)."""
    return [json.loads(line) for line in read_results(out)]
