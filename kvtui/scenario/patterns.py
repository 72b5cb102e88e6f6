"""The three control-plane patterns issue 34 teaches, as overlays of `metadata.replication`, so
one scenario shows each (`kvtui SCENARIO --vs pattern:B`, `kvtui compare --sweep`):

- A, a consensus-replicated metadata store (Mooncake's master on etcd): reads through the leader,
  the KV-event stream held while no leader takes it;
- B, a replicated event stream with state derived per replica (Dynamo's routers on NATS /
  JetStream): the router reads its own member, serializable, never refused, maybe stale;
- C, one leader on a lease, plus rebuild (llm-d's endpoint picker on a Kubernetes lease,
  LMCache's controller): the leader answers alone on its lease, and events published while no
  leader exists are lost (a pub/sub socket).
"""

from __future__ import annotations

from dataclasses import replace

from kvtui.scenario.model import Scenario

PATTERNS: dict[str, dict[str, str]] = {
    "A": {"router_reads": "leader", "stream": "durable"},
    "B": {"router_reads": "follower_serializable", "stream": "durable"},
    "C": {"router_reads": "lease", "stream": "lossy"},
}


def pattern_of(scenario: Scenario) -> str | None:
    """The pattern a replicated scenario is written as; None when it is none of the three."""
    rep = scenario.metadata.replication if scenario.metadata is not None else None
    if rep is None or rep.members < 2:
        return None
    return next((k for k, keys in PATTERNS.items() if all(getattr(rep, f) == v for f, v in keys.items())), None)


def with_pattern(scenario: Scenario, name: str) -> Scenario:
    """The scenario with its Raft group set to pattern `name`; ValueError with the reason when
    `name` is not one or the scenario has no Raft group."""
    if name not in PATTERNS:
        raise ValueError(f"unknown pattern {name!r} (one of {', '.join(PATTERNS)})")
    meta = scenario.metadata
    rep = meta.replication if meta is not None else None
    if meta is None or rep is None or rep.members < 2:
        raise ValueError("a pattern needs a scenario whose metadata.replication has members: 2 or more "
                         "(scenarios/control-plane-patterns.yaml has 3)")
    rep = replace(rep, **PATTERNS[name])  # type: ignore[arg-type]  # the literals PATTERNS holds
    return replace(scenario, metadata=replace(meta, replication=rep))
