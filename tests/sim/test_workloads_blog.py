"""The predicted-latency blog's workloads: inference-perf's shared-prefix generator, SLO fields on
requests, and the shipped scenarios (workload A-D and their small variants, ShareGPT, MaaS, the
QPS ladder)."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

import numpy as np
import pytest
from kvtui.sim import loop

from kvtui.scenario import load_scenario
from kvtui.scenario.model import SLO, Arrival, PrefixGroup, SharedPrefix, Trace, Workload
from kvtui.sim.engine import Simulation
from kvtui.sim.request import Request
from kvtui.sim.workload import SharedPrefixWorkload, SyntheticWorkload
from kvtui.sim.workload.shared_prefix import spread_lengths

BS = 16
SCENARIOS = Path(__file__).resolve().parents[2] / "scenarios"


class Cluster:
    """Completes every request `delay` s after it arrives, or rejects the ones `reject` picks."""

    def __init__(self, env: loop.Environment, delay: float = 0.5, reject=lambda req: False):
        self.env, self.delay, self.reject = env, delay, reject
        self.requests: list[Request] = []

    def submit(self, req: Request) -> loop.Event:
        assert req.arrival == self.env.now
        self.requests.append(req)
        if self.reject(req):
            ev = self.env.event()
            ev.succeed("rejected")
            return ev
        return self.env.timeout(self.delay, value="completed")


def run(sp: SharedPrefix, seed: int = 0, requests: int = 60, rate: float = 20.0, **cluster):
    env = loop.Environment()
    fake = Cluster(env, **cluster)
    spec = Workload(arrival=Arrival(rate=rate), requests=requests, shared_prefix=sp)
    wl = SharedPrefixWorkload(spec, BS, np.random.default_rng(seed))
    wl.start(env, fake.submit)
    env.run()
    return wl, fake.requests


SMALL = SharedPrefix(num_groups=3, num_prompts_per_group=4, system_prompt_len=64, question_len=40, output_len=50)


def test_counts_groups_and_users():
    wl, reqs = run(SMALL, requests=36)
    assert len(reqs) == 36
    assert len(wl.users) == 12 and len(wl.prompts) == 3
    per_user = defaultdict(int)
    for r in reqs:
        per_user[r.session] += 1
    assert len(per_user) == 12 and set(per_user.values()) == {3}  # user i mod 12, round i div 12
    assert {r.group for r in reqs} == {"g0", "g1", "g2"}


def test_each_round_sends_the_same_question_and_output_length():
    _, reqs = run(SMALL, requests=36)
    by_user = defaultdict(list)
    for r in reqs:
        by_user[r.session].append(r)
    for rounds in by_user.values():
        assert len({r.output_tokens for r in rounds}) == 1
        assert [r.turn for r in rounds] == [1, 2, 3]


@pytest.mark.parametrize("kind", ["uniform", "normal"])
def test_spread_bounds(kind):
    x = spread_lengths(1000, 0.3, kind, 5000, np.random.default_rng(1))
    assert x.min() >= 700 and x.max() <= 1300
    assert x.min() < 760 and x.max() > 1240  # the spread is used
    assert abs(x.mean() - 1000) < 20
    assert (spread_lengths(1000, 0.0, kind, 10, np.random.default_rng(1)) == 1000).all()


def test_lengths_stay_in_the_spread():
    sp = SharedPrefix(num_groups=4, num_prompts_per_group=50, system_prompt_len=100, question_len=100,
                      output_len=200, multi_turn=False)
    wl, reqs = run(sp, requests=200)
    assert all(70 <= u.question_len <= 130 and 140 <= u.output_len <= 260 for u in wl.users)
    assert all(r.prompt_tokens == 100 + wl.users[int(r.session[1:])].question_len for r in reqs)


def test_multi_turn_round_extends_the_previous_prompt_and_answer():
    _, reqs = run(SMALL, requests=36)
    by_user = defaultdict(list)
    for r in reqs:
        by_user[r.session].append(r)
    for rounds in by_user.values():
        for prev, nxt in zip(rounds, rounds[1:]):
            total = prev.prompt_tokens + prev.output_tokens
            question = rounds[0].prompt_tokens - 64  # round 1 is the system prompt + the question
            assert nxt.prompt_tokens == total + question  # history, then the same question again
            full = total // BS
            assert nxt.block_keys[:full] == prev.block_keys[:full]


def test_group_members_share_the_system_prompt_blocks_only():
    _, reqs = run(SMALL, requests=12)
    firsts = defaultdict(list)
    for r in reqs:
        firsts[r.group].append(r.block_keys)
    system_blocks = 64 // BS
    for keys in firsts.values():
        assert len({k[:system_blocks] for k in keys}) == 1
        assert len({k[system_blocks] for k in keys}) == len(keys)  # questions differ


def test_rounds_of_a_user_never_overlap():
    sp = SharedPrefix(num_groups=1, num_prompts_per_group=2, system_prompt_len=32, question_len=16, output_len=16)
    _, reqs = run(sp, requests=10, rate=100.0, delay=1.0)
    by_user = defaultdict(list)
    for r in reqs:
        by_user[r.session].append(r.arrival)
    for times in by_user.values():
        assert all(b - a >= 1.0 - 1e-9 for a, b in zip(times, times[1:]))


def test_a_failed_round_keeps_the_context():
    sp = SharedPrefix(num_groups=1, num_prompts_per_group=1, system_prompt_len=32, question_len=16, output_len=16)
    _, reqs = run(sp, requests=3, reject=lambda r: r.turn == 2)
    assert reqs[2].prompt_tokens == reqs[1].prompt_tokens  # round 2 failed: round 3 resends its context


def test_without_multi_turn_a_repeat_is_the_same_prompt():
    sp = SharedPrefix(num_groups=2, num_prompts_per_group=2, system_prompt_len=64, question_len=32,
                      output_len=16, multi_turn=False)
    _, reqs = run(sp, requests=8)
    by_user = defaultdict(list)
    for r in reqs:
        by_user[r.session].append(r)
    for a, b in by_user.values():
        n = a.prompt_tokens // BS
        assert a.prompt_tokens == b.prompt_tokens and a.block_keys[:n] == b.block_keys[:n]


def test_max_context_trims_oldest_rounds():
    sp = SharedPrefix(num_groups=1, num_prompts_per_group=1, system_prompt_len=32, question_len=16,
                      output_len=16, question_spread=0, output_spread=0, max_context_tokens=128)
    _, reqs = run(sp, requests=8)
    assert all(r.prompt_tokens + r.output_tokens <= 128 for r in reqs)
    assert reqs[-1].prompt_tokens > reqs[0].prompt_tokens


def test_rounds_cap():
    sp = SharedPrefix(num_groups=2, num_prompts_per_group=3, system_prompt_len=16, question_len=16,
                      output_len=16, rounds=2)
    _, reqs = run(sp, requests=None)
    assert len(reqs) == 12


def test_same_seed_same_requests_different_seed_different():
    def digest(seed):
        _, reqs = run(SMALL, seed=seed, requests=30)
        return [(r.session, r.prompt_tokens, r.output_tokens, r.block_keys, r.arrival) for r in reqs]

    assert digest(3) == digest(3)
    assert digest(3) != digest(4)


def test_requests_do_not_depend_on_service_times():
    """A user's draws come from its own stream, so a slower cluster changes only the timing."""

    def content(delay):
        _, reqs = run(SMALL, requests=36, delay=delay)
        return sorted((r.session, r.turn, r.prompt_tokens, r.block_keys) for r in reqs)

    assert content(0.01) == content(3.0)


