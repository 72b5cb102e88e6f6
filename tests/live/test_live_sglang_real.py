"""SGLang's KV events as SGLang's own classes encode them (peer `sglang-events`,
.ci/peers/sglang-events.sh; tests/live/sglang_events_side.py runs them), decoded by kvtui:

- 0.5.10: positional events (`KVCacheEvent` has `array_like=True, tag=True`), `BlockStored`
  ending in `medium`, media `GPU` and `CPU_PINNED` (its `MEDIUM_GPU`, `MEDIUM_CPU`);
- 0.5.23: tagged maps, with `cache_salt`, `session_id` and `lora_name`, media `StorageMedium`
  (`GPU`, `CPU_PINNED`, `DISK`, `EXTERNAL`).
Both batch as `[ts, events, attn_dp_rank]`. tests/live/test_live_sglang.py has the fixtures
built by hand from the source (0.4's positional form, the replay answer)."""

from __future__ import annotations

import json
import subprocess

import pytest

from kvtui.live.delivery import Received, ingest
from kvtui.live.keys import request_keys
from kvtui.live.state import LiveState
from kvtui.live.wire import MEDIUMS, AllBlocksCleared, BlockRemoved, BlockStored, decode_message

from differential import peers

HERE = __file__.rsplit("/", 1)[0]
VERSIONS = ["0.5.10", "0.5.23"]
TOKENS = list(range(1, 9))


def encode(version: str, batches: list[dict]) -> tuple[list[str], list[bytes]]:
    """SGLang `version`'s media and its encoding of `batches` (sglang_events_side.py's form)."""
    home = peers.require("sglang-events")
    done = subprocess.run([str(home / "bin" / "python"), f"{HERE}/sglang_events_side.py", str(home / f"sglang-{version}")],
                          input=json.dumps(batches), capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    out = json.loads(done.stdout)
    return out["media"], [bytes.fromhex(p) for p in out["payloads"]]


def stored(hashes, tokens, parent=None, medium=None, **extra) -> dict:
    return {"type": "BlockStored", "block_hashes": hashes, "parent_block_hash": parent, "token_ids": tokens,
            "block_size": 4, "lora_id": None, "medium": medium, **extra}


def _frames(seq: int, payload: bytes) -> tuple[bytes, ...]:
    return (b"", seq.to_bytes(8, "big"), payload)


@pytest.mark.parametrize("version", VERSIONS)
def test_every_medium_sglang_names_decodes_and_is_held_there(version):
    media, _ = encode(version, [])
    assert set(media) <= set(MEDIUMS)
    batches = [{"ts": 2.0, "rank": 1, "events": [stored([10 * i + 1, 10 * i + 2], TOKENS, medium=m)
                                                  for i, m in enumerate(media)]},
               {"ts": 3.0, "rank": 1, "events": [{"type": "BlockRemoved", "block_hashes": [10 * i + 2], "medium": m}
                                                  for i, m in enumerate(media)]}]
    _, payloads = encode(version, batches)
    decoded = [decode_message(list(_frames(s, p))) for s, p in enumerate(payloads)]
    assert [b.data_parallel_rank for b in decoded] == [1, 1] and decoded[0].ts == 2.0
    assert decoded[0].events[0] == BlockStored((1, 2), None, tuple(TOKENS), 4, None, media[0])
    assert decoded[1].events[0] == BlockRemoved((2,), media[0])
    state = LiveState()
    for s, p in enumerate(payloads):
        ingest(state, Received("sglang", float(s), _frames(s, p)))
    counts = state.counts["sglang"]
    assert (counts.malformed, counts.stored, counts.removed, counts.unknown_removed) == (0, 2 * len(media), len(media), 0)
    assert all(state.held("sglang", m) == 1 for m in media)
    tiers = {tier for holders in state.index.values() for _, tier in holders}
    assert tiers == set(media)


@pytest.mark.parametrize("version", VERSIONS)
def test_a_medium_left_unset_is_the_gpu_and_all_blocks_cleared_ends_the_epoch(version):
    _, payloads = encode(version, [{"ts": 1.0, "rank": None, "events": [
        stored([1, 2], TOKENS), {"type": "BlockRemoved", "block_hashes": [2]}, {"type": "AllBlocksCleared"}]}])
    batch = decode_message(list(_frames(0, payloads[0])))
    assert batch.data_parallel_rank is None
    assert batch.events == (BlockStored((1, 2), None, tuple(TOKENS), 4, None, "GPU"), BlockRemoved((2,), "GPU"),
                            AllBlocksCleared())


def test_sglang_0_5_23s_salt_keeps_its_blocks_apart():
    """0.5.23 sends the request's `cache_salt` (its hashes are already namespaced by it): the
    salted blocks' keys differ from the same tokens' unsalted ones and are a salted request's."""
    extra = {"cache_salt": "tenant-7", "session_id": "s-1", "lora_name": None}
    _, payloads = encode("0.5.23", [{"ts": 1.0, "rank": 0, "events": [stored([1, 2], TOKENS, medium="GPU"),
                                                                      stored([3, 4], TOKENS, medium="GPU", **extra)]}])
    batch = decode_message(list(_frames(0, payloads[0])))
    assert batch.events[1].cache_salt == "tenant-7" and batch.events[0].cache_salt is None
    state = LiveState()
    ingest(state, Received("sglang", 0.0, _frames(0, payloads[0])))
    held = state.blocks["sglang"].by_medium["GPU"]
    assert [held[1], held[2]] == request_keys(TOKENS, 4, None, None)
    assert [held[3], held[4]] == request_keys(TOKENS, 4, None, "tenant-7")
    assert not {held[1], held[2]} & {held[3], held[4]}
