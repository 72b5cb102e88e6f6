"""Counterfactual replay: a route-mode recording's traffic simulated under a policy, beside
what really happened.

The recording gives the traffic and the cluster (kvtui/run/recorded_traffic.py); the base
scenario gives the latency model (the profile `kvtui calibrate` fitted from the same
recording). The simulation goes through the normal run layer (`run_to_end`), and each side is
reduced to the same figures: the block hit rate (blocks served from cache over the prompt's
blocks, as the proxy's forensics count it), TTFT p50/p95 (numpy's linear percentiles, as
everywhere in kvtui), the requests each engine served, and available against achieved (the
best hit any engine could have served against the chosen one's). Replayed under the policy
that really routed the recording, the differences are kvtui's own error.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
from dataclasses import dataclass

from kvtui.events import Event, RequestCompleted, RequestScheduled
from kvtui.percentiles import percentile
from kvtui.run.headless import run_to_end
from kvtui.run.recorded_traffic import Traffic, replay_scenario, write_keyed_trace
from kvtui.scenario.model import Scenario
from kvtui.sim.router.registry import policy_class


@dataclass(frozen=True)
class Side:
    """One side of the comparison: the recording, or the simulated replay."""

    label: str
    hits: tuple[int, ...]  # blocks served from cache, per request in routing order
    prompt_blocks: int
    ttft_s: tuple[float, ...]
    served: dict[str, int]  # requests per engine
    available: float | None  # hit rate: best any engine could have served (None: unknown)
    chosen: float | None  # hit rate the chosen engines held at the decision

    @property
    def hit_rate(self) -> float:
        return sum(self.hits) / self.prompt_blocks if self.prompt_blocks else 0.0

    def ttft(self, q: float) -> float | None:
        return percentile(self.ttft_s, q)


@dataclass(frozen=True)
class Replay:
    traffic: Traffic
    policy: str
    recorded: Side
    simulated: Side
    document: dict  # the simulated run's result document
    digest: str  # of the simulated run's event stream

    @property
    def same_policy(self) -> bool:
        return self.policy == self.traffic.policy


def refusal(policy: str) -> str | None:
    """Why the recording cannot be replayed under `policy`, or None. Unlike route mode, the
    simulation feeds learning policies (predicted_latency, dynamo) their events, so only P/D
    policies are refused: the recorded engines each served whole requests."""
    if policy_class(policy).PAIRED:
        return "it picks a prefill and a decode node (P/D); the recording's engines each served whole requests"
    return None


def recorded_side(traffic: Traffic) -> Side:
    reqs = traffic.requests
    blocks = sum(r.prompt_blocks for r in reqs)
    served = {e: sum(1 for r in reqs if r.engine == e) for e in traffic.engines}
    return Side(f"recorded ({traffic.policy or 'policy not recorded'})", tuple(r.hit for r in reqs), blocks,
                tuple(r.ttft_s for r in reqs if r.ttft_s is not None), served,
                sum(r.available for r in reqs) / blocks if blocks else None,
                sum(r.promised for r in reqs) / blocks if blocks else None)


class _Collector:
    """Per simulated request (trace order, `req-N`): its first admission's hit and its TTFT."""

    TYPES = (RequestScheduled, RequestCompleted)

    def __init__(self, n: int):
        self.hits = [0] * n
        self.ttft: list[float] = []
        self.hasher = hashlib.sha256()  # kvtui.run.digest of the whole stream, without keeping it

    def on_event(self, ev: Event) -> None:
        self.hasher.update(repr(ev).encode())
        match ev:
            case RequestScheduled(request=rid, hit_blocks=hit, resumed=False):
                self.hits[int(rid.removeprefix("req-")) - 1] = hit
            case RequestCompleted(ttft=ttft):
                self.ttft.append(ttft)


def replay(traffic: Traffic, base: Scenario, policy: str, seed: int | None = None) -> Replay:
    """Simulate `traffic` on `base`'s latency model under `policy`, and measure both sides."""
    with tempfile.TemporaryDirectory(prefix="kvtui-replay-") as tmp:
        trace = os.path.join(tmp, "traffic.keys.jsonl")
        write_keyed_trace(traffic, trace)
        scenario = replay_scenario(traffic, base, trace)
        c = _Collector(len(traffic.requests))
        finished = run_to_end(scenario, seed=seed, policy=policy, on_event=c.on_event)
    doc = finished.document
    a = doc["routing"].get("available") or {}
    served = {n["name"]: n["requests_served"] for n in doc["nodes"]}
    blocks = sum(r.prompt_blocks for r in traffic.requests)
    simulated = Side(f"simulated ({policy})", tuple(c.hits), blocks, tuple(c.ttft), served,
                     a["available_blocks"] / blocks if blocks and a else None,
                     a["chosen_blocks"] / blocks if blocks and a else None)
    return Replay(traffic, policy, recorded_side(traffic), simulated, doc, c.hasher.hexdigest()[:16])
