"""What a viewer remembers of a run: recent decisions and notable events, per-request lives,
who stored each cached block, and the marks of the timeline.

A `Journal` listens to one Simulation's bus. It belongs to the run, not to the screen: when
the app steps back, the run it returns to (a checkpoint replayed forward) carries its own
journal, so the logs, explanations and request lives on screen are exactly those of the
moment shown. Everything is bounded (the oldest requests and log lines are forgotten).
"""

from __future__ import annotations

from collections import Counter, OrderedDict, deque

from kvtui.events import (
    BlocksEvicted,
    BlocksStored,
    ControlPlaneCrashed,
    ControlPlaneRecovered,
    EngineRestarted,
    Event,
    KVEventsLost,
    KVMessageMalformed,
    MetadataElection,
    MetadataHealed,
    MetadataLeaderElected,
    MetadataMemberDown,
    MetadataMemberUp,
    MetadataPartitioned,
    MetadataStepDown,
    MissesAttributed,
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
from kvtui.run.narrate import History
from kvtui.run.terms import TERM_EVENTS, Terms

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
    MetadataElection,
    MetadataLeaderElected,
    MetadataStepDown,
    MetadataMemberDown,
    MetadataMemberUp,
    MetadataPartitioned,
    MetadataHealed,
    SimulationEnded,
    KVEventsLost,
    EngineRestarted,
    KVMessageMalformed,
    MissesAttributed,
)

# Timeline marks: event class -> (label, only the first one?)
MARKS: dict[type[Event], tuple[str, bool]] = {
    BlocksEvicted: ("first eviction", True),
    RequestRejected: ("first rejection", True),
    RequestPreempted: ("first preemption", True),
    NodeDown: ("node down", False),
    NodeUp: ("node up", False),
    ControlPlaneCrashed: ("control plane crash", False),
    ControlPlaneRecovered: ("control plane recovered", False),
    MetadataLeaderElected: ("new metadata leader", False),
    MetadataPartitioned: ("metadata partition", False),
    KVEventsLost: ("lost gap", False),
    EngineRestarted: ("engine restart", False),
}

HIT_WINDOW = 20  # a node label's hit rate is over its last this-many completed requests


class Journal:
    """Bounded memory of one run, fed by its bus."""

    def __init__(self, keep_decisions: int = 500, keep_log: int = 500, keep_requests: int = 5_000):
        self.history = History(keep=keep_requests)
        self.decisions: deque[RouteDecided] = deque(maxlen=keep_decisions)
        self.log: deque[Event] = deque(maxlen=keep_log)
        self.counts: Counter[str] = Counter()
        self.node_hits: dict[str, list[int]] = {}  # see _count_hit
        self._recent_hits: dict[str, deque[bool]] = {}
        self.last_emitted: Event | None = None
        self.last_interesting: Event | None = None
        self.last_election: MetadataElection | None = None  # a Raft group's (not a PreVote round): J goes there
        self.marks: list[tuple[float, int, str, str]] = []  # (t, seq, kind, label)
        self.terms = Terms()  # a replicated control plane's term bands (drawn under the timeline)
        self.keep_requests = keep_requests
        self.lives: OrderedDict[str, list[Event]] = OrderedDict()
        self._sessions: dict[str, str] = {}
        self._stored: dict[str, dict[int, tuple[int | None, str]]] = {}  # node -> key -> (parent, request)

    def on_event(self, ev: Event) -> None:
        kind = ev.kind
        self.counts[kind] += 1
        self.last_emitted = ev
        self.history.on_event(ev)
        mark = MARKS.get(type(ev))
        if mark is not None and (not mark[1] or self.counts[kind] == 1):
            node = getattr(ev, "node", None)
            self.marks.append((ev.t, ev.seq, kind, f"{mark[0]}" + (f" {node}" if node and not mark[1] else "")))
        if isinstance(ev, RouteDecided):
            self.decisions.append(ev)
            self.last_interesting = ev
        elif isinstance(ev, LOG_TYPES):
            self.log.append(ev)
            self.last_interesting = ev
        if isinstance(ev, TERM_EVENTS):
            self.terms.on_event(ev)
        if isinstance(ev, MetadataElection) and not ev.pre_vote:
            self.last_election = ev  # kept apart from the bounded log, which evictions can fill
        if isinstance(ev, BlocksStored):
            self._on_stored(ev)
        elif isinstance(ev, BlocksEvicted):
            table = self._stored.get(ev.node)
            if table:
                for k in ev.keys:
                    table.pop(k, None)
        elif isinstance(ev, NodeCacheCleared):
            self._stored.pop(ev.node, None)
            self._forget_hits(ev.node)
        elif isinstance(ev, RequestCompleted):
            self._count_hit(ev.node, ev.hit != "miss")
        self._note_life(ev)

    def _count_hit(self, node: str, hit: bool) -> None:
        """node_hits[node] = [hits, requests] over its last HIT_WINDOW completions, and all its
        completions: a lifetime rate would still read 93 % for a node back from a failure with an
        empty cache, so the label shows the recent one."""
        recent = self._recent_hits.setdefault(node, deque(maxlen=HIT_WINDOW))
        h = self.node_hits.setdefault(node, [0, 0, 0])
        if len(recent) == HIT_WINDOW:
            h[0] -= recent[0]
            h[1] -= 1
        recent.append(hit)
        h[0] += hit
        h[1] += 1
        h[2] += 1

    def _forget_hits(self, node: str) -> None:
        """The node lost its cache: its past hits say nothing about the next requests."""
        self._recent_hits.pop(node, None)
        h = self.node_hits.get(node)
        if h is not None:
            h[0] = h[1] = 0

    def _on_stored(self, ev: BlocksStored) -> None:
        table = self._stored.setdefault(ev.node, {})
        parent = ev.parent_key
        for k in ev.keys:
            table[k] = (parent, ev.request)
            parent = k

    def _note_life(self, ev: Event) -> None:
        req = getattr(ev, "request", None)
        if req is None:
            req = getattr(ev, "for_request", None)
        if not req or req.startswith("pin:"):  # "": a real engine's blocks name no request
            if isinstance(ev, NodeDown):
                for r in ev.rerouted + ev.failed:
                    if r in self.lives:
                        self.lives[r].append(ev)
            return
        life = self.lives.get(req)
        if life is None:
            life = self.lives[req] = []
            if len(self.lives) > self.keep_requests:
                old, _ = self.lives.popitem(last=False)
                self._sessions.pop(old, None)
        life.append(ev)
        session = getattr(ev, "session", None)
        if session:
            self._sessions[req] = session

    # ------------------------------------------------------------------ questions
    def life(self, request: str) -> tuple[Event, ...]:
        """Every event of one request so far, in order (empty if unknown or forgotten)."""
        return tuple(self.lives.get(request, ()))

    def provenance(self, node: str, key: int) -> tuple[int | None, str, str | None] | None:
        """(parent key, storing request, its session) of a key cached on a node."""
        found = self._stored.get(node, {}).get(key)
        if found is None:
            return None
        parent, request = found
        return parent, request, self._sessions.get(request)

    def hit_rate(self, node: str) -> float | None:
        h = self.node_hits.get(node)
        if not h or not h[1]:
            return None
        return h[0] / h[1]
