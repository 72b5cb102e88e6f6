"""The synthetic workload and its distributions, driven by the engine's event loop with a fake cluster.

The fake `submit` completes every request after a fixed delay (or rejects it), so these tests
see only what the workload does: which requests, when, with which keys.
"""

from __future__ import annotations

import numpy as np
import pytest
from kvtui.sim import loop

from kvtui.scenario.model import Arrival, Dist, PrefixGroup, RatePoint, Workload, fixed
from kvtui.sim.distributions import sample, sample_int
from kvtui.sim.workload.hashing import chain_keys
from kvtui.sim.request import Request
from kvtui.sim.workload import Conversation, SyntheticWorkload, rate_at

BS = 16


class FakeCluster:
    """Completes each request `delay` seconds after it arrives; can reject chosen ones."""

    def __init__(self, env: loop.Environment, delay: float = 1.0, reject=lambda req: False):
        self.env = env
        self.delay = delay
        self.reject = reject
        self.requests: list[Request] = []
        self.in_flight = 0
        self.peak_in_flight = 0

    def submit(self, req: Request) -> loop.Event:
        assert req.arrival == self.env.now
        self.requests.append(req)
        if self.reject(req):
            ev = self.env.event()
            ev.succeed("rejected")
            return ev
        self.in_flight += 1
        self.peak_in_flight = max(self.peak_in_flight, self.in_flight)
        ev = self.env.timeout(self.delay, value="completed")
        ev.callbacks.append(self._done)
        return ev

    def _done(self, _ev) -> None:
        self.in_flight -= 1


def run(spec: Workload, seed: int = 0, until: float | None = None, **cluster) -> tuple[SyntheticWorkload, FakeCluster]:
    env = loop.Environment()
    fake = FakeCluster(env, **cluster)
    wl = SyntheticWorkload(spec, BS, np.random.default_rng(seed))
    wl.start(env, fake.submit)
    env.run(until=until)
    return wl, fake


def chat(name: str = "chat", system: int = 256, turns: Dist = fixed(3), **kw) -> PrefixGroup:
    return PrefixGroup(
        name=name,
        system_prompt_tokens=system,
        question_tokens=kw.pop("question", Dist(dist="uniform", low=20, high=200)),
        output_tokens=kw.pop("output", Dist(dist="uniform", low=10, high=300)),
        turns=turns,
        think_time_s=kw.pop("think", fixed(2.0)),
        **kw,
    )


def snapshot(reqs: list[Request]) -> list[tuple]:
    return [(r.id, r.session, r.group, r.turn, r.prompt_tokens, r.output_tokens, r.block_keys, r.arrival) for r in reqs]


# --------------------------------------------------------------------------- distributions
def test_fixed_draws_nothing_from_the_stream():
    rng = np.random.default_rng(1)
    assert sample(fixed(7.5), rng) == 7.5
    assert rng.random() == np.random.default_rng(1).random()


def test_uniform_normal_lognormal_shapes():
    rng = np.random.default_rng(2)
    u = [sample(Dist(dist="uniform", low=3, high=5), rng) for _ in range(2000)]
    assert 3 <= min(u) and max(u) <= 5
    n = np.array([sample(Dist(dist="normal", mean=100, std=10), rng) for _ in range(5000)])
    assert abs(n.mean() - 100) < 1 and 9 < n.std() < 11
    logn = np.array([sample(Dist(dist="lognormal", mean=500, sigma=1.0), rng) for _ in range(20000)])
    assert abs(logn.mean() / 500 - 1) < 0.05  # mean of the *result*, not of the log


def test_clipping_and_never_negative():
    rng = np.random.default_rng(3)
    clipped = [sample(Dist(dist="normal", mean=100, std=50, min=80, max=120), rng) for _ in range(1000)]
    assert min(clipped) == 80 and max(clipped) == 120
    assert min(sample(Dist(dist="normal", mean=0, std=10), rng) for _ in range(1000)) == 0.0


def test_sample_int_rounds_half_up():
    rng = np.random.default_rng(0)
    assert sample_int(fixed(2.5), rng) == 3
    assert sample_int(fixed(2.49), rng) == 2
    assert sample_int(fixed(0), rng) == 0


# --------------------------------------------------------------------------- conversations
@pytest.mark.parametrize("pieces", [[5, 30, 1, 16, 40], [16, 16], [0, 3], [100]])
def test_incremental_keys_equal_hashing_the_whole_sequence(pieces):
    rng = np.random.default_rng(4)
    tokens = [rng.integers(0, 2**31, n, dtype=np.int32) for n in pieces]
    conv = Conversation.of(tokens[0], BS)
    for more in tokens[1:]:
        conv.extend(more)
    whole = np.concatenate(tokens)
    assert conv.keys == chain_keys(whole, BS)
    assert conv.length == len(whole)


