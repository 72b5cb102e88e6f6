"""predicted_latency: gates, tiers, cold fallback, shedding, seeded draws, MAPE, engine runs."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from router_support import Stub, node, req

from kvtui.events import FirstToken, RequestCompleted
from kvtui.scenario import load_scenario
from kvtui.scenario.model import PredictedLatencyConfig
from kvtui.sim.engine import Simulation
from kvtui.sim.router.base import Context
from kvtui.sim.router.predicted_latency import PredictedLatency, composite
from kvtui.sim.router.predictor import (
    MISSING_XGBOOST,
    Gated,
    LatencyPredictor,
    PredictorConfig,
    StratifiedWindow,
    queue_bucket,
)

SCENARIOS = Path(__file__).resolve().parents[3] / "scenarios"


class FakePredictor(LatencyPredictor):
    """A trained predictor whose answers are a table keyed by the candidate's prefill_tokens."""

    def __init__(self, table: dict[int, tuple[float, float]]):
        super().__init__(PredictorConfig())
        self.table = table
        self.ttft_model = self.tpot_model = Stub()  # type: ignore[assignment]

    def maybe_retrain(self, now):
        return False

    def predict(self, rows):
        t = np.array([self.table[int(r[4])][0] for r in rows])
        p = np.array([self.table[int(r[4])][1] for r in rows])
        return t, p


def ctx(seed=0) -> Context:
    return Context(rng=np.random.default_rng(seed), block_size=16, sessions={})


def policy(table, **cfg) -> PredictedLatency:
    return PredictedLatency(PredictedLatencyConfig(**cfg), predictor=FakePredictor(table))


def decide(pol, states, r=None, seed=0):
    return pol.decide(r or req(), ctx(seed), states)


# ---------------------------------------------------------------------------------- cold path
def test_cold_fallback_is_the_composite_formula():
    states = [node("a", prefix=0.5, waiting=2, free=30), node("b", prefix=0.0, waiting=0, free=90), node("c", prefix=0.25, waiting=4, free=60)]
    pol = PredictedLatency(PredictedLatencyConfig(explore_probability=0.0))
    d = decide(pol, states)
    for s in states:
        want = ((1 - s.kv_usage) + (4 - s.waiting) / 4 + s.prefix_score) / 3
        cand = next(c for c in d.candidates if c.node == s.name)
        assert cand.score == pytest.approx(round(100 * want) / 100)
    assert d.node == "b" and "cold" in d.reason and "composite" in d.reason
    # maxQ = 0: every queue term is 1, no division by zero.
    flat = composite([node("a", waiting=0), node("b", waiting=0)])
    assert all(t[2] == 1.0 for t in flat.values())


def test_cold_path_still_applies_the_affinity_gate():
    states = [node("a", prefix=0.9, free=5), node("b", prefix=0.0, free=95)]
    d = decide(PredictedLatency(PredictedLatencyConfig(explore_probability=0.0)), states)
    assert d.node == "a" and "affinity gate 0.80: 1 of 2 sticky" in d.reason


# ---------------------------------------------------------------------------------- gates
def test_affinity_gate_keeps_sticky_nodes_only():
    # b is faster, but only a holds >= 0.80 of the prompt: the gate restricts to a.
    table = {1: (900.0, 20.0), 2: (100.0, 10.0)}
    states = [node("a", prefix=0.85, tif=1), node("b", prefix=0.79, tif=2)]
    d = decide(policy(table, explore_probability=0.0), states)
    assert d.node == "a" and "1 of 2 sticky" in d.reason
    kept = {c.node: c.feature("kept") for c in d.candidates}
    assert kept == {"a": 1.0, "b": 0.0}
    # Threshold exactly met counts as sticky; just below does not.
    d = decide(policy(table, explore_probability=0.0, affinity_threshold=0.85), states)
    assert d.node == "a"
    d = decide(policy(table, explore_probability=0.0, affinity_threshold=0.86), states)
    assert d.node == "b" and "sticky" not in d.reason


