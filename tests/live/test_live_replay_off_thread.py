"""A replay request never holds the thread that drains for the app (kvtui/live/subscriber.py,
replay_request.py): a slow replay socket leaves `session.poll` free, the batches that come
meanwhile are held, and a batch after a gap is delivered only after the gap's replayed batches
or its Gap."""

from __future__ import annotations

import threading
import time

import zmq

from kvtui.live import subscriber
from kvtui.live.delivery import Gap, Received
from kvtui.live.engines import Engine
from kvtui.live.session import LiveSession
from kvtui.live.subscriber import Subscriber
from kvtui.live.wire import batch_seq

from . import hostile as h

BOUND_S = 20.0  # a bound on waiting for what must come; never reached when it works
END = (0, [b"", b"", h.seq_bytes(-1), b""])


def _batch(seq: int) -> list[bytes]:
    return h.message(seq, [h.stored([100 + seq], [seq] * 4)])


def _order(deliveries) -> list:
    """Each delivery as `seq` (a batch, `r` suffixed when replayed) or ("gap", first, n)."""
    out: list = []
    for d in deliveries:
        match d:
            case Received(frames=frames, replayed=replayed):
                out.append(f"{batch_seq(frames[1])}{'r' if replayed else ''}")
            case Gap(first_missing=first, missing=n):
                out.append(("gap", first, n))
    return out


def _poll_until(session: LiveSession, done, bound_s: float = BOUND_S) -> float:
    """Poll (0.05 s at a time) until `done()`; returns the longest a single poll took."""
    longest, deadline = 0.0, time.monotonic() + bound_s
    while not done() and time.monotonic() < deadline:
        t0 = time.monotonic()
        session.poll(0.05)
        longest = max(longest, time.monotonic() - t0)
    return longest


def test_a_slow_replay_socket_does_not_hold_the_poll_and_order_is_kept():
    timeout = 5.0
    gate = threading.Event()
    batches, buffered = [_batch(s) for s in range(5)], []  # what the engine's replay buffer holds

    def answer(start: int):
        now = [(0, [b"", *m]) for m in buffered if batch_seq(m[1]) >= start] + [END]
        if start > 0:  # the gap's request: answered (as the buffer was when asked) when the test lets it
            gate.wait(BOUND_S)
        return now

    replay = h.ReplaySocket(answer)
    port, seen = h.free_port(), []
    session = LiveSession([Engine("e", f"tcp://127.0.0.1:{port}", replay.endpoint)], replay_timeout=timeout,
                          listener=seen.append)
    ctx = zmq.Context()
    pub = ctx.socket(zmq.PUB)
    pub.setsockopt(zmq.LINGER, 0)
    sub = session.subscribers[0]

    def publish(seq: int, lost: bool = False) -> None:
        buffered.append(batches[seq])
        if not lost:
            pub.send_multipart(batches[seq])

    try:
        pub.bind(f"tcp://127.0.0.1:{port}")
        _poll_until(session, lambda: False, bound_s=0.5)  # the subscription reaches the PUB
        publish(0)
        _poll_until(session, lambda: sub.expected == 1)
        publish(1, lost=True)
        publish(2, lost=True)
        publish(3)  # a gap: the request for 1.. is held open by the replay socket
        longest = _poll_until(session, lambda: 1 in replay.asked)
        publish(4)
        longest = max(longest, _poll_until(session, lambda: False, bound_s=0.5))  # 4 comes meanwhile
        before_release = _order(seen)
        gate.set()
        _poll_until(session, lambda: sub.expected == 5)
    finally:
        gate.set()
        pub.close()
        ctx.term()
        session.close()
        replay.close()
    assert longest < timeout  # a poll of 0.05 s never waited out the replay socket's silence
    assert before_release == ["0"]  # 3 and 4 held behind the gap's open request
    assert _order(seen) == ["0", "1r", "2r", "3", "4"]  # a gap's answer fills the gap only
    assert session.state.counts["e"].gaps == 0


def _subscriber(ctx, replay_endpoint, timeout=0.3):
    out: list = []
    return Subscriber(ctx, "e", f"tcp://127.0.0.1:{h.free_port()}", replay_endpoint, out.append,
                      replay_timeout=timeout), out


def test_a_batch_after_an_unanswered_gap_follows_its_gap():
    replay = h.ReplaySocket(lambda start: [])  # never answers
    ctx = zmq.Context()
    sub, out = _subscriber(ctx, replay.endpoint)
    try:
        for seq in (0, 3, 4):
            sub.on_message(_batch(seq))
        held = _order(out)
        assert h.replayed(sub, BOUND_S)
    finally:
        sub.close()
        replay.close()
        ctx.term()
    assert held == ["0"]
    assert _order(out) == ["0", ("gap", 1, 2), "3", "4"]


def test_closing_ends_an_open_request_with_its_gap_counted():
    replay = h.ReplaySocket(lambda start: [])
    ctx = zmq.Context()
    sub, out = _subscriber(ctx, replay.endpoint, timeout=10.0)
    try:
        for seq in (0, 3, 4):
            sub.on_message(_batch(seq))
    finally:
        sub.close()
        replay.close()
        ctx.term()
    assert _order(out) == ["0", ("gap", 1, 2), "3", "4"]


def test_batches_let_go_past_the_hold_come_from_replay_after(monkeypatch):
    monkeypatch.setattr(subscriber, "WAITING_MAX", 2)
    published = [_batch(s) for s in range(7)]
    replay = h.ReplaySocket(lambda start: [(0, [b"", *m]) for m in published[start:]] + [END])
    ctx = zmq.Context()
    sub, out = _subscriber(ctx, replay.endpoint, timeout=2.0)
    try:
        for seq in (0, 3, 4, 5, 6):  # 3 opens the request and is held with 4; 5 and 6 are let go
            sub.on_message(published[seq])
        assert h.replayed(sub, BOUND_S)
    finally:
        sub.close()
        replay.close()
        ctx.term()
    assert replay.asked == [1, 5]
    assert _order(out) == ["0", "1r", "2r", "3", "4", "5r", "6r"]
