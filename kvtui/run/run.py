"""The one door to a run: `Run` is what the app, `record`, the comparison screen and the
tests hold, whatever made the run.

A `Run` moves its source (step, play on a wall-clock budget, seek, step back, commands) and
reads it (journal, views, figures, narration) only through the interfaces of
kvtui/run/source.py, so a simulation (kvtui/run/drive.py, the default), a recording or a live
cluster stand behind it alike. No Textual here: beyond the source, a `Run` remembers only what
a polling viewer has already drawn, so each frame adds just the new log lines, and which event
the explanation is about. Headless runs to the end go through kvtui/run/headless.py.
"""

from __future__ import annotations

import time
from typing import Callable, Iterable

from kvtui.events import (
    BlocksEvicted,
    ControlPlaneCrashed,
    ControlPlaneRecovered,
    Event,
    KVEventsLost,
    KVTransferStarted,
    MetadataElection,
    NodeDown,
    RequestArrived,
    RequestCompleted,
    RequestPreempted,
    RequestRejected,
    RouteDecided,
)
from kvtui.run.belief import BeliefView
from kvtui.run.checkpoint_budget import CheckpointBudget
from kvtui.run.control_plane_view import ControlPlaneView
from kvtui.run.drive import FOLDABLE, Drive
from kvtui.run.narrate import explain
from kvtui.run.source import Navigable
from kvtui.scenario.model import Scenario
from kvtui.scenario.run_spec import RunSpec, as_spec

# What the "jump to next ..." commands look for.
SEEK_KINDS: dict[str, tuple[type[Event], ...]] = {
    "eviction": (BlocksEvicted,),
    "rejection": (RequestRejected,),
    "preemption": (RequestPreempted,),
    "failure": (NodeDown,),
    "crash": (ControlPlaneCrashed,),
    "recovery": (ControlPlaneRecovered,),
    "decision": (RouteDecided,),
    "arrival": (RequestArrived,),
    "completion": (RequestCompleted,),
    "transfer": (KVTransferStarted,),
    "gap": (KVEventsLost,),
    "election": (MetadataElection,),
}

def simulation_source(spec: RunSpec) -> Navigable:
    """The default source: the run simulated, on the app's wall clock for its budgets."""
    return Drive(spec, clock=time.perf_counter, budget=CheckpointBudget())


