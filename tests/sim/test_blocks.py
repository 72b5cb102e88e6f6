"""The block pool follows vLLM 0.33.0's prefix-caching rules, one test per rule (the real pool runs
beside it in tests/differential/test_vllm_pool.py)."""

from __future__ import annotations

import pytest

from kvtui.sim.blocks import BlockPool, OutOfBlocks


class Recorder:
    def __init__(self):
        self.stored: list[tuple] = []
        self.evicted: list[tuple] = []

    def on_stored(self, request, group, keys, parent, first):
        self.stored.append((request, keys, parent, first))

    def on_evicted(self, keys, groups, for_request):
        self.evicted.append((keys, groups, for_request))


def make(n=8, bs=4):
    rec = Recorder()
    return BlockPool("n", n, bs, rec.on_stored, rec.on_evicted), rec


def test_fresh_pool_allocates_in_id_order_from_the_front_after_the_null_block():
    pool, _ = make()
    assert pool.usable == 7 and pool.free_count == 7 and pool.used_count == 0
    assert pool.allocate(3, "g", "r1") == [1, 2, 3]
    assert pool.free_count == 4 and pool.used_count == 3
    assert 0 not in pool.free_queue
    pool.check()


def test_only_full_blocks_are_cached_and_stored_events_carry_the_chain():
    pool, rec = make()
    blocks = pool.allocate(3, "g", "r1")
    keys = (11, 12, 13)
    # two of the three blocks are full: the third is partial and must not be keyed
    pool.cache_full_blocks(blocks, keys, 0, 2, "r1", "g")
    assert pool.cached == {11: 1, 12: 2}
    assert pool.key[3] is None
    assert rec.stored == [("r1", (11, 12), None, 0)]
    pool.cache_full_blocks(blocks, keys, 2, 3, "r1", "g")
    assert rec.stored[-1] == ("r1", (13,), 12, 2)


def test_release_is_tail_first_so_the_tail_of_a_prefix_is_evicted_first():
    pool, rec = make(n=5)
    blocks = pool.allocate(4, "g", "r1")
    pool.cache_full_blocks(blocks, (1, 2, 3, 4), 0, 4, "r1", "g")
    pool.free(blocks)
    assert list(pool.free_queue) == [4, 3, 2, 1]
    pool.allocate(1, "h", "r2")
    assert rec.evicted == [((4,), ("g",), "r2")]
    assert 4 not in pool.cached and 1 in pool.cached


def test_freed_blocks_without_a_key_are_reused_before_any_cached_block_is_evicted():
    pool, rec = make(n=8)
    blocks = pool.allocate(4, "g", "r1")  # two full blocks, two not yet full
    pool.cache_full_blocks(blocks, (1, 2, 3, 4), 0, 2, "r1", "g")
    pool.free(blocks)
    # unkeyed ones at the very front, tail first; never-used ones next; keyed ones at the back
    assert list(pool.free_queue) == [4, 3, 5, 6, 7, 2, 1]
    assert pool.allocate(4, "h", "r2") == [4, 3, 5, 6]
    assert not rec.evicted
    pool.check()


def test_lru_order_across_requests():
    pool, rec = make(n=5)
    a = pool.allocate(2, "a", "ra")
    pool.cache_full_blocks(a, (1, 2), 0, 2, "ra", "a")
    b = pool.allocate(2, "b", "rb")
    pool.cache_full_blocks(b, (5, 6), 0, 2, "rb", "b")
    pool.free(a)  # a released first: least recently used
    pool.free(b)
    pool.allocate(2, "c", "rc")
    assert rec.evicted == [((2, 1), ("a", "a"), "rc")]


def test_touch_takes_a_hit_out_of_the_free_queue_and_counts_it_up():
    pool, _ = make(n=5)
    a = pool.allocate(2, "a", "ra")
    pool.cache_full_blocks(a, (1, 2), 0, 2, "ra", "a")
    pool.free(a)
    hits = pool.lookup((1, 2, 3), limit=3)
    assert hits == a
    assert pool.evictable_among(hits) == 2
    pool.touch(hits)
    assert all(b not in pool.free_queue for b in hits)
    assert [pool.ref[b] for b in hits] == [1, 1]
    pool.touch(hits)  # a second request sharing the prefix
    assert [pool.ref[b] for b in hits] == [2, 2]
    pool.free(hits)
    assert all(b not in pool.free_queue for b in hits)  # still used by the other one
    pool.free(hits)
    assert all(b in pool.free_queue for b in hits)
    pool.check()


