"""Block keys for replayed traces: the trace's hash ids at the simulator's block size.

Trace hash blocks are coarser than the simulated KV blocks (512 or 64 tokens against 16). The
hash ids are chained with `chain_opaque` (one key per hash block, standing for the whole prefix
up to it), and each simulated block is keyed by the chained key of the hash block it ends in
plus its end offset there: equal id prefixes give equal key prefixes, and the cache sees the
trace's reuse at the simulator's granularity. Prompt tokens no hash id covers, and every output
block, get keys of their own (per request): nothing else shares them.
"""

from __future__ import annotations

import numpy as np

from kvtui.sim.workload.hashing import GOLDEN, mix64, opaque_key

MEMO_MAX_KEYS = 500_000
"""Hash-block keys remembered before the memo is cleared (~60 MB): more than the whole
Mooncake conversation trace has (~290k), bounded so a long replay cannot grow without limit."""

_GOLDEN = np.uint64(GOLDEN)


class HashChain:
    """Chained keys of a trace's hash blocks, remembered by (previous key, hash id).

    A hash block's key is `chain_opaque` of its id under the previous block's key, so it stands
    for the whole prefix up to it, whether or not the trace's ids are themselves prefix-chained.
    A prefix seen before costs one dict lookup per hash block instead of one digest. The memo
    is cleared when it reaches MEMO_MAX_KEYS, so a long replay stays bounded.
    """

    def __init__(self, salt: bytes):
        self.salt = salt
        self.memo: dict[tuple[int | None, int], int] = {}
        self._last_ids: list[int] = []
        self._last_keys: list[int] = []

    def keys(self, hash_ids: list[int]) -> list[int]:
        """Chained keys of `hash_ids`, starting from what the previous call shares with them.

        A conversation's next request repeats the previous one's ids and adds some, so the
        shared part is one list comparison rather than a lookup per id.
        """
        shared = common_prefix(self._last_ids, hash_ids)
        out = self._last_keys[:shared]
        state: int | None = out[-1] if out else None
        memo = self.memo
        for hid in hash_ids[shared:]:
            key = memo.get((state, hid))
            if key is None:
                key = opaque_key(hid, state, self.salt)
                if len(memo) >= MEMO_MAX_KEYS:
                    memo.clear()
                memo[(state, hid)] = key
            out.append(key)
            state = key
        self._last_ids, self._last_keys = hash_ids, out
        return out


def common_prefix(a: list[int], b: list[int]) -> int:
    """Length of the longest common prefix, by slice comparisons (C speed) and bisection."""
    n = min(len(a), len(b))
    if a[:n] == b[:n]:
        return n
    lo, hi = 0, n - 1  # a[:lo] == b[:lo] holds, a[:n] != b[:n]
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if a[:mid] == b[:mid]:
            lo = mid
        else:
            hi = mid - 1
    return lo


def covered_keys(hash_ids: list[int], hash_block: int, prompt: int, block_size: int, chain: HashChain) -> list[int]:
    """Keys of the prompt's full blocks that the trace's hash ids cover.

    A simulated block is keyed by the chained key of the hash block its last token lies in and
    its end offset in that hash block, mixed into one 64-bit key. Equal hash-id prefixes give
    equal key prefixes; any block size works, inside one hash block or spanning several. The
    expansion is vectorised: a 12k-token Mooncake prompt is ~750 blocks but only ~24 digests.
    """
    n = min(prompt, len(hash_ids) * hash_block) // block_size
    if n == 0:
        return []
    hashed = np.array(chain.keys(hash_ids[: (n * block_size - 1) // hash_block + 1]), dtype=np.uint64)
    if hash_block % block_size == 0:
        return mix64((hashed[:, None] + _offsets(hash_block, block_size)).ravel()[:n]).tolist()
    ends = np.arange(1, n + 1, dtype=np.uint64) * np.uint64(block_size)
    which = (ends - np.uint64(1)) // np.uint64(hash_block)
    offsets = ends - which * np.uint64(hash_block)
    return mix64(hashed[which.astype(np.intp)] + offsets * _GOLDEN).tolist()


_OFFSETS: dict[tuple[int, int], np.ndarray] = {}


def _offsets(hash_block: int, block_size: int) -> np.ndarray:
    """End offsets x GOLDEN of the blocks in one hash block, when the block size divides it.

    Every hash block then holds blocks ending at the same offsets, so a prompt's keys are one
    broadcast sum (hash block's key + offset term, row by row) instead of a per-block index
    computation: the same sums, so the same keys, in ~half the numpy calls.
    """
    table = _OFFSETS.get((hash_block, block_size))
    if table is None:
        ends = np.arange(1, hash_block // block_size + 1, dtype=np.uint64) * np.uint64(block_size)
        table = _OFFSETS[(hash_block, block_size)] = ends * _GOLDEN
    return table


def own_keys(salt: bytes, serial: int, first: int, count: int) -> list[int]:
    """`count` keys no other request shares: output blocks, and prompt text no id covers.

    One digest names the request (`salt`, `serial`); the block index is mixed in.
    """
    if count <= 0:
        return []
    base = np.uint64(opaque_key(serial, None, salt))
    return mix64(base + np.arange(first, first + count, dtype=np.uint64) * _GOLDEN).tolist()
