"""What every routing policy shares: the view of the cluster, candidates and decisions.

A policy gets the request and a `ClusterView` and returns a `Decision`: the node (or None to
reject), a sentence saying why, and every candidate with its features and score, so the
decision log can explain the pick. Nodes that would refuse the request now (down, at
`max_active`, queue full, too small) are candidates too, marked ineligible with the reason —
the filter step of llm-d's scheduler (filters, then scorers, then a picker).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Sequence

import numpy as np

from kvtui.events import Candidate
from kvtui.sim.request import Request
from kvtui.sim.router.kv_index import KVIndex

if TYPE_CHECKING:
    from kvtui.sim.node import Node


@dataclass(frozen=True)
class Decision:
    node: str | None
    reason: str
    candidates: tuple[Candidate, ...]


@dataclass
class ClusterView:
    nodes: Sequence["Node"]
    index: KVIndex
    sessions: dict[str, str]
    rng: np.random.Generator
    block_size: int


@dataclass(frozen=True)
class NodeState:
    """A node's features at decision time."""

    node: "Node"
    problem: str | None
    prefix: int  # leading prompt blocks the KV index says this node holds
    active: int
    waiting: int
    free: int
    total: int

    @property
    def name(self) -> str:
        return self.node.name

    @property
    def eligible(self) -> bool:
        return self.problem is None

    def features(self) -> tuple[tuple[str, float], ...]:
        return (
            ("prefix", float(self.prefix)),
            ("active", float(self.active)),
            ("waiting", float(self.waiting)),
            ("free", float(self.free)),
            ("kv_util", round(1.0 - self.free / self.total, 4) if self.total else 1.0),
        )


def prompt_keys(req: Request, block_size: int) -> tuple[int, ...]:
    return req.block_keys[: req.prompt_tokens // block_size]


def observe(req: Request, view: ClusterView, with_prefix: bool = True) -> list[NodeState]:
    matched = view.index.match(prompt_keys(req, view.block_size)) if with_prefix else {}
    out = []
    for node in view.nodes:
        pool = node.pool
        out.append(
            NodeState(
                node=node,
                problem=node.admission_problem(req),
                prefix=matched.get(node.name, 0) if node.up else 0,
                active=node.active,
                waiting=len(node.waiting),
                free=pool.free_count,
                total=pool.num_blocks,
            )
        )
    return out


def candidates(states: list[NodeState], scores: dict[str, float]) -> tuple[Candidate, ...]:
    return tuple(
        Candidate(
            node=s.name,
            score=round(scores.get(s.name, 0.0), 6),
            features=s.features(),
            eligible=s.eligible,
            note=s.problem or "",
        )
        for s in states
    )


def least_loaded(states: list[NodeState]) -> NodeState:
    """Fewest active requests; ties to the most free blocks, then to node order."""
    return min(states, key=lambda s: (s.active, -s.free))


def no_eligible(states: list[NodeState]) -> Decision:
    reasons = "; ".join(f"{s.name}: {s.problem}" for s in states)
    return Decision(None, f"no node can take it ({reasons})", candidates(states, {}))


class Policy:
    """Base class: observe every node, filter out the ineligible ones (llm-d's filter step),
    and let the policy's `choose` pick among the rest; with none left, the request is refused
    with every node's reason."""

    name = "policy"

    def decide(self, req: Request, view: ClusterView) -> Decision:
        states = observe(req, view)
        ok = [s for s in states if s.eligible]
        if not ok:
            return no_eligible(states)
        return self.choose(req, view, states, ok)

    def choose(self, req: Request, view: ClusterView, states: list[NodeState], ok: list[NodeState]) -> Decision:
        """Pick among `ok` (non-empty); `states` holds every node, for the candidate list."""
        raise NotImplementedError
