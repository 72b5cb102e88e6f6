"""Live and recorded runs are run sources like the simulation (kvtui/run/live.py): what real
engines sent becomes the project's events (kvtui/live/translate.py), the same whether it comes
live or from a recording, and goes through the same journal, metrics, narration and step back."""

from __future__ import annotations

from kvtui.events import BlocksEvicted, KVEventsLost, MissesAttributed, RequestCompleted, RouteDecided
from kvtui.live.recording import Recorder, read_recording
from kvtui.live.translate import translate
from kvtui.run import SEEK_KINDS, Run, digest
from kvtui.run.live import CHECKPOINT_EVERY, LiveSource

from live.made_recording import made_recording, made_routed_recording


def _picture(run: Run) -> tuple:
    view = run.view()
    return (tuple((n.name, n.gpu.state.tobytes(), n.gpu.owner) for n in view.nodes), list(run.log),
            [d.seq for d in run.decisions], run.metrics.ttft, run.source.node_notes())


def test_the_live_path_and_replay_give_the_same_event_stream(tmp_path):
    """Deliveries handed one by one to a following live source (what `kvtui live` does with
    its session's listener) and the same deliveries recorded and read back by `kvtui replay`
    give one event stream: the same digest."""
    deliveries = made_routed_recording() + made_recording(requests=40)
    live = LiveSource(live=True)
    recorder = Recorder(str(tmp_path / "rec"))
    for d in deliveries:
        recorder.add(d)
        live.receive(d)
    recorder.close()
    replayed = LiveSource(read_recording(str(tmp_path / "rec")))
    replayed.goto(replayed.end)
    assert live.position == replayed.position == len(live.events) > 500
    assert digest(live.events) == digest(replayed.events) == digest(translate(deliveries))
    assert _picture(Run(source=live, name="live")) == _picture(Run(source=replayed, name="replay"))


def test_route_mode_feeds_the_decision_log_the_why_and_the_histograms():
    run = Run(source=LiveSource(made_routed_recording()), name="replay")
    decision = run.seek(SEEK_KINDS["decision"], budget_s=60)
    assert isinstance(decision, RouteDecided) and decision.policy == "load_prefix"
    assert f"So load_prefix routes to {decision.node}" in run.explain(decision)
    run.goto(run.source.end)
    assert len(run.decisions) == run.metrics.completed == 60
    assert len(run.metrics.ttft) == len(run.metrics.e2e) == 60 and run.metrics.tpot
    misses = [ev for ev in run.log if isinstance(ev, MissesAttributed)]
    assert misses and any(m.causes for m in misses)
    why = run.explain(next(m for m in misses if m.causes))
    assert "missed as" in why
    life = run.journal.life(decision.request)
    assert [type(ev).__name__ for ev in life] == ["RequestArrived", "RouteDecided", "FirstToken", "MissesAttributed",
                                                 "RequestCompleted"]
    done = life[-1]
    assert isinstance(done, RequestCompleted) and done.ttft <= done.e2e


def test_back_and_goto_rebuild_the_picture_stepping_forward_made():
    source = LiveSource(made_recording(requests=2 * CHECKPOINT_EVERY))
    run, pictures = Run(source=source, name="r"), {}
    while run.step(fold=False) is not None:
        pictures[run.position] = _picture(run)
    for p in (source.end - 1, CHECKPOINT_EVERY + 3, CHECKPOINT_EVERY, 7, 1):
        run.goto(p)
        assert _picture(run) == pictures[p], p
    run.back()
    assert run.position == 0 and run.node_names() == []


def test_seek_lands_on_the_next_eviction_and_gap_and_nothing_is_commanded():
    run = Run(source=LiveSource(made_recording()), name="r")
    assert isinstance(run.seek(SEEK_KINDS["eviction"], 60), BlocksEvicted)
    assert isinstance(run.seek(SEEK_KINDS["gap"], 60), KVEventsLost)
    assert "never arrived" in run.explain(run.current)
    at = run.position
    assert run.seek(SEEK_KINDS["gap"], 60) is None and run.position == at
    assert not any(run.can(c) for c in ("node_down", "crash", "restart", "policy"))
    assert run.toggle_node(run.node_names()[0]) is None and run.node_is_up(run.node_names()[0])


def test_following_moves_with_new_events_and_a_step_holds_the_picture():
    deliveries = made_recording()
    source = LiveSource(live=True)
    for d in deliveries[:50]:
        source.receive(d)
    assert source.position == source.end and source.following
    source.step()
    held = source.position
    for d in deliveries[50:]:
        source.receive(d)
    assert source.position == held < source.end and not source.ended
    source.follow()
    assert source.position == source.end and source.following


def test_the_live_history_is_capped_and_says_so(monkeypatch):
    source = LiveSource(live=True, kept=600, kept_bytes=1 << 30)
    for d in made_recording(requests=400):
        source.receive(d)
    assert len(source.events) <= 600 and source.dropped + len(source.events) == source.end
    source.goto(0)  # as far back as is kept
    assert source.position == source.first == source.dropped > 0
    # a real engine's block events name no request: no one "life" gathers them all (it did, and
    # every checkpoint copied it: 150,000 deliveries took 409 s and 1.5 GB, now 14 s and 117 MB)
    assert "" not in source.journal.lives
