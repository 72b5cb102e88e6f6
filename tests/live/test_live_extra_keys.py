"""Differential: kvtui's keys of real vLLM 0.33.0 events against vLLM's own block hashes, with
every per-request input vLLM folds in (kvtui/live/keys.py): `cache_salt`, a LoRA adapter,
multimodal inputs. Each request runs in its own real `BlockPool` (peer `vllm`); its events go
through vLLM's msgspec encoder and kvtui's decoder, as on the wire. Two blocks must share a
kvtui key exactly when they share vLLM's hash, and a text request's router keys (its adapter
and salt) must be the keys of its blocks: a salted request never matches unsalted blocks."""

from __future__ import annotations

import types

import pytest

from kvtui.live.delivery import Received, ingest
from kvtui.live.keys import request_keys
from kvtui.live.state import LiveState

from . import vllm_publishers as vp

BS = vp.BS
TOKENS = list(range(1, 13))  # three blocks
LORA = types.SimpleNamespace(lora_name="ad", lora_path="/adapters/ad", adapter_id=1, name="ad")
OTHER_LORA_PATH = types.SimpleNamespace(lora_name="ad", lora_path="/adapters/ad-v2", adapter_id=2, name="ad")


def _image(identifier: str, offset: int, length: int):
    return types.SimpleNamespace(identifier=identifier, mm_position=types.SimpleNamespace(offset=offset, length=length))


# name -> (tokens, cache_salt, lora_request, mm_features)
REQUESTS = {
    "plain": (TOKENS, None, None, ()),
    "plain again": (TOKENS, None, None, ()),
    "salt s1": (TOKENS, "s1", None, ()),
    "salt s1 again": (TOKENS, "s1", None, ()),
    "salt s2": (TOKENS, "s2", None, ()),
    "lora": (TOKENS, None, LORA, ()),
    "lora salt s1": (TOKENS, "s1", LORA, ()),
    "shared start": (TOKENS[:8] + [99, 98, 97, 96], None, None, ()),
    "salted shared start": (TOKENS[:8] + [99, 98, 97, 96], "s1", None, ()),
    "image a in block 1": (TOKENS, None, None, (_image("img-a", 5, 2),)),
    "image a again": (TOKENS, None, None, (_image("img-a", 5, 2),)),
    "image b in block 1": (TOKENS, None, None, (_image("img-b", 5, 2),)),
    "image a one later": (TOKENS, None, None, (_image("img-a", 6, 2),)),
    "image a across 0-1": (TOKENS, "s1", None, (_image("img-a", 2, 4),)),
}


@pytest.fixture(scope="module")
def v():
    return vp.load_new()


def _request(v, tokens, salt, lora, mm):
    """The attributes vLLM's BlockPool and hashing read from a request, with its block hashes
    made as vLLM's request block hasher makes them (kv_cache_utils `hash_block_tokens` over
    `generate_block_hash_extra_keys`)."""
    req = types.SimpleNamespace(all_token_ids=tokens, cache_salt=salt, lora_request=lora, mm_features=list(mm),
                                prompt_embeds=None, session_id=None, block_hashes=[])
    utils, parent, mm_idx = v.kv_cache_utils, None, 0
    for i in range(len(tokens) // BS):
        extra, mm_idx = utils.generate_block_hash_extra_keys(req, i * BS, (i + 1) * BS, mm_idx)
        parent = utils.hash_block_tokens(v.hashing.sha256, parent, tokens[i * BS:(i + 1) * BS], extra)
        req.block_hashes.append(parent)
    return req


def _run(v, state: LiveState, engine: str, req) -> list[int]:
    """Cache the request's blocks in a fresh pool; its events through the wire into `state`.
    Returns vLLM's block hashes as the events carry them."""
    import msgspec

    pool = v.block_pool.BlockPool(16, True, BS, enable_kv_cache_events=True)
    n = len(req.all_token_ids) // BS
    blocks = pool.get_new_blocks(n)
    pool.cache_full_blocks(req, blocks, 0, n, BS, 0)
    events = pool.take_events()
    payload = msgspec.msgpack.Encoder().encode(v.kv_events.KVEventBatch(ts=1.0, events=events))
    ingest(state, Received(engine, 1.0, (b"kv", (0).to_bytes(8, "big"), payload)))
    return [h for e in events for h in e.block_hashes]


def test_keys_match_exactly_when_vllms_block_hashes_do(v):
    state, blocks = LiveState(), []  # (request, vLLM hash, kvtui key) per block
    for name, (tokens, salt, lora, mm) in REQUESTS.items():
        for h in _run(v, state, name, _request(v, tokens, salt, lora, mm)):
            blocks.append((name, h, state.blocks[name].by_medium["GPU"][h]))
        assert state.counts[name].malformed == 0
    assert len(blocks) == 3 * len(REQUESTS)
    for a in blocks:
        for b in blocks:
            assert (a[1] == b[1]) == (a[2] == b[2]), (a, b)
    # the cases the differential is for actually occur: shared and separated blocks
    hashes = {name: [h for n, h, _ in blocks if n == name] for name in REQUESTS}
    assert hashes["plain"] == hashes["plain again"] and hashes["salt s1"] == hashes["salt s1 again"]
    assert not set(hashes["plain"]) & set(hashes["salt s1"]) and not set(hashes["salt s1"]) & set(hashes["salt s2"])
    assert hashes["shared start"][:2] == hashes["plain"][:2] and not set(hashes["salted shared start"]) & set(hashes["plain"])
    assert hashes["salted shared start"][:2] == hashes["salt s1"][:2]
    assert hashes["image a in block 1"][0] == hashes["plain"][0] and hashes["image a in block 1"][1] != hashes["plain"][1]
    assert hashes["image a again"] == hashes["image a in block 1"]
    assert hashes["image b in block 1"][1] != hashes["image a in block 1"][1]
    assert hashes["image a one later"][1] != hashes["image a in block 1"][1]


def test_a_text_requests_router_keys_are_its_blocks_keys(v):
    state = LiveState()
    for name, (tokens, salt, lora, mm) in REQUESTS.items():
        if mm:
            continue
        hashes = _run(v, state, name, _request(v, tokens, salt, lora, mm))
        keys = [state.blocks[name].by_medium["GPU"][h] for h in hashes]
        assert request_keys(tokens, BS, None if lora is None else lora.name, salt) == keys, name
    salted = request_keys(TOKENS, BS, None, "s1")
    assert not set(salted) & set(request_keys(TOKENS, BS, None, None))


def test_a_lora_path_change_is_the_same_adapter_name_to_the_router(v):
    """vLLM folds the adapter's path too (a re-pointed name shares no block); the events name
    the adapter only, so kvtui's keys, and a request's, follow the name: stated, not hidden."""
    state = LiveState()
    first = _run(v, state, "a", _request(v, TOKENS, None, LORA, ()))
    second = _run(v, state, "b", _request(v, TOKENS, None, OTHER_LORA_PATH, ()))
    assert not set(first) & set(second)
    assert [state.blocks["a"].by_medium["GPU"][h] for h in first] == [state.blocks["b"].by_medium["GPU"][h] for h in second]