# ------------------------------------------------------------------------------------------ SLOs
def test_slo_reaches_the_request_shared_prefix():
    sp = SharedPrefix(num_groups=1, num_prompts_per_group=2, slo=SLO(ttft_ms=200, tpot_ms=50), sheddable=True)
    _, reqs = run(sp, requests=4)
    assert all(r.slo_ttft_s == pytest.approx(0.2) and r.slo_tpot_s == pytest.approx(0.05) and r.sheddable for r in reqs)


def test_slo_reaches_the_request_synthetic_groups():
    env = loop.Environment()
    fake = Cluster(env)
    groups = (
        PrefixGroup(name="gold", slo=SLO(ttft_ms=500)),
        PrefixGroup(name="batch", sheddable=True),
    )
    spec = Workload(arrival=Arrival(rate=5), groups=groups, group_order="cycle", requests=4)
    SyntheticWorkload(spec, BS, np.random.default_rng(0)).start(env, fake.submit)
    env.run()
    gold = [r for r in fake.requests if r.group == "gold"]
    batch = [r for r in fake.requests if r.group == "batch"]
    assert gold and batch
    assert all(r.slo_ttft_s == pytest.approx(0.5) and r.slo_tpot_s is None and not r.sheddable for r in gold)
    assert all(r.slo_ttft_s is None and r.slo_tpot_s is None and r.sheddable for r in batch)


