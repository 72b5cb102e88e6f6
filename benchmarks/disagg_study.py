"""DistServe's two measures of disaggregation, on scenarios/disaggregation.yaml, as markdown.

Run:  python benchmarks/disagg_study.py

Two workloads on the scenario's cluster (OPT-13B, four A100s): the scenario as shipped (long
prompts, short answers, TTFT 1 s / TPOT 50 ms), and a chatbot (ShareGPT-like lengths as
scenarios/sharegpt.yaml draws them, with the chatbot SLOs DistServe's Table 1 gives OPT-13B,
TTFT 250 ms / TPOT 100 ms).

The same four GPUs, the same seeded workload, two ways: colocated (every node serves both
phases, `load_prefix`) and disaggregated (the scenario's 2 prefill + 2 decode nodes, `llm_d_pd`).
DistServe (Zhong et al., OSDI 2024) reports, against colocated vLLM, "up to 4.48x" the goodput
(requests per second per GPU served with more than 90 % of requests within both the TTFT and the
TPOT SLO) "or 10.2x tighter SLO" (the scale of both SLOs that still meets 90 % at a given rate).
This prints kvtui's two figures measured the same way:

- goodput per GPU: the highest rate of the scenario's `workload.arrival.ladder` whose SLO
  attainment (completed within both SLOs / arrived) is at least 90 %, over the GPUs;
- tightest SLO scale at the scenario's own rate: the least multiplier s (a grid of 0.05) such that
  90 % of arrived requests complete with TTFT <= s x its SLO and TPOT <= s x its SLO.

Every figure comes from the runs; nothing is typed in. A few seconds of CPU per run.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from kvtui.events import RequestCompleted  # noqa: E402
from kvtui.scenario import load_scenario  # noqa: E402
from kvtui.sim.engine import Simulation  # noqa: E402

SETUPS = (("colocated", "load_prefix"), ("disaggregated", "llm_d_pd"))
CASES = (
    ("long prompts, TTFT 1 s / TPOT 50 ms (the scenario as shipped)", ()),
    ("chatbot: ShareGPT-like lengths, TTFT 250 ms / TPOT 100 ms", (
        "workload.groups.0.question_tokens={dist: lognormal, mean: 161, sigma: 1.0, min: 4, max: 1024}",
        "workload.groups.0.output_tokens={dist: lognormal, mean: 338, sigma: 1.0, min: 4, max: 1024}",
        "workload.groups.0.slo={ttft_ms: 250, tpot_ms: 100}",
        "workload.arrival.rate=12",
        "workload.arrival.ladder=[8, 16, 24, 32, 40, 48, 56]",
    )),
)
TARGET = 0.9  # DistServe's attainment goal
SCALES = [round(0.05 * i, 2) for i in range(1, 81)]  # 0.05 .. 4.0


def run(path: Path, case: tuple[str, ...], policy: str, rate: float) -> tuple[int, list[RequestCompleted]]:
    """(arrived, completions) of one run at `rate`."""
    sim = Simulation(load_scenario(path, [*case, f"workload.arrival.rate={rate}"]), policy=policy)
    done: list[RequestCompleted] = []
    sim.subscribe(done.append, (RequestCompleted,))
    sim.run()
    return sim.metrics.arrived, done


def attained(arrived: int, done: list[RequestCompleted], scale: float = 1.0) -> float:
    """Share of arrived requests completed within `scale` x both their SLOs."""
    ok = sum(1 for e in done if e.ttft <= scale * e.slo_ttft and (e.output_tokens <= 1 or e.tpot <= scale * e.slo_tpot))
    return ok / arrived if arrived else 0.0


def tightest_scale(arrived: int, done: list[RequestCompleted]) -> float | None:
    return next((s for s in SCALES if attained(arrived, done, s) >= TARGET), None)


def ratio(a: float | None, b: float | None) -> str:
    return f"{a / b:.2f}x" if a and b else "—"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--scenario", default=str(ROOT / "scenarios" / "disaggregation.yaml"))
    path = Path(p.parse_args(argv).scenario)
    for title, case in CASES:
        print(f"**{title}**\n")
        study(path, case)
        print()
    return 0


def study(path: Path, case: tuple[str, ...]) -> None:
    base = load_scenario(path, list(case))
    rates, gpus, rate = list(base.workload.arrival.ladder), len(base.cluster.nodes), base.workload.arrival.rate
    table = {name: [attained(*run(path, case, policy, r)) for r in rates] for name, policy in SETUPS}
    print(f"SLO attainment (both SLOs, share of arrived requests) by arrival rate, {gpus} GPUs:\n")
    print("| rate (req/s) | " + " | ".join(f"{r:g}" for r in rates) + " |")
    print("|---|" + "---|" * len(rates))
    for name, row in table.items():
        print(f"| {name} | " + " | ".join(f"{100 * a:.0f} %" for a in row) + " |")
    goodput = {name: max((r for r, a in zip(rates, row) if a >= TARGET), default=0.0) / gpus for name, row in table.items()}
    scales = {name: tightest_scale(*run(path, case, policy, rate)) for name, policy in SETUPS}
    print()
    print("| measure | colocated | disaggregated | disaggregated gain | DistServe's |")
    print("|---|---|---|---|---|")
    g0, g1 = goodput["colocated"], goodput["disaggregated"]
    print(f"| goodput per GPU at {100 * TARGET:.0f} % attainment (req/s) | {g0:.2f} | {g1:.2f} | {ratio(g1, g0)} | up to 4.48x |")
    s0, s1 = scales["colocated"], scales["disaggregated"]
    print(f"| tightest SLO scale at {rate:g} req/s | {s0} | {s1} | {ratio(s0, s1)} | up to 10.2x |")


if __name__ == "__main__":
    raise SystemExit(main())
