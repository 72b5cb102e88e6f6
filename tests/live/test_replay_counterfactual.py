"""Counterfactual replay (`kvtui replay DIR --as POLICY --no-ui`) on a recording made here: two
engines whose cores are vLLM 0.33.0's real BlockPool and ZmqEventPublisher behind thin HTTP
fronts (tests/live/route_support.py), kvtui's proxy routing a shared-prefix workload round robin,
recorded (the index built from the engines' real KV events is recorded too, but round robin
does not read it: a recording under cache_aware depends on when the engines' /metrics were
scraped, which the test does not control, so its misses may go to either engine).

Checked: replayed under the policy that routed it, the simulation serves every request the same
number of cached blocks the real pools served (request by request) on the same engines; under
another policy the run is deterministic (the same event digest twice, and from the command);
bad input exits 2 naming the file or the flag."""

from __future__ import annotations


import pytest

from kvtui.cli import main
from kvtui.live.recording import Recorder
from kvtui.run.counterfactual import replay
from kvtui.run.recorded_traffic import read_traffic
from kvtui.scenario.loader import load_scenario

from .live_support import prompts
from .route_support import post, routed_cluster, wait_until

REQUESTS = 60


@pytest.fixture(scope="module")
def recording(tmp_path_factory):
    """A route-mode recording under round robin: each request sent once the last one's KV
    events have reached kvtui (the proxy's index is up to date at every decision, as the
    simulation's is with `router.index.delay_ms: 0`)."""
    path = str(tmp_path_factory.mktemp("cf") / "rec")
    with routed_cluster("round_robin", path) as c:
        wait_until(lambda: len(c.session.state.figures) == 2)
        for k, tokens in enumerate(prompts(11, REQUESTS)):
            post(c.url, {"model": "m", "prompt": " ".join(map(str, tokens)), "max_tokens": 1})
            wait_until(lambda n=k + 1: len(c.session.state.served) == n
                       and all(s.expected >= f.pub.sent for s, f in zip(c.session.subscribers, c.fronts)))
        fronts_hits = [list(f.hits) for f in c.fronts]
    return path, fronts_hits


def _base(block_size: int = 4):
    return load_scenario("kvtui/calibrate/base.yaml", [f"cluster.block_size={block_size}"])


def test_the_same_policy_replay_serves_every_request_the_recorded_hits(recording):
    path, fronts_hits = recording
    traffic = read_traffic(path)
    assert traffic.policy == "round_robin" and len(traffic.requests) == REQUESTS
    assert sum(r.hit for r in traffic.requests) == sum(map(sum, fronts_hits)) > 0
    r = replay(traffic, _base(), "round_robin")
    assert r.simulated.hits == r.recorded.hits  # request by request
    assert r.simulated.served == r.recorded.served
    assert r.simulated.hit_rate == r.recorded.hit_rate


def test_another_policy_gives_a_deterministic_run(recording, capsys):
    path, _ = recording
    traffic = read_traffic(path)
    one, two = (replay(traffic, _base(), "cache_aware") for _ in range(2))
    assert one.digest == two.digest and one.simulated == two.simulated
    assert one.simulated.hit_rate > one.recorded.hit_rate  # affinity pays on shared prefixes
    assert main(["replay", path, "--as", "cache_aware", "--no-ui", "--set", "cluster.block_size=4"]) == 0
    out = capsys.readouterr().out
    assert f"digest {one.digest}" in out and "hit rate (blocks)" in out and "check (" not in out
    assert main(["replay", path, "--as", "round_robin", "--no-ui"]) == 0
    assert f"per-request hits equal for {REQUESTS}/{REQUESTS} requests" in capsys.readouterr().out


@pytest.mark.parametrize("argv, says", [
    (["--as", "nope", "--no-ui"], "--as: "),
    (["--as", "llm_d_pd", "--no-ui"], "--as llm_d_pd: it picks a prefill and a decode node"),
    (["--as", "round_robin"], "the app needs a terminal"),
    (["--vs", "--no-ui"], "--vs goes with --as POLICY"),
])
def test_bad_flags_exit_2_naming_the_flag(recording, capsys, argv, says):
    path, _ = recording
    assert main(["replay", path, *argv]) == 2
    assert says in capsys.readouterr().err


def test_a_recording_without_routed_requests_is_refused_with_its_path(tmp_path, capsys):
    from kvtui.live.delivery import Watching

    rec = Recorder(str(tmp_path / "plain"))
    rec.add(Watching("e0", 1.0))
    rec.close()
    assert main(["replay", str(tmp_path / "plain"), "--as", "round_robin", "--no-ui"]) == 2
    assert f"{tmp_path / 'plain'}: not a route-mode recording" in capsys.readouterr().err


def test_a_recording_made_before_the_keys_were_kept_is_refused(recording, tmp_path, capsys):
    from dataclasses import replace

    from kvtui.live.delivery import Served
    from kvtui.live.recording import read_recording

    old = Recorder(str(tmp_path / "old"))
    for d in read_recording(recording[0]):
        old.add(replace(d, block_keys=(), routed_at=None) if isinstance(d, Served) else d)
    old.close()
    assert main(["replay", str(tmp_path / "old"), "--as", "round_robin", "--no-ui"]) == 2
    assert f"{REQUESTS} of {REQUESTS} routed requests lack their block keys" in capsys.readouterr().err


def test_replay_no_ui_says_what_the_router_gave_away(recording, capsys):
    """Plain `replay --no-ui` (and `live`, the same lines) carries the recorded side's figure."""
    path, _ = recording
    rec = replay(read_traffic(path), _base(), "round_robin").recorded
    assert main(["replay", path, "--no-ui"]) == 0
    line = next(x for x in capsys.readouterr().out.splitlines() if x.startswith("available vs achieved"))
    assert f"best engine with {100 * rec.available:.1f}%" in line
    assert f"({100 * (rec.available - rec.chosen):.1f} pp given away), served {100 * rec.hit_rate:.1f}%" in line
    assert rec.available > rec.chosen  # round robin left hits on the other engine
