"""benchmarks/kv64_bench.py's two array maps answer as a dict does, or its timing compares nothing."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))

import kv64_bench as bench  # noqa: E402


@pytest.mark.parametrize("make", [lambda: bench.U64Table(64), bench.SortedU64Map], ids=["open-addressing", "sorted"])
def test_an_array_map_answers_as_a_dict_through_inserts_deletes_and_rebuilds(make) -> None:
    """Small key space (collisions, re-inserts of deleted keys) and a small table (probe runs,
    tombstones, rebuilds): every batch's answers and the live count match a dict's."""
    rng = np.random.default_rng(7)
    table, ref = make(), {}
    space = rng.integers(1, 2**64 - 1, size=400, dtype=np.uint64)
    for step in range(300):
        keys = rng.choice(space, size=int(rng.integers(1, 60)), replace=False)
        if rng.random() < 0.5:
            vals = np.arange(step * 100, step * 100 + len(keys), dtype=np.int32)
            got = table.setdefault(keys, vals)
            want = [ref.setdefault(int(k), int(v)) for k, v in zip(keys, vals)]
        else:
            got = table.get(keys)
            want = [ref.get(int(k), bench.EMPTY) for k in keys]
            table.delete(keys[::2])
            for k in keys[::2]:
                ref.pop(int(k), None)
        assert got.tolist() == want, f"step {step}"
        assert table.live == len(ref), f"step {step}"


def test_the_stream_shares_prefixes_so_lookups_hit() -> None:
    reqs = bench.stream(60, seed=1)
    _, hits, _ = bench.run_dict(reqs)
    assert hits > 0
    assert bench.run_table(reqs)[1] == bench.run_sorted(reqs)[1] == hits
