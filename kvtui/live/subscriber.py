"""One subscriber per engine (per data-parallel rank): SUB on its KV events, seq tracking, replay.

The protocol is vLLM 0.33.0's (`vllm/distributed/kv_events.py`, `ZmqEventPublisher`):
- PUB sends `[topic, seq, payload]`, `seq` counting from 0 per publisher;
- the ROUTER replay socket takes `[b"", start_seq]` (8 bytes big-endian) from a DEALER and
  answers every buffered batch with `seq >= start_seq`, then an end marker whose seq is -1.
  What the DEALER reads differs by engine, and all forms are read (`_reply`):
  `[b"", topic, seq, payload]` and the end `[b"", b"", END_SEQ, b""]` (vLLM 0.33.0,
  `_service_replay`); `[b"", seq, payload]` and `[b"", END_SEQ, b""]` (vLLM 0.11.0, and SGLang
  0.5.x: python/sglang/srt/disaggregation/kv_events.py `_service_replay`, sgl-project/sglang@612d579);
  `[topic, seq, payload]` without the delimiter.

Sequence rules: the next expected seq starts at 0, so a subscriber that joins late asks replay
for everything the engine still buffers. One above the expected seq is a gap: the subscriber asks
replay for the missing range, delivers what comes back in order, and delivers a `Gap` for what
did not (no replay endpoint, a timeout, or batches already gone from the engine's buffer). The
work is bounded by what replay returns (at most REPLAY_MAX batches), never by the size of the
jump: a seq of 2**62 is one counted gap, not a walk over every missing number.

A seq below the expected one is either a duplicate (the same batch again, as the catch-up at
the start can give: its frames hash as one of the last RECENT delivered did) or a restarted engine
(its seq went back, to 0 on a restart): the subscriber delivers `Restarted` and follows the new
numbering from there, so nothing the new process publishes is dropped.

An engine that is not up is not an error: ZMQ connects in the background and retries with
exponential backoff (RECONNECT_IVL doubling up to RECONNECT_IVL_MAX). Each time the SUB socket
connects (the first time, or again after the engine went away) the subscriber asks replay for
everything from the expected seq, as at the start: an engine that comes up while kvtui waits
between two attempts publishes into no subscription (a PUB drops what no peer gets), and if it
then falls quiet nothing later would show the gap. A replay request gets
`replay_timeout` seconds between messages and REPLAY_DEADLINES times that in all, so a replay
socket that answers slowly, forever, or never cannot hold kvtui up; what did not come is a gap.
"""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Callable

import zmq
from zmq.utils.monitor import recv_monitor_message

from kvtui.live.delivery import Delivery, Gap, Received, Restarted
from kvtui.live.wire import END_SEQ, Malformed, batch_seq

RECONNECT_FIRST_MS = 100
RECONNECT_MAX_MS = 5_000
REPLAY_MAX = 100_000  # batches one replay answer may hold (vLLM's and SGLang's buffers keep 10,000)
REPLAY_DEADLINES = 5  # a whole replay answer gets this many replay timeouts
DRAIN_MAX = 10_000  # messages handled per drain, so a flood cannot starve the app's frames
RECENT = 20_000  # delivered batches remembered (by a hash) to tell a duplicate from a restart
MAX_FRAME_BYTES = 64 << 20  # a ZMQ message larger than this is refused by the socket itself