# --------------------------------------------------------------------------- sessions
def test_same_seed_same_requests_other_seed_other_requests():
    spec = Workload(arrival=Arrival(rate=2.0), groups=(chat("a"), chat("b", weight=2)), sessions=30)
    first = snapshot(run(spec, seed=5)[1].requests)
    assert first == snapshot(run(spec, seed=5)[1].requests)
    assert first != snapshot(run(spec, seed=6)[1].requests)


def test_ids_sessions_and_turns_are_numbered_in_order():
    spec = Workload(arrival=Arrival(rate=1.0), groups=(chat(turns=fixed(2)),), sessions=5)
    reqs = run(spec)[1].requests
    assert [r.id for r in reqs] == [f"req-{i}" for i in range(1, 11)]
    assert sorted({r.session for r in reqs}, key=lambda s: int(s[2:])) == [f"s-{i}" for i in range(1, 6)]
    for s in {r.session for r in reqs}:
        assert [r.turn for r in reqs if r.session == s] == [1, 2]
    assert [r.arrival for r in reqs] == sorted(r.arrival for r in reqs)


def test_next_turn_starts_with_the_previous_turns_whole_sequence():
    spec = Workload(arrival=Arrival(rate=1.0), groups=(chat(turns=fixed(5), system=100),), sessions=8)
    reqs = run(spec, delay=3.0)[1].requests
    by_session: dict[str, list[Request]] = {}
    for r in reqs:
        by_session.setdefault(r.session, []).append(r)
    for turns in by_session.values():
        assert len(turns) == 5
        for before, after in zip(turns, turns[1:]):
            assert after.block_keys[: len(before.block_keys)] == before.block_keys
            assert after.prompt_tokens > before.prompt_tokens + before.output_tokens
            # think time 2 s after a reply that took 3 s
            assert after.arrival == pytest.approx(before.arrival + 3.0 + 2.0)
    for r in reqs:
        assert len(r.block_keys) == (r.prompt_tokens + r.output_tokens) // BS


def test_groups_share_their_system_prompt_and_only_theirs():
    spec = Workload(arrival=Arrival(rate=5.0), groups=(chat("a", system=256), chat("b", system=100)), sessions=40)
    wl, fake = run(spec)
    keys_a, keys_b = wl.system_prompt_keys("a"), wl.system_prompt_keys("b")
    assert len(keys_a) == 16 and len(keys_b) == 100 // BS
    assert not set(keys_a) & set(keys_b)
    assert wl.system_prompt_keys("nope") == []
    seen = {r.group for r in fake.requests}
    assert seen == {"a", "b"}
    for r in fake.requests:
        own = keys_a if r.group == "a" else keys_b
        other = keys_b if r.group == "a" else keys_a
        assert list(r.block_keys[: len(own)]) == own
        assert not set(r.block_keys) & set(other)
    # sessions of one group share nothing beyond the system prompt
    firsts = [r for r in fake.requests if r.group == "a" and r.turn == 1][:2]
    assert firsts[0].block_keys[16] != firsts[1].block_keys[16]


def test_a_rejected_turn_ends_the_session():
    spec = Workload(arrival=Arrival(rate=1.0), groups=(chat(turns=fixed(4)),), sessions=6)
    _, fake = run(spec, reject=lambda r: r.turn == 2)
    assert max(r.turn for r in fake.requests) == 2
    assert len(fake.requests) == 12


# --------------------------------------------------------------------------- arrivals
def test_poisson_rate_is_about_right():
    spec = Workload(arrival=Arrival(process="poisson", rate=5.0), groups=(chat(turns=fixed(1)),), duration_s=200)
    wl, _ = run(spec, seed=11)
    assert 870 <= wl.sessions_started <= 1130  # 1000 +- 4 sigma


def test_gamma_keeps_the_mean_rate_and_is_bursty():
    spec = Workload(
        arrival=Arrival(process="gamma", rate=10.0, burstiness=4.0), groups=(chat(turns=fixed(1)),), sessions=4000
    )
    _, fake = run(spec, seed=12)
    gaps = np.diff([0.0] + [r.arrival for r in fake.requests])
    assert abs(gaps.mean() - 0.1) < 0.015
    assert 2.5 < gaps.var() / gaps.mean() ** 2 < 5.5  # squared CV ~ burstiness


def test_schedule_is_a_stepwise_rate():
    arrival = Arrival(rate=0.0, schedule=(RatePoint(at=10, rate=10.0), RatePoint(at=20, rate=0.0)))
    spec = Workload(arrival=arrival, groups=(chat(turns=fixed(1)),))
    _, fake = run(spec, seed=13, until=100)
    times = [r.arrival for r in fake.requests]
    assert all(10 <= t < 20 for t in times)
    assert 60 <= len(times) <= 140


def test_rate_at_reads_the_schedule():
    points = [RatePoint(at=5, rate=2.0), RatePoint(at=8, rate=2.0), RatePoint(at=9, rate=0.0)]
    assert rate_at(1.0, points, 0.0) == (1.0, 5)
    assert rate_at(1.0, points, 5.0) == (2.0, 9)  # a point that repeats the rate is no change
    assert rate_at(1.0, points, 9.5) == (0.0, None)


