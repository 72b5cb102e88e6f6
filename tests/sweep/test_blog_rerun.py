"""benchmarks/blog_rerun.py's verdicts: the blog's claim per workload, judged at the regime steps
(the two highest all policies ran) on NTPOT p50, a difference counted only beyond the noise."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))

import blog_rerun as rerun  # noqa: E402

RATES = (1.0, 2.0, 4.0)


def doc(ntpot: float, tps: float, sim_time: float = 105.0) -> dict:
    return {"latency_ms": {"ntpot": {"p50": ntpot, "p90": ntpot * 1.5}},
            "throughput": {"output_tokens_per_s": tps}, "sim_time_s": sim_time}


def ladders(ntpot: dict[str, tuple[float, ...]], saturate: bool = True) -> rerun.Ladders:
    """Three seeds a step (spread +-0.1 ms); throughput follows the rate, then stalls at 4/s."""
    runs = {}
    for policy, values in ntpot.items():
        runs[policy] = {}
        for rate, v in zip(RATES, values):
            tps = 100.0 * (2.0 if rate == 4.0 and saturate else rate)
            runs[policy][rate] = [doc(v + d, tps) for d in (-0.1, 0.0, 0.1)]
    return rerun.Ladders(runs, 0, 100.0)


def verdict(name: str, **ntpot) -> str:
    return rerun.verdict(name, ladders(ntpot), 3)


def test_a_win_at_the_regime_steps_reproduces_the_claim_of_the_best():
    v = verdict("A", round_robin=(5, 8, 20), load_prefix=(5, 7, 18), predicted_latency=(5, 6, 12))
    assert v.startswith("**Verdict: reproduced.**") and "lower at 4/s" in v


def test_a_tie_is_not_a_win():
    v = verdict("B", round_robin=(5, 7, 18), load_prefix=(5, 7, 18), predicted_latency=(5, 7, 18))
    assert v.startswith("**Verdict: not reproduced.**") and "a tie at 2/s" in v


def test_as_good_as_load_prefix_allows_a_tie_but_not_a_loss():
    assert verdict("D", round_robin=(5, 7, 18), load_prefix=(5, 7, 18), predicted_latency=(5, 7, 18)).startswith(
        "**Verdict: reproduced.**")
    assert verdict("D", round_robin=(5, 7, 18), load_prefix=(5, 7, 18), predicted_latency=(5, 7, 25)).startswith(
        "**Verdict: not reproduced.**")


def test_c_needs_a_tie_with_load_prefix_and_a_win_over_round_robin():
    assert verdict("C", round_robin=(5, 9, 30), load_prefix=(5, 7, 18), predicted_latency=(5, 7, 18)).startswith(
        "**Verdict: reproduced.**")
    assert verdict("C", round_robin=(5, 7, 18), load_prefix=(5, 7, 18), predicted_latency=(5, 7, 18)).startswith(
        "**Verdict: not reproduced.**")


def test_no_saturation_within_the_ladders_is_inconclusive():
    lad = ladders({"round_robin": (5, 7, 9), "load_prefix": (5, 7, 9), "predicted_latency": (4, 5, 6)}, saturate=False)
    v = rerun.verdict("A", lad, 3)
    assert v.startswith("**Verdict: inconclusive.**") and "No policy saturated" in v


def test_the_regime_is_the_top_two_steps_every_policy_ran():
    lad = ladders({"round_robin": (5, 8, 20), "load_prefix": (5, 7, 18), "predicted_latency": (5, 6, 12)})
    del lad.runs["round_robin"][4.0]  # round robin stopped a step earlier
    assert lad.regime() == [1.0, 2.0]


def test_the_rerun_is_a_slow_block_of_routing_md_checked_by_docs_sh():
    """It runs the whole -small matrix and the MaaS loads: .ci/checks/docs.sh, not the test run."""
    import importlib.util

    root = Path(__file__).resolve().parents[2]
    spec = importlib.util.spec_from_file_location("kvtui_docs_generate_rerun", root / "docs" / "generate.py")
    generate = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = generate
    spec.loader.exec_module(generate)
    path = root / "docs" / "routing.md"
    (block,) = [b for b in generate.blocks_in(path, path.read_text()) if "blog_rerun.py" in b.spec]
    assert not block.quick and "**Verdict:" in block.body