class Subscriber:
    def __init__(self, ctx: zmq.Context, name: str, endpoint: str, replay: str | None,
                 deliver: Callable[[Delivery], None], clock: Callable[[], float] = time.time,
                 replay_timeout: float = 2.0):
        self.name, self.replay, self.deliver, self.clock = name, replay, deliver, clock
        self.ctx, self.replay_timeout = ctx, replay_timeout
        self.expected = 0
        self.duplicates = 0
        self.recent: OrderedDict[int, int] = OrderedDict()  # seq -> hash of its frames
        self.socket = _connect(ctx.socket(zmq.SUB), endpoint)
        self.socket.setsockopt(zmq.SUBSCRIBE, b"")
        self.connects = self.socket.get_monitor_socket(zmq.EVENT_CONNECTED)

    def drain(self, most: int = DRAIN_MAX) -> int:
        """Catch up after a new connection, then handle the messages waiting on the socket,
        at most `most`; returns how many."""
        if self._connected():
            self.catch_up()
        n = 0
        while n < most:
            try:
                frames = self.socket.recv_multipart(zmq.NOBLOCK)
            except zmq.Again:
                return n
            self.on_message(frames)
            n += 1
        return n

    def _connected(self) -> bool:
        """Whether the SUB socket connected since the last look (its monitor's events)."""
        connected = False
        while self.connects.poll(0):
            connected |= recv_monitor_message(self.connects)["event"] == zmq.EVENT_CONNECTED
        return connected

    def on_message(self, frames: list[bytes]) -> None:
        seq = _seq_of(frames)
        if seq is None:  # cannot even read its seq: pass it on to be counted as malformed
            self.deliver(Received(self.name, self.clock(), tuple(frames)))
            return
        if seq < self.expected:
            if self.recent.get(seq) == hash(tuple(frames)):
                self.duplicates += 1
                return
            self.deliver(Restarted(self.name, self.clock(), self.expected - 1, seq))
            self.expected, self.recent = 0, OrderedDict()
        if seq > self.expected:
            self._fill(self.expected, seq)
        self._received(seq, tuple(frames))
        self.expected = seq + 1

    def _received(self, seq: int, frames: tuple[bytes, ...], replayed: bool = False) -> None:
        self.deliver(Received(self.name, self.clock(), frames, replayed=replayed))
        self.recent[seq] = hash(frames)
        if len(self.recent) > RECENT:
            self.recent.popitem(last=False)

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
        """What replay returned, in order, with a Gap for each run that is missing: the work
        is one step per batch returned, however far apart `first` and `stop` are."""
        at = first
        for s in sorted(got):
            if s > at:
                self.deliver(Gap(self.name, self.clock(), at, s - at))
            self._received(s, got[s], replayed=True)
            at = s + 1
        if stop > at:
            self.deliver(Gap(self.name, self.clock(), at, stop - at))

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
        """The batches of one replay answer, until its end marker, a silence of
        `replay_timeout`, the answer's deadline or REPLAY_MAX batches, whichever comes first."""
        deadline = time.monotonic() + REPLAY_DEADLINES * self.replay_timeout
        for _ in range(REPLAY_MAX):
            left = min(self.replay_timeout, deadline - time.monotonic())
            if left <= 0 or not dealer.poll(int(left * 1000)):
                return
            frames = _reply(dealer.recv_multipart())
            if frames is None:
                continue
            if frames[1] == _END:
                return
            seq = _seq_of(list(frames))
            if seq is not None:
                yield seq, frames

    def close(self) -> None:
        self.socket.disable_monitor()
        self.connects.close(linger=0)
        self.socket.close(linger=0)


_END = END_SEQ.to_bytes(8, "big", signed=True)


def _reply(frames: list[bytes]) -> tuple[bytes, ...] | None:
    """A replay message as `(topic, seq, payload)`, in whichever form the engine sent it
    (module docstring); None for any other shape."""
    if len(frames) == 4 and frames[0] == b"":
        return tuple(frames[1:])
    if len(frames) == 3:
        return tuple(frames)  # [b"", seq, payload] reads as an empty topic: the same bytes
    if len(frames) == 2:
        return (b"", *frames)
    return None


def _connect(sock: zmq.Socket, endpoint: str) -> zmq.Socket:
    sock.setsockopt(zmq.RECONNECT_IVL, RECONNECT_FIRST_MS)
    sock.setsockopt(zmq.RECONNECT_IVL_MAX, RECONNECT_MAX_MS)
    sock.setsockopt(zmq.LINGER, 0)
    sock.setsockopt(zmq.MAXMSGSIZE, MAX_FRAME_BYTES)
    sock.connect(endpoint)
    return sock


def _seq_of(frames: list[bytes]) -> int | None:
    if len(frames) != 3:
        return None
    try:
        return batch_seq(frames[1])
    except Malformed:
        return None

