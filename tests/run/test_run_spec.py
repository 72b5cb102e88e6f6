"""A run's parameters are resolved once, at the door (kvtui/scenario/run_spec.py; issue 35 item 16).

Before, the policy was checked in 4 places and defaulted in 3, the seed defaulted in 3 and the
node plans computed at 5 call sites. These tests hold the line: every way in (`run`, `compare`,
`sweep`, the app, `validate`) gives the same resolved spec for the same arguments, it is
resolved exactly once per run, and no module outside run_spec.py fills a parameter in again.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import kvtui
import kvtui.cli.validate
import kvtui.scenario.run_spec as run_spec
import kvtui.sim.engine
from kvtui.errors import InputError
from kvtui.scenario import load_scenario
from kvtui.scenario.run_spec import RunSpec, as_spec, resolve

ROOT = Path(__file__).resolve().parents[2]
SCENARIO = str(ROOT / "tests" / "tui" / "scenario.yaml")
PACKAGE = Path(kvtui.__file__).parent


class _Built(Exception):
    """Raised once the engine got its spec: what is checked here is the spec, not the run."""


@pytest.fixture
def specs(monkeypatch) -> list[RunSpec]:
    """The spec each Simulation is built from (the run then stops), and every one `validate` resolves."""
    seen: list[RunSpec] = []

    def engine_spec(run, seed=None, policy=None):
        seen.append(as_spec(run, seed, policy))
        raise _Built

    def validate_spec(scenario, *a):
        seen.append(resolve(scenario, *a))
        return seen[-1]

    monkeypatch.setattr(kvtui.sim.engine, "as_spec", engine_spec)
    monkeypatch.setattr(kvtui.cli.validate, "resolve", validate_spec)
    return seen


def _through_run(flags: list[str]) -> None:
    from kvtui.cli.run import main

    with pytest.raises(_Built):
        main([SCENARIO, *flags])


def _through_compare(flags: list[str]) -> None:
    from kvtui.cli.compare import main

    flags = ["--policies" if f == "--policy" else f for f in flags]
    with pytest.raises(_Built):
        main([SCENARIO, *flags])


def _through_sweep(flags: list[str]) -> None:
    from kvtui.sweep.grid import expand
    from kvtui.sweep.run import execute

    given = dict(zip(flags[::2], flags[1::2]))
    seed = int(given["--seed"]) if "--seed" in given else None
    (cell,) = expand([SCENARIO], [], [given.get("--policy")], 1, seed=seed)
    assert not execute(cell).ok  # _Built, caught as one failed cell


def _through_app(flags: list[str], monkeypatch) -> None:
    import kvtui.cli.app as app

    monkeypatch.setattr(app, "stdin_is_terminal", lambda: True)
    with pytest.raises(_Built):
        app.main([SCENARIO, *flags])


def _through_split_screen(flags: list[str], monkeypatch) -> None:
    """The split screen's left run is the single view's run."""
    import kvtui.cli.app as app

    monkeypatch.setattr(app, "stdin_is_terminal", lambda: True)
    with pytest.raises(_Built):
        app.main([SCENARIO, *flags, "--vs", "round_robin"])


@pytest.mark.parametrize("flags", [[], ["--seed", "7", "--policy", "least_loaded"]])
def test_every_door_resolves_the_same_spec(specs, monkeypatch, flags):
    _through_run(flags)
    _through_compare(flags)
    _through_sweep(flags)
    _through_app(flags, monkeypatch)
    _through_split_screen(flags, monkeypatch)
    doors = ["run", "compare", "sweep", "app", "split screen"]
    if not flags:  # validate takes neither flag: it says what `kvtui run FILE` would run
        assert kvtui.cli.validate.main([SCENARIO]) == 0
        doors.append("validate")
    assert len(specs) == len(doors)
    want = resolve(load_scenario(SCENARIO), *([7, "least_loaded"] if flags else []))
    assert (want.seed, want.policy) == ((7, "least_loaded") if flags else (3, "cache_aware"))
    for door, spec in zip(doors, specs):
        assert spec == want, door


def test_a_run_is_resolved_once(monkeypatch, tmp_path):
    """From the door to the engine (and every checkpoint the app's Drive keeps), one resolution."""
    from kvtui.cli.run import main
    from kvtui.run import Run

    calls: list[object] = []
    real = run_spec.node_plans
    monkeypatch.setattr(run_spec, "node_plans", lambda sc: calls.append(sc) or real(sc))
    assert main([SCENARIO, "--set", "workload.duration_s=2", "--json", str(tmp_path / "r.json")]) == 0
    assert len(calls) == 1
    run = Run(resolve(load_scenario(SCENARIO)))
    for _ in range(50):
        run.step()
    run.back()
    run.restart(policy="round_robin")
    assert len(calls) == 2 and run.policy == "round_robin" and run.source.sim.policy_name == "round_robin"
    run.close()


def test_a_resolved_spec_takes_no_second_seed_or_policy():
    spec = resolve(load_scenario(SCENARIO))
    assert as_spec(spec) is spec
    with pytest.raises(TypeError):
        as_spec(spec, seed=1)
    with pytest.raises(InputError, match=r"^--vs: unknown policy 'nope'"):
        spec.again("nope", flag="--vs")
    with pytest.raises(InputError, match=r"^--policies: unknown policy 'nope'"):
        resolve(spec.scenario, None, "nope", "--policies")
    assert spec.again(seed=9).plans is spec.plans and spec.again(seed=9).seed == 9


# What re-defaulting or re-checking looked like, each once per offending site before the change.
REFILLS = {
    "policy defaulted": re.compile(r"\bor \(?[\w.]*router\.policy\b"),
    "seed defaulted": re.compile(r"if seed is None else|if seed is not None else"),
    "policy checked": re.compile(r"not in POLICY_NAMES"),
}


def test_no_module_but_run_spec_fills_in_or_checks_a_run_parameter():
    found = [f"{path.relative_to(PACKAGE)}: {what}"
             for path in sorted(PACKAGE.rglob("*.py")) if path.name != "run_spec.py"
             for what, pattern in REFILLS.items() if pattern.search(path.read_text())]
    assert found == []
    assert REFILLS["seed defaulted"].search((PACKAGE / "scenario" / "run_spec.py").read_text())


def test_node_plans_are_computed_where_listed():
    """The engine reads the spec's plans; the loader plans once for its checks; the cost
    estimate and its service floor (kvtui/scenario/cost.py) twice."""
    calls = {str(path.relative_to(PACKAGE)): len(re.findall(r"\bnode_plans\(", path.read_text()))
             for path in PACKAGE.rglob("*.py")}
    calls = {k: v for k, v in calls.items() if v and k != "scenario/plan.py"}
    assert calls == {"scenario/run_spec.py": 1, "scenario/loader.py": 1, "scenario/cost.py": 2}
