"""What the live tests share: a workload of prompts, a session on one publisher, and the waits
a ZMQ subscription needs (tests/live/vllm_publishers.py has the publishers)."""

from __future__ import annotations

import random
import time

from kvtui.live.engines import Engine
from kvtui.live.session import LiveSession

from . import vllm_publishers as vp


def prompts(seed: int, n: int) -> list[list[int]]:
    """Shared prefixes, repeats and fresh prompts: hits, stores, and (small pool) evictions."""
    rng = random.Random(seed)
    families = [[rng.randrange(1000) for _ in range(rng.randrange(4, 17))] for _ in range(5)]
    out = []
    for _ in range(n):
        base = list(rng.choice(families)) if rng.random() < 0.7 else []
        out.append(base + [rng.randrange(1000) for _ in range(rng.randrange(1, 20))])
    return out


def session_for(pub: vp.Publisher, recorder=None, replay=True) -> LiveSession:
    engine = Engine("e0", pub.endpoint, pub.replay_endpoint if replay else None)
    return LiveSession([engine], recorder, replay_timeout=2.0)


def pump(session: LiveSession, pub: vp.Publisher, timeout: float = 10.0) -> None:
    """Poll until every batch the publisher sent is accounted for (received or a gap)."""
    deadline = time.monotonic() + timeout
    sub = session.subscribers[0]
    while sub.expected < pub.sent and time.monotonic() < deadline:
        session.poll(0.05)


def caught_up(session: LiveSession, bound_s: float = 10.0) -> None:
    """Poll until no replay request is open (the catch-up at the start, a gap's), as a running
    session would: their answers are read as the session polls."""
    deadline = time.monotonic() + bound_s
    while session.replaying() and time.monotonic() < deadline:
        session.poll(0.05)


def settle(session: LiveSession | None = None) -> None:
    """Give the SUB socket's subscription time to reach the PUB socket (ZMQ's slow joiner).
    With the session, poll it meanwhile, as a running session does: it sees its socket connect
    and catches up from replay then, not at the first batch after."""
    deadline = time.monotonic() + 0.3
    while time.monotonic() < deadline:
        if session is None:
            time.sleep(0.05)
        else:
            session.poll(0.05)
