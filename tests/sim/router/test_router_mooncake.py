"""mooncake: Mooncake's conductor (Algorithm 1 of its FAST'25 paper) — the prefill node of least
estimated TTFT, the decode node by load, the early rejection past the SLOs."""

from __future__ import annotations

import textwrap
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from kvtui.errors import InputError
from kvtui.events import DecodeRouted, RequestRejected, RouteDecided
from kvtui.run.narrate import explain
from kvtui.scenario import load_scenario
from kvtui.scenario.model import MooncakeConfig
from kvtui.sim.engine import Simulation
from kvtui.sim.latency import LinearModel
from kvtui.sim.router.base import Context
from kvtui.sim.router.mooncake import Mooncake

from router_support import state

SCENARIOS = Path(__file__).resolve().parents[3] / "scenarios"
LINEAR = LinearModel(prefill_s_per_token=0.001, decode_s_per_token=0.02)  # 1 ms a prompt token, 20 ms a step


class Req:
    id = "r1"
    session = "s"
    prompt_tokens = 160
    output_tokens = 10
    slo_ttft_s: float | None = None
    slo_tpot_s: float | None = None


def ctx(*names):
    return Context(rng=np.random.default_rng(0), block_size=16, sessions={}, latency={n: LINEAR for n in names})


def queued(s, seconds):
    return replace(s, queue_s=seconds)


def test_the_prefill_pick_is_the_least_estimated_ttft_queue_plus_uncached_prefill():
    # a: nothing cached, 0.5 s queued: 500 + 160 + 20 (the token step) = 680 ms
    # b: 5 of 10 blocks cached (80 tokens), 0.2 s queued: 200 + 80 + 20 = 300 ms
    # c: everything cached but 1 s queued: 1000 + 1 + 20 = 1021 ms (the last token is recomputed)
    pool = [queued(state("a"), 0.5), queued(state("b", prefix=5), 0.2), queued(state("c", prefix=10), 1.0)]
    decision, ttft = Mooncake(MooncakeConfig()).pick_prefill(Req(), ctx("a", "b", "c"), pool)
    assert decision.node == "b" and ttft == pytest.approx(0.300)
    assert {c.node: c.score for c in decision.candidates} == pytest.approx({"a": -680.0, "b": -300.0, "c": -1021.0})
    assert decision.margin == pytest.approx(380.0)
    assert "estimated TTFT 300 ms = queue 200 + prefill 100 ms of 80 uncached tokens (80/160 cached)" in decision.reason
    features = dict(next(c for c in decision.candidates if c.node == "a").features)
    assert (features["queue_ms"], features["prefill_ms"], features["ttft_ms"]) == pytest.approx((500.0, 180.0, 680.0))


def test_a_ttft_tie_goes_to_the_first_prefill_instance_as_algorithm_1_updates_only_on_less():
    pool = [queued(state(n), 0.1) for n in ("x", "y", "z")]
    for seed in range(5):
        c = ctx("x", "y", "z")
        c.rng = np.random.default_rng(seed)
        decision, _ = Mooncake(MooncakeConfig()).pick_prefill(Req(), c, pool)
        assert decision.node == "x" and decision.tie == "tie of 3, the first in cluster order"


def test_the_decode_pick_is_by_load_with_its_estimated_tbt():
    # the linear model's step does not grow with the batch: the fewest requests decide
    pool = [state("d1", running=3), state("d2", running=1, waiting=1), state("d3", running=4)]
    decision, tbt = Mooncake(MooncakeConfig()).pick_decode(Req(), ctx("d1", "d2", "d3"), pool)
    assert decision.node == "d2" and tbt == pytest.approx(0.02)
    assert "estimated TBT 20.0 ms with 3 requests" in decision.reason and "1 fewer request than" in decision.reason
    assert all(dict(c.features)["tbt_ms"] == pytest.approx(20.0) for c in decision.candidates)


def test_a_lead_of_one_free_block_reads_in_the_singular():
    pool = [state("d1", running=1, free=5), state("d2", running=1, free=4)]
    decision, _ = Mooncake(MooncakeConfig()).pick_decode(Req(), ctx("d1", "d2"), pool)
    assert decision.node == "d1" and "1 more block free than the next" in decision.reason


