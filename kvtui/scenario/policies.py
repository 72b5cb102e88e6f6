"""The routing policies' names, with one line each: the scenario validator, the CLI help and the
app's palette read them here, so none of them has to import the engine to know a name."""

from __future__ import annotations

POLICIES: dict[str, str] = {
    "round_robin": "the next node in turn (cache-blind baseline)",
    "random": "a node drawn at random (cache-blind baseline)",
    "least_loaded": "fewest running + waiting requests (cache-blind baseline)",
    "session_affinity": "a conversation stays on the node of its first turn",
    "cache_aware": "the seed project's prefix-first router, no load term (a lesson in hot spots)",
    "load_prefix": "llm-d scheduler profile: weighted prefix, queue and KV-utilisation scorers",
    "dynamo": "NVIDIA Dynamo KV router: credited prefill blocks x prefill_load_scale + decode blocks, lowest cost",
    "sglang_cache_aware": "SGLang gateway: shortest queue when imbalanced, else approximate-tree match",
    "predicted_latency": "llm-d predicted-latency scheduler: online TTFT/TPOT regressors, SLO headroom",
}

POLICY_NAMES: tuple[str, ...] = tuple(POLICIES)
