"""The routing policies, one row each: the name (written here and nowhere else), the class
that implements it and one line for the help. The scenario validator, the CLI help and the
app's palette read the names here without importing the engine; the engine's registry
(kvtui/sim/router/registry.py) imports the class named in the row when a run asks for it.

Adding a policy is one file under kvtui/sim/router/ (a `Policy` subclass, citing the code it
follows) and one row here (docs/architecture.md, "How to add a routing policy").
"""

from __future__ import annotations

from typing import NamedTuple

from kvtui.scenario.hints import suggestion


class PolicyEntry(NamedTuple):
    implementation: str  # "module:Class", a subclass of kvtui.sim.router.base.Policy
    about: str  # one line for the help and the palette
    paired: bool = False  # a prefill/decode policy: picks a prefill and a decode node (docs/disaggregation.md)


POLICIES: dict[str, PolicyEntry] = {
    "round_robin": PolicyEntry("kvtui.sim.router.simple:RoundRobin", "the next node in turn (cache-blind baseline)"),
    "random": PolicyEntry("kvtui.sim.router.simple:RandomPick", "a node drawn at random (cache-blind baseline)"),
    "least_loaded": PolicyEntry("kvtui.sim.router.simple:LeastLoaded", "fewest running + waiting requests (cache-blind baseline)"),
    "session_affinity": PolicyEntry("kvtui.sim.router.affinity:SessionAffinity", "a conversation stays on the node of its first turn"),
    "cache_aware": PolicyEntry(
        "kvtui.sim.router.cache_aware:CacheAware",
        "the seed project's prefix-first router, no load term (a lesson in hot spots)",
    ),
    "load_prefix": PolicyEntry(
        "kvtui.sim.router.load_prefix:LoadPrefix",
        "llm-d scheduler profile: weighted prefix, queue and KV-utilisation scorers",
    ),
    "dynamo": PolicyEntry(
        "kvtui.sim.router.dynamo:Dynamo",
        "NVIDIA Dynamo KV router: credited prefill blocks x prefill_load_scale + decode blocks, lowest cost",
    ),
    "sglang_cache_aware": PolicyEntry(
        "kvtui.sim.router.sglang:SGLangCacheAware",
        "SGLang gateway: shortest queue when imbalanced, else approximate-tree match",
    ),
    "predicted_latency": PolicyEntry(
        "kvtui.sim.router.predicted_latency:PredictedLatency",
        "llm-d predicted-latency scheduler: online TTFT/TPOT regressors, SLO headroom",
    ),
    "llm_d_pd": PolicyEntry(
        "kvtui.sim.router.llmd_pd:LlmdPD",
        "llm-d P/D profiles: decode pod by prefix+queue+KV scorers, then a prefill pod the same way",
        paired=True,
    ),
    "dynamo_disagg": PolicyEntry(
        "kvtui.sim.router.dynamo_disagg:DynamoDisagg",
        "NVIDIA Dynamo disaggregated: KV-aware prefill worker, decode worker by load",
        paired=True,
    ),
    "mooncake": PolicyEntry(
        "kvtui.sim.router.mooncake:Mooncake",
        "Mooncake's conductor: prefill node of least estimated TTFT, decode node by load, early rejection past the SLOs",
        paired=True,
    ),
}

PAIRED_POLICIES: tuple[str, ...] = tuple(name for name, entry in POLICIES.items() if entry.paired)

POLICY_NAMES: tuple[str, ...] = tuple(POLICIES)


def unknown_policy(name: str) -> str:
    """The one message for a policy name the registry lacks, with the nearest name when one is
    close (`--policy dynamoo`, `--vs cache_awar`): the app, the commands and the engine say it alike."""
    return f"unknown policy {name!r}{suggestion(name, POLICY_NAMES)}; known: {', '.join(POLICY_NAMES)}"
