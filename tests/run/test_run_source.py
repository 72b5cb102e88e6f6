"""A run the simulator does not make stands behind the same `Run` (kvtui/run/source.py).

`RecordedSource` plays back events recorded from a simulation, with no simulation behind it:
its own journal and metrics fed by the events, no block tables, no static facts. Stepped the
same way, the `Run` over it shows the same journal, figures and narration as the `Run` over
the simulation: what a live cluster's source (the next issue) will rely on.
"""

from __future__ import annotations

from typing import Iterable

import pytest

from kvtui.events import BlocksEvicted, Event, RouteDecided
from kvtui.run import SEEK_KINDS, Navigable, Run, explain
from kvtui.run.facts import NoFacts
from kvtui.run.journal import Journal
from kvtui.scenario import load_scenario
from kvtui.sim.engine import Simulation
from kvtui.sim.metrics import METRICS_EVENT_TYPES, Metrics
from kvtui.views import ClusterView, KeyFigures

SCENARIO = "tests/tui/scenario.yaml"
STEPS = 1_500


class RecordedSource(Navigable):
    """Recorded events played forward (back = replay from the start); no commands."""

    def __init__(self, events: list[Event], nodes: list[str]):
        self.events, self.nodes = events, nodes
        self._rewind()

    def _rewind(self) -> None:
        self._journal, self._metrics, self._position = Journal(), Metrics(), 0
        self._metrics.set_nodes(self.nodes)

    def _feed(self) -> Event:
        ev = self.events[self._position]
        self._position += 1
        self._journal.on_event(ev)
        if isinstance(ev, BlocksEvicted):
            self._metrics.evicted(ev.node, ev.keys, ev.groups, ev.for_request, ev.medium)
        elif isinstance(ev, METRICS_EVENT_TYPES):
            self._metrics.on_event(ev)
        return ev

    journal = property(lambda self: self._journal)
    metrics = property(lambda self: self._metrics)
    position = property(lambda self: self._position)
    ended = property(lambda self: self._position == len(self.events))
    last = property(lambda self: self.events[self._position - 1] if self._position else None)
    now = property(lambda self: self.last.t if self.last else 0.0)
    times = property(lambda self: [ev.t for ev in self.events[: self._position]])
    seek_origin = property(lambda self: None)
    control_plane_down = property(lambda self: False)

    def view(self) -> ClusterView:
        return ClusterView((), self.now, self._position)

    def block(self, node: str, index: int):
        return None

    def node_names(self) -> list[str]:
        return list(self.nodes)

    def node_is_up(self, name: str) -> bool:
        return True

    def key_figures(self) -> KeyFigures:
        m = self._metrics
        return KeyFigures(self.now, m.arrived, m.completed, m.rejected, m.preempted, m.evicted_blocks,
                          m.token_hit_rate, m.request_hit_rate, None, None)

    def facts(self) -> NoFacts:
        return NoFacts()

    def routing_headline(self) -> str:
        return ""

    def wal_counters(self) -> dict | None:
        return None

    def step(self, fold: Iterable[type[Event]] = ()) -> Event | None:
        fold = tuple(fold)
        while not self.ended:
            ev = self._feed()
            if not isinstance(ev, fold):
                return ev
        return None

    def back(self, fold: Iterable[type[Event]] = ()) -> Event | None:
        self.goto(self._position - 1)
        return self.last

    def goto(self, position: int, budget_s: float = float("inf")) -> bool:
        if position < self._position:
            self._rewind()
        while self._position < min(position, len(self.events)):
            self._feed()
        return True

    def goto_time(self, t: float, budget_s: float = float("inf")) -> bool:
        return self.goto(sum(1 for ev in self.events if ev.t <= t))

    def advance(self, target: float, budget_s: float) -> bool:
        return self.goto_time(target)

    def seek(self, kinds: Iterable[type[Event]], budget_s: float) -> Event | None | bool:
        kinds = tuple(kinds)
        while (ev := self.step()) is not None:
            if isinstance(ev, kinds):
                return ev
        return None

    def cancel_seek(self) -> None:
        pass

    def maintain(self, budget_s: float) -> bool:
        return True

    def command(self, name: str, arg: str | None = None) -> Event | None:
        return None  # a recording cannot be changed

    def close(self) -> None:
        pass


@pytest.fixture(scope="module")
def scenario():
    return load_scenario(SCENARIO)


@pytest.fixture(scope="module")
def recording(scenario):
    sim = Simulation(scenario)
    events: list[Event] = []
    sim.subscribe(events.append)
    while len(events) < 3 * STEPS and sim.step() is not None:
        pass
    names = [n.name for n in sim.nodes]
    sim.close()
    return events, names


def both(scenario, recording) -> tuple[Run, Run]:
    events, names = recording
    return Run(scenario), Run(scenario, make_source=lambda *_: RecordedSource(events, names))


def test_the_same_steps_give_the_same_journal_and_figures(scenario, recording):
    simulated, recorded = both(scenario, recording)
    for _ in range(STEPS):
        assert simulated.step(fold=False) == recorded.step(fold=False)
    assert simulated.position == recorded.position == STEPS
    assert [d.seq for d in simulated.decisions] == [d.seq for d in recorded.decisions]
    assert list(simulated.log) == list(recorded.log)
    assert simulated.journal.marks == recorded.journal.marks
    assert simulated.metrics.completed == recorded.metrics.completed > 0
    assert simulated.metrics.ttft == recorded.metrics.ttft
    a, b = simulated.key_figures(), recorded.key_figures()
    assert (a.arrived, a.completed, a.evicted_blocks) == (b.arrived, b.completed, b.evicted_blocks)
    from kvtui.tui.widgets.stats_line import stats_text

    assert stats_text(recorded).startswith(stats_text(simulated).split(" · evicted")[0])
    simulated.close()


def test_seek_and_narration_read_the_source_not_the_engine(scenario, recording):
    simulated, recorded = both(scenario, recording)
    found = recorded.seek(SEEK_KINDS["eviction"], budget_s=60)
    assert isinstance(found, BlocksEvicted)
    assert simulated.seek(SEEK_KINDS["eviction"], budget_s=60) == found
    decision = recorded.decisions[-1]
    assert isinstance(decision, RouteDecided)
    assert recorded.explain(decision) == explain(decision, NoFacts(), recorded.journal.history)
    assert decision.request in recorded.explain(decision)
    drawn, skipped = recorded.drain_decisions(limit=10)
    assert drawn and drawn[-1] == decision and skipped >= 0
    simulated.close()


def test_a_recorded_run_steps_back(scenario, recording):
    _, recorded = both(scenario, recording)
    for _ in range(200):
        recorded.step(fold=False)
    want = list(recorded.log), recorded.current
    recorded.back()
    assert recorded.position == 199
    recorded.step(fold=False)
    assert (list(recorded.log), recorded.current) == want