class Run:
    """One run, of a scenario or of real engines, plus what a viewer has drawn of it."""

    def __init__(
        self,
        scenario: RunSpec | Scenario | None = None,
        seed: int | None = None,
        policy: str | None = None,
        make_source: Callable[[RunSpec], Navigable] = simulation_source,
        source: Navigable | None = None,
        name: str = "",
    ):
        """A simulation of a run spec, or of `scenario` resolved with `seed` and `policy` (its
        source made by `make_source`), or `source` as it is (real engines, kvtui/run/live.py),
        called `name`."""
        if scenario is None and source is None:
            raise ValueError("a run needs a scenario or a source")
        self.spec = None if scenario is None else as_spec(scenario, seed, policy)
        self.scenario = None if self.spec is None else self.spec.scenario
        self.make_source = make_source
        self.name = self.scenario.name if self.scenario is not None else name
        self.generation = -1
        self.fold = True  # single steps skip stored / batch events
        self._given = source
        self._build()

    @property
    def seed(self) -> int:
        """The run's seed (0 for real engines, which have none)."""
        return self.spec.seed if self.spec is not None else 0

    @property
    def policy(self) -> str:
        """The policy routing the run ("" for real engines: theirs is not known here)."""
        return self.spec.policy if self.spec is not None else ""

    # ------------------------------------------------------------------ lifecycle
    def _build(self) -> None:
        if self._given is not None:
            self.source, self._given = self._given, None
        else:
            assert self.spec is not None
            self.source = self.make_source(self.spec)
        self.current: Event | None = None  # the event the explanation panel is about
        self._moved()

    def _moved(self) -> None:
        """The run was replaced (restart or a step back): every panel starts over."""
        self.generation += 1
        self._seen_decision = 0
        self._seen_log = 0

    def can(self, capability: str) -> bool:
        """Whether the source takes a command or change (RunSource.capabilities)."""
        return capability in self.source.capabilities

    @property
    def live(self) -> bool:
        return self.source.live

    def restart(self, policy: str | None = None, seed: int | None = None) -> None:
        """Start over (same seed unless told otherwise; a new policy restarts the run); only a
        source that can restart does (a simulation)."""
        if not self.can("restart"):
            return
        assert self.spec is not None
        self.spec = self.spec.again(policy, seed)
        self.close()
        self._build()

    def close(self) -> None:
        """Release the source (a simulation's metadata stores and temporary log directories)."""
        self.source.close()

    # ------------------------------------------------------------------ what the scenario says
    @property
    def story(self) -> tuple:
        """The scenario's chapters (none for real engines)."""
        return tuple(self.scenario.story) if self.scenario is not None else ()

    @property
    def group_names(self) -> list[str]:
        """The workload's prefix groups, in the scenario's order (their colours); none for a
        trace or real engines (their owners are prefixes, coloured by a stable hash)."""
        sc = self.scenario
        if sc is None or sc.workload.trace is not None:
            return []
        return [g.name for g in sc.workload.groups]

    @property
    def scripted(self) -> tuple:
        """The scenario's scripted events (failures, crashes); none for real engines."""
        return tuple(self.scenario.events) if self.scenario is not None else ()

    @property
    def planned_end(self) -> float | None:
        """When the scenario says the run ends (None: unknown, as for real engines)."""
        sc = self.scenario
        if sc is None:
            return None
        return sc.until_s if sc.until_s is not None else sc.workload.duration_s

    @property
    def written_for(self) -> str:
        """The policy the scenario (and its story) was written for."""
        return self.spec.written_for if self.spec is not None else self.policy

    # ------------------------------------------------------------------ what the source keeps
    @property
    def journal(self):
        return self.source.journal

    @property
    def metrics(self):
        return self.source.metrics

    @property
    def decisions(self):
        return self.source.journal.decisions

    @property
    def log(self):
        return self.source.journal.log

    @property
    def last_emitted(self) -> Event | None:
        return self.source.journal.last_emitted

    @property
    def last_interesting(self) -> Event | None:
        return self.source.journal.last_interesting

    @property
    def times(self):
        return self.source.times

    def view(self):
        return self.source.view()

    def block(self, node: str, index: int):
        return self.source.block(node, index)

    def key_figures(self):
        return self.source.key_figures()

    def routing_headline(self) -> str:
        return self.source.routing_headline()

    def drain_decisions(self, limit: int) -> tuple[list[RouteDecided], int]:
        """Up to `limit` of the newest decisions not drawn yet, and how many were skipped."""
        out, self._seen_decision, skipped = _newer(self.decisions, self._seen_decision, limit)
        return out, skipped

    def drain_log(self, limit: int) -> tuple[list[Event], int]:
        out, self._seen_log, skipped = _newer(self.log, self._seen_log, limit)
        return out, skipped

    # ------------------------------------------------------------------ figures
    @property
    def now(self) -> float:
        return self.source.now

    @property
    def ended(self) -> bool:
        return self.source.ended

    @property
    def position(self) -> int:
        """Events stepped so far (what `b` and "go to event" count)."""
        return self.source.position

    def explain(self, ev: Event | None) -> str:
        return explain(ev, self.source.facts(), self.source.journal.history)

    # ------------------------------------------------------------------ advancing
    def step(self, fold: bool | None = None) -> Event | None:
        """One event (the app's single step); it becomes the current event. With folding on,
        `stored` and `batch` events are passed over (still counted, still in the journal)."""
        fold = self.fold if fold is None else fold
        ev = self.source.step(FOLDABLE if fold else ())
        if ev is not None:
            self.current = ev
        elif self.source.ended and self.last_emitted is not None:
            self.current = self.last_emitted
        return ev

    def back(self) -> Event | None:
        """One event back (folding as `step` does); None when already at the start."""
        before = self.source.position
        ev = self.source.back(FOLDABLE if self.fold else ())
        if self.source.position != before:
            self._moved()
        self.current = ev
        return ev

    def goto(self, position: int, budget_s: float = float("inf")) -> bool:
        """Go to an event number (back or forward); False if a forward move ran out of
        `budget_s` wall seconds first (call again to go on)."""
        back = position < self.source.position
        done = self.source.goto(position, budget_s)
        if back:
            self._moved()
        self.current = self.source.last
        return done

    def goto_time(self, t: float, budget_s: float = float("inf")) -> bool:
        """Go to a sim time, as `goto`."""
        back = t < self.source.now
        done = self.source.goto_time(t, budget_s)
        if back:
            self._moved()
        self.current = self.source.last
        return done

    def advance(self, target: float, budget_s: float) -> bool:
        """Move sim time toward `target` for at most `budget_s` wall seconds (see Drive)."""
        return self.source.advance(target, budget_s)

    def seek(self, kinds: Iterable[type[Event]], budget_s: float) -> Event | None | bool:
        """Step until an event of one of the classes `kinds`: the event, None if the run ended
        first (the run then stays where the search began), or False if the budget ran out (call
        again)."""
        origin = self.source.seek_origin
        before = self.source.position if origin is None else origin
        found = self.source.seek(kinds, budget_s)
        if found is None:
            if self.source.position != before or self.source.last is not None:
                self._moved()
            self.current = self.source.last
        elif found is not False:
            self.current = found
        return found

    def cancel_seek(self, back_to_origin: bool = False) -> None:
        """Stop a jump's search: where it got to, or (Escape) back where it began."""
        origin = self.source.seek_origin
        self.source.cancel_seek()
        if back_to_origin and origin is not None and origin != self.source.position:
            self.goto(origin)

    def maintain(self, budget_s: float) -> bool:
        """Idle time: build time-travel checkpoints."""
        return self.source.maintain(budget_s)

    # ------------------------------------------------------------------ commands
    def node_names(self) -> list[str]:
        return self.source.node_names()

    def neighbour(self, name: str | None, delta: int) -> str | None:
        """The node `delta` places after `name` in cluster order, wrapping (from the first when
        `name` is not a node); None for an empty cluster. `[`/`]` on both screens."""
        names = self.node_names()
        if not names:
            return None
        i = names.index(name) if name in names else 0
        return names[(i + delta) % len(names)]

    def node_is_up(self, name: str) -> bool:
        return self.source.node_is_up(name)

    def toggle_node(self, name: str) -> Event | None:
        """Take a node down, or bring it back; returns the event that says so."""
        ev = self.source.command("node_down" if self.node_is_up(name) else "node_up", name)
        if ev is not None:
            self.current = ev
        return ev

    @property
    def has_store(self) -> bool:
        return self.source.wal_counters() is not None

    @property
    def control_plane_down(self) -> bool:
        return self.source.control_plane_down

    def wal_counters(self) -> dict | None:
        return self.source.wal_counters()

    def control_plane_view(self) -> ControlPlaneView | None:
        return self.source.control_plane_view()

    def belief_view(self) -> BeliefView | None:
        return self.source.belief_view()

    def crash_control_plane(self) -> Event | None:
        """Crash the control plane; None when the scenario has no store (or it is down already)."""
        ev = self.source.command("crash")
        if ev is not None:
            self.current = ev
        return ev


def _newer(q, seen: int, limit: int) -> tuple[list, int, int]:
    """Items of `q` (a deque in seq order) with seq > `seen`: the newest `limit` of them, the
    new high-water seq, and how many were skipped."""
    out = []
    for ev in reversed(q):
        if ev.seq <= seen:
            break
        out.append(ev)
    out.reverse()
    top = out[-1].seq if out else seen
    skipped = max(0, len(out) - limit)
    return out[skipped:], top, skipped


