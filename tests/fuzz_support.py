"""What the fuzz tests share: the size knob, one in-process CLI call under a time bound, and the
oracle that classifies its outcome.

`KVTUI_FUZZ_SCALE` (default 1: the CI size, a few seconds per test) multiplies the number of
generated inputs; `KVTUI_FUZZ_SCALE=50` is the by-hand campaign of issue 10. At scale 1 the
examples are derandomized (the same inputs every CI run); above it each run draws new ones.
`KVTUI_FUZZ_TALLY=FILE` appends one JSON line per test with the counts per outcome class.

Classes: `ok` (exit 0), `refused` (exit 2 with a message: bad input, or an environment the
user controls), and the failures the tests assert never happen: `traceback` (exit 1, a
Python traceback in the output, or an exception out of main), `hang` (past the time bound),
`oom` (a MemoryError: past the memory cap), `accepted_run_failed` (validate said ok, run did
not finish with exit 0), `refused_without_file` (an exit 2 whose message does not name the
file) and `over_estimate` (an accepted run whose CPU time is past `FACTOR` x its estimate).

Campaign mode (`KVTUI_FUZZ_SCALE` above 1) caps this process's address space at its size now
plus `KVTUI_FUZZ_MEMORY_CAP` bytes (default 4 GiB), so a run that would eat the machine ends
as `oom` instead; the time bound per input is `KVTUI_FUZZ_TIME_BOUND` (default 60 s).
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import re
import resource
import signal
import time
from collections import Counter
from dataclasses import dataclass

from hypothesis import HealthCheck, Phase, settings

from kvtui.scenario.cost import FACTOR  # an accepted run's CPU time stays within this of its estimate

SCALE = max(1, int(os.environ.get("KVTUI_FUZZ_SCALE", "1")))
TIME_BOUND_S = float(os.environ.get("KVTUI_FUZZ_TIME_BOUND", "60"))
CAMPAIGN = SCALE > 1
MEMORY_CAP = int(float(os.environ.get("KVTUI_FUZZ_MEMORY_CAP", str(4 << 30))))
MIN_JUDGED_S = 0.2  # runs shorter than this are not judged against their estimate (timer noise)


def cap_memory() -> None:
    """Campaign mode: cap the address space at what the process uses now plus MEMORY_CAP."""
    if not CAMPAIGN:
        return
    with open("/proc/self/statm") as f:
        used = int(f.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    want = used + MEMORY_CAP
    if soft == resource.RLIM_INFINITY or soft > want:
        resource.setrlimit(resource.RLIMIT_AS, (want, hard))


def fuzz_settings(examples: int) -> settings:
    """Hypothesis settings for `examples` x SCALE inputs, no deadline (time is bounded by alarm).
    A campaign does not shrink (a failing input would be replayed, and counted, many times)."""
    return settings(
        max_examples=examples * SCALE,
        deadline=None,
        derandomize=SCALE == 1,
        database=None,
        suppress_health_check=list(HealthCheck),
        phases=[Phase.explicit, Phase.generate] if CAMPAIGN else list(Phase),
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
    except MemoryError:
        return Outcome(None, out.getvalue(), err.getvalue() + "\nMemoryError", "oom")
    except BaseException as e:  # noqa: BLE001 - anything out of main() is a failure of the boundary
        import traceback

        text = "".join(traceback.format_exception(type(e), e, e.__traceback__))
        return Outcome(None, out.getvalue(), err.getvalue() + "\n" + text, "traceback")
    text = out.getvalue() + err.getvalue()
    if "MemoryError" in text:
        kind = "oom"
    elif code == 1 or "Traceback (most recent call last)" in text or code not in (0, 2):
        kind = "traceback"
    else:
        kind = "ok" if code == 0 else "refused"
    return Outcome(code, out.getvalue(), err.getvalue(), kind)


def names_its_file(out: Outcome, files: tuple[str, ...]) -> bool:
    """Every message line of an exit 2 starts with one of `files` (the scenario, its trace, or
    an override's `--set` source); indented lines continue the one before."""
    lines = [line for line in out.err.splitlines() if line.strip() and not line.startswith(" ")]
    return bool(lines) and all(line.startswith(files) for line in lines)


def estimated_seconds(text: str) -> float:
    """The run time of the first `cost estimate` line in `text` (0 when there is none)."""
    m = re.search(r"~([0-9.,]+) (s|min|h) to run", text)
    if not m:
        return 0.0
    return float(m.group(1).replace(",", "")) * {"s": 1, "min": 60, "h": 3600}[m.group(2)]


def judged_run(argv: list[str], estimate_s: float) -> tuple[Outcome, str]:
    """Run `kvtui run ...` (bounded); its outcome, and the class of the run: `accepted_run_ok`,
    `over_estimate` (CPU time past FACTOR x the estimate), or the outcome's failure."""
    t0 = time.process_time()
    out = call(argv)
    cpu = time.process_time() - t0
    if out.kind != "ok":
        return out, out.kind if out.kind in ("hang", "oom") else "accepted_run_failed"
    if cpu >= MIN_JUDGED_S and cpu > FACTOR * estimate_s:
        out.err += f"\nran {cpu:.2f} s CPU, estimated {estimate_s:.2f} s"
        return out, "over_estimate"
    return out, "accepted_run_ok"


FAILURES = ("traceback", "hang", "oom", "accepted_run_failed", "refused_without_file", "over_estimate")


class Tally:
    """Counts of outcome classes for one test; written to KVTUI_FUZZ_TALLY when set."""

    def __init__(self, name: str):
        self.name = name
        self.counts: Counter[str] = Counter()

    def add(self, kind: str) -> None:
        self.counts[kind] += 1

    def failed(self, kind: str, message: str) -> None:
        """A failure of the oracle: the test fails at once, or (a campaign) it is counted, its
        message kept in $KVTUI_FUZZ_KEEP, and `assert_clean` fails the test at the end."""
        self.add(kind)
        if not CAMPAIGN:
            raise AssertionError(message)
        keep = os.environ.get("KVTUI_FUZZ_KEEP")
        if keep:
            os.makedirs(keep, exist_ok=True)
            with open(os.path.join(keep, f"{self.name}.{kind}.{self.counts[kind]}.txt"), "w", encoding="utf-8") as f:
                f.write(message)

    def assert_clean(self) -> None:
        bad = {k: n for k, n in self.counts.items() if k in FAILURES}
        assert not bad, f"{self.name}: {bad}"

    def write(self) -> None:
        path = os.environ.get("KVTUI_FUZZ_TALLY")
        if path:
            with open(path, "a", encoding="utf-8") as f:
                f.write(json.dumps({"test": self.name, "scale": SCALE, **self.counts}) + "\n")
