"""The drive loop: advance a run to a sim time or to the next event of a kind within a
wall-clock budget the caller supplies, and travel back in time.

Time travel rests on determinism: the same scenario, seed, policy and user commands give the
same events, so the state after event *n* can be rebuilt by replaying. Python cannot copy the
event loop (kvtui/sim/loop.py: its processes are generators), so a checkpoint is a whole paused run.
`Drive` keeps a few of them, spaced `every` events apart, and builds missing ones in the
background (`maintain`, called while the viewer is idle) by replaying from the start. Going
back to event *n* takes the nearest checkpoint at or before *n* and replays the difference;
the run it leaves becomes a checkpoint too, so stepping forward again is free.

User commands (take a node down or up, crash the control plane) are part of the run: each is
recorded with the event count and sim time at which it was given and re-applied at the same
point on every replay. A new command given after stepping back drops the later ones (the
run branches) and every checkpoint past it.

Positions count the events a viewer has *stepped to* (`Simulation.step`), which with the same
inputs always land on the same event. A command's own events (a node going down, its requests
rerouted) are stepped too, right after it is given, so position N is always the event
numbered N (`Event.seq`): the header, the panels and "go to #N" share one numbering. The engine never reads a wall clock: the caller hands
in its own (`clock`, e.g. the app's `time.perf_counter`) and a budget in that clock's units,
which only decides when a call returns, never what the simulation does. Without a clock,
every call runs to completion.
"""

from __future__ import annotations

from array import array
from bisect import bisect_right
from dataclasses import dataclass
from typing import Callable, Iterable

from kvtui.events import (
    BatchStepped,
    BlocksStored,
    ControlPlaneCrashed,
    EngineScraped,
    KVBatchReceived,
    ControlPlaneRecovered,
    Event,
    MetadataCommitted,
    MetadataMemberDown,
    NodeDown,
    NodeUp,
)
from kvtui.run.belief import BeliefView, simulated_belief
from kvtui.run.control_plane_view import ControlPlaneView, control_plane_view
from kvtui.run.facts import Facts, SimulationFacts
from kvtui.run.journal import Journal
from kvtui.run.source import Navigable
from kvtui.scenario.model import Scenario
from kvtui.scenario.run_spec import RunSpec, as_spec
from kvtui.run.checkpoint_budget import CheckpointBudget, release_freed
from kvtui.sim.engine import Simulation
from kvtui.sim.metrics import METRICS_EVENT_TYPES, Metrics
from kvtui.sim.view import ViewCache, block_view, figures_of
from kvtui.views import BlockView, ClusterView, KeyFigures

# what a coarse single step folds away (a real engine's batches and /metrics reads too)
FOLDABLE: tuple[type[Event], ...] = (BlocksStored, BatchStepped, MetadataCommitted, KVBatchReceived, EngineScraped)
BIG_CLUSTER_BLOCKS = 20_000  # KV blocks in all, from which fewer checkpoints are kept


@dataclass(frozen=True, slots=True)
class Command:
    position: int  # events stepped when it was given
    t: float  # sim time when it was given
    name: str  # node_down / node_up / crash
    arg: str | None = None


class _Run:
    """One simulation with its journal and figures, counted in events stepped.

    The journal and the figures take each event as it is stepped, not as the engine emits it:
    one engine step can emit several events (since the scheduler caches blocks as it allocates,
    an admission's evictions come with it), and what a viewer sees at position N is the events
    up to N, as a live or recorded run's (run/live.py) is."""

    def __init__(self, spec: RunSpec):
        self.sim = Simulation(spec)
        self.journal = Journal()
        self.metrics = Metrics()
        self.metrics.set_nodes([n.name for n in self.sim.nodes])
        self.position = 0
        self.applied = 0  # commands applied so far
        self.last: Event | None = None

    def step(self) -> Event | None:
        ev = self.sim.step()
        if ev is not None:
            self.position += 1
            self.last = ev
            self.journal.on_event(ev)
            if isinstance(ev, METRICS_EVENT_TYPES):
                self.metrics.on_event(ev)
        return ev

    def apply_due(self, commands: list[Command], through: int) -> Event | None:
        """Apply the commands given at positions up to `through` not applied yet."""
        out = None
        while self.applied < len(commands) and commands[self.applied].position <= min(through, self.position):
            cmd = commands[self.applied]
            self.applied += 1
            out = apply_command(self, cmd) or out
        return out

    def close(self) -> None:
        self.sim.close()


