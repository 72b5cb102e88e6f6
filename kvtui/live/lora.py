"""LoRA adapters in the keys: a block computed under an adapter is not the base model's block.

vLLM 0.33.0 folds the adapter into every block's hash (vllm/v1/core/kv_cache_utils.py
`_gen_lora_extra_hash_keys`: `("lora", lora_name, lora_path)` is an extra key of every block of
a LoRA request), so one prompt under two adapters, or under an adapter and the base model,
shares no cached block; its `BlockStored` events name the adapter (`lora_name`; 0.11.0 only had
the integer `lora_id`). llm-d's indexer keys the same way (llm-d-kv-cache 7be76e1,
pkg/kvevents/pool.go `processEventBatch`: the event's LoRA name replaces the model name that
seeds the chain's first hash, and a request's keys are seeded with the model it names).

kvtui's keys do it by the root: base-model blocks chain from the usual root, as in the
simulation (kvtui/sim/workload/hashing.py), and an adapter's from a root derived from its name,
so every key of an adapter's prefix differs from the base model's and from other adapters'.
On the request side (route mode) the body's `model` is an adapter when an engine has stored
blocks under that name, or its `/v1/models` lists that name with a `parent` (vLLM's card for a
LoRA module); any other model name is the base model. An 0.11.0 engine names no adapter, so
its LoRA blocks get a root from the id (`lora-id:N`) that no request's name can match: the
router then promises no hit for them rather than a wrong one. The other inputs vLLM folds
(`cache_salt`, multimodal inputs, prompt embeddings) are folded by kvtui/live/keys.py.
"""

from __future__ import annotations

import hashlib


def adapter_of(lora_name: str | None, lora_id: int | None) -> str | None:
    """The adapter a stored block was computed under (None: the base model)."""
    if lora_name:
        return lora_name
    return None if lora_id is None else f"lora-id:{lora_id}"


def adapter_root(adapter: str | None) -> int | None:
    """The parent key an adapter's first block chains from (None: the base model's root).

    A 64-bit digest of the name: the same in every process and every run, as keys must be."""
    if adapter is None:
        return None
    return int.from_bytes(hashlib.blake2b(f"lora:{adapter}".encode(), digest_size=8).digest(), "big")
