"""One subscriber per engine (per data-parallel rank): SUB on its KV events, seq tracking, replay.

The protocol is vLLM 0.33.0's (`vllm/distributed/kv_events.py`, `ZmqEventPublisher`):
- PUB sends `[topic, seq, payload]`, `seq` counting from 0 per publisher;
- the ROUTER replay socket takes `[b"", start_seq]` (8 bytes big-endian) from a DEALER and
  answers every buffered batch with `seq >= start_seq`, then an end marker whose seq is -1.
  What the DEALER reads differs by engine, and all forms are read (kvtui/live/replay_request.py `reply`):
  `[b"", topic, seq, payload]` and the end `[b"", b"", END_SEQ, b""]` (vLLM 0.33.0,
  `_service_replay`); `[b"", seq, payload]` and `[b"", END_SEQ, b""]` (vLLM 0.11.0, and SGLang
  0.5.x: python/sglang/srt/disaggregation/kv_events.py `_service_replay`, sgl-project/sglang@612d579);
  `[topic, seq, payload]` without the delimiter.

Sequence rules: the next expected seq starts at 0, so a subscriber that joins late asks replay
for everything the engine still buffers. One above the expected seq is a gap: the subscriber asks
replay for the missing range, delivers what comes back in order, and delivers a `Gap` for what
did not (no replay endpoint, a timeout, or batches already gone from the engine's buffer). The
work is bounded by what replay returns (at most REPLAY_MAX batches), never by the size
of the jump: a seq of 2**62 is one counted gap, not a walk over every missing number.

A replay request never blocks the thread that drains (the app's frame thread): it is a
`ReplayRequest` read a little on each `drain`, and while one is open the batches that arrive
are held, in order, and handled once it ends. So a batch after a gap is delivered only after
the gap's replayed batches or its Gap, however slowly the replay socket answers. At most
WAITING_MAX are held: past that a batch is let go and, once the request ended, replay is asked
again from the seq expected (the batches let go come from the engine's buffer, or are a Gap).
`close` ends an open request where it stands: what came is delivered, the rest is a Gap, and
the held batches follow.

A seq below the expected one is either a duplicate (the same batch again, as the catch-up at
the start can give: its seq and payload hash as one of the last RECENT delivered did; the topic
is left out, since SGLang's replay answer carries none) or a restarted engine (its seq went
back, to 0 on a restart): the subscriber delivers `Restarted` and follows the new numbering
from there, so nothing the new process publishes is dropped.

An engine that is not up is not an error: ZMQ connects in the background and retries with
exponential backoff (RECONNECT_IVL doubling up to RECONNECT_IVL_MAX). Each time the SUB socket
connects (the first time, or again after the engine went away) the subscriber asks replay for
everything from the expected seq, as at the start: an engine that comes up while kvtui waits
between two attempts publishes into no subscription (a PUB drops what no peer gets), and if it
then falls quiet nothing later would show the gap.
"""

from __future__ import annotations

import time
from collections import OrderedDict, deque
from collections.abc import Callable

import zmq
from zmq.utils.monitor import recv_monitor_message

from kvtui.live.delivery import Delivery, Gap, Received, Restarted
from kvtui.live.replay_request import ReplayRequest
from kvtui.live.wire import Malformed, batch_seq

