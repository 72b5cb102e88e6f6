"""Drives a Simulation for the app: stepping, playing on a wall-clock budget, seeking, restarting.

No Textual here: the runner owns the simulation and remembers what the panels need (recent
decisions, the interesting events, per-node hit counts), and the app reads it once per frame.
Every method that advances the simulation takes a wall-time budget and returns when it runs
out, so the event loop never waits long for the engine, whatever the scenario's size.
"""

from __future__ import annotations

import time
from collections import Counter, deque
from typing import Iterable

from kvtui.events import (
    BlocksEvicted,
    ControlPlaneCrashed,
    ControlPlaneRecovered,
    Event,
    NodeCacheCleared,
    NodeDown,
    NodeUp,
    PrefixPinned,
    RequestCompleted,
    RequestPreempted,
    RequestRejected,
    RouteDecided,
    SimulationEnded,
)
from kvtui.explain import History, explain
from kvtui.scenario.model import Scenario
from kvtui.sim.engine import Simulation

# Kinds the event log shows (decisions have their own log).
LOG_TYPES = (
    RequestRejected,
    BlocksEvicted,
    RequestPreempted,
    NodeDown,
    NodeUp,
    NodeCacheCleared,
    PrefixPinned,
    ControlPlaneCrashed,
    ControlPlaneRecovered,
    SimulationEnded,
)

# What the "jump to next ..." commands look for.
SEEK_KINDS = {
    "eviction": ("evicted",),
    "rejection": ("rejected",),
    "preemption": ("preempted",),
    "failure": ("node_down",),
    "crash": ("cp_crash",),
    "recovery": ("cp_recovered",),
}

SPEEDS = (0.1, 0.25, 0.5, 1.0, 2.0, 5.0, 10.0, 20.0, 50.0, 100.0)
DEFAULT_SPEED = 2.0


