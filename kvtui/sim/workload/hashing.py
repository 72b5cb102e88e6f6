"""Chained block keys, as vLLM's prefix caching computes them.

vLLM v1 (vllm/v1/core/kv_cache_utils.py, `hash_block_tokens`) keys a *full* block by hashing
the parent block's key together with the block's token ids (plus extra keys such as LoRA or
multimodal ids, which kvtui does not model). Chaining makes a key stand for the whole prefix up
to and including that block, so "the longest run of leading blocks whose keys are cached" is
exactly the reusable prefix. A partial last block is never keyed.

vLLM hashes with sha256 (or the builtin hash). kvtui's keys must be stable across processes
(Python's own hash of bytes is salted per process, which would break determinism and the
on-disk store), so they are computed from fixed arithmetic: see `chain_keys`.

This is the one place the splitmix64 constants live: `splitmix` (one Python int) and `mix64`
(a numpy array) share them, and the trace keys (`trace_keys`) mix with `mix64`.
"""

from __future__ import annotations

import hashlib
import struct

import numpy as np

_ROOT = b"kvtui-root"
_U64 = struct.Struct("<Q")


def _digest(parent: int | None, payload: bytes) -> int:
    """blake2b of the parent's key (or the root's name) then the payload, fed in one call:
    the same digest as two updates, with one hasher call instead of three."""
    head = _ROOT if parent is None else _U64.pack(parent)
    return _U64.unpack(hashlib.blake2b(head + payload, digest_size=8).digest())[0]


_M64 = 0xFFFFFFFFFFFFFFFF
GOLDEN = 0x9E3779B97F4A7C15
"""splitmix64's increment (2**64 / the golden ratio, odd)."""
_MUL1 = 0xBF58476D1CE4E5B9
_MUL2 = 0x94D049BB133111EB


def _splitmix(x: int) -> int:
    """splitmix64's step on one int: add the increment, then the finaliser (bijective)."""
    x = (x + GOLDEN) & _M64
    x = ((x ^ (x >> 30)) * _MUL1) & _M64
    x = ((x ^ (x >> 27)) * _MUL2) & _M64
    return x ^ (x >> 31)


def _u64(x: int) -> np.ndarray:
    """A constant operand, made once: numpy takes a 0-d array faster than a numpy scalar (a call
    on a request's blocks costs about as much as its operand's conversion), and chain_keys
    runs for every request."""
    return np.array(x, dtype=np.uint64)


_U_GOLDEN, _U_MUL1, _U_MUL2 = _u64(GOLDEN), _u64(_MUL1), _u64(_MUL2)
_U27, _U29, _U30, _U31 = _u64(27), _u64(29), _u64(30), _u64(31)


def mix64(x: np.ndarray) -> np.ndarray:
    """splitmix64's finaliser over a uint64 array (no increment): distinct inputs stay distinct."""
    x = x ^ (x >> _U30)  # a new array: the rest works on it in place
    x *= _U_MUL1
    x ^= x >> _U27
    x *= _U_MUL2
    x ^= x >> _U31
    return x


def _position_weights(n: int) -> np.ndarray:
    """Fixed odd 64-bit multipliers, one per position in a block (a constant table, not RNG)."""
    return np.array([_splitmix(i + 1) | 1 for i in range(n)], dtype=np.uint64)


_WEIGHTS: dict[int, np.ndarray] = {}
_ROOT_KEY = _splitmix(int.from_bytes(hashlib.blake2b(_ROOT, digest_size=8).digest(), "little"))


_U_ROOT_KEY = _u64(_ROOT_KEY)
_CHAIN = GOLDEN  # the chain's multiplier: odd, so invertible modulo 2**64
_CHAIN_INV = pow(_CHAIN, -1, 1 << 64)
_POWERS: list[np.ndarray] = []  # [B**i, B**-i] for i = 0 .. n, grown on demand


def _powers(n: int) -> tuple[np.ndarray, np.ndarray]:
    """B**i and B**-i (mod 2**64) for i = 0 .. n, as uint64 arrays."""
    if not _POWERS or len(_POWERS[0]) <= n:
        size = max(n + 1, 2 * len(_POWERS[0]) if _POWERS else 1024)
        up, down = [1] * size, [1] * size
        for i in range(1, size):
            up[i] = (up[i - 1] * _CHAIN) & _M64
            down[i] = (down[i - 1] * _CHAIN_INV) & _M64
        _POWERS[:] = [np.array(up, dtype=np.uint64), np.array(down, dtype=np.uint64)]
    return _POWERS[0], _POWERS[1]


def chain_keys(tokens: np.ndarray, block_size: int, parent: int | None = None) -> list[int]:
    """Keys of every full block of `tokens` (int32 ids), chained from `parent`.

    A block's content hash h_i is a weighted sum of its mixed token ids, then mixed; its key
    chains it to the parent's: key_i = B x key_(i-1) + h_i (mod 2**64), so a key stands for the
    whole prefix as vLLM's does. That recurrence unrolls to key_i = B**i x (parent + sum over
    j <= i of h_j x B**-j), which numpy computes for all blocks at once (uint64 arithmetic wraps
    modulo 2**64, which is the arithmetic wanted): no Python loop per block. It is a 64-bit
    non-cryptographic hash: vLLM uses sha256 to resist deliberate collisions between tenants,
    which a simulation with generated token ids does not need.
    """
    data = np.asarray(tokens)
    full = len(data) // block_size
    if full == 0:
        return []
    weights = _WEIGHTS.get(block_size)
    if weights is None:
        weights = _WEIGHTS[block_size] = _position_weights(block_size)
    x = data[: full * block_size].astype(np.uint64).reshape(full, block_size)  # a copy: worked on in place
    x += _U_GOLDEN
    x *= _U_MUL1
    x ^= x >> _U29
    content = mix64(x @ weights)  # integer matmul: the weighted sums, wrapping modulo 2**64
    up, down = _powers(full)
    content *= down[1 : full + 1]
    keys = np.add.accumulate(content, dtype=np.uint64)  # the ufunc: np.cumsum is a Python wrapper
    keys += _U_ROOT_KEY if parent is None else _u64(parent)
    keys *= up[1 : full + 1]
    return keys.tolist()


def chain_opaque(ids: list[int], parent: int | None = None, salt: bytes = b"") -> list[int]:
    """Keys for blocks known only by an identifier (trace replay: Mooncake/weka hash_ids).

    Equal ids under equal parents give equal keys, so a trace's prefix sharing survives.
    """
    keys: list[int] = []
    for ident in ids:
        parent = opaque_key(ident, parent, salt)
        keys.append(parent)
    return keys


def opaque_key(ident: int, parent: int | None = None, salt: bytes = b"") -> int:
    """One key of `chain_opaque`: the id under `parent` (a trace replay chains one at a time)."""
    return _digest(parent, salt + _U64.pack(ident & _M64))