def test_load_gate_breaks_affinity_only_beyond_the_penalty():
    states = [node("a", prefix=0.95, tif=1), node("b", prefix=0.0, tif=2)]
    at_limit = {1: (5100.0, 10.0), 2: (100.0, 10.0)}  # exactly 5,000 ms worse: still sticky
    d = decide(policy(at_limit, explore_probability=0.0), states)
    assert d.node == "a" and "load gate" not in d.reason
    beyond = {1: (5100.5, 10.0), 2: (100.0, 10.0)}
    pol = policy(beyond, explore_probability=0.0)
    d = decide(pol, states)
    assert d.node == "b" and "load gate: sticky a TTFT 5100 ms > b 100 ms + 5000 ms" in d.reason
    assert pol.stats["load_gate"] == 1
    # load_gate_ms = 0: always stick.
    d = decide(policy(beyond, explore_probability=0.0, load_gate_ms=0.0), states)
    assert d.node == "a"


def test_exploration_skips_the_gate_and_is_drawn_from_the_seeded_rng():
    table = {1: (900.0, 20.0), 2: (100.0, 10.0)}
    states = [node("a", prefix=0.9, tif=1), node("b", prefix=0.0, tif=2)]
    always = decide(policy(table, explore_probability=1.0), states)
    assert always.node == "b" and "explore" in always.reason
    # One uniform draw per decision (no SLO, no ties): exploration happens exactly where
    # the seeded generator's draw is below 0.01, so the run is reproducible from the seed.
    n, seed = 2000, 11
    pol = policy(table)
    c = ctx(seed)
    picks = [pol.decide(req(f"r{i}"), c, states).node for i in range(n)]
    expected = np.random.default_rng(seed).random(n) < 0.01
    assert [p == "b" for p in picks] == list(expected)
    assert 5 <= expected.sum() <= 40 and pol.stats["explored"] == expected.sum()


# ---------------------------------------------------------------------------------- SLO tiers
def test_positive_tier_best_fit_picks_the_least_headroom():
    # SLO TTFT 1000 ms, TPOT 50 ms. a, b, c meet both; d misses TTFT.
    table = {1: (900.0, 40.0), 2: (500.0, 30.0), 3: (200.0, 20.0), 4: (1500.0, 10.0)}
    states = [node(n, tif=i) for i, n in enumerate("abcd", start=1)]
    d = decide(policy(table, explore_probability=0.0), states, req(ttft=1.0, tpot=0.05))
    assert d.node == "a", d.reason  # smallest positive headroom: best fit
    assert "best fit" in d.reason and "positive tier: 3 of 4" in d.reason
    tiers = {c.node: c.feature("tier") for c in d.candidates}
    assert tiers == {"a": 1.0, "b": 1.0, "c": 1.0, "d": 0.0}
    # most-packed by TTFT weight: with ttft_weight 0 only TPOT headroom counts; a still has least.
    head = {c.node: (c.feature("h_ttft"), c.feature("h_tpot")) for c in d.candidates}
    assert head["a"] == (100.0, 10.0) and head["d"] == (-500.0, 40.0)


def test_tier_choice_follows_the_probability_and_the_seed():
    table = {1: (900.0, 40.0), 2: (1500.0, 10.0)}
    states = [node("a", tif=1), node("b", tif=2)]
    r = req(ttft=1.0, tpot=0.05)
    assert decide(policy(table, explore_probability=0.0, positive_tier_probability=1.0), states, r).node == "a"
    d = decide(policy(table, explore_probability=0.0, positive_tier_probability=0.0), states, r)
    assert d.node == "b" and "negative tier drawn" in d.reason
    # Default 0.99: one draw per decision (the tier leaves one node, so the affinity gate,
    # which draws only among two or more, does not), reproducible from the seed.
    n, seed = 1500, 5
    pol = policy(table)
    c = ctx(seed)
    picks = [pol.decide(req(f"r{i}", ttft=1.0, tpot=0.05), c, states).node for i in range(n)]
    u = np.random.default_rng(seed).random(n)
    assert [p == "b" for p in picks] == list(u < 1.0 - 0.99)
    assert pol.stats["negative_tier"] == (u < 0.01).sum() > 0


def test_without_slo_the_lowest_predicted_latency_wins_and_idle_nodes_first():
    table = {1: (300.0, 30.0), 2: (200.0, 25.0), 3: (250.0, 5.0)}
    busy = [node("a", tif=1), node("b", tif=2), node("c", tif=3)]
    d = decide(policy(table, explore_probability=0.0), busy)
    # blend 0.8 x normalised TTFT + 0.2 x normalised TPOT: b (0 + 0.2 x 0.8) < c (0.4 + 0) < a.
    assert d.node == "b" and "lowest predicted latency" in d.reason
    idle = [node("a", tif=1, running=0), node("b", tif=2), node("c", tif=3)]
    d = decide(policy(table, explore_probability=0.0), idle)
    assert d.node == "a" and "idle preference: 1 of 3 idle" in d.reason


