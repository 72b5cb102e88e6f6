"""vLLM's KV-event wire format, decoded into kvtui's own event values.

The form, from vLLM 0.33.0 `vllm/distributed/kv_events.py` (`ZmqEventPublisher`,
`_publisher_thread`): every batch is one ZMQ multipart message `[topic, seq, payload]`, `seq` an
8-byte big-endian counter from 0, `payload` a msgpack `EventBatch` `[ts, events,
data_parallel_rank]` (an array: `array_like=True`; the rank is omitted when it is the default).

The events come in three forms, and all three are decoded here:
- tagged maps, vLLM since its May 2026 change (vllm #42892; 0.33.0's `KVCacheEvent` has
  `tag=True` and no `array_like`): `{"type": "BlockStored", "block_hashes": ..., ...}`;
- positional arrays, vLLM before it (0.11.0's `KVCacheEvent`: `array_like=True, tag=True`):
  `["BlockStored", block_hashes, parent_block_hash, token_ids, block_size, lora_id, medium]`;
- NVIDIA Dynamo's mocker (ai-dynamo 1.6.1, `--zmq-kv-events-ports`; tests/live/
  test_live_dynamo.py runs it): an empty topic and tagged maps without `medium` (which then
  means GPU) or `lora_id`, with `group_idx`. A positional event may lack trailing fields too.

A stored event's `lora_name` (0.33.0; a positional event's eighth value where a publisher
sends it) names the adapter its blocks were computed under (kvtui/live/lora.py).

SGLang 0.5.x publishes the same tagged events (python/sglang/srt/mem_cache/events.py
`KVCacheEventRecorder`, sgl-project/sglang@06f643f: `BlockStored` with `medium`, `cache_salt`,
`session_id` and `lora_name` besides vLLM's fields) in an `EventBatch` whose third element is
its `attn_dp_rank` (python/sglang/srt/disaggregation/kv_events.py, @612d579), with the media
`GPU`, `CPU_PINNED`, `DISK` and `EXTERNAL`; its extra fields are read past, and every medium
but the GPU is counted as offloaded.

A block hash is an int (vLLM's default, `VLLM_KV_EVENTS_USE_INT_BLOCK_HASHES=1`) or bytes (the
raw digest); either is kept as is. Every value is checked here, at the edge, against what the
rest of kvtui can take (a token id is a 64-bit signed integer, as the keys are hashed over
int64; a block size is an integer from 1 to MAX_BLOCK_SIZE, never a boolean): anything else is
`Malformed`, with a `kind` the counts are kept by, and the subscriber counts it and goes on.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TypeGuard

import msgpack

MEDIUMS = ("GPU", "CPU", "STORAGE", "CPU_PINNED", "DISK", "EXTERNAL")  # vLLM's three, SGLang's four
END_SEQ = -1  # the replay socket's end marker (`ZmqEventPublisher.END_SEQ`, signed)
MAX_BLOCK_SIZE = 1 << 16  # vLLM's and SGLang's are 1..256; more is not a block size
EXTRA_ITEMS_MAX = 64  # extra keys of one block (an adapter, images, a salt, digests)
EXTRA_BYTES_MAX = 4096  # one extra key's string or bytes (vLLM's cache_salt: at most 1,024 characters)
TOKEN_RANGE = (0, 1 << 63)  # a token id is a vocabulary index, and the keys hash it as int64


class Malformed(ValueError):
    """A message that is not a KV-event batch of any known form; `kind` says which part is
    wrong (the counts are kept by kind)."""

    def __init__(self, message: str, kind: str = "shape"):
        super().__init__(message)
        self.kind = kind


@dataclass(frozen=True)
class BlockStored:
    block_hashes: tuple
    parent_block_hash: int | bytes | None
    token_ids: tuple[int, ...]
    block_size: int
    lora_id: int | None
    medium: str
    lora_name: str | None = None  # the adapter (vLLM 0.33.0; 0.11.0 sends lora_id only): kvtui/live/lora.py
    extra_keys: tuple | None = None  # per block, what vLLM 0.33.0 folded into its hash: kvtui/live/keys.py
    cache_salt: str | None = None  # SGLang's own field for the salt (vLLM's is in extra_keys)


@dataclass(frozen=True)
class BlockRemoved:
    block_hashes: tuple
    medium: str


@dataclass(frozen=True)
class AllBlocksCleared:
    pass


Event = BlockStored | BlockRemoved | AllBlocksCleared


@dataclass(frozen=True)
class Batch:
    """One published batch: its sequence number, the engine's timestamp, rank and events."""

    seq: int
    ts: float
    events: tuple[Event, ...]
    data_parallel_rank: int | None


