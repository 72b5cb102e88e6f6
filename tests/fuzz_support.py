"""What the fuzz tests share: the size knob, one in-process CLI call under a time bound, and the
oracle that classifies its outcome.

`KVTUI_FUZZ_SCALE` (default 1: the CI size, a few seconds per test) multiplies the number of
generated inputs; `KVTUI_FUZZ_SCALE=50` is the by-hand campaign of issue 10. At scale 1 the
examples are derandomized (the same inputs every CI run); above it each run draws new ones.
`KVTUI_FUZZ_TALLY=FILE` appends one JSON line per test with the counts per outcome class.

Classes: `ok` (exit 0), `refused` (exit 2 with a message: bad input, or an environment the
user controls), and the failures the tests assert never happen: `traceback` (exit 1, a
Python traceback in the output, or an exception out of main), `hang` (past the time bound),
and `accepted_run_failed` (validate said ok, run did not finish with exit 0).
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import signal
from collections import Counter
from dataclasses import dataclass

from hypothesis import HealthCheck, settings

SCALE = max(1, int(os.environ.get("KVTUI_FUZZ_SCALE", "1")))
TIME_BOUND_S = float(os.environ.get("KVTUI_FUZZ_TIME_BOUND", "60"))


def fuzz_settings(examples: int) -> settings:
    """Hypothesis settings for `examples` x SCALE inputs, no deadline (time is bounded by alarm)."""
    return settings(
        max_examples=examples * SCALE,
        deadline=None,
        derandomize=SCALE == 1,
        database=None,
        suppress_health_check=list(HealthCheck),
    )


class Hang(BaseException):
    """The call ran past the time bound (a BaseException, so that main()'s boundary, which
    maps every Exception, lets it through)."""


@contextlib.contextmanager
def time_bound(seconds: float = TIME_BOUND_S):
    """Raise Hang in the main thread after `seconds` of wall time (SIGALRM)."""

    def fire(signum, frame):
        raise Hang(f"still running after {seconds:g} s")

    old = signal.signal(signal.SIGALRM, fire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


@dataclass
class Outcome:
    code: int | None
    out: str
    err: str
    kind: str  # ok | refused | traceback | hang

    def describe(self) -> str:
        return f"{self.kind} (exit {self.code}):\n{self.err[-2000:]}"


def call(argv: list[str], seconds: float = TIME_BOUND_S) -> Outcome:
    """`kvtui.cli.main(argv)` in this process, its output captured and its time bounded."""
    from kvtui.cli import main

    out, err = io.StringIO(), io.StringIO()
    try:
        with time_bound(seconds), contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = main(argv)
    except Hang as e:
        return Outcome(None, out.getvalue(), err.getvalue() + f"\n{e}", "hang")
    except BaseException as e:  # noqa: BLE001 - anything out of main() is a failure of the boundary
        import traceback

        text = "".join(traceback.format_exception(type(e), e, e.__traceback__))
        return Outcome(None, out.getvalue(), err.getvalue() + "\n" + text, "traceback")
    text = out.getvalue() + err.getvalue()
    if code == 1 or "Traceback (most recent call last)" in text or code not in (0, 2):
        kind = "traceback"
    else:
        kind = "ok" if code == 0 else "refused"
    return Outcome(code, out.getvalue(), err.getvalue(), kind)


class Tally:
    """Counts of outcome classes for one test; written to KVTUI_FUZZ_TALLY when set."""

    def __init__(self, name: str):
        self.name = name
        self.counts: Counter[str] = Counter()

    def add(self, kind: str) -> None:
        self.counts[kind] += 1

    def write(self) -> None:
        path = os.environ.get("KVTUI_FUZZ_TALLY")
        if path:
            with open(path, "a", encoding="utf-8") as f:
                f.write(json.dumps({"test": self.name, "scale": SCALE, **self.counts}) + "\n")
