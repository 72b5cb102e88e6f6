"""`kvtui replay DIR --as POLICY [--no-ui]`: a route-mode recording's traffic simulated under
POLICY, printed (`--no-ui`) or shown in the split screen (kvtui/tui/counterfactual.py) beside
what really happened (kvtui/run/counterfactual.py), with the deltas; replayed under the policy
the recording was routed with, the deltas are kvtui's own error.

The latency model is the base scenario's (`--scenario`, `--set`; default the one `kvtui
calibrate` starts from) or, with `--calibrated FILE`, the profile `kvtui calibrate DIR
--out FILE` fitted from the same recording.
"""

from __future__ import annotations

from kvtui.cli.common import UsageError


def check(args) -> None:
    """Usage errors of the counterfactual flags (exit 2, naming the flag)."""
    from kvtui.scenario.run_spec import check_policy
    from kvtui.run.counterfactual import refusal

    if args.as_policy is None:
        for flag, value in (("--vs", args.vs), ("--calibrated", args.calibrated), ("--scenario", args.scenario),
                            ("--set", args.sets), ("--seed", args.seed is not None)):
            if value:
                raise UsageError(f"kvtui replay: {flag} goes with --as POLICY")
        return
    check_policy(args.as_policy, "--as")
    if (why := refusal(args.as_policy)) is not None:
        raise UsageError(f"kvtui replay: --as {args.as_policy}: {why}")


def main(args) -> int:
    from kvtui.run.counterfactual import replay
    from kvtui.run.recorded_traffic import read_traffic

    traffic = read_traffic(args.recording)
    result = replay(traffic, _base(args), args.as_policy, args.seed)
    print("\n".join(lines(result)))
    return 0


def app(args, deliveries, argv: list[str]) -> int:
    """The split screen: the recording beside its traffic simulated under --as (kvtui/tui/counterfactual.py)."""
    from kvtui.cli.app import run_app
    from kvtui.run.recorded_traffic import traffic_of
    from kvtui.tui.counterfactual import make_counterfactual_app

    traffic = traffic_of(args.recording, deliveries)  # read once, by replay's main
    return run_app(make_counterfactual_app(traffic, deliveries, _base(args), args.as_policy, args.seed,
                                           theme=args.theme), argv)


def _base(args):
    from kvtui.calibrate.rebuild import base_scenario

    sets = list(args.sets)
    if args.calibrated:
        sets += [f"profiles=[{args.calibrated}]", f"cluster.hardware={_calibrated_hardware(args.calibrated)}"]
    return base_scenario(args.scenario, sets)


def _calibrated_hardware(path: str) -> str:
    """The one hardware profile a `kvtui calibrate --out` file holds."""
    import yaml

    from kvtui.errors import InputError

    try:
        with open(path, encoding="utf-8") as f:
            doc = yaml.safe_load(f)
    except OSError as e:
        raise InputError.one(path, None, f"cannot read the calibrated profile: {e.strerror or e}") from None
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        raise InputError.one(path, mark.line + 1 if mark else None, "not YAML") from None
    names = list((doc or {}).get("hardware") or {}) if isinstance(doc, dict) else []
    if len(names) != 1:
        raise InputError.one(path, 1, "--calibrated: expected the file `kvtui calibrate --out` writes "
                             f"(one hardware profile), found {len(names)}")
    return names[0]


def lines(r) -> list[str]:
    """The side-by-side table, then the check (same policy) or nothing more."""
    from kvtui.run.counterfactual import table_rows

    t, rec, sim = r.traffic, r.recorded, r.simulated
    blocks = ", ".join(f"{e} {t.kv_blocks[e]}" for e in t.engines)
    out = [f"replay of {t.path}: {len(t.requests)} requests on {len(t.engines)} engines (KV blocks {blocks}; "
           f"block {t.block_size} tokens), recorded under {t.policy or 'a policy the recording does not name'}",
           f"{'':<26}{rec.label:>24}{sim.label:>30}{'delta':>10}"]
    out += [f"{name:<26}{a:>24}{b:>30}{d:>10}" for name, a, b, d in table_rows(r)]
    out.append("available: recorded, the most blocks the router's index credited any engine with at the decision "
               "(the engines' published state as it had reached kvtui); simulated, the most any node's pool held")
    out.append(_staleness(r))
    if r.same_policy:
        out += _check(r)
    out.append(f"simulated run: seed {r.document['seed']}, digest {r.digest}")
    return out


def _staleness(r) -> str:
    reqs = r.traffic.requests
    said_more = sum(max(0, q.promised - q.hit) for q in reqs)
    said_less = sum(max(0, q.hit - q.promised) for q in reqs)
    index = r.document["routing"].get("index") or {}
    return (f"index against the engines: recorded, {said_more} blocks promised and not served, {said_less} served "
            f"unpromised; simulated, stale at {index.get('stale_decisions', 0)}/{index.get('decisions', 0)} decisions")


def _check(r) -> list[str]:
    """Under the recording's own policy the deltas are kvtui's error, said as such."""
    from kvtui.run.counterfactual import delta as _delta

    rec, sim = r.recorded, r.simulated
    same = sum(1 for a, b in zip(rec.hits, sim.hits) if a == b)
    errors = [f"hit rate {_delta(rec.hit_rate, sim.hit_rate, 100, ' pp')}"]
    for q in (50, 95):
        a, b = rec.ttft(q), sim.ttft(q)
        errors.append(f"TTFT p{q} {_delta(a, b, 1000, ' ms')}" + (f" ({100 * (b - a) / a:+.1f}%)" if a and b is not None else ""))
    return [f"check (replayed under the policy that routed it, {r.policy}): kvtui's error against the recording: "
            + ", ".join(errors) + f"; per-request hits equal for {same}/{len(rec.hits)} requests"]
