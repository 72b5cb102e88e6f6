"""The Ray backend: each run is one Ray task, scheduled, placed and retried by Ray itself.

Only Ray's task API is used (`ray.remote`, `ray.wait`, `ray.get`, `ray.cancel`): Ray decides
where each task runs, and a task whose worker process or node dies is re-executed by Ray
(`max_retries`, 3 by default; docs.ray.io, ray-core/fault_tolerance/tasks, "Retrying failed
tasks": Ray reruns a task whose worker died until it succeeds or the retries run out).
When Ray gives up, `ray.get` raises a `RayError` and the run is reported as lost, not written:
resume redoes it. Application errors never reach Ray: `execute` turns them into error lines.

Each task starts the orphan watchdog the process pool's workers have (kvtui/sweep/watchdog.py):
on the driver's host, a worker whose driver was killed leaves at once instead of finishing its
run until the raylet notices.

`--address` connects to an existing cluster (`ray.init(address=...)`); the workers must see the
scenario files at the same relative paths, which is what `ray job submit --working-dir .` gives
(the job's working directory is every worker's). Without it a local Ray instance with
`num_cpus = workers` is started for the sweep and shut down after it.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator

from kvtui.sweep.grid import RunSpec
from kvtui.sweep.local import Lost
from kvtui.sweep.run import Outcome, execute
from kvtui.sweep.watchdog import driver_here, watch_driver


class RayUnavailable(RuntimeError):
    """Ray is not installed: the CLI says how to get the extra."""


def import_ray():
    try:
        import ray
    except ImportError:
        raise RayUnavailable("--backend ray needs Ray: pip install 'kvtui[ray]'") from None
    return ray


def execute_watched(spec: RunSpec, driver: tuple[str, int]) -> Outcome:
    """The Ray task: `execute`, in a worker that ends with its driver (see the module doc)."""
    watch_driver(driver)
    return execute(spec)


class RayBackend:
    name = "ray"

    def __init__(self, workers: int = 1, address: str | None = None):
        self.ray = import_ray()
        self.workers = max(1, workers)
        self.address = address
        self.owned = False  # this backend called ray.init, so it calls ray.shutdown

    def describe(self) -> str:
        if self.address:
            return f"on the Ray cluster at {self.address}"
        return f"on a local Ray instance with {self.workers} CPUs"

    def _connect(self) -> None:
        ray = self.ray
        if ray.is_initialized():
            return  # the caller (a notebook, a test) already holds a session: use it
        kwargs = dict(include_dashboard=False, log_to_driver=False, logging_level=logging.WARNING)
        if self.address:
            ray.init(address=self.address, **kwargs)  # shutdown only disconnects from it
        else:
            ray.init(num_cpus=self.workers, **kwargs)  # shutdown stops this local instance
        self.owned = True

    def run(self, specs: list[RunSpec], more: Callable[[Outcome], list[RunSpec]] = lambda o: []) -> Iterator[Outcome | Lost]:
        """Outcomes as tasks finish; `more(outcome)` may add tasks (see LocalBackend.run)."""
        ray = self.ray
        self._connect()
        task = ray.remote(num_cpus=1)(execute_watched)
        driver = driver_here()
        refs = {task.remote(spec, driver): spec for spec in specs}
        waiting = list(refs)
        finished = False
        try:
            while waiting:
                done, waiting = ray.wait(waiting, num_returns=1)
                for ref in done:
                    try:
                        outcome = ray.get(ref)
                    except ray.exceptions.RayError as e:
                        yield Lost(refs[ref].index, f"Ray could not finish the task: {type(e).__name__}")
                        continue
                    yield outcome
                    for spec in more(outcome):
                        ref = task.remote(spec, driver)
                        refs[ref] = spec
                        waiting.append(ref)
            finished = True
        finally:
            if not finished:
                for ref in waiting:
                    ray.cancel(ref, force=True)
            if self.owned:
                ray.shutdown()
                self.owned = False
