"""An engine that comes up after kvtui and publishes before kvtui's SUB socket has connected
(ZMQ retries with a backoff, so the first attempt after the engine binds can come seconds
later): a PUB drops what no subscriber gets, and an engine that then falls quiet shows no gap.
The subscriber asks replay on every connect (kvtui/live/subscriber.py), so those batches come."""

from __future__ import annotations

import time

import zmq

from kvtui.live.engines import Engine
from kvtui.live.session import LiveSession

from . import hostile as h

WAIT_S = 20.0  # a bound on waiting for the connect, far past RECONNECT_MAX_MS; not a limit asserted


def test_batches_published_before_the_subscriber_connected_come_from_replay():
    published: list[list[bytes]] = []
    end = (0, [b"", b"", h.seq_bytes(-1), b""])
    replay = h.ReplaySocket(lambda start: [(0, [b"", *m]) for m in published
                                           if int.from_bytes(m[1], "big") >= start] + [end])
    port = h.free_port()
    session = LiveSession([Engine("e", f"tcp://127.0.0.1:{port}", replay.endpoint)])
    ctx = zmq.Context()
    pub = ctx.socket(zmq.PUB)
    pub.setsockopt(zmq.LINGER, 0)
    try:
        pub.bind(f"tcp://127.0.0.1:{port}")
        for seq in range(3):  # at once: no subscription has reached this PUB yet, so all are dropped
            published.append(h.message(seq, [h.stored([seq * 2 + 1, seq * 2 + 2], list(range(8)))]))
            pub.send_multipart(published[-1])
        counts = session.state.counts["e"]
        deadline = time.monotonic() + WAIT_S
        while counts.batches < 3 and time.monotonic() < deadline:
            session.poll(0.05)
    finally:
        pub.close()
        ctx.term()
        session.close()
        replay.close()
    assert (counts.batches, counts.stored, counts.gaps, counts.malformed) == (3, 6, 0, 0)
