"""The shared trace files and a replay of one, for the trace tests (test_traces.py,
test_trace_formats.py): a support module, so that no test module imports another."""

from __future__ import annotations

from pathlib import Path

import numpy as np

import pytest

from kvtui.scenario.model import Arrival, Trace
from kvtui.sim import loop
from kvtui.sim.request import Request
from kvtui.sim.workload.trace import TraceWorkload

TRACES = Path(__file__).resolve().parents[3] / "shared" / "data" / "traces"
MOONCAKE = TRACES / "mooncake" / "conversation_trace.jsonl"
MOONCAKE_SYNTH = TRACES / "mooncake" / "synthetic_trace.jsonl"
AZURE = TRACES / "azure-2023" / "AzureLLMInferenceTrace_conv.csv"
WEKA = TRACES / "weka-agentic"

needs_data = pytest.mark.skipif(not TRACES.is_dir(), reason=f"shared trace data not found at {TRACES}")


def replay(
    fmt: str,
    path,
    *,
    limit=None,
    start_s=0.0,
    time_scale=1.0,
    arrival=Arrival(),
    bs=16,
    delay=1.0,
    until=None,
    reject=lambda req: False,
    copies=1,
    skip_invalid=False,
) -> tuple[TraceWorkload, list[Request]]:
    env = loop.Environment()
    got: list[Request] = []

    def submit(req: Request) -> loop.Event:
        assert req.arrival == env.now
        got.append(req)
        if reject(req):
            ev = env.event()
            ev.succeed("rejected")
            return ev
        return env.timeout(delay, value="completed")

    trace = Trace(
        format=fmt, path=str(path), limit=limit, start_s=start_s, time_scale=time_scale, copies=copies, skip_invalid=skip_invalid
    )
    wl = TraceWorkload(trace, arrival, bs, np.random.default_rng(0))
    wl.start(env, submit)
    env.run(until=until)
    return wl, got
