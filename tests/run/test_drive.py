"""The engine's drive loop and views: time travel replays exactly, jumps that find nothing
stay, commands are part of the run's history, views are read-only."""

from __future__ import annotations

import pytest

from kvtui.events import BatchStepped, BlocksStored, Event, NodeDown
from kvtui.scenario import load_scenario
from kvtui.run.drive import Drive, digest
from kvtui.views import CACHED, FREE, PINNED, USED

SCENARIO = "tests/tui/scenario.yaml"


@pytest.fixture(scope="module")
def scenario():
    return load_scenario(SCENARIO, [])


def _journal_digest(d: Drive) -> str:
    return digest(list(d.journal.decisions) + list(d.journal.log))


def test_back_then_forward_equals_straight_stepping(scenario):
    straight = Drive(scenario)
    for _ in range(700):
        straight.step()
    d = Drive(scenario, every=100)
    for _ in range(650):
        d.step()
    d.maintain(60.0)
    for _ in range(40):
        d.back()
    assert d.position == 610
    while d.position < 700:
        d.step()
    assert d.run.last == straight.run.last
    assert _journal_digest(d) == _journal_digest(straight)
    assert d.journal.counts == straight.journal.counts
    assert d.sim.metrics.ttft == straight.sim.metrics.ttft


def test_back_with_fold_skips_stored_and_batch(scenario):
    d = Drive(scenario)
    for _ in range(300):
        d.step()
    ev = d.back(fold=(BlocksStored, BatchStepped))
    assert ev.kind not in ("stored", "batch")
    assert d.position < 300


def test_commands_replay_at_their_moment(scenario):
    d = Drive(scenario, every=50)
    for _ in range(200):
        d.step()
    down = d.command("node_down", "node-a")
    assert down.kind == "node_down"
    for _ in range(100):
        d.step()
    expect, at = d.run.last, d.position
    d.goto(150)  # before the command: node-a is up again
    assert d.sim.node_by_name["node-a"].up
    d.goto(at)  # forward again: the command is replayed at event 200
    assert not d.sim.node_by_name["node-a"].up
    assert d.run.last == expect


def test_seek_that_finds_nothing_stays(scenario):
    d = Drive(scenario)
    ev = d.seek([NodeDown], budget_s=60)
    assert ev.kind == "node_down"
    at, t = d.position, d.now
    class NeverEmitted(Event):
        pass

    again = d.seek([NeverEmitted], budget_s=60)
    assert again is None and d.position == at and d.now == t and not d.ended


def test_goto_time_back_and_forward(scenario):
    d = Drive(scenario)
    d.advance(8.0, budget_s=60)
    d.goto_time(3.0)
    assert d.now == pytest.approx(3.0)
    assert all(t <= 3.0 for t in d.times[: d.position])


def test_views_are_read_only_and_consistent(scenario):
    d = Drive(scenario)
    for _ in range(400):
        d.step()
    view = d.view()
    for nv in view.nodes:
        tier = nv.gpu
        assert tier.name == "gpu" and len(tier.state) == nv.num_blocks == len(tier.owner)
        with pytest.raises(ValueError):
            tier.state[0] = FREE
        node = d.sim.node_by_name[nv.name]
        assert tier.used == node.pool.used_count
        assert set(tier.state.tolist()) <= {FREE, CACHED, USED, PINNED}
    nv = view.nodes[0]
    idx = next(i for i, s in enumerate(nv.gpu.state) if s == CACHED)
    b = d.block(nv.name, idx)
    assert b.state == "cached" and b.tier == "gpu" and b.key is not None and b.lru is not None and b.ref == 0
    assert b.stored_by is not None
    assert d.block(nv.name, 10**6) is None


def test_the_byte_budget_drops_checkpoints_farthest_first_and_changes_no_event(scenario):
    """Memory (here a stand-in figure: 100 bytes per event a checkpoint has run) over the budget
    drops the checkpoints farthest from the position, keeps the ladder just below it, builds no
    more than fit, and stepping back still lands on the same events (issue 25)."""
    from kvtui.run.checkpoint_budget import CheckpointBudget

    straight = Drive(scenario)
    for _ in range(650):
        straight.step()
    d = Drive(scenario, every=100, near_every=16)
    d.budget = CheckpointBudget(limit_bytes=150_000, measure=lambda: 100 * sum(c.position for c in d.checkpoints))
    for _ in range(700):
        d.step()
    d.maintain(60.0)
    assert d.budget.dropped > 0 and 100 * sum(c.position for c in d.checkpoints) <= 150_000
    assert d.checkpoints and min(700 - c.position for c in d.checkpoints) <= 16  # the nearest survived
    assert d.max_checkpoints == len(d.checkpoints)
    for _ in range(50):
        d.back()
        d.maintain(60.0)
    assert d.position == 650 and d.run.last == straight.run.last
    assert _journal_digest(d) == _journal_digest(straight)


def test_one_numbering_event_n_is_the_nth_event_even_after_commands(scenario):
    """QA: after `d`/`c` the header (position) counted stepped events while the panels show the
    event's own number, and `g #N` landed elsewhere. A command's events are stepped like any
    other, so position N is always the event numbered N, forward, back and by go-to."""
    d = Drive(scenario, every=50)
    for _ in range(200):
        d.step()
    down = d.command("node_down", "node-a")
    assert d.position == d.run.last.seq >= down.seq
    up = d.command("node_up", "node-a")
    assert d.position == d.run.last.seq >= up.seq
    seen = {}
    for _ in range(100):
        ev = d.step()
        assert ev.seq == d.position
        seen[ev.seq] = ev
    for n in (down.seq, up.seq, down.seq - 1, up.seq + 1, 290):
        d.goto(n)
        assert d.position == n and d.run.last.seq == n
    d.goto(up.seq + 2)
    for _ in range(4):
        ev = d.back()
        assert ev.seq == d.position
    d.goto(300)
    assert d.run.last == seen[300]


def test_a_checkpoint_half_built_survives_a_step_back_and_changes_no_event(scenario):
    """Issue 35: each step back threw away the checkpoint the idle builder had half built, so
    under a string of presses with little idle time between them none far from the start was
    finished. It is kept where it got to (below the new position) and the next idle moment goes
    on from there; the events stay the same."""
    straight = Drive(scenario)
    for _ in range(590):
        straight.step()
    d = Drive(scenario, every=300, near=0, clock=iter(range(10**6)).__next__)
    for _ in range(600):
        d.step()
    d.maintain(2)  # the clock ticks once a call: the builder stops part way
    assert d._builder is not None
    half = d._builder[0]
    assert 0 < half.position < 590
    d.back()
    assert d._builder is None and d.run is half  # the step back replayed from it, not from the start
    for _ in range(9):
        d.back()
    assert d.position == 590 and d.run.last == straight.run.last
    assert _journal_digest(d) == _journal_digest(straight)


def test_the_default_checkpoint_budget_scales_with_the_machine():
    from kvtui.run.checkpoint_budget import FLOOR_BYTES, default_budget_bytes

    assert default_budget_bytes(24 * 2**30) == 3 * 2**30
    assert default_budget_bytes(8 * 2**30) == 2**30
    assert default_budget_bytes(2**30) == FLOOR_BYTES
    assert default_budget_bytes(0) == FLOOR_BYTES
