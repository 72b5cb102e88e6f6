"""Routing policies by name. Each policy module registers itself here on import; the names and
their one-line descriptions live in kvtui.scenario.policies, so the validator and the CLI know
them without importing the engine."""

from __future__ import annotations

from kvtui.scenario.model import Router as RouterConfig
from kvtui.scenario.policies import POLICY_NAMES

_POLICIES: dict[str, type] = {}


def register(name: str):
    def deco(cls):
        if name not in POLICY_NAMES:
            raise ValueError(f"policy {name!r} is missing from kvtui.scenario.policies")
        _POLICIES[name] = cls
        return cls

    return deco


def make_policy(name: str, cfg: RouterConfig | None = None):
    from kvtui.sim.router import policies  # noqa: F401  (registers the classes)

    try:
        cls = _POLICIES[name]
    except KeyError:
        raise KeyError(f"unknown policy {name!r}; known: {', '.join(POLICY_NAMES)}") from None
    return cls.from_config(cfg if cfg is not None else RouterConfig())
