"""Chained block keys, as vLLM's prefix caching computes them.

vLLM v1 (vllm/v1/core/kv_cache_utils.py, `hash_block_tokens`) keys a *full* block by hashing
the parent block's key together with the block's token ids (plus extra keys such as LoRA or
multimodal ids, which kvtui does not model). Chaining makes a key stand for the whole prefix up
to and including that block, so "the longest run of leading blocks whose keys are cached" is
exactly the reusable prefix. A partial last block is never keyed.

vLLM hashes with sha256 (or the builtin hash) for collision resistance across processes; kvtui
uses 64-bit BLAKE2b for the same reason (Python's own hash of bytes is salted per process,
which would break determinism and the on-disk store).
"""

from __future__ import annotations

import hashlib
import struct

import numpy as np

_ROOT = b"kvtui-root"
_U64 = struct.Struct("<Q")


def _digest(parent: int | None, payload: bytes) -> int:
    h = hashlib.blake2b(digest_size=8)
    h.update(_ROOT if parent is None else _U64.pack(parent))
    h.update(payload)
    return _U64.unpack(h.digest())[0]


def chain_keys(tokens: np.ndarray, block_size: int, parent: int | None = None) -> list[int]:
    """Keys of every full block of `tokens` (int32 ids), chained from `parent`."""
    data = np.ascontiguousarray(tokens, dtype=np.int32)
    full = len(data) // block_size
    keys: list[int] = []
    raw = data[: full * block_size].tobytes()
    step = block_size * 4
    for i in range(full):
        parent = _digest(parent, raw[i * step : (i + 1) * step])
        keys.append(parent)
    return keys


def chain_opaque(ids: list[int], parent: int | None = None, salt: bytes = b"") -> list[int]:
    """Keys for blocks known only by an identifier (trace replay: Mooncake/weka hash_ids).

    Equal ids under equal parents give equal keys, so a trace's prefix sharing survives.
    """
    keys: list[int] = []
    for ident in ids:
        parent = _digest(parent, salt + _U64.pack(ident & 0xFFFFFFFFFFFFFFFF))
        keys.append(parent)
    return keys
