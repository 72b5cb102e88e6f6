"""Importing this module registers every policy with the registry (one module per policy family)."""

from kvtui.sim.router import affinity, cache_aware, load_prefix, simple  # noqa: F401
from kvtui.sim.router import dynamo, sglang  # noqa: F401
from kvtui.sim.router import predicted_latency  # noqa: F401