def test_the_decode_reason_counts_one_request_and_one_block_in_the_singular():
    """An idle decode instance read "estimated TBT 20.1 ms with 1 requests"."""
    pool = [state("d1", running=0, free=1)]
    decision, _ = Mooncake(MooncakeConfig()).pick_decode(Req(), ctx("d1"), pool)
    assert "ms with 1 request, 1 block free (least loaded)" in decision.reason, decision.reason


def test_estimates_past_the_slo_reject_early_with_the_numbers_or_only_say_so():
    prefill = [queued(state("p"), 0.9)]  # 900 + 180 = 1,080 ms
    decode = [state("d")]
    pair = Mooncake(MooncakeConfig(ttft_slo_ms=1000)).decide_pair(Req(), ctx("p", "d"), prefill, decode)
    assert pair.prefill.node is None and pair.decode.node is None
    assert pair.decode.reason.startswith("early rejection: estimated TTFT 1,080 ms on p > TTFT SLO 1,000 ms")
    assert [c.node for c in pair.prefill.candidates] == ["p"] and [c.node for c in pair.decode.candidates] == ["d"]
    req = Req()
    req.slo_tpot_s = 0.015  # the request's own SLO when the router sets none: 20 ms > 15 ms
    pair = Mooncake(MooncakeConfig()).decide_pair(req, ctx("p", "d"), prefill, decode)
    assert pair.decode.reason.startswith("early rejection: estimated TBT 20.0 ms on d > TBT SLO 15.0 ms")
    pair = Mooncake(MooncakeConfig(early_rejection=False)).decide_pair(req, ctx("p", "d"), prefill, decode)
    assert pair.nodes() == ("p", "d") and "would be rejected early" in pair.decode.reason
    assert Mooncake(MooncakeConfig()).decide_pair(Req(), ctx("p", "d"), prefill, decode).nodes() == ("p", "d")


def overloaded(policy: str = "mooncake"):
    sc = load_scenario(SCENARIOS / "disaggregation.yaml", ["workload.arrival.rate=10", "workload.duration_s=12"])
    sim = Simulation(sc, policy=policy)
    events = []
    sim.subscribe(events.append)
    sim.run()
    return sim, events


def test_on_the_engine_both_picks_are_recorded_and_overload_is_rejected_early():
    sim, events = overloaded()
    routed = [e for e in events if isinstance(e, RouteDecided) and e.node is not None]
    decoded = [e for e in events if isinstance(e, DecodeRouted) and e.node is not None]
    assert routed and len(routed) == len(decoded)
    assert all({c.node for c in e.candidates} == {"prefill-a", "prefill-b"} for e in routed)
    assert all("ttft_ms" in dict(c.features) for e in routed for c in e.candidates)
    assert all({c.node for c in e.candidates} == {"decode-a", "decode-b"} and "estimated TBT" in e.reason for e in decoded)
    rejected = [e for e in events if isinstance(e, RequestRejected)]
    assert rejected and all(e.reason.startswith("early rejection: estimated") for e in rejected)
    assert "Mooncake's conductor estimates the TTFT" in explain(rejected[0])
    assert sim.router.report()["mooncake"]["early_rejections"] == len(rejected)
    _, plain = overloaded("llm_d_pd")
    assert not [e for e in plain if isinstance(e, RequestRejected)], "the same load without the SLO check queues"


def test_the_config_is_validated_with_file_and_line(tmp_path):
    base = (SCENARIOS / "disaggregation.yaml").read_text()
    for bad, words in (("{ttft_slo_ms: -5}", "ttft_slo_ms"), ("{tbt_slo: 5}", "tbt_slo")):
        path = tmp_path / "bad.yaml"
        path.write_text(base.replace("router: {policy: llm_d_pd, routing_overhead_ms: 1}",
                                     textwrap.dedent(f"router: {{policy: mooncake, mooncake: {bad}}}")))
        with pytest.raises(InputError) as e:
            load_scenario(path)
        assert "bad.yaml:" in str(e.value) and words in str(e.value)