# ---------------------------------------------------------------------------------- shedding
def test_sheddable_request_is_refused_when_no_node_can_meet_its_slo():
    table = {1: (900.0, 40.0), 2: (1500.0, 10.0)}
    states = [node("a", tif=1), node("b", tif=2)]
    pol = policy(table, explore_probability=0.0)
    d = decide(pol, states, req(ttft=0.5, tpot=0.05, sheddable=True))
    assert d.node is None and d.reason.startswith("shed: no node meets TTFT 500 ms / TPOT 50.0 ms")
    assert "best predicted TTFT 900 ms on a" in d.reason and pol.stats["shed"] == 1
    assert len(d.candidates) == 2 and d.margin == 0.0
    # Not sheddable: routed (negative tier, closest to SLO).
    assert decide(pol, states, req(ttft=0.5, tpot=0.05)).node == "a"
    # One node meets it: admitted.
    assert decide(pol, states, req(ttft=1.0, tpot=0.05, sheddable=True)).node == "a"
    # An idle node (nothing running) or a cold one (KV < 2 %) keeps it (latency-slo-admitter).
    idle = [node("a", tif=1, running=0), node("b", tif=2)]
    assert decide(pol, idle, req(ttft=0.5, tpot=0.05, sheddable=True)).node is not None
    cold = [node("a", tif=1, free=99), node("b", tif=2)]
    assert decide(pol, cold, req(ttft=0.5, tpot=0.05, sheddable=True)).node is not None
    # No SLO: nothing to judge, never shed.
    assert decide(pol, states, req(sheddable=True)).node is not None


def test_sheddable_request_is_not_shed_while_cold():
    pol = PredictedLatency(PredictedLatencyConfig())
    d = decide(pol, [node("a"), node("b")], req(ttft=0.001, tpot=0.001, sheddable=True))
    assert d.node is not None


# ---------------------------------------------------------------------------------- predictor
def test_stratified_window_keeps_each_buckets_newest_samples():
    w = StratifiedWindow(per_bucket=3)
    for i in range(5):
        w.add((0.15, 100.0, 0.0, 1.0, 0.0, 0.1, 0.0), float(i + 1))  # same bucket
    w.add((0.95, 100.0, 12.0, 1.0, 0.0, 0.9, 0.0), 99.0)  # another regime survives
    X, y = w.arrays()
    assert sorted(y) == [3.0, 4.0, 5.0, 99.0]
    assert [queue_bucket(q) for q in (0, 1, 2, 3, 5, 6, 10, 11)] == [0, 1, 1, 2, 2, 3, 3, 4]
    assert w.key((0.999, 1, 0, 0, 0, 1.0, 0)) == (0, 19, 3)  # llm-d's 20 KV buckets


def test_linear_predictor_learns_a_linear_law_and_retrains_on_sim_time():
    p = LatencyPredictor(PredictorConfig(min_samples=10, retrain_interval_s=1.0))
    rng = np.random.default_rng(0)
    law = lambda x: 5 + 0.02 * (1 - x[5]) * x[1] + 30 * x[2]  # noqa: E731
    t = 0.0
    for _ in range(300):
        x = (rng.random(), rng.integers(100, 2000), rng.integers(0, 4), rng.integers(0, 8), rng.integers(0, 3000), rng.random(), 0)
        x = tuple(float(v) for v in x)
        p.add_ttft(x, law(x))
        p.add_tpot(x, 10 + x[3])
        t += 0.05
        p.maybe_retrain(t)
    assert p.trained and 10 <= p.retrains <= 16  # every 1 s of sim time over 15 s
    xs = [(0.5, 1000.0, 1.0, 4.0, 500.0, 0.5, 0.0), (0.2, 300.0, 0.0, 2.0, 0.0, 0.9, 0.0)]
    ttft, tpot = p.predict(xs)
    assert ttft == pytest.approx([law(x) for x in xs], rel=0.02)
    assert tpot == pytest.approx([14.0, 12.0], rel=0.02)


def test_xgboost_missing_gives_a_clear_error(without_xgboost):
    with pytest.raises(ImportError, match="kvtui\\[xgboost\\]"):
        PredictedLatency(PredictedLatencyConfig(regressor="xgboost"))
    assert "pip install 'kvtui[xgboost]'" in MISSING_XGBOOST


