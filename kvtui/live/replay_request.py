"""One replay request to an engine's replay socket, read without blocking.

The request is a DEALER that sends `[b"", start_seq]` (vLLM 0.33.0 `vllm/distributed/kv_events.py`,
`ZmqEventPublisher._service_replay`; SGLang 0.5.x python/sglang/srt/disaggregation/kv_events.py,
sgl-project/sglang@612d579) and then reads the answer a few messages at a time, whenever the
loop that drains for the app has a moment (`read`): the app's frame thread never waits on a
replay socket, however slowly it answers. The forms of an answer message are read by
`reply` (kvtui/live/subscriber.py's docstring lists them).

The answer ends at its end marker, at a silence of `timeout` seconds, at REPLAY_DEADLINES times that
in all, or after REPLAY_MAX batches, whichever comes first: a replay socket that answers slowly,
forever or never holds one request open for a bounded time, and what did not come is then the
subscriber's to count as a gap.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import zmq

from kvtui.live.wire import END_SEQ, Malformed, batch_seq

REPLAY_MAX = 100_000  # batches one answer may hold (vLLM's and SGLang's buffers keep 10,000)
REPLAY_DEADLINES = 5  # a whole answer gets this many replay timeouts


class ReplayRequest:
    """`got`: seq -> (topic, seq, payload) of the batches answered so far; `done` once the
    answer ended (by any of the module docstring's ends) and the socket is closed."""

    def __init__(self, connect: Callable[[zmq.Socket], zmq.Socket], ctx: zmq.Context, start: int, timeout: float,
                 clock: Callable[[], float] = time.monotonic):
        self.start, self.timeout, self.clock = start, timeout, clock
        self.got: dict[int, tuple[bytes, ...]] = {}
        self.done = False
        self.socket = connect(ctx.socket(zmq.DEALER))
        self.socket.send_multipart([b"", start.to_bytes(8, "big")])
        now = clock()
        self.deadline, self.quiet_until = now + REPLAY_DEADLINES * timeout, now + timeout

    def wait_s(self) -> float:
        """Seconds until this request times out if nothing more comes."""
        return max(0.0, min(self.deadline, self.quiet_until) - self.clock())

    def read(self, most: int) -> int:
        """Read up to `most` answer messages that are waiting, without blocking; end the
        request at its end marker, REPLAY_MAX batches or a timeout that has passed. Returns how many
        messages were read."""
        n = 0
        while not self.done and n < most:
            try:
                frames = self.socket.recv_multipart(zmq.NOBLOCK)
            except zmq.Again:
                break
            n += 1
            self.quiet_until = self.clock() + self.timeout
            self._take(reply(frames))
        if not self.done and self.clock() >= min(self.deadline, self.quiet_until):
            self.close()
        return n

    def _take(self, frames: tuple[bytes, ...] | None) -> None:
        if frames is None:
            return
        if frames[1] == _END:
            return self.close()
        try:
            seq = batch_seq(frames[1])
        except Malformed:
            return
        self.got[seq] = frames
        if len(self.got) >= REPLAY_MAX:
            self.close()

    def close(self) -> None:
        if not self.done:
            self.done = True
            self.socket.close(linger=0)


_END = END_SEQ.to_bytes(8, "big", signed=True)


def reply(frames: list[bytes]) -> tuple[bytes, ...] | None:
    """A replay message as `(topic, seq, payload)`, in whichever form the engine sent it
    (kvtui/live/subscriber.py's docstring); None for any other shape."""
    if len(frames) == 4 and frames[0] == b"":
        return tuple(frames[1:])
    if len(frames) == 3:
        return tuple(frames)  # [b"", seq, payload] reads as an empty topic: the same bytes
    if len(frames) == 2:
        return (b"", *frames)
    return None
