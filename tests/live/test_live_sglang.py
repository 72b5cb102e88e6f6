"""SGLang's KV events, decoded and replayed. SGLang's publisher needs torch and triton, so it
cannot run here; the fixtures are built from its source instead (Apache-2.0, read, not copied):

- python/sglang/srt/mem_cache/events.py (sgl-project/sglang@06f643f, the 0.5 line):
  `KVCacheEventRecorder.record_store` makes `BlockStored(block_hashes, parent_block_hash,
  token_ids, block_size, lora_id, medium, cache_salt, session_id, lora_name)`, one per page
  (the last page may be short: `block_size=len(page_tokens)`), coalesced when the parent
  chains; `record_remove` makes `BlockRemoved(block_hashes, medium)`; the media are
  `StorageMedium` values (GPU, and CPU_PINNED, DISK, EXTERNAL for the hierarchical cache);
- python/sglang/srt/disaggregation/kv_events.py (@612d579): `EventBatch` is an array
  `[ts, events, attn_dp_rank]`; PUB sends `(topic, seq, payload)`; the ROUTER answers a replay
  request with `(identity, b"", seq, payload)` per batch and `(identity, b"", END_SEQ, b"")`
  at the end, so a DEALER reads `[b"", seq, payload]`; its events there are positional
  arrays (`array_like=True, tag=True`) of the five fields before `medium`.
"""

from __future__ import annotations

import msgpack
import pytest
import zmq

from kvtui.live.delivery import Received, ingest
from kvtui.live.state import LiveState
from kvtui.live.subscriber import Subscriber
from kvtui.live.wire import BlockRemoved, BlockStored, decode_message

from . import hostile as h

SALT = {"cache_salt": "tenant-7", "session_id": "s-1", "lora_name": None}


def sglang_batch(events: list, rank: int = 0, ts: float = 1.5) -> bytes:
    """An SGLang 0.5 EventBatch: `[ts, events, attn_dp_rank]`."""
    return msgpack.packb([ts, events, rank])


def store(hashes, tokens, parent=None, medium="GPU", page=4) -> dict:
    return {"type": "BlockStored", "block_hashes": hashes, "parent_block_hash": parent, "token_ids": tokens,
            "block_size": page, "lora_id": None, "medium": medium, **SALT}


def test_a_tagged_sglang_batch_decodes_with_its_salt_and_extra_fields_read_past():
    events = [store([1, 2], list(range(8))), store([3], [8, 9], parent=2, page=2),  # a short last page
              {"type": "BlockRemoved", "block_hashes": [3], "medium": "GPU"}]
    batch = decode_message([b"", (0).to_bytes(8, "big"), sglang_batch(events, rank=3)])
    assert batch.data_parallel_rank == 3 and batch.ts == 1.5
    assert batch.events[0] == BlockStored((1, 2), None, tuple(range(8)), 4, None, "GPU", cache_salt="tenant-7")
    assert batch.events[1] == BlockStored((3,), 2, (8, 9), 2, None, "GPU", cache_salt="tenant-7")
    assert batch.events[2] == BlockRemoved((3,), "GPU")


@pytest.mark.parametrize("medium", ["CPU_PINNED", "DISK", "EXTERNAL"])
def test_sglangs_lower_tiers_are_offloaded_blocks(medium):
    state = LiveState()
    frames = (b"", (0).to_bytes(8, "big"), sglang_batch([store([1, 2], list(range(8))),
                                                          store([1, 2], list(range(8)), medium=medium)]))
    ingest(state, Received("sglang", 0.0, frames))
    counts = state.counts["sglang"]
    assert (counts.malformed, counts.stored, state.held("sglang"), state.held("sglang", medium)) == (0, 4, 2, 2)
    assert {tier for holders in state.index.values() for _, tier in holders} == {"GPU", medium}


def test_the_positional_form_of_0_4_decodes_too():
    event = ["BlockStored", [5, 6], None, list(range(8)), 4, None]  # no medium: the GPU
    batch = decode_message([b"", (9).to_bytes(8, "big"), sglang_batch([event, ["AllBlocksCleared"]], rank=1)])
    assert batch.events[0] == BlockStored((5, 6), None, tuple(range(8)), 4, None, "GPU")
    assert batch.seq == 9 and batch.data_parallel_rank == 1


@pytest.mark.parametrize("form", ["sglang", "topic first"])
def test_sglangs_replay_answer_fills_the_gap(form):
    """SGLang's DEALER reads `[b"", seq, payload]` and ends on `[b"", END, b""]`; a publisher
    that answers `[topic, seq, payload]` without the delimiter is read as well."""

    def answer(start: int):
        head = [b""] if form == "sglang" else [b"kv"]
        return [(0, head + [h.seq_bytes(s), sglang_batch([store([100 + s], [s] * 4)])]) for s in range(start, 3)] + [
            (0, [b"", h.seq_bytes(-1), b""])]

    replay = h.ReplaySocket(answer)
    ctx = zmq.Context()
    out: list = []
    sub = Subscriber(ctx, "sglang", f"tcp://127.0.0.1:{h.free_port()}", replay.endpoint, out.append, replay_timeout=1.0)
    try:
        sub.on_message([b"kv", h.seq_bytes(3), sglang_batch([store([103], [3] * 4)])])
        assert h.replayed(sub)
    finally:
        sub.close()
        replay.close()
        ctx.term()
    state = LiveState()
    for d in out:
        ingest(state, d)
    counts = state.counts["sglang"]
    assert (counts.batches, counts.replayed, counts.gaps, counts.malformed, counts.stored) == (4, 3, 0, 0, 4)
