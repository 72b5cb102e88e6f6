"""A sweep from start to end: skip what is finished, hand the rest to a backend, write each
completion to the journal at once and to the results file in grid order, count progress."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from kvtui.sweep.grid import RunSpec, key_text
from kvtui.sweep.local import Lost
from kvtui.sweep.output import Journal, OrderedWriter, finished_runs, journal_path, read_journal, read_results


@dataclass
class Progress:
    total: int
    skipped: int = 0  # finished before this invocation (resume)
    done: int = 0  # finished now, ok or error
    failed: int = 0  # of done, with status error
    lost: list[Lost] = field(default_factory=list)

    @property
    def remaining(self) -> int:
        return self.total - self.skipped - self.done - len(self.lost)


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


def run_sweep(
    specs: list[RunSpec],
    backend,
    out: str | Path,
    retry_failed: bool = False,
    on_progress: Callable[[Progress], None] = lambda p: None,
) -> SweepResult:
    out = Path(out)
    known = finished_runs(out, retry_failed)
    todo = [s for s in specs if key_text(s.key()) not in known]
    progress = Progress(total=len(specs), skipped=len(specs) - len(todo))
    writer = OrderedWriter(out, specs, known)
    journal = Journal(journal_path(out), backend.name)
    on_progress(progress)
    interrupted = False
    outcomes = backend.run(todo) if todo else iter(())
    try:
        for outcome in outcomes:
            if isinstance(outcome, Lost):
                progress.lost.append(outcome)
            else:
                journal.record(outcome.line, outcome.wall_time_s, outcome.worker)
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
