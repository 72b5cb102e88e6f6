"""The local backend: runs in this process (`--workers 1`) or on a process pool (`--workers K`).

The pool is the standard library's `ProcessPoolExecutor` with the `forkserver` start method
(workers start from a clean interpreter, not a fork of a process that may be running a progress
bar thread). Workers ignore SIGINT so that Ctrl-C reaches only the driver, which cancels what
has not started and stops the workers at once: a run in progress is not finished, so resume
redoes it. A worker killed from outside breaks the pool (that is how `concurrent.futures`
reports it); the runs it had not returned are reported as lost, never written as results.
"""

from __future__ import annotations

import multiprocessing
import signal
from collections import deque
from collections.abc import Callable, Iterator
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass

from kvtui.sweep.grid import RunSpec
from kvtui.sweep.run import Outcome, execute
from kvtui.sweep.watchdog import driver_here, watch_driver


@dataclass(frozen=True)
class Lost:
    """A run the backend could not finish (its worker or node died): not a result, redone on resume."""

    index: int
    reason: str


def _start_worker(driver: tuple[str, int]) -> None:
    """Pool initializer: Ctrl-C is the driver's to handle, and a worker ends with its driver."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    watch_driver(driver)


def _stop(pool: ProcessPoolExecutor) -> None:
    """Cancel queued runs and end the workers now rather than after their current run."""
    pool.shutdown(wait=False, cancel_futures=True)
    terminate = getattr(pool, "terminate_workers", None)  # Python 3.14+
    if terminate is not None:
        terminate()
        return
    for proc in list((getattr(pool, "_processes", None) or {}).values()):
        proc.terminate()


class LocalBackend:
    name = "local"

    def __init__(self, workers: int = 1):
        self.workers = max(1, workers)

    def describe(self) -> str:
        return "in this process" if self.workers == 1 else f"on {self.workers} local worker processes"

    def run(self, specs: list[RunSpec], more: Callable[[Outcome], list[RunSpec]] = lambda o: []) -> Iterator[Outcome | Lost]:
        """Every run's outcome as it finishes; after each, `more(outcome)` may add runs (a
        ladder's next step), which start as soon as a worker is free."""
        if self.workers == 1:
            queue = deque(specs)
            while queue:
                outcome = execute(queue.popleft())
                yield outcome
                queue.extend(more(outcome))
            return
        yield from self._pool(specs, more)

    def _pool(self, specs: list[RunSpec], more: Callable[[Outcome], list[RunSpec]]) -> Iterator[Outcome | Lost]:
        ctx = multiprocessing.get_context("forkserver")
        pool = ProcessPoolExecutor(max_workers=self.workers, mp_context=ctx, initializer=_start_worker,
                                   initargs=(driver_here(),))
        finished = False
        try:
            pending: dict[Future, RunSpec] = {pool.submit(execute, spec): spec for spec in specs}
            while pending:
                done, _ = wait(pending, return_when=FIRST_COMPLETED)
                for fut in done:
                    spec = pending.pop(fut)
                    try:
                        outcome = fut.result()
                    except BrokenProcessPool as e:
                        yield Lost(spec.index, f"a worker process died: {e}")
                        continue
                    yield outcome
                    pending.update({pool.submit(execute, s): s for s in more(outcome)})
            finished = True
        finally:
            if finished:
                pool.shutdown(wait=True)
            else:
                _stop(pool)
