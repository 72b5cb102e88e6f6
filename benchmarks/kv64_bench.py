"""Issue 36's stage-1 gate, measured before the hot path is rewritten: does a uint64 open-addressing
table called per batch (numpy-vectorized, keys never Python ints) beat the pool's dict of int keys?

Run:  python benchmarks/kv64_bench.py [--rounds 5] [--requests 3000] [--write-doc docs/performance.md]

The engine's block-key work on the Mooncake trace, by the counts docs/performance.md gives for the
full conversation trace on 10 nodes: a node's key map holds ~26 k live keys (its pool of 26,391
blocks), a prompt is ~750 chained keys looked up from the first (a hit is a leading run), the
missed ones are registered in one call (~340 a call) and an allocation evicts a run of the
oldest keys (~230 a run). This script replays that shape on one node, the same operations three
ways, alternated in rounds (CPU seconds, medians):

- `dict`: what kvtui does today (kvtui/sim/blocks.py): `chain_keys`'s array made a list of
  Python ints (`.tolist()`), looked up in growing C-level chunks (`BlockPool.lookup`),
  registered in one `setdefault` pass (`_register_many`), evicted by one `del` a key
  (`_evict_and_take`);
- `table`: the keys stay one uint64 array; a lookup, a registration and an eviction are each
  one batch call on `U64Table` (linear probing over a uint64 key array and an int32 value
  array, at most half full, each probe round one set of numpy operations over the keys still
  probing);
- `sorted`: the same batch calls on `SortedU64Map` (keys kept sorted: a lookup is one
  `searchsorted`, a registration one `np.insert`, an eviction one boolean mask).

All sides must give the same hits (checked every round). Printed: CPU seconds per side and
round, the ratios to `dict` of the medians, and the CPU seconds of each operation.
`--write-doc FILE` puts that table, with the date, the load and the command, between
`<!-- measured: kv64_bench -->` and `<!-- /measured -->` in FILE.
"""

from __future__ import annotations

import argparse
import datetime
import statistics
import sys
import time
from collections import deque
from pathlib import Path

from measured import command_line, machine, replace_block

import numpy as np

POOL = 26_391  # one node's blocks on benchmarks/mooncake-conversation-10.yaml
PROMPT = 750  # blocks of a Mooncake prompt
_MUL = np.uint64(0x9E3779B97F4A7C15)  # Fibonacci hashing: the key's high bits pick the slot
EMPTY, GONE = -1, -2  # a slot never used, and one whose key was deleted (probing goes on past it)


class BatchMap:
    """What both array maps share: `get` and `setdefault` over `_find` (a key's slot, or -1)
    and `_add` (insert keys known absent)."""

    vals: np.ndarray

    def _find(self, keys: np.ndarray) -> np.ndarray:
        raise NotImplementedError

    def _add(self, keys: np.ndarray, vals: np.ndarray) -> None:
        raise NotImplementedError

    def get(self, keys: np.ndarray) -> np.ndarray:
        """Each key's value, EMPTY where absent."""
        slot = self._find(keys)
        out = np.full(len(keys), EMPTY, dtype=np.int32)
        hit = slot >= 0
        out[hit] = self.vals[slot[hit]]
        return out

    def setdefault(self, keys: np.ndarray, vals: np.ndarray) -> np.ndarray:
        """dict.setdefault per pair (keys distinct within the batch): the value now held."""
        firsts = self.get(keys)
        new = np.flatnonzero(firsts == EMPTY)
        if new.size:
            self._add(keys[new], vals[new])
            firsts[new] = vals[new]
        return firsts


