"""Token ids and the incrementally hashed token history of a conversation.

Shared text has shared token ids and unrelated text has fresh random ones, so the chained block
keys (`kvtui.sim.workload.hashing.chain_keys`, after vLLM's prefix caching) find exactly the reuse a real
prefix cache would.
"""

from __future__ import annotations

import numpy as np

from kvtui.sim.workload.hashing import chain_keys

TOKEN_ID_RANGE = 2**31
"""Token ids are drawn from [0, 2**31): far more than any vocabulary, so two unrelated texts
never share a block by accident and every reuse the cache finds is real."""


class Conversation:
    """The token history of one session, hashed incrementally.

    Only the tokens of the last, partial block are kept: every full block is already summed up
    by its chained key, and the next key needs nothing but the last key and the new tokens. So
    a turn costs hashing its own new blocks, never the whole history again.
    """

    __slots__ = ("block_size", "keys", "tail", "length")

    def __init__(self, block_size: int, keys: list[int], tail: np.ndarray, length: int):
        self.block_size = block_size
        self.keys = keys
        self.tail = tail
        self.length = length

    @classmethod
    def of(cls, tokens: np.ndarray, block_size: int) -> "Conversation":
        conv = cls(block_size, [], tokens[:0], 0)
        conv.extend(tokens)
        return conv

    def fork(self) -> "Conversation":
        """A copy that can grow on its own (each session starts from its group's system prompt)."""
        return Conversation(self.block_size, list(self.keys), self.tail, self.length)

    def extend(self, tokens: np.ndarray) -> None:
        """Append tokens; key every block they complete, chained from the last key."""
        data = np.concatenate((self.tail, tokens)) if len(self.tail) else tokens
        new = chain_keys(data, self.block_size, self.keys[-1] if self.keys else None)
        self.keys.extend(new)
        self.tail = data[len(new) * self.block_size :]
        self.length += len(tokens)


def random_tokens(rng: np.random.Generator, n: int) -> np.ndarray:
    """`n` fresh token ids (int32, the dtype the hashing reads without a copy)."""
    return rng.integers(0, TOKEN_ID_RANGE, size=n, dtype=np.int32)
