"""A fully cached block-aligned prompt recomputes its last block, which vLLM 0.33.0 caches as a
second copy of the same key; the router's index takes the duplicate events as llm-d's does."""

from __future__ import annotations

from kvtui.sim.kv_manager import KVCacheManager
from kvtui.sim.request import Request
from kvtui.sim.router.index import KVIndex


class Feed:
    """The node's KV events, straight into a router index (and kept for the asserts)."""

    def __init__(self) -> None:
        self.index = KVIndex()
        self.events: list[tuple] = []

    def stored(self, _request, _group, keys, _parent, _first, medium):
        self.events.append(("stored", keys))
        self.index.add("n", keys, medium)

    def evicted(self, keys, _groups, _for_request, medium):
        self.events.append(("removed", keys))
        self.index.remove("n", keys, medium)


def serve(kv: KVCacheManager, req: Request) -> int:
    """Admit the whole prompt, compute it, free it; the GPU hit in blocks."""
    hit = kv.computed(req, req.prompt_tokens)
    need = kv.need(req, hit, req.prompt_tokens - hit.tokens)
    kv.admit(req, hit, need)
    kv.cache(req, len(hit.gpu), req.prompt_tokens // kv.block_size)
    kv.free(req)
    return len(hit.gpu)


def request(rid: str, keys: tuple[int, ...]) -> Request:
    return Request(rid, rid, "g", 0, 4 * len(keys), 1, keys)


def test_the_recomputed_last_block_is_a_second_copy_with_its_own_events():
    feed = Feed()
    kv = KVCacheManager("n", 5, 4, True, feed.stored, feed.evicted)
    assert serve(kv, request("a", (1, 2))) == 0
    assert serve(kv, request("b", (1, 2))) == 1  # hit capped at num_tokens - 1: block 2 recomputed
    assert feed.events == [("stored", (1, 2)), ("stored", (2,))]
    assert kv.pool.copies_of(2) == 2 and kv.pool.cached_count == 2
    assert serve(kv, request("c", (7, 8))) == 0  # a's copy of 2 was freed first: it goes first
    assert feed.events[2] == ("removed", (2,))
    assert kv.pool.copies_of(2) == 1
    # llm-d's index unlists the node at the first removed event, though a copy stays cached
    assert 2 not in feed.index.keys_on("n") and 1 in feed.index.keys_on("n")


def test_a_second_stored_event_changes_nothing_in_the_index():
    idx = KVIndex()
    idx.add("n", [1, 2])
    idx.add("n", [2])
    idx.remove("n", [2])
    assert idx.keys_on("n") == {1}