def test_lookup_is_the_longest_leading_run_and_respects_the_limit():
    pool, _ = make(n=5)
    a = pool.allocate(3, "a", "ra")
    pool.cache_full_blocks(a, (1, 2, 3), 0, 3, "ra", "a")
    assert pool.lookup((1, 2, 99, 3), limit=10) == a[:2]
    assert pool.lookup((1, 2, 3), limit=2) == a[:2]
    assert pool.lookup((7, 1), limit=10) == []


def test_a_duplicate_key_is_a_second_cached_copy_with_its_own_events():
    pool, rec = make(n=3)
    a = pool.allocate(1, "a", "ra")
    b = pool.allocate(1, "a", "rb")
    pool.cache_full_blocks(a, (1,), 0, 1, "ra", "a")
    pool.cache_full_blocks(b, (1,), 0, 1, "rb", "a")
    assert pool.cached == {1: a[0]} and pool.copies == {1: b} and pool.copies_of(1) == 2
    assert pool.key[b[0]] == 1 and pool.cached_count == 1
    assert [s[1] for s in rec.stored] == [(1,), (1,)]
    pool.free(a)
    pool.free(b)
    pool.allocate(1, "c", "rc")  # evicts the first copy: the lookup now answers the second
    assert rec.evicted == [((1,), ("a",), "rc")]
    assert pool.lookup((1,), 1) == b and pool.copies_of(1) == 1
    pool.allocate(1, "c", "rd")
    assert rec.evicted[-1] == ((1,), ("a",), "rd") and not pool.cached
    pool.check()


def test_pinned_blocks_are_never_evicted():
    pool, rec = make(n=5)
    assert pool.pin([1, 2], "sys") == 2
    assert len(pool.pinned) == 2 and pool.free_count == 2
    x = pool.allocate(2, "g", "r")
    pool.free(x)
    pool.allocate(2, "g", "r2")
    assert 1 in pool.cached and 2 in pool.cached
    with pytest.raises(OutOfBlocks):
        pool.allocate(3, "g", "r3")
    pool.check()


def test_eviction_count_and_reset():
    pool, _ = make(n=3)
    a = pool.allocate(2, "a", "ra")
    pool.cache_full_blocks(a, (1, 2), 0, 2, "ra", "a")
    pool.free(a)
    pool.allocate(2, "b", "rb")
    assert pool.evicted_total == 2
    pool.reset()
    assert pool.free_count == 2 and not pool.cached and not pool.copies
    pool.check()


def _pool_state(pool: BlockPool) -> tuple:
    return (list(pool.ref), list(pool.key), list(pool.owner), dict(pool.cached), {k: list(v) for k, v in pool.copies.items()},
            list(pool.free_queue), pool.evicted_total)


@pytest.mark.parametrize("seed", range(6))
def test_one_block_fast_paths_match_the_general_ones(seed):
    """`allocate_one` and the one-block `cache_full_blocks` (the decode path) leave the pool and
    the event stream exactly as `allocate(1)` and the general registration do, through
    evictions, duplicate keys and cache hits."""
    import random

    rng = random.Random(seed)
    (fast, fast_rec), (slow, slow_rec) = make(12, 4), make(12, 4)
    held: list[list[int]] = []  # per live request, its blocks (same ids in both pools)
    for step in range(400):
        op = rng.random()
        if op < 0.5 and fast.free_count:
            keys = tuple(rng.randrange(6) * 100 + i for i in range(3))  # few distinct chains: reuse and duplicates
            hit = fast.lookup(keys, 2)
            assert hit == slow.lookup(keys, 2)
            fast.touch(hit)
            slow.touch(hit)
            blocks = list(hit)
            for i in range(len(hit), 3):
                if not fast.free_count:
                    break
                blocks.append(fast.allocate_one("g", f"r{step}"))
                assert slow.allocate(1, "g", f"r{step}") == blocks[-1:]
                fast.cache_full_blocks(blocks, keys, i, i + 1, f"r{step}", "g")
                slow._register_many(blocks[i : i + 1], keys[i : i + 1])
                slow.version += 1
                slow.on_stored(f"r{step}", "g", keys[i : i + 1], keys[i - 1] if i else None, i)
            held.append(blocks)
        elif held:
            blocks = held.pop(rng.randrange(len(held)))
            fast.free(blocks)
            slow.free(blocks)
        assert _pool_state(fast) == _pool_state(slow)
    assert fast_rec.stored == slow_rec.stored and fast_rec.evicted == slow_rec.evicted
    assert fast_rec.evicted and fast_rec.stored  # the case covered evictions and registrations
    fast.check()
