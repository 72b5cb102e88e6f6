"""Each scenario's own QPS ladder as a sweep axis, and the blog's stop: no step past saturation.

`kvtui sweep --ladder` gives every scenario the rates of its own `workload.arrival.ladder`
(workload C-small climbs 1..15 req/s, ShareGPT 50..600: one `--grid` list cannot serve both),
each step a flat rate (`workload.arrival.schedule=[]`, as `kvtui compare --ladder` runs it).
`--until-saturated` runs a ladder the way the predicted-latency blog (seed 002) ran its
benchmarks: "the QPS is increased until throughput saturation occurs and queues begin to form",
so the steps after the first saturated one are not run. They are the dearest (a step far past
saturation simulates up to ten times its send window while the backlog drains).

**When a step is saturated.** A ladder is one (scenario, `--set`, other grid values, policy);
its steps are decided in order, each on the mean over the step's seeds, and step k is
saturated when any of these holds:

- *throughput stopped following the load*: output tokens/s (over the whole run, drain
  included) rose by less than `gain` (default 0.5) times the rate's relative rise over step
  k - 1. Below saturation output tokens/s rises in proportion to the rate (ratio ~1); a
  saturated cluster cannot produce more however many requests arrive (ratio ~0);
- *queues began to form*: NTPOT p50 (E2E / output tokens, the blog's metric) more than
  `latency` (default 2) times the step before's. Below saturation NTPOT is the decode step plus
  a prefill share and rises slowly with the batch; once requests wait for a batch slot it jumps
  (A-small, before issue 31's scheduler: 10 ms at 20 req/s, 27 ms at 25);
- *queues grew*: the drain, from the end of the send window (`workload.duration_s`) to the
  end of the run, lasted more than `drain` (default 0.5) times the window. Below saturation
  the drain is about one request's E2E (A-small: ~10 s after a 100 s send); a queue that
  grew during the send takes as long to clear as it took to build.

A step with a failed run stops its ladder too (nothing to decide on). The decision reads only
the results, which are the same on every backend and worker count, so the set of runs, and so
the results file, is too; on resume the decisions are replayed from the finished runs.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from kvtui.sweep.grid import RATE, RunSpec

GAIN = 0.5
LATENCY = 2.0
DRAIN = 0.5


@dataclass(frozen=True)
class Saturation:
    """The stop rule (see the module docstring)."""

    gain: float = GAIN
    latency: float = LATENCY
    drain: float = DRAIN

    def why(self, step: "Step", before: "Step | None", window_s: float) -> str | None:
        """Why step is saturated, or None when it is not."""
        if step.drain_s > self.drain * window_s:
            return f"queues grew: {step.drain_s:.0f} s to drain after a {window_s:g} s send"
        if before is None or before.tokens_per_s <= 0:
            return None
        if before.ntpot_ms > 0 and step.ntpot_ms > self.latency * before.ntpot_ms:
            return f"NTPOT p50 {step.ntpot_ms:.1f} ms, over {self.latency:g} x the {before.ntpot_ms:.1f} ms before"
        rate_rise = step.rate / before.rate - 1.0
        tps_rise = step.tokens_per_s / before.tokens_per_s - 1.0
        if rate_rise > 0 and tps_rise < self.gain * rate_rise:
            return (f"output tok/s rose {tps_rise:+.0%} for a {rate_rise:+.0%} rate "
                    f"(under {self.gain:g} x the rate's rise)")
        return None


@dataclass(frozen=True)
class Step:
    """One step's figures, the mean over its seeds."""

    rate: float
    tokens_per_s: float
    drain_s: float
    ntpot_ms: float = 0.0  # NTPOT p50 (0: not in the results, a file from before NTPOT)


def step_of(rate: float, results: list[dict], window_s: float) -> Step:
    n = len(results)
    tps = sum(float(r["throughput"]["output_tokens_per_s"]) for r in results) / n
    drain = sum(max(0.0, float(r["sim_time_s"]) - window_s) for r in results) / n
    ntpot = sum(float(r.get("latency_ms", {}).get("ntpot", {}).get("p50", 0.0)) for r in results) / n
    return Step(rate, tps, drain, ntpot)