RECONNECT_FIRST_MS = 100
RECONNECT_MAX_MS = 5_000
DRAIN_MAX = 10_000  # messages handled per drain, so a flood cannot starve the app's frames
WAITING_MAX = 20_000  # batches held while a replay request is open
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
        self.recent: OrderedDict[int, int] = OrderedDict()  # seq -> hash of its seq and payload
        self.asking: ReplayRequest | None = None
        self.stop: int | None = None  # the open request fills up to this seq (None: a catch-up)
        self.held: deque[tuple[bytes, ...]] = deque()  # batches that came while it is open
        self.again = False  # ask replay from `expected` once the open request ended
        self.socket = _connect(ctx.socket(zmq.SUB), endpoint)
        self.socket.setsockopt(zmq.SUBSCRIBE, b"")
        self.connects = self.socket.get_monitor_socket(zmq.EVENT_CONNECTED)

    def sockets(self) -> list[zmq.Socket]:
        """What to wait on: the SUB socket, its connect monitor and an open replay request."""
        return [self.socket, self.connects] + ([self.asking.socket] if self.asking else [])

    def wait_s(self) -> float | None:
        """Seconds until the open replay request times out (None without one): the longest the
        loop may wait before draining again."""
        return None if self.asking is None else self.asking.wait_s()

    def drain(self, most: int = DRAIN_MAX) -> int:
        """Catch up after a new connection, read what a replay request has answered, then
        handle the messages waiting on the socket, at most `most` of each; returns how many
        messages were read. Never waits."""
        if self._connected():
            self.catch_up()
        n = self._read_replay(most)
        while n < most:
            try:
                frames = self.socket.recv_multipart(zmq.NOBLOCK)
            except zmq.Again:
                break
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
        if self.asking is None:
            self._handle(tuple(frames))
        elif len(self.held) < WAITING_MAX:
            self.held.append(tuple(frames))
        else:
            self.again = True  # let go: asked again from `expected` once the request ended

    def _handle(self, frames: tuple[bytes, ...]) -> None:
        seq = _seq_of(frames)
        if seq is None:  # cannot even read its seq: pass it on to be counted as malformed
            self.deliver(Received(self.name, self.clock(), frames))
            return
        if seq < self.expected:
            if self.recent.get(seq) == _hash(frames):
                self.duplicates += 1
                return
            self.deliver(Restarted(self.name, self.clock(), self.expected - 1, seq))
            self.expected, self.recent = 0, OrderedDict()
        if seq > self.expected:
            if self._ask(self.expected, seq):
                self.held.appendleft(frames)  # handled after the gap is filled
                return
            self.deliver(Gap(self.name, self.clock(), self.expected, seq - self.expected))
        self._received(seq, frames)
        self.expected = seq + 1

    def _received(self, seq: int, frames: tuple[bytes, ...], replayed: bool = False) -> None:
        self.deliver(Received(self.name, self.clock(), frames, replayed=replayed))
        self.recent[seq] = _hash(frames)
        if len(self.recent) > RECENT:
            self.recent.popitem(last=False)

    def catch_up(self) -> None:
        """Ask replay for everything the engine still buffers from the seq expected (at the
        start, and on every connect): an engine that has been serving a while and publishes
        nothing after kvtui joins (its next requests hit the cache and store no block) would
        otherwise show empty until its next batch. Batches older than its buffer are a Gap, as
        later ones are. With a request already open, it is asked once that one ended."""
        if self.asking is not None:
            self.again = True
        else:
            self._ask(self.expected, None)

    def _ask(self, first: int, stop: int | None) -> bool:
        """Open a replay request from `first` (for a gap up to `stop`); False without a replay
        socket."""
        if self.replay is None:
            return False
        self.asking, self.stop = ReplayRequest(_replay_socket(self.replay), self.ctx, first, self.replay_timeout), stop
        return True

    def _read_replay(self, most: int) -> int:
        if self.asking is None:
            return 0
        n = self.asking.read(most)
        if self.asking.done:
            self._answered()
        return n

    def _answered(self) -> None:
        """The open request ended: deliver what it got, then the batches held meanwhile, in
        order, until one of them opens the next request."""
        request, stop = self.asking, self.stop
        assert request is not None
        self.asking = None
        got = request.got
        if stop is None:
            stop = max(got) + 1 if got and max(got) >= request.start else request.start
        self._deliver_range({s: f for s, f in got.items() if request.start <= s < stop}, request.start, stop)
        self.expected = max(self.expected, stop)
        while self.held and self.asking is None:
            self._handle(self.held.popleft())
        if self.asking is None and self.again:
            self.again = False
            self.catch_up()

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

    def close(self) -> None:
        """End an open replay request where it stands (module docstring), then close."""
        self.replay = None
        if self.asking is not None:
            self.asking.close()
            self._answered()
        self.socket.disable_monitor()
        self.connects.close(linger=0)
        self.socket.close(linger=0)


def _replay_socket(endpoint: str) -> Callable[[zmq.Socket], zmq.Socket]:
    return lambda sock: _connect(sock, endpoint)


def _connect(sock: zmq.Socket, endpoint: str) -> zmq.Socket:
    sock.setsockopt(zmq.RECONNECT_IVL, RECONNECT_FIRST_MS)
    sock.setsockopt(zmq.RECONNECT_IVL_MAX, RECONNECT_MAX_MS)
    sock.setsockopt(zmq.LINGER, 0)
    sock.setsockopt(zmq.MAXMSGSIZE, MAX_FRAME_BYTES)
    sock.connect(endpoint)
    return sock


def _hash(frames: tuple[bytes, ...]) -> int:
    """A batch's identity for telling a duplicate: its seq and payload (not its topic)."""
    return hash(frames[1:])


def _seq_of(frames: tuple[bytes, ...]) -> int | None:
    if len(frames) != 3:
        return None
    try:
        return batch_seq(frames[1])
    except Malformed:
        return None
