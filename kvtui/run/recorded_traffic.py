"""A route-mode recording's traffic and cluster, as a simulation can take them.

`kvtui live --route POLICY --record DIR` keeps, per request the proxy served (`Served`,
kvtui/live/delivery.py): when the router decided, the prompt's block keys (kvtui's chained hash
over the engine's own token ids), the prompt and output tokens, the engine chosen, the blocks
it served from its prefix cache, TTFT and E2E; and, per engine, its `/metrics` scrapes (its KV
blocks and block size). That is a trace with keys (kvtui/sim/workload/keyed.py) and a cluster
of one node per engine: everything a counterfactual replay needs besides the latency model,
which `kvtui calibrate` fits from the same recording.

A recording made before the proxy kept the keys, or not in route mode, cannot be replayed so
and is refused with why.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, replace

from kvtui.errors import InputError
from kvtui.live.delivery import Scraped, Served
from kvtui.live.recording import read_recording
from kvtui.scenario.model import Scenario, Trace

KEY_MASK = 2**63 - 1  # trace ids are at most 63 bits; equal keys stay equal


@dataclass(frozen=True)
class RecordedRequest:
    """One request as the recording has it (times in seconds from the first decision)."""

    t: float
    engine: str
    prompt_tokens: int
    output_tokens: int
    keys: tuple[int, ...]
    prompt_blocks: int
    hit: int  # blocks the engine served from its prefix cache
    available: int  # the most blocks the router's index credited any engine with
    promised: int  # what it credited the chosen engine with
    ttft_s: float | None
    e2e_s: float


@dataclass(frozen=True)
class Traffic:
    path: str
    policy: str  # the policy that routed it ("" when the recording does not say)
    block_size: int
    engines: tuple[str, ...]
    kv_blocks: dict[str, int]  # per engine, from its scrapes
    requests: tuple[RecordedRequest, ...]
    start_s: float = 0.0  # the first decision, in seconds from the recording's first delivery (its clock's zero)


def read_traffic(path: str) -> Traffic:
    """The recording's routed requests, in the order they were routed; InputError when it has none to replay."""
    return traffic_of(path, read_recording(path))


def traffic_of(path: str, deliveries: Sequence) -> Traffic:
    """`read_traffic` of a recording already read (the app's split screen shows its deliveries too)."""
    served = [d for d in deliveries if isinstance(d, Served)]
    if not served:
        raise InputError.one(path, None, "not a route-mode recording: no request routed in it "
                             "(record one with kvtui live --route POLICY --record DIR)")
    block = _bs(deliveries, path)
    keyed = [d for d in served if d.routed_at is not None and len(d.block_keys) >= d.prompt_tokens // block]
    if len(keyed) < len(served):
        raise InputError.one(path, None, f"{len(served) - len(keyed)} of {len(served)} routed requests lack their "
                             "block keys or decision time (recorded by an older kvtui): record again to replay it")
    keyed.sort(key=lambda d: d.routed_at or 0.0)
    t0 = keyed[0].routed_at or 0.0
    requests = tuple(_request(d, (d.routed_at or t0) - t0) for d in keyed)
    engines = tuple(dict.fromkeys([*(d.engine for d in deliveries if isinstance(d, Scraped)), *(r.engine for r in requests)]))
    kv = {d.engine: d.figures.num_gpu_blocks for d in deliveries
          if isinstance(d, Scraped) and d.figures.num_gpu_blocks}
    missing = [e for e in engines if e not in kv]
    if missing:
        raise InputError.one(path, None, f"no /metrics scrape gave the KV blocks of {', '.join(missing)}: "
                             "the simulated cluster needs each engine's pool size")
    policies = {d.policy for d in keyed}
    return Traffic(path, policies.pop() if len(policies) == 1 else "", block, engines, kv, requests,
                   t0 - deliveries[0].at)


def _bs(deliveries, path: str) -> int:
    sizes = {d.figures.block_size for d in deliveries if isinstance(d, Scraped) and d.figures.block_size}
    if len(sizes) != 1:
        raise InputError.one(path, None, "the engines' scrapes do not give one block size "
                             f"({', '.join(map(str, sorted(sizes))) or 'none'}): the replay needs it")
    return sizes.pop()


def _request(d: Served, t: float) -> RecordedRequest:
    f = d.forensics
    available = max((promised for _, _, promised, _ in d.candidates), default=0)  # an ineligible engine still holds its blocks
    return RecordedRequest(t, d.engine, d.prompt_tokens, d.output_tokens, d.block_keys, f.prompt_blocks, f.hit,
                           available, f.promised, d.ttft_s, d.e2e_s)


def write_keyed_trace(traffic: Traffic, out: str) -> None:
    """The traffic as a `keyed` trace file (kvtui/sim/workload/keyed.py)."""
    with open(out, "w", encoding="utf-8") as f:
        for r in traffic.requests:
            keys = [k & KEY_MASK for k in r.keys[: r.prompt_tokens // traffic.block_size]]
            f.write(json.dumps({"t": round(r.t, 6), "prompt": r.prompt_tokens, "output": max(1, r.output_tokens),
                                "block_size": traffic.block_size, "keys": keys}) + "\n")


def replay_scenario(traffic: Traffic, base: Scenario, trace_path: str) -> Scenario:
    """`base` (its latency model and hardware: the calibrated profile) with the recording's
    cluster (one node per engine, its pool, the block size) and its traffic as the workload."""
    template = base.cluster.nodes[0]
    nodes = tuple(replace(template, name=e, kv_blocks=traffic.kv_blocks[e]) for e in traffic.engines)
    cluster = replace(base.cluster, nodes=nodes, block_size=traffic.block_size)
    workload = replace(base.workload, trace=Trace(format="keyed", path=trace_path), shared_prefix=None,
                       duration_s=None, requests=None, sessions=None)
    return replace(base, name=f"replay of {traffic.path}", cluster=cluster, workload=workload, events=(), story=())
