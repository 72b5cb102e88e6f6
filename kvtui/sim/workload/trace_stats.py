"""What a trace allows before any simulation: its shape, its reuse, and the LRU hit rate at a
few cache capacities (`kvtui trace stats`). No Rich here: the CLI draws the tables.

One streamed pass. Each request's prompt is a list of the trace's hash blocks (512 tokens in
Mooncake, 64 in weka); a block is keyed by (its parent's key, its id), so a key stands for the
whole prefix up to it, as in vLLM's prefix caching, whether or not the trace's ids are chained.

- Infinite cache: a block is reused when its key was seen before. Token reuse weights blocks
  by the prompt tokens they cover (the last block of a prompt is partial).
- LRU at capacity C (tokens: the unit of KV memory, bytes per token, and of kvtui's token hit
  rate, comparable across traces whose hash blocks differ; C // hash_block blocks): a request
  hits the longest run of its leading blocks that is cached (a prefix cache cannot use a block
  after a miss), then every block of its prompt becomes most recently used, tail first (as
  vLLM's free queue takes a finished request's blocks, vllm/v1/core/block_pool.py
  `free_blocks`: the tail is evicted before the head), and the least recently used blocks are
  evicted. Plain LRU over whole hash blocks: no running requests pin blocks here, and vLLM
  caches at 16 tokens, so this is an estimate, not the simulation.
- Global: one cache of C, what ideal cache-aware routing over a cluster could hold (every
  prefix once). N cache-blind: N caches of C / N each, requests dealt round robin (what the
  `round_robin` policy does; deterministic, no seed): the same memory, without routing by
  cache. The gap between the two is what cache-aware routing can win.

Weka conversations have no common clock: all start at 0 and are merged by their own times
(the directory is read whole for that: 12 files, ~6 MB); their keys are scoped to one
conversation. Azure traces carry no prefix information: lengths and rates only.
"""

from __future__ import annotations

import heapq
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Iterator

import numpy as np

from kvtui.percentiles import percentiles
from kvtui.scenario.trace_formats import TRACE_FORMATS, is_conversations
from kvtui.sim.workload.reader import TraceRequest, make_reader, reader_class

DEFAULT_CAPACITIES = (1_000_000, 3_000_000, 10_000_000)
PERCENTILES = (50, 90, 99)


@dataclass
class CachePoint:
    capacity_tokens: int
    global_hit: float  # token hit rate of one cache of the capacity
    split_hit: float  # ... of `nodes` caches of capacity / nodes, round robin


@dataclass
class TraceStats:
    path: str
    format: str
    requests: int
    duration_s: float | None  # None: no common timeline (weka)
    conversations: int | None
    input: dict[str, float]
    output: dict[str, float]
    hash_block: int | None  # None: no prefix information (azure)
    blocks: int = 0
    blocks_reused: int = 0
    tokens: int = 0
    tokens_reused: int = 0
    nodes: int = 1
    curve: list[CachePoint] = field(default_factory=list)
    skipped: int = 0

    @property
    def rate(self) -> float | None:
        return self.requests / self.duration_s if self.duration_s else None


class _LRU:
    """A prefix cache of hash-block keys with least-recently-used eviction."""

    __slots__ = ("cap", "od")

    def __init__(self, capacity_blocks: int):
        self.cap = capacity_blocks
        self.od: OrderedDict[int, None] = OrderedDict()

    def serve(self, keys: list[int]) -> int:
        """Blocks of `keys` found (leading run); then all of them become most recent, the last
        block first, so the prompt's head is the most recent of all: vLLM frees a request's
        blocks tail first, so its tail is evicted before its head."""
        od = self.od
        hit = 0
        for k in keys:
            if k not in od:
                break
            hit += 1
        move = od.move_to_end
        for k in reversed(keys[hit:]):  # after a miss the keys are almost always new
            if k in od:
                move(k)
            else:
                od[k] = None
        for k in reversed(keys[:hit]):
            move(k)
        pop = od.popitem
        for _ in range(len(od) - self.cap):
            pop(last=False)
        return hit


