"""The client side of tests/differential/test_etcd_raft.py, run by the etcd peer's own Python
(`$KVTUI_PEERS/etcd/bin/python`, where aetcd is installed; never the shared venv).

    python etcd_client.py status PORT...           -> {"PORT": {"term", "leader", "member"} | null}
    python etcd_client.py write PORT SECONDS       -> {"acks": [[key, t_sent, t_acked], ...], "errors": n}
    python etcd_client.py read PORT KEY...         -> {"missing": [keys absent from a linearizable read]}
    python etcd_client.py put PORT KEY VALUE       -> {"ok": true} | {"error": "..."}
    python etcd_client.py get PORT KEY MODE        -> {"value": str | null} | {"error": "..."}
                                                      MODE: serializable (local, may be stale) | linearizable
    python etcd_client.py dump PORT KEY...         -> {"KEY": value as hex | null}

Times are seconds on this process's monotonic clock, from its start; every RPC has a timeout."""

from __future__ import annotations

import asyncio
import json
import sys
import time

import aetcd
from aetcd import rpc

T0 = time.monotonic()


async def status(ports: list[int]) -> dict:
    out = {}
    for port in ports:
        try:
            async with aetcd.Client("127.0.0.1", port, timeout=1) as c:
                r = await c.maintenancestub.Status(rpc.StatusRequest(), timeout=1)
                out[str(port)] = {"term": r.raftTerm, "leader": r.leader, "member": r.header.member_id}
        except Exception:  # a dead member: no answer
            out[str(port)] = None
    return out


async def write(port: int, seconds: float) -> dict:
    acks, errors, i = [], 0, 0
    async with aetcd.Client("127.0.0.1", port, timeout=1) as c:
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            key = f"k{i:06d}"
            sent = time.monotonic() - T0
            try:
                await c.put(key.encode(), b"v")
                acks.append([key, sent, time.monotonic() - T0])
                i += 1
            except Exception:
                errors += 1
                await asyncio.sleep(0.01)
            await asyncio.sleep(0.01)
    return {"acks": acks, "errors": errors}


async def read(port: int, keys: list[str]) -> dict:
    missing = []
    async with aetcd.Client("127.0.0.1", port, timeout=2) as c:
        for key in keys:
            got = await c.get(key.encode())
            if got is None:
                missing.append(key)
    return {"missing": missing}


async def put(port: int, key: str, value: str) -> dict:
    try:
        async with aetcd.Client("127.0.0.1", port, timeout=3) as c:
            await c.put(key.encode(), value.encode())
        return {"ok": True}
    except Exception as e:  # refused or timed out: the answer the test asserts on
        return {"error": f"{type(e).__name__}: {e}"}


async def get(port: int, key: str, mode: str) -> dict:
    try:
        async with aetcd.Client("127.0.0.1", port, timeout=3) as c:
            got = await c.get(key.encode(), serializable=mode == "serializable")
        return {"value": None if got is None else got.value.decode()}
    except Exception as e:  # a linearizable read on a member without a leader times out
        return {"error": f"{type(e).__name__}: {e}"}


async def dump(port: int, keys: list[str]) -> dict:
    async with aetcd.Client("127.0.0.1", port, timeout=2) as c:
        return {key: None if (got := await c.get(key.encode())) is None else got.value.hex() for key in keys}


def main() -> None:
    op, args = sys.argv[1], sys.argv[2:]
    if op == "status":
        result = asyncio.run(status([int(p) for p in args]))
    elif op == "write":
        result = asyncio.run(write(int(args[0]), float(args[1])))
    elif op == "put":
        result = asyncio.run(put(int(args[0]), args[1], args[2]))
    elif op == "get":
        result = asyncio.run(get(int(args[0]), args[1], args[2]))
    elif op == "dump":
        result = asyncio.run(dump(int(args[0]), args[1:]))
    else:
        result = asyncio.run(read(int(args[0]), args[1:]))
    print(json.dumps(result))


if __name__ == "__main__":
    main()
