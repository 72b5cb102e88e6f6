"""The API server's two costs in the latency model: a fixed delay per request before the
scheduler sees it (`request_overhead_ms`) and an output lag (`output_lag_steps`: a token reaches
the client that many times the duration of the iteration that computed it later). Both add to what
the client measures (TTFT, E2E) and leave the engine's work alone."""

from __future__ import annotations

import pytest

from kvtui.events import BatchStepped, RequestCompleted
from kvtui.run import run_to_end
from kvtui.scenario.loader import load_scenario

SCENARIO = """
seed: 1
cluster: {nodes: [{name: n0}]}
router: {policy: round_robin}
workload:
  arrival: {process: poisson, rate: 0.5}
  requests: 3
  groups: [{question_tokens: 400, output_tokens: 50}]
"""


def run(tmp_path, *sets: str):
    f = tmp_path / "s.yaml"
    f.write_text(SCENARIO)
    done, steps = [], []
    run_to_end(load_scenario(f, list(sets)), on_event=lambda ev: (done if isinstance(ev, RequestCompleted) else steps).append(ev),
               event_types=(RequestCompleted, BatchStepped))
    return done, steps


def test_the_request_overhead_delays_first_token_and_end_alike(tmp_path):
    base, _ = run(tmp_path)
    late, _ = run(tmp_path, "latency.request_overhead_ms=7")
    for a, b in zip(base, late):
        assert b.ttft == pytest.approx(a.ttft + 0.007) and b.e2e == pytest.approx(a.e2e + 0.007)
        assert b.tpot == pytest.approx(a.tpot)


def test_the_output_lag_delays_each_token_by_steps_of_the_iteration_that_made_it(tmp_path):
    base, steps = run(tmp_path)
    lagged, _ = run(tmp_path, "latency.output_lag_steps=2")
    prefill = [s.duration for s in steps if s.prefill_tokens]
    last = [s.duration / s.iterations for s in steps if not s.prefill_tokens and s.decode_seqs]
    assert len(base) == len(lagged) == 3
    for a, b in zip(base, lagged):  # requests run alone here (0.5 req/s): one prefill step each
        assert b.ttft - a.ttft == pytest.approx(2 * prefill[0], rel=0.05)
        assert b.e2e - a.e2e == pytest.approx(2 * last[-1], rel=0.05)
        # TPOT moves by the difference of the two lags only: 2 (last step - prefill step) / 49
        assert b.tpot - a.tpot == pytest.approx(2 * (last[-1] - prefill[0]) / 49, rel=0.05)
