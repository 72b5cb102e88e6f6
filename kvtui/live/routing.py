"""Route mode's decisions: kvtui's own routing policies over snapshots of real engines.

The policy code is the simulation's (kvtui/sim/router/): a policy is a pure function of the
request, one `NodeState` per node and the seeded RNG, so it runs unchanged over engines once
their snapshots are built from live data, as the simulation's Router builds them
(kvtui/sim/router/router.py `observe`):
- `prefix` / `prefix_score`: the global index's match of the prompt's chained keys, from a
  `KVIndex` (kvtui/sim/router/index.py) fed with the same keys as the live state;
- running / waiting and the pool (used / free / total blocks): the engine's last `/metrics`
  scrape (kvtui/live/metrics.py); an engine without figures yet counts as idle and empty;
- an engine whose metrics are unreachable, or that has no `api` URL to send to, is ineligible
  with that reason (llm-d's filter step: it stays a candidate, marked).

Policies that learn from simulation events (predicted_latency's latency samples, dynamo's
active sequences) get no events here, only `routed`; the others need none.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from kvtui.live.engines import Engine
from kvtui.live.metrics import EngineFigures
from kvtui.live.state import LiveState
from kvtui.sim.request import Request
from kvtui.sim.router.base import Context
from kvtui.sim.router.registry import make_policy, policy_class
from kvtui.sim.router.state import Decision, NodeState

LEARNING = ("predicted_latency", "dynamo")  # policies whose state comes from simulation events


def route_refusal(policy: str) -> str | None:
    """Why route mode cannot run `policy`, or None. Route mode sends each request to one engine
    and reads no simulation events; a P/D policy picks a prefill and a decode node and hands KV
    between them, which a proxy in front of colocated engines cannot do."""
    if policy in LEARNING:
        return f"policy {policy!r} learns from simulation events, which route mode has not"
    if policy_class(policy).PAIRED:
        return f"policy {policy!r} picks a prefill and a decode node (P/D); route mode sends a request to one engine"
    return None


@dataclass(frozen=True)
class Routed:
    """One decision: what was asked, what every engine looked like, what was chosen."""

    request: Request
    decision: Decision
    states: tuple[NodeState, ...]
    at: float | None = None  # the clock when it was decided

    def promised(self, engine: str) -> int:
        """Prompt blocks the index said `engine` held, from the first."""
        return next((s.prefix for s in self.states if s.name == engine), 0)


class LiveRouter:
    def __init__(self, policy: str, engines: Sequence[Engine], seed: int = 0):
        if (why := route_refusal(policy)) is not None:
            raise ValueError(why)
        self.policy_name, self.policy = policy, make_policy(policy)
        self.engines = [rank for e in engines for rank in e.ranks()]  # a data-parallel rank is a candidate
        self.rng = np.random.default_rng(seed)
        self.sessions: dict[str, str] = {}
        self.touched: set[str] | None = None  # when a set: sessions routed since the last look (etcd_keeper)

    def route(self, state: LiveState, request: Request, block_size: int, now: float) -> Routed:
        """The policy's decision for `request` over the engines as `state` has them now."""
        states = tuple(self._snapshot(state, e, request.block_keys) for e in self.engines)
        decision = self.policy.decide(request, Context(self.rng, block_size, self.sessions, now), states)
        if decision.node is not None:
            self.sessions[request.session] = decision.node
            if self.touched is not None:
                self.touched.add(request.session)
            self.policy.routed(request, decision.node, states)
        return Routed(request, decision, states, now)

    def _snapshot(self, state: LiveState, engine: Engine, keys: Sequence[int]) -> NodeState:
        match = state.kv_index.match(keys).get(engine.name)
        prefix, score = (0, 0.0) if match is None else (match.consecutive, min(1.0, match.weighted / len(keys)) if keys else 0.0)
        f = state.figures.get(engine.name, EngineFigures())
        held = state.held(engine.name) if engine.name in state.counts else 0
        total = f.num_gpu_blocks or max(held, 1)  # without metrics: the pool as far as seen
        used = held if f.kv_usage is None else round(f.kv_usage * total)
        return NodeState(engine.name, _problem(engine, f), prefix, score, len(keys), f.running or 0, f.waiting or 0,
                         used, total - used, total, -1, -1, prefix)


def _problem(engine: Engine, f: EngineFigures) -> str | None:
    if engine.api is None:
        return "no api URL to send requests to"
    if f.error:
        return f"metrics unreachable ({f.error})"
    return None
