"""The calibration as text (per stage and metric: real vs simulated p50/p90 before and after the
fit, the naive baseline, per-request figures, hit rates, the fitted knobs against the profile's,
what the model leaves out) and as the `--json` document of issue 37:

    {"format", "fitted": {...}, "profile": {...}, "stages": [{"stage", "role", "rate", "metrics":
     {"ttft"|"tpot"|"itl"|"e2e": {"p50"|"p90": {"real", "sim", "err"}}}, ...}],
     "out_of_the_box": {"stages": [...]}, "naive_baseline": {"stages": [...]}}

Times in milliseconds, err a share (simulated / real - 1).
"""

from __future__ import annotations

from kvtui.calibrate.accuracy import errors, per_request
from kvtui.calibrate.calibration import Calibration
from kvtui.calibrate.report import METRICS, QUANTILES

LIMITATIONS = (
    "one engine, one node: the report's cluster is simulated as the single vLLM server it names",
    "the API server is a fixed cost per request plus an output lag in scheduler steps: its own queueing "
    "beyond that (one process streaming every request) is not modelled",
    "from one load level a step's fixed and per-byte costs (and a request's fixed delay and its per-step lag) "
    "are hard to tell apart: the priors decide along those directions (HBM efficiency centred on 0.85); "
    "fit stages of different loads tell them apart",
    "the stream's chunking, the tokeniser's drift and the sampler are not simulated; figures are converted "
    "to kvtui's definitions instead (the notes say how)",
    "a closed-loop stage (a concurrency) starts every user at once: with equal output lengths their requests "
    "stay in step, in waves a real client's jitter breaks up",
)


def stage_rows(cal: Calibration, which: str) -> list[dict]:
    sims = cal.after if which == "after" else cal.before
    rows = []
    for stage, sim in zip(cal.report.stages, sims):
        row = {"stage": stage.index, "role": cal.role(stage.index), "rate": stage.rate,
               "metrics": errors(stage.measured, sim.figures), "sim_hit_rate": round(sim.hit_rate, 4)}
        if stage.concurrency is not None:
            row["concurrency"] = stage.concurrency
        if stage.hit_rate is not None:
            row["real_hit_rate"] = round(stage.hit_rate, 4)
        pr = per_request(stage.requests, sim.figures) if stage.requests is not None else None
        if pr is not None:
            row["per_request"] = pr
        rows.append(row)
    return rows


def baseline_rows(cal: Calibration) -> list[dict]:
    """Every stage after the first predicted by the first stage's measured figures."""
    first = cal.report.stages[0]
    return [{"stage": s.index, "role": cal.role(s.index), "rate": s.rate, "metrics": errors(s.measured, first.measured)}
            for s in cal.report.stages[1:]]


def document(cal: Calibration) -> dict:
    return {
        "format": cal.report.format,
        "report": cal.report.path,
        "model": cal.setup.model,
        "tensor_parallel": cal.setup.tp,
        "fitted": {k: round(v, 6) for k, v in cal.fitted.items()},
        "profile": {k: round(v, 6) for k, v in cal.start.items()},
        "fit": {"cost_before": round(cal.result.start_cost, 6), "cost_after": round(cal.result.cost, 6),
                "runs": cal.result.runs, "iterations": cal.result.iterations},
        "stages": stage_rows(cal, "after"),
        "out_of_the_box": {"stages": stage_rows(cal, "before")},
        "naive_baseline": {"stages": baseline_rows(cal)},
        "notes": list(cal.report.notes),
        "limitations": list(LIMITATIONS),
    }


def _pct(x: float | None) -> str:
    return "—" if x is None else f"{100 * x:+.1f}%"


def text(cal: Calibration) -> str:
    doc = document(cal)
    lines = [f"{cal.report.format} report {cal.report.path}: {len(cal.report.stages)} stage(s), model {cal.setup.model}, "
             f"TP {cal.setup.tp}; fitted on stage(s) {', '.join(map(str, cal.fit_stages))}", ""]
    base = {r["stage"]: r["metrics"] for r in doc["naive_baseline"]["stages"]}
    oob = {r["stage"]: r["metrics"] for r in doc["out_of_the_box"]["stages"]}
    header = f"{'stage':>5} {'role':<7} {'metric':<6} {'q':<3} {'real ms':>9} {'sim ms':>9} {'err':>8} {'before':>8} {'naive':>8}"
    lines += [header, "-" * len(header)]
    for row in doc["stages"]:
        for m in METRICS:
            for q in QUANTILES:
                cell = row["metrics"].get(m, {}).get(q)
                if cell is None:
                    continue
                before = oob[row["stage"]].get(m, {}).get(q, {}).get("err")
                naive = base.get(row["stage"], {}).get(m, {}).get(q, {}).get("err")
                lines.append(f"{row['stage']:>5} {row['role']:<7} {m:<6} {q:<3} {cell['real']:>9.2f} {cell['sim']:>9.2f} "
                             f"{_pct(cell['err']):>8} {_pct(before):>8} {_pct(naive):>8}")
        extra = []
        if "real_hit_rate" in row:
            extra.append(f"prefix-cache hit rate real {row['real_hit_rate']:.1%}, simulated {row['sim_hit_rate']:.1%}")
        if "per_request" in row:
            pr = row["per_request"]
            corr = "—" if pr["e2e_correlation"] is None else f"{pr['e2e_correlation']:.2f}"
            extra.append(f"per request ({pr['requests']}): E2E MAPE {pr['e2e_mape']:.1%}, correlation {corr}")
        lines += [f"      {e}" for e in extra]
    lines += ["", "err: simulated with the fitted knobs; before: with the profile's; naive: the first stage's measured "
              "figures carried over", "", f"{'knob':<24} {'profile':>10} {'fitted':>10}"]
    for k in cal.setup.knobs:
        lines.append(f"{k.name:<24} {cal.start[k.name]:>10.4g} {cal.fitted[k.name]:>10.4g}  {k.unit:<3} {k.what}")
    r = cal.result
    lines += [f"fit: {r.iterations} iteration(s), {r.runs} knob settings simulated, cost {r.start_cost:.4f} -> {r.cost:.4f}"]
    if cal.report.notes:
        lines += ["", "notes:"] + [f"  - {n}" for n in cal.report.notes]
    lines += ["", "limitations:"] + [f"  - {n}" for n in LIMITATIONS]
    return "\n".join(lines)
