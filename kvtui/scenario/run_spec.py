"""A run's parameters resolved once, where a command's arguments meet the scenario: the run spec.

A run is a scenario plus the policy and seed it runs under, and each node as it will be served
(kvtui/scenario/plan.py). Before this module each layer filled in what it was not given: the
engine, the app's `Drive` and `Run` each defaulted the policy and seed to the scenario's, the CLI,
the app and the split screen each checked the policy name, and the engine computed the node plans
again. `resolve` is now the only place that checks a policy name, defaults the policy and the seed,
and plans the nodes; the engine, `Drive`, `Run`, `run_to_end`, sweeps and the app read the
resulting `RunSpec` and never fill anything in again.

It lives beside the scenario (not in kvtui/run) because the engine (kvtui/sim) reads it and the
engine never imports the run layer.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from kvtui.errors import InputError
from kvtui.scenario.model import Scenario
from kvtui.scenario.plan import NodePlan, node_plans
from kvtui.scenario.policies import POLICY_NAMES, unknown_policy


@dataclass(frozen=True)
class RunSpec:
    """One run, every parameter resolved: what the engine builds from."""

    scenario: Scenario
    policy: str
    seed: int
    plans: tuple[NodePlan, ...]

    @property
    def written_for(self) -> str:
        """The policy the scenario (and its story) was written for; `policy` may differ."""
        return self.scenario.router.policy

    def again(self, policy: str | None = None, seed: int | None = None, flag: str = "--policy") -> RunSpec:
        """The same run under another policy or seed (the app's restart, the split screen's
        right side); the name is checked as at the door, the node plans kept (they depend on
        the scenario alone)."""
        check_policy(policy, flag)
        return replace(self, policy=policy or self.policy, seed=self.seed if seed is None else seed)


def check_policy(name: str | None, flag: str = "--policy") -> None:
    """The one check of a policy name given from outside the scenario (--policy, --vs,
    --policies, --route, --as), naming the flag that gave it. None means "the scenario's"."""
    if name is not None and name not in POLICY_NAMES:
        raise InputError.one(flag, None, unknown_policy(name))


def resolve(scenario: Scenario, seed: int | None = None, policy: str | None = None,
            flag: str = "--policy") -> RunSpec:
    """The run spec: `policy` (checked; None: the scenario's router.policy), `seed` (None: the
    scenario's seed) and the node plans, each resolved here and nowhere else."""
    check_policy(policy, flag)
    return RunSpec(scenario, policy or scenario.router.policy, seed_of(scenario, seed), tuple(node_plans(scenario)))


def seed_of(scenario: Scenario, seed: int | None) -> int:
    """The seed a run uses: `seed` (--seed), else the scenario's. A sweep needs it before any
    run (its seeds are S, S+1, ...: kvtui/sweep/grid.py)."""
    return scenario.seed if seed is None else seed


def as_spec(run: RunSpec | Scenario, seed: int | None = None, policy: str | None = None) -> RunSpec:
    """A spec given as it is, or resolved from a scenario (library callers and tests that
    build a run by hand). A spec is never resolved twice: with a spec, seed and policy must be None."""
    if isinstance(run, RunSpec):
        if seed is not None or policy is not None:
            raise TypeError("a resolved RunSpec takes no seed or policy; use spec.again(...)")
        return run
    return resolve(run, seed, policy)
