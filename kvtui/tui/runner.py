"""The app's handle on a run: the engine's `Drive` (stepping, playing on a wall-clock budget,
seeking, going back) plus what the panels need between frames.

No Textual here. The run, its journal (recent decisions, notable events, request lives) and
its read-only views all come from the engine (kvtui/sim/drive.py, journal.py, view.py); this
class only remembers what the app has already drawn, so each frame adds just the new log
lines, and which event the explanation panel is about.
"""

from __future__ import annotations

import time
from typing import Iterable

from kvtui.events import Event, RouteDecided
from kvtui.explain import explain
from kvtui.scenario.model import Scenario
from kvtui.sim.drive import FOLDABLE, Drive
from kvtui.sim.journal import LOG_TYPES  # noqa: F401  (re-exported for older imports)

# What the "jump to next ..." commands look for.
SEEK_KINDS = {
    "eviction": ("evicted",),
    "rejection": ("rejected",),
    "preemption": ("preempted",),
    "failure": ("node_down",),
    "crash": ("cp_crash",),
    "recovery": ("cp_recovered",),
    "decision": ("routed",),
    "arrival": ("arrived",),
    "completion": ("completed",),
}

SPEEDS = (0.1, 0.25, 0.5, 1.0, 2.0, 5.0, 10.0, 20.0, 50.0, 100.0)
DEFAULT_SPEED = 2.0


class Runner:
    """One run of a scenario, plus what the app shows about it."""

    def __init__(self, scenario: Scenario, seed: int | None = None, policy: str | None = None):
        self.scenario = scenario
        self.seed = scenario.seed if seed is None else seed
        self.policy = policy or scenario.router.policy
        self.restarts = 0
        self.generation = -1
        self.fold = True  # single steps skip stored / batch events
        self._build()

    # ------------------------------------------------------------------ lifecycle
    def _build(self) -> None:
        self.drive = Drive(self.scenario, seed=self.seed, policy=self.policy, clock=time.perf_counter)
        self.current: Event | None = None  # the event the explanation panel is about
        self._moved()

    def _moved(self) -> None:
        """The run was replaced (restart or a step back): every panel starts over."""
        self.generation += 1
        self._seen_decision = 0
        self._seen_log = 0

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
        """Release the runs' metadata stores (and their temporary log directories)."""
        self.drive.close()

    # ------------------------------------------------------------------ what the engine keeps
    @property
    def sim(self):
        return self.drive.sim

    @property
    def journal(self):
        return self.drive.journal

    @property
    def history(self):
        return self.drive.journal.history

    @property
    def decisions(self):
        return self.drive.journal.decisions

    @property
    def log(self):
        return self.drive.journal.log

    @property
    def counts(self):
        return self.drive.journal.counts

    @property
    def node_hits(self):
        return self.drive.journal.node_hits

    @property
    def last_emitted(self) -> Event | None:
        return self.drive.journal.last_emitted

    @property
    def last_interesting(self) -> Event | None:
        return self.drive.journal.last_interesting

    def view(self):
        return self.drive.view()

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
        return self.drive.now

    @property
    def ended(self) -> bool:
        return self.drive.ended

    @property
    def position(self) -> int:
        """Events stepped so far (what `b` and "go to event" count)."""
        return self.drive.position

    def hit_rate(self, node: str) -> float | None:
        return self.drive.journal.hit_rate(node)

    def explain(self, ev: Event | None) -> str:
        return explain(ev, self.sim, self.history)

    # ------------------------------------------------------------------ advancing
    def step(self, fold: bool | None = None) -> Event | None:
        """One event (the app's single step); it becomes the current event. With folding on,
        `stored` and `batch` events are passed over (still counted, still in the journal)."""
        fold = self.fold if fold is None else fold
        ev = self.drive.step(FOLDABLE if fold else ())
        if ev is not None:
            self.current = ev
        elif self.drive.ended and self.last_emitted is not None:
            self.current = self.last_emitted
        return ev

    def back(self) -> Event | None:
        """One event back (folding as `step` does); None when already at the start."""
        before = self.drive.position
        ev = self.drive.back(FOLDABLE if self.fold else ())
        if self.drive.position != before:
            self._moved()
        self.current = ev
        return ev

    def goto(self, position: int) -> None:
        """Go to an event number (back or forward)."""
        back = position < self.drive.position
        self.drive.goto(position)
        if back:
            self._moved()
        self.current = self.drive.run.last

    def goto_time(self, t: float) -> None:
        back = t < self.drive.now
        self.drive.goto_time(t)
        if back:
            self._moved()
        self.current = self.drive.run.last

    def advance(self, target: float, budget_s: float) -> bool:
        """Move sim time toward `target` for at most `budget_s` wall seconds (see Drive)."""
        return self.drive.advance(target, budget_s)

    def seek(self, kinds: Iterable[str], budget_s: float) -> Event | None | bool:
        """Step until an event of one of `kinds`: the event, None if the run ended first (the
        run then stays where the search began), or False if the budget ran out (call again)."""
        before = self.drive.position if self.drive.seek_origin is None else self.drive.seek_origin
        found = self.drive.seek(kinds, budget_s)
        if found is None:
            if self.drive.position != before or self.drive.run.last is not None:
                self._moved()
            self.current = self.drive.run.last
        elif found is not False:
            self.current = found
        return found

    def cancel_seek(self, back_to_origin: bool = False) -> None:
        """Stop a jump's search: where it got to, or (Escape) back where it began."""
        origin = self.drive.seek_origin
        self.drive.cancel_seek()
        if back_to_origin and origin is not None and origin != self.drive.position:
            self.goto(origin)

    def maintain(self, budget_s: float) -> bool:
        """Idle time: build time-travel checkpoints."""
        return self.drive.maintain(budget_s)

    # ------------------------------------------------------------------ commands
    def node_names(self) -> list[str]:
        return [n.name for n in self.sim.nodes]

    def neighbour(self, name: str | None, delta: int) -> str | None:
        """The node `delta` places after `name` in cluster order, wrapping (from the first when
        `name` is not a node); None for an empty cluster. `[`/`]` on both screens."""
        names = self.node_names()
        if not names:
            return None
        i = names.index(name) if name in names else 0
        return names[(i + delta) % len(names)]

    def node_up(self, name: str) -> bool:
        node = self.sim.node_by_name.get(name)
        return bool(node is not None and node.up)

    def toggle_node(self, name: str) -> Event | None:
        """Take a node down, or bring it back; returns the event that says so."""
        ev = self.drive.command("node_up" if not self.node_up(name) else "node_down", name)
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
        ev = self.drive.command("crash")
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


