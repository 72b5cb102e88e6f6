"""Routing policies by name. Each policy module registers itself here on import."""

from __future__ import annotations

from typing import Callable

_POLICIES: dict[str, Callable] = {}

# Names are fixed here (not only by import side effects) so the scenario validator can check a
# policy name without importing the whole engine.
POLICY_NAMES: tuple[str, ...] = (
    "round_robin",
    "random",
    "least_loaded",
    "session_affinity",
    "cache_aware",
)


def register(name: str):
    def deco(cls):
        if name not in POLICY_NAMES:
            raise ValueError(f"policy {name!r} is missing from POLICY_NAMES")
        _POLICIES[name] = cls
        return cls

    return deco


def make_policy(name: str, **kwargs):
    from kvtui.sim.router import policies  # noqa: F401  (registers the classes)

    try:
        cls = _POLICIES[name]
    except KeyError:
        raise KeyError(f"unknown policy {name!r}; known: {', '.join(POLICY_NAMES)}") from None
    return cls(**kwargs)