class U64Table(BatchMap):
    """uint64 key -> int32 value (a block id), open addressing with linear probing; every call
    takes a batch of keys. Deleted slots are tombstones until a rebuild (when used slots pass
    70 %); the table is kept at most half full of live keys."""

    def __init__(self, capacity: int) -> None:
        bits = max(4, int(2 * capacity - 1).bit_length())
        self._resize(bits)

    def _resize(self, bits: int) -> None:
        self.bits = bits
        self.mask = (1 << bits) - 1
        self.shift = np.uint64(64 - bits)
        self.keys = np.zeros(1 << bits, dtype=np.uint64)
        self.vals = np.full(1 << bits, EMPTY, dtype=np.int32)
        self.live = 0
        self.used = 0  # live + tombstones

    def _home(self, keys: np.ndarray) -> np.ndarray:
        return ((keys * _MUL) >> self.shift).astype(np.intp)

    def _find(self, keys: np.ndarray) -> np.ndarray:
        """The slot holding each key, or -1."""
        slot = self._home(keys)
        out = np.full(len(keys), -1, dtype=np.intp)
        todo = np.arange(len(keys))
        while todo.size:
            s = slot[todo]
            v = self.vals[s]
            hit = (v >= 0) & (self.keys[s] == keys[todo])
            out[todo[hit]] = s[hit]
            todo = todo[~hit & (v != EMPTY)]  # another key or a tombstone: probe on
            slot[todo] = (slot[todo] + 1) & self.mask
        return out

    def _add(self, keys: np.ndarray, vals: np.ndarray) -> None:
        if 10 * (self.used + len(keys)) > 7 * len(self.vals):
            self._rebuild(self.live + len(keys))
        self._insert(keys, vals)

    def _insert(self, keys: np.ndarray, vals: np.ndarray) -> None:
        slot = self._home(keys)
        todo = np.arange(len(keys))
        while todo.size:
            s = slot[todo]
            free = self.vals[s] < 0
            cand = todo[free]
            _, first = np.unique(slot[cand], return_index=True)  # one winner per free slot
            win = cand[first]
            ws = slot[win]
            self.used += int(np.count_nonzero(self.vals[ws] == EMPTY))
            self.keys[ws] = keys[win]
            self.vals[ws] = vals[win]
            self.live += len(win)
            left = np.ones(len(todo), dtype=bool)
            left[np.searchsorted(todo, win)] = False
            todo = todo[left]
            slot[todo] = (slot[todo] + 1) & self.mask

    def delete(self, keys: np.ndarray) -> None:
        slot = self._find(keys)
        slot = slot[slot >= 0]
        self.vals[slot] = GONE
        self.live -= len(slot)

    def _rebuild(self, need: int) -> None:
        held = self.vals >= 0
        keys, vals = self.keys[held], self.vals[held]
        self._resize(max(self.bits, int(2 * need - 1).bit_length()))
        self._insert(keys, vals)
        self.used = self.live


class SortedU64Map(BatchMap):
    """uint64 key -> int32 value as two arrays sorted by key: a batch lookup is one
    `searchsorted`; a batch insert or delete moves the arrays once (O(live + batch) memmove)."""

    def __init__(self) -> None:
        self.keys = np.zeros(0, dtype=np.uint64)
        self.vals = np.zeros(0, dtype=np.int32)

    @property
    def live(self) -> int:
        return len(self.keys)

    def _find(self, keys: np.ndarray) -> np.ndarray:
        """Each key's position in the sorted arrays, or -1."""
        if not len(self.keys):
            return np.full(len(keys), -1, dtype=np.intp)
        pos = np.searchsorted(self.keys, keys)
        np.minimum(pos, len(self.keys) - 1, out=pos)
        return np.where(self.keys[pos] == keys, pos, -1)

    def _add(self, keys: np.ndarray, vals: np.ndarray) -> None:
        order = np.argsort(keys)
        at = np.searchsorted(self.keys, keys[order])
        self.keys = np.insert(self.keys, at, keys[order])
        self.vals = np.insert(self.vals, at, vals[order])

    def delete(self, keys: np.ndarray) -> None:
        pos = self._find(keys)
        pos = pos[pos >= 0]
        if pos.size:
            keep = np.ones(len(self.keys), dtype=bool)
            keep[pos] = False
            self.keys, self.vals = self.keys[keep], self.vals[keep]