def test_closed_loop_never_exceeds_its_users():
    arrival = Arrival(process="closed_loop", users=4, think_time_s=Dist(dist="uniform", low=0, high=1))
    spec = Workload(arrival=arrival, groups=(chat(turns=Dist(dist="uniform", low=1, high=4), think=fixed(0.5)),))
    _, fake = run(spec, until=300, delay=1.0)
    assert fake.peak_in_flight == 4
    assert len(fake.requests) > 300


def test_closed_loop_users_facing_instant_rejection_do_not_stall_the_clock():
    arrival = Arrival(process="closed_loop", users=3)
    spec = Workload(arrival=arrival, groups=(chat(turns=fixed(1)),))
    wl, fake = run(spec, until=1.0, reject=lambda r: True)
    assert 0 < len(fake.requests) <= 3 * 101


# --------------------------------------------------------------------------- stop conditions and groups
def test_session_cap():
    spec = Workload(arrival=Arrival(rate=10.0), groups=(chat(turns=fixed(2)),), sessions=7)
    wl, fake = run(spec)
    assert wl.sessions_started == 7 and len({r.session for r in fake.requests}) == 7


def test_request_cap_stops_sessions_mid_way():
    spec = Workload(arrival=Arrival(rate=10.0), groups=(chat(turns=fixed(3)),), requests=10)
    wl, fake = run(spec)
    assert len(fake.requests) == 10 and wl.requests_issued == 10


def test_request_cap_in_closed_loop():
    spec = Workload(arrival=Arrival(process="closed_loop", users=5), groups=(chat(turns=fixed(3)),), requests=11)
    _, fake = run(spec)
    assert len(fake.requests) == 11


def test_duration_stops_new_sessions_not_running_ones():
    spec = Workload(arrival=Arrival(rate=2.0), groups=(chat(turns=fixed(3)),), duration_s=20)
    _, fake = run(spec, seed=3)
    assert all(r.arrival < 20 for r in fake.requests if r.turn == 1)
    assert any(r.arrival >= 20 for r in fake.requests)  # later turns of late sessions still go


def test_cycle_order_is_plain_alternation_by_default():
    groups = (chat("a"), chat("b"), chat("c"))
    spec = Workload(arrival=Arrival(rate=3.0), groups=groups, group_order="cycle", sessions=9)
    _, fake = run(spec)
    assert [r.group for r in fake.requests if r.turn == 1] == ["a", "b", "c"] * 3


def test_cycle_repeats_each_group_weight_times():
    groups = (chat("normal", weight=3), chat("big", weight=1), chat("never", weight=0))
    spec = Workload(arrival=Arrival(rate=3.0), groups=groups, group_order="cycle", sessions=8)
    _, fake = run(spec)
    assert [r.group for r in fake.requests if r.turn == 1] == ["normal"] * 3 + ["big"] + ["normal"] * 3 + ["big"]


def test_empty_question_repeats_the_system_prompt_exactly():
    spec = Workload(
        arrival=Arrival(process="closed_loop", users=1),
        groups=(chat("faq", system=1200, question=fixed(0), output=fixed(200), turns=fixed(1)),),
        sessions=3,
    )
    wl, fake = run(spec)
    assert [r.prompt_tokens for r in fake.requests] == [1200] * 3
    assert all(list(r.block_keys[:75]) == wl.system_prompt_keys("faq") for r in fake.requests)
    none = Workload(groups=(chat("x", system=0, question=fixed(0), turns=fixed(1)),), sessions=1)
    assert run(none)[1].requests[0].prompt_tokens == 1


def test_weighted_choice_follows_the_weights():
    groups = (chat("a", weight=3, turns=fixed(1)), chat("b", weight=1, turns=fixed(1)), chat("z", weight=0))
    spec = Workload(arrival=Arrival(rate=50.0), groups=groups, sessions=2000)
    _, fake = run(spec, seed=21)
    share_a = sum(r.group == "a" for r in fake.requests) / len(fake.requests)
    assert 0.71 < share_a < 0.79
    assert not any(r.group == "z" for r in fake.requests)


def test_one_sessions_fate_does_not_shift_the_others():
    """Per-session streams: rejecting every second turn changes no session's start, group or
    first prompt."""
    groups = (
        chat("a", turns=Dist(dist="uniform", low=1, high=5)),
        chat("b", think=Dist(dist="uniform", low=0, high=3)),
    )
    spec = Workload(arrival=Arrival(rate=2.0), groups=groups, duration_s=60)
    served = run(spec, seed=8)[1].requests
    refused = run(spec, seed=8, reject=lambda r: r.turn == 2)[1].requests

    def firsts(reqs):
        return [(r.session, r.group, r.arrival, r.prompt_tokens, r.block_keys) for r in reqs if r.turn == 1]

    assert firsts(served) == firsts(refused)
    assert len(served) > len(refused)
