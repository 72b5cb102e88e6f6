"""Real vLLM KV-event publishers on loopback, fed by vLLM's real BlockPool.

- vLLM 0.33.0 (peer `vllm`, .ci/peers/vllm.sh, loaded by tests/differential/vllm_peer.py): its
  `ZmqEventPublisher` and event classes, tagged-map events, and its `BlockPool` as the source.
- vLLM 0.11.0 (peer `vllm-0.11`, .ci/peers/vllm-0.11.sh): only its
  vllm/distributed/kv_events.py, loaded beside the first under another module name; its
  publisher and classes send the positional-array events vLLM sent before vllm #42892. The
  0.33.0 pool's events are re-made as 0.11.0 events field by field.

Stubs on top of vllm_peer's: `KVEventsConfig` takes its keyword arguments (0.33.0's publisher
builds one to describe itself). Publishers bind `tcp://*:PORT`, a free loopback port, so none of
the stubbed network helpers is called.
"""

from __future__ import annotations

import importlib.util
import socket
import sys
import time
import types
from dataclasses import dataclass, field

from differential import peers, vllm_peer
from differential.vllm_peer import RequestView  # what cache_full_blocks reads

BS = 4


class _Config(types.SimpleNamespace):
    """KVEventsConfig with just its fields (the real one is a pydantic config class)."""


def load_new():
    v = vllm_peer.load(peers.require("vllm"))
    v.kv_events.KVEventsConfig = _Config
    return v


def load_old(new) -> types.ModuleType:
    """vLLM 0.11.0's kv_events module (imports resolve against the 0.33.0 shells loaded first)."""
    path = peers.require("vllm-0.11") / "src" / "vllm" / "distributed" / "kv_events.py"
    name = "vllm_0_11_kv_events"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, path)
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return sys.modules[name]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def free_port_ranges(count: int, width: int) -> tuple[int, ...]:
    """`count` base ports, each with `width` free ports above it and no two ranges overlapping.

    A data-parallel publisher binds base + rank, so two independent free ports can collide
    (the second base one above the first); this checks every port of every range by binding it.
    """
    while True:
        bases = [free_port() for _ in range(count)]
        wanted = [b + i for b in bases for i in range(width)]
        if len(set(wanted)) == len(wanted) and _all_free(wanted):
            return tuple(bases)


def _all_free(ports: list[int]) -> bool:
    socks = []
    try:
        for port in ports:
            s = socket.socket()
            socks.append(s)
            s.bind(("0.0.0.0", port))
        return True
    except OSError:
        return False
    finally:
        for s in socks:
            s.close()


@dataclass
class Published:
    """What the source handed the publisher: block hashes stored and removed, per batch."""

    stored: list[int] = field(default_factory=list)
    removed: list[int] = field(default_factory=list)

    def totals(self, first: int = 0) -> tuple[int, int]:
        return sum(self.stored[first:]), sum(self.removed[first:])


class PoolSource:
    """vLLM 0.33.0's BlockPool with requests run one at a time: longest cached prefix, touch,
    allocate (evicting idle cached blocks when short), register the full blocks, free in
    reverse order (as vllm/v1/core/kv_cache_manager.py drives it). Each request's events are
    one batch."""

    def __init__(self, v, num_blocks: int):
        self.v = v
        self.pool = v.block_pool.BlockPool(num_blocks, True, BS, enable_kv_cache_events=True)
        self.sha256 = v.hashing.sha256

    def hashes(self, tokens: list[int]) -> list[bytes]:
        out, parent = [], None
        for i in range(len(tokens) // BS):
            parent = self.v.kv_cache_utils.hash_block_tokens(self.sha256, parent, tokens[i * BS:(i + 1) * BS], None)
            out.append(parent)
        return out

    def run(self, tokens: list[int]) -> list:
        """One request; the events it caused (0.33.0 event objects)."""
        pool, hashes = self.pool, self.hashes(tokens)
        computed = []
        for h in hashes[: (len(tokens) - 1) // BS]:
            found = pool.get_cached_block(h, [0])
            if found is None:
                break
            computed.append(found[0])
        self.last_hit = len(computed)  # blocks served from the cache (route mode's tests)
        pool.touch(computed)
        blocks = computed + pool.get_new_blocks(-(-len(tokens) // BS) - len(computed))
        view = RequestView(hashes, tokens)
        pool.cache_full_blocks(view, blocks, len(computed), len(tokens) // BS, BS, 0)
        pool.free_blocks(reversed(blocks))
        return pool.take_events()

    def cached_hashes(self) -> set[int]:
        """The pool's cached blocks in their event form (64-bit ints)."""
        utils = self.v.kv_cache_utils
        return {utils.maybe_convert_block_hash(utils.get_block_hash(k))
                for k in self.pool.cached_block_hash_to_block._cache}


class Publisher:
    """One engine's real ZmqEventPublisher (0.33.0 or 0.11.0) on free loopback ports."""

    def __init__(self, kv_events, buffer_steps: int = 10_000, replay: bool = True,
                 rank: int = 0, ports: tuple[int, int] | None = None):
        """`ports`: the base ports of a data-parallel engine; the publisher adds its rank."""
        self.kv = kv_events
        base, replay_base = ports or free_port_ranges(2, width=rank + 1)
        self.port, self.replay_port = base + rank, replay_base + rank
        self.pub = kv_events.ZmqEventPublisher(
            rank, endpoint=f"tcp://*:{base}",
            replay_endpoint=f"tcp://*:{replay_base}" if replay else None,
            buffer_steps=buffer_steps)
        self.published = Published()
        self.sent = 0

    @property
    def endpoint(self) -> str:
        return f"tcp://127.0.0.1:{self.port}"

    @property
    def replay_endpoint(self) -> str:
        return f"tcp://127.0.0.1:{self.replay_port}"

    def publish(self, events: list) -> None:
        self.published.stored.append(sum(len(e.block_hashes) for e in events if isinstance(e, self.kv.BlockStored)))
        self.published.removed.append(sum(len(e.block_hashes) for e in events if isinstance(e, self.kv.BlockRemoved)))
        self.pub.publish(self.kv.KVEventBatch(ts=time.time(), events=events))
        self.sent += 1

    def wait_sent(self, timeout: float = 5.0) -> None:
        """Until the publisher thread has sent everything handed to it (it is in the buffer)."""
        deadline = time.monotonic() + timeout
        while self.pub._event_queue.unfinished_tasks and time.monotonic() < deadline:
            time.sleep(0.01)

    def close(self) -> None:
        self.pub.shutdown()


def as_old(new, old, events: list) -> list:
    """0.33.0 events (module `new`) re-made as 0.11.0's positional ones (module `old`)."""
    out = []
    for e in events:
        match e:
            case new.BlockStored():
                out.append(old.BlockStored(list(e.block_hashes), e.parent_block_hash, list(e.token_ids),
                                           e.block_size, e.lora_id, e.medium))
            case new.BlockRemoved():
                out.append(old.BlockRemoved(list(e.block_hashes), e.medium))
            case new.AllBlocksCleared():
                out.append(old.AllBlocksCleared())
    return out
