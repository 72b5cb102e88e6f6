"""What narration needs to know of a run beyond its events: static facts of whoever made it.

A simulation answers from its nodes' pools, CPU tiers and latency models (`SimulationFacts`);
a live cluster would answer from its engines' configuration; with nothing known, `NoFacts`
keeps the sentences to what the events say.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from kvtui.sim.engine import Simulation
    from kvtui.sim.metrics import Metrics


class Facts(Protocol):
    """What narration needs beyond the events: static facts of whoever made the run."""

    block_size: int

    def capacity(self, node: str) -> int | None: ...

    def has_cpu_tier(self, node: str) -> bool: ...

    def prefill_seconds(self, node: str, tokens: int, cached_tokens: int) -> float | None: ...

    def metrics(self) -> "Metrics | None": ...


class NoFacts:
    """Facts when nothing is known beyond the events (vLLM's default block size)."""

    block_size = 16

    def capacity(self, node: str) -> int | None:
        return None

    def has_cpu_tier(self, node: str) -> bool:
        return False

    def prefill_seconds(self, node: str, tokens: int, cached_tokens: int) -> float | None:
        return None

    def metrics(self) -> "Metrics | None":
        return None


class SimulationFacts:
    """The facts of a simulation (its nodes' pools, CPU tiers and latency models)."""

    def __init__(self, sim: "Simulation"):
        self.sim = sim
        self.block_size = sim.block_size

    def capacity(self, node: str) -> int | None:
        n = self.sim.node_by_name.get(node)
        return n.pool.num_blocks if n is not None else None

    def has_cpu_tier(self, node: str) -> bool:
        n = self.sim.node_by_name.get(node)
        return n is not None and n.kv.cpu is not None

    def prefill_seconds(self, node: str, tokens: int, cached_tokens: int) -> float | None:
        from kvtui.sim.latency import prefill_seconds

        n = self.sim.node_by_name.get(node)
        return prefill_seconds(n.latency, tokens, cached_tokens) if n is not None else None

    def metrics(self) -> "Metrics | None":
        return self.sim.metrics
