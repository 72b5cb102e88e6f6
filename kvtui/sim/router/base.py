"""The policy interface: every routing policy is a subclass, named once in kvtui/scenario/policies.py.

A policy gets the request, a `Context` (the seeded RNG, block size, session table, sim time)
and one `NodeState` snapshot per node, and returns a `Decision`. The base class does llm-d's
filter step (nodes that would refuse the request now are candidates too, marked ineligible
with the reason); `choose` scores and picks among the rest.

Policies that learn (predicted_latency) or keep their own view of the cluster (dynamo's
active sequences, sglang's approximate tree) declare the event types they want in
`EVENT_TYPES` and get them in `on_event`; `routed` tells them where a request went. Options
come from the scenario's one `router:` section through `from_config`, so the engine never
special-cases a policy.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar, Mapping, Sequence

import numpy as np
from mypy_extensions import mypyc_attr

from kvtui.events import Event
from kvtui.scenario.model import Router as RouterConfig
from kvtui.sim.request import Request
from kvtui.sim.router.state import Decision, NodeState, no_eligible


@dataclass
class Context:
    """What a policy may read besides the node snapshots."""

    rng: np.random.Generator
    block_size: int
    sessions: Mapping[str, str]
    now: float = 0.0
    # Each node's latency model (kvtui/sim/latency.py), its offline profile: what a router that
    # estimates times from profiled figures reads (mooncake's conductor); static per run.
    latency: Mapping[str, Any] = field(default_factory=dict)


# policies outside the compiled group (simple.py, sglang.py, ...) subclass it: mypyc must allow that
@mypyc_attr(allow_interpreted_subclasses=True)
class Policy:
    EVENT_TYPES: ClassVar[tuple[type[Event], ...]] = ()
    # A prefill/decode policy (kvtui/sim/router/pair.py) picks two nodes per request.
    PAIRED: ClassVar[bool] = False
    # Whether `choose` reads `NodeState.prefill_tokens`: the Router walks every node's queue
    # for it per decision only then (it is -1 otherwise), a cost that grows with the cluster.
    READS_PREFILL_TOKENS: ClassVar[bool] = False
    # Whether `choose` reads `NodeState.gpu_prefix` (the GPU part of the consecutive match):
    # one more index walk per node holding the prompt's first block, so only when asked.
    READS_TIERS: ClassVar[bool] = False
    # Whether `choose` reads `NodeState.iteration_left_ms` (a walk over each busy node's
    # segment per decision): predicted_latency with its `iteration_feature` option only.
    READS_ITERATION_LEFT: ClassVar[bool] = False
    # Whether `choose` reads `NodeState.queue_s` (each queued prompt timed by the node's latency
    # model: a walk over the queue per node per decision): mooncake only.
    READS_QUEUE_SECONDS: ClassVar[bool] = False

    @classmethod
    def from_config(cls, cfg: RouterConfig) -> "Policy":
        return cls()

    def decide(self, req: Request, ctx: Context, states: Sequence[NodeState]) -> Decision:
        ok = [s for s in states if s.problem is None]  # s.eligible, without a property call per node
        if not ok:
            return no_eligible(states)
        return self.choose(req, ctx, states, ok)

    def choose(self, req: Request, ctx: Context, states: Sequence[NodeState], ok: list[NodeState]) -> Decision:
        """Pick among `ok` (non-empty); `states` holds every node, for the candidate list."""
        raise NotImplementedError

    def routed(self, req: Request, node: str, states: Sequence[NodeState]) -> None:
        """The request was handed to `node` (after admission). Policies with state update it."""

    def on_event(self, ev: Event) -> None:
        """An event of one of `EVENT_TYPES` happened."""

    def report(self) -> dict:
        """Figures for the result document's `routing` section (e.g. prediction error)."""
        return {}

    def headline(self) -> str:
        """A few words for the app's stats line (e.g. prediction error), or ""; cheap: per frame."""
        return ""