def decode_seq(raw: bytes) -> int:
    """The 8-byte big-endian sequence frame (signed, so the end marker reads as -1)."""
    if len(raw) != 8:
        raise Malformed(f"sequence frame of {len(raw)} bytes, expected 8", "seq")
    return int.from_bytes(raw, "big", signed=True)


def batch_seq(raw: bytes) -> int:
    """A batch's sequence number: 0 .. 2**63 - 1 (the end marker -1 is no batch's)."""
    seq = decode_seq(raw)
    if seq < 0:
        raise Malformed(f"negative sequence number {seq}", "seq")
    return seq


def decode_message(frames: list[bytes]) -> Batch:
    """A PUB message `[topic, seq, payload]` as a Batch; Malformed for anything else."""
    if len(frames) != 3:
        raise Malformed(f"{len(frames)} frames, expected 3 (topic, seq, payload)", "frames")
    return decode_payload(batch_seq(frames[1]), frames[2])


def decode_payload(seq: int, payload: bytes) -> Batch:
    try:
        batch = msgpack.unpackb(payload, raw=False, strict_map_key=False)
    except Exception as e:  # msgpack raises several unrelated types on bad input
        raise Malformed(f"payload is not msgpack: {e}", "msgpack") from None
    if not isinstance(batch, list) or len(batch) not in (2, 3):
        raise Malformed("payload is not an EventBatch [ts, events, data_parallel_rank]", "batch")
    ts, events = batch[0], batch[1]
    rank = batch[2] if len(batch) == 3 else None
    if not _number(ts) or not math.isfinite(ts) or not isinstance(events, list):
        raise Malformed("EventBatch ts is not a finite number or events is not a list", "batch")
    if rank is not None and not _integer(rank):
        raise Malformed("EventBatch data_parallel_rank is not an integer", "batch")
    return Batch(seq, float(ts), tuple(decode_event(e) for e in events), rank)


def _integer(x: object) -> TypeGuard[int]:
    """An int that is not a bool (msgpack's `true` decodes to True, an int to Python)."""
    return isinstance(x, int) and not isinstance(x, bool)


def _number(x) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool)


def decode_event(raw) -> Event:
    """One event in either vLLM form (or Dynamo's)."""
    match raw:
        case {"type": str(tag), **fields}:
            return _build(tag, fields)
        case [str(tag), *values]:
            return _build(tag, _positional(tag, values))
    raise Malformed(f"event is neither a tagged map nor a tagged array: {type(raw).__name__}", "event")


_POSITIONS = {
    "BlockStored": ("block_hashes", "parent_block_hash", "token_ids", "block_size", "lora_id", "medium",
                    "lora_name"),
    "BlockRemoved": ("block_hashes", "medium"),
    "AllBlocksCleared": (),
}


def _positional(tag: str, values: list) -> dict:
    """Name the values of a positional event; trailing ones may be missing (Dynamo: `medium`).
    Values past the known ones (`extra_keys` and later additions) are ignored."""
    names = _POSITIONS.get(tag)
    if names is None:
        raise Malformed(f"unknown event type {tag[:40]!r}", "event")
    return dict(zip(names, values))


def _build(tag: str, f: dict) -> Event:
    match tag:
        case "BlockStored":
            return _stored(f)
        case "BlockRemoved":
            return BlockRemoved(_hashes(f.get("block_hashes")), _medium(f.get("medium")))
        case "AllBlocksCleared":
            return AllBlocksCleared()
    raise Malformed(f"unknown event type {tag[:40]!r}", "event")


