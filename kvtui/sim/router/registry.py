"""Routing policies by name: the class of a name is the one its row in kvtui/scenario/policies.py
names, imported when a run first asks for it (so the validator and the CLI know the names
without importing the engine, and a policy's name is written once)."""

from __future__ import annotations

import importlib

from kvtui.scenario.model import Router as RouterConfig
from kvtui.scenario.policies import POLICIES, unknown_policy
from kvtui.sim.router.base import Policy


def policy_class(name: str) -> type[Policy]:
    """The `Policy` subclass registered under `name`."""
    try:
        module, _, cls = POLICIES[name].implementation.partition(":")
    except KeyError:
        raise KeyError(unknown_policy(name)) from None
    return getattr(importlib.import_module(module), cls)


def make_policy(name: str, cfg: RouterConfig | None = None) -> Policy:
    return policy_class(name).from_config(cfg if cfg is not None else RouterConfig())
