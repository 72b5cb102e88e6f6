"""The Dynamo side of tests/differential/test_dynamo_router.py, run with the Dynamo peer's Python.

It holds one ZMQ PUB socket per fake worker on 127.0.0.1 and Dynamo 1.6.1's runtime-free
selection core (`dynamo._core.SelectionService`: its KV indexer subscribes to each worker's
socket as it would to vLLM's, its scheduler keeps the reservations). Commands arrive as JSON
lines on stdin, answers leave as JSON lines on stdout:

- {"op": "start", "workers": N, "block_size": B}
- {"op": "events", "worker": i, "events": [...]}: one vLLM `KVEventBatch` published on the
  worker's socket (multipart topic, 8-byte sequence number, msgpack `[ts, events, dp_rank]`, each
  event a tagged map as vLLM's msgspec structs encode it: `BlockStored` with block_hashes,
  parent_block_hash, token_ids, block_size, lora_id, medium, lora_name; `BlockRemoved` with
  block_hashes, medium); answered once Dynamo has applied it (a one-block sentinel published
  after it, on each tier the batch touched, shows up in the index; one worker's events are
  applied in order)
- {"op": "query", "tokens": [...]}: per worker, the overlap (device blocks, host-tier blocks
  after them) and the potential load (prefill tokens after cache credit, decode blocks)
- {"op": "route", "id": s, "tokens": [...]}: Dynamo selects a worker and books the request there
  (`select_and_reserve`, the router's own path: an explicit booking on a named worker books no
  prefill tokens); {"op": "prefill_complete", "id": s}, {"op": "free", "id": s}: its life.

Nothing here models Dynamo: it only speaks vLLM's event format and calls Dynamo.
"""

from __future__ import annotations

import asyncio
import json
import sys
import time

import msgpack
import zmq
from dynamo._core import SelectionService

SENTINEL_BASE = 3_000_000_000  # token ids no prompt uses


class Side:
    def __init__(self) -> None:
        self.ctx = zmq.Context()
        self.pubs: list[zmq.Socket] = []
        self.seq: list[int] = []
        self.service: SelectionService | None = None
        self.block_size = 16
        self.sentinels = 0

    async def start(self, workers: int, block_size: int) -> dict:
        self.block_size = block_size
        self.service = SelectionService(indexer_threads=1)
        for i in range(workers):
            pub = self.ctx.socket(zmq.PUB)
            port = pub.bind_to_random_port("tcp://127.0.0.1")
            self.pubs.append(pub)
            self.seq.append(0)
            await self.service.upsert_worker(
                {"worker_id": i, "endpoint": f"dyn://kvtui.fake.w{i}", "block_size": block_size,
                 "kv_events_endpoint": f"tcp://127.0.0.1:{port}", "total_kv_blocks": 1_000_000,
                 "max_num_batched_tokens": 1_000_000}
            )
        for i in range(workers):  # the subscription is up once a sentinel gets through
            await self.sync(i)
        return {"ok": True}

    def publish(self, worker: int, events: list[dict]) -> None:
        payload = msgpack.packb([time.time(), [vllm_event(e, self.block_size) for e in events], 0])
        self.pubs[worker].send_multipart([b"", self.seq[worker].to_bytes(8, "big"), payload])
        self.seq[worker] += 1

    async def sync(self, worker: int, medium: str = "GPU", timeout: float = 30.0) -> None:
        """Publish a fresh one-block sentinel on `medium` and wait until the index holds it for
        `worker`. A batch is settled once a sentinel shows on each tier it touched: with a GPU
        sentinel alone, a run under load once saw a query's host-tier figure lag the batch
        before it (198/200 agreeing), so the host tier is not taken to follow the device one."""
        self.sentinels += 1
        base = SENTINEL_BASE + self.sentinels * self.block_size
        tokens = list(range(base, base + self.block_size))
        h = (1 << 62) + self.sentinels
        seen = "device_blocks" if medium == "GPU" else "host_pinned_extension_blocks"
        end = time.monotonic() + timeout
        while True:
            self.publish(worker, [{"stored": {"hashes": [h], "parent": None, "tokens": tokens, "medium": medium}}])
            for _ in range(50):
                got = await self.service.overlap_scores({"token_ids": tokens})
                if any(w["worker_id"] == worker and w[seen] == 1 for w in got["workers"]):
                    return
                await asyncio.sleep(0.002)
            if time.monotonic() > end:
                raise TimeoutError(f"worker {worker}'s {medium} events never reached Dynamo's index")

    async def query(self, tokens: list[int]) -> dict:
        overlap = await self.service.overlap_scores({"token_ids": tokens})
        loads = await self.service.potential_loads({"token_ids": tokens})
        by_worker: dict[int, dict] = {}
        for w in overlap["workers"]:
            by_worker.setdefault(w["worker_id"], {}).update(
                device=w["device_blocks"], host=w["host_pinned_extension_blocks"])
        for w in loads:
            by_worker.setdefault(w["worker_id"], {"device": 0, "host": 0}).update(
                prefill_tokens=w["potential_prefill_tokens"], decode_blocks=w["potential_decode_blocks"])
        return {"workers": {str(k): v for k, v in by_worker.items()}}

    async def handle(self, cmd: dict) -> dict:
        op = cmd["op"]
        if op == "start":
            return await self.start(cmd["workers"], cmd["block_size"])
        if op == "events":
            self.publish(cmd["worker"], cmd["events"])
            for medium in sorted({medium_of(e) for e in cmd["events"]} | {"GPU"}):
                await self.sync(cmd["worker"], medium)
            return {"ok": True}
        if op == "query":
            return await self.query(cmd["tokens"])
        if op == "route":
            got = await self.service.select_and_reserve({"selection_id": cmd["id"], "token_ids": cmd["tokens"]})
            return {"worker": got["worker_id"]}
        if op == "prefill_complete":
            await self.service.prefill_complete(cmd["id"])
            return {"ok": True}
        if op == "free":
            await self.service.free_reservation(cmd["id"])
            return {"ok": True}
        raise ValueError(f"unknown op {op!r}")


def medium_of(spec: dict) -> str:
    """The tier an event spec names ("GPU" or "CPU")."""
    return (spec.get("stored") or spec["removed"])["medium"]


def vllm_event(spec: dict, block_size: int) -> dict:
    """One event as vLLM's msgspec structs put it on the wire (tagged maps, field names as in
    vllm/distributed/kv_events.py)."""
    if "stored" in spec:
        s = spec["stored"]
        return {"type": "BlockStored", "block_hashes": s["hashes"], "parent_block_hash": s["parent"],
                "token_ids": s["tokens"], "block_size": block_size, "lora_id": None,
                "medium": s["medium"], "lora_name": None}
    r = spec["removed"]
    return {"type": "BlockRemoved", "block_hashes": r["hashes"], "medium": r["medium"]}


async def main() -> None:
    side = Side()
    loop = asyncio.get_running_loop()
    while True:
        line = await loop.run_in_executor(None, sys.stdin.readline)
        if not line:
            break
        try:
            reply = await side.handle(json.loads(line))
        except Exception as e:  # the test reports it with the command that caused it
            reply = {"error": f"{type(e).__name__}: {e}"}
        sys.stdout.write(json.dumps(reply) + "\n")
        sys.stdout.flush()
    if side.service is not None:
        side.service.shutdown()


if __name__ == "__main__":
    asyncio.run(main())