def test_slo_reaches_the_request_trace():
    from kvtui.sim.workload.trace import TraceWorkload

    trace = Trace(format="mooncake", path=str(SCENARIOS / "traces" / "mooncake-conversation-400.jsonl"), limit=3,
                  slo=SLO(tpot_ms=40), sheddable=True)
    env = loop.Environment()
    fake = Cluster(env)
    TraceWorkload(trace, Arrival(), BS, np.random.default_rng(0)).start(env, fake.submit)
    env.run()
    assert len(fake.requests) == 3
    assert all(r.slo_ttft_s is None and r.slo_tpot_s == pytest.approx(0.04) and r.sheddable for r in fake.requests)


def test_slo_loads_from_yaml(tmp_path):
    f = tmp_path / "s.yaml"
    f.write_text(
        "workload:\n  shared_prefix: {num_groups: 2, slo: {ttft_ms: 300}, sheddable: true}\n"
    )
    sc = load_scenario(f)
    assert sc.workload.shared_prefix.slo == SLO(ttft_ms=300) and sc.workload.shared_prefix.sheddable


def test_trace_and_shared_prefix_together_is_an_error(tmp_path):
    from kvtui.errors import InputError

    f = tmp_path / "s.yaml"
    f.write_text(
        "workload:\n  shared_prefix: {num_groups: 2}\n"
        f"  trace: {{format: mooncake, path: {SCENARIOS / 'traces' / 'mooncake-conversation-400.jsonl'}}}\n"
    )
    with pytest.raises(InputError, match="not both"):
        load_scenario(f)


# ------------------------------------------------------------------------------------- scenarios
NEW = ["workload-a", "workload-b", "workload-c", "workload-d", "workload-a-small", "workload-b-small",
       "workload-c-small", "workload-d-small", "sharegpt", "sharegpt-small", "maas", "qps-ladder"]


@pytest.mark.parametrize("name", NEW)
def test_scenario_validates_and_says_what_it_teaches(name):
    path = SCENARIOS / f"{name}.yaml"
    assert path.read_text().startswith(f"# {name}.yaml:")
    sc = load_scenario(path)
    assert sc.router.policy == "load_prefix"


@pytest.mark.parametrize("name", ["workload-a", "workload-b", "workload-c", "workload-d"])
def test_blog_parameters(name):
    sc = load_scenario(SCENARIOS / f"{name}.yaml")
    sp = sc.workload.shared_prefix
    expected = {"workload-a": (6, 1000, 1000, 30), "workload-b": (6, 1000, 1000, 3000),
                "workload-c": (150, 5, 6000, 1200), "workload-d": (150, 5, 1000, 6200)}[name]
    assert (sp.num_groups, sp.num_prompts_per_group, sp.system_prompt_len, sp.question_len) == expected
    assert sp.output_len == 1000 and sp.question_spread == sp.output_spread == 0.3 and sp.multi_turn
    assert len(sc.cluster.nodes) == 10 and sc.cluster.tensor_parallel == 2
    assert list(sc.workload.arrival.ladder) == sorted(sc.workload.arrival.ladder)


def test_sharegpt_small_is_sharegpt_on_a_quarter_of_the_nodes_at_a_quarter_of_the_rates():
    full, small = (load_scenario(SCENARIOS / f"{n}.yaml") for n in ("sharegpt", "sharegpt-small"))
    assert len(full.cluster.nodes) == 4 * len(small.cluster.nodes)
    assert [r / 4 for r in full.workload.arrival.ladder] == list(small.workload.arrival.ladder)
    assert full.workload.arrival.rate == 4 * small.workload.arrival.rate
    assert full.workload.groups == small.workload.groups and full.cluster.tensor_parallel == small.cluster.tensor_parallel


@pytest.mark.parametrize("name", ["workload-a-small", "workload-b-small", "workload-c-small", "workload-d-small", "sharegpt-small"])
def test_small_variant_runs(name):
    sc = load_scenario(SCENARIOS / f"{name}.yaml", ["workload.requests=40"])
    sim = Simulation(sc)
    sim.run()
    m = sim.metrics
    assert m.arrived == 40
    assert m.completed == 40


def test_ladder_rises():
    sc = load_scenario(SCENARIOS / "qps-ladder.yaml")
    ladder = sc.workload.arrival.ladder
    assert len(ladder) >= 5 and all(a < b for a, b in zip(ladder, ladder[1:]))
