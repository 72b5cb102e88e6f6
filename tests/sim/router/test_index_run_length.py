"""The index's run length (chunked, halved by `issuperset`) against a plain walk of the keys."""

from __future__ import annotations

import random
from itertools import takewhile

from kvtui.sim.router.index import _run_length


def _walked(keys: list[int], gpu: set[int], cpu: set[int]) -> int:
    return sum(1 for _ in takewhile(lambda k: k in gpu or k in cpu, keys))


def test_run_length_matches_a_walk_with_holes_after_the_run_in_one_or_two_tiers():
    rng = random.Random(23)
    for _ in range(3000):
        keys = [rng.getrandbits(40) for _ in range(rng.randint(0, 1200))]
        run = rng.randint(0, len(keys))
        gpu = set(keys[:run]) | {k for k in keys[run + 1 :] if rng.random() < 0.7}
        cpu = set() if rng.random() < 0.7 else {k for k in keys if rng.random() < 0.3}
        if cpu:  # the run may go on in the CPU tier, with GPU holes in it
            gpu -= {k for k in keys[:run] if rng.random() < 0.2}
            cpu |= set(keys[:run]) - gpu
        assert _run_length(keys, (gpu, cpu)) == _walked(keys, gpu, cpu)