@dataclass
class Ladder:
    """One ladder's steps (each a list of run indices, its seeds) and where it has got to."""

    window_s: float
    rates: list[float]
    steps: list[list[int]]
    at: int = 0  # the step being run
    results: dict[int, dict | None] = field(default_factory=dict)  # index -> result (None: failed)
    before: Step | None = None
    stopped: str | None = None  # why the ladder stopped early

    def step_done(self) -> bool:
        return all(i in self.results for i in self.steps[self.at])


class LadderPlan:
    """Which runs of a ladder sweep to start, and which never to run (past saturation).

    `start(known)` takes the finished runs (resume) and returns the runs to start now; every
    `finished(index, line)` returns (runs to start, runs skipped). Runs are given in grid
    order; the first step of every ladder is started at once."""

    def __init__(self, specs: list[RunSpec], windows: dict[str, float], rule: Saturation | None):
        self.specs = {s.index: s for s in specs}
        self.rule = rule
        self.ladders: dict[str, Ladder] = {}
        self.of: dict[int, Ladder] = {}
        for spec in specs:
            grid = dict(spec.grid)
            key = repr((spec.scenario, spec.overrides, tuple((k, v) for k, v in spec.grid if k != RATE), spec.policy))
            ladder = self.ladders.get(key)
            if ladder is None:
                ladder = self.ladders[key] = Ladder(windows[spec.scenario], [], [])
            rate = float(grid[RATE])
            if not ladder.rates or ladder.rates[-1] != rate:
                ladder.rates.append(rate)
                ladder.steps.append([])
            ladder.steps[-1].append(spec.index)
            self.of[spec.index] = ladder
        self.skipped: list[int] = []

    def start(self, known: dict[int, dict | None]) -> list[RunSpec]:
        """The runs to start, given the finished ones (index -> result, None for a failure)."""
        todo: list[int] = []
        for ladder in self.ladders.values():
            ladder.results.update({i: known[i] for s in ladder.steps for i in s if i in known})
            todo += self._advance(ladder)
        return [self.specs[i] for i in sorted(todo)]

    def finished(self, index: int, result: dict | None) -> tuple[list[RunSpec], list[int]]:
        ladder = self.of[index]
        ladder.results[index] = result
        before = len(self.skipped)
        todo = self._advance(ladder) if ladder.step_done() else []
        return [self.specs[i] for i in todo], self.skipped[before:]

    def _advance(self, ladder: Ladder) -> list[int]:
        """Decide every finished step from where the ladder is; the runs of its next step to start."""
        while ladder.stopped is None and ladder.step_done():
            self._decide(ladder)
            if ladder.stopped is None:
                if ladder.at + 1 >= len(ladder.steps):
                    ladder.stopped = "top of the ladder"
                    return []
                ladder.at += 1
        if ladder.stopped is not None:
            return []
        return [i for i in ladder.steps[ladder.at] if i not in ladder.results]

    def _decide(self, ladder: Ladder) -> None:
        results = [ladder.results[i] for i in ladder.steps[ladder.at]]
        rate = ladder.rates[ladder.at]
        if any(r is None for r in results):
            ladder.stopped = f"a run failed at {rate:g}/s"
        elif self.rule is not None:
            step = step_of(rate, [r for r in results if r is not None], ladder.window_s)
            why = self.rule.why(step, ladder.before, ladder.window_s)
            ladder.before = step
            if why is not None:
                ladder.stopped = f"saturated at {rate:g}/s: {why}"
        if ladder.stopped is not None:
            rest = [i for s in ladder.steps[ladder.at + 1:] for i in s]
            self.skipped += rest

    def reasons(self) -> Iterable[tuple[RunSpec, str]]:
        """(the ladder's first run, why it stopped) for every ladder stopped before its top."""
        for ladder in self.ladders.values():
            if ladder.stopped and ladder.stopped != "top of the ladder":
                yield self.specs[ladder.steps[0][0]], ladder.stopped