class Runner:
    """One run of a scenario, plus what the app shows about it."""

    def __init__(
        self,
        scenario: Scenario,
        seed: int | None = None,
        policy: str | None = None,
        keep_decisions: int = 500,
        keep_log: int = 500,
    ):
        self.scenario = scenario
        self.seed = scenario.seed if seed is None else seed
        self.policy = policy or scenario.router.policy
        self.keep_decisions = keep_decisions
        self.keep_log = keep_log
        self.restarts = 0
        self._build()

    # ------------------------------------------------------------------ lifecycle
    def _build(self) -> None:
        self.sim = Simulation(self.scenario, seed=self.seed, policy=self.policy)
        self.history = History(keep=5_000)
        self.decisions: deque[RouteDecided] = deque(maxlen=self.keep_decisions)
        self.log: deque[Event] = deque(maxlen=self.keep_log)
        # Appended by the listener, drained by the UI each frame (bounded: a UI that falls
        # behind loses the oldest lines, never the newest).
        self.new_decisions: deque[RouteDecided] = deque(maxlen=self.keep_decisions)
        self.new_log: deque[Event] = deque(maxlen=self.keep_log)
        self.counts: Counter[str] = Counter()
        self.node_hits: dict[str, list[int]] = {n.name: [0, 0] for n in self.sim.nodes}
        self.last_emitted: Event | None = None
        self.last_interesting: Event | None = None
        self.current: Event | None = None  # the event the explanation panel is about
        self.generation = getattr(self, "generation", -1) + 1
        self.sim.subscribe(self._on_event)

    def restart(self, policy: str | None = None, seed: int | None = None) -> None:
        """Start over (same seed unless told otherwise; a new policy restarts the run)."""
        if policy is not None:
            self.policy = policy
        if seed is not None:
            self.seed = seed
        self.restarts += 1
        self.close()
        self._build()

    def close(self) -> None:
        """Release the simulation's metadata store (and its temporary log directory)."""
        close = getattr(self.sim, "close", None)
        if close is not None:
            close()

    # ------------------------------------------------------------------ the listener
    def _on_event(self, ev: Event) -> None:
        self.history.on_event(ev)
        self.counts[ev.kind] += 1
        self.last_emitted = ev
        if isinstance(ev, RouteDecided):
            self.decisions.append(ev)
            self.new_decisions.append(ev)
            self.last_interesting = ev
        elif isinstance(ev, LOG_TYPES):
            self.log.append(ev)
            self.new_log.append(ev)
            self.last_interesting = ev
        elif isinstance(ev, RequestCompleted):
            h = self.node_hits.setdefault(ev.node, [0, 0])
            h[1] += 1
            if ev.hit != "miss":
                h[0] += 1

    def drain_decisions(self, limit: int) -> tuple[list[RouteDecided], int]:
        """Up to `limit` of the newest pending decisions, and how many older ones were skipped."""
        return _drain(self.new_decisions, limit)

    def drain_log(self, limit: int) -> tuple[list[Event], int]:
        return _drain(self.new_log, limit)

    # ------------------------------------------------------------------ figures
    @property
    def now(self) -> float:
        return self.sim.now

    @property
    def ended(self) -> bool:
        return self.sim.ended

    @property
    def position(self) -> int:
        """Number of the last event emitted so far."""
        return self.sim.bus.seq

    def hit_rate(self, node: str) -> float | None:
        h = self.node_hits.get(node)
        if not h or not h[1]:
            return None
        return h[0] / h[1]

    def explain(self, ev: Event | None) -> str:
        return explain(ev, self.sim, self.history)

    # ------------------------------------------------------------------ advancing
    def step(self) -> Event | None:
        """One event (the app's single step); it becomes the current event."""
        ev = self.sim.step()
        if ev is not None:
            self.current = ev
        elif self.sim.ended and self.last_emitted is not None:
            self.current = self.last_emitted
        return ev

    def advance(self, target: float, budget_s: float) -> bool:
        """Move sim time toward `target` for at most `budget_s` wall seconds.

        Returns True when the target was reached (or the run ended), False when the budget ran
        out first (the caller simply continues next frame).
        """
        sim = self.sim
        env = sim.env
        deadline = time.perf_counter() + budget_s
        clock = time.perf_counter
        n = 0
        while not sim.ended:
            if not sim.bus.outbox and env.peek() > target:
                sim.run_until(target)  # nothing left before target: a pure time advance
                return True
            ev = sim.step()
            if ev is None:
                break
            n += 1
            if (n & 15) == 0 and clock() > deadline:
                return False
        return True

    def seek(self, kinds: Iterable[str], budget_s: float) -> Event | None | bool:
        """Step until an event of one of `kinds`: the event, None if the run ended first,
        or False if the budget ran out (call again)."""
        kinds = tuple(kinds)
        sim = self.sim
        deadline = time.perf_counter() + budget_s
        clock = time.perf_counter
        n = 0
        while True:
            ev = sim.step()
            if ev is None:
                if self.last_emitted is not None:
                    self.current = self.last_emitted
                return None
            if ev.kind in kinds:
                self.current = ev
                return ev
            n += 1
            if (n & 15) == 0 and clock() > deadline:
                return False

    # ------------------------------------------------------------------ commands
    def node_names(self) -> list[str]:
        return [n.name for n in self.sim.nodes]

    def toggle_node(self, name: str) -> Event | None:
        """Take a node down, or bring it back; returns the event that says so."""
        node = self.sim.node_by_name[name]
        before = self.sim.bus.seq
        if node.up:
            self.sim.node_down(name)
            kind = NodeDown
        else:
            self.sim.node_up(name)
            kind = NodeUp
        ev = self._latest(kind, before)
        if ev is not None:
            self.current = ev
        return ev

    @property
    def has_store(self) -> bool:
        return getattr(self.sim, "control_plane", None) is not None

    @property
    def control_plane_down(self) -> bool:
        cp = getattr(self.sim, "control_plane", None)
        return bool(cp is not None and cp.down)

    def wal_counters(self) -> dict | None:
        cp = getattr(self.sim, "control_plane", None)
        return cp.counters() if cp is not None else None

    def crash_control_plane(self) -> Event | None:
        """Crash the control plane; None when the scenario has no store (or it is down already)."""
        before = self.sim.bus.seq
        self.sim.crash_control_plane()
        ev = self._latest((ControlPlaneCrashed, ControlPlaneRecovered), before)
        if ev is not None:
            self.current = ev
        return ev

    def _latest(self, kind, after_seq: int) -> Event | None:
        for ev in reversed(self.log):
            if ev.seq <= after_seq:
                break
            if isinstance(ev, kind):
                return ev
        return None


def _drain(q: deque, limit: int) -> tuple[list, int]:
    n = len(q)
    if n <= limit:
        out = list(q)
        q.clear()
        return out, 0
    skipped = n - limit
    for _ in range(skipped):
        q.popleft()
    out = list(q)
    q.clear()
    return out, skipped
