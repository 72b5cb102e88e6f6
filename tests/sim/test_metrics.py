"""Serving metrics as the benchmarks define them: TPOT, ITL, hit rates, SLO attainment, goodput."""

from __future__ import annotations

import numpy as np
import pytest

from kvtui.cli import run_once
from kvtui.events import BatchStepped, RequestCompleted, RequestRejected
from kvtui.scenario import load_scenario
from kvtui.sim.metrics import Metrics, meets_slo, rejection_class, summarize_weighted, weighted_percentiles

ALTERNATING = """\
name: alternating-outputs
seed: 1
latency: {model: linear, prefill_ms_per_token: 1, decode_ms_per_token: 6.5}
router: {policy: round_robin}
cluster:
  block_size: 16
  nodes:
    - {name: node-a, kv_blocks: 400}
workload:
  arrival: {process: closed_loop, users: 1}
  sessions: 20
  group_order: cycle
  groups:
    - {name: one-token, system_prompt_tokens: 0, question_tokens: 64, output_tokens: 1}
    - {name: hundred, system_prompt_tokens: 0, question_tokens: 64, output_tokens: 100}
"""


def test_tpot_skips_one_token_outputs(tmp_path):
    """Alternating 1- and 100-token outputs: TPOT is the decode step, not half of it (vLLM's
    benchmark only averages requests with more than one output token)."""
    path = tmp_path / "alternating.yaml"
    path.write_text(ALTERNATING)
    sim, doc = run_once(load_scenario(path))
    assert doc["requests"]["completed"] == 20
    assert len(sim.metrics.tpot) == 10  # only the 100-token requests
    tpot = doc["latency_ms"]["tpot"]
    assert tpot["p50"] == pytest.approx(6.5, abs=1e-6)
    assert tpot["mean"] == pytest.approx(6.5, abs=1e-6)
    # ITL: one sample per decoded token, each a decode step.
    itl = doc["latency_ms"]["itl"]
    assert itl["p50"] == pytest.approx(6.5, abs=1e-6)
    assert itl["p99"] == pytest.approx(6.5, abs=1e-6)
    assert sum(sim.metrics.itl.values()) == 10 * 99


def _completed(seq, *, ttft, tpot, out=10, slo_ttft=None, slo_tpot=None, node="n1", cached=0, prompt=100):
    return RequestCompleted(
        seq=seq, t=float(seq), request=f"r{seq}", node=node, session="s", group="g",
        prompt_tokens=prompt, output_tokens=out, cached_tokens=cached, hit="prefix" if cached else "miss",
        ttft=ttft, tpot=tpot, e2e=ttft + tpot * max(out - 1, 0), preemptions=0,
        slo_ttft=slo_ttft, slo_tpot=slo_tpot,
    )


def test_attainment_and_goodput_from_a_hand_made_stream():
    m = Metrics()
    events = [
        _completed(1, ttft=0.1, tpot=0.02, slo_ttft=0.2, slo_tpot=0.03),  # meets both
        _completed(2, ttft=0.3, tpot=0.02, slo_ttft=0.2, slo_tpot=0.03),  # TTFT missed
        _completed(3, ttft=0.1, tpot=0.05, slo_ttft=0.2, slo_tpot=0.03),  # TPOT missed
        _completed(4, ttft=0.1, tpot=0.05, slo_ttft=0.2),  # TTFT-only SLO: met
        _completed(5, ttft=0.1, tpot=0.0, out=1, slo_tpot=0.03),  # 1 token: TPOT not judged: met
        _completed(6, ttft=9.0, tpot=9.0),  # no SLO: not counted either way
        _completed(7, ttft=0.2, tpot=0.03, slo_ttft=0.2, slo_tpot=0.03),  # exactly at the SLO: met
    ]
    for ev in events:
        m.on_event(ev)
    m.on_event(RequestRejected(seq=8, t=8.0, request="r8", node=None, reason="shed: no node can meet TTFT SLO 200 ms"))
    m.on_event(RequestRejected(seq=9, t=9.0, request="r9", node="n1", reason="n1 queue full (4 waiting, max_queue 4)"))
    assert m.with_slo == 6
    assert m.slo_met == 4
    assert m.slo_attainment == pytest.approx(4 / 6)
    assert m.goodput_rps(10.0) == pytest.approx(0.4)
    assert m.shed == 1 and m.rejected == 2
    assert m.rejected_reasons == {"shed": 1, "queue_full": 1}
    assert len(m.tpot) == 6  # the 1-token request has no TPOT


def test_no_slo_means_no_attainment():
    m = Metrics()
    m.on_event(_completed(1, ttft=0.1, tpot=0.01))
    assert m.slo_attainment is None and m.goodput_rps(1.0) == 0.0


def test_token_hit_rate_weighs_tokens_request_hit_rate_counts_requests():
    m = Metrics()
    m.on_event(_completed(1, ttft=0.1, tpot=0.01, cached=16, prompt=1000))
    m.on_event(_completed(2, ttft=0.1, tpot=0.01, cached=0, prompt=1000))
    assert m.request_hit_rate == pytest.approx(0.5)
    assert m.token_hit_rate == pytest.approx(0.008)


def test_itl_from_decode_segments():
    m = Metrics()
    # 4 requests decoding for 10 steps of 5 ms; then one mixed step of 40 ms with 2 decoders.
    m.on_event(BatchStepped(seq=1, t=0.05, node="n", iterations=10, prefill_tokens=0, decode_seqs=4,
                            duration=0.05, running=4, waiting=0, used_blocks=1))
    m.on_event(BatchStepped(seq=2, t=0.09, node="n", iterations=1, prefill_tokens=512, decode_seqs=2,
                            duration=0.04, running=3, waiting=0, used_blocks=1))
    m.on_event(BatchStepped(seq=3, t=0.10, node="n", iterations=1, prefill_tokens=512, decode_seqs=0,
                            duration=0.01, running=1, waiting=0, used_blocks=1))
    itl = summarize_weighted(m.itl)
    assert itl["p50"] == pytest.approx(5.0)
    assert itl["max"] == pytest.approx(40.0)
    assert itl["mean"] == pytest.approx((40 * 5 + 2 * 40) / 42)