# ---------------------------------------------------------------------------------- MAPE
def test_mape_is_scored_from_first_token_and_completion():
    table = {1: (100.0, 10.0), 2: (200.0, 20.0)}
    pol = policy(table, explore_probability=0.0)
    states = [node("a", tif=1), node("b", tif=2)]
    r = req("x")
    d = pol.decide(r, ctx(), states)
    pol.routed(r, d.node, states)
    pol.on_event(FirstToken(seq=1, t=1.0, request="x", node="a", ttft=0.125))
    pol.on_event(
        RequestCompleted(
            seq=2, t=2.0, request="x", node="a", session="s", group="g", prompt_tokens=500, output_tokens=50,
            cached_tokens=0, hit="miss", ttft=0.125, tpot=0.008, e2e=0.5, preemptions=0,
        )
    )
    rep = pol.report()["prediction"]
    assert rep["ttft_mape"] == pytest.approx(20.0) and rep["tpot_mape"] == pytest.approx(25.0)
    assert rep["tpot_mape_dispatch"] == pytest.approx(25.0)  # no in-stream samples: llm-d's default
    assert rep["samples"] == 2 and rep["scored"] == {"ttft": 1, "tpot": 1, "tpot_in_stream": 0}
    assert not pol.pending


STATIONARY = """
name: stationary
seed: 3
model: llama-3.1-8b
latency: {model: roofline}
router: {policy: predicted_latency}
cluster:
  block_size: 16
  hardware: h100-80gb
  nodes:
    - {name: n1, kv_blocks: 2048, max_num_seqs: 16, max_queue: 64}
    - {name: n2, kv_blocks: 2048, max_num_seqs: 16, max_queue: 64}
    - {name: n3, kv_blocks: 2048, max_num_seqs: 16, max_queue: 64}
workload:
  duration_s: 150
  arrival: {process: poisson, rate: 6}
  groups:
    - name: chat
      system_prompt_tokens: 256
      question_tokens: {dist: uniform, low: 64, high: 1500}
      output_tokens: {dist: uniform, low: 16, high: 200}
      turns: {dist: uniform, low: 1, high: 3}
      think_time_s: {dist: uniform, low: 0.5, high: 2}
"""


