"""A sweep worker ends with its driver: the orphan watchdog both backends start in each worker.

A driver killed by SIGKILL or SIGTERM runs no `finally`, so it cannot stop its workers. A process
pool's workers would wait on their call queue forever (issue 25 found four idle ones); their
parent is the forkserver, not the driver, so a parent-death signal would not fire. Ray kills a
dead driver's tasks by itself, but only once its raylet notices (3-4 s measured on a local
instance, with the simulation running on meanwhile). So each worker polls the driver's pid and
leaves when it is gone. Only on the driver's host: a pid means nothing on another machine (a
remote Ray node relies on Ray's own clean-up of the job).
"""

from __future__ import annotations

import os
import socket
import threading
import time

WATCH_INTERVAL_S = 0.5  # how often a worker checks that its driver is still there

_watching: set[int] = set()  # drivers this process watches already (a Ray worker runs many tasks)


def driver_here() -> tuple[str, int]:
    """What a worker needs to watch this process: its host and pid."""
    return socket.gethostname(), os.getpid()


def watch_driver(driver: tuple[str, int]) -> None:
    """Start watching `driver` (see `driver_here`) from this worker, once per process."""
    host, pid = driver
    if host != socket.gethostname() or pid in _watching:
        return
    _watching.add(pid)
    threading.Thread(target=_watch, args=(pid,), daemon=True, name="kvtui-watch-driver").start()


def _watch(pid: int) -> None:
    while True:
        time.sleep(WATCH_INTERVAL_S)
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            os._exit(0)
        except PermissionError:  # its pid now belongs to another user's process: gone too
            os._exit(0)
