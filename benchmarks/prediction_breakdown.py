"""Where predicted_latency's prediction error comes from: one row per request (features at
routing, prediction, what happened) and the TTFT / TPOT MAPE broken down by what could explain it.

Run:  python benchmarks/prediction_breakdown.py SCENARIO [SCENARIO ...] [--seed N]
          [--set KEY=VALUE ...] [--csv rows.csv] [--markdown]

The policy is predicted_latency with the XGBoost regressor (the study's). Each request's row is
the one the policy routed it with; the breakdowns group the absolute percentage errors by
uncached prompt length, waiting, running and KV usage at routing, preempted or not, routing
time, the age of the model that predicted it (sim seconds since its retrain), the actual
latency, and how the node's running count moved between routing and completion.

The hindsight lines refit upstream's XGBoost with every label known (5-fold): the gap between
the online MAPE and the hindsight one is what label delay and a moving regime cost (a TPOT label
arrives only when its request ends); the gap between llm-d's columns and one more column is what
that column would buy: the time left in the running iteration for TTFT, the node's running
count averaged over the request's decode (known only afterwards) for TPOT.
"""

from __future__ import annotations

import argparse
import csv
import sys
from dataclasses import asdict, dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402

from kvtui.events import BatchStepped, FirstToken, RequestCompleted  # noqa: E402
from kvtui.scenario.loader import load_scenario  # noqa: E402
from kvtui.sim.engine import Simulation  # noqa: E402
from kvtui.sim.router.predictor import FEATURES, XGB_PARAMS, XGB_ROUNDS, upstream_design  # noqa: E402


@dataclass
class Sample:
    """One request: routing-time features and predictions, then what happened."""

    request: str
    t_route: float
    node: str
    model_age_s: float
    row: tuple
    p_ttft: float | None
    p_tpot: float | None
    ttft: float = 0.0
    tpot: float = 0.0
    preempted: int = 0
    end_running: float = 0.0
    end_waiting: float = 0.0
    life_running: float = 0.0  # the node's running count, time-averaged over the decode
    mark: tuple[float, float] = (0.0, 0.0)  # the node's (running x time, time) at first token


def instrument(sim: Simulation) -> dict[str, Sample]:
    """Wrap the policy's `routed` and listen for the labels; returns the rows, filled as it runs."""
    policy = sim.router.policy
    policy.READS_ITERATION_LEFT = True  # read for the hindsight column; models without the option ignore it
    rows: dict[str, Sample] = {}
    inner = policy.routed
    area: dict[str, list[float]] = {n.name: [0.0, 0.0] for n in sim.nodes}  # running x time, time

    def routed(req, node, states):
        inner(req, node, states)
        p = policy.pending.get(req.id)
        if p is None:
            return
        age = sim.env.now - policy.predictor.last_train
        rows[req.id] = Sample(req.id, sim.env.now, node, age, p.row, p.ttft, p.tpot)

    def on_event(ev):
        if isinstance(ev, BatchStepped):
            a = area[ev.node]
            a[0] += ev.running * ev.duration
            a[1] += ev.duration
            return
        s = rows.get(getattr(ev, "request", ""))
        if s is None:
            return
        match ev:
            case FirstToken():
                s.ttft = ev.ttft * 1000.0
                s.mark = tuple(area[ev.node])
            case RequestCompleted():
                s.tpot, s.preempted = ev.tpot * 1000.0, ev.preemptions
                node = sim.router.node_by_name[ev.node]
                s.end_running, s.end_waiting = float(len(node.running)), float(len(node.waiting))
                a, t = area[ev.node][0] - s.mark[0], area[ev.node][1] - s.mark[1]
                s.life_running = a / t if t > 0 else s.end_running

    policy.routed = routed
    sim.subscribe(on_event)
    return rows


def ape(pred: np.ndarray, actual: np.ndarray) -> np.ndarray:
    return 100.0 * np.abs(pred - actual) / actual


def breakdown(title: str, key: np.ndarray, err: np.ndarray, edges: list[float]) -> list[str]:
    """One line: per bin of `key` ([edges[i], edges[i+1])), the count and the MAPE."""
    cells = []
    for lo, hi in zip(edges, edges[1:]):
        m = (key >= lo) & (key < hi)
        if m.any():
            cells.append(f"[{lo:g}, {hi:g}) n={int(m.sum())} {err[m].mean():.1f} %")
    return [f"  by {title}: " + " | ".join(cells)]