def test_weighted_percentiles_equal_the_repeated_sample():
    rng = np.random.default_rng(3)
    values = rng.random(30)
    weights = rng.integers(1, 9, 30)
    qs = [0, 1, 25, 50, 90, 95, 99, 100]
    expect = np.percentile(np.repeat(values, weights), qs)
    assert weighted_percentiles(values, weights, qs) == pytest.approx(expect)


@pytest.mark.parametrize(
    "reason, cls",
    [
        ("shed: predicted TTFT over SLO on every node", "shed"),
        ("no node can take it (node-a: node-a queue full (4 waiting, max_queue 4))", "no_node"),
        ("node-b is down", "node_down"),
        ("needs 90 blocks for 1400+10 tokens; node-a can hold at most 64", "too_large"),
        ("node-a at max_active 3 (3 running, 0 waiting)", "max_active"),
        ("cannot be scheduled on node-a: 0 blocks free, nothing running", "unschedulable"),
        ("something new", "other"),
    ],
)
def test_rejection_classes(reason, cls):
    assert rejection_class(reason) == cls


def test_meets_slo_rules():
    assert meets_slo(0.1, 0.0, 1, None, None) is None
    assert meets_slo(0.1, 0.5, 1, 0.2, 0.01) is True  # 1 token: TPOT not judged
    assert meets_slo(0.1, 0.5, 2, 0.2, 0.01) is False
    assert meets_slo(0.3, 0.0, 2, 0.2, None) is False


def test_slos_flow_from_request_to_result_document(tmp_path, monkeypatch):
    """A request's SLOs ride on RequestCompleted (filled in the node's _finish) into the result."""
    from kvtui.sim.engine import Simulation

    submit = Simulation.submit

    def with_slo(self, req):
        req.slo_ttft_s = 1.0
        req.slo_tpot_s = 0.005  # the 6.5 ms decode step misses it; 1-token outputs are not judged on it
        return submit(self, req)

    monkeypatch.setattr(Simulation, "submit", with_slo)
    path = tmp_path / "alternating.yaml"
    path.write_text(ALTERNATING)
    _, doc = run_once(load_scenario(path))
    slo = doc["slo"]
    assert (slo["with_slo"], slo["met"]) == (20, 10)
    assert slo["attainment"] == pytest.approx(0.5)
    assert slo["goodput_rps"] == pytest.approx(10 / doc["sim_time_s"], rel=1e-4)


def test_stats_line_leads_with_the_token_hit_rate(tmp_path, monkeypatch):
    from kvtui.run.drive import Drive
    from kvtui.sim.engine import Simulation
    from kvtui.tui.widgets.stats_line import stats_text

    def to_end(path):
        drive = Drive(load_scenario(path))
        drive.advance(float("inf"), float("inf"))
        return drive

    path = tmp_path / "alternating.yaml"
    path.write_text(ALTERNATING)
    text = stats_text(to_end(path))
    assert text.startswith("token hits ") and "request hits" in text
    assert "SLO" not in text  # no SLOs set: no attainment shown

    submit = Simulation.submit
    monkeypatch.setattr(Simulation, "submit", lambda self, req: (setattr(req, "slo_ttft_s", 1.0), submit(self, req))[1])
    assert "SLO met 100% (20/20) goodput" in stats_text(to_end(path))


def test_one_percentile_rule_in_the_split_screen_and_the_run():
    """The split screen's TTFT p95 (key_figures) and the run's (summarize, which the histograms,
    `run`, `compare` and sweeps read) are the same number at any moment: issue 35 found 424 ms
    (nearest rank) against 395 ms (interpolated) near the end of pressure.yaml's chapter 2."""
    from kvtui.percentiles import percentile, percentiles
    from kvtui.sim.engine import Simulation
    from kvtui.sim.view import key_figures

    sim = Simulation(load_scenario("scenarios/pressure.yaml"), policy="cache_aware")
    for moment in (20.0, 44.9, 70.0):  # at 44.9 s nearest rank said 424 ms, interpolation 395
        sim.run_until(moment)
        shown = key_figures(sim).ttft_p95_ms
        assert shown == pytest.approx(sim.metrics.latency_ms()["ttft"]["p95"], abs=1e-5)
        assert shown == pytest.approx(float(np.percentile(sim.metrics.ttft, 95)) * 1000)  # numpy's default, vLLM's
    samples = [5.0, 1.0, 3.0, 2.0]
    assert percentile(samples, 50) == 2.5 and list(percentiles(samples, (0, 100))) == [1.0, 5.0]
    assert percentile([], 95) is None


def test_ntpot_is_e2e_over_output_tokens_per_request():
    """The blog's NTPOT: E2E / output length, so a 1-token request counts its whole E2E."""
    m = Metrics()
    m.on_event(_completed(1, ttft=0.5, tpot=0.01, out=101))  # e2e 1.5 s over 101 tokens
    m.on_event(_completed(2, ttft=0.2, tpot=0.0, out=1))  # e2e 0.2 s over 1 token
    ntpot = m.latency_ms()["ntpot"]
    assert ntpot["max"] == pytest.approx(200.0)
    assert ntpot["mean"] == pytest.approx((1500.0 / 101 + 200.0) / 2)