def apply_command(run: "_Run", cmd: Command) -> Event | None:
    """Carry out one user command on a run; the event that reports it, if any."""
    sim = run.sim
    if sim.ended:
        return None
    if sim.now < cmd.t and not sim.bus.outbox:
        sim.run_until(cmd.t)  # play mode had moved the clock on between events
    before = sim.bus.seq
    sim.bus.keep_outbox = True  # its events queue to be stepped, in number order, like any other
    try:
        wanted = _carry_out(sim, cmd)
    finally:
        sim.bus.keep_outbox = False
    for ev in reversed(sim.bus.outbox):  # its events, queued to be stepped
        if ev.seq <= before:
            break
        if isinstance(ev, (*wanted, ControlPlaneRecovered)):
            return ev
    return None


def _carry_out(sim: Simulation, cmd: Command) -> tuple[type[Event], ...]:
    """Give the command to the simulation; the classes of the event that reports it."""
    match cmd.name:
        case "node_down":
            sim.node_down(cmd.arg)
            return (NodeDown,)
        case "node_up":
            sim.node_up(cmd.arg)
            return (NodeUp,)
        case _:
            sim.crash_control_plane()  # a replicated store: its leader is killed
            return (ControlPlaneCrashed, MetadataMemberDown)


class Drive(Navigable):
    """A simulated run you can step, play, seek and rewind: the simulation as a run source
    (kvtui/run/source.py)."""

    capabilities = frozenset({"node_down", "crash", "restart", "policy"})

    def __init__(
        self,
        run: RunSpec | Scenario,
        seed: int | None = None,
        policy: str | None = None,
        every: int = 2_000,
        max_checkpoints: int = 32,
        clock: Callable[[], float] | None = None,
        near: int = 16,
        near_every: int = 128,
        budget: CheckpointBudget | None = None,
    ):
        self.clock = clock
        self.budget = budget  # bytes, on top of the count (checkpoint_budget.py)
        self.near = near
        self.near_every = near_every
        self.spec = as_spec(run, seed, policy)  # resolved once (kvtui/scenario/run_spec.py)
        scenario = self.scenario = self.spec.scenario
        self.seed = self.spec.seed
        self.policy = self.spec.policy
        self.every = every
        # A run with a fixed log directory cannot have twins writing the same files.
        fixed_dir = scenario.metadata is not None and getattr(scenario.metadata, "dir", None)
        self.max_checkpoints = 0 if fixed_dir else max_checkpoints
        self.commands: list[Command] = []
        self.checkpoints: list[_Run] = []
        self._builder: tuple[_Run, int] | None = None
        self.classes: list[type[Event]] = []  # class of the event at each position (1-based: classes[p-1])
        self._times = array("d")  # its sim time
        self.views = ViewCache()
        self._seek_origin: int | None = None
        self.run = self._fresh()
        # Every checkpoint is a whole simulation: big clusters keep fewer of them, unless a byte
        # budget counts what they really hold.
        if budget is None and sum(n.pool.num_blocks for n in self.run.sim.nodes) > BIG_CLUSTER_BLOCKS:
            self.max_checkpoints = min(self.max_checkpoints, 8)
            self.near = min(self.near, 4)

    # ------------------------------------------------------------------ the current run
    def _fresh(self) -> _Run:
        return _Run(self.spec)

    @property
    def sim(self) -> Simulation:
        return self.run.sim

    @property
    def journal(self) -> Journal:
        return self.run.journal

    @property
    def position(self) -> int:
        return self.run.position

    @property
    def now(self) -> float:
        return self.run.sim.now

    @property
    def ended(self) -> bool:
        return self.run.sim.ended

    @property
    def metrics(self) -> Metrics:
        return self.run.metrics

    @property
    def times(self) -> array:
        return self._times

    @property
    def last(self) -> Event | None:
        return self.run.last

    @property
    def seek_origin(self) -> int | None:
        return self._seek_origin

    def view(self) -> ClusterView:
        return self.views.cluster(self.run.sim, self.run.journal, self.run.position)

    def block(self, node: str, index: int) -> BlockView | None:
        return block_view(self.run.sim, node, index, self.run.journal)

    def node_names(self) -> list[str]:
        return [n.name for n in self.run.sim.nodes]

    def node_is_up(self, name: str) -> bool:
        node = self.run.sim.node_by_name.get(name)
        return bool(node is not None and node.up)

    def key_figures(self) -> KeyFigures:
        return figures_of(self.run.metrics, self.run.sim.now)

    def facts(self) -> Facts:
        return SimulationFacts(self.run.sim)

    def routing_headline(self) -> str:
        """The router's headline, then a replicated control plane's (its leader and term)."""
        sim = self.run.sim
        parts = [sim.router.headline() if sim.router is not None else ""]
        cp_headline = getattr(sim.control_plane, "headline", None)
        if cp_headline is not None:
            parts.append(cp_headline())
        return " · ".join(p for p in parts if p)

    def control_plane_view(self) -> ControlPlaneView | None:
        return control_plane_view(self.run.sim, self.run.journal)

    def belief_view(self) -> BeliefView | None:
        return simulated_belief(self.run.sim)

    def wal_counters(self) -> dict | None:
        cp = self.run.sim.control_plane
        return cp.counters() if cp is not None else None

    @property
    def control_plane_down(self) -> bool:
        cp = self.run.sim.control_plane
        return bool(cp is not None and cp.down)

    def close(self) -> None:
        for r in [self.run, *self.checkpoints] + ([self._builder[0]] if self._builder else []):
            r.close()
        self.checkpoints = []
        self._builder = None

    # ------------------------------------------------------------------ budgets
    def _deadline(self, budget_s: float) -> float | None:
        if self.clock is None or budget_s == float("inf"):
            return None
        return self.clock() + budget_s

    def _late(self, deadline: float | None) -> bool:
        return deadline is not None and self.clock() > deadline

    # ------------------------------------------------------------------ forward
    def step(self, fold: Iterable[type[Event]] = ()) -> Event | None:
        """The next event (skipping events of the `fold` classes); None once the run has ended."""
        fold = tuple(fold)
        while True:
            self.run.apply_due(self.commands, self.run.position)
            ev = self.run.step()
            if ev is None:
                return None
            self._note(ev)
            if not isinstance(ev, fold):
                return ev

    def _note(self, ev: Event) -> None:
        p = self.run.position
        if p > len(self.classes):
            self.classes.append(type(ev))
            self._times.append(ev.t)

    def advance(self, target: float, budget_s: float) -> bool:
        """Move sim time toward `target` for at most `budget_s` wall seconds; True when there
        (or the run ended), False when the budget ran out first (call again)."""
        sim = self.run.sim
        env = sim.env
        deadline = self._deadline(budget_s)
        n = 0
        while not sim.ended:
            if not sim.bus.outbox and env.peek() > target and not self._due():
                sim.run_until(target)  # nothing left before target: a pure time advance
                return True
            if self.step() is None:
                break
            n += 1
            if (n & 15) == 0 and self._late(deadline):
                return False
        return True

    def _due(self) -> bool:
        r = self.run
        return r.applied < len(self.commands) and self.commands[r.applied].position <= r.position

    def seek(self, kinds: Iterable[type[Event]], budget_s: float) -> Event | None | bool:
        """Step to the next event of one of the classes `kinds`: the event; False if the budget ran out
        (call again: the search goes on); None if the run ended first, in which case the run
        is put back where the search began (a jump that finds nothing stays)."""
        kinds = tuple(kinds)
        if self._seek_origin is None:
            self._seek_origin = self.run.position
        deadline = self._deadline(budget_s)
        n = 0
        while True:
            ev = self.step()
            if ev is None:
                origin, self._seek_origin = self._seek_origin, None
                self.goto(origin)
                return None
            if isinstance(ev, kinds):
                self._seek_origin = None
                return ev
            n += 1
            if (n & 15) == 0 and self._late(deadline):
                return False

    def cancel_seek(self) -> None:
        self._seek_origin = None

    # ------------------------------------------------------------------ commands
    def command(self, name: str, arg: str | None = None) -> Event | None:
        """Give a command now; it becomes part of the run's history (see the module doc)."""
        r = self.run
        keep = [c for c in self.commands if c.position <= r.position][: r.applied]
        if len(keep) != len(self.commands):
            self.commands = keep
            self._drop_checkpoints_after(r.position)
            del self.classes[r.position :]
            del self._times[r.position :]
        cmd = Command(r.position, r.sim.now, name, arg)
        self.commands.append(cmd)
        r.applied = len(self.commands)
        report = apply_command(r, cmd)
        while r.sim.bus.outbox and (ev := r.step()) is not None:
            self._note(ev)  # step over its events (and any still queued before it)
        return report

    def _drop_checkpoints_after(self, position: int) -> None:
        n = len(self.commands)
        keep = []
        for c in self.checkpoints:
            if c.position < position or (c.position == position and c.applied <= n):
                keep.append(c)
            else:
                c.close()
        self.checkpoints = keep
        if self._builder is not None and self._builder[1] > position:
            self._builder[0].close()
            self._builder = None

    # ------------------------------------------------------------------ back in time
    def back(self, fold: Iterable[type[Event]] = ()) -> Event | None:
        """Go back one event (the previous one not of a `fold` class); None at the start."""
        fold = tuple(fold)
        p = self.run.position - 1
        while p > 0 and issubclass(self.classes[p - 1], fold):
            p -= 1
        if p < 1:
            if self.run.position == 0:
                return None
            p = 0
        self.goto(p)
        return self.run.last

    def goto(self, position: int, budget_s: float = float("inf")) -> bool:
        """Put the run at `position` events (forward by stepping, back by replaying from the
        nearest checkpoint); False if a forward move ran out of budget (call again)."""
        position = max(0, position)
        if position < self.run.position:
            self._rewind_to(position)
        deadline = self._deadline(budget_s)
        n = 0
        while self.run.position < position:
            if self.step() is None:
                return True
            n += 1
            if (n & 15) == 0 and self._late(deadline):
                return False
        self.run.apply_due(self.commands, position)
        return True

    def goto_time(self, t: float, budget_s: float = float("inf")) -> bool:
        """Put the run at sim time `t`: back to the last event at or before it, or forward."""
        if t < self.now:
            p = bisect_right(self._times, t)
            self._rewind_to(p)
        return self.advance(t, budget_s)

    def _rewind_to(self, position: int) -> None:
        self._keep_builder(position)
        usable = [c for c in self.checkpoints if c.position <= position and c.applied <= len(self.commands)]
        start = max(usable, key=lambda c: c.position, default=None)
        if start is None:
            start = self._fresh()
        else:
            self.checkpoints.remove(start)
        old = self.run
        self.run = start
        if self.max_checkpoints > 0:
            self.checkpoints.append(old)  # stepping forward again starts from here
            self._trim()
        else:
            old.close()
            if self.budget is not None:  # free it before the replay, not after: one run at a time
                del old
                release_freed()
        while start.position < position:
            start.apply_due(self.commands, start.position)
            if start.step() is None:
                break
        start.apply_due(self.commands, position)

    def _keep_builder(self, position: int) -> None:
        """A checkpoint half built below `position` is kept, as a checkpoint where it got to: the
        idle time spent on it is not lost, and the next idle moment goes on from there (each
        step back used to throw it away, so under a string of presses a checkpoint far from the
        start was never finished and every press replayed from the start). One above
        `position` is of no use going back and is dropped."""
        if self._builder is None:
            return
        run, _ = self._builder
        self._builder = None
        if run.position <= position and run.position > 0:
            self.checkpoints.append(run)
        else:
            run.close()

    def _trim(self) -> None:
        """Keep at most `max_checkpoints` and stay within the byte budget: drop the ones
        farthest from the current position. Over the budget, the count that fits becomes the
        new maximum (checkpoints only grow with the run), so none is built just to be dropped."""
        while len(self.checkpoints) > self.max_checkpoints:
            self._drop_farthest()
        while self.checkpoints and self.budget is not None and self.budget.over():
            self._drop_farthest()
            release_freed()
            self.budget.dropped += 1
            self.max_checkpoints = len(self.checkpoints)

    def _drop_farthest(self) -> None:
        far = max(self.checkpoints, key=lambda c: abs(c.position - self.run.position))
        self.checkpoints.remove(far)
        far.close()

    def _room_for(self, target: int) -> bool:
        """At the maximum, a checkpoint at `target` is built only in place of a farther one
        (else building it would only see it or another dropped again, over and over)."""
        if len(self.checkpoints) < self.max_checkpoints:
            return True
        here = self.run.position
        if not self.checkpoints or max(abs(c.position - here) for c in self.checkpoints) <= abs(target - here):
            return False
        self._drop_farthest()
        return True

    # ------------------------------------------------------------------ background work
    def spacing(self) -> int:
        """Events between the coarse checkpoints (wider on long runs: at most `max_checkpoints`)."""
        if self.max_checkpoints <= 0:
            return 0
        return max(self.every, -(-self.run.position // self.max_checkpoints))

    def wanted(self) -> list[tuple[int, int]]:
        """(position, slot width) of the checkpoints worth having, most useful first: a
        ladder of `near` runs every `near_every` events just below the current position
        (each step back consumes one run, so consecutive steps back need several close by),
        then the coarse ones every `spacing()` events for long jumps."""
        k = self.spacing()
        if not k:
            return []
        pos = self.run.position
        out = []
        d = self.near_every
        top = ((pos - 1) // d) * d
        for j in range(self.near):
            s = top - j * d
            if s <= 0:
                break
            out.append((s, d))
        s = (pos // k) * k
        while s > 0:
            out.append((s, k))
            s -= k
        return out

    def missing_checkpoint(self) -> int | None:
        """The checkpoint position most worth building now (see `wanted`)."""
        have = [c.position for c in self.checkpoints if c.position <= self.run.position]
        for s, width in self.wanted():
            if not any(s <= h < s + width for h in have):
                return s
        return None

    def _source_for(self, target: int) -> _Run:
        """The run to replay from to build a checkpoint at `target`: the highest coarse one at
        or below it (coarse ones are rebuilt later, far from where the viewer is), else a
        fresh run."""
        ladder = {s for s, w in self.wanted() if w == self.near_every}
        spare = [
            c for c in self.checkpoints
            if c.position <= target and c.applied <= len(self.commands)
            and not any(s <= c.position < s + self.near_every for s in ladder)
        ]
        if not spare:
            return self._fresh()
        best = max(spare, key=lambda c: c.position)
        self.checkpoints.remove(best)
        return best

    def maintain(self, budget_s: float) -> bool:
        """Build checkpoints for up to `budget_s` wall seconds; True when there is nothing left
        to build. Call it while the viewer is idle."""
        deadline = self._deadline(budget_s)
        while True:
            if self._builder is None:
                target = self.missing_checkpoint()
                if target is None or not self._room_for(target):
                    return True
                self._builder = (self._source_for(target), target)
            run, target = self._builder
            n = 0
            while run.position < target:
                run.apply_due(self.commands, run.position)
                if run.step() is None:
                    break
                n += 1
                if (n & 31) == 0 and self._late(deadline):
                    return False
            self._builder = None
            self.checkpoints.append(run)
            self._trim()
            if self._late(deadline):
                return False


def digest(events: Iterable[Event], each: Callable[[Event], str] = repr) -> str:
    """A short fingerprint of an event sequence (tests compare two ways of getting there)."""
    import hashlib

    h = hashlib.sha256()
    for ev in events:
        h.update(each(ev).encode())
    return h.hexdigest()[:16]