def test_mape_falls_as_it_trains_on_a_stationary_workload(tmp_path):
    p = tmp_path / "stationary.yaml"
    p.write_text(STATIONARY)
    sim = Simulation(load_scenario(p), policy="predicted_latency")
    try:
        sim.run()
        rep = sim.router.report()["prediction"]
    finally:
        sim.close()
    ttft_w, tpot_w = rep["ttft_mape_windows"], rep["tpot_mape_windows"]
    assert len(ttft_w) >= 5 and rep["retrains"] > 50
    # The first window is predicted by models fitted on tens of samples, the last half by
    # models fitted on the full stratified window.
    late_ttft = sum(ttft_w[len(ttft_w) // 2 :]) / len(ttft_w[len(ttft_w) // 2 :])
    late_tpot = sum(tpot_w[len(tpot_w) // 2 :]) / len(tpot_w[len(tpot_w) // 2 :])
    assert ttft_w[0] > 1.2 * late_ttft, rep
    assert tpot_w[0] > late_tpot, rep
    assert rep["ttft_mape"] < 15 and rep["tpot_mape"] < 10, rep


# ---------------------------------------------------------------------------------- engine runs
def run_pressure(overrides=()):
    sim = Simulation(load_scenario(SCENARIOS / "pressure.yaml", overrides), policy="predicted_latency")
    try:
        sim.run()
        m = sim.metrics
        return (m.arrived, m.completed, m.rejected, m.failed, sim.in_flight(), m.latency_ms(), sim.router.report())
    finally:
        sim.close()


def test_pressure_run_accounts_for_every_arrival_and_repeats():
    a = run_pressure()
    arrived, completed, rejected, failed, in_flight = a[:5]
    assert arrived > 100 and completed > 0
    assert arrived == completed + rejected + failed + in_flight
    pred = a[6]["prediction"]
    assert pred["retrains"] > 0 and pred["ttft_mape"] is not None and pred["tpot_mape"] is not None
    assert a == run_pressure()


def test_xgboost_regressor_runs_and_repeats():
    pytest.importorskip("xgboost")
    o = ["router.predicted_latency.regressor=xgboost", "router.predicted_latency.retrain_interval_s=5"]
    a = run_pressure(o)
    assert a[0] == sum(a[1:5])
    assert a[6]["prediction"]["regressor"] == "xgboost" and a[6]["prediction"]["retrains"] > 0
    assert a == run_pressure(o)


def test_config_knobs_reach_the_policy():
    from kvtui.scenario.model import Router

    cfg = Router(predicted_latency=replace(PredictedLatencyConfig(), affinity_threshold=0.5, min_samples=50))
    pol = PredictedLatency.from_config(cfg)
    assert pol.cfg.affinity_threshold == 0.5 and pol.predictor.cfg.min_samples == 50


# ---------------------------------------------------------------------------------- options
def noisy_samples(n=600, seed=1):
    """TTFT = 20 + 0.05 x input, times a lognormal noise: the mean and the p90 lie apart."""
    rng = np.random.default_rng(seed)
    rows, ys = [], []
    for _ in range(n):
        x = (rng.random(), float(rng.integers(100, 2000)), 0.0, 2.0, 0.0, 0.5, 0.0)
        rows.append(x)
        ys.append((20 + 0.05 * x[1]) * float(rng.lognormal(0.0, 0.3)))
    return rows, np.asarray(ys)


def fitted(cfg: PredictorConfig, rows, ys) -> LatencyPredictor:
    p = LatencyPredictor(cfg)
    for x, y in zip(rows, ys):
        p.add_ttft(x, float(y))
    p.retrain(0.0)
    return p


def test_quantile_objective_trains_llm_ds_p90_and_relative_the_middle():
    """objective: quantile is llm-d's default (reg:quantileerror at 0.9): about 90 % of the
    samples fall under its predictions; the relative mean leaves about half above."""
    pytest.importorskip("xgboost")
    rows, ys = noisy_samples()
    below = {}
    for objective in ("relative", "quantile"):
        p = fitted(PredictorConfig(regressor="xgboost", objective=objective, ensemble_split=0), rows, ys)
        below[objective] = float(np.mean(ys <= p.predict(rows)[0]))
    assert 0.8 <= below["quantile"] <= 0.97, below
    assert 0.25 <= below["relative"] <= 0.6, below


def test_quantile_with_the_linear_regressor_is_an_input_error(tmp_path):
    from kvtui.errors import InputError

    path = tmp_path / "q.yaml"
    path.write_text("router:\n  policy: predicted_latency\n  predicted_latency: {objective: quantile}\n")
    with pytest.raises(InputError, match="set regressor: xgboost"):
        load_scenario(path)


def test_the_iteration_feature_is_learned_when_asked_for():
    """With `iteration_feature` the models see column 6 (the running iteration's time left);
    without it they cannot, and a TTFT that is that wait plus a constant stays unexplained."""
    rng = np.random.default_rng(2)
    rows = [(0.3, 500.0, 0.0, 2.0, 0.0, 0.5, float(rng.uniform(0.0, 8.0))) for _ in range(400)]
    ys = np.asarray([5.0 + x[6] for x in rows])
    errors = {}
    for on in (False, True):
        p = fitted(PredictorConfig(iteration_feature=on, ensemble_split=0), rows, ys)
        errors[on] = float(np.mean(np.abs(p.predict(rows)[0] - ys) / ys))
    assert errors[True] < 0.01 < 0.2 < errors[False], errors


def test_the_router_reads_the_running_iteration_only_when_the_option_is_on():
    seen = {}

    def run(on: bool):
        over = [f"router.predicted_latency.iteration_feature={str(on).lower()}", "workload.duration_s=20"]
        sim = Simulation(load_scenario(SCENARIOS / "pressure.yaml", over), policy="predicted_latency")
        original = sim.router.policy.features
        left = seen.setdefault(on, [])
        sim.router.policy.features = lambda req, s, own=0: left.append(s.iteration_left_ms) or original(req, s, own)
        try:
            sim.run()
        finally:
            sim.close()

    run(False)
    run(True)
    assert set(seen[False]) == {-1.0}
    busy = [v for v in seen[True] if v > 0]
    assert min(seen[True]) >= 0 and len(busy) > len(seen[True]) / 10
    assert max(busy) < 1000.0  # a share of one iteration, milliseconds, not a whole segment


def test_relative_objective_learns_a_rare_saturated_regime():
    """A node saturates: 40 samples of a 6-10 s TTFT among 960 of 40-80 ms. The relative
    objective must fit them (log target). With 1 / y^2 sample weights each slow sample weighed
    ~4e-5 and XGBoost's min_child_weight (5) never let them form a leaf: 10 s predicted at ~0.1 s."""
    pytest.importorskip("xgboost")
    rng = np.random.default_rng(5)
    fast = [((0.3, 1000.0, 0.0, 40.0, 0.0, 0.8, 0.0), float(rng.uniform(40, 80))) for _ in range(960)]
    slow = [((1.0, 1000.0, 15.0, 90.0, 2e5, 0.8, 0.0), float(rng.uniform(6000, 10000))) for _ in range(40)]
    rows, ys = zip(*(fast + slow))
    p = fitted(PredictorConfig(regressor="xgboost", ensemble_split=0), rows, np.asarray(ys))
    ttft = p.predict([slow[0][0], fast[0][0]])[0]
    assert 5000 < ttft[0] < 11000, ttft
    assert 30 < ttft[1] < 100, ttft


def done(rid: str, node_name: str) -> RequestCompleted:
    return RequestCompleted(
        seq=9, t=3.0, request=rid, node=node_name, session="s", group="g", prompt_tokens=0, output_tokens=50,
        cached_tokens=0, hit="miss", ttft=0.1, tpot=0.01, e2e=0.6, preemptions=0,
    )


def test_epp_tokens_in_flight_count_prompts_until_completion():
    """`tokens_in_flight: epp` is llm-d's EPP counter (requestcontrol_hooks.go): a request's prompt
    counts on its node from dispatch to end of stream, whatever the node has prefilled; the
    training row includes the request's own prompt (added before it is read), a prediction's not."""
    pol = PredictedLatency(PredictedLatencyConfig(tokens_in_flight="epp"))
    states = [node("a", tif=7), node("b", tif=7)]
    for rid, prompt in (("x", 300), ("y", 500)):
        pol.routed(req(rid, prompt=prompt), "a", states)
    assert [pol.pending[r].row[4] for r in ("x", "y")] == [300.0, 800.0]
    assert pol.features(req("z"), states[0])[4] == 800.0 and pol.features(req("z"), states[1])[4] == 0.0
    pol.on_event(FirstToken(seq=1, t=1.0, request="x", node="a", ttft=0.1))
    assert pol.in_flight["a"] == 800  # still in flight after its prefill
    pol.on_event(done("x", "a"))
    assert pol.in_flight["a"] == 500
    assert PredictedLatency().features(req("z"), states[0])[4] == 7.0  # default: the node's own count


def test_window_arrays_kept_per_bucket_equal_a_rebuild_from_the_samples():
    """The per-bucket cache must give the very arrays a rebuild gives (the digests depend on it)."""
    rng = np.random.default_rng(1)
    cached, fresh_samples = StratifiedWindow(per_bucket=4), []
    for i in range(60):
        x = (float(rng.random()), 100.0 + i, float(rng.integers(0, 12)), 1.0, 0.0, float(rng.random()), 0.0)
        cached.add(x, float(i + 1))
        fresh_samples.append((x, float(i + 1)))
        if i % 7 == 0:
            cached.arrays()  # fill the cache between additions
    fresh = StratifiedWindow(per_bucket=4)
    for x, y in fresh_samples:
        fresh.add(x, y)
    (Xc, yc), (Xf, yf) = cached.arrays(), fresh.arrays()
    assert Xc.tobytes() == Xf.tobytes() and yc.tobytes() == yf.tobytes()


def test_a_window_without_new_samples_keeps_its_model(monkeypatch):
    fits = []
    real = Gated.fit
    monkeypatch.setattr(Gated, "fit", lambda self, X, y: (fits.append(self.target), real(self, X, y)))
    p = LatencyPredictor(PredictorConfig(min_samples=10, retrain_interval_s=1.0))
    for i in range(12):
        p.add_ttft((0.1, 100.0 + i, 0.0, 1.0, 0.0, 0.5, 0.0), 10.0 + i)
        p.add_tpot((0.1, 100.0 + i, 0.0, 1.0, 0.0, 0.0, 0.0), 5.0 + i)
    p.retrain(0.0)
    model = p.ttft_model
    p.add_tpot((0.2, 300.0, 0.0, 1.0, 0.0, 0.0, 0.0), 9.0)  # only the TPOT window moves
    p.retrain(1.0)
    assert fits == ["ttft", "tpot", "tpot"] and p.ttft_model is model and p.retrains == 2
