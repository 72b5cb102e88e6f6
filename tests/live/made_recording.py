"""A small, fixed recording for the live app's tests: two engines with small pools running a
shared-prefix workload, each request's KV events one tagged-map batch (vLLM 0.33.0's form),
received at fixed times, with one gap and one malformed message on the way, and a scrape of
one engine's /metrics (its pool a little larger than it ever filled, so the map shows free cells).

The frames are made here rather than by vLLM's publisher so the app's snapshots and step /
seek tests run everywhere with fixed bytes; that kvtui reads what the real publishers send is
test_live_vllm.py's and test_live_dynamo.py's business. The pool is a plain LRU of full blocks
(what vLLM's prefix cache does with requests run one at a time), enough to fill and evict.
"""

from __future__ import annotations

import random
from collections import OrderedDict

import msgpack

from kvtui.live.delivery import Delivery, Gap, Received, Scraped, Watching
from kvtui.live.metrics import EngineFigures

BS = 4
ENGINES = ("vllm-a", "vllm-b")


class _Pool:
    def __init__(self, blocks: int):
        self.blocks, self.cached = blocks, OrderedDict()  # hash -> None, LRU first

    def run(self, tokens: list[int]) -> list[dict]:
        events, parent = [], None
        for i in range(len(tokens) // BS):
            h = hash((parent, tuple(tokens[i * BS:(i + 1) * BS]))) & 0x7FFF_FFFF_FFFF_FFFF
            if h in self.cached:
                self.cached.move_to_end(h)
            else:
                events += self._make_room()
                events.append({"type": "BlockStored", "block_hashes": [h], "parent_block_hash": parent,
                               "token_ids": tokens[i * BS:(i + 1) * BS], "block_size": BS, "lora_id": None,
                               "medium": "GPU"})
                self.cached[h] = None
            parent = h
        return events

    def _make_room(self) -> list[dict]:
        if len(self.cached) < self.blocks:
            return []
        victim, _ = self.cached.popitem(last=False)
        return [{"type": "BlockRemoved", "block_hashes": [victim], "medium": "GPU"}]


def _frames(seq: int, events: list[dict]) -> tuple[bytes, ...]:
    return (b"kv", seq.to_bytes(8, "big"), msgpack.packb([100.0 + seq, events, None]))


def made_recording(requests: int = 120, blocks: int = 40, seed: int = 3) -> list[Delivery]:
    rng = random.Random(seed)
    families = [[rng.randrange(1000) for _ in range(rng.randrange(8, 25))] for _ in range(5)]
    pools = {name: _Pool(blocks) for name in ENGINES}
    seqs = dict.fromkeys(ENGINES, 0)
    out: list[Delivery] = [Watching(name, 1000.0) for name in ENGINES]
    for k in range(requests):
        name, at = ENGINES[k % 2], 1000.0 + 0.25 * (k + 1)
        tokens = list(rng.choice(families)) + [rng.randrange(1000) for _ in range(rng.randrange(1, 12))]
        if k == requests // 2:  # two batches lost: the engine's replay could not return them
            out.append(Gap(name, at, seqs[name], 2))
            seqs[name] += 2
        out.append(Received(name, at, _frames(seqs[name], pools[name].run(tokens))))
        seqs[name] += 1
    out.insert(len(out) // 3, Received(ENGINES[0], out[len(out) // 3].at, (b"", b"\x01")))
    out.insert(3, Scraped(ENGINES[1], out[2].at, EngineFigures(blocks + 8, BS, 0.1, 1, 0, 64, 16)))
    return out


def made_routed_recording(requests: int = 60, blocks: int = 40, seed: int = 5, policy: str = "load_prefix",
                          scraped: bool = False) -> list[Delivery]:
    """A route-mode recording: kvtui's `policy` routes each request over the live index (as
    kvtui/live/proxy.py does, with kvtui/live/routing.py), the chosen engine's pool runs it and
    publishes its batch, and the request is handed on as served with the miss forensics of
    kvtui/live/forensics.py and a TTFT and E2E that grow with the blocks it missed. `scraped`:
    each engine's /metrics read once at the start (its pool and block size: what a
    counterfactual replay, kvtui/run/recorded_traffic.py, needs)."""
    import numpy as np

    from kvtui.live.delivery import Served, ingest
    from kvtui.live.engines import Engine
    from kvtui.live.forensics import attribute
    from kvtui.live.routing import LiveRouter
    from kvtui.live.state import LiveState
    from kvtui.sim.request import Request
    from kvtui.sim.workload.hashing import chain_keys

    rng = random.Random(seed)
    families = [[rng.randrange(1000) for _ in range(rng.randrange(8, 25))] for _ in range(4)]
    pools = {name: _Pool(blocks) for name in ENGINES}
    seqs = dict.fromkeys(ENGINES, 0)
    router = LiveRouter(policy, [Engine(name, "tcp://h:1", api=f"http://{name}") for name in ENGINES])
    state = LiveState()
    out: list[Delivery] = []

    def deliver(d: Delivery) -> None:
        ingest(state, d)
        out.append(d)

    for name in ENGINES:
        deliver(Watching(name, 1000.0))
    for name in ENGINES if scraped else ():
        deliver(Scraped(name, 1000.0, EngineFigures(blocks, BS, 0.0, 0, 0, 0, 0)))
    for k in range(requests):
        at = 1000.0 + 0.5 * (k + 1)
        tokens = list(rng.choice(families)) + [rng.randrange(1000) for _ in range(rng.randrange(1, 12))]
        keys = tuple(chain_keys(np.asarray(tokens, dtype=np.int64), BS, None))
        routed = router.route(state, Request(f"r{k}", f"s{k % 7}", "", 0, len(tokens), 8, keys), BS, at)
        engine = routed.decision.node
        hit = _cached_prefix(pools[engine], tokens)
        deliver(Received(engine, at + 0.01, _frames(seqs[engine], pools[engine].run(tokens))))
        seqs[engine] += 1
        f = attribute(routed, state, hit * BS, BS)
        ttft = 0.02 + 0.004 * f.missed
        candidates = tuple((c.node, c.score, routed.promised(c.node), c.eligible) for c in routed.decision.candidates)
        deliver(Served(engine, at + 0.1, f"r{k}", routed.decision.reason, candidates, f, ttft, ttft + 0.01 * 8,
                       len(tokens), 8, keys, at, policy, f"s{k % 7}"))
    return out


def _cached_prefix(pool: _Pool, tokens: list[int]) -> int:
    """Leading full blocks of `tokens` the pool holds (what the engine serves from cache)."""
    parent, n = None, 0
    for i in range(len(tokens) // BS):
        h = hash((parent, tuple(tokens[i * BS:(i + 1) * BS]))) & 0x7FFF_FFFF_FFFF_FFFF
        if h not in pool.cached:
            break
        parent, n = h, n + 1
    return n