def report(rows: list[Sample], metric: str) -> list[str]:
    """The breakdowns of one metric's error over the rows that have a prediction and a label."""
    idx = {n: i for i, n in enumerate(FEATURES)}
    use = [s for s in rows if getattr(s, "p_" + metric) is not None and getattr(s, metric) > 0]
    if not use:
        return [f"{metric}: no scored predictions"]
    pred = np.array([getattr(s, "p_" + metric) for s in use])
    act = np.array([getattr(s, metric) for s in use])
    err = ape(pred, act)
    col = lambda name: np.array([s.row[idx[name]] for s in use])  # noqa: E731
    signed = 100.0 * np.mean((pred - act) / act)
    out = [f"{metric.upper()}: n={len(use)} MAPE {err.mean():.1f} % (mean signed {signed:+.1f} %), "
           f"actual p50 {np.median(act):.1f} ms, p90 {np.percentile(act, 90):.1f} ms"]
    uncached = col("input") * (1.0 - col("prefix"))
    out += breakdown("uncached prompt tokens at routing", uncached, err, [0, 500, 1000, 2000, 4000, 8000, 1e9])
    out += breakdown("waiting at routing", col("waiting"), err, [0, 1, 3, 6, 11, 1e9])
    out += breakdown("running at routing", col("running"), err, [0, 10, 20, 40, 80, 1e9])
    out += breakdown("KV usage at routing", col("kv"), err, [0, 0.5, 0.8, 0.95, 0.99, 1.01])
    out += breakdown("preemptions", np.array([s.preempted for s in use], float), err, [0, 1, 1e9])
    out += breakdown("routing time (s)", np.array([s.t_route for s in use]), err, [0, 20, 40, 60, 80, 100, 1e9])
    out += breakdown("model age (s since retrain)", np.array([s.model_age_s for s in use]), err, [0, 0.5, 1, 2, 1e9])
    out += breakdown("actual (ms)", act, err, [0, 30, 100, 300, 1000, 3000, 1e9])
    drift = np.array([s.end_running - s.row[idx["running"]] for s in use])
    out += breakdown("running at end minus at routing", drift, err, [-1e9, -20, -5, 5, 20, 1e9])
    return out


def hindsight_mape(X: np.ndarray, y: np.ndarray, folds: int = 5) -> float:
    """MAPE (%) of upstream's XGBoost on log y, each row predicted by a model fitted on the
    other folds: the error these columns leave when every label is known (no label delay)."""
    import xgboost  # noqa: PLC0415  (the study's extra)

    order = np.arange(len(y)) % folds
    pred = np.empty(len(y))
    for k in range(folds):
        train, test = order != k, order == k
        d = xgboost.DMatrix(X[train], label=np.log(y[train]), nthread=1)
        m = xgboost.train(XGB_PARAMS | {"objective": "reg:squarederror"}, d, num_boost_round=XGB_ROUNDS)
        pred[test] = np.exp(m.predict(xgboost.DMatrix(X[test], nthread=1)))
    return float(ape(pred, y).mean())


def hindsight(rows: list[Sample]) -> list[str]:
    """The error left with every label known (5-fold), on llm-d's columns and with one more:
    what would fix each metric if the EPP could see it."""
    out = ["hindsight (5-fold, every label known; upstream's XGBoost on log latency):"]
    for metric, extra, what in (("ttft", "iteration", "time left in the running iteration"),
                                ("tpot", "life", "the node's running count averaged over the decode")):
        use = [s for s in rows if getattr(s, metric) > 0]
        X = np.asarray([s.row for s in use], float)
        y = np.asarray([getattr(s, metric) for s in use])
        base = upstream_design(X, metric)
        more = np.column_stack([base, [s.life_running for s in use]]) if extra == "life" else upstream_design(X, metric, True)
        out.append(f"  {metric.upper()}: llm-d's columns {hindsight_mape(base, y):.1f} %, "
                   f"plus {what} {hindsight_mape(more, y):.1f} %")
    return out


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("scenario", nargs="+")
    ap.add_argument("--seed", type=int)
    ap.add_argument("--set", action="append", default=[], metavar="KEY=VALUE")
    ap.add_argument("--csv", type=Path, help="write the per-request rows here (the last scenario's)")
    ap.add_argument("--markdown", action="store_true", help="fence each report as a text block (docs/routing.md)")
    args = ap.parse_args(argv)
    for path in args.scenario:
        print("\n".join(one(Path(path), args)), flush=True)


def one(path: Path, args: argparse.Namespace) -> list[str]:
    """Run one scenario under predicted_latency (XGBoost) and break its error down."""
    scenario = load_scenario(path, ["router.predicted_latency.regressor=xgboost", *args.set])
    sim = Simulation(scenario, seed=args.seed, policy="predicted_latency")
    rows = instrument(sim)
    try:
        sim.run()
    finally:
        sim.close()
    done = list(rows.values())
    if args.csv:
        write_csv(args.csv, done)
    lines = [line for metric in ("ttft", "tpot") for line in report(done, metric)] + hindsight(done)
    if args.markdown:
        lines = [f"{scenario.name}, seed {sim.seed}:", "", "```text", *lines, "```", ""]
    return lines


def write_csv(path: Path, rows: list[Sample]) -> None:
    with path.open("w", newline="") as f:
        w = csv.writer(f)
        names = [k for k in asdict(rows[0]) if k not in ("row", "mark")]
        w.writerow(names + list(FEATURES))
        for s in rows:
            d = asdict(s)
            w.writerow([d[k] for k in names] + list(s.row))


if __name__ == "__main__":
    main()
