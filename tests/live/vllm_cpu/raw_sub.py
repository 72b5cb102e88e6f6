"""A raw subscriber: counts blocks stored / removed per endpoint, by hand (no kvtui code)."""
import sys, time, zmq, msgpack
ctx = zmq.Context(); socks = {}
for name, ep in zip(sys.argv[2::2], sys.argv[3::2]):
    s = ctx.socket(zmq.SUB); s.connect(ep); s.setsockopt(zmq.SUBSCRIBE, b""); socks[s] = name
counts = {n: [0, 0, 0] for n in socks.values()}
poller = zmq.Poller(); [poller.register(s, zmq.POLLIN) for s in socks]
end = time.time() + float(sys.argv[1])
while time.time() < end:
    for s, _ in poller.poll(200):
        topic, seq, payload = s.recv_multipart()
        ts, events, *_ = msgpack.unpackb(payload, raw=False)
        c = counts[socks[s]]; c[2] += 1
        for e in events:
            kind = e["type"] if isinstance(e, dict) else e[0]
            hashes = e.get("block_hashes") if isinstance(e, dict) else e[1]
            if kind == "BlockStored": c[0] += len(hashes)
            elif kind == "BlockRemoved": c[1] += len(hashes)
for n, (st, rm, b) in counts.items():
    print(f"{n}: raw stored {st} removed {rm} batches {b}")