def _stored(f: dict) -> BlockStored:
    hashes, tokens, size = _hashes(f.get("block_hashes")), f.get("token_ids"), f.get("block_size")
    if not _integer(size) or not 0 < size <= MAX_BLOCK_SIZE:
        raise Malformed(f"BlockStored block_size {str(size)[:40]} is not an integer from 1 to {MAX_BLOCK_SIZE}",
                        "block size")
    if not isinstance(tokens, list):
        raise Malformed("BlockStored token_ids is not a list", "token id")
    low, high = TOKEN_RANGE
    if not all(_integer(t) and low <= t < high for t in tokens):
        raise Malformed(f"BlockStored token_ids holds a value that is not a token id ({low} to 2**63 - 1)", "token id")
    parent, lora = f.get("parent_block_hash"), f.get("lora_id")
    if parent is not None:
        parent = _hash(parent)
    if lora is not None and not _integer(lora):
        raise Malformed("BlockStored lora_id is not an integer", "lora")
    name = f.get("lora_name")
    if name is not None and not isinstance(name, str):
        raise Malformed("BlockStored lora_name is not a string", "lora")
    salt = f.get("cache_salt")
    if salt is not None and not (isinstance(salt, str) and len(salt) <= EXTRA_BYTES_MAX):
        raise Malformed("BlockStored cache_salt is not a string", "extra keys")
    return BlockStored(hashes, parent, tuple(tokens), size, lora, _medium(f.get("medium")), name,
                       _extra_keys(f.get("extra_keys"), len(hashes)), salt or None)


def _extra_keys(raw, blocks: int) -> tuple | None:
    """vLLM 0.33.0's untagged extra keys (kvtui/live/keys.py): None, or one entry per block,
    each None or a list of strings, bytes and [identifier, offset] pairs."""
    if raw is None:
        return None
    if not isinstance(raw, list) or len(raw) != blocks:
        raise Malformed("BlockStored extra_keys is not one entry per block", "extra keys")
    return tuple(None if entry is None else _extra_entry(entry) for entry in raw)


def _extra_entry(entry) -> tuple:
    if not isinstance(entry, list) or len(entry) > EXTRA_ITEMS_MAX:
        raise Malformed(f"BlockStored extra_keys entry is not a list of at most {EXTRA_ITEMS_MAX}", "extra keys")
    return tuple(_extra_item(x) for x in entry)


def _extra_item(x):
    """A string, bytes or integer, or a list of them ([identifier, offset] for a multimodal
    input): a shape vLLM may add later is still folded into the key, not refused."""
    if isinstance(x, list) and len(x) <= EXTRA_ITEMS_MAX and all(_extra_scalar(y) for y in x):
        return tuple(x)
    if _extra_scalar(x):
        return x
    raise Malformed(f"BlockStored extra key {str(x)[:40]} is not a string, bytes, an integer or a list of them",
                    "extra keys")


def _extra_scalar(x) -> bool:
    return isinstance(x, (str, bytes)) and len(x) <= EXTRA_BYTES_MAX or _integer(x) and -(1 << 63) <= x < 1 << 64


def _hashes(raw) -> tuple:
    if not isinstance(raw, list):
        raise Malformed("block_hashes is not a list", "hash")
    return tuple(_hash(h) for h in raw)


def _hash(h):
    if isinstance(h, bool) or not isinstance(h, (int, bytes)):
        raise Malformed(f"block hash {str(h)[:40]} is neither an integer nor bytes", "hash")
    return h


def _medium(raw) -> str:
    """None (Dynamo's mocker, or a publisher that leaves it unset) means the GPU."""
    if raw is None:
        return "GPU"
    if not isinstance(raw, str) or raw not in MEDIUMS:
        raise Malformed(f"medium {str(raw)[:40]!r} is not one of {', '.join(MEDIUMS)}", "medium")
    return raw
