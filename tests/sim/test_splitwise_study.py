"""benchmarks/splitwise_study.py's scoring: Splitwise's slowdowns, its nine SLOs and the rate search."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))

import splitwise_study as study  # noqa: E402


def _slow(ttft_x: float, tbt_x: float, n: int = 100) -> dict[str, np.ndarray]:
    """n requests of 1,000 prompt and 101 output tokens, alone 0.2 s TTFT and 0.05 s TBT, slowed
    by the given factors."""
    alone_ttft, alone_tbt = np.full(n, 0.2), np.full(n, 0.05)
    ttft = alone_ttft * ttft_x
    e2e = ttft + 101 * alone_tbt * tbt_x  # TBT = (E2E - TTFT) / output tokens (scheduler.py get_results)
    return study.slowdowns(np.full(n, 1000), np.full(n, 101), ttft, e2e, alone_ttft, alone_tbt)


def test_slowdowns_divide_by_the_request_alone():
    s = _slow(1.5, 1.2)
    assert np.allclose(s["TTFT"], 1.5)
    assert np.allclose(s["TBT"], 1.2)
    assert np.allclose(s["E2E"], (0.3 + 101 * 0.06) / (0.2 + 100 * 0.05))


def test_a_system_within_every_bound_misses_nothing():
    assert study.missed(_slow(1.9, 1.0)) == []


def test_the_unloaded_e2e_counts_one_token_fewer_than_tbt_does():
    # Splitwise divides E2E - TTFT by every output token but builds the unloaded E2E from
    # output - 1 of them, so a slow first token moves E2E too: 2x TTFT, unloaded TBT
    s = _slow(2.0, 1.0)
    assert np.allclose(s["E2E"], (0.4 + 101 * 0.05) / (0.2 + 100 * 0.05))


def test_each_bound_is_a_percentile_of_its_own_metric():
    assert study.missed(_slow(2.0, 1.0)) == ["TTFT p50"]
    assert set(study.missed(_slow(1.0, 1.3))) == {"TBT p50", "E2E p50"}
    tail = _slow(1.0, 1.0)
    tail["TTFT"][-2:] = 7.0  # 2 % of requests past 6x: p99 misses, p90 does not
    assert study.missed(tail) == ["TTFT p99"]


def test_the_search_finds_the_last_rate_that_meets_on_the_step_grid():
    # 4 machines: steps of 1 req/s; everything up to 7.3 req/s meets
    assert study.search(lambda rate: rate <= 7.3, 4) == 7.0
    assert study.search(lambda rate: False, 4) == 0.0


def test_a_split_names_its_pools_and_gives_the_nodes_their_roles():
    split = study.Cluster(6, 4)
    assert split.label() == "Splitwise-HH (4P, 2T)" and split.policy == "llm_d_pd"
    nodes = split.nodes("chunked 2,048")
    assert nodes.count("role: prefill") == 4 and nodes.count("role: decode") == 2
    assert study.Cluster(6).nodes("whole prefills").count("role: both") == 6
