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
from kvtui.scenario.run_spec import RunSpec, resolve
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
        return simulate(traffic, resolve(traffic_scenario(traffic, base, tmp), seed, policy, "--as"))


def traffic_scenario(traffic: Traffic, base: Scenario, directory: str) -> Scenario:
    """The replay's scenario, its trace written into `directory` (which must outlive the run)."""
    trace = os.path.join(directory, "traffic.keys.jsonl")
    write_keyed_trace(traffic, trace)
    return replay_scenario(traffic, base, trace)


def simulate(traffic: Traffic, spec: RunSpec) -> Replay:
    """Run the replay (its scenario under --as, resolved: kvtui/scenario/run_spec.py) to its end,
    and measure both sides."""
    policy = spec.policy
    c = _Collector(len(traffic.requests))
    finished = run_to_end(spec, on_event=c.on_event)
    doc = finished.document
    a = doc["routing"].get("available") or {}
    served = {n["name"]: n["requests_served"] for n in doc["nodes"]}
    blocks = sum(r.prompt_blocks for r in traffic.requests)
    simulated = Side(f"simulated ({policy})", tuple(c.hits), blocks, tuple(c.ttft), served,
                     a["available_blocks"] / blocks if blocks and a else None,
                     a["chosen_blocks"] / blocks if blocks and a else None)
    return Replay(traffic, policy, recorded_side(traffic), simulated, doc, c.hasher.hexdigest()[:16])


def pct(v: float | None) -> str:
    return "—" if v is None else f"{100 * v:.1f}%"


def ms(v: float | None) -> str:
    return "—" if v is None else f"{1000 * v:.1f}"


def delta(a: float | None, b: float | None, scale: float, unit: str) -> str:
    return "—" if a is None or b is None else f"{scale * (b - a):+.1f}{unit}"


def table_rows(r: Replay) -> list[tuple[str, str, str, str]]:
    """The comparison's rows as shown, (figure, recorded, simulated, delta): one source for the
    headless table (kvtui/cli/counterfactual.py) and the split screen's (kvtui/tui/counterfactual.py),
    so the two print the same figures."""
    rec, sim = r.recorded, r.simulated
    rows = [("hit rate (blocks)", pct(rec.hit_rate), pct(sim.hit_rate), delta(rec.hit_rate, sim.hit_rate, 100, " pp"))]
    for q in (50, 95):
        a, b = rec.ttft(q), sim.ttft(q)
        rows.append((f"TTFT p{q} ms", ms(a), ms(b), delta(a, b, 1000, "")))
    for e in r.traffic.engines:
        n, m = rec.served.get(e, 0), sim.served.get(e, 0)
        rows.append((f"requests on {e}", str(n), str(m), f"{m - n:+d}"))
    rows.append(("available hit rate", pct(rec.available), pct(sim.available), delta(rec.available, sim.available, 100, " pp")))
    rows.append(("chosen engine held", pct(rec.chosen), pct(sim.chosen), delta(rec.chosen, sim.chosen, 100, " pp")))
    gave = [None if s.available is None or s.chosen is None else s.available - s.chosen for s in (rec, sim)]
    rows.append(("given away", pct(gave[0]), pct(gave[1]), delta(gave[0], gave[1], 100, " pp")))
    return rows

