"""The free queue against a plain Python list of the same blocks, through runs cut by cache hits.

`FreeQueue` keeps vLLM's order in linked int32 arrays and a range of never-used blocks; these
tests drive it and a list (the same order, written the obvious way) with the same random frees
to either end, hits out of the back and pops, and compare the whole order after each one: the
reference any faster queue (runs, a compiled core) must keep. Size knob: KVTUI_FUZZ_SCALE
(operations per seed).
"""

from __future__ import annotations

import os
import random

import pytest

from kvtui.sim.blocks import FreeQueue

SCALE = float(os.environ.get("KVTUI_FUZZ_SCALE", "1"))


class ListQueue:
    """The reference: unkeyed blocks at the front, never-used ones, keyed ones at the back."""

    def __init__(self, n: int) -> None:
        self.front: list[int] = []
        self.fresh = list(range(1, n))
        self.back: list[int] = []

    def order(self) -> list[int]:
        return self.front + self.fresh + self.back

    def pop_front(self, n: int) -> tuple[list[int], list[int], list[int]]:
        parts = []
        for part in (self.front, self.fresh, self.back):
            parts.append(part[:n])
            del part[:n]
            n -= len(parts[-1])
        return parts[0], parts[1], parts[2]


def _step(rng: random.Random, fq: FreeQueue, ref: ListQueue, held: list[int],
          longest: int = 12, hits: int = 1, most: int = 15, to_front: float = 0.25) -> None:
    """One random operation on both queues: free a run of up to `longest` blocks to either end,
    take up to `hits` cache hits out of the back list, or pop up to `most` blocks off the front."""
    op = rng.random()
    if op < 0.4 and held:
        run = [held.pop(rng.randrange(len(held))) for _ in range(min(len(held), rng.randrange(1, longest)))]
        if rng.random() < to_front:
            fq.prepend(run)
            ref.front[:0] = run
        else:
            fq.extend(run)
            ref.back += run
    elif op < 0.6 and ref.back:
        for b in rng.sample(ref.back, min(len(ref.back), rng.randrange(1, hits + 1))):
            fq.remove(b)
            ref.back.remove(b)
            held.append(b)
    else:
        n = rng.randrange(0, most)
        got = fq.pop_front(n)
        assert got == ref.pop_front(n)
        held.extend(b for part in got for b in part)


@pytest.mark.parametrize("seed", range(8))
def test_runs_pop_in_the_same_order_as_a_plain_list(seed):
    rng = random.Random(seed)
    n = rng.choice((8, 24, 64))
    fq, ref, held = FreeQueue(n), ListQueue(n), []
    for _ in range(int(600 * SCALE)):
        _step(rng, fq, ref, held)
        assert list(fq) == ref.order() and len(fq) == len(ref.order())
        assert all(b in fq for b in ref.back) and not any(b in fq for b in held)


def test_a_run_cut_by_a_hit_pops_around_the_hole():
    fq = FreeQueue(10)
    fq.pop_front(9)
    fq.extend([5, 4, 3, 2, 1])
    fq.remove(3)  # a cache hit in the middle of the remembered run
    assert fq.pop_front(2) == ([], [], [5, 4])
    assert fq.pop_front(5) == ([], [], [2, 1])
    assert len(fq) == 0


@pytest.mark.parametrize("seed", range(2))
def test_long_runs_at_a_real_pool_size_keep_the_order(seed):
    """Mooncake-sized runs in a Mooncake-sized pool: the back list drops its popped head (past
    4,096 entries) and keeps positions across that, which the small queues above never reach."""
    rng = random.Random(seed)
    n = 26391
    fq, ref, held = FreeQueue(n), ListQueue(n), []
    for i in range(int(400 * SCALE)):
        _step(rng, fq, ref, held, longest=800, hits=40, most=900, to_front=0.1)
        if i % 25 == 0:
            assert list(fq) == ref.order() and len(fq) == len(ref.order())
            fq.check()
    assert fq._base > 0, "the back list never dropped its head: the case is too small"


def test_positions_start_again_from_zero_when_they_run_out(monkeypatch):
    """A node that appended 2**31 blocks (weeks of live traffic) numbers its back list anew;
    with a small limit, the order through many renumberings, holes included, stays the list's."""
    monkeypatch.setattr(FreeQueue, "POSITIONS", 50)
    rng = random.Random(7)
    fq, ref, held = FreeQueue(24), ListQueue(24), []
    for _ in range(int(600 * SCALE)):
        _step(rng, fq, ref, held)
        assert list(fq) == ref.order()
        assert all(b in fq for b in ref.back) and not any(b in fq for b in held)
        fq.check()


def test_hits_freed_again_and_again_do_not_grow_the_back_list():
    """A node whose requests keep hitting their cached blocks and freeing them again (a hole,
    then an append) and never allocates: the back list is rebuilt once holes outnumber live
    blocks, so it stays near the queue's size (without that, 20,000 rounds left ~200,000)."""
    rng = random.Random(3)
    fq, ref = FreeQueue(100), ListQueue(100)
    run = [b for part in fq.pop_front(99) for b in part]
    ref.pop_front(99)
    fq.extend(run)
    ref.back += run
    for _ in range(int(20_000 * SCALE)):
        hits = rng.sample(ref.back, 10)
        for b in hits:
            fq.remove(b)
            ref.back.remove(b)
        fq.extend(hits)
        ref.back += hits
        assert len(fq._back) <= 2 * 99 + 64 + 10
    assert list(fq) == ref.order()
    fq.check()
