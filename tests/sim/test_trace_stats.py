"""`kvtui trace stats`: reuse and LRU hit rates on traces small enough to work out by hand."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kvtui.cli import main
from kvtui.cli.trace import parse_capacities
from kvtui.cli.common import UsageError
from kvtui.sim.workload.trace_stats import trace_stats

MOONCAKE = Path(__file__).resolve().parents[3] / "shared" / "data" / "traces" / "mooncake"


def write(tmp_path: Path, rows) -> Path:
    f = tmp_path / "t.jsonl"
    f.write_text("".join(json.dumps({"timestamp": 1000 * i, "input_length": n, "output_length": 7, "hash_ids": ids}) + "\n"
                         for i, (n, ids) in enumerate(rows)))
    return f


def test_reuse_and_lru_by_hand(tmp_path):
    # A, then A's prefix grown by one block, then something else, then A again.
    f = write(tmp_path, [(1024, [1, 2]), (1300, [1, 2, 3]), (100, [9]), (1024, [1, 2])])
    st = trace_stats("mooncake", str(f), capacities=(1024, 2048, 100_000), nodes=2)
    assert (st.requests, st.duration_s, st.rate) == (4, 3.0, 4 / 3.0)
    assert (st.blocks, st.blocks_reused) == (8, 4)  # 2 in the second request, 2 in the last
    assert st.tokens == 1024 + 1300 + 100 + 1024 and st.tokens_reused == 2048
    # 2 blocks of 512. Request 2 hits [1, 2]; its blocks are touched tail first, so 3 is the
    # least recent and goes: [2, 1]. Request 3 inserts 9 and evicts 2: [1, 9]. Request 4
    # finds 1, not 2: half its prompt. Hits: 1024 + 512 tokens.
    one, two, big = st.curve
    assert one.global_hit == pytest.approx(1536 / st.tokens)
    # 4 blocks hold everything the last request needs: as good as an infinite cache
    assert two.global_hit == big.global_hit == pytest.approx(2048 / st.tokens)
    # round robin over 2 caches: requests 1, 3 on one, 2, 4 on the other: only the 4th hits
    # (request 2 left [1, 2, 3] on cache 1, and its capacity there is half the total)
    assert big.split_hit == pytest.approx(1024 / st.tokens)
    assert st.input["max"] == 1300 and st.output["p50"] == 7


def test_azure_has_no_reuse_figures(tmp_path):
    f = tmp_path / "a.csv"
    f.write_text("TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:15:46.5,374,44\n2023-11-16 18:15:48.5,10,4\n")
    st = trace_stats("azure", str(f))
    assert st.requests == 2 and st.duration_s == pytest.approx(2.0) and st.hash_block is None and st.curve == []


def test_capacities_parse():
    assert parse_capacities("1M,3M, 500k,12") == (1_000_000, 3_000_000, 500_000, 12)
    for bad in ("1X", "", "0", "-1M"):
        with pytest.raises(UsageError):
            parse_capacities(bad)


def test_cli(tmp_path, capsys):
    f = write(tmp_path, [(1024, [1, 2]), (1300, [1, 2, 3])])
    assert main(["trace", "stats", str(f), "--capacity", "1k,1M", "--nodes", "2"]) == 0
    out = capsys.readouterr().out
    assert "block reuse 40.0% of 5 blocks" in out and "2 cache-blind caches" in out
    assert main(["trace", "stats", str(f), "--capacity", "lots"]) == 2
    broken = tmp_path / "b.jsonl"
    broken.write_text('{"timestamp": 0}\n')
    assert main(["trace", "stats", str(broken)]) == 2
    assert f"{broken}:1: missing field" in capsys.readouterr().err
    assert main(["trace", "stats", str(tmp_path / "x.bin")]) == 2


@pytest.mark.skipif(not MOONCAKE.is_dir(), reason="shared trace data not found")
def test_mooncake_reuse_matches_the_data_readme():
    st = trace_stats("mooncake", str(MOONCAKE / "synthetic_trace.jsonl"), capacities=(10**7,), nodes=10)
    assert st.requests == 3993 and round(st.blocks_reused / st.blocks, 3) == 0.640
    assert st.curve[0].split_hit < st.curve[0].global_hit < st.tokens_reused / st.tokens