def stream(requests: int, seed: int) -> list[tuple[np.ndarray, int]]:
    """(prompt keys, blocks to evict before registering) per request: prompts share leading runs
    with earlier ones (a conversation's next turn, a shared system prompt), so lookups hit a
    prefix of random length; the pool stays full, so every registered key evicts an old one."""
    rng = np.random.default_rng(seed)
    past: list[np.ndarray] = []
    out = []
    for _ in range(requests):
        n = int(rng.integers(PROMPT // 2, 2 * PROMPT))
        fresh = rng.integers(1, 2**63, size=n, dtype=np.uint64)
        if past and rng.random() < 0.7:
            base = past[int(rng.integers(max(0, len(past) - 40), len(past)))]
            keep = int(rng.integers(0, len(base) + 1))
            keys = np.concatenate([base[:keep], fresh])[:n]
        else:
            keys = fresh
        past.append(keys)
        out.append((keys, 0))
    return out


def run_dict(reqs: list[tuple[np.ndarray, int]]) -> tuple[float, int, dict[str, float]]:
    cached: dict[int, int] = {}
    order: deque[list[int]] = deque()  # registered runs, oldest first (the free queue's back)
    live, hits, next_block = 0, 0, 0
    cost = {"lookup": 0.0, "register": 0.0, "evict": 0.0}
    t0 = time.process_time()
    for arr, _ in reqs:
        t = time.process_time()
        keys = arr.tolist()
        get, found, n, size = cached.get, [], 0, 8
        while n < len(keys):  # BlockPool.lookup
            chunk = list(map(get, keys[n : n + size]))
            if None in chunk:
                found += chunk[: chunk.index(None)]
                break
            found += chunk
            n += len(chunk)
            size *= 4
        hits += len(found)
        new = keys[len(found) :]
        t1 = time.process_time()
        cost["lookup"] += t1 - t
        while live + len(new) > POOL and order:  # _evict_and_take
            run = order.popleft()
            for k in run:
                if cached.get(k) is not None:
                    del cached[k]
                    live -= 1
        t2 = time.process_time()
        cost["evict"] += t2 - t1
        blocks = list(range(next_block, next_block + len(new)))
        next_block += len(new)
        firsts = list(map(cached.setdefault, new, blocks))  # _register_many
        live += sum(1 for b, f in zip(blocks, firsts) if b == f)
        order.append(new)
        cost["register"] += time.process_time() - t2
    return time.process_time() - t0, hits, cost


def run_table(reqs: list[tuple[np.ndarray, int]]) -> tuple[float, int, dict[str, float]]:
    return run_array(reqs, U64Table(POOL))


def run_sorted(reqs: list[tuple[np.ndarray, int]]) -> tuple[float, int, dict[str, float]]:
    return run_array(reqs, SortedU64Map())


def run_array(reqs: list[tuple[np.ndarray, int]], table: BatchMap) -> tuple[float, int, dict[str, float]]:
    order: deque[np.ndarray] = deque()
    hits, next_block = 0, 0
    cost = {"lookup": 0.0, "register": 0.0, "evict": 0.0}
    t0 = time.process_time()
    for keys, _ in reqs:
        t = time.process_time()
        got = table.get(keys)
        miss = np.flatnonzero(got == EMPTY)
        h = int(miss[0]) if miss.size else len(keys)
        hits += h
        new = keys[h:]
        t1 = time.process_time()
        cost["lookup"] += t1 - t
        while table.live + len(new) > POOL and order:
            table.delete(order.popleft())
        t2 = time.process_time()
        cost["evict"] += t2 - t1
        blocks = np.arange(next_block, next_block + len(new), dtype=np.int32)
        next_block += len(new)
        table.setdefault(new, blocks)
        order.append(new)
        cost["register"] += time.process_time() - t2
    return time.process_time() - t0, hits, cost


def write_doc(path: Path, lines: list[str], argv: list[str], started: str) -> None:
    replace_block(path, "kv64_bench", f"Measured {started} on this project's VM ({machine()}) by\n"
                  f"`{command_line('kv64_bench.py', argv)}`, medians of CPU seconds, the same hits on every side:\n\n"
                  + "".join(lines))


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--requests", type=int, default=3000)
    p.add_argument("--write-doc", type=Path, help="put the table into this file's measured block")
    a = p.parse_args()
    started = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    reqs = stream(a.requests, seed=36)
    sides = {"dict": run_dict, "table": run_table, "sorted": run_sorted}
    cpu: dict[str, list[float]] = {s: [] for s in sides}
    parts: dict[str, list[dict[str, float]]] = {s: [] for s in sides}
    for r in range(a.rounds):
        answers = {}
        for side, fn in (sides.items() if r % 2 == 0 else reversed(sides.items())):
            seconds, hits, cost = fn(reqs)
            cpu[side].append(seconds)
            parts[side].append(cost)
            answers[side] = hits
        if len(set(answers.values())) != 1:
            raise SystemExit(f"round {r}: the sides found different hits: {answers}")
        print(f"round {r}: " + ", ".join(f"{s} {cpu[s][-1]:.2f} s" for s in sides) + f" ({answers['dict']:,} hits)")
    med = {s: statistics.median(v) for s, v in cpu.items()}
    blocks = sum(len(k) for k, _ in reqs)
    lines = ["| side | CPU s | lookup | register | evict | us / prompt block |\n", "|---|---|---|---|---|---|\n"]
    for side in sides:
        op = {o: statistics.median(c[o] for c in parts[side]) for o in ("lookup", "register", "evict")}
        lines.append(f"| {side} | {med[side]:.2f} | {op['lookup']:.2f} | {op['register']:.2f} | {op['evict']:.2f} "
                     f"| {1e6 * med[side] / blocks:.3f} |\n")
    lines.append(f"\ntable / dict: **{med['table'] / med['dict']:.2f}x**, sorted / dict: **{med['sorted'] / med['dict']:.2f}x**"
                 f" over {a.requests:,} prompts, {blocks:,} prompt blocks, {a.rounds} alternated rounds\n")
    print("".join(lines))
    if a.write_doc:
        write_doc(a.write_doc, lines, sys.argv[1:], started)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
