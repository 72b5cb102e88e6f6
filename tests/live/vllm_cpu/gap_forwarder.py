"""A ZMQ forwarder that forces a sequence gap, with no kvtui code (by hand: run.sh).

    gap_forwarder.py SECONDS IN OUT FIRST N

SUB on one engine's KV events (IN), PUB them unchanged on OUT, except the N batches whose seq is
FIRST..FIRST+N-1, which it drops. kvtui subscribes to OUT while its replay endpoint stays the
engine's own, so it sees the seq jump, asks the engine's replay socket and must fill the hole;
the raw subscriber listens to the engine directly, so its counts include the dropped batches.
Prints the seqs it dropped and how many batches it passed on.
"""
import sys
import time

import zmq

seconds, inbound, outbound, first, n = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5])
ctx = zmq.Context()
sub = ctx.socket(zmq.SUB)
sub.connect(inbound)
sub.setsockopt(zmq.SUBSCRIBE, b"")
pub = ctx.socket(zmq.PUB)
pub.bind(outbound)
dropped, passed = [], 0
end = time.time() + float(seconds)
while time.time() < end:
    if not sub.poll(200):
        continue
    frames = sub.recv_multipart()
    seq = int.from_bytes(frames[1], "big")
    if first <= seq < first + n:
        dropped.append(seq)
        continue
    pub.send_multipart(frames)
    passed += 1
print(f"forwarder: dropped seqs {dropped} ({len(dropped)} batches), passed on {passed}")
