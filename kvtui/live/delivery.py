"""What a subscriber hands on: a received message, or a gap replay could not fill (and, once
per engine at the start, that it is being watched, so an engine that never speaks still has its
line in a replay); what a scrape of an engine's `/metrics` read (kvtui/live/scraper.py); and a
request route mode served (kvtui/live/proxy.py).

Both the live state and the recording consume the same deliveries in the same order, so a
recording replayed through `ingest` rebuilds exactly the figures the live session printed.
A message is kept as its raw frames: decoding happens in `ingest`, live and in replay alike,
so a malformed message is counted the same way both times.
"""

from __future__ import annotations

from dataclasses import dataclass

from kvtui.live.forensics import Forensics
from kvtui.live.metrics import EngineFigures
from kvtui.live.state import LiveState
from kvtui.live.wire import Malformed, decode_message


@dataclass(frozen=True)
class Watching:
    engine: str
    at: float


@dataclass(frozen=True)
class Received:
    engine: str
    at: float  # receive time, seconds since the epoch (the subscriber's clock)
    frames: tuple[bytes, ...]
    replayed: bool = False  # came from the engine's replay socket (a gap filled, or the catch-up at the start)


@dataclass(frozen=True)
class Gap:
    engine: str
    at: float
    first_missing: int
    missing: int  # batches


@dataclass(frozen=True)
class Restarted:
    """The engine's seq went back (kvtui/live/subscriber.py): a new process, with an empty
    cache, numbering its batches anew. A new epoch: its blocks so far are gone."""

    engine: str
    at: float
    last_seq: int  # the last seq of the epoch that ended
    seq: int  # the first seq of the new one


@dataclass(frozen=True)
class Scraped:
    engine: str
    at: float
    figures: EngineFigures


@dataclass(frozen=True)
class Served:
    """A request route mode sent to `engine` (kvtui/live/proxy.py): the decision, the engine's
    answer and the forensics of its misses."""

    engine: str
    at: float
    request: str
    reason: str
    candidates: tuple[tuple[str, float, int, bool], ...]  # (engine, score, promised blocks, eligible)
    forensics: Forensics
    ttft_s: float | None
    e2e_s: float
    prompt_tokens: int = 0  # as the engine tokenised the prompt (recordings before them: 0)
    output_tokens: int = 0  # the answer's usage.completion_tokens, else the request's max_tokens
    block_keys: tuple[int, ...] = ()  # the prompt's full blocks as the router keyed them (counterfactual replay)
    routed_at: float | None = None  # when the router decided (the proxy's clock); None in older recordings
    policy: str = ""  # the policy that decided
    session: str = ""  # the request's session (its `user` field, else its id)


Delivery = Watching | Received | Gap | Restarted | Scraped | Served


def ingest(state: LiveState, delivery: Delivery) -> None:
    """Apply one delivery to the state; a malformed message is counted by kind, never raised."""
    counts = state.engine(delivery.engine)
    match delivery:
        case Received(frames=frames):
            try:
                batch = decode_message(list(frames))
            except Malformed as e:
                counts.bad(e.kind)
                return
            state.apply(delivery.engine, batch)
            counts.replayed += delivery.replayed
            counts.last_batch_at = delivery.at
        case Gap(missing=missing):
            counts.gaps += missing
        case Restarted():
            state.restarted(delivery.engine)
        case Scraped(figures=figures):
            state.scraped(delivery.engine, delivery.at, figures)
        case Served():
            state.served.append(delivery)
        case Watching():
            state.watched_at.setdefault(delivery.engine, delivery.at)  # `state.engine` above gave it its counts
