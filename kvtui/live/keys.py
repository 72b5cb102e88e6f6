"""kvtui's keys of a real engine's stored blocks and of a routed request, with every per-request
input the engine folds into its block hashes, so a block matches only a request that would hit it.

What vLLM 0.33.0 folds in (vllm/v1/core/kv_cache_utils.py `generate_block_hash_extra_keys`;
`hash_block_tokens` hashes `(parent, tokens, extra_keys)`):
- the LoRA adapter, `("lora", name, path)`, into every block of a LoRA request;
- multimodal inputs, `("mm", identifier, offset in the block)`, into each block an input covers;
- `cache_salt`, into the prompt's first block only (`start_token_idx == 0`): the chain carries
  it to every later block;
- prompt embeddings, `("prompt_embeds", sha256 of the block's embeddings)`, into every block.
Its `BlockStored` publishes them untagged, one entry per block (`extra_keys`,
`to_event_extra_keys`): the LoRA name first (when `lora_name` is set), then `[identifier,
offset]` pairs, then the salt string, then embedding digests (bytes). SGLang 0.5.x sends the
salt as its own field `cache_salt` (python/sglang/srt/mem_cache/events.py, sgl-project/sglang@06f643f),
and its radix cache keeps salted prefixes apart (radix_cache.py `RadixKey.extra_key`: the LoRA
id, the cache salt).

kvtui's keys fold them the same way. The chain's root is made from the adapter and the salt
(`root`: the adapter alone gives kvtui/live/lora.py's root, nothing gives the simulation's),
so a salted prompt shares no key with an unsalted one or another salt's, as vLLM's chain shares
no hash; a block's multimodal pairs and digests are folded into that block's key, and the
chain goes on from the folded key. A request routed through the proxy is text: its keys come
from its `model` (the adapter) and its `cache_salt` (vLLM's completion and chat APIs take it:
vllm/entrypoints/openai/completion/protocol.py, 0.33.0), and never match a block whose key
folded an image in.
"""

from __future__ import annotations

import hashlib

import msgpack
import numpy as np

from kvtui.live.lora import adapter_of, adapter_root
from kvtui.live.wire import BlockStored
from kvtui.sim.workload.hashing import chain_keys


def root(adapter: str | None, salt: str | None) -> int | None:
    """The parent key a prompt's first block chains from (None: the base model's, unsalted)."""
    if salt is None:
        return adapter_root(adapter)
    name = ("" if adapter is None else f"lora:{adapter}\0") + f"salt:{salt}"
    return int.from_bytes(hashlib.blake2b(name.encode(), digest_size=8).digest(), "big")


def request_keys(tokens: list[int], block_size: int, adapter: str | None, salt: str | None) -> list[int]:
    """A routed (text) request's keys."""
    return chain_keys(np.asarray(tokens, dtype=np.int64), block_size, root(adapter, salt))


def stored_keys(e: BlockStored, parent: int | None) -> list[int]:
    """The keys of a stored run's full blocks: `parent` is the key its parent hash maps to
    (a first block, `parent_block_hash` None, chains from `root` instead)."""
    salt, folds = _extras(e)
    if e.parent_block_hash is None:
        parent = root(adapter_of(e.lora_name, e.lora_id), salt)
    tokens, size = np.asarray(e.token_ids, dtype=np.int64), e.block_size
    if not any(folds):
        return chain_keys(tokens, size, parent)
    keys: list[int] = []
    for i in range(len(tokens) // size):
        key = chain_keys(tokens[i * size:(i + 1) * size], size, parent)[0]
        if i < len(folds) and folds[i]:
            key = _fold(key, folds[i])
        keys.append(key)
        parent = key
    return keys


def _extras(e: BlockStored) -> tuple[str | None, list[tuple]]:
    """The salt, and per block what is folded into its key (multimodal pairs, digests): the
    untagged `extra_keys` read in vLLM's order (module docstring)."""
    salt, folds = e.cache_salt, []
    for i, entry in enumerate(e.extra_keys or ()):
        items = list(entry or ())
        if e.lora_name and items and items[0] == e.lora_name:
            items = items[1:]  # the adapter: in the root already
        if i == 0 and e.parent_block_hash is None:
            salts = [x for x in items if isinstance(x, str)]
            if salts:
                salt = salts[0]
                items.remove(salt)
        folds.append(tuple(items))
    return salt, folds


def _fold(key: int, items: tuple) -> int:
    data = key.to_bytes(8, "big") + msgpack.packb(items, use_bin_type=True)
    return int.from_bytes(hashlib.blake2b(data, digest_size=8).digest(), "big")