def trace_stats(
    fmt: str, path: str, capacities: tuple[int, ...] = DEFAULT_CAPACITIES, nodes: int = 1, skip_invalid: bool = False
) -> TraceStats:
    """Read the trace once and measure it (raises InputError on a broken trace, like a replay)."""
    conversations = None
    if is_conversations(fmt):
        reader = reader_class(fmt)(path, skip_invalid, None, TRACE_FORMATS[fmt])
        convs = list(reader.conversations())
        conversations = len(convs)
        stream = _merged(convs)
        hash_block = convs[0].hash_block if convs else None
    else:
        reader = make_reader(fmt, path, skip_invalid)
        stream = ((0, rec) for rec in reader.records())
        hash_block = reader.hash_block
    caches = [(_LRU(c // hash_block), [_LRU(c // nodes // hash_block) for _ in range(nodes)]) for c in capacities] if hash_block else []
    hits = [[0, 0] for _ in caches]  # tokens hit: global, split
    inputs: list[int] = []
    outputs: list[int] = []
    seen: dict[tuple[int, int], int] = {}
    stats = TraceStats(path, fmt, 0, None, conversations, {}, {}, hash_block, nodes=nodes)
    first = last = 0.0
    for conv, rec in stream:
        n = stats.requests
        stats.requests += 1
        first = rec.t if n == 0 else first
        last = rec.t
        inputs.append(rec.prompt)
        outputs.append(rec.output)
        if rec.hash_ids is None:
            continue
        keys = _chained(rec.hash_ids, -1 - conv, seen, stats, rec.prompt, hash_block)
        for (one, split), got in zip(caches, hits):
            got[0] += min(one.serve(keys) * hash_block, rec.prompt)
            got[1] += min(split[n % nodes].serve(keys) * hash_block, rec.prompt)
    stats.skipped = reader.skipped
    stats.duration_s = None if is_conversations(fmt) else last - first
    stats.input, stats.output = _summary(inputs), _summary(outputs)
    stats.tokens = sum(inputs) if hash_block else 0
    for c, (g, s) in zip(capacities, hits):
        stats.curve.append(CachePoint(c, g / stats.tokens if stats.tokens else 0.0, s / stats.tokens if stats.tokens else 0.0))
    return stats


def _chained(ids: list[int], root: int, seen: dict, stats: TraceStats, prompt: int, hash_block: int) -> list[int]:
    """Prefix keys of a prompt's hash blocks; counts the infinite-cache reuse on the way."""
    keys = []
    parent = root
    reused = 0
    for hid in ids:
        key = seen.get((parent, hid))
        if key is None:
            key = seen[(parent, hid)] = len(seen)
        else:
            reused += 1
        keys.append(key)
        parent = key
    stats.blocks += len(ids)
    stats.blocks_reused += reused
    # Reused blocks are a leading run (a key is new once its parent is), so their tokens are
    # the first reused * hash_block of the prompt, capped by it.
    stats.tokens_reused += min(reused * hash_block, prompt)
    return keys


def _merged(convs) -> Iterator[tuple[int, TraceRequest]]:
    """Every conversation's requests, all conversations starting at 0, in time order."""
    iters = [(((rec.t, i, j), i, rec) for j, rec in enumerate(c.requests)) for i, c in enumerate(convs)]
    for _, i, rec in heapq.merge(*iters, key=lambda item: item[0]):
        yield i, rec


def _summary(values: list[int]) -> dict[str, float]:
    if not values:
        return {}
    a = np.asarray(values, dtype=np.float64)
    out = {"mean": float(a.mean())}
    for q, v in zip(PERCENTILES, percentiles(a, PERCENTILES)):
        out[f"p{q}"] = float(v)
    out["max"] = float(a.max())
    return out
