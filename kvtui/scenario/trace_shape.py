"""What a trace holds, as the cost estimate needs it (kvtui/scenario/cost.py).

A trace cannot be bounded from the scenario file, so `kvtui validate` scans it whole first
(kvtui/sim/workload/) and hands the estimate this summary. It lives beside the estimate, below
the engine, so the scenario layer never reaches up into the readers (tests/test_import_rules.py).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(slots=True)
class TraceShape:
    """What the validating pass learned of a trace's content, for the cost estimate: a trace
    cannot be bounded from the scenario file, but its scan sees every request."""

    requests: int = 0
    longest: int = 0  # prompt + output tokens of the longest request
    prompt_tokens: int = 0
    output_tokens: int = 0
    span_s: float = 0.0  # the last request's time (before time_scale)

    def add(self, rec) -> None:
        """Count one record (a reader's `TraceRequest`)."""
        self.requests += 1
        self.longest = max(self.longest, rec.prompt + rec.output)
        self.prompt_tokens += rec.prompt
        self.output_tokens += rec.output
        self.span_s = max(self.span_s, rec.t)

    def times(self, copies: int) -> TraceShape:
        """The shape of `copies` replays (weka's copies are new conversations)."""
        return TraceShape(self.requests * copies, self.longest, self.prompt_tokens * copies, self.output_tokens * copies, self.span_s)
