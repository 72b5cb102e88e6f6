"""Random operations on the compiled engine's per-block kernels, digested: run once per build.

`python tests/differential/compiled_ops.py SEED OPS` prints one line: the SHA-256 of every result
and every KV event of OPS random operations on a Mooncake-sized block pool (40,000 blocks of 16
tokens: the size where a prototype Cython pool crashed), its KV index and key hashing. The same
seed gives the same operations, so a compiled and a pure run (KVTUI_PURE=1) must print the same
line; test_compiled_vs_pure.py runs both. Which build ran is printed after the digest.
"""

from __future__ import annotations

import hashlib
import random
import sys

import numpy as np

from kvtui.sim import compiled
from kvtui.sim.blocks import BlockPool, OutOfBlocks
from kvtui.sim.router.index import KVIndex
from kvtui.sim.workload.hashing import chain_keys, chain_opaque

POOL_BLOCKS = 40_000
BLOCK_SIZE = 16


class Run:
    """One pool, one index, the requests holding blocks, and the digest of all that was seen."""

    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)
        self.digest = hashlib.sha256()
        self.index = KVIndex()
        self.pool = BlockPool("node-0", POOL_BLOCKS, BLOCK_SIZE, self.stored, self.evicted)
        self.held: list[list[int]] = []
        self.prefixes = [chain_opaque([self.rng.randrange(1 << 30) for _ in range(200)]) for _ in range(8)]
        self.made = 0

    def see(self, *values: object) -> None:
        self.digest.update(repr(values).encode())

    def stored(self, request: str, group: str, keys: tuple[int, ...], parent: int | None, first: int) -> None:
        self.see("stored", request, keys, parent, first)
        self.index.add("node-0", keys)

    def evicted(self, keys: tuple[int, ...], groups: tuple[str, ...], for_request: str) -> None:
        self.see("evicted", keys, groups, for_request)
        self.index.remove("node-0", keys)

    def keys(self) -> tuple[int, ...]:
        """A request's chained keys: a shared prefix (a random share of it), then its own."""
        prefix = self.rng.choice(self.prefixes)[: self.rng.randrange(0, 201)]
        own = [self.rng.randrange(1 << 30) for _ in range(self.rng.randrange(1, 600))]
        return tuple(prefix + chain_opaque(own, prefix[-1] if prefix else None))

    def admit(self) -> None:
        keys, name = self.keys(), f"req-{self.made}"
        self.made += 1
        hit = self.pool.lookup(keys, len(keys))
        match = self.index.match(keys)
        self.see("hit", hit, {n: (m.consecutive, m.weighted) for n, m in match.items()})
        self.pool.touch(hit)
        try:
            new = self.pool.allocate(len(keys) - len(hit), "g", name)
        except OutOfBlocks:
            self.pool.free(hit)
            return self.see("out of blocks", len(keys) - len(hit), self.pool.free_count)
        blocks = hit + new
        self.pool.cache_full_blocks(blocks, keys, len(hit), len(blocks), name, "g")
        self.held.append(blocks)

    def release(self) -> None:
        if self.held:
            blocks = self.held.pop(self.rng.randrange(len(self.held)))
            self.see("evictable", self.pool.evictable_among(blocks))
            self.pool.free(blocks)

    def hash_tokens(self) -> None:
        tokens = np.array([self.rng.randrange(128_000) for _ in range(self.rng.randrange(1, 4000))], dtype=np.int64)
        self.see("chain", chain_keys(tokens, BLOCK_SIZE, self.rng.choice([None, 7, 1 << 62])))

    def step(self) -> None:
        roll = self.rng.random()
        if roll < 0.45:
            self.admit()
        elif roll < 0.9:
            self.release()
        elif roll < 0.97:
            self.hash_tokens()
        else:
            self.pool.pin(list(self.rng.choice(self.prefixes)[:50]), "pinned")
        self.see("counts", self.pool.free_count, self.pool.used_count, self.pool.cached_count, self.pool.version)


def main(seed: int, ops: int) -> str:
    run = Run(seed)
    for i in range(ops):
        run.step()
        if i % 500 == 0:
            run.pool.check()
    run.pool.check()
    return run.digest.hexdigest()


if __name__ == "__main__":
    print(main(int(sys.argv[1]), int(sys.argv[2])), compiled.build)
