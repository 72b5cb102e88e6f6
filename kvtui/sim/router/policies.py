"""Importing this module registers every policy family with the registry."""

from kvtui.sim.router import affinity, cache_aware, simple  # noqa: F401
