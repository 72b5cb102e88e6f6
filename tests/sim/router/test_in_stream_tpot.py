"""llm-d's in-stream TPOT predictions: the token sampler, the metric, and what they are fed."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from kvtui.events import FirstToken, RequestCompleted
from kvtui.scenario import load_scenario
from kvtui.scenario.model import PredictedLatencyConfig
from kvtui.sim.engine import Simulation
from kvtui.sim.router.base import Context
from kvtui.sim.router.predicted_latency import PredictedLatency
from kvtui.sim.router.predictor import LatencyPredictor, PredictorConfig
from kvtui.sim.router.token_sampler import TokenSampler, go_round
from router_support import Stub, node, req

SCENARIOS = Path(__file__).resolve().parents[3] / "scenarios"


# ---------------------------------------------------------------------------------- the sampler
def sampled(seed: int, mean: float, most: int, tokens: int = 100_000) -> list[int]:
    s = TokenSampler(np.random.default_rng(seed), mean, most)
    return [k for g in range(1, tokens + 1) for k in s.due(g)]


def test_sampler_is_deterministic_per_seed_and_seeds_differ():
    assert sampled(1, 200, 20) == sampled(1, 200, 20)
    assert sampled(1, 200, 20) != sampled(2, 200, 20)


def test_sampler_off_by_default_and_capped():
    assert sampled(1, 1000, 0) == []  # upstream's default maxDecodeTokenSamplesForPrediction
    ks = sampled(3, 50, 7)
    assert len(ks) == 7 and ks[0] >= 2 and ks == sorted(set(ks))


@pytest.mark.parametrize("mean", [4.0, 200.0])  # Knuth's branch, the normal approximation
def test_sampler_gaps_have_the_poisson_mean(mean):
    ks = sampled(5, mean, 2000, tokens=2_000_000)
    gaps = np.diff([2] + ks)
    ok = gaps[gaps > 0]  # a 0 gap ends sampling (see the next test)
    assert abs(ok.mean() - mean) < 0.1 * mean


def test_a_zero_gap_ends_sampling_as_upstreams_equality_test_does():
    s = TokenSampler(np.random.default_rng(0), 1.0, 100)
    s.interval = lambda: 0  # type: ignore[method-assign]
    s.next_token = 5
    assert s.due(10) == [5] and s.due(1000) == []


def test_catch_up_returns_every_sampled_token_passed():
    a = TokenSampler(np.random.default_rng(9), 20, 50)
    b = TokenSampler(np.random.default_rng(9), 20, 50)
    one_by_one = [k for g in range(1, 3000) for k in a.due(g)]
    assert b.due(1000) + b.due(3000 - 1) == one_by_one


def test_go_round_takes_halves_away_from_zero():
    assert (go_round(2.5), go_round(3.5), go_round(-2.5), go_round(2.49)) == (3, 4, -3, 2)


# ---------------------------------------------------------------------------------- the metric
class RampPredictor(LatencyPredictor):
    """A trained predictor whose TPOT answer is `tpot` at the time asked (set by the test):
    a node whose decode slows after dispatch, as a retrained model would see it."""

    def __init__(self):
        super().__init__(PredictorConfig())
        self.ttft_model = self.tpot_model = Stub()  # type: ignore[assignment]
        self.tpot = 10.0
        self.rows: list[tuple] = []

    def maybe_retrain(self, now):
        return False

    def predict(self, rows):
        return np.full(len(rows), 100.0), np.full(len(rows), self.tpot)

    def predict_tpot(self, rows):
        self.rows += rows
        return np.full(len(rows), self.tpot)


def stream(samples: int, ramp: list[tuple[int, float]]):
    """Route one request, stream it through `ramp` ((tokens generated, predicted TPOT now)),
    complete it at 50 tokens with a true mean TPOT of 18 ms; the policy's report and predictor."""
    pred = RampPredictor()
    pol = PredictedLatency(PredictedLatencyConfig(max_decode_token_samples=samples, sampling_mean=5.0), predictor=pred)
    ctx = Context(rng=np.random.default_rng(0), block_size=16, sessions={})
    r = req("x")
    states = [node("a", prefix=0.9, waiting=2, running=3, tif=700)]
    d = pol.decide(r, ctx, states)
    pol.routed(r, d.node, states)
    pol.on_event(FirstToken(seq=1, t=1.0, request="x", node="a", ttft=0.1))
    for generated, tpot in ramp:
        r.generated, pred.tpot = generated, tpot
        pol.decide(req("other"), ctx, states)  # a later routing decision: one of the policy's hooks
    r.generated = 50
    pol.on_event(RequestCompleted(
        seq=2, t=2.0, request="x", node="a", session="s", group="g", prompt_tokens=500, output_tokens=50,
        cached_tokens=0, hit="miss", ttft=0.1, tpot=0.018, e2e=0.982, preemptions=0,
    ))
    return pol.report()["prediction"], pred


