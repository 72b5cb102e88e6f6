"""A raw subscriber with no kvtui code: blocks stored / removed and batches per engine, for
checking what `kvtui live` counts (run.sh).  raw_sub.py SECONDS NAME ENDPOINT [NAME ENDPOINT ...]"""
import sys
import time

import msgpack
import zmq

ctx = zmq.Context()
socks = {}
for name, endpoint in zip(sys.argv[2::2], sys.argv[3::2]):
    s = ctx.socket(zmq.SUB)
    s.connect(endpoint)
    s.setsockopt(zmq.SUBSCRIBE, b"")
    socks[s] = name
counts = {n: [0, 0, 0] for n in socks.values()}
poller = zmq.Poller()
for s in socks:
    poller.register(s, zmq.POLLIN)
end = time.time() + float(sys.argv[1])
while time.time() < end:
    for s, _ in poller.poll(200):
        _topic, _seq, payload = s.recv_multipart()
        _ts, events, *_ = msgpack.unpackb(payload, raw=False)
        c = counts[socks[s]]
        c[2] += 1
        for e in events:
            kind, hashes = (e["type"], e.get("block_hashes")) if isinstance(e, dict) else (e[0], e[1])
            c[0] += len(hashes) if kind == "BlockStored" else 0
            c[1] += len(hashes) if kind == "BlockRemoved" else 0
for n, (stored, removed, batches) in counts.items():
    print(f"{n}: raw stored {stored} removed {removed} batches {batches}")
