"""One subscriber per engine (per data-parallel rank): SUB on its KV events, seq tracking, replay.

The protocol is vLLM 0.33.0's (`vllm/distributed/kv_events.py`, `ZmqEventPublisher`):
- PUB sends `[topic, seq, payload]`, `seq` counting from 0 per publisher;
- the ROUTER replay socket takes `[b"", start_seq]` (8 bytes big-endian) from a DEALER and
  answers every buffered batch with `seq >= start_seq` as `[b"", topic, seq, payload]`, then an
  end marker whose seq is -1: `[b"", b"", END_SEQ, b""]` in 0.33.0 (`_service_replay`),
  `[b"", END_SEQ, b""]` in 0.11.0; both are recognised.

Sequence rules: the next expected seq starts at 0, so a subscriber that joins late asks replay
for everything the engine still buffers. A seq below the expected one is a duplicate (dropped);
one above it is a gap: the subscriber asks replay for the missing range, delivers what comes
back in order, and delivers a `Gap` for what did not (no replay endpoint, a timeout, or batches
already gone from the engine's buffer).

An engine that is not up is not an error: ZMQ connects in the background and retries with
exponential backoff (RECONNECT_IVL doubling up to RECONNECT_IVL_MAX), and a replay request that
gets no answer in `replay_timeout` seconds becomes a recorded gap.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import zmq

from kvtui.live.delivery import Delivery, Gap, Received
from kvtui.live.wire import END_SEQ, Malformed, decode_seq

RECONNECT_FIRST_MS = 100
RECONNECT_MAX_MS = 5_000


class Subscriber:
    def __init__(self, ctx: zmq.Context, name: str, endpoint: str, replay: str | None,
                 deliver: Callable[[Delivery], None], clock: Callable[[], float] = time.time,
                 replay_timeout: float = 2.0):
        self.name, self.replay, self.deliver, self.clock = name, replay, deliver, clock
        self.ctx, self.replay_timeout = ctx, replay_timeout
        self.expected = 0
        self.duplicates = 0
        self.socket = _connect(ctx.socket(zmq.SUB), endpoint)
        self.socket.setsockopt(zmq.SUBSCRIBE, b"")

    def drain(self) -> int:
        """Handle every message waiting on the socket; returns how many."""
        n = 0
        while True:
            try:
                frames = self.socket.recv_multipart(zmq.NOBLOCK)
            except zmq.Again:
                return n
            self.on_message(frames)
            n += 1

    def on_message(self, frames: list[bytes]) -> None:
        seq = _seq_of(frames)
        if seq is None:  # cannot even read its seq: pass it on to be counted as malformed
            self.deliver(Received(self.name, self.clock(), tuple(frames)))
        elif seq < self.expected:
            self.duplicates += 1
        else:
            if seq > self.expected:
                self._fill(self.expected, seq)
            self.deliver(Received(self.name, self.clock(), tuple(frames)))
            self.expected = seq + 1

    def catch_up(self) -> None:
        """At the start, ask replay for everything the engine still buffers: an engine that has
        been serving a while and publishes nothing after kvtui joins (its next requests hit the
        cache and store no block) would otherwise show empty until its next batch. Batches
        older than its buffer are a Gap, as later ones are."""
        got = dict(self._ask_replay(self.expected))
        if got:
            stop = max(got) + 1
            self._deliver_range(got, self.expected, stop)
            self.expected = stop

    def _fill(self, first: int, stop: int) -> None:
        """Deliver batches first..stop-1 from replay, and a Gap for any that did not come."""
        self._deliver_range({s: f for s, f in self._ask_replay(first) if first <= s < stop}, first, stop)

    def _deliver_range(self, got: dict, first: int, stop: int) -> None:
        missing_from = None
        for s in range(first, stop):
            if s in got:
                self._flush_gap(missing_from, s)
                missing_from = None
                self.deliver(Received(self.name, self.clock(), got[s], replayed=True))
            elif missing_from is None:
                missing_from = s
        self._flush_gap(missing_from, stop)

    def _flush_gap(self, start: int | None, stop: int) -> None:
        if start is not None:
            self.deliver(Gap(self.name, self.clock(), start, stop - start))

    def _ask_replay(self, start: int) -> list[tuple[int, tuple[bytes, ...]]]:
        """(seq, [topic, seq, payload]) for what the replay socket returns; [] without one."""
        if self.replay is None:
            return []
        dealer = _connect(self.ctx.socket(zmq.DEALER), self.replay)
        try:
            dealer.send_multipart([b"", start.to_bytes(8, "big")])
            return list(self._replies(dealer))
        finally:
            dealer.close(linger=0)

    def _replies(self, dealer: zmq.Socket):
        while dealer.poll(int(self.replay_timeout * 1000)):
            frames = dealer.recv_multipart()[1:]  # the empty delimiter first
            seq = _seq_of(frames)
            if _is_end(frames):
                return
            if seq is not None:
                yield seq, tuple(frames)

    def close(self) -> None:
        self.socket.close(linger=0)


def _connect(sock: zmq.Socket, endpoint: str) -> zmq.Socket:
    sock.setsockopt(zmq.RECONNECT_IVL, RECONNECT_FIRST_MS)
    sock.setsockopt(zmq.RECONNECT_IVL_MAX, RECONNECT_MAX_MS)
    sock.setsockopt(zmq.LINGER, 0)
    sock.connect(endpoint)
    return sock


def _seq_of(frames: list[bytes]) -> int | None:
    if len(frames) != 3:
        return None
    try:
        return decode_seq(frames[1])
    except Malformed:
        return None


def _is_end(frames) -> bool:
    """The end marker of 0.33.0 (`["", END, ""]`) or of 0.11.0 (`[END, ""]`)."""
    end = END_SEQ.to_bytes(8, "big", signed=True)
    return (len(frames) == 3 and frames[1] == end) or (len(frames) == 2 and frames[0] == end)