RAMP = [(10, 10.0), (25, 20.0), (40, 20.0)]


def test_reported_tpot_error_averages_the_in_stream_predictions():
    rep, pred = stream(samples=1000, ramp=RAMP)
    n = rep["scored"]["tpot_in_stream"]
    assert n >= 3  # mean gap 5 over 50 tokens
    assert len(pred.rows) == n  # one in-stream prediction per sampled token
    assert rep["tpot_mape_dispatch"] == pytest.approx(100 * 8 / 18, abs=0.01)
    assert rep["tpot_mape"] < rep["tpot_mape_dispatch"] - 10  # the ramp is seen in the stream


def test_without_samples_the_reported_error_is_the_dispatch_time_one():
    rep, pred = stream(samples=0, ramp=RAMP)
    assert rep["scored"]["tpot_in_stream"] == 0 and pred.rows == []
    assert rep["tpot_mape"] == rep["tpot_mape_dispatch"] == pytest.approx(100 * 8 / 18, abs=0.01)


def test_exact_average_when_every_sample_sees_the_same_model():
    rep, pred = stream(samples=1000, ramp=[(49, 30.0)])
    n = rep["scored"]["tpot_in_stream"]
    avg = (10.0 + 30.0 * n) / (n + 1)
    assert n > 0 and rep["tpot_mape"] == pytest.approx(100 * abs(avg - 18) / 18, abs=0.01)


def test_in_stream_rows_carry_scheduling_metrics_prefix_0_and_no_tokens_in_flight():
    _, pred = stream(samples=1000, ramp=RAMP)
    kv, prompt, waiting, running, tif, prefix, _ = pred.rows[0]
    assert (prompt, waiting, running, tif, prefix) == (500.0, 2.0, 3.0, 0.0, 0.0)
    assert kv == pytest.approx(0.4)


def test_tpot_training_entries_carry_prefix_0():
    _, pred = stream(samples=0, ramp=[])
    assert pred.tpot_window.buckets and all(k[2] == 0 for k in pred.tpot_window.buckets)
    assert all(k[2] == 3 for k in pred.ttft_window.buckets)  # TTFT keeps the 0.9 prefix score


# ---------------------------------------------------------------------------------- engine runs
def run(samples: int):
    sets = [f"router.predicted_latency.max_decode_token_samples={samples}", "router.predicted_latency.sampling_mean=20"]
    sim = Simulation(load_scenario(SCENARIOS / "pressure.yaml", sets), policy="predicted_latency")
    try:
        sim.run()
        return sim.metrics.latency_ms(), sim.router.report()
    finally:
        sim.close()


def test_in_stream_sampling_changes_the_reported_error_only():
    lat0, rep0 = run(0)
    lat1, rep1 = run(50)
    assert lat1 == lat0 and rep1["predicted_latency"] == rep0["predicted_latency"]  # routing untouched
    p0, p1 = rep0["prediction"], rep1["prediction"]
    assert p1["tpot_mape_dispatch"] == p0["tpot_mape_dispatch"] == p0["tpot_mape"]
    assert p1["scored"]["tpot_in_stream"] > 0 and p1["tpot_mape"] != p0["tpot_mape"]
    assert run(50) == (lat1, rep1)
